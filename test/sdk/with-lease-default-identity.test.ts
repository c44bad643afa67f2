/**
 * Runs of one process at once, each with the default identity. Before, every run of a process was
 * `run-<host>-<pid>`: two tryWithLease calls at once on a vacant lease both ran, the second after
 * the first (it took the winner, its own identity, for itself and waited instead of being busy), and
 * the one that followed was told another live start-up led under its identity. Now each run's
 * default identity is its own (`run-<host>-<pid>-<n>`).
 */
import { describe, expect, it } from 'vitest';
import { tryWithLease, withLease, type LeaseFn, type LeaseTerm } from '../../lib/sdk/index.js';
import { Sim } from '../../sim/harness.js';
import { FAST } from './harness.js';

async function twoAtOnce(call: typeof tryWithLease) {
  const sim = await Sim.create();
  const runs: { tag: string; holder: string; from: number; to?: number }[] = [];
  const errors: Error[] = [];
  const work =
    (tag: string): LeaseFn<number> =>
    async (_s: AbortSignal, term: LeaseTerm) => {
      const run: (typeof runs)[number] = { tag, holder: String((await sim.leases.read('job')).item?.holderIdentity), from: sim.elapsed };
      runs.push(run);
      await sim.clock.sleep(FAST.leaseDurationMs);
      run.to = sim.elapsed;
      return term.fencingToken;
    };
  const options = () => {
    const m = sim.machine();
    return { client: m.client, clock: m.clock, tables: sim.names, ...FAST, onError: (e: Error) => errors.push(e) };
  };
  const results = await sim.settle(Promise.all([call('job', work('a'), options()), call('job', work('b'), options())]), 'both runs', 60_000);
  return { results, runs, errors };
}

describe('two runs of one process at once, each with the default identity', () => {
  it('tryWithLease on a vacant lease: one runs, the other is busy, naming the winner; nothing told', async () => {
    const { results, runs, errors } = await twoAtOnce(tryWithLease);
    expect(runs).toHaveLength(1);
    expect(results.map((r) => r.status).sort()).toEqual(['busy', 'ran']);
    expect(results.find((r) => r.status === 'busy')).toEqual({ status: 'busy', holder: runs[0]!.holder });
    expect(runs[0]!.holder).toMatch(/^run-.+-\d+-\d+$/);
    expect(errors.map((e) => e.message)).toEqual([]);
  });

  it('withLease: both run, one after the other, under identities of their own; nothing told', async () => {
    const { results, runs, errors } = await twoAtOnce(withLease);
    expect(results.map((r) => r.status)).toEqual(['ran', 'ran']);
    expect(runs).toHaveLength(2);
    expect(runs[1]!.from).toBeGreaterThanOrEqual(runs[0]!.to!);
    expect(new Set(runs.map((r) => r.holder)).size).toBe(2);
    expect(errors.map((e) => e.message)).toEqual([]);
  });
});
