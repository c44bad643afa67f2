/**
 * Graceful hand-off: the leader gets SIGTERM and releases on cancel (Conclave also withdraws its
 * candidacy first); measured until another worker's onStartedLeading, and the leaderless gap from
 * the old leader's onStoppedLeading to it. Both systems side by side; settled, and in burst mode
 * (the measured hand-off 1–3 s into the term a first hand-off began). Conclave's runs are split
 * into their parts (bench/handoff-trace.ts: signal, prepare, write, wake, read, take, started),
 * each a figure of its own, against issue 38's goal: median ≤ 30 ms, p99 ≤ 100 ms.
 */
import { burstDelays, describeStart } from '../burst.js';
import { describeMode, startsOf, type BenchContext, type BenchOptions } from '../fleet.js';
import { describeParts, PARTS, type HandoffParts } from '../handoff-trace.js';
import { Collector, type ScenarioResult } from '../report.js';
import { percentile } from '../stats.js';
import { compare, compareField, handoffRun, pairedRuns, ratioTarget } from './runs.js';

export async function handoff(ctx: BenchContext, opts: BenchOptions): Promise<ScenarioResult> {
  const c = new Collector('handoff');
  for (const { start, mode } of startsOf(opts)) {
    const runs = opts.runs ?? (opts.quick ? 2 : 5);
    const delays = burstDelays(opts.seed, runs);
    const what = `graceful hand-off · ${describeMode(mode)} · ${describeStart(start)}`;
    ctx.log(`\n▸ ${what}: ${runs} run(s) of each system${start === 'burst' ? `, the measured SIGTERM ${delays.join(', ')} ms into the next term (seed ${opts.seed})` : ''}`);
    const samples = await pairedRuns(ctx, c, mode, runs, (system, i) => handoffRun(ctx, system, mode, { start, burstDelayMs: delays[i]! }), { start, ...(start === 'burst' ? { seed: opts.seed } : {}) });
    compare(c, `${what}: SIGTERM → new leader`, samples, ratioTarget(0.5));
    compareField(c, `${what}: leaderless gap (onStoppedLeading → onStartedLeading)`, samples, 'gapMs', { text: 'median ≤ 0.25 s', met: (s) => s.median <= 250 });
    const ms = samples.conclave.map((s) => s.ms);
    if (ms.length) {
      const p99 = percentile(ms, 99);
      c.latency(`${what}: SIGTERM → new leader (issue 38)`, 'conclave', ms, { text: 'median ≤ 30 ms, p99 ≤ 100 ms', met: (s) => s.median <= 30 && p99 <= 100 }, `p99 ${p99} ms (nearest rank)`);
    }
    const traced = samples.conclave.flatMap((s) => (s.handoff ? [s.handoff] : []));
    if (traced.length) {
      ctx.log(`  where Conclave's time went (${traced.length} traced runs):`);
      for (const l of describeParts(traced)) ctx.log(`    ${l}`);
      for (const p of PARTS) {
        const xs = traced.flatMap((h: HandoffParts) => (h.parts[p] === undefined ? [] : [h.parts[p]!]));
        if (xs.length) c.latency(`${what}: part ${p}`, 'conclave', xs, undefined, `p99 ${percentile(xs, 99)} ms`);
      }
    }
  }
  return c;
}
