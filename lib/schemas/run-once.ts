import * as z from 'zod';
import { Name, Revision } from './common.js';
import { CompletedRun, MAX_COMPLETED_RUNS } from './lease.js';

/**
 * Where withLease's run-once windows are recorded: rows of the candidates table, in the lease's
 * own partition (`leaseName`), under sort keys no candidate can take. So a worker's grant
 * (`dynamodb:LeadingKeys` = its leases) covers the windows of its own leases and no others; a
 * delete of the lease row leaves them; and the table has no TTL on them (no `expiresAt`).
 *
 * Sort keys from RESERVED_FROM up are never candidates: `~` sorts after every character a Name
 * may use (letters, digits and `._:/-`), and no Name starts with it. CandidateStore lists a
 * lease's candidates below it (a window row is never even read) and leaves such rows out of its
 * scans; the candidate stream's filter drops their records (lib/wiring.ts).
 */
export const RESERVED_FROM = '~';

/** Whether a candidates-table sort key is one of Conclave's own rows (a run-once row), not a candidate. */
export const isReservedName = (name: unknown): boolean => typeof name === 'string' && name >= RESERVED_FROM;

/**
 * The row of a lease's periodic windows (`runOnce: { every }`): the MAX_COMPLETED_RUNS newest
 * windows completed of each period (up to MAX_PERIODS periods), newest window first.
 */
export const PERIODIC_WINDOWS = '~run-once';

/**
 * How many periods (`every`) one lease's periodic windows may have: each keeps its
 * MAX_COMPLETED_RUNS newest windows, so the row stays well under DynamoDB's 400 KB. A run of one
 * more period is refused before it runs (nothing is ever dropped to make room).
 */
export const MAX_PERIODS = 8;

/** A periodic window's length, as `runOnce.every` gives it: `day`, `hour`, or milliseconds. */
export const Period = z.union([z.enum(['day', 'hour']), z.number().int().positive()]);
export type Period = z.infer<typeof Period>;

/**
 * A completed run as a run-once row keeps it: a periodic window's run also names its period, so a
 * window is judged only by the windows of its own period (an hour's say nothing of a day's, and a
 * 5-minute window named `…T10:15:00.000Z` is not the 15-minute one of that name). Absent on keyed
 * windows, and on runs recorded before runs named their period (lib/sdk/run-once-windows.ts).
 */
export const WindowRun = CompletedRun.extend({ every: Period.optional() });
export type WindowRun = z.infer<typeof WindowRun>;

/** The row of one keyed window (`runOnce: { window: key }`): one row per key, never evicted. */
export const keyedWindowRow = (key: string): string => `${PERIODIC_WINDOWS}/${key}`;

/**
 * A run-once row of the candidates table: the completed runs it records (a keyed window's row
 * holds its one run). A run claims the row for its term before it reads it (`fence` becomes its
 * fencing token unless a newer term's is there), and completes it conditioned on the claim still
 * being its own and on the revision it read (absent: no run completed yet), so a window already
 * completed is never completed again, and no older term's mark lands once a newer term has looked.
 */
export const RunOnceRow = z.object({
  leaseName: Name,
  name: z.string().startsWith(PERIODIC_WINDOWS, `must start with ${PERIODIC_WINDOWS}`),
  /** The completed runs; absent on a row a term has claimed but not yet completed a window in. */
  runs: z.array(WindowRun).min(1).max(MAX_COMPLETED_RUNS * MAX_PERIODS).optional(),
  /** Raised by each completion; absent until the first. */
  revision: Revision.optional(),
  /** The fencing token of the newest term that claimed the row (RunOnceStore.claim): an older term's mark is refused. */
  fence: z.number().int().optional(),
});
export type RunOnceRow = z.infer<typeof RunOnceRow>;
