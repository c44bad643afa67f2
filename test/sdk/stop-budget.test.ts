/**
 * A stop while DynamoDB answers nothing (a route that drops packets, review of 2027-01): run()
 * resolves within the stop's budget (STOP_BUDGET_MS, 10 s from the signal, a leader's wait for its
 * heir not counted), well inside the 30 s Kubernetes and ECS give a SIGTERMed process, and tells
 * onError once what it left undone. Before, each step waited its full bound in turn: a lease read,
 * the candidacy's withdrawal read (a claim window, 15 s), the release and its read-back, 28-34 s
 * after the abort, and the process was SIGKILLed still waiting. Also: a Session that can never
 * start (its answers too slow to pin DynamoDB's time) tells onError why, once. On simulated time.
 */
import { describe, expect, it } from 'vitest';
import { MIN_REQUEST_BOUND_MS } from '../../lib/sdk/bounded-client.js';
import { LeaseCandidate } from '../../lib/sdk/candidate.js';
import { STOP_BUDGET_MS } from '../../lib/sdk/faults.js';
import { HEIR_WAIT_MAX_MS } from '../../lib/sdk/step.js';
import { ClockSkewError } from '../../lib/sdk/server-clock.js';
import { Session } from '../../lib/sdk/session.js';
import { sessionKey } from '../../lib/schemas/identity.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { Sim, type Machine } from '../../sim/harness.js';
import { CLIENT_GO, CONFIG, L, group, onLeases } from './fault-group.js';

const undoneTold = (errors: readonly Error[]) => errors.filter((e) => /its stop left undone/.test(e.message));

/** What `m` sends and what `errors` is told from now on, for `ms` of simulated time: nothing, once a stop resolved. */
async function quietAfter(sim: Sim, m: Machine, errors: readonly Error[], ms: number): Promise<{ sent: number; told: number }> {
  const at = sim.clock.monotonic();
  const before = errors.length;
  await sim.run(ms);
  return { sent: m.sent.filter((r) => r.at >= at).length, told: errors.length - before };
}

describe('a leader stopped while DynamoDB answers nothing (a black-holed route)', () => {
  it('alone (no heir): run() resolves within STOP_BUDGET_MS of the signal (before: 28 s), stepped down first; onError is told once what was left undone; nothing is sent or told after', async () => {
    const sim = await Sim.create({ config: CONFIG });
    sim.coordinator({ tickEveryMs: 1_000 });
    const errors: Error[] = [];
    const e = sim.elector('a', { leaseName: L, ...CLIENT_GO }, { errors });
    await sim.until('it leads', () => e.elector.isLeader(), 120_000);
    await sim.run(3_000);
    e.machine.swallow = () => true;
    await sim.run(1_000);
    const from = sim.clock.monotonic();
    e.controller.abort();
    await sim.settle(e.done, 'run() to resolve', 60_000);
    const took = sim.clock.monotonic() - from;
    expect(took).toBeLessThanOrEqual(STOP_BUDGET_MS); // before: 28,000 (a lease read 3 s, the withdrawal's read 15 s, the release 5 s, its read-back 5 s)
    const stopped = sim.log.of('stopped', 'a');
    expect(stopped.at(-1)).toMatchObject({ reason: 'cancelled' });
    expect(stopped.at(-1)!.at).toBeLessThanOrEqual(from + took);
    const told = undoneTold(errors);
    expect(told).toHaveLength(1);
    expect(told[0]!.message).toMatch(/^LeaderElector "a" of lease "job": its stop left undone .*its leaving of the lease row .*: DynamoDB did not answer within the 10 s a stop waits for it, and run\(\) resolved\. Nothing waits on them: a term not released runs out a lease duration after its last renewal/);
    // none of the requests it cut is told on its own: only the summary says what they were
    expect(errors.filter((x) => x.name === 'TimeoutError' && /a stop waits/.test(x.message))).toEqual([]);
    expect(await quietAfter(sim, e.machine, errors, 60_000)).toEqual({ sent: 0, told: 0 });
  });

  it('with an heir: run() resolves within STOP_BUDGET_MS and a renew interval (its wait for the heir); the heir leads once the term runs out, never beside it', async () => {
    const { sim, leader, successor, errors } = await group();
    await sim.run(3_000);
    leader.machine.swallow = () => true;
    await sim.run(1_000);
    const from = sim.clock.monotonic();
    leader.controller.abort();
    await sim.settle(leader.done, 'run() to resolve', 60_000);
    expect(sim.clock.monotonic() - from).toBeLessThanOrEqual(STOP_BUDGET_MS + leader.elector.renewIntervalMs); // before: 33,000
    expect(undoneTold(errors(leader))).toHaveLength(1);
    await sim.until('the successor leads', () => successor.elector.isLeader(), 2 * CLIENT_GO.leaseDurationMs);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
  });

  it('on a Session: the elector and the Session both resolve within STOP_BUDGET_MS (before: 33.9 s, the Session renewing throughout), each telling once what it left undone; nothing is sent after', async () => {
    const sim = await Sim.create({ config: CONFIG });
    sim.coordinator({ tickEveryMs: 1_000 });
    const errors: Error[] = [];
    const m = sim.machine();
    const session = new Session({ client: m.client, tables: sim.names, clock: m.clock, onError: (x) => errors.push(x) });
    const stop = new AbortController();
    const running = session.run(stop.signal);
    const e = sim.elector('a', { leaseName: L, ...CLIENT_GO, session }, { machine: m, errors });
    await sim.until('it leads on its session', async () => e.elector.isLeader() && session.healthy() && (await sim.leases.read(L)).item?.session !== undefined, 120_000);
    await sim.run(2_000);
    m.swallow = () => true;
    await sim.run(1_000);
    const from = sim.clock.monotonic();
    e.controller.abort();
    stop.abort();
    await sim.settle(Promise.all([e.done, running]), 'both to resolve', 60_000);
    expect(sim.clock.monotonic() - from).toBeLessThanOrEqual(STOP_BUDGET_MS);
    const told = undoneTold(errors);
    expect(told.map((x) => x.message.split(':')[0])).toEqual(['LeaderElector "a" of lease "job"', `Session of process ${session.process}`]);
    expect(await quietAfter(sim, m, errors, 60_000)).toEqual({ sent: 0, told: 0 });
  });
});

describe('a stop on a healthy DynamoDB', () => {
  it('a leader whose renewal falls due past HEIR_WAIT_MAX_MS (a 36 s renew interval) leads on for its heir that long at most, then hands over: run() resolves inside the 30 s before SIGKILL; nothing is told', async () => {
    const LONG = { leaseDurationMs: 60_000, renewDeadlineMs: 40_000, retryPeriodMs: 2_000 } as const;
    const { sim, leader, successor, errors } = await group(LONG);
    const renewals = () => leader.machine.sent.filter((r) => r.ok && onLeases(sim, r) && r.operation === 'UpdateItem').length;
    await sim.run(3 * leader.elector.renewIntervalMs); // past its first renewals: it leads on for its heir until the next would be due
    const n = renewals();
    await sim.until('a renewal', () => renewals() > n, 2 * leader.elector.renewIntervalMs);
    await sim.run(1_000);
    const token = leader.elector.fencingToken!;
    const from = sim.clock.monotonic();
    leader.controller.abort();
    await sim.settle(leader.done, 'run() to resolve', 2 * LONG.leaseDurationMs);
    const took = sim.clock.monotonic() - from;
    expect(took).toBeGreaterThan(STOP_BUDGET_MS); // it led on past the budget, for its heir
    // before: until its next renewal would be due, up to 36 s, and its stop's wait on DynamoDB after it
    expect(took).toBeLessThanOrEqual(HEIR_WAIT_MAX_MS + 1_000);
    expect(sim.log.of('stopped', leader.elector.options.identity).at(-1)).toMatchObject({ reason: 'cancelled', token });
    // handed over: the leader's own write names the heir, as it resolves (not the term run out, a lease duration on)
    const heir = successor.elector.options.identity;
    const handed = sim.leaseWrites.find((w) => w.at > from && w.by === leader.machine.name && w.item?.['holderIdentity'] === heir);
    expect(handed).toBeDefined();
    // from its next read (it reads a renew interval after the renewal it saw)
    await sim.until('the heir leads', () => successor.elector.isLeader(), leader.elector.renewIntervalMs);
    expect(successor.elector.fencingToken).toBeGreaterThan(token);
    expect(undoneTold(errors(leader))).toEqual([]);
  });
});

describe('a stop on a healthy DynamoDB, on Sessions', () => {
  it("a leader leading on for its heir past the budget: its Session waits as long, and deletes its row once the elector has handed over; nothing is told", async () => {
    const LONG = { leaseDurationMs: 60_000, renewDeadlineMs: 40_000, retryPeriodMs: 2_000 } as const;
    const sim = await Sim.create({ config: CONFIG });
    sim.coordinator({ tickEveryMs: 1_000 });
    const procs = ['a', 'b'].map((id) => {
      const m = sim.machine();
      const errors: Error[] = [];
      const session = new Session({ client: m.client, tables: sim.names, clock: m.clock, maxLeaseDurationMs: LONG.leaseDurationMs, onError: (x) => errors.push(x) });
      const stop = new AbortController();
      const running = session.run(stop.signal);
      const e = sim.elector(id, { leaseName: L, ...LONG, session }, { machine: m, errors });
      return { id, m, errors, session, stop, running, e };
    });
    await sim.until('a leader on its session, a successor named', async () => {
      const l = (await sim.leases.read(L)).item;
      return l?.session !== undefined && l.successor !== undefined;
    }, 120_000);
    await sim.run(3 * LONG.leaseDurationMs); // its term settled: it leads on for its heir until its next renewal would be due
    const holder = (await sim.leases.read(L)).item!.holderIdentity;
    const [leader, heir] = holder === 'a' ? procs : [procs[1]!, procs[0]!];
    const from = sim.clock.monotonic();
    leader!.stop.abort();
    leader!.e.controller.abort();
    await sim.settle(Promise.all([leader!.e.done, leader!.running]), 'both to resolve', 2 * LONG.leaseDurationMs);
    expect(sim.clock.monotonic() - from).toBeGreaterThan(STOP_BUDGET_MS); // it led on past the budget, for its heir
    expect(sim.leaseWrites.find((w) => w.at > from && w.by === leader!.m.name && w.item?.['holderIdentity'] === heir!.id)).toBeDefined();
    // the Session's row deleted once its elector left (before the wait was counted: cut unsent, and told as left undone)
    expect(leader!.m.sent.filter((r) => r.at > from && r.operation === 'DeleteItem' && r.ok && (r.input as { TableName?: string }).TableName === sim.names.identities)).toHaveLength(1);
    expect(undoneTold(leader!.errors)).toEqual([]);
    await sim.until('the heir leads', () => heir!.e.elector.isLeader(), 5_000);
    heir!.stop.abort();
    heir!.e.controller.abort();
    await sim.settle(Promise.all([heir!.e.done, heir!.running]), 'the heir to stop', 2 * LONG.leaseDurationMs);
  });
});

describe("a Session whose signal aborts before its electors' (each elector run on a signal of its own)", () => {
  it("its electors stop 12 s after it: its row is deleted as the last leaves, given the stop's wait from then, not cut unsent with DynamoDB blamed (before: the 10 s counted from its own signal, spent on waiting for them)", async () => {
    const sim = await Sim.create({ config: CONFIG });
    sim.coordinator({ tickEveryMs: 1_000 });
    const m = sim.machine();
    const errors: Error[] = [];
    const session = new Session({ client: m.client, tables: sim.names, clock: m.clock, onError: (x) => errors.push(x) });
    const stop = new AbortController();
    const running = session.run(stop.signal);
    const e = sim.elector('a', { leaseName: L, ...CLIENT_GO, session }, { machine: m, errors });
    await sim.until('it leads on its session', async () => e.elector.isLeader() && session.healthy() && (await sim.leases.read(L)).item?.session !== undefined, 120_000);
    const name = session.name!;
    stop.abort(); // the Session's signal: it waits for its elector
    await sim.run(STOP_BUDGET_MS + 2_000);
    expect(session.healthy()).toBe(true); // renewed on, for the elector that still leads
    const from = sim.clock.monotonic();
    e.controller.abort();
    await sim.settle(Promise.all([e.done, running]), 'both to resolve', 60_000);
    expect(sim.clock.monotonic() - from).toBeLessThanOrEqual(STOP_BUDGET_MS);
    const deletes = m.sent.filter((r) => r.at >= from && r.operation === 'DeleteItem' && (r.input as { TableName?: string }).TableName === sim.names.identities);
    expect(deletes.map((r) => r.ok)).toEqual([true]);
    const key = sessionKey(name);
    expect((await new IdentityStore(sim.client, sim.names.identities).read(key.component, key.name)).item).toBeUndefined();
    expect(undoneTold(errors)).toEqual([]);
  });
});

describe('a LeaseCandidate run on its own, stopped while DynamoDB answers nothing', () => {
  it('its row\'s removal waits MIN_REQUEST_BOUND_MS, not a claim window (before: 15 s); told as the timeout it is', async () => {
    const sim = await Sim.create();
    const m = sim.machine();
    const errors: Error[] = [];
    const c = new LeaseCandidate({ leaseName: L, name: 'c', tables: sim.names, client: m.client, clock: m.clock, emulationVersion: '1.30.0', binaryVersion: '1.30.0', onError: (x) => errors.push(x) });
    const stop = new AbortController();
    const done = c.run(stop.signal);
    await sim.settle(c.ready);
    m.swallow = () => true;
    const from = sim.clock.monotonic();
    stop.abort();
    await sim.settle(done, 'run() to resolve', 60_000);
    expect(sim.clock.monotonic() - from).toBeLessThanOrEqual(MIN_REQUEST_BOUND_MS + 10);
    expect(errors.map((x) => x.name)).toEqual(['DynamoDBUnreachableError']);
    expect(await quietAfter(sim, m, errors, 60_000)).toEqual({ sent: 0, told: 0 });
  });
});

describe('a Session that can never start: every answer 1.5 s late, so DynamoDB\'s time cannot be pinned within maxClockErrorMs (500 ms)', () => {
  it('tells onError once, a ClockSkewError naming the Session and what to do (before: nothing, ever); starts once answers are fast again', async () => {
    const sim = await Sim.create();
    const m = sim.machine();
    const errors: Error[] = [];
    const session = new Session({ client: m.client, tables: sim.names, clock: m.clock, onError: (x) => errors.push(x) });
    m.slow = () => 1_500;
    const stop = new AbortController();
    const running = session.run(stop.signal);
    await sim.run(60_000);
    expect(session.healthy()).toBe(false);
    expect(session.stats.started).toBe(0);
    expect(m.sent.length).toBeGreaterThan(10); // it kept probing
    expect(errors).toHaveLength(1);
    const [e] = errors as [ClockSkewError];
    expect(e).toBeInstanceOf(ClockSkewError);
    expect(e.doubt.reason).toBe('uncertain');
    expect(e.message).toMatch(new RegExp(`^Session of process ${session.process}: DynamoDB's time is known only to \\+/-\\d+ ms, more than maxClockErrorMs \\(500 ms\\): .*; it has started no session row for \\d+ s and starts none until it knows \\(a clock skew prevention\\): its electors renew their leases themselves meanwhile .*check what slows DynamoDB's answers`));
    m.slow = undefined;
    await sim.until('it starts', () => session.healthy(), 10_000);
    expect(errors).toHaveLength(1);
    stop.abort();
    await sim.settle(running);
  });
});

describe('a stop on a slow DynamoDB, on a Session', () => {
  it('answers 1.5 s late from the stop: the electors, then the Session, resolve within the stop\'s 10 s', async () => {
    const sim = await Sim.create({ config: CONFIG });
    sim.coordinator({ tickEveryMs: 1_000 });
    const m = sim.machine();
    const errors: Error[] = [];
    const session = new Session({ client: m.client, tables: sim.names, clock: m.clock, maxLeaseDurationMs: CLIENT_GO.leaseDurationMs, onError: (x) => errors.push(x) });
    const stop = new AbortController();
    const running = session.run(stop.signal);
    const es = ['a', 'b'].map((id) => sim.elector(id, { leaseName: `${L}-${id}`, ...CLIENT_GO, session }, { machine: m, errors }));
    await sim.until('both lead', () => es.every((e) => e.elector.isLeader()), 120_000);
    await sim.run(3_000);
    // every answer 1.5 s late from the stop
    m.slow = () => 1_500;
    const from = sim.clock.monotonic();
    for (const e of es) e.controller.abort();
    stop.abort();
    let electorsAt = 0;
    void Promise.all(es.map((e) => e.done)).then(() => (electorsAt = sim.clock.monotonic()));
    await sim.settle(running, 'the Session to resolve', 120_000);
    const sessionAt = sim.clock.monotonic();
    expect(electorsAt).toBeGreaterThan(0);
    expect(sessionAt).toBeGreaterThanOrEqual(electorsAt);
    expect(sessionAt - from).toBeLessThanOrEqual(STOP_BUDGET_MS + 100);
  });
});
