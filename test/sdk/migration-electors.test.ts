/**
 * runWithLeaderMigration on real LeaderElectors, on simulated time over the DynamoDB model
 * (sim/harness.ts): the coordinator reconciles each component's lease and the migration
 * lease in-process.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_MIGRATION_LEADER_NAME, defaultLeaderMigrationConfiguration, electorStarter, runWithLeaderMigration, type ControllerTerm } from '../../lib/sdk/migration.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { Session } from '../../lib/sdk/session.js';
import { FAST } from './harness.js';
import { LATENCY_MS, Sim } from '../../sim/harness.js';

/**
 * Components run with runWithLeaderMigration on `sim` (`start`), each with its own controller and
 * the migrated `cloud-route`: which controllers run (`running`, by `component/controller`), and
 * when each last ended (`ended`, simulated ms).
 */
function migratingComponents(sim: Sim) {
  const config = defaultLeaderMigrationConfiguration(['cloud-route']);
  const running = new Map<string, number>();
  const ended = new Map<string, number>();
  const controller = (who: string) => async (signal: AbortSignal) => {
    running.set(who, (running.get(who) ?? 0) + 1);
    await new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
    ended.set(who, sim.clock.monotonic());
    running.set(who, running.get(who)! - 1);
  };
  const start = (component: string) => {
    const machine = sim.machine();
    const abort = new AbortController();
    const done = runWithLeaderMigration({
      startElector: electorStarter({ identity: `${component}-1`, tables: sim.names, ...FAST, platform: 'none', client: machine.client, clock: machine.clock, candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' } }),
      controllers: { [`${component}-own`]: controller(`${component}/own`), 'cloud-route': controller(`${component}/cloud-route`) },
      component,
      primaryLeaseName: component,
      config,
      signal: abort.signal,
    });
    return { abort, done, machine, component };
  };
  return { running, ended, start };
}

const TICK_MS = 100; // how often the in-process coordinator reconciles

describe('runWithLeaderMigration on real electors (KEP-2436)', () => {
  it('a migrated controller runs under the shared migration lease, in one component at a time; the rest under each primary lease', async () => {
    const sim = await Sim.create({ config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } });
    sim.coordinator({ tickEveryMs: TICK_MS });
    const config = defaultLeaderMigrationConfiguration(['cloud-route']);
    const running = new Map<string, number>();
    const terms = new Map<string, ControllerTerm>();
    let maxRoute = 0;
    const controller = (who: string) => async (signal: AbortSignal, term: ControllerTerm) => {
      terms.set(who, term);
      running.set(who, (running.get(who) ?? 0) + 1);
      if (who.endsWith('cloud-route')) maxRoute = Math.max(maxRoute, [...running].filter(([k, v]) => k.endsWith('cloud-route') && v > 0).length);
      await new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
      running.set(who, running.get(who)! - 1);
    };
    const start = (component: string, controllers: string[]) => {
      const machine = sim.machine();
      const abort = new AbortController();
      const done = runWithLeaderMigration({
        startElector: electorStarter({ identity: `${component}-1`, tables: sim.names, ...FAST, platform: 'none', client: machine.client, clock: machine.clock, candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' } }),
        controllers: Object.fromEntries(controllers.map((c) => [c, controller(`${component}/${c}`)])),
        component,
        primaryLeaseName: component,
        config,
        signal: abort.signal,
      });
      return { abort, done };
    };
    const kcm = start('kcm', ['deployment', 'cloud-route']);
    const ccm = start('ccm', ['cloud-route', 'node-ipam']);
    await sim.until('primary controllers of both components', () => running.get('kcm/deployment') === 1 && running.get('ccm/node-ipam') === 1, 10_000);
    await sim.until('the migrated controller in one of them', () => (running.get('kcm/cloud-route') ?? 0) + (running.get('ccm/cloud-route') ?? 0) === 1, 10_000);
    // a few terms on: still in one component only
    await sim.during(5 * FAST.leaseDurationMs, 'the migrated controller in one component at a time', () => (running.get('kcm/cloud-route') ?? 0) + (running.get('ccm/cloud-route') ?? 0) <= 1);
    const owner = running.get('kcm/cloud-route') === 1 ? kcm : ccm;
    const other = owner === kcm ? 'ccm/cloud-route' : 'kcm/cloud-route';
    // each controller holds the term of its lease: what it fences its writes with
    const migrationLease = (await sim.leases.read(DEFAULT_MIGRATION_LEADER_NAME)).item!;
    const ownerName = owner === kcm ? 'kcm' : 'ccm';
    // on the migration lease each component stands as <identity>/<component> (migrationIdentity)
    expect(terms.get(`${ownerName}/cloud-route`)).toMatchObject({ leaseName: DEFAULT_MIGRATION_LEADER_NAME, holderIdentity: `${ownerName}-1/${ownerName}`, fencingToken: migrationLease.fencingToken });
    expect(migrationLease.holderIdentity).toBe(`${ownerName}-1/${ownerName}`);
    const kcmLease = (await sim.leases.read('kcm')).item!;
    expect(terms.get('kcm/deployment')).toMatchObject({ leaseName: 'kcm', holderIdentity: 'kcm-1', fencingToken: kcmLease.fencingToken });
    // the owner stops (releasing its leases): the migration lease moves and the controller runs on the other side
    owner.abort.abort();
    await sim.settle(owner.done);
    const stoppedAt = sim.clock.monotonic();
    await sim.until('the migrated controller to move', () => running.get(other) === 1, 10_000);
    // no term waited out: the owner handed the migration lease to its successor (the other
    // component) as it stopped, and the successor, reading right behind the owner's renewals, confirms;
    // had the hand-off failed, an election (a tick, the answer at the next poll, a tick, the
    // confirmation at the next poll), or the successor at its next poll
    expect(sim.clock.monotonic() - stoppedAt).toBeLessThanOrEqual(2 * (TICK_MS + FAST.retryPeriodMs * 1.2) + 10 * 2 * LATENCY_MS);
    expect(maxRoute).toBe(1);
    kcm.abort.abort();
    ccm.abort.abort();
    await sim.settle(Promise.all([kcm.done, ccm.done]));
    expect([...running.values()].every((n) => n === 0)).toBe(true);
  });
  it('resolves only once the migration lease is given up: nothing of its elector runs after, so a process may exit then', async () => {
    const sim = await Sim.create({ config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } });
    sim.coordinator({ tickEveryMs: TICK_MS });
    const { running, start } = migratingComponents(sim);
    const kcm = start('kcm');
    const ccm = start('ccm');
    await sim.until('the migrated controller in one of them', () => (running.get('kcm/cloud-route') ?? 0) + (running.get('ccm/cloud-route') ?? 0) === 1, 10_000);
    const owner = running.get('kcm/cloud-route') === 1 ? kcm : ccm;
    const other = owner === kcm ? ccm : kcm;
    // the owner stops; once runWithLeaderMigration has resolved, the process would exit
    owner.abort.abort();
    let resolvedAt: number | undefined;
    void owner.done.then(() => (resolvedAt = sim.clock.monotonic()));
    await sim.settle(owner.done);
    await sim.run(5 * FAST.leaseDurationMs);
    // what the owner's machine sent after run resolved: nothing (its migration elector had finished, lease given up)
    expect(owner.machine.sent.filter((r) => r.at > resolvedAt!).map((r) => r.operation)).toEqual([]);
    expect(running.get(`${owner.component}/cloud-route`)).toBe(0);
    const lease = (await sim.leases.read(DEFAULT_MIGRATION_LEADER_NAME)).item!;
    expect(lease.holderIdentity).toBe(`${other.component}-1/${other.component}`);
    other.abort.abort();
    await sim.settle(other.done);
  });
  // stopped at points across a renew interval (FAST's: 1 s), so whatever the migration lease's phase
  it.each([0, 250, 500, 750])('the primary term ends (stopped %i ms into a renew interval): the migration term ends with it, within one read of its lease, not at its next renewal, and goes to its successor', async (offsetMs) => {
    const sim = await Sim.create({ config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } });
    sim.coordinator({ tickEveryMs: TICK_MS });
    const { running, ended, start } = migratingComponents(sim);
    const kcm = start('kcm');
    const ccm = start('ccm');
    await sim.until('the migrated controller in one of them', () => (running.get('kcm/cloud-route') ?? 0) + (running.get('ccm/cloud-route') ?? 0) === 1, 10_000);
    await sim.run(3 * FAST.leaseDurationMs + offsetMs); // settled terms: a cancelled leader with an heir would lead on to its next renewal
    const owner = running.get('kcm/cloud-route') === 1 ? kcm : ccm;
    const other = owner === kcm ? ccm : kcm;
    owner.abort.abort();
    await sim.settle(owner.done);
    const primaryEnded = ended.get(`${owner.component}/own`)!;
    const migrationEnded = ended.get(`${owner.component}/cloud-route`)!;
    // the migration lease read (to hand it over) is all it waits for. Before the fix: it led on to its
    // next renewal, up to a renew interval after the primary term's end
    expect(migrationEnded - primaryEnded).toBeLessThanOrEqual(2 * LATENCY_MS);
    await sim.until('the migrated controller to move', () => running.get(`${other.component}/cloud-route`) === 1, 10_000);
    expect((await sim.leases.read(DEFAULT_MIGRATION_LEADER_NAME)).item!.holderIdentity).toBe(`${other.component}-1/${other.component}`);
    // handed over to its successor, as before the fix (the bound of the test above): no term waited out
    expect(sim.clock.monotonic() - migrationEnded).toBeLessThanOrEqual(2 * (TICK_MS + FAST.retryPeriodMs * 1.2) + 10 * 2 * LATENCY_MS);
    other.abort.abort();
    await sim.settle(other.done);
  });
  it('a migration elector that can never run (a session not granted the migration lease) fails the run at once, instead of giving the primary term up at every term', async () => {
    const sim = await Sim.create({ config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } });
    sim.coordinator({ tickEveryMs: TICK_MS });
    const machine = sim.machine();
    const stop = new AbortController();
    // the process's session serves its own lease only: the migration lease's elector is refused when it is built
    const session = new Session({ client: machine.client, tables: sim.names, clock: machine.clock, prefix: 'kcm', leaseNames: ['kcm'], onError: () => undefined });
    void session.run(stop.signal);
    let starts = 0;
    const errors: Error[] = [];
    const done = runWithLeaderMigration({
      startElector: electorStarter({ identity: 'kcm-1', tables: sim.names, platform: 'none', client: machine.client, clock: machine.clock, session, candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' }, onError: (e) => errors.push(e) }),
      controllers: {
        gc: (signal) => {
          starts++;
          return new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
        },
        'cloud-route': () => undefined,
      },
      component: 'kcm',
      primaryLeaseName: 'kcm',
      config: defaultLeaderMigrationConfiguration(['cloud-route']),
      signal: stop.signal,
    });
    let outcome: unknown = 'pending';
    void done.then(() => (outcome = 'resolved'), (e: unknown) => (outcome = e));
    await sim.until('the primary lease led', () => starts > 0, 60_000);
    await sim.run(10 * 15_000); // ten lease durations (client-go's default, the session's)
    // the primary lease was led once, then the run ended with the reason, naming the option and the fix
    expect(starts).toBe(1);
    expect(outcome).toBeInstanceOf(ValidationError);
    expect((outcome as ValidationError).fields).toEqual(['session']);
    expect((outcome as Error).message).toMatch(/add 'conclave-leader-migration' to the Session's leaseNames/);
    expect((await sim.leases.read('kcm')).item?.holderIdentity).toBeUndefined();
    stop.abort();
  });
});

describe('electorStarter', () => {
  it('options a LeaderElector refuses make the started elector reject with the ValidationError (a promise, as StartElector is typed), not throw where it is called', async () => {
    const start = electorStarter({ identity: '', client: {} as never, tables: 'conclave', candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' } });
    let started: Promise<void> | undefined;
    expect(() => (started = start('kcm', () => undefined, new AbortController().signal))).not.toThrow();
    await expect(started).rejects.toBeInstanceOf(ValidationError);
    await expect(started).rejects.toThrow(/identity/);
  });
});
