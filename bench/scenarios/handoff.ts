/**
 * Graceful hand-off: the leader gets SIGTERM and releases on cancel (Conclave also withdraws its
 * candidacy first); measured until another worker's onStartedLeading. Both systems side by side.
 */
import { describeMode, type BenchContext, type BenchOptions } from '../fleet.js';
import { Collector, type ScenarioResult } from '../report.js';
import { compare, handoffRun, pairedRuns } from './runs.js';

export async function handoff(ctx: BenchContext, opts: BenchOptions): Promise<ScenarioResult> {
  const c = new Collector('handoff');
  for (const mode of opts.modes) {
    const runs = opts.runs ?? (opts.quick ? 2 : 5);
    const what = `graceful hand-off · ${describeMode(mode)}`;
    ctx.log(`\n▸ ${what}: ${runs} run(s) of each system`);
    const samples = await pairedRuns(ctx, c, mode, runs, (system) => handoffRun(ctx, system, mode));
    compare(c, what, samples, () => ({ text: 'median ≤ 1 s', met: (s) => s.median <= 1_000 }));
  }
  return c;
}
