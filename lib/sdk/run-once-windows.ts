/**
 * withLease's run-once windows, decided: which window a run is for, whether it ran, and what the
 * periodic windows' row keeps once it completes. No I/O (the row is RunOnceStore's).
 *
 * Periodic windows are judged per period (`every`): each period keeps its MAX_COMPLETED_RUNS
 * newest windows, and only its own windows judge a run of it. A lease that ran hourly, then daily,
 * keeps both lists: a day window that never ran runs, however many hours were kept since.
 */
import { MAX_COMPLETED_RUNS } from '../schemas/lease.js';
import { MAX_PERIODS, type Period, type WindowRun } from '../schemas/run-once.js';

/**
 * withLease's `runOnce` option as parsed (RunOnceSchema's output, lib/sdk/with-lease-options.ts,
 * which judges `at` against now with windowOf: written out here, not imported, so the two modules
 * import in one direction).
 */
type ParsedRunOnce = { readonly window: string } | { readonly every: Period; readonly at?: number | undefined };

/**
 * The window a run-once run is for: its key, or the period its scheduled time (else `now`) falls in.
 * Each spelling of a period names its windows its own way (`'day'`: `2026-11-24`; 86_400_000 ms:
 * `2026-11-24T00:00:00.000Z`), so the two are different windows, each judged by its own period's
 * runs: a lease switched from one to the other runs the current window again. The names are what
 * the marks stored on the row are matched by: never change them. @internal
 */
export function windowOf(r: ParsedRunOnce, now: number): string {
  if ('window' in r) return r.window;
  const t = r.at ?? now;
  if (r.every === 'day') return new Date(t).toISOString().slice(0, 10);
  if (r.every === 'hour') return new Date(t).toISOString().slice(0, 13);
  return new Date(Math.floor(t / r.every) * r.every).toISOString();
}

/** When the periodic window after the one `t` falls in begins (epoch ms), and its name. @internal */
export function nextWindow(every: Period, t: number): { start: number; window: string } {
  const d = new Date(t);
  const start =
    every === 'day' ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1) : every === 'hour' ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours() + 1) : Math.floor(t / every) * every + every;
  return { start, window: windowOf({ every }, start) };
}

/**
 * The period of a periodic window's run: the one it names, or, for a run recorded before runs named
 * it, its window's form (`2026-11-24`: a day; `2026-11-24T22`: an hour); undefined: a length in
 * milliseconds, which one not recorded. @internal
 */
export function periodOf(run: WindowRun): Period | undefined {
  if (run.every !== undefined) return run.every;
  return run.window.length === 10 ? 'day' : run.window.length === 13 ? 'hour' : undefined;
}

/** Whether `run` may be a run of a window of `every`: its own period, or (unrecorded) any length in milliseconds, so that a window it may stand for never runs twice. */
function ofPeriod(run: WindowRun, every: Period): boolean {
  const p = periodOf(run);
  return p === every || (p === undefined && typeof every === 'number');
}

/** Window names sort as the times they start (zero-padded ISO 8601): newest first. */
const newestFirst = (a: WindowRun, b: WindowRun): number => (a.window < b.window ? 1 : a.window > b.window ? -1 : 0);

/**
 * Whether `window` ran, by the runs its row records: the run that completed it; `{ run: undefined }`
 * for a periodic window older than the MAX_COMPLETED_RUNS newest of its period (each period's list
 * drops its oldest window as a newer one is added, so whatever it dropped is older than those);
 * undefined: it did not run. `every` undefined: a keyed window, whose row is its own. @internal
 */
export function windowRun(runs: readonly WindowRun[], window: string, every: Period | undefined): { run: WindowRun | undefined } | undefined {
  const mine = every === undefined ? [...runs] : runs.filter((r) => ofPeriod(r, every));
  const run = mine.find((r) => r.window === window);
  if (run) return { run };
  if (every !== undefined && mine.length >= MAX_COMPLETED_RUNS && window < mine.sort(newestFirst)[MAX_COMPLETED_RUNS - 1]!.window) return { run: undefined };
  return undefined;
}

/**
 * The periodic windows remembered once `run` (of period `run.every`) completes: the
 * MAX_COMPLETED_RUNS newest of each period, newest first. A retry of an older window, completed
 * late, never pushes out a newer one, and a window of one period never pushes out another's.
 * A run that names no period (recorded before runs named it) is kept while it is among the newest
 * of its own kind or of any period in milliseconds it may belong to. @internal
 */
export function rememberRun(runs: readonly WindowRun[], run: WindowRun & { every: Period }): WindowRun[] {
  const all = [run, ...runs.filter((r) => r.window !== run.window || periodOf(r) !== run.every)].sort(newestFirst);
  const kept = new Set<WindowRun>();
  for (const p of new Set(all.map(periodOf))) {
    let n = 0;
    for (const r of all) {
      if (n === MAX_COMPLETED_RUNS) break;
      if (p === undefined ? periodOf(r) === undefined : ofPeriod(r, p)) {
        kept.add(r);
        n++;
      }
    }
  }
  return all.filter((r) => kept.has(r));
}

/**
 * Why a run of period `every` cannot be recorded in a row holding `runs`: the row keeps MAX_PERIODS
 * periods already, none of them this one. undefined: it can. @internal
 */
export function newPeriodRefusal(runs: readonly WindowRun[], every: Period): string | undefined {
  const periods = new Set(runs.map(periodOf));
  if (periods.has(every) || periods.size < MAX_PERIODS) return undefined;
  const named = [...periods].map((p) => (p === undefined ? 'a length in ms not recorded' : typeof p === 'number' ? `${p} ms` : p));
  return `this lease already keeps windows of ${MAX_PERIODS} periods (${named.join(', ')}), the most one lease keeps, and ${typeof every === 'number' ? `${every} ms` : every} is not one of them: run this schedule under a lease of its own`;
}
