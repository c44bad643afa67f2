/**
 * `npm run sim -- [--seed N] [--schedules K | --budget S]`: fault schedules on simulated time
 * (sim/world.ts), each judged by the history checker. `--seed N` alone replays schedule N and
 * prints its timeline. Prints schedules per second, faults by kind, and every violation's seed;
 * a progress line every `--progress` seconds; Ctrl-C ends the run with its summary. Exits 1 on any
 * violation (130 on a second Ctrl-C).
 *
 * `--regions`: worlds across three Regions (sim/regions.ts), a Region cut off or lost in each; with
 * `--seed N`, the Region-loss timeline of that world, told for people; with `--schedules K`, K
 * worlds in turn and the figures: how long after a Region event the next leader started, and when
 * a cut-off leader stopped.
 *
 * `--mixed`: a fleet part way through a change (in worlds with sessions one worker runs none; in
 * half the worlds one worker's timings are twice the others'); with `--seed N`, that world; with
 * `--regions`, three-Region worlds so.
 *
 * `--kept [some|all]`: kept terms — some workers (each with even odds, at least one; `all`: every
 * one) run their electors with `releaseOnCancel: false`, so a leader that stops leaves its term to
 * run out; and one to three times per world one elector of such a worker's process stops while the
 * process and its Session run on (its term on that live session), started again later. Drawn from a
 * stream of its own: a seed's other faults are as without `--kept`. With `--seed N`, that world;
 * with `--regions`, three-Region worlds so. Not with `--plant`.
 *
 * `--rows FROM-TO` (with `--seed N`): from FROM to TO seconds of the world (simulated), the
 * timeline also shows the lease, candidate and identity rows as they stand every 250 ms (simulated),
 * each when it changed since the last look (two changes within one look show as the later), and
 * every error or warning the functions log: what the story lines alone cannot show (why an election waited,
 * which write a function's retry made).
 *
 * `npm run sim` bundles this file and the threads' module (sim/thread.ts) with esbuild into
 * build/sim and runs the JavaScript: the code as it ships, without a loader's per-closure cost
 * (tsx keeps every function's name). `npx tsx sim/run.ts` runs the sources, same seeds, same worlds.
 */
import { availableParallelism } from 'node:os';
import { Command, InvalidArgumentError } from 'commander';
import * as z from 'zod';

// Lambda's metrics go to stdout in embedded metric format; here they would drown the figures.
process.env['POWERTOOLS_METRICS_DISABLED'] ??= 'true';
import { every, systemClock } from '../lib/clock.js';
import { formatVerdict } from '../lib/history/checker.js';
import { PLANTED_BUGS, type PlantedBug } from './bugs.js';
import { describeSchedule, generateSchedule, type KeptMode } from './schedule.js';
import { runPool } from './pool.js';
import { DEFAULT_SETTINGS, runWorld } from './world.js';
import { runRegions } from './regions-run.js';

const whole = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`must be a whole number ≥ 0, got "${v}"`);
  return n;
};
/** `--kept`'s value: which workers keep their terms (the bare flag: some). */
const KeptFlag = z.enum(['some', 'all'], { error: (i) => `--kept takes "some" (each worker with even odds, at least one) or "all" (every worker), got "${String(i.input)}"` });
type RowsWindow = { readonly fromMs: number; readonly toMs: number };
/** `--rows`' value: FROM-TO, whole or decimal seconds of the world, FROM ≤ TO. */
const rowsWindow = (v: string): RowsWindow => {
  const m = /^(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)$/.exec(v);
  if (!m || Number(m[1]) > Number(m[2])) throw new InvalidArgumentError(`takes FROM-TO in seconds of the world, FROM at most TO (say 270-340), got "${v}"`);
  return { fromMs: Number(m[1]) * 1000, toMs: Number(m[2]) * 1000 };
};
const kept = (v: string): KeptMode => {
  const r = KeptFlag.safeParse(v);
  if (!r.success) throw new InvalidArgumentError(r.error.issues[0]!.message);
  return r.data;
};
const o = new Command()
  .name('npm run sim --')
  .option('--seed <n>', 'replay this schedule and print its timeline', whole)
  .option('--schedules <k>', 'run this many schedules from a random (printed) first seed (with --regions: this many seeds, each two worlds)', whole)
  .option('--budget <s>', 'run schedules for this many seconds of wall-clock time', whole)
  .option('--threads <n>', 'worker threads running schedules (default: one per core)', (v: string) => {
    const n = whole(v);
    if (n < 1) throw new InvalidArgumentError('must be at least 1');
    return n;
  })
  .option('--first <n>', 'the first seed of a --schedules or --budget run (default: random)', whole)
  .option('--progress <s>', 'print a progress line this often, in seconds (0: never)', whole, 60)
  .option('--regions', 'worlds across three Regions (MRSC): a Region cut off or lost in each')
  .option('--mixed', 'a fleet part way through a change: in worlds with sessions one worker runs none; in half the worlds one worker has twice the timings')
  .option('--kept [workers]', 'kept terms: some (default) or all workers run their electors with releaseOnCancel false, and one elector of such a process stops while the process runs on', kept)
  .option('--rows <from-to>', 'with --seed: from FROM to TO seconds of the world, the lease, candidate and identity rows that changed (looked at every 250 ms) and every error or warning the functions log, in the timeline', rowsWindow)
  .option('--plant <bug>', `plant a known bug (${Object.keys(PLANTED_BUGS).join(', ')}); with --budget, stop at the first violation`, (v: string) => {
    if (!(v in PLANTED_BUGS)) throw new InvalidArgumentError(`unknown bug "${v}"; known: ${Object.keys(PLANTED_BUGS).join(', ')}`);
    return v as PlantedBug;
  })
  .parse(process.argv)
  .opts<{ seed?: number; schedules?: number; budget?: number; first?: number; threads?: number; plant?: PlantedBug; progress: number; regions?: boolean; mixed?: boolean; kept?: KeptMode | true; rows?: RowsWindow }>();

if (o.rows && (o.seed === undefined || o.schedules !== undefined || o.budget !== undefined)) {
  // rows are told in one world's timeline: refuse what would print nothing
  console.error(`npm run sim: --rows tells one world's rows in its timeline; give it with --seed N (and neither --schedules nor --budget)`);
  process.exit(2);
}

// the bare flag means some workers
const keptMode: KeptMode | undefined = o.kept === true ? 'some' : o.kept;
if (keptMode && o.plant) {
  // a planted bug's search is measured in the default worlds (test/sim/sim.test.ts pins the seeds that catch each): refuse what would measure something else
  console.error(`npm run sim: --plant searches the default worlds, where each planted bug's catching seeds are pinned; drop --kept (kept terms are searched without a planted bug) or --plant`);
  process.exit(2);
}
const keptFlag = keptMode ? ` --kept ${keptMode}` : '';

const settings = DEFAULT_SETTINGS;
if (o.regions) {
  // a Region world runs on this thread, and no planted bug is wired into its checks: refuse what would be silently ignored
  if (o.threads !== undefined || o.plant !== undefined) {
    console.error(`npm run sim: --regions runs its worlds on one thread and plants no bug; drop ${o.threads !== undefined ? '--threads' : '--plant'} (--regions takes --seed, --schedules, --budget, --first, --mixed, --kept and --rows)`);
    process.exit(2);
  }
  process.exitCode = await runRegions({ ...o, kept: keptMode });
} else if (o.seed !== undefined && o.schedules === undefined && o.budget === undefined) {
  const s = generateSchedule(o.seed, { workers: settings.workers, durationMs: settings.durationMs, mixed: o.mixed === true, ...(keptMode ? { kept: keptMode } : {}) });
  for (const l of describeSchedule(s)) console.log(l);
  const r = await runWorld(s, settings, { trace: true, ...(o.plant ? { plant: o.plant } : {}), ...(o.rows ? { rows: o.rows } : {}) });
  for (const l of r.timeline) console.log(l);
  for (const l of formatVerdict(r.verdict)) console.log(l);
  console.log(JSON.stringify(r.counts));
  process.exitCode = r.verdict.ok ? 0 : 1;
} else {
  const first = o.first ?? Math.floor(systemClock.random() * 2 ** 31);
  const threads = o.threads ?? availableParallelism();
  console.log(`sim: seeds ${first}… on ${threads} thread(s); replay one with: npm run sim -- --seed <seed>${o.mixed ? ' --mixed' : ''}${keptFlag}`);
  const totals: Record<string, number> = {};
  /** The seed of each worst (the most of any schedule). */
  const worstSeed: Record<string, number> = {};
  const add = (k: string, n: number) => (totals[k] = (totals[k] ?? 0) + n);
  const failed: number[] = [];
  const began = systemClock.monotonic();
  // A long run (a million schedules is most of a day) says how it goes, and Ctrl-C ends it with its
  // summary: no more seeds are handed out, and the schedules under way finish.
  let done = 0;
  let worstRevoked: number | undefined;
  let worstRevokedSeed: number | undefined;
  const rate = () => `${done} schedules in ${((systemClock.monotonic() - began) / 1000).toFixed(0)} s, ${(done / ((systemClock.monotonic() - began) / 1000)).toFixed(2)} schedules/s, ${failed.length} with violations`;
  const progress = o.progress > 0 ? every(systemClock, o.progress * 1000, () => console.log(`sim: ${rate()}`), { background: true }) : undefined;
  const interrupted = new AbortController();
  let interruptedAt: number | undefined;
  process.on('SIGINT', () => {
    if (interruptedAt === undefined) {
      interruptedAt = systemClock.monotonic();
      console.log(`sim: interrupted after ${rate()}; finishing the schedules under way (Ctrl-C again to quit at once)`);
      interrupted.abort();
    } else if (systemClock.monotonic() - interruptedAt > 1_000) process.exit(130); // a second Ctrl-C, not the first one arriving twice (from the terminal and relayed by npm)
  });
  const n = await runPool({
    signal: interrupted.signal,
    first,
    limit: o.schedules ?? Infinity,
    until: began + (o.budget ?? (o.schedules === undefined ? 60 : Infinity)) * 1000,
    threads,
    ...(o.plant ? { plant: o.plant, stopAtViolation: true } : {}),
    ...(o.mixed ? { mixed: true } : {}),
    ...(keptMode ? { kept: keptMode } : {}),
    monotonic: () => systemClock.monotonic(),
    onReport: (r) => {
      done++;
      // a worst is the most of any schedule, not a sum
      for (const [k, v] of Object.entries(r.counts)) {
        if (!k.includes('worst')) add(k, v);
        else if (v > (totals[k] ?? -1)) [totals[k], worstSeed[k]] = [v, r.seed];
      }
      if (r.worstRevokedOverlapMs !== undefined) {
        add('revokedOverlapWorlds', 1);
        if (worstRevoked === undefined || r.worstRevokedOverlapMs > worstRevoked) [worstRevoked, worstRevokedSeed] = [r.worstRevokedOverlapMs, r.seed];
      }
      for (const f of r.schedule.processFaults) add(`schedule:${f.kind}`, 1);
      add('schedule:ddbFaultWindows', r.schedule.ddbFaults.length);
      add('schedule:coordinatorDown', r.schedule.coordinatorDown.length);
      add('schedule:skew30s', r.schedule.skewMs.filter((x) => Math.abs(x) >= 20_000).length);
      add('schedule:driftWorlds', r.schedule.driftPpm ? 1 : 0);
      for (const f of [...r.schedule.userFaults, ...r.schedule.peerFaults]) add(`schedule:${f.kind}`, 1);
      add('schedule:drift1to5pct', (r.schedule.driftPpm ?? []).filter((x) => Math.abs(x) >= 10_000).length);
      if (r.ok) return;
      failed.push(r.seed);
      console.log(`seed ${r.seed}: VIOLATION`);
      for (const l of r.verdict) console.log(`  ${l}`);
      if (o.plant) console.log(`planted bug ${o.plant} caught by seed ${r.seed}, ${r.seed - first + 1} seeds from ${first}`);
    },
  });
  progress?.cancel();
  const secs = (systemClock.monotonic() - began) / 1000;
  console.log(`\nsim summary: ${n} schedules (${(settings.durationMs / 60_000).toFixed(0)} simulated min, ${settings.workers} workers, ${settings.leases} leases each) in ${secs.toFixed(1)} s on ${threads} thread(s): ${(n / secs).toFixed(2)} schedules/s`);
  for (const k of Object.keys(totals).sort()) console.log(`  ${k.padEnd(36)} ${totals[k]}${worstSeed[k] !== undefined ? ` (seed ${worstSeed[k]})` : ''}`);
  console.log(`  ${'worst overlap after a foreign term end'.padEnd(36)} ${worstRevoked === undefined ? 'none' : `${(worstRevoked / 1000).toFixed(2)} s (seed ${worstRevokedSeed})`}`);
  console.log(`  violations                           ${failed.length}${failed.length ? ` (seeds ${failed.sort((a, b) => a - b).join(', ')})` : ''}`);
  process.exitCode = failed.length ? 1 : 0;
}
// The run is over when the figures are printed: the simulated processes' pending work never runs
// again (their clock is no longer run), so say so rather than wait for the event loop to drain.
process.stdout.write('', () => process.exit());
