/**
 * `withLease`: exactly-one for code that does not live long — a scheduled Lambda function, a cron
 * job, a deploy script, a migration runner. It takes the lease, runs the caller's function with the
 * term's fencing token, renews only while that function runs, and gives the lease up in every
 * outcome. Built on a LeaderElector (the same acquisition, renewal, deadline and hand-off rules as
 * a long-lived worker), whose run is bounded by the function's.
 */
import type { DynamoDBClient, TransactWriteItem, TransactWriteItemsCommandInput, TransactWriteItemsCommandOutput } from '@aws-sdk/client-dynamodb';
import { hostname } from 'node:os';
import * as z from 'zod';
import { systemClock, type Clock } from '../clock.js';
import { Millis, Name } from '../schemas/common.js';
import { MAX_COMPLETED_RUNS, type CompletedRun, type Lease } from '../schemas/lease.js';
import { PERIODIC_WINDOWS, keyedWindowRow } from '../schemas/run-once.js';
import { Platform } from '../schemas/platform.js';
import { NO_COORDINATION } from '../schemas/strategy.js';
import { ValidationError, parse } from '../schemas/validation.js';
import { CandidateStore } from '../stores/candidate-store.js';
import { ConflictError } from '../stores/errors.js';
import { LeaseStore, type Term } from '../stores/lease-store.js';
import { RunOnceStore, type RunOnceRead } from '../stores/run-once-store.js';
import { CandidacySchema, LeaderElector, LeaderElectorOptionsSchema, defaultRenewIntervalMs, type StopReason } from './elector.js';
import { handOffPromptly } from './seam.js';
import { FencingError, fencedTransactWrite } from './fencing.js';
import { ClientSchema, ClockSchema, ClockSyncSchema, TablesSchema, fn, optionErrors, stampClockFor } from './options.js';

/** The term's deadline passed, or the lease moved on, while the function ran (or before it could). */
export class LeaseLostError extends Error {
  /** Always `LeaseLostError`. */
  override readonly name = 'LeaseLostError';
  constructor(
    /** The lease that was lost. */
    readonly leaseName: string,
    /** The fencing token of the lost term. */
    readonly fencingToken: number,
    /** Why the term ended: its renew deadline passed (renewals failed, or the process was frozen), or the lease moved on. */
    readonly reason: StopReason,
  ) {
    super(`lease "${leaseName}" was lost (term with fencing token ${fencingToken}: ${REASONS[reason]}); the run's work may be incomplete, and its fenced writes are refused`);
  }
}

const REASONS: Record<StopReason, string> = {
  cancelled: 'given up',
  preempted: 'a better candidate was preferred',
  renewDeadline: 'not renewed within the renew deadline — renewals failed, or the process was frozen past it',
  deposed: 'another holder took the lease',
};

const SCHEDULED_AT = 'must be the time this run was scheduled for: pass the EventBridge scheduled event’s `time` (an ISO 8601 time such as "2026-11-24T00:00:00Z"), a Date, or epoch milliseconds';

const IsoTime = z.iso.datetime({ offset: true });

/** Epoch ms of a scheduled time: an ISO 8601 time with its zone (EventBridge's `time`), a Date, or epoch ms; undefined if it is none. */
function scheduledMs(v: unknown): number | undefined {
  const ms = typeof v === 'number' ? v : v instanceof Date ? v.getTime() : typeof v === 'string' && IsoTime.safeParse(v).success ? Date.parse(v) : undefined;
  return Millis.safeParse(ms).success ? ms : undefined;
}

/**
 * When a run was scheduled, as epoch ms. One refinement that does not abort, not a union of three
 * types: `runOnce`'s union then still picks its `every` form, and the issue names `runOnce.at`
 * (an aborted check would leave the whole union unmatched, naming only `runOnce`). Typed as what
 * it takes.
 */
const ScheduledAt = z
  .unknown()
  .refine((v) => scheduledMs(v) !== undefined, { error: SCHEDULED_AT })
  .transform((v) => scheduledMs(v)!) as unknown as z.ZodType<number, string | Date | number>;

/** Run-once windows: at most one successful run per window. */
export const RunOnceSchema = z.union([
  z.strictObject({
    /**
     * The window: a UTC `day` (`2026-11-24`), a UTC `hour` (`2026-11-24T22`), or a length in
     * milliseconds (windows aligned to the epoch, named by their start in ISO form).
     */
    every: z.union([z.enum(['day', 'hour']), z.number().int('must be whole milliseconds').min(1_000, 'must be ≥ 1000 ms')]),
    /**
     * When this run was scheduled: pass the EventBridge scheduled event's `time` (or a Date, or
     * epoch ms). The window is the one this time falls in, so a late retry (after midnight, say)
     * counts for the window it was scheduled in, and the next window's own run still runs.
     * @default the time the run takes the lease (DynamoDB's clock by default): a late retry then counts for a later window
     */
    at: ScheduledAt.optional(),
  }),
  z.strictObject({
    /** A window the caller names itself (`migration-42`, a deploy id): at most one successful run ever for that key. */
    window: z.string().min(1, 'must not be empty').max(256, 'must be at most 256 characters'),
  }),
], { error: 'must be { every: "day" | "hour" | <ms>, at?: <the scheduled time> } or { window: "<key>" }' });
/** withLease's `runOnce` option as written: `{ every: 'day' | 'hour' | ms, at?: scheduledTime }` or `{ window: key }`. */
export type RunOnce = z.input<typeof RunOnceSchema>;

/**
 * The options of `withLease` and `tryWithLease`. The timings are a LeaderElector's (client-go's
 * defaults); a bad option is a ValidationError naming the field.
 */
export const WithLeaseOptionsSchema = z.strictObject(
  {
    /** The DynamoDB client the lease is read and written with. */
    client: ClientSchema,
    /** Where the tables are: a prefix, or `{ prefix?, leases?, candidates? }`. @default 'conclave' */
    tables: TablesSchema,
    /** The holder name this run writes. @default `run-<host>-<pid>` (plus a unique process id on the lease) */
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
    waitMs: z.number().int('must be whole milliseconds').min(0, 'must be ≥ 0').optional(),
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
     * Cancels the run: the wait ends, or the function's signal aborts (with this signal's reason),
     * and the lease is given up; the call then rejects with the reason. For a Lambda function, abort
     * it when the invocation's remaining time runs short.
     */
    signal: z.custom<AbortSignal>((v) => v instanceof AbortSignal, 'must be an AbortSignal').optional(),
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
  for (const key of ['push', 'session'] as const)
    if (o.mode === 'NoCoordination' && o[key] !== undefined)
      ctx.addIssue({ code: 'custom', path: [key], message: `must not be given with mode 'NoCoordination': the run ${key === 'push' ? 'polls' : 'renews'} as client-go does. Drop ${key}, or use mode 'coordinated' (or 'auto')` });
});

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
   * look, before any of its timers has run. `signal.aborted` judges the same way.
   */
  held(): boolean;
  /** Throws LeaseLostError unless held(). */
  assertHeld(): void;
  /**
   * Runs a DynamoDB transaction with one more condition: the lease is still in this term. A
   * deposed or frozen run's write fails with FencingError and writes nothing.
   */
  fencedWrite(input: TransactWriteItemsCommandInput): Promise<TransactWriteItemsCommandOutput>;
  /**
   * Run-once: marks the window done in the same transaction as `items` (the run's result), fenced
   * by the term: both land or neither. Without it the window is marked after the function returns.
   * At most 98 `items`: the window's row and the fence take two of a transaction's 100.
   * @throws FencingError when the term is over (nothing written)
   * @throws ConflictError when the window's row changed since this run read it, which only a write
   * from outside the term can do (an operator's, a restore): nothing written
   */
  complete(items?: readonly TransactWriteItem[]): Promise<void>;
}

/** The function a run executes while it holds the lease. */
export type LeaseFn<T> = (signal: AbortSignal, term: LeaseTerm) => Promise<T> | T;

/** How a run ended (a function that throws rejects withLease with its error, after the lease is given up). */
export type LeaseRunResult<T> =
  /** The function ran and returned while the lease was held (and, run-once, the window is marked). */
  | { status: 'ran'; value: T; fencingToken: number; window?: string }
  /** The lease was not had within the wait: `holder` is who had it, as last seen. */
  | { status: 'busy'; holder: string | undefined }
  /**
   * Run-once: the function did not run. The window already had a successful run (`run`); or,
   * `run` undefined, it is a periodic window older than all of the 32 newest ones the lease
   * remembers: it may have run and been forgotten, so it does not run again.
   */
  | { status: 'skipped'; window: string; run: CompletedRun | undefined };

/**
 * Takes the lease `name`, runs `fn(signal, term)`, and gives the lease up in every outcome — return,
 * throw, abort — before it resolves: no renewal, timer or candidacy outlives the call. The lease is
 * renewed while `fn` runs; `signal` aborts before the renew deadline if renewals fail, and a run
 * that finds its term over (frozen past it, or deposed) learns so at its first look (`held()`,
 * `signal.aborted`). Waits up to `waitMs` for the lease; `busy` when it did not get it.
 *
 * - Resolves `ran` with fn's value when fn returned while the lease was held.
 * - Rejects with fn's error when fn threw, or with LeaseLostError when fn returned after the term
 *   ended (its work may be incomplete; with run-once, the window stays open).
 * @throws ValidationError naming each bad option
 */
export function withLease<T>(name: string, fn: LeaseFn<T>, options: WithLeaseOptions): Promise<LeaseRunResult<T>> {
  return runWithLease(name, fn, options, false);
}

/**
 * `withLease`, except that it returns `busy` at once when a live holder has the lease, or as soon as
 * it sees another run take a vacant lease first. A lease whose holder's stamp is older than its
 * term by DynamoDB's clock (a crashed run) is waited out, within `waitMs`.
 */
export function tryWithLease<T>(name: string, fn: LeaseFn<T>, options: WithLeaseOptions): Promise<LeaseRunResult<T>> {
  return runWithLease(name, fn, options, true);
}

/** The window a run-once run is for: its key, or the period its scheduled time (else `now`) falls in. @internal */
export function windowOf(r: z.output<typeof RunOnceSchema>, now: number): string {
  if ('window' in r) return r.window;
  const t = r.at ?? now;
  if (r.every === 'day') return new Date(t).toISOString().slice(0, 10);
  if (r.every === 'hour') return new Date(t).toISOString().slice(0, 13);
  return new Date(Math.floor(t / r.every) * r.every).toISOString();
}

/**
 * Whether `window` ran, by the runs its row records: the run that completed it; `{ run: undefined }`
 * for a periodic window older than every one a full list keeps (the list drops its oldest window
 * as a newer one is added, so whatever it dropped is older than all it keeps); undefined: it did
 * not run. @internal
 */
export function windowRun(runs: readonly CompletedRun[], window: string, periodic: boolean): { run: CompletedRun | undefined } | undefined {
  const run = runs.find((r) => r.window === window);
  if (run) return { run };
  if (periodic && runs.length >= MAX_COMPLETED_RUNS && runs.every((r) => window < r.window)) return { run: undefined };
  return undefined;
}

/**
 * The periodic windows remembered once `run` completes: the MAX_COMPLETED_RUNS newest windows,
 * newest first. Window names sort as the times they start (zero-padded ISO 8601), so a retry of an
 * older window, completed late, never pushes out a newer one. @internal
 */
export function rememberRun(runs: readonly CompletedRun[], run: CompletedRun): CompletedRun[] {
  return [run, ...runs.filter((r) => r.window !== run.window)].sort((a, b) => (a.window < b.window ? 1 : a.window > b.window ? -1 : 0)).slice(0, MAX_COMPLETED_RUNS);
}

/** Beyond its term by this much on DynamoDB's clock (the coordinator's clockSkewMs, and both stamps' errors), a holder is stale. */
const STALE_MARGIN_MS = 2_000;

const defaultIdentity = (): string => `run-${hostname().replace(/[^A-Za-z0-9._:/-]/g, '-').slice(0, 200) || 'host'}-${process.pid}`;

async function runWithLease<T>(name: string, work: LeaseFn<T>, options: WithLeaseOptions, tryOnly: boolean): Promise<LeaseRunResult<T>> {
  const what = `${tryOnly ? 'tryWithLease' : 'withLease'} options for lease "${name}"`;
  const leaseName = parse(Name, name, `${tryOnly ? 'tryWithLease' : 'withLease'} lease name`);
  if (typeof work !== 'function') throw new ValidationError(what, [{ field: 'fn', message: 'must be a function (signal, term) => …' }]);
  const o = parse(WithLeaseOptionsSchema, options, what);
  const clock: Clock = o.clock ?? systemClock;
  const client: DynamoDBClient = o.client;
  const leases = new LeaseStore(client, o.tables.leases);
  const time = stampClockFor(o.clockSync, client, clock);
  const identity = o.identity ?? defaultIdentity();

  // Which mode, and whether a try gives up at once: one consistent read of the lease (and its candidates).
  const lease = (await leases.read(leaseName)).item;
  const mode = o.mode !== 'auto' ? o.mode : await autoMode(client, o.tables.candidates, leaseName, lease);
  if (mode === 'coordinated' && !o.candidacy)
    throw new ValidationError(what, [
      {
        field: 'candidacy',
        message: `is required: ${o.mode === 'auto' ? `lease "${leaseName}" has candidates, so the coordinator elects its holder` : "mode 'coordinated' stands as a candidate"}. Give { emulationVersion, binaryVersion } so it can elect this run, or set mode: 'NoCoordination' to race for the lease directly`,
      },
    ]);
  const immediate = tryOnly || o.waitMs === 0;
  if (immediate && lease?.holderIdentity !== undefined && !isStale(lease, time.now())) return { status: 'busy', holder: lease.holderIdentity };

  let started: ((t: { signal: AbortSignal; term: Term }) => void) | undefined;
  const leading = new Promise<{ signal: AbortSignal; term: Term }>((resolve) => (started = resolve));
  // giving up at once: another run took the lease first (not the stale holder this run found)
  let overtaken: (() => void) | undefined;
  const beaten = new Promise<undefined>((resolve) => (overtaken = () => resolve(undefined)));
  let stopped: StopReason | undefined;
  let elector: LeaderElector;
  try {
    elector = new LeaderElector({
      leaseName,
      identity,
      tables: o.tables,
      client,
      mode,
      ...(mode === 'coordinated' ? { candidacy: o.candidacy } : {}),
      ...pick(o, ['leaseDurationMs', 'renewDeadlineMs', 'retryPeriodMs']),
      ...renewInterval(o),
      platform: o.platform,
      clockSync: o.clockSync,
      // a run that auto made first come, first served polls and renews as client-go does
      ...(mode === 'coordinated' && o.push ? { push: o.push } : {}),
      ...(mode === 'coordinated' && o.session ? { session: o.session } : {}),
      releaseOnCancel: true,
      clock,
      ...(o.onError ? { onError: o.onError } : {}),
      callbacks: {
        onStartedLeading: (signal, t) => started?.({ signal, term: { holderIdentity: identity, fencingToken: t.fencingToken } }),
        onStoppedLeading: (info) => void (stopped = info.reason),
        onNewLeader: (holder) => {
          if (immediate && holder !== identity && holder !== lease?.holderIdentity) overtaken?.();
        },
      },
    });
  } catch (e) {
    // the timings are checked together by the elector: report them as this call's options
    if (e instanceof ValidationError) throw new ValidationError(what, e.issues);
    throw e;
  }
  handOffPromptly(elector);
  // a vacant or stale lease is worth a term's watch and two polls even to a caller that waits for nobody
  const takeMs = elector.options.leaseDurationMs + 2 * elector.options.retryPeriodMs;
  const waitMs = immediate ? Math.max(o.waitMs ?? 2 * elector.options.leaseDurationMs, takeMs) : (o.waitMs ?? 2 * elector.options.leaseDurationMs);

  let stopListening: (() => void) | undefined;
  const cancel = o.signal;
  cancel?.throwIfAborted();
  const stop = new AbortController();
  const running = elector.run(stop.signal);
  const waited = new AbortController();
  const got = await Promise.race([
    leading,
    beaten,
    running.then(() => undefined),
    clock.sleep(waitMs, cancel ? AbortSignal.any([waited.signal, cancel]) : waited.signal).then(() => undefined),
  ]).finally(() => waited.abort());
  try {
    cancel?.throwIfAborted();
    if (!got || !elector.isLeader()) return { status: 'busy', holder: elector.leader !== identity ? elector.leader : undefined };
    const term = got.term;
    // the function's signal aborts with a LeaseLostError (the elector's, with the bare reason)
    const own = new AbortController();
    const lost = () => own.abort(new LeaseLostError(leaseName, term.fencingToken, got.signal.reason as StopReason));
    if (got.signal.aborted) lost();
    else got.signal.addEventListener('abort', lost, { once: true });
    const cancelled = () => own.abort(cancel!.reason);
    cancel?.addEventListener('abort', cancelled, { once: true });
    stopListening = () => {
      got.signal.removeEventListener('abort', lost);
      cancel?.removeEventListener('abort', cancelled);
    };
    const signal = judgedSignal(own.signal, elector);
    const runOnce = o.runOnce;
    const window = runOnce ? windowOf(runOnce, time.now()) : undefined;
    // its row: a keyed window's own, or the periodic windows' (lib/schemas/run-once.ts)
    const row = runOnce ? ('window' in runOnce ? keyedWindowRow(runOnce.window) : PERIODIC_WINDOWS) : undefined;
    const rows = new RunOnceStore(client, o.tables.candidates);
    // read in this term: nobody else can complete a window of this lease while it lasts (completions are fenced)
    const done: RunOnceRead = row !== undefined ? await rows.read(leaseName, row) : { runs: [], revision: 0 };
    const ran = window !== undefined ? windowRun(done.runs, window, row === PERIODIC_WINDOWS) : undefined;
    if (window !== undefined && ran) return { status: 'skipped', window, run: ran.run };
    let completed = false;
    const complete = async (items: readonly TransactWriteItem[] = []): Promise<void> => {
      if (window === undefined || row === undefined) throw new RangeError('complete(): this run has no run-once window; give the runOnce option, or use fencedWrite');
      if (completed) throw new RangeError(`complete(): the window ${window} was already marked by this run`);
      if (!elector.isLeader()) throw new FencingError(leaseName, term.fencingToken, 'the term is over (this worker is not leading)');
      const marker: CompletedRun = { window, fencingToken: term.fencingToken, holder: identity, at: time.now() };
      const mark = rows.writeItem(leaseName, row, row === PERIODIC_WINDOWS ? rememberRun(done.runs, marker) : [marker], done);
      // the caller's items, the window's row, and the fence (a ConditionCheck of the term on the lease): all or nothing
      await fencedTransactWrite(client, { table: o.tables.leases, leaseName, term }, { TransactItems: [...items, mark] }).catch((e: unknown) => {
        if (refusedAt(e, items.length)) throw new ConflictError(`run-once window "${window}" of lease "${leaseName}" (its row changed since this run read it, by a write from outside the term)`, undefined);
        throw e;
      });
      completed = true;
    };
    const handle: LeaseTerm = {
      leaseName,
      identity,
      fencingToken: term.fencingToken,
      window,
      held: () => elector.isLeader(),
      assertHeld: () => {
        if (!elector.isLeader()) throw new LeaseLostError(leaseName, term.fencingToken, stopped ?? 'renewDeadline');
      },
      fencedWrite: (input) => elector.fencedWrite(input),
      complete,
    };
    // The run-once read above may have taken past the term (a process frozen while it was in
    // flight): a term others may already have seen expire is not worked on, as the elector never
    // leads one (fn would start with its signal already aborted, and with a stale token).
    if (!elector.isLeader()) throw new LeaseLostError(leaseName, term.fencingToken, stopped ?? 'renewDeadline');
    const value = await work(signal, handle);
    cancel?.throwIfAborted();
    if (window !== undefined && !completed) await complete().catch((e: unknown) => {
      throw e instanceof FencingError ? new LeaseLostError(leaseName, term.fencingToken, stopped ?? 'deposed') : e;
    });
    if (!completed && !elector.isLeader()) throw new LeaseLostError(leaseName, term.fencingToken, stopped ?? 'renewDeadline');
    return { status: 'ran', value, fencingToken: term.fencingToken, ...(window !== undefined ? { window } : {}) };
  } finally {
    stopListening?.();
    stop.abort();
    await running;
  }
}

/** `auto`: the lease's own strategy says NoCoordination, or nobody stands for it → first come, first served. */
async function autoMode(client: DynamoDBClient, table: string, leaseName: string, lease: Lease | undefined): Promise<'coordinated' | 'NoCoordination'> {
  if (lease?.strategy === NO_COORDINATION) return 'NoCoordination';
  const { candidates } = await new CandidateStore(client, table).list(leaseName);
  return candidates.length > 0 ? 'coordinated' : 'NoCoordination';
}

/** A holder's last stamp is older than its term by DynamoDB's clock, beyond every clock's margin: it crashed, or was frozen. */
function isStale(lease: Lease, now: number): boolean {
  return lease.renewTime !== undefined && lease.renewTime + lease.leaseDurationSeconds * 1000 + STALE_MARGIN_MS < now;
}

/** Whether a transaction was cancelled because the condition of its item `index` failed. */
function refusedAt(e: unknown, index: number): boolean {
  const reasons = (e as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
  return e instanceof Error && e.name === 'TransactionCanceledException' && reasons?.[index]?.Code === 'ConditionalCheckFailed';
}

/**
 * The term's signal, whose `aborted` and `throwIfAborted()` judge the renew deadline at the moment
 * they are read (LeaderElector.isLeader): after a freeze the deadline timer may not have run yet
 * when the function resumes, but its first look at the signal already says the term is over.
 */
function judgedSignal(signal: AbortSignal, elector: LeaderElector): AbortSignal {
  const aborted = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'aborted')!.get!;
  Object.defineProperty(signal, 'aborted', {
    get() {
      elector.isLeader();
      return aborted.call(signal) as boolean;
    },
  });
  const throwIfAborted = signal.throwIfAborted.bind(signal);
  Object.defineProperty(signal, 'throwIfAborted', {
    value: () => {
      elector.isLeader();
      throwIfAborted();
    },
  });
  return signal;
}

/**
 * The run's renew interval: the option, or the coordinated default in either mode (fewer writes than
 * client-go's every-retry-period), when that still leaves a retry before the renew deadline (the
 * elector's own check); otherwise the elector's default.
 */
function renewInterval(o: { renewIntervalMs?: number | undefined; renewDeadlineMs?: number | undefined; retryPeriodMs?: number | undefined }): { renewIntervalMs?: number } {
  if (o.renewIntervalMs !== undefined) return { renewIntervalMs: o.renewIntervalMs };
  const renewDeadlineMs = o.renewDeadlineMs ?? ELECTOR_DEFAULTS.renewDeadlineMs;
  const retryPeriodMs = o.retryPeriodMs ?? ELECTOR_DEFAULTS.retryPeriodMs;
  const interval = defaultRenewIntervalMs({ mode: 'coordinated', renewDeadlineMs, retryPeriodMs });
  return interval + retryPeriodMs < renewDeadlineMs ? { renewIntervalMs: interval } : {};
}

/** The LeaderElector's defaults for the timings withLease passes on. */
const ELECTOR_DEFAULTS = {
  renewDeadlineMs: LeaderElectorOptionsSchema.shape.renewDeadlineMs.parse(undefined),
  retryPeriodMs: LeaderElectorOptionsSchema.shape.retryPeriodMs.parse(undefined),
};

function pick<O extends object, K extends keyof O>(o: O, keys: readonly K[]): Partial<Pick<O, K>> {
  const out: Partial<Pick<O, K>> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out;
}
