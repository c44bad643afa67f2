/**
 * A DynamoDB that answers every request seconds late but within the renew deadline (a degraded
 * path, a slow proxy, the AWS SDK's own retries inside one request): the request applies on time,
 * its answer comes back late (sim/harness.ts, Machine.slow). Once the pace is known, a leader keeps
 * its term and a Session keeps its row: at most what was in flight as the slowness began is lost.
 */
import { describe, expect, it } from 'vitest';
import { Session } from '../../lib/sdk/session.js';
import { Sim, type Machine, type SimElector } from '../../sim/harness.js';
import { CLIENT_GO, leaders, settledGroup } from './fault-group.js';

const LEASES = ['job-1', 'job-2', 'job-3', 'job-4'];
const onTable = (suffix: string) => (r: { input: unknown }) => (r.input as { TableName?: string }).TableName?.endsWith(suffix) === true;

/** Two processes electing four leases, with the push path live and each process's Session run (used by its electors or not). */
async function fleet(onSession: boolean) {
  const sim = await Sim.create({ config: { electedLeaseDurationSeconds: 15 }, seed: 7 });
  sim.pushBroker({ delayMs: 50, deliveryMs: 5 });
  sim.coordinator();
  const procs = ['a', 'b'].map((id) => {
    const machine = sim.machine();
    const errors: Error[] = [];
    const session = new Session({ client: machine.client, tables: sim.names, clock: machine.clock, prefix: id, onError: (e) => errors.push(e) });
    void session.run(new AbortController().signal);
    const push = sim.pushFor(machine);
    const electors = LEASES.map((leaseName) => sim.elector(id, { leaseName, fallbackAfterMs: 60_000, ...CLIENT_GO, push, ...(onSession ? { session } : {}) }, { machine, errors }));
    return { machine, session, electors, errors };
  });
  await sim.run(60_000);
  return { sim, procs, electors: procs.flatMap((p) => p.electors) };
}

/** Each lease's count of leaders every half second for `ms`: the most at once, and the lease-ms with none. */
async function watch(sim: Sim, electors: SimElector[], ms: number) {
  let most = 0;
  let leaderlessMs = 0;
  for (let t = 0; t < ms; t += 500) {
    await sim.run(500);
    for (const lease of LEASES) {
      const n = electors.filter((e) => e.elector.options.leaseName === lease && e.elector.isLeader()).length;
      most = Math.max(most, n);
      if (n === 0) leaderlessMs += 500;
    }
  }
  return { most, leaderlessMs };
}

const slowAll = (ms: number) => (m: Machine) => (m.slow = () => ms);

describe('a leader on a slow DynamoDB', () => {
  it.each([3_000, 3_500, 4_000])('every answer %i ms late: the leader keeps its term once the pace is known, its renewals sent sooner (before, past about 3.1 s: abandoned 1 s before the deadline, the term lost every cycle)', async (lateMs) => {
    const { sim, es, leader } = await settledGroup();
    for (const e of es) slowAll(lateMs)(e.machine);
    const from = sim.clock.monotonic();
    await sim.run(60_000);
    // the renewal in flight as the slowness began waits for an answer of the old pace, and the term the
    // coordinator elects next is short (electedLeaseDurationSeconds, 5 s: its first renewal cannot land
    // in time on answers this slow): at most those two are lost
    expect(sim.log.of('stopped').filter((x) => x.at >= from).length).toBeLessThanOrEqual(2);
    const settled = sim.clock.monotonic();
    const now = leaders(es)[0] ?? leader;
    expect(now.elector.isLeader()).toBe(true);
    await sim.run(120_000);
    expect(sim.log.of('stopped').filter((x) => x.at >= settled)).toEqual([]);
    expect(now.elector.isLeader()).toBe(true);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
  });

  it('answers 1-4 s late with jitter: once the pace is known the leader keeps its term (before: an answer slower than half again the one before was abandoned, the term with it)', async () => {
    const { sim, es, leader } = await settledGroup();
    const lates = [1_000, 4_000, 2_000, 3_500, 1_500, 3_000, 4_000, 1_200];
    let n = 0;
    for (const e of es) e.machine.slow = () => lates[n++ % lates.length]!;
    const from = sim.clock.monotonic();
    await sim.run(60_000);
    expect(sim.log.of('stopped').filter((x) => x.at >= from).length).toBeLessThanOrEqual(2);
    const settled = sim.clock.monotonic();
    const now = leaders(es)[0] ?? leader;
    await sim.run(120_000);
    expect(sim.log.of('stopped').filter((x) => x.at >= settled)).toEqual([]);
    expect(now.elector.isLeader()).toBe(true);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
  });

  it('with the push path live, every answer 2.5 s late: a woken leader whose renewal falls due renews rather than reading the lease first (before: 60% of the time leaderless, each term lost to reads the wakes asked for)', async () => {
    const { sim, procs, electors } = await fleet(false);
    for (const p of procs) slowAll(2_500)(p.machine);
    // the first terms after the slowness began: lost at most once a lease (their pace not known yet)
    await watch(sim, electors, 30_000);
    const settled = sim.clock.monotonic();
    const after = await watch(sim, electors, 90_000);
    expect(after.most).toBe(1);
    expect(after.leaderlessMs).toBe(0);
    expect(sim.log.of('stopped').filter((x) => x.at >= settled)).toEqual([]);
  });
});

describe('a Session on a slow DynamoDB', () => {
  it.each([1_500, 2_500])('its renewals answered %i ms late: it renews sooner and waits longer, and its electors write no lease (before: every renewal abandoned, a new row every few seconds, 60 lease writes a minute for 4 leases)', async (lateMs) => {
    const { sim, procs, electors } = await fleet(true);
    for (const p of procs) p.machine.slow = (r) => (r.operation === 'UpdateItem' && onTable('-identities')(r) ? lateMs : 0);
    // a session's first renewals after the slowness began are abandoned at the old pace: it may end once or twice
    await sim.run(30_000);
    const settled = sim.clock.monotonic();
    const before = procs.map((p) => p.session.stats.renewals);
    const w = await watch(sim, electors, 60_000);
    expect(w.most).toBe(1);
    expect(w.leaderlessMs).toBe(0);
    for (const [i, p] of procs.entries()) {
      // renewed on the slow pace: at least one a 5 s renew interval
      expect(p.session.stats.renewals - before[i]!).toBeGreaterThanOrEqual(12);
      // its terms were held on its session: no elector renewed its lease itself
      expect(p.machine.sent.filter((r) => r.at >= settled && r.operation === 'UpdateItem' && onTable('-leases')(r))).toEqual([]);
    }
  });
});
