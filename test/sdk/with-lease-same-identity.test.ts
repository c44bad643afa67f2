/**
 * Two tryWithLease runs at once on a vacant lease, both given the same `identity` (two processes,
 * or one, configured alike). Before, the one that did not win took the winner's term, named as
 * itself, for its own in onNewLeader: it waited instead of returning busy, took the lease when the
 * winner released it, and ran too. Runs are told apart by start-up (the elector's instance), not
 * by name: it is busy, naming the holder.
 */
import { describe, expect, it } from 'vitest';
import { tryWithLease, withLease, type LeaseFn, type LeaseTerm } from '../../lib/sdk/index.js';
import { Sim } from '../../sim/harness.js';
import { FAST } from './harness.js';

async function twoAtOnce(call: typeof tryWithLease) {
  const sim = await Sim.create();
  const runs: { tag: string; instance: string; from: number; to?: number }[] = [];
  const work =
    (tag: string): LeaseFn<number> =>
    async (_s: AbortSignal, term: LeaseTerm) => {
      const run: (typeof runs)[number] = { tag, instance: String((await sim.leases.read('job')).item?.holderInstance), from: sim.elapsed };
      runs.push(run);
      await sim.clock.sleep(FAST.leaseDurationMs);
      run.to = sim.elapsed;
      return term.fencingToken;
    };
  const options = () => {
    const m = sim.machine();
    return { client: m.client, clock: m.clock, tables: sim.names, identity: 'cron-runner', ...FAST };
  };
  const results = await sim.settle(Promise.all([call('job', work('a'), options()), call('job', work('b'), options())]), 'both runs', 60_000);
  return { results, runs };
}

describe('two runs at once under one given identity', () => {
  it('tryWithLease on a vacant lease: one runs, the other is busy, naming the holder', async () => {
    const { results, runs } = await twoAtOnce(tryWithLease);
    expect(runs).toHaveLength(1);
    expect(results.map((r) => r.status).sort()).toEqual(['busy', 'ran']);
    expect(results.find((r) => r.status === 'busy')).toEqual({ status: 'busy', holder: 'cron-runner' });
  });

  it('withLease: both run, one after the other, each its own start-up', async () => {
    const { results, runs } = await twoAtOnce(withLease);
    expect(results.map((r) => r.status)).toEqual(['ran', 'ran']);
    expect(runs).toHaveLength(2);
    expect(runs[1]!.from).toBeGreaterThanOrEqual(runs[0]!.to!);
    expect(new Set(runs.map((r) => r.instance)).size).toBe(2);
  });
});
