/**
 * Schedules on every core: worker threads, each running whole schedules (sim/world.ts) one after
 * another, seeds handed out one at a time from a shared counter. A schedule is independent of every
 * other, so a seed gives the same result on any thread; only which thread ran it differs.
 *
 * A schedule that does not finish within HANG_MS of wall-clock time is a livelock on simulated time
 * (code that loops on already-settled promises never lets the simulated clock move): its thread is
 * ended, the seed reported as a violation, and a new thread takes its place.
 */
import { availableParallelism } from 'node:os';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { formatVerdict } from '../lib/history/checker.js';
import type { PlantedBug } from './bugs.js';
import { generateSchedule, type KeptMode, type Schedule } from './schedule.js';
import { DEFAULT_SETTINGS, runWorld } from './world.js';

/** What a thread reports per schedule. */
export interface ScheduleReport {
  seed: number;
  ok: boolean;
  terms: number;
  /** The longest overlap after a term end its holder did not write (an operator's delete), ms; undefined: none. */
  worstRevokedOverlapMs: number | undefined;
  verdict: string[];
  counts: Record<string, number>;
  schedule: Pick<Schedule, 'processFaults' | 'ddbFaults' | 'coordinatorDown' | 'skewMs' | 'driftPpm' | 'userFaults' | 'peerFaults'>;
}

/** A schedule takes a second or two; one still running after this long never ends. */
export const HANG_MS = 60_000;

/** What the pool tells a thread: the next seed, or that there are no more. */
export type ToThread = { seed: number } | { done: true };
/** What a thread tells the pool: it is ready for a seed, or how the last one went. */
export type FromThread = { ready: true } | { report: ScheduleReport };

/**
 * A thread's module (sim/thread.ts): beside this file, with this file's extension — thread.ts when
 * the simulator runs from the sources (tsx, vitest), thread.js beside the bundle `npm run sim` builds.
 */
const THREAD = new URL(`./thread${extname(fileURLToPath(import.meta.url))}`, import.meta.url);

/** Runs one schedule and reports it (what a thread does per seed). */
export async function runSeed(seed: number, plant?: PlantedBug, mixed?: boolean, kept?: KeptMode): Promise<ScheduleReport> {
  const s = generateSchedule(seed, { workers: DEFAULT_SETTINGS.workers, durationMs: DEFAULT_SETTINGS.durationMs, mixed, ...(kept ? { kept } : {}) });
  const r = await runWorld(s, DEFAULT_SETTINGS, plant ? { plant } : {});
  return {
    seed,
    ok: r.verdict.ok,
    terms: r.verdict.figures.terms,
    worstRevokedOverlapMs: r.verdict.figures.worstRevokedOverlapMs,
    verdict: r.verdict.ok ? [] : formatVerdict(r.verdict),
    counts: r.counts,
    schedule: { processFaults: s.processFaults, ddbFaults: s.ddbFaults, coordinatorDown: s.coordinatorDown, skewMs: s.skewMs, driftPpm: s.driftPpm, userFaults: s.userFaults, peerFaults: s.peerFaults },
  };
}

/** A hung seed's schedule, for the summary's counts (the thread that ran it is gone). */
function hungSchedule(seed: number, mixed?: boolean, kept?: KeptMode): ScheduleReport['schedule'] {
  const s = generateSchedule(seed, { workers: DEFAULT_SETTINGS.workers, durationMs: DEFAULT_SETTINGS.durationMs, mixed, ...(kept ? { kept } : {}) });
  return { processFaults: s.processFaults, ddbFaults: s.ddbFaults, coordinatorDown: s.coordinatorDown, skewMs: s.skewMs, driftPpm: s.driftPpm, userFaults: s.userFaults, peerFaults: s.peerFaults };
}

export interface PoolOptions {
  first: number;
  /** Stop after this many schedules… */
  limit: number;
  /** …or at this monotonic time (ms), whichever comes first. */
  until: number;
  threads?: number;
  plant?: PlantedBug;
  /** A fleet part way through a change: Sessions, timings (generateSchedule). */
  mixed?: boolean;
  /** Kept terms: some or all workers' electors with releaseOnCancel false (generateSchedule). */
  kept?: KeptMode;
  /** Stop at the first violation (a planted bug's search). */
  stopAtViolation?: boolean;
  /** Once aborted, no more seeds are handed out; the schedules under way finish and are reported. */
  signal?: AbortSignal;
  /** Each schedule's report, in the order they finish. */
  onReport(r: ScheduleReport): void;
  monotonic(): number;
}

/** Runs schedules from `first` on `threads` worker threads; resolves with how many ran. */
export async function runPool(o: PoolOptions): Promise<number> {
  const threads = Math.max(1, o.threads ?? availableParallelism());
  let next = o.first;
  let handedOut = 0;
  let finished = 0;
  let stop = false;
  const take = (): number | undefined => {
    if (stop || o.signal?.aborted || handedOut >= o.limit || o.monotonic() >= o.until) return undefined;
    handedOut++;
    const seed = next;
    next = (next + 1) >>> 0;
    return seed;
  };
  const report = (r: ScheduleReport) => {
    finished++;
    o.onReport(r);
    if (!r.ok && o.stopAtViolation) stop = true;
  };
  // one thread: feeds itself seeds until there are none; a hung schedule ends it, and another takes its place
  const thread = (): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const w = new Worker(THREAD, { workerData: { plant: o.plant, mixed: o.mixed, kept: o.kept } });
      let running: { seed: number; since: number } | undefined;
      let hung = false;
      const watch = setInterval(() => {
        if (!running || o.monotonic() - running.since < HANG_MS) return;
        hung = true;
        clearInterval(watch);
        const seed = running.seed;
        report({ seed, ok: false, terms: 0, worstRevokedOverlapMs: undefined, verdict: [`hung: no result after ${HANG_MS / 1000} s of wall-clock time (a livelock on simulated time; --seed ${seed} replays it, and hangs as well)`], counts: { hung: 1 }, schedule: hungSchedule(seed, o.mixed, o.kept) });
        void w.terminate();
      }, 1_000);
      const feed = () => {
        const seed = take();
        running = seed === undefined ? undefined : { seed, since: o.monotonic() };
        w.postMessage(seed === undefined ? ({ done: true } satisfies ToThread) : ({ seed } satisfies ToThread));
      };
      w.on('message', (m: FromThread) => {
        if ('report' in m) report(m.report);
        feed();
      });
      w.on('error', (e) => {
        clearInterval(watch);
        reject(e);
      });
      w.on('exit', (code) => {
        clearInterval(watch);
        if (hung) thread().then(resolve, reject);
        else if (code === 0) resolve();
        else reject(new Error(`a simulator thread exited with code ${code}`));
      });
    });
  await Promise.all(Array.from({ length: threads }, thread));
  return finished;
}
