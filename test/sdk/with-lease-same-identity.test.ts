/**
 * tryWithLease runs given the same `identity` (two processes, or one, configured alike). Before,
 * the run that did not win took the winner's term, named as itself, for its own: it waited instead
 * of returning busy, took the lease when the winner released it, and ran too. Runs are told apart
 * by start-up (the row's holderInstance against the run's elector's), never by name: a run the
 * coordinator elects, named on the row before it confirms, is this run's own term.
 */
import { DeleteItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { fencingTokenFloor } from '../../lib/schemas/fencing-token.js';
import { tryWithLease, withLease, type LeaseFn, type LeaseRunResult, type LeaseTerm } from '../../lib/sdk/index.js';
import { Sim } from '../../sim/harness.js';
import { FAST } from './harness.js';

type Run = { tag: string; instance: string; from: number; to?: number };

/** Two calls at once under one identity, each on its own machine; when each settled (simulated ms). */
async function twoAtOnce(sim: Sim, call: typeof tryWithLease) {
  const runs: Run[] = [];
  const settledAt: number[] = [];
  const work =
    (tag: string): LeaseFn<number> =>
    async (_s: AbortSignal, term: LeaseTerm) => {
      const run: Run = { tag, instance: String((await sim.leases.read('job')).item?.holderInstance), from: sim.elapsed };
      runs.push(run);
      await sim.clock.sleep(FAST.leaseDurationMs);
      run.to = sim.elapsed;
      return term.fencingToken;
    };
  const one = (tag: string): Promise<LeaseRunResult<number>> => {
    const m = sim.machine();
    return call('job', work(tag), { client: m.client, clock: m.clock, tables: sim.names, identity: 'cron-runner', ...FAST, onError: () => undefined }).finally(() => settledAt.push(sim.elapsed));
  };
  const results = await sim.settle(Promise.all([one('a'), one('b')]), 'both runs', 120_000);
  return { results, runs, settledAt };
}

/** One ran, the other said busy, naming the holder, at once (within a retry period of the winner's start). */
function oneRanOneBusy({ results, runs, settledAt }: Awaited<ReturnType<typeof twoAtOnce>>) {
  expect(runs).toHaveLength(1);
  expect(results.map((r) => r.status).sort()).toEqual(['busy', 'ran']);
  expect(results.find((r) => r.status === 'busy')).toEqual({ status: 'busy', holder: 'cron-runner' });
  // told by the row that refused its take, or by the read that found the winner: before its next poll
  expect(Math.min(...settledAt)).toBeLessThan(runs[0]!.from + FAST.retryPeriodMs);
}

/**
 * A coordinated lease "nightly" whose every eventually consistent read is answered by a copy a
 * second old, its coordinator running; `run` is a coordinated tryWithLease on a machine of its own
 * whose function takes `ms` (simulated).
 */
async function behindCopies() {
  const sim = await Sim.create({ config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 }, model: { staleReadMaxLagMs: 1_000, random: () => 0.99 } });
  const coordinator = sim.coordinator();
  const run = (identity: string, ms: number) => {
    const m = sim.machine();
    return sim.settle(
      tryWithLease('nightly', async (_s, t) => (await sim.clock.sleep(ms), t.fencingToken), { client: m.client, clock: m.clock, tables: sim.names, identity, ...FAST, onError: () => undefined, mode: 'coordinated', candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' } }),
      'a run',
      60_000,
    );
  };
  return { sim, coordinator, run };
}

describe('runs at once under one given identity', () => {
  it('tryWithLease on a vacant lease: one runs, the other is busy at once, naming the holder', async () => {
    oneRanOneBusy(await twoAtOnce(await Sim.create(), tryWithLease));
  });

  it("tryWithLease on a lease whose stale term is a crashed run's under that identity: one runs, the other is busy at once", async () => {
    const sim = await Sim.create();
    const crashed = sim.machine();
    void tryWithLease('job', () => new Promise<never>(() => undefined), { client: crashed.client, clock: crashed.clock, tables: sim.names, identity: 'cron-runner', ...FAST, onError: () => undefined });
    await sim.until('the crashed run leads', async () => (await sim.leases.read('job')).item?.holderIdentity === 'cron-runner');
    crashed.kill();
    await sim.run(3 * FAST.leaseDurationMs);
    oneRanOneBusy(await twoAtOnce(sim, tryWithLease));
  });

  // with no row at its first look, a term a consistent read shows was taken since, whatever its
  // token: a run whose clock is 3 s behind takes the new row with a token below the floor of this
  // run's clock (before 2026-12-05 not counted as a take: this run waited the term out and ran too)
  it.each([
    ['cron-runner', 'cron-runner', 4],
    ['cron-runner', 'cron-runner', 8],
    ['nightly-1', 'nightly-2', 4],
    ['nightly-1', 'nightly-2', 8],
  ])('a run (%s) whose clock is 3 s behind, then a tryWithLease (%s) %i ms later, on no row yet: one runs, the other is busy naming it', async (behind, ahead, delayMs) => {
    const sim = await Sim.create();
    const ran: string[] = [];
    const one = (identity: string, offsetMs: number): Promise<LeaseRunResult<number>> => {
      const m = sim.machine({ offsetMs });
      const fn: LeaseFn<number> = async (_s, t) => (ran.push(identity), await sim.clock.sleep(FAST.leaseDurationMs), t.fencingToken);
      return tryWithLease('job', fn, { client: m.client, clock: m.clock, tables: sim.names, identity, clockSync: 'none', ...FAST, onError: () => undefined });
    };
    const first = one(behind, -3_000);
    await sim.run(delayMs);
    const second = one(ahead, 0);
    const results = await sim.settle(Promise.all([first, second]), 'both runs', 120_000);
    expect(ran).toEqual([behind]);
    expect(results[0]!.status).toBe('ran');
    expect(results[1]).toEqual({ status: 'busy', holder: behind });
  });

  it('withLease: both run, one after the other, each its own start-up', async () => {
    const { results, runs } = await twoAtOnce(await Sim.create(), withLease);
    expect(results.map((r) => r.status)).toEqual(['ran', 'ran']);
    expect(runs).toHaveLength(2);
    expect(runs[1]!.from).toBeGreaterThanOrEqual(runs[0]!.to!);
    expect(new Set(runs.map((r) => r.instance)).size).toBe(2);
  });

  // a stale copy of an earlier run's term, over by then, is no run that took it first: under this
  // identity (busy naming itself before), or another (busy naming the earlier run, before 2026-12-05)
  it.each([
    ['migrate', 'migrate'],
    ['nightly-1', 'nightly-2'],
  ])("a coordinated tryWithLease (%s, then %s) right after the earlier run returned, its polls answered by copies from before: runs", async (first, second) => {
    // every eventually consistent read a second behind: the second run's first poll finds the
    // first run's term on a copy older than the row its first look read
    const { coordinator, run } = await behindCopies();
    expect((await run(first, 1_500)).status).toBe('ran');
    const later = await run(second, 0);
    coordinator.stop();
    expect(later.status).toBe('ran');
  });

  it('a coordinated tryWithLease the coordinator elects (the row names it before it confirms) runs', async () => {
    const sim = await Sim.create({ config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } });
    const coordinator = sim.coordinator();
    const w = sim.elector('w', { leaseName: 'nightly' }, { versions: ['1.31.0', '1.31.0'] });
    await sim.until('w leads', () => w.elector.isLeader());
    w.machine.kill();
    await sim.run(4_000);
    const m = sim.machine();
    const r = await sim.settle(
      tryWithLease('nightly', async (_s, t) => t.fencingToken, { client: m.client, clock: m.clock, tables: sim.names, identity: 'migrate', ...FAST, onError: () => undefined, candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' } }),
      'the try',
      60_000,
    );
    coordinator.stop();
    expect(r.status).toBe('ran');
    expect((await sim.leases.read('nightly')).item?.electedBy).toBe('coordinator');
  });

  // an earlier run's term on a copy from before its row was deleted is no run that took the lease
  // first: with no row at the first look, a copy showing a term is asked again, consistently (busy
  // naming the earlier run before 2026-12-05), and a row created again restarts its revision
  // (busy, judged by revision, at 4b485029), never its token
  it.each([['deleted'], ['deleted and created again, vacant']])("a coordinated tryWithLease right after the lease's row was %s, its polls answered by copies from before: runs", async (what) => {
    const { sim, coordinator, run } = await behindCopies();
    expect((await run('nightly-1', 3_000)).status).toBe('ran');
    const Key = { name: { S: 'nightly' } };
    await sim.client.send(new DeleteItemCommand({ TableName: sim.names.leases, Key }));
    if (what !== 'deleted') {
      const row = { ...Key, leaseDurationSeconds: { N: '15' }, leaseTransitions: { N: '0' }, fencingToken: { N: String(fencingTokenFloor(sim.clock.now())) }, revision: { N: '1' } };
      await sim.client.send(new PutItemCommand({ TableName: sim.names.leases, Item: row }));
      expect((await sim.leases.read('nightly')).item?.holderIdentity).toBeUndefined();
    }
    const later = await run('nightly-2', 0);
    coordinator.stop();
    expect(later).toMatchObject({ status: 'ran' });
  });
});
