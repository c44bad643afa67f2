/**
 * Repeated crash failover (issue 38, item 1): three workers stand for a fresh lease; the leader is
 * SIGKILLed, and once another worker leads a new process joins the group (a rolling deployment's
 * step, or a restarted pod); the group settles and the new leader is killed in turn: five crashes
 * in a row. The killed workers' candidate rows stay behind, as a `kill -9`'d process's do, so a
 * coordinator that counts a row as live until it is 30 minutes stale can name a dead one
 * successor, and that crash waits for the tick and an election.
 *
 * Every crash is measured as crash failover measures one (bench/expiry.ts: the new leader's
 * onStartedLeading minus the dead term's expiry, the term's last renewal read from the table's
 * stream). The kill phases are swept over the leader's renew cycle (bench/sweep.ts; the baseline's
 * is its retry period): crash k of run r is killed at the midpoint of slice r·5 + k of the cycle
 * cut into 5 × runs slices. Conclave and the baseline run side by side, run r of each at once.
 */
import { describeMode, Group, MODES, type BenchContext, type BenchOptions, type Mode, type System } from '../fleet.js';
import { pastExpiryMs } from '../expiry.js';
import { Collector, type ScenarioResult } from '../report.js';
import { killPhases, renewCycleMs } from '../sweep.js';
import { compare, compareField, describeSample, pastExpiryTarget, seconds, type RunSample } from './runs.js';

/** Crashes in a row per run (the "five crashes in a row"). */
export const CRASHES = 5;
/** Workers standing when the first crash comes. */
const INITIAL_WORKERS = 3;

/** One crash of a repeated-crash run: the sample, and for Conclave whom the lease named successor when the leader died. */
export interface CrashSample extends RunSample {
  /** 1…CRASHES. */
  crash: number;
  /** Conclave: the designated successor on the lease just before the kill (undefined: none). */
  designated?: string;
  /** Conclave: whether the designated successor's process was dead at the kill (killed in an earlier crash). */
  designatedDead?: boolean;
}

/** Time allowed for a new leader: a few terms beyond anything expected (the old code's slow path is an election after a tick). */
const patience = (mode: Mode) => 4 * MODES[mode].timing.leaseDurationMs + 60_000;

/**
 * One run: CRASHES crashes in a row of one group, a new worker after each. `phases[k]` is how long
 * after a renewal the k-th leader is killed.
 */
export async function repeatedCrashRun(ctx: BenchContext, system: System, mode: Mode, phases: readonly number[], onSample: (s: CrashSample) => void): Promise<CrashSample[]> {
  const g = await (await Group.create(ctx, system, mode, `repeated-${mode}`)).addMany(INITIAL_WORKERS);
  const out: CrashSample[] = [];
  try {
    for (let k = 0; k < phases.length; k++) {
      const leader = await g.settle();
      const before = system === 'conclave' ? await g.leaseRow() : undefined;
      const deadToken = Group.lastStart(leader)?.fencingToken;
      const kill = await g.killAtPhase(leader, phases[k]!);
      const { worker, started } = await g.nextLeader(kill.killAt, leader, patience(mode));
      // a new process after each crash: the next worker in the numbering (w4, w5, …)
      await g.add(`w${INITIAL_WORKERS + k + 1}`);
      let sample: CrashSample = { crash: k + 1, ms: started.at - kill.killAt, from: leader.identity, to: worker.identity, fencingToken: started.fencingToken, phaseMs: kill.phaseMs, seenLagMs: kill.seenLagMs };
      if (before?.successor !== undefined) {
        const named = g.workers.find((w) => w.identity === before.successor);
        sample = { ...sample, designated: before.successor, designatedDead: named === undefined || !named.alive || named === leader };
      }
      if (deadToken !== undefined) {
        const last = await g.lastRenewal(leader.identity, deadToken);
        if (last) sample = { ...sample, pastExpiryMs: pastExpiryMs(last, started.at), sinceRenewalMs: kill.killAt - last.renewTime };
      }
      if (system === 'conclave' && started.fencingToken !== undefined) {
        const term = await g.termOf(started.fencingToken);
        if (term?.electedBy !== undefined) sample = { ...sample, electedBy: term.electedBy };
        if (term?.acquireTime !== undefined) sample = { ...sample, takeMs: term.acquireTime - kill.killAt, pickupMs: started.at - term.acquireTime };
        if (term?.election && term.acquireTime !== undefined) sample = { ...sample, detectMs: term.election.startedAt - kill.killAt, electMs: term.acquireTime - term.election.startedAt, vacancy: term.election.vacancy ?? 'reelection' };
      }
      out.push(sample);
      onSample(sample);
    }
    return out;
  } finally {
    await g.close();
  }
}

/** One log line for a crash of a repeated run. */
function describeCrash(s: CrashSample): string {
  const designated = s.designated === undefined ? '' : ` [successor named: ${s.designated}${s.designatedDead ? ', a dead process' : ''}]`;
  return `crash ${s.crash}/${CRASHES}: ${s.from} killed${designated} → ${describeSample(s)}`;
}

export async function repeatedCrash(ctx: BenchContext, opts: BenchOptions): Promise<ScenarioResult> {
  const c = new Collector('repeated-crash');
  const runs = opts.runs ?? (opts.quick ? 1 : 3);
  for (const mode of opts.modes) {
    const t = MODES[mode].timing;
    const phases = { conclave: killPhases(runs * CRASHES, renewCycleMs('conclave', t)), baseline: killPhases(runs * CRASHES, renewCycleMs('baseline', t)) };
    const what = `repeated crash failover (${CRASHES} crashes in a row, a new process after each) · ${describeMode(mode)}`;
    ctx.log(`\n▸ ${what}: ${runs} run(s) of each system; kill phases swept over the renew cycle (Conclave ${seconds(renewCycleMs('conclave', t))}, baseline ${seconds(renewCycleMs('baseline', t))}), ${runs * CRASHES} of them`);
    const samples: Record<System, CrashSample[]> = { conclave: [], baseline: [] };
    for (let r = 0; r < runs; r++) {
      await Promise.all(
        (['conclave', 'baseline'] as const).map(async (system) => {
          const mine = phases[system].slice(r * CRASHES, (r + 1) * CRASHES);
          try {
            await repeatedCrashRun(ctx, system, mode, mine, (s) => {
              samples[system].push(s);
              c.record('sample', { system, mode, run: r + 1, ...s });
              ctx.log(`  ${system.padEnd(8)} run ${r + 1}/${runs} ${describeCrash(s)}`);
            });
          } catch (e) {
            c.record('failure', { system, mode, run: r + 1, error: (e as Error).message });
            ctx.log(`  ${system.padEnd(8)} run ${r + 1}/${runs}: ✗ ${(e as Error).message}`);
          }
        }),
      );
    }
    compare(c, `${what}: kill → new leader`, samples);
    compareField(c, `${what}: new leader past the term's expiry`, samples, 'pastExpiryMs', pastExpiryTarget);
    // by crash number: where a dead successor shows (the third crash, before issue 38)
    for (let k = 1; k <= CRASHES; k++) {
      const xs = samples.conclave.filter((s) => s.crash === k && s.pastExpiryMs !== undefined).map((s) => s.pastExpiryMs!);
      c.latency(`${what}: crash ${k} past the term's expiry`, 'conclave', xs);
    }
    const dead = samples.conclave.filter((s) => s.designatedDead).length;
    c.value(`${what}: crashes whose designated successor was a dead process`, 'conclave', dead, `of ${samples.conclave.length}`);
  }
  return c;
}
