/**
 * withLease's options (zod, the single source of their shape), its run-once windows, and what a
 * run is handed and ends with.
 */
import type { PutItemCommandOutput, TransactWriteItem, TransactWriteItemsCommandInput, TransactWriteItemsCommandOutput, UpdateItemCommandOutput } from '@aws-sdk/client-dynamodb';
import type { FencedItemInput } from './fencing.js';
import * as z from 'zod';
import { systemClock } from '../clock.js';
import { MAX_TIMER_MS, Millis, Name, timerBound } from '../schemas/common.js';
import { electionConfig } from '../schemas/config.js';
import type { CompletedRun } from '../schemas/lease.js';
import { Platform } from '../schemas/platform.js';
import { keyedWindowRow } from '../schemas/run-once.js';
import { CandidacySchema, LeaderElectorOptionsSchema, type StopReason } from './elector.js';
import { sessionNotServing } from './elector-options.js';
import { ClientSchema, ClockSchema, ClockSyncSchema, TablesSchema, everyProblem, fn, optionErrors, type ClockSync } from './options.js';
import { nextWindow, windowOf } from './run-once-windows.js';
import { knownServerClockOf, trustedClock, type StampClock } from './server-clock.js';
import { Session } from './session.js';
import { FIXES, ValidationError, issuesOf, type FieldIssue } from '../schemas/validation.js';

const SCHEDULED_AT = 'must be the time this run was scheduled for: pass the EventBridge scheduled event\'s `time` (an ISO 8601 time such as "2026-11-24T00:00:00Z"), a Date, or epoch milliseconds';

const IsoTime = z.iso.datetime({ offset: true });

/** Epoch ms of a scheduled time: an ISO 8601 time with its zone (EventBridge's `time`), a Date, or epoch ms; undefined if it is none. */
function scheduledMs(v: unknown): number | undefined {
  const ms = typeof v === 'number' ? v : v instanceof Date ? v.getTime() : typeof v === 'string' && IsoTime.safeParse(v).success ? Date.parse(v) : undefined;
  return Millis.safeParse(ms).success ? ms : undefined;
}

/**
 * No run is scheduled before this: epoch seconds read as milliseconds fall in January 1970, where
 * a daily schedule's next thousand days all name one window (run once, then skipped for years).
 */
const EARLIEST_SCHEDULED_MS = Date.UTC(2000, 0, 1);

/** Why `v` is no scheduled time. */
function scheduledAtError(v: unknown): string {
  const ms = scheduledMs(v);
  if (ms === undefined) return SCHEDULED_AT;
  const iso = new Date(ms).toISOString();
  if (typeof v === 'number') return `must be epoch milliseconds; ${v} is ${iso} as milliseconds, so it looks like epoch seconds: pass ${v * 1000} (seconds * 1000), a Date, or the EventBridge scheduled event's \`time\` as it is`;
  return `must be the time this run was scheduled for, and ${iso} is before 2000: pass the EventBridge scheduled event's \`time\` as it is`;
}

/**
 * When a run was scheduled, as epoch ms. One refinement that does not abort, not a union of three
 * types: `runOnce`'s union then still picks its `every` form, and the issue names `runOnce.at`
 * (an aborted check would leave the whole union unmatched, naming only `runOnce`). Typed as what
 * it takes.
 */
const ScheduledAt = z
  .unknown()
  .refine((v) => (scheduledMs(v) ?? -1) >= EARLIEST_SCHEDULED_MS, { error: (issue) => scheduledAtError(issue.input) })
  .transform((v) => scheduledMs(v)!) as unknown as z.ZodType<number, string | Date | number>;

/** DynamoDB's limit on a sort key's value. */
const MAX_SORT_KEY_BYTES = 1024;
const utf8Bytes = (s: string): number => new TextEncoder().encode(s).length;

/**
 * The longest period in milliseconds (366 days). Windows of a length in ms are aligned to the epoch
 * (1970-01-01T00:00:00Z) and named by their start: a longer period names windows that seldom change,
 * and one longer than the time since the epoch names 1970-01-01 for ever (its first run marks it,
 * every later one is skipped, and the next window's start is past any Date: a RangeError once the
 * lease was taken, a review, 2026-12-07, thirteenth).
 */
const MAX_PERIOD_MS = 366 * 86_400_000;
const LONGEST_PERIOD = `must be at most ${MAX_PERIOD_MS} ms (366 days): a period in ms names windows aligned to the epoch (1970-01-01T00:00:00Z), and a longer one names windows that seldom or never change (one longer than the time since 1970 names 1970-01-01 for ever: run once, then skipped). For a run once ever, or once per calendar month or year, name the window yourself: runOnce: { window: '<key>' } (the month or year, say)`;

/** Run-once windows: at most one successful run per window. */
export const RunOnceSchema = z.union([
  z.strictObject({
    /**
     * The window: a UTC `day` (`2026-11-24`), a UTC `hour` (`2026-11-24T22`), or a length in
     * milliseconds, 1 s to 366 days (windows aligned to the epoch, named by their start in ISO form).
     * Each spelling names its windows its own way, so `'day'` and `86_400_000` (or `'hour'` and
     * `3_600_000`) are different windows: pick one per lease; switching spelling runs the current
     * window again.
     */
    every: z.union([z.enum(['day', 'hour']), z.number().int('must be whole milliseconds').min(1_000, 'must be >= 1000 ms').max(MAX_PERIOD_MS, LONGEST_PERIOD)]),
    /**
     * When this run was scheduled: pass the EventBridge scheduled event's `time` (or a Date, or
     * epoch ms). The window is the one this time falls in, so a late retry (after midnight, say)
     * counts for the window it was scheduled in, and the next window's own run still runs. A time
     * before 2000 is refused (epoch seconds given as milliseconds are in January 1970), and so is a
     * time after DynamoDB's time (clockSync 'none': this machine's) by more than the clocks' error
     * (the coordinator's clockSkewMs, 1 s, plus how well DynamoDB's time is known), before the
     * lease is taken: its window may not have begun, and marking it would skip its own run.
     * Without it, a run counts for the window of its first read of the lease, on DynamoDB's time: a
     * host whose clock runs ahead of DynamoDB's (within the clocks' error), fired by it at a window's
     * start, counts for the window ending, and is skipped if that one ran; so a scheduled run passes
     * `at`. Such a skip is told to `onError` when the client's answers show this machine's clock
     * that far ahead (clockSync 'server'), on a period more than ten times the clocks' error (over
     * 10 s): a clock judged right, or a short period's poll, is not told.
     * @default the time of the call's first read of the lease (DynamoDB's clock by default), not when the lease is won: a run that waits across a window's end counts for the window it began in, and a late retry for a later window
     */
    at: ScheduledAt.optional(),
  }),
  z.strictObject({
    /** A window the caller names itself (`migration-42`, a deploy id): at most one successful run ever for that key. */
    window: z
      .string()
      .min(1, 'must not be empty')
      .max(256, 'must be at most 256 characters')
      // its row's key (keyedWindowRow) is a sort key, at most 1,024 bytes: 256 characters of four bytes each are too many
      .refine((w) => utf8Bytes(keyedWindowRow(w)) <= MAX_SORT_KEY_BYTES, { error: (i) => `must be at most ${MAX_SORT_KEY_BYTES - utf8Bytes(keyedWindowRow(''))} bytes in UTF-8 (its row's key, "${keyedWindowRow('')}" and the window, is a DynamoDB sort key of at most ${MAX_SORT_KEY_BYTES} bytes), not ${utf8Bytes(String(i.input))}: use a shorter key, or a hash of it` }),
  }),
], { error: 'must be { every: "day" | "hour" | <ms>, at?: <the scheduled time> } or { window: "<key>" }' });
/** withLease's `runOnce` option as written: `{ every: 'day' | 'hour' | ms, at?: scheduledTime }` or `{ window: key }`. */
export type RunOnce = z.input<typeof RunOnceSchema>;

/**
 * The options of `withLease` and `tryWithLease`. The timings are a LeaderElector's (client-go's
 * defaults); a bad option is a ValidationError naming the field. Parsing with this schema applies
 * the LeaderElector's rules as withLease does (each timing's bounds and their order, a candidacy's
 * rules, a session's fit, a candidacy for mode 'coordinated'), so it reports the problems withLease
 * reports of the same options, every one at once; withLease alone also judges what the options do
 * not tell: a session that does not serve the call's lease, a `runOnce.at` after now, and, in mode
 * 'auto', a lease with candidates and no `candidacy` given.
 */
export const WithLeaseOptionsSchema = z.strictObject(
  {
    /** The DynamoDB client the lease is read and written with. */
    client: ClientSchema,
    /** Where the tables are: a prefix, or `{ prefix?, leases?, candidates? }`. @default 'conclave' */
    tables: TablesSchema,
    /**
     * The tables are multi-Region strongly consistent global tables: every read strongly consistent;
     * `fencedWrite` and `complete(items)` with items (transactions, which MRSC does not offer) are
     * refused: fence your items with `fencedItemWrite`. @default false
     */
    multiRegion: z.boolean().default(false),
    /** The holder name this run writes. @default `run-<host>-<pid>-<n>`, n counting this process's runs (plus a unique start-up id on the lease) */
    identity: Name.optional(),
    /**
     * `NoCoordination`: first come, first served. `coordinated`: stand as a candidate (`candidacy`
     * required) and run when the coordinator elects this run, or when succession gives it the lease.
     * `auto`: coordinated when the lease has candidates (then `candidacy` is required), otherwise,
     * or when the lease's strategy is NoCoordination, first come, first served. @default 'auto'
     */
    mode: z.enum(['auto', 'coordinated', 'NoCoordination']).default('auto'),
    /** Coordinated mode: what this run stands with (versions, strategies). */
    candidacy: CandidacySchema.optional(),
    /**
     * How long to wait for the lease before giving up (`busy`). `0` gives up at once when a live
     * holder has it, as `tryWithLease` always does; a vacant lease, or one whose holder is stale (a
     * crashed run), is still taken, within a lease duration and two retry periods — taking it needs
     * a round trip or two, and a stale holder's term must be watched out.
     * @default 2 × leaseDurationMs
     */
    waitMs: z.number().int('must be whole milliseconds').min(0, 'must be >= 0').max(MAX_TIMER_MS, timerBound).optional(),
    /** At most one successful run per window; off by default. */
    runOnce: RunOnceSchema.optional(),
    /** How long a term lasts after a renewal. @default 15000 */
    leaseDurationMs: z.number().int().optional(),
    /** The run's signal aborts when it could not renew for this long. @default 10000 */
    renewDeadlineMs: z.number().int().optional(),
    /** How soon a failed renewal is tried again, and how often a waiting run polls. @default 2000 */
    retryPeriodMs: z.number().int().optional(),
    /**
     * How often the lease is renewed while the function runs. @default renewDeadlineMs − 2 ×
     * retryPeriodMs (6 s), in either mode: each renewal is a write, and a run needs one only often
     * enough that a failed one is tried again before the renew deadline (client-go's NoCoordination
     * habit of renewing every retry period would triple a run's writes)
     */
    renewIntervalMs: z.number().int().optional(),
    /** Where this run executes, written on the lease (`detect`: ECS or EC2 metadata). @default 'none' (a Lambda function has neither) */
    platform: z.union([Platform, z.enum(['detect', 'none'])]).default('none'),
    /** Where the times written come from (see LeaderElector). @default 'server' */
    clockSync: ClockSyncSchema,
    /**
     * Cancels the run: the wait ends, or the function's signal aborts (with this signal's reason)
     * and its calls on `term` end with it. The lease is given up once the function returns or
     * throws: a function that does not stop on its signal keeps it renewed until then, and the call
     * waits for it. The call then rejects with the reason, unless the function had returned: its
     * window is then marked and the call resolves with its value (not after a `complete(items)` of
     * it failed: see LeaseTerm.complete). For a Lambda function, abort it when the invocation's
     * remaining time runs short, early enough for the function to stop.
     */
    signal: z.custom<AbortSignal>((v) => v instanceof AbortSignal, { error: 'must be an AbortSignal', abort: false }).optional(),
    /** Faults that were retried (a failed poll or renewal). @default a process warning */
    onError: fn<(error: Error) => void>().optional(),
    /**
     * The process's push path (a PushChannel from `@conclave/sdk/push`, shared with its
     * LeaderElectors), as a LeaderElector's `push`: a waiting run reads the lease the moment it
     * changes (released, handed over) instead of at its next poll, and its own release wakes the
     * runs waiting for it. Coordinated runs only: with `mode: 'NoCoordination'` it is an error, and
     * a run that `auto` makes first come, first served leaves it unused (it polls as client-go does).
     */
    push: LeaderElectorOptionsSchema.shape.push,
    /**
     * The process's Session (shared with its LeaderElectors), as a LeaderElector's `session`: while
     * the run holds the lease, the session's renewals keep its term, so a process that holds many
     * leases writes once per renew interval for all of them. It must serve this lease (its
     * `leaseNames`) and fit the run's timings (see LeaderElector). Coordinated runs only, as `push`.
     */
    session: LeaderElectorOptionsSchema.shape.session,
    /** Test hook: this machine's clock. @default systemClock */
    clock: ClockSchema.optional(),
  },
  { error: optionErrors('withLease', 'client (and, for a coordinated lease, candidacy)') },
).superRefine((o, ctx) => {
  const ok = everyProblem.parsed(ctx);
  for (const key of ['push', 'session'] as const)
    if (ok('mode', key) && o.mode === 'NoCoordination' && o[key] !== undefined)
      ctx.addIssue({ code: 'custom', path: [key], message: `must not be given with mode 'NoCoordination': the run ${key === 'push' ? 'polls' : 'renews'} as client-go does. Drop ${key}, or use mode 'coordinated' (or 'auto')` });
  if (o.mode === 'coordinated' && o.candidacy === undefined) ctx.addIssue({ code: 'custom', path: ['candidacy'], message: candidacyRequired('coordinated', '').message });
  // the LeaderElector's rules over the options the run hands its elector; a field this schema has
  // already spoken of is told once, by it
  const told = new Set(ctx.issues.flatMap(fieldsOf));
  const judged = LeaderElectorOptionsSchema.safeParse(electorOptions(o as Record<string, unknown>), { error: FIXES });
  for (const issue of judged.error?.issues ?? [])
    if (issue.code !== 'unrecognized_keys' && !fieldsOf(issue).some((f) => told.has(f))) ctx.addIssue({ code: 'custom', path: [...issue.path], message: issue.message });
}, { when: everyProblem.when });

/** An issue's fields, as dotted paths: an unknown key's under its own name (issuesOf's way), so that one told by both schemas is told once. */
const fieldsOf = (issue: { readonly path?: readonly PropertyKey[] | undefined; readonly code?: string; readonly keys?: readonly string[] }): string[] => {
  const path = (issue.path ?? []).map(String);
  return issue.code === 'unrecognized_keys' && issue.keys ? issue.keys.map((k) => [...path, k].join('.')) : [path.join('.')];
};

/** Why a coordinated run without a candidacy cannot stand: `mode: 'coordinated'` asked for it, or `auto` found candidates on `lease`. */
export const candidacyRequired = (mode: string | undefined, lease: string): FieldIssue => ({
  field: 'candidacy',
  message: `is required: ${mode === 'coordinated' ? "mode 'coordinated' stands as a candidate" : `lease "${lease}" has candidates, so the coordinator elects its holder`}. Give { emulationVersion, binaryVersion } so it can elect this run, or set mode: 'NoCoordination' to race for the lease directly`,
});

/** A candidacy standing in for one left out, so that the elector's rules judge the rest (its absence is told as withLease's own issue). */
const STAND_IN_CANDIDACY = { emulationVersion: '1.0.0', binaryVersion: '1.0.0' };
/**
 * The lease and holder names the elector is judged with where the options give none: the lease is
 * withLease's argument, not an option, so the schema judges the options for any lease (a session
 * that does not serve the call's lease is told by withLease, which knows it: parseWithLeaseOptions).
 */
const STAND_IN_LEASE = 'lease';
const STAND_IN_IDENTITY = 'run';

/** Whether a run with options `o` stands as a candidate (as far as the options tell): `mode` asks for it, or `auto` is given a candidacy. */
const coordinatedBy = (o: { readonly mode?: unknown; readonly candidacy?: unknown }): boolean => o.mode === 'coordinated' || (o.mode !== 'NoCoordination' && o.candidacy !== undefined);

/**
 * The options a run hands its elector, as far as the options tell them, in the mode the run may take
 * (coordinated when `mode` asks for it or a candidacy is given, else first come, first served). Read
 * whatever passed (every field as given where its own check failed): the elector's rules judge
 * each timing's bounds and their order, a candidacy's versions, a session's fit. The lease: one the
 * session serves, if any (see STAND_IN_LEASE).
 */
function electorOptions(o: Record<string, unknown>): Record<string, unknown> {
  const coordinated = coordinatedBy(o);
  const given = (keys: readonly string[]) => Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]]));
  const session = coordinated && o['session'] instanceof Session ? o['session'] : undefined;
  return {
    leaseName: session?.options.leaseNames?.[0] ?? STAND_IN_LEASE,
    identity: STAND_IN_IDENTITY,
    ...given(['identity', 'client', 'tables', 'multiRegion', 'clockSync', 'clock', 'onError', 'leaseDurationMs', 'renewDeadlineMs', 'retryPeriodMs', 'renewIntervalMs']),
    mode: coordinated ? 'coordinated' : 'NoCoordination',
    ...(coordinated ? { candidacy: STAND_IN_CANDIDACY, ...given(['candidacy', 'push', 'session']) } : {}),
    platform: 'none',
    callbacks: { onStartedLeading: () => undefined },
  };
}

/**
 * withLease's options, judged whole before anything is read: its schema (with the LeaderElector's
 * rules over the options it hands its elector), and what needs the call's lease: a session that
 * does not serve it. `before`: the call's other arguments' issues (its lease name, its function),
 * told first in the same error; a bad lease name judges nothing of the lease.
 * @throws ValidationError naming `what` and every problem
 */
export function parseWithLeaseOptions(raw: unknown, leaseName: string, what: string, before: readonly FieldIssue[] = []): z.output<typeof WithLeaseOptionsSchema> {
  const own = WithLeaseOptionsSchema.safeParse(raw, { error: FIXES });
  const issues: FieldIssue[] = [...before, ...(own.success ? [] : issuesOf(own.error))];
  if (everyProblem.when({ value: raw })) {
    const o = raw as Record<string, unknown>;
    const session = o['session'];
    const unserved = coordinatedBy(o) && session instanceof Session && !before.some((i) => i.field === 'leaseName') ? sessionNotServing(session, leaseName) : undefined;
    if (unserved && !issues.some((i) => i.field === 'session')) issues.push({ field: 'session', message: unserved });
    const ahead = scheduledAtKnownNow(o);
    if (ahead) issues.push(ahead);
  }
  if (!own.success || issues.length > 0) throw new ValidationError(what, issues);
  return own.data;
}

/** How far a scheduled time may be after now: the coordinator's clockSkewMs, within which the SDK holds any two clocks to agree. */
const SCHEDULED_AT_SKEW_MS = electionConfig().clockSkewMs;

/**
 * A scheduled time (`runOnce.at`) later than now by more than the clocks may disagree (the
 * coordinator's clockSkewMs, plus how well DynamoDB's time is known here) is refused: no run is
 * scheduled for a time that has not come, and the window it names may not have begun — marked now,
 * its own run would be skipped. Undefined (no judgement) while `time` is not known. A time before
 * now is no problem however old: a late retry counts for the window it was scheduled in (a window
 * older than those the lease remembers is skipped, not refused).
 */
export function scheduledAtIssue(runOnce: z.output<typeof RunOnceSchema> | undefined, time: StampClock, sync: ClockSync): FieldIssue | undefined {
  if (runOnce === undefined || !('every' in runOnce) || runOnce.at === undefined) return undefined;
  const known = time.check(Infinity);
  if (!known.ok) return undefined;
  const now = time.now();
  const ahead = runOnce.at - now;
  if (ahead <= SCHEDULED_AT_SKEW_MS + known.errorMs) return undefined;
  const clock = sync === 'server' ? "DynamoDB's time" : "this machine's time";
  return {
    field: 'runOnce.at',
    message: `is ${(ahead / 1000).toFixed(1)} s after ${clock} now (${new Date(now).toISOString()}), so it names a window that may not have begun (${windowOf(runOnce, now)}): pass the scheduled event's \`time\` as it is, not a time from a clock of your own (one running fast names the next window), or leave \`at\` out to count the run for the window it takes the lease in`,
  };
}

/** A period not longer than this many times how far the clocks may disagree tells no early skip: its next run is a moment away, and a poll's skips fall that near a window's start often. */
const EARLY_PERIODS = 10;

/**
 * Of a periodic run without `at`, counted for the window its first look fell in (`at`, on `time`):
 * when that look came within the clocks' error (as scheduledAtIssue allows a scheduled time) before
 * the next window began, and this machine's clock is judged ahead of DynamoDB's (by more than the
 * estimate's error, and, within it, by as much as that distance), why the run may have been meant
 * for that next window: a host fired at its start (cron, a schedule) by its clock counts for the
 * window ending, and is skipped when that one ran. withLease tells its onError so when it skips such
 * a run. Undefined otherwise: a clock judged right (clockSync 'none' trusts it: no offset), a
 * period not well longer than the clocks' error (EARLY_PERIODS), or while `time` is not known.
 */
export function earlyForNextWindow(runOnce: z.output<typeof RunOnceSchema>, at: number, time: StampClock): string | undefined {
  if (!('every' in runOnce) || runOnce.at !== undefined) return undefined;
  const known = time.check(Infinity);
  if (!known.ok) return undefined;
  const error = SCHEDULED_AT_SKEW_MS + known.errorMs;
  const periodMs = runOnce.every === 'day' ? 86_400_000 : runOnce.every === 'hour' ? 3_600_000 : runOnce.every;
  const next = nextWindow(runOnce.every, at);
  const early = next.start - at;
  // this machine's clock ahead of DynamoDB's (the estimate: ± errorMs)
  const ahead = -(time.wallOffsetMs() ?? 0);
  if (early > error || periodMs <= EARLY_PERIODS * error || ahead <= known.errorMs || ahead + known.errorMs < early) return undefined;
  return `this run looked at ${new Date(at).toISOString()} by DynamoDB's time, ${Math.round(early)} ms before the window ${next.window} began, and this machine's clock is ${Math.round(ahead)} ms (+/- ${Math.round(known.errorMs)} ms) ahead of DynamoDB's: if it was fired for ${next.window}'s start by that clock, that window has not run. Pass the scheduled time as runOnce.at (the EventBridge scheduled event's \`time\`), so a run counts for the window it was scheduled for`;
}

/**
 * `runOnce.at` judged against now where now is known before any request, with the other options:
 * this machine's clock (clockSync 'none'), or DynamoDB's as the client's earlier answers told it
 * (a client kept between a Lambda function's invocations). Otherwise judged at the first read, on
 * its answer's Date. Only of options whose runOnce, clockSync, client and clock are good (each
 * bad one is told as itself); and no clock is made for the client, so a refused call leaves it as it was.
 */
function scheduledAtKnownNow(o: Record<string, unknown>): FieldIssue | undefined {
  const runOnce = RunOnceSchema.safeParse(o['runOnce']);
  const sync = ClockSyncSchema.safeParse(o['clockSync']);
  const client = ClientSchema.safeParse(o['client']);
  const clock = ClockSchema.optional().safeParse(o['clock']);
  if (!runOnce.success || !sync.success || !client.success || !clock.success) return undefined;
  const base = clock.data ?? systemClock;
  const time = sync.data === 'none' ? trustedClock(base) : knownServerClockOf(client.data, base);
  return time && scheduledAtIssue(runOnce.data, time, sync.data);
}

/** The options of `withLease` and `tryWithLease` as written. */
export type WithLeaseOptions = z.input<typeof WithLeaseOptionsSchema>;

/** What the function learns of its term, and the writes it may make in it. */
export interface LeaseTerm {
  /** The lease this run holds. */
  readonly leaseName: string;
  /** The holder name written on the lease. */
  readonly identity: string;
  /** The term's fencing token: raised by every acquisition, never reused. */
  readonly fencingToken: number;
  /** Run-once: the window this run is for; undefined without `runOnce`. */
  readonly window: string | undefined;
  /**
   * Whether the lease is still held, judged now: the renew deadline on the monotonic clock, so a
   * process that was frozen (a Lambda between invocations) learns it lost the lease at its first
   * look, before any of its timers has run. `signal.aborted` judges the same way, and is true too
   * once the run is over (the function returned or threw: the lease is being given up).
   */
  held(): boolean;
  /** Throws LeaseLostError unless held(). */
  assertHeld(): void;
  /**
   * Runs a DynamoDB transaction with one more condition: the lease is still in this term. A
   * deposed or frozen run's write fails with FencingError and writes nothing. It ends with the
   * function's signal: one still unanswered as that aborts (the term ended: LeaseLostError; the
   * caller's `signal` option aborted: its reason) is abandoned, its request aborted, and rejects
   * with the signal's reason then; one made after is refused with it, nothing sent. Unanswered
   * within a retry period (at least 5 s) while the term lives, it rejects as a timeout
   * (TimeoutError), its outcome unknown. Abandoned, it lands, if ever, only while the lease is
   * still in this term. Refused by DynamoDB's fence, it has the run read its lease at once: the
   * signal aborts, and held() turns false, a read later (and the run, if the function returns
   * anyway, rejects with LeaseLostError). Its own condition failing while the fence passed is a
   * ConflictError naming the items (`TransactItems[i]`), DynamoDB's error its `cause`. Met by a
   * write of the lease row in progress (the run's own renewal: TransactionConflict at the fence),
   * it is sent again a moment later, four tries at most, then rejects with DynamoDB's
   * TransactionCanceledException, which says to send it again; nothing of it was written.
   * Throttled by DynamoDB (ThrottlingError or ProvisionedThroughputExceeded at an item: nothing
   * written), it is sent again after a longer pause (100 ms, twice as long each time), five tries
   * at most, each fenced anew, then rejects with DynamoDB's TransactionCanceledException, its
   * message naming the items throttled (`TransactItems[i]`) and what to do.
   */
  fencedWrite(input: TransactWriteItemsCommandInput): Promise<TransactWriteItemsCommandOutput>;
  /**
   * Writes one of the application's own items fenced by the token it carries (`fencedItemWrite`):
   * refused with FencingError once a newer term has written the item. No transaction: works on
   * multi-Region tables too. Ended by the function's signal, bounded, and its refusal heard, as
   * fencedWrite's are.
   */
  fencedItemWrite(input: FencedItemInput, attribute?: string): Promise<PutItemCommandOutput | UpdateItemCommandOutput>;
  /**
   * Run-once: marks the window done, fenced by the term (the window's row carries the fencing token
   * of the newest term that looked at it, so no older term's mark lands after a newer term read it).
   * With `items` (the run's result), in one transaction with them: both land or neither (not on
   * multi-Region tables, which offer no transactions). Without it the window is marked after the
   * function returns; a `complete()` the function returns without waiting for is waited for, and
   * its outcome is the run's (its error the call's). A `complete(items)` that failed, its error
   * caught by the function, is the run's outcome too: the call rejects with that error and the
   * window stays open (never marked without the items), unless a mark of this run landed all the
   * same (read back) or a later `complete()` marks it. One that landed has marked the window for
   * good: a function that throws after it rejects the call with its error, and the next run skips
   * the window (its work counted done). At most 98 `items`: the window's row and the fence take two of a
   * transaction's 100. Ended by the function's signal, as fencedWrite is: the caller's cancel (the
   * `signal` option) rejects it with its reason, and a mark sent may have landed. Called again after
   * such a mark landed, it resolves if every try sent the same `items` (they are written), and
   * rejects with a RangeError if not (the window is marked, with the items of the try that landed,
   * or with none after a `complete()` without them).
   * @throws FencingError when the term is over (nothing written)
   * @throws LeaseLostError when the term ends before the mark is answered (or, its answer lost,
   * before the row read back tells whether it landed): the mark landed, and the next run skips the
   * window, or it did not, and the next run does it
   * @throws ConflictError when the window's row changed since this run read it, which only a write
   * from outside the term can do (an operator's, a restore), or when an item's own condition failed
   * (named by its index in `items`, `TransactItems[i]`; DynamoDB's error its `cause`): nothing
   * written. Met by the run's own renewal, or throttled, the transaction is sent again as
   * fencedWrite's is.
   */
  complete(items?: readonly TransactWriteItem[]): Promise<void>;
}

/**
 * The function a run executes while it holds the lease. `signal` aborts when the term ends (a
 * LeaseLostError), when the caller's `signal` option aborts (its reason), and at the latest once
 * the run is over, before the lease is given up (a LeaseLostError, reason `cancelled`, whose `cause`
 * is the call's error when it rejects): work it left running on the signal stops then. Nothing
 * tied to it outlives the run: read a response's body (a `fetch(url, { signal })`) before
 * returning, catch what a task left running rejects with, and tell a lost lease from a run's end by
 * the LeaseLostError's `reason` (`cancelled`: the run was over).
 */
export type LeaseFn<T> = (signal: AbortSignal, term: LeaseTerm) => Promise<T> | T;

/** How a run ended (a function that throws rejects withLease with its error, after the lease is given up). */
export type LeaseRunResult<T> =
  /** The function ran and returned while the lease was held (and, run-once, the window is marked). */
  | { status: 'ran'; value: T; fencingToken: number; window?: string }
  /** The lease was not had within the wait: `holder` is who had it, as last seen. */
  | { status: 'busy'; holder: string | undefined }
  /**
   * Run-once: the function did not run. The window already had a successful run (`run`); or,
   * `run` undefined, it is a periodic window older than all of the 32 newest ones of its period
   * (`every`) the lease remembers: it may have run and been forgotten, so it does not run again.
   */
  | { status: 'skipped'; window: string; run: CompletedRun | undefined };
