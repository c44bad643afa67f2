/**
 * KEP-2436's last step: leader migration switched off replica by replica. A replica with migration
 * on runs the migrated controllers under the migration lease; a replica with it off runs them
 * under the component's own (primary) lease. The migrated controllers of the first must stop with
 * its primary term, whatever the migration lease's read costs, so that the second, leading the
 * primary lease next, never runs them while the first still does.
 */
import { describe, expect, it } from 'vitest';
import type { LeadingTerm } from '../../lib/sdk/elector-options.js';
import { FencingError, LeaseLostError } from '../../lib/sdk/fencing.js';
import { DEFAULT_MIGRATION_LEADER_NAME, defaultLeaderMigrationConfiguration, electorStarter, runWithLeaderMigration, type ControllerTerm, type LeaderMigrationConfiguration, type StartElector } from '../../lib/sdk/migration.js';
import type { Term } from '../../lib/stores/lease-store.js';
import { faults } from '../../sim/dynamodb-model/index.js';
import { FAST } from './harness.js';
import { Sim } from '../../sim/harness.js';

const TICK_MS = 100;

/** Replicas of component `ccm` on `sim`, each with `cloud-route` and `ipam`: the spans of each cloud-route run (simulated ms). */
function replicas(sim: Sim, timings: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number } = FAST) {
  const spans: { who: string; from: number; to?: number }[] = [];
  const running = new Map<string, number>();
  const controller = (who: string) => async (signal: AbortSignal) => {
    const span: { who: string; from: number; to?: number } = { who, from: sim.clock.monotonic() };
    spans.push(span);
    running.set(who, (running.get(who) ?? 0) + 1);
    await new Promise<void>((r) => (signal.aborted ? r() : signal.addEventListener('abort', () => r(), { once: true })));
    span.to = sim.clock.monotonic();
    running.set(who, running.get(who)! - 1);
  };
  const start = (identity: string, config: LeaderMigrationConfiguration | undefined) => {
    const machine = sim.machine();
    const abort = new AbortController();
    const done = runWithLeaderMigration({
      startElector: electorStarter({ identity, tables: sim.names, ...timings, platform: 'none', client: machine.client, clock: machine.clock, candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' }, onError: () => undefined }),
      controllers: { 'cloud-route': controller(`${identity}/cloud-route`), ipam: controller(`${identity}/ipam`) },
      component: 'ccm',
      primaryLeaseName: 'ccm',
      config,
      signal: abort.signal,
    });
    return { abort, done, machine, identity };
  };
  /** The longest time two cloud-route runs overlapped (0: never two at once). */
  const overlapMs = (now: number): number => {
    const routes = spans.filter((s) => s.who.endsWith('/cloud-route'));
    let worst = 0;
    for (const [i, a] of routes.entries())
      for (const b of routes.slice(i + 1)) worst = Math.max(worst, Math.min(a.to ?? now, b.to ?? now) - Math.max(a.from, b.from));
    return worst;
  };
  return { spans, running, start, overlapMs };
}

/** A read of the migration lease's row (what a cancelled leader reads before it hands its lease over). */
const readsMigrationLease = (req: { operation: string; input: unknown }): boolean => req.operation === 'GetItem' && JSON.stringify(req.input).includes(DEFAULT_MIGRATION_LEADER_NAME);

describe('runWithLeaderMigration: migration switched off replica by replica (KEP-2436)', () => {
  it.each([
    ['answers 800 ms late', { slow: 800 }, FAST],
    ['throttled', { throttled: true }, FAST],
    ['answers 4 s late, default timings', { slow: 4_000 }, { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }],
  ] as const)(
    'the replica with migration on stops while its migration lease %s: its migrated controller stops with its primary term, never running beside the next leader’s',
    async (_, how, timings) => {
      const sim = await Sim.create({ config: { ackWindowMs: 500, electedLeaseDurationSeconds: timings.leaseDurationMs / 1000 } });
      sim.coordinator({ tickEveryMs: TICK_MS });
      const { running, start, overlapMs, spans } = replicas(sim, timings);
      const a = start('ccm-a', defaultLeaderMigrationConfiguration(['cloud-route']));
      await sim.until('ccm-a runs cloud-route under the migration lease', () => running.get('ccm-a/cloud-route') === 1, 60_000);
      const b = start('ccm-b', undefined); // migration off: cloud-route under the primary lease
      await sim.run(3 * timings.leaseDurationMs);
      expect(running.get('ccm-b/ipam') ?? 0).toBe(0); // ccm-a leads the primary lease
      // ccm-a's requests for the migration lease answer late, or are throttled
      if ('slow' in how) a.machine.slow = (req) => (readsMigrationLease(req) ? how.slow : 0);
      else a.machine.fault = (req) => (readsMigrationLease(req) ? faults.provisionedThroughputExceeded() : undefined);
      a.abort.abort();
      await sim.settle(a.done);
      await sim.until('ccm-b runs cloud-route under the primary lease', () => running.get('ccm-b/cloud-route') === 1, 10 * timings.leaseDurationMs);
      await sim.run(timings.leaseDurationMs);
      expect(spans.filter((s) => s.who === 'ccm-a/cloud-route').every((s) => s.to !== undefined)).toBe(true);
      // Before the fix: ccm-a's cloud-route ran on until its migration elector had read its lease (774 ms, 126 ms, 2,098 ms of two at once)
      expect(overlapMs(sim.clock.monotonic())).toBe(0);
      b.abort.abort();
      await sim.settle(b.done);
    },
  );
  it('the other way round: a replica with migration on takes over from one with it off, then hands over to another with it off, its migration lease answering late; cloud-route never runs twice', async () => {
    const sim = await Sim.create({ config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } });
    sim.coordinator({ tickEveryMs: TICK_MS });
    const { running, start, overlapMs } = replicas(sim);
    const a = start('ccm-a', undefined);
    await sim.until('ccm-a runs cloud-route under the primary lease', () => running.get('ccm-a/cloud-route') === 1, 60_000);
    const b = start('ccm-b', defaultLeaderMigrationConfiguration(['cloud-route']));
    await sim.run(3 * FAST.leaseDurationMs);
    a.abort.abort();
    await sim.settle(a.done);
    await sim.until('ccm-b runs cloud-route under the migration lease', () => running.get('ccm-b/cloud-route') === 1, 10 * FAST.leaseDurationMs);
    const c = start('ccm-c', undefined);
    await sim.run(3 * FAST.leaseDurationMs);
    b.machine.slow = (req) => (readsMigrationLease(req) ? 800 : 0);
    b.abort.abort();
    await sim.settle(b.done);
    await sim.until('ccm-c runs cloud-route under the primary lease', () => running.get('ccm-c/cloud-route') === 1, 10 * FAST.leaseDurationMs);
    await sim.run(FAST.leaseDurationMs);
    expect(running.get('ccm-b/cloud-route')).toBe(0);
    expect(overlapMs(sim.clock.monotonic())).toBe(0);
    c.abort.abort();
    await sim.settle(c.done);
  });
});

describe('runWithLeaderMigration: the migrated controllers run only while both terms are held', () => {
  it('the primary term ends while the migration term is still held (its elector reading its lease): their signal aborts, their writes are refused (one in flight abandoned), and their stopping is no failure of the migration term', async () => {
    // a hand-driven StartElector: the migration term outlives the primary term until the test ends it
    const terms = new Map<string, AbortController>();
    const work = new Map<string, Promise<unknown>>();
    const startElector: StartElector = (leaseName, onStartedLeading, signal) =>
      new Promise<void>((resolve) => {
        const term = new AbortController();
        terms.set(leaseName, term);
        const never = () => new Promise<never>(() => undefined); // a write DynamoDB never answers
        const handle: Term & LeadingTerm = { fencingToken: leaseName === 'ccm' ? 1 : 7, holderIdentity: 'ccm-a', fencedWrite: never, fencedItemWrite: never };
        work.set(leaseName, Promise.resolve(onStartedLeading(term.signal, handle)).then(() => 'resolved', (e: unknown) => e));
        signal.addEventListener('abort', () => term.signal.aborted ? resolve() : term.signal.addEventListener('abort', () => resolve(), { once: true }), { once: true });
      });
    const shutdown = new AbortController();
    let routeSignal: AbortSignal | undefined;
    let inFlight: Promise<unknown> | undefined;
    let late: unknown;
    const done = runWithLeaderMigration({
      startElector,
      controllers: {
        'cloud-route': async (signal: AbortSignal, term: ControllerTerm) => {
          routeSignal = signal;
          inFlight = term.fencedWrite({ TransactItems: [] }).catch((e: unknown) => e);
          await new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
          late = await term.fencedItemWrite({ put: { TableName: 't', Item: {} } }).catch((e: unknown) => e);
          signal.throwIfAborted(); // a controller that rejects once stopped
        },
      },
      component: 'ccm',
      primaryLeaseName: 'ccm',
      config: defaultLeaderMigrationConfiguration(['cloud-route']),
      signal: shutdown.signal,
    });
    const until = async (what: string, ok: () => boolean) => {
      for (let i = 0; i < 100 && !ok(); i++) await new Promise<void>((r) => setImmediate(r));
      if (!ok()) throw new Error(`never: ${what}`);
    };
    await until('the migrated controller runs', () => routeSignal !== undefined);
    // the primary term ends ('cancelled'); the migration term is still held
    terms.get('ccm')!.abort('cancelled');
    await until('the migrated controller stops', () => late !== undefined);
    expect(routeSignal!.aborted).toBe(true);
    expect(terms.get(DEFAULT_MIGRATION_LEADER_NAME)!.signal.aborted).toBe(false);
    expect(late).toBeInstanceOf(FencingError);
    expect((late as Error).message).toMatch(/the term of lease "ccm" it ran in has ended/);
    expect(await inFlight).toBeInstanceOf(LeaseLostError);
    expect(await inFlight).toMatchObject({ leaseName: DEFAULT_MIGRATION_LEADER_NAME, fencingToken: 7, reason: 'cancelled' });
    // its stopping, a rejection, is not the migration term's work failing: that would cost the hand-over
    expect(await work.get(DEFAULT_MIGRATION_LEADER_NAME)).toBe('resolved');
    terms.get(DEFAULT_MIGRATION_LEADER_NAME)!.abort('cancelled');
    shutdown.abort();
    await done;
  });
});
