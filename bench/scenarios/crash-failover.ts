/**
 * Crash failover: the leader is SIGKILLed; measured until another worker's onStartedLeading.
 * Conclave and the baseline run side by side (run i of each at once, killed at the same phase),
 * the kill time swept across the leader's renew cycle (bench/sweep.ts).
 *
 * Two scenarios share this: plain crash failover (nobody tells anyone the leader died: its term
 * has to run out) and crash failover with the platform signal (Conclave's workers run as local
 * ECS tasks; the kill becomes ECS's "Task State Change" STOPPED event, the platform function ends
 * the dead holder's term at once). The baseline has no such signal: it is the same client-go-style
 * lock in both, run again beside each so every ratio compares runs made under the same load.
 *
 * Each runs settled (the kill phase swept) and, where asked, in burst mode (bench/burst.ts: a
 * first kill, then the measured one 1–3 s into the next leader's term). Every run also reports
 * how long past the dead term's expiry the new leader acted (bench/expiry.ts).
 */
import { burstDelays, describeStart } from '../burst.js';
import { describeMode, MODES, startsOf, type BenchContext, type BenchOptions } from '../fleet.js';
import { Collector, type ScenarioResult } from '../report.js';
import { killPhases, renewCycleMs } from '../sweep.js';
import { compare, compareField, crashRun, pairedRuns, pastExpiryTarget, ratioTarget, seconds } from './runs.js';

async function crashScenario(ctx: BenchContext, opts: BenchOptions, signal: boolean): Promise<ScenarioResult> {
  const c = new Collector(signal ? 'crash-failover-signal' : 'crash-failover');
  const delayMs = opts.signalDelayMs ?? 0;
  for (const { start, mode } of startsOf(opts, signal ? opts.starts.signalBurst : opts.starts.burst)) {
    const runs = opts.runs ?? (opts.quick ? 2 : 10);
    // each system killed across its own renew cycle (Conclave renews less often than the baseline)
    const phases = { conclave: killPhases(runs, renewCycleMs('conclave', MODES[mode].timing)), baseline: killPhases(runs, renewCycleMs('baseline', MODES[mode].timing)) };
    const delays = burstDelays(opts.seed, runs);
    const what = `${signal ? `crash failover with the platform signal (ECS task STOPPED${delayMs ? ` ${seconds(delayMs)} after the exit` : ' at the exit'})` : 'crash failover'} · ${describeMode(mode)} · ${describeStart(start)}`;
    ctx.log(`\n▸ ${what}: ${runs} run(s) of each system, ${start === 'settled' ? `killed ${phases.conclave.join(', ')} ms (Conclave) / ${phases.baseline.join(', ')} ms (baseline) after a renewal` : `the measured kill ${delays.join(', ')} ms into the next term (seed ${opts.seed})`}`);
    const samples = await pairedRuns(
      ctx,
      c,
      mode,
      runs,
      (system, i) => crashRun(ctx, system, mode, phases[system][i]!, { ...(signal && system === 'conclave' ? { platformSignal: { delayMs } } : {}), start, burstDelayMs: delays[i]! }),
      { start, ...(start === 'burst' ? { seed: opts.seed } : {}), ...(signal ? { platformSignal: true, signalDelayMs: delayMs } : {}) },
    );
    // The issue's targets are for the plain crash; with the signal, the figures stand beside the baseline alone.
    compare(c, `${what}: kill → new leader`, samples, signal ? undefined : ratioTarget(0.9));
    compareField(c, `${what}: new leader past the term's expiry`, samples, 'pastExpiryMs', signal ? undefined : pastExpiryTarget);
  }
  return c;
}

export const crashFailover = (ctx: BenchContext, opts: BenchOptions) => crashScenario(ctx, opts, false);
export const crashFailoverSignal = (ctx: BenchContext, opts: BenchOptions) => crashScenario(ctx, opts, true);
