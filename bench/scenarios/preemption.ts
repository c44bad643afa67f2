/**
 * Planned preemption: three workers at emulation 1.31.0 lead and follow; a fourth at emulation
 * 1.30.0 (older: better under OldestEmulationVersion) joins. Measured from its registration (its
 * candidate row's createdAt) to its onStartedLeading: the coordinator names it preferredHolder,
 * the leader yields at its next renewal and releases, and the newcomer gets the lease (elected,
 * or taken directly where the coordinator designates it the successor).
 */
import { describeMode, Group, MODES, waitFor, type BenchContext, type BenchOptions } from '../fleet.js';
import { Collector, type ScenarioResult } from '../report.js';
import { median } from '../stats.js';
import { seconds } from './runs.js';

const V131 = { emulationVersion: '1.31.0', binaryVersion: '1.31.0' };
const BETTER = { emulationVersion: '1.30.0', binaryVersion: '1.31.0' };

interface PreemptionSample {
  /** From the newcomer's registration to its onStartedLeading. */
  ms: number;
  /** Workers other than the newcomer that began a term in between (each a detour: the newcomer should be the next leader). */
  via: string[];
  /** From the join until the old leader stopped (preferredHolder seen at its renewal). */
  yieldMs: number | undefined;
  /** From the join until the lease named the newcomer (elected, or taken as the designated successor). */
  electedMs: number | undefined;
  electedBy: string | undefined;
}

async function preemptionRun(ctx: BenchContext, mode: BenchOptions['modes'][number]): Promise<PreemptionSample> {
  const g = await (await Group.create(ctx, 'conclave', mode, `preempt-${mode}`)).addMany(3, V131);
  try {
    const leader = await g.settle();
    const joining = Date.now();
    const joiner = await g.add('w4', BETTER);
    const started = await waitFor('the newcomer w4 to lead', () => joiner.events.find((e) => e.event === 'started'), 3 * MODES[mode].timing.leaseDurationMs + 30_000);
    const via = g.workers.filter((w) => w !== joiner && w.events.some((e) => e.event === 'started' && e.at >= joining && e.at <= started.at)).map((w) => w.identity);
    const joinedAt = await g.joinedAt('w4');
    if (joinedAt === undefined) throw new Error('w4 has no candidate row');
    const yielded = leader.events.find((e) => e.event === 'stopped' && e.reason === 'preempted');
    const term = await g.termOf(started.fencingToken!);
    return { ms: started.at - joinedAt, via, yieldMs: yielded && yielded.at - joinedAt, electedMs: term?.acquireTime === undefined ? undefined : term.acquireTime - joinedAt, electedBy: term?.electedBy };
  } finally {
    await g.close();
  }
}

export async function preemption(ctx: BenchContext, opts: BenchOptions): Promise<ScenarioResult> {
  const c = new Collector('preemption');
  const mode = opts.modes[0]!;
  const runs = opts.runs ?? (opts.quick ? 2 : 5);
  const what = `planned preemption (a better candidate joins → it leads) · ${describeMode(mode)}`;
  ctx.log(`\n▸ ${what}: ${runs} run(s)`);
  const samples: PreemptionSample[] = [];
  for (let i = 0; i < runs; i++) {
    try {
      const s = await preemptionRun(ctx, mode);
      samples.push(s);
      c.record('sample', { system: 'conclave', mode, run: i + 1, ...s });
      ctx.log(`  conclave run ${i + 1}/${runs}: w4 leads ${seconds(s.ms)} after joining (leader yielded at ${s.yieldMs === undefined ? '?' : seconds(s.yieldMs)}, lease names it at ${s.electedMs === undefined ? '?' : seconds(s.electedMs)}, by ${s.electedBy ?? '?'}${s.via.length ? `; ${s.via.join(', ')} led in between` : ''})`);
    } catch (e) {
      c.record('failure', { system: 'conclave', mode, run: i + 1, error: (e as Error).message });
      ctx.log(`  conclave run ${i + 1}/${runs}: ✗ ${(e as Error).message}`);
    }
  }
  const yields = samples.flatMap((s) => (s.yieldMs === undefined ? [] : [s.yieldMs]));
  const elected = samples.flatMap((s) => (s.electedMs === undefined ? [] : [s.electedMs]));
  const detours = samples.filter((s) => s.via.length).length;
  const notes = [
    yields.length && elected.length ? `medians: leader yields ${seconds(median(yields))}, lease names the newcomer ${seconds(median(elected))} after joining` : undefined,
    detours ? `in ${detours}/${samples.length} runs another worker led before the newcomer` : undefined,
  ].filter(Boolean);
  const note = notes.length ? notes.join('; ') : undefined;
  c.latency(what, 'conclave', samples.map((s) => s.ms), { text: 'median ≤ 3 s', met: (s) => s.median <= 3_000 }, note);
  return c;
}
