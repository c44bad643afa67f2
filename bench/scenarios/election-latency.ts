/**
 * Election latency: from the coordinator seeing a vacancy (the election's startedAt) to the
 * winner written on the lease (its acquireTime), and to the winner acting (onStartedLeading).
 *
 * With succession on (the default), a vacancy with a live designated successor needs no election
 * at all: the hand-off and crash scenarios time that path. This scenario times the election
 * itself, so it runs on a coordinator configured with `succession: false`, where every vacancy
 * goes through one (as in Kubernetes) — what happens, with succession on, whenever no live
 * successor takes the lease. The vacancy is a graceful release with candidates that have not
 * renewed within the ack window, so they are pinged; they learn of the election at their next
 * poll of the lease.
 *
 * - All candidates alive (ack path): the last ack finishes the election.
 * - One candidate dead (timer path): a follower (the one next in line) is SIGKILLed first, so it
 *   never answers its ping: the election waits out its ack window and the timer finishes it.
 *
 * A run whose new term did not come from an election is recorded and counted, not failed: it has
 * no election to time.
 */
import { ackWindowMs, describeMode, type BenchContext, type BenchOptions, type Mode } from '../fleet.js';
import { Collector, type ScenarioResult } from '../report.js';
import { median } from '../stats.js';
import { describeSample, handoffRun, seconds, type RunSample } from './runs.js';

async function collect(ctx: BenchContext, c: Collector, mode: Mode, path: 'ack' | 'timer', runs: number): Promise<RunSample[]> {
  const samples: RunSample[] = [];
  for (let i = 0; i < runs; i++) {
    try {
      const s = await handoffRun(ctx, 'conclave', mode, { deadSuccessor: path === 'timer', succession: false });
      samples.push(s);
      c.record('sample', { system: 'conclave', mode, path, run: i + 1, ...s });
      ctx.log(`  ${path} path run ${i + 1}/${runs}: ${describeSample(s)}`);
    } catch (e) {
      c.record('failure', { system: 'conclave', mode, path, run: i + 1, error: (e as Error).message });
      ctx.log(`  ${path} path run ${i + 1}/${runs}: ✗ ${(e as Error).message}`);
    }
  }
  return samples;
}

/** Figures for one path: vacancy seen → elected, and → the new leader acts, over the runs that went through an election. */
function figures(c: Collector, what: string, samples: RunSample[], opts: { target?: boolean; expected?: string }): void {
  const elected = samples.filter((s) => s.electMs !== undefined && s.pickupMs !== undefined);
  const others = samples.length - elected.length;
  const byWhom = [...new Set(samples.filter((s) => s.electMs === undefined).map((s) => s.electedBy ?? 'unknown'))].join('/');
  const direct = samples.filter((s) => s.electMs === undefined);
  const notes = [
    opts.expected,
    others ? `${others} of ${samples.length} runs began without an election (electedBy ${byWhom}${direct.length ? `; release → new leader acts, median ${seconds(median(direct.map((s) => s.ms)))}` : ''})` : undefined,
  ].filter(Boolean);
  const note = notes.length ? notes.join('; ') : undefined;
  c.latency(`${what}: vacancy seen → elected`, 'conclave', elected.map((s) => s.electMs!), opts.target ? { text: 'median ≤ 1 s', met: (s) => s.median <= 1_000 } : undefined, note ?? (elected.length ? undefined : 'no run went through an election'));
  c.latency(`${what}: vacancy seen → new leader acts`, 'conclave', elected.map((s) => s.electMs! + s.pickupMs!), undefined, elected.length ? undefined : 'no run went through an election');
}

export async function electionLatency(ctx: BenchContext, opts: BenchOptions): Promise<ScenarioResult> {
  const c = new Collector('election-latency');
  const mode = opts.modes[0]!;
  const runs = opts.runs ?? (opts.quick ? 2 : 5);
  const base = `election latency (succession off) · ${describeMode(mode)}, ack window ${seconds(ackWindowMs(mode))}`;
  ctx.log(`\n▸ ${base}: ${runs} run(s) of each path`);
  const ack = await collect(ctx, c, mode, 'ack', runs);
  figures(c, `${base} · all candidates alive (ack path)`, ack, { target: true });
  const timer = await collect(ctx, c, mode, 'timer', runs);
  figures(c, `${base} · one candidate dead (timer path)`, timer, {
    expected: `expected: at least the ack window (${seconds(ackWindowMs(mode))}); the timer fires ${Math.ceil(ackWindowMs(mode) / 1000)} s after the opening (SQS delays are whole seconds) unless another trigger after the deadline comes first`,
  });
  return c;
}
