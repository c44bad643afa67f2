/**
 * `withLease`: exactly-one for code that does not live long — a scheduled Lambda function, a cron
 * job, a deploy script, a migration runner. It takes the lease, runs the caller's function with the
 * term's fencing token, renews only while that function runs, and gives the lease up in every
 * outcome. Built on a LeaderElector (the same acquisition, renewal, deadline and hand-off rules as
 * a long-lived worker), whose run is bounded by the function's.
 */
import type { DynamoDBClient, TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { hostname } from 'node:os';
import { isDeepStrictEqual } from 'node:util';
import * as z from 'zod';
import { Nap, systemClock, type Clock } from '../clock.js';
import { effectiveLease, renewedBy, sessionStampAt } from '../election/vacancy.js';
import { Name } from '../schemas/common.js';
import { sessionKey } from '../schemas/identity.js';
import type { Lease } from '../schemas/lease.js';
import { PERIODIC_WINDOWS, keyedWindowRow, type WindowRun } from '../schemas/run-once.js';
import { NO_COORDINATION } from '../schemas/strategy.js';
import { ValidationError, argumentIssues, parse, type FieldIssue } from '../schemas/validation.js';
import { CandidateStore } from '../stores/candidate-store.js';
import { BrokenSessionError, CONFLICT_ATTEMPTS, ConflictError, isReplicatedWriteConflict } from '../stores/errors.js';
import { IdentityStore } from '../stores/identity-store.js';
import { LeaseStore, type Term } from '../stores/lease-store.js';
import { RunOnceStore } from '../stores/run-once-store.js';
import type { LeaseLock } from './lock.js';
import { LeaderElector, LeaderElectorOptionsSchema, defaultRenewIntervalMs, electorWith, judgedSignal, refusedInTermOf, type ElectorInternals, type LeadingTerm, type StopReason } from './elector.js';
import { FencingError, LeaseLostError, MAX_TRANSACTION_ITEMS, NO_TRANSACTIONS, TransactItemsSchema, fencedItemWrite, fencedTransactWriteInTerm, untilTermEnds } from './fencing.js';
export { LeaseLostError } from './fencing.js';
import { INTERNAL_STOP, TableNotFoundError, TableWait, multiRegionMissIn, noteMultiRegionMiss, stampClockFor, tableNotThere, type ClockSync } from './options.js';
import type { StampClock } from './server-clock.js';
import { boundedClient, requestBoundMs } from './bounded-client.js';
import { errorSink, oneShotFault, replicatedConflictLeft, unretriedWriteFault } from './faults.js';
import { readWhileCreating, tableState } from './table-state.js';
import { isMissingTable, requestTableOf } from '../table-wait.js';
import { checkMultiRegion } from './multi-region.js';
import { newPeriodRefusal, rememberRun, windowOf, windowRun } from './run-once-windows.js';

export { windowOf } from './run-once-windows.js';

export { RunOnceSchema, WithLeaseOptionsSchema, type LeaseFn, type LeaseRunResult, type LeaseTerm, type RunOnce, type WithLeaseOptions } from './with-lease-options.js';
import { candidacyRequired, earlyForNextWindow, parseWithLeaseOptions, scheduledAtIssue, type RunOnceSchema, type LeaseFn, type LeaseRunResult, type LeaseTerm, type WithLeaseOptions } from './with-lease-options.js';

/**
 * Takes the lease `name`, runs `fn(signal, term)`, and gives the lease up in every outcome — return,
 * throw, abort — before it resolves: no renewal, timer or candidacy outlives the call. The lease is
 * renewed while `fn` runs; `signal` aborts before the renew deadline if renewals fail, and a run
 * that finds its term over (frozen past it, or deposed) learns so at its first look (`held()`,
 * `signal.aborted`). `signal` aborts in every outcome once the run is over, before the lease is
 * given up (work fn left running on it, a task beside one that threw, stops): with the term's
 * LeaseLostError or the caller's cancel reason if one came first, else a LeaseLostError (reason
 * `cancelled`) saying the run is over, the call's error, if it rejects, its `cause`. So nothing
 * tied to `signal` outlives the run: a value fn returns that still reads on it (the body of a
 * `fetch(url, { signal })` read after the call resolves) fails with that error, so read it in fn; a
 * task fn leaves running on a signal-aware API rejects with it, so catch it (or await it in fn);
 * and a LeaseLostError as the signal's reason no longer means the lease was lost: its `reason` is
 * `cancelled` when the run was over. Waits up to `waitMs` for the lease; `busy` when it did not get it.
 *
 * - Resolves `ran` with fn's value when fn returned while the lease was held, unless a
 *   `complete(items)` of fn failed, its error caught by fn: then it rejects with that error and the
 *   window stays open, unless a mark of this run landed all the same (read back).
 * - Rejects with fn's error when fn threw, or with LeaseLostError when the term ended before fn
 *   returned (a write of it refused by DynamoDB, a FencingError fn caught, shows so though the
 *   elector had not yet read the lease; refused by an item's own fence, the message says so: a
 *   newer term's write, or another lease's token on the item), or before its window's mark was
 *   answered (its work may be incomplete). With run-once the window is then open for the next run,
 *   unless this run's mark, sent and abandoned as the term ended, lands after all: the next run then
 *   skips it. Never both: the next run's claim of the window refuses a mark still on its way, so at
 *   most one run marks it. A `complete()` of fn that landed before fn threw has marked the window:
 *   the next run skips it (the call still rejects with fn's error).
 * - A call on `term` that fn awaits (`fencedWrite`, `fencedItemWrite`, `complete()` and the read
 *   back of a mark whose answer was lost) ends with fn's `signal`: as the term ends (LeaseLostError)
 *   or the caller's `signal` aborts (its reason), a call still unanswered is abandoned, its request
 *   aborted, and rejects with that reason; made after, it is refused with it, nothing sent. While
 *   the term lives, one unanswered within a retry period (at least 5 s) rejects as a timeout
 *   (TimeoutError), its outcome unknown. One DynamoDB refuses (FencingError: the lease moved on)
 *   has the elector read the lease at once, as its own fenced writes do: `signal` aborts, and
 *   `held()` turns false, as soon as that read shows the term gone. fn is never held past its
 *   signal by this library; a function that returns after a cancel has its window marked all the
 *   same (not after a `complete(items)` of it failed: the call then rejects with that error).
 * @throws ValidationError naming each bad option
 * @throws TableNotFoundError naming the tables and the `tables` option, when a table does not exist or answers "not found" (at once where DescribeTable finds none either; where DescribeTable is refused, after 60 s of tries; where DescribeTable shows it ACTIVE, after one more try, the message saying so: a table deleted and created again under its name, or another endpoint or Region, which no wait mends); a table still being created (CREATING) is waited for, read again with backoff as a worker's start-up is, until it answers or the `signal` option aborts (the call then rejects with its reason)
 * @throws DynamoDBUnreachableError naming the endpoint and the table, when DynamoDB cannot be reached at the first read (not retried); naming the lease and the run-once window, when the window's claim, or withLease's own mark after fn returned, cannot reach DynamoDB or goes unanswered (not retried): the claim's says fn was not run; the mark's, that fn ran and whether the window is marked is not known (the next run skips it if the mark landed, else runs fn again)
 * @throws DynamoDBRefusedError naming the table, when the first read is denied (the role's grant) or throttled (not retried); naming the lease and the window, and whether fn ran, when the window's claim or withLease's own mark is denied or throttled (not retried)
 */
export function withLease<T>(name: string, fn: LeaseFn<T>, options: WithLeaseOptions): Promise<LeaseRunResult<T>> {
  return runWithLease(name, fn, options, false);
}

/**
 * `withLease`, except that it returns `busy` at once when a live holder has the lease, or as soon as
 * it sees another run take a vacant lease first. A lease whose holder's stamp (for a term held on
 * a session, the later of its own and its session's) is older than its term by DynamoDB's clock (a
 * crashed run) is waited out, within `waitMs`.
 */
export function tryWithLease<T>(name: string, fn: LeaseFn<T>, options: WithLeaseOptions): Promise<LeaseRunResult<T>> {
  return runWithLease(name, fn, options, true);
}

/**
 * `tryWithLease` with its elector built with `internals` (lib/sdk/elector.ts electorWith): the
 * simulator's, which plants a bug in the runs it makes (sim/bugs.ts). Not part of the public API.
 * @internal
 */
export function tryWithLeaseWith<T>(internals: ElectorInternals, name: string, fn: LeaseFn<T>, options: WithLeaseOptions): Promise<LeaseRunResult<T>> {
  return runWithLease(name, fn, options, true, internals);
}

/** Beyond its term by this much on DynamoDB's clock (the coordinator's clockSkewMs, and both stamps' errors), a holder is stale. */
const STALE_MARGIN_MS = 2_000;

/** How many runs this process has begun: each run's default identity is its own. */
let runsBegun = 0;
/**
 * A run's default identity, `run-<host>-<pid>-<n>`: its own, so two runs of one process at once are
 * two start-ups to each other (a try sees the other take the lease first, and is busy), not one
 * identity leading twice.
 */
const defaultIdentity = (): string => `run-${hostname().replace(/[^A-Za-z0-9._:/-]/g, '-').slice(0, 200) || 'host'}-${process.pid}-${++runsBegun}`;

async function runWithLease<T>(name: string, work: LeaseFn<T>, options: WithLeaseOptions, tryOnly: boolean, internals: ElectorInternals = {}): Promise<LeaseRunResult<T>> {
  const call = tryOnly ? 'tryWithLease' : 'withLease';
  // the lease name, the function and every option (the elector's rules over its timings and
  // candidacy too) judged together, before anything is read: one bad one hides none of the others
  const argIssues: FieldIssue[] = [...argumentIssues(Name, name, 'leaseName'), ...(typeof work === 'function' ? [] : [{ field: 'fn', message: 'must be a function (signal, term) => ...' }])];
  const badName = argIssues.some((i) => i.field === 'leaseName');
  const what = badName ? `${call} arguments` : `${call} options for lease "${name}"`;
  const unnamed = defaultIdentity();
  const o = parseWithLeaseOptions(options, String(name), what, argIssues);
  const leaseName = parse(Name, name, what); // passed above
  const clock: Clock = o.clock ?? systemClock;
  const client: DynamoDBClient = o.client;
  // its own requests, and the function's on its term, give up as the elector's do (a retry period, at least 5 s): one that never answers must not hang the call (bounded-client.ts)
  const requests = boundedClient(client, clock, requestBoundMs(o.retryPeriodMs ?? ELECTOR_DEFAULTS.retryPeriodMs));
  const leases = new LeaseStore(requests, o.tables.leases, o.multiRegion);
  const time = stampClockFor(o.clockSync, client, clock);
  const identity = o.identity ?? unnamed;

  const cancel = o.signal;
  // Which mode, and whether a try gives up at once: one consistent read of the lease (and its candidates).
  // not retried: a fault here rejects the call (`row`: what was not read, by `action`); DynamoDB's
  // missing table as it is, looked at below
  const missing = async (e: unknown, row: string, action: string): Promise<never> => {
    const denied = `${row} this role may not read (${action}); grant it Conclave's grantWorker with the lease among its leaseNames (or allLeases), and check its credentials`;
    throw await oneShotFault(e, call, `lease "${leaseName}"`, row, client, denied);
  };
  const subject = `${call} run "${identity}" of lease "${leaseName}"`;
  const report = errorSink(o.onError, subject, clock);
  const immediate = tryOnly || o.waitMs === 0;
  const firstLook = async (): Promise<{ lease: Lease | undefined; at: number; mode: 'coordinated' | 'NoCoordination'; judged: Lease | undefined }> => {
    const lease = (await leases.read(leaseName).catch((e: unknown) => missing(e, `the lease's row on the leases table "${o.tables.leases}"`, 'GetItem'))).item;
    const at = time.now();
    // judged on the read's answer (DynamoDB's Date header): refused before anything is written
    checkScheduledAt(o.runOnce, time, o.clockSync, what);
    const mode = o.mode !== 'auto' ? o.mode : await autoMode(requests, o.tables.candidates, leaseName, lease).catch((e: unknown) => missing(e, `the lease's candidates on the candidates table "${o.tables.candidates}"`, 'Query'));
    // a call that gives up at once judges a holder's term now, one held on a session by its
    // session's row: read here, so that an identities table still being made is waited for too
    return { lease, at, mode, judged: immediate && lease?.holderIdentity !== undefined ? await judged(lease, requests, o.tables.identities, time.now(), subject, report) : undefined };
  };
  // Under multiRegion, a leases table missing off this machine is told as the elector's start-up
  // tells it (the client must send to a replica Region: multiRegionMissIn): the first look meets the
  // missing table before any check, so the check is made now (a review, 2026-12-07, tenth); any other error as it is
  const notInThisRegion = async (e: unknown): Promise<unknown> => {
    const cause = e instanceof TableNotFoundError ? e.cause : undefined;
    if (!o.multiRegion || cause === undefined || requestTableOf(cause) !== o.tables.leases) return e;
    const region = await checkMultiRegion(requests, [{ role: 'leases', name: o.tables.leases }], what, report, cancel).then(
      () => undefined,
      (x: unknown) => multiRegionMissIn(x),
    );
    if (region === undefined) return e;
    noteMultiRegionMiss(cause, region);
    return tableNotThere(`${call} of lease "${leaseName}"`, o.tables, cause);
  };
  // DynamoDB answers a table still being made (CREATING) as one not there: looked at (DescribeTable),
  // and waited for while it is made, as getLeader and a worker's start-up wait (TableWait)
  const tables = new TableWait([o.tables.leases, ...(o.mode === 'auto' ? [o.tables.candidates] : []), ...(immediate ? [o.tables.identities] : [])], { state: tableState(requests), clock });
  const looked = await readWhileCreating(firstLook, { tables, clock, signal: cancel, fail: (e) => tableNotThere(`${call} of lease "${leaseName}"`, o.tables, e) }).catch(async (e: unknown) => {
    throw await notInThisRegion(e);
  });
  const { lease, mode } = looked;
  // `auto` found candidates (mode 'coordinated' without one was refused before the read)
  if (mode === 'coordinated' && !o.candidacy) throw new ValidationError(what, [candidacyRequired(o.mode, leaseName)]);
  // a first-come run's window row is on the candidates table, which its elector does not stand on (nor check):
  // judged with the leases table, which it must agree with (one global, the other of one Region: each Region's own)
  if (o.multiRegion && o.runOnce && mode === 'NoCoordination')
    await checkMultiRegion(requests, [{ role: 'leases', name: o.tables.leases }, { role: 'candidates', name: o.tables.candidates }], what, report, cancel);
  if (looked.judged !== undefined && lease?.holderIdentity !== undefined && !isStale(looked.judged, time.now())) return { status: 'busy', holder: lease.holderIdentity };

  // the term's signal, the term, and the elector's own handle on it (what a refused write of it is told to)
  let started: ((t: { signal: AbortSignal; term: Term; leading: LeadingTerm }) => void) | undefined;
  const leading = new Promise<{ signal: AbortSignal; term: Term; leading: LeadingTerm }>((resolve) => (started = resolve));
  // giving up at once: another run took the lease first (not the stale holder this run found)
  let overtaken: ((value: undefined) => void) | undefined;
  const beaten = new Promise<undefined>((resolve) => (overtaken = resolve));
  let stopped: StopReason | undefined;
  let elector: LeaderElector;
  // A call that gives up at once is overtaken by a term another run took after its first look: a
  // holder by another name than the stale one it found, or by its own name but another start-up
  // (two processes configured alike: told apart by instance, never by name), seen on a row newer
  // than the one it found — a term with a higher fencing token (an eventually consistent poll may
  // answer with a copy from before: an earlier run's term, over by then) — or in the row that
  // refused its take. With no row at the first look (none yet, or deleted), any term a strongly
  // consistent read shows was written since: a take. A copy showing a term is asked again,
  // consistently, once per term: it may be from before a deletion. Never judged by the token's
  // size there: a run whose clock is behind this one's takes a new row with a lower token
  // (lib/schemas/fencing-token.ts), and ran beside this one when it was
  let takenBy: string | undefined;
  const seen = (holder: unknown, instance: unknown) => {
    if (!immediate || typeof holder !== 'string') return;
    const another = holder === identity ? typeof instance === 'string' && instance !== elector.instance && instance !== lease?.holderInstance : holder !== lease?.holderIdentity;
    if (!another) return;
    takenBy ??= holder;
    overtaken?.(undefined);
  };
  const askedAgain = new Set<string>();
  const watched = (inner: LeaseLock): LeaseLock => {
    const lock: LeaseLock = {
      ...inner,
      async get(consistent = true, signal) {
        const read = await inner.get(consistent, signal);
        const item = read.item;
        if (!immediate || item?.holderIdentity === undefined) return read;
        if (lease !== undefined) {
          if (item.fencingToken > lease.fencingToken) seen(item.holderIdentity, item.holderInstance);
          return read;
        }
        if (consistent) {
          seen(item.holderIdentity, item.holderInstance);
          return read;
        }
        const term = `${item.fencingToken}/${item.holderInstance ?? ''}`;
        if (askedAgain.has(term)) return read;
        askedAgain.add(term);
        return lock.get(true, signal);
      },
      // a take refused: the row that refused it, as the elector hears of it (at once, not at its next read)
      async acquire(read, record) {
        const got = await inner.acquire(read, record);
        if ('refusedBy' in got) seen(got.refusedBy, got.refusedByInstance);
        return got;
      },
    };
    return lock;
  };
  try {
    // a cancelled leader hands over at once: the caller waits for the release; a process that exits meanwhile is told of this call, which it ends on (leaving.ts)
    elector = electorWith({ ...internals, promptly: true, exits: { who: subject, call }, lock: (inner) => watched((internals.lock ?? ((l) => l))(inner)) }, {
      leaseName,
      identity,
      tables: o.tables,
      multiRegion: o.multiRegion,
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
        onStartedLeading(signal, t) {
          started?.({ signal, term: { holderIdentity: identity, fencingToken: t.fencingToken }, leading: t });
        },
        onStoppedLeading(info) {
          stopped = info.reason;
        },
      },
    });
  } catch (e) {
    // the timings are checked together by the elector: report them as this call's options
    if (e instanceof ValidationError) throw new ValidationError(what, e.issues);
    throw e;
  }
  // a vacant or stale lease is worth a term's watch and two polls even to a caller that waits for nobody
  const takeMs = elector.options.leaseDurationMs + 2 * elector.options.retryPeriodMs;
  const waitMs = immediate ? Math.max(o.waitMs ?? 2 * elector.options.leaseDurationMs, takeMs) : (o.waitMs ?? 2 * elector.options.leaseDurationMs);

  // the function's signal's two sources, while they are listened to, and its end with the run's
  let relay: { readonly signal: AbortSignal; lost(): void; cancelled(): void; over(ended: { error: unknown } | undefined): void } | undefined;
  // the error the call rejects with, once it is known (undefined: it resolves)
  let ended: { error: unknown } | undefined;
  cancel?.throwIfAborted();
  const stop = new AbortController();
  const running = elector.run(stop.signal);
  // the wait: its timer, or the caller's cancel, whichever comes first (ended once the race is decided)
  const wait = new Nap(clock, waitMs, cancel);
  const got = await Promise.race([leading, beaten, running.then(() => undefined), wait.done as Promise<undefined>]).finally(() => wait.end());
  try {
    cancel?.throwIfAborted();
    if (!got || !elector.isLeader()) return { status: 'busy', holder: takenBy ?? (elector.leader !== identity ? elector.leader : undefined) };
    const term = got.term;
    // still in the term fn was started in (judged now): not merely leading, which a later term of this elector would be
    const inItsTerm = () => elector.isLeader() && !got.signal.aborted;
    // the function's signal aborts with a LeaseLostError (the elector's, with the bare reason)
    const own = new AbortController();
    const on = {
      signal: got.signal,
      lost() {
        own.abort(new LeaseLostError(leaseName, term.fencingToken, got.signal.reason as StopReason));
        // the run's elector takes no later term: fn's work is fenced to this one, and a term nobody
        // can use would hold the lease (others' runs busy) until fn returns
        stop.abort(INTERNAL_STOP);
      },
      cancelled() {
        own.abort(cancel!.reason);
      },
      // The run is over and the lease is being given up: work still watching the signal (a task
      // fn started and did not wait for, beside one that threw through Promise.all) stops now,
      // before another run can take the lease, as a LeaderElector's term signal aborts at its end.
      // A LeaseLostError ('cancelled': given up) saying why, the call's error its cause.
      over(end: { error: unknown } | undefined) {
        if (own.signal.aborted) return;
        const e = new LeaseLostError(leaseName, term.fencingToken, 'cancelled');
        e.message = `lease "${leaseName}" was given up by ${call} (term with fencing token ${term.fencingToken}): the run is over, ${end === undefined ? 'the function having returned' : `the call rejecting with ${errorLine(end.error)} (this error's cause)`}; work still going on under the function's signal is not in the term, and its fenced writes are refused`;
        if (end !== undefined) e.cause = end.error;
        own.abort(e);
      },
    };
    relay = on;
    if (got.signal.aborted) on.lost();
    else got.signal.addEventListener('abort', on.lost, { once: true });
    cancel?.addEventListener('abort', on.cancelled, { once: true });
    const signal = judgedSignal(own.signal, elector);
    const runOnce = o.runOnce;
    // again on the clock the elector led by (not yet known when the lease was read)
    checkScheduledAt(runOnce, time, o.clockSync, what);
    // the window of the call's first look (its time on the same clock), not of the moment the lease
    // was won: a run that waits across a window's end still counts for the window it began in (ten
    // hosts fired at 23:59:59.5, the one that won at 00:00:01 ran the next day's and skipped its own)
    const window = runOnce ? windowOf(runOnce, looked.at) : undefined;
    // its row: a keyed window's own, or the periodic windows' (lib/schemas/run-once.ts)
    const row = runOnce ? ('window' in runOnce ? keyedWindowRow(runOnce.window) : PERIODIC_WINDOWS) : undefined;
    const rows = new RunOnceStore(requests, o.tables.candidates);
    // what ends a call: the term (the window's claim, withLease's own mark), or fn's signal (fn's calls on its term: the term's end, or the caller's cancel)
    const theTerm: Ends = { signal: got.signal, error: () => new LeaseLostError(leaseName, term.fencingToken, got.signal.reason as StopReason) };
    const fnSignal: Ends = { signal, error: () => signal.reason };
    // A write of the term DynamoDB refused (FencingError): the lease had moved on by then, whatever
    // the elector has read since. Told to the elector, which reads its lease at once (as after a
    // refusal of its own fenced writes): held() turns false and the signal aborts as soon as that
    // read shows the term gone. A function that catches the refusal and returns before then did not
    // run in its term: the call rejects with LeaseLostError.
    let refused = false;
    // the last refusal by an item's own fence (fencedItemWrite), when it was: a newer term's write of
    // the item, or a token of another lease on it (one lease per item), which no lease read shows
    let itemRefused: FencingError | undefined;
    // a write of the term refused by the lease's own fence (not an item's), or the window's row
    // claimed by a newer term: the lease had moved on, so the term is over whatever the elector has
    // read since, and nothing more is marked in it (a review, 2026-12-07, thirteenth: a complete()
    // after such a refusal marked the window, the newer holder not having claimed its row yet)
    let leaseRefused = false;
    const refusal = (e: unknown, byItem = false): unknown => {
      if (e instanceof FencingError) {
        refused = true;
        itemRefused = byItem ? e : undefined;
        if (!byItem) leaseRefused = true;
        refusedInTermOf(got.leading, e);
      }
      return e;
    };
    const fenced = <R>(write: Promise<R>, byItem = false): Promise<R> => write.catch((e: unknown) => Promise.reject(refusal(e, byItem)));
    // a transaction of the term whose fence met a write of the lease row in progress goes again a moment later, as the elector's own do
    const inTerm = { clock, retryPeriodMs: elector.options.retryPeriodMs };
    // The window's row is on the candidates table, which a first-come run's elector neither stands on
    // nor reads: the claim may be the call's first request to it, and meet it still being made
    // (CREATING: DynamoDB's missing table). Waited for in the term, as the first look waits
    // (TableWait, the same backoff), until the term ends (LeaseLostError) or the caller cancels; a
    // run whose tables answer sends nothing more.
    type Claimed = Awaited<ReturnType<RunOnceStore['claim']>>;
    const claimOnceMade = (met: unknown, again: () => Promise<Claimed>): Promise<Claimed> => {
      if (!isMissingTable(met)) return Promise.reject(met);
      const wait = new TableWait([o.tables.candidates], { state: tableState(requests), clock });
      let first: unknown = met; // the claim's own answer, looked at before the first try again
      const tryAgain = () => {
        if (first === undefined) return again();
        const e = first;
        first = undefined;
        return Promise.reject(e);
      };
      const ends = cancel ? AbortSignal.any([got.signal, cancel]) : got.signal;
      return readWhileCreating(tryAgain, { tables: wait, clock, signal: ends, fail: (e) => tableNotThere(`${call} of lease "${leaseName}"`, o.tables, e) }).catch((e: unknown) => {
        throw got.signal.aborted ? theTerm.error() : e;
      });
    };
    // The window's row on a multi-Region table: a write of it refused because another Region wrote
    // the row at that moment (ReplicatedWriteConflictException, after the AWS SDK's own retries with
    // backoff): its last try was not applied, an earlier one may have been (replicatedConflictLeft).
    // Met as the elector's own writes meet it (docs/deploy.md, MRSC): told to onError, named, and the
    // row written again, conditioned as before, at most CONFLICT_ATTEMPTS times in all (a write that
    // landed meanwhile is the same claim again, or the mark found on the row); the last one refused
    // is the call's error, naming the lease, the window and what stands.
    const where = `the run-once window "${window}" (row "${row}" of the candidates table "${o.tables.candidates}")`;
    const conflicted = (e: unknown, message: string): Error => {
      const named = new Error(`${subject}: ${message}`, { cause: e });
      named.name = 'ReplicatedWriteConflictException'; // the SDK's own name kept: code that tells it by name still does
      return named;
    };
    const conflictTold = (e: unknown, write: string, attempt: number, inDoubt: string, again: string) =>
      report(conflicted(e, `${write} of ${where}: another Region wrote the same item at the same moment (ReplicatedWriteConflictException), and the AWS SDK's own retries used up: ${replicatedConflictLeft(e, inDoubt)}; nothing to fix; ${again} (try ${attempt + 1} of ${CONFLICT_ATTEMPTS})`));
    // read and claimed in this term: no older term's mark lands from now on, and no newer term's
    // read comes before this term's mark (it would claim the row first, and this mark be refused).
    // A claim is idempotent in its term (fence = this term's token): one of its tries that landed
    // unanswered is claimed again, and its answer is the row as it stands.
    const claim = async (r: string): Promise<Claimed> => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await until(theTerm, (s) => rows.claim(leaseName, r, term.fencingToken, s));
        } catch (e) {
          if (!isReplicatedWriteConflict(e)) throw e;
          if (attempt >= CONFLICT_ATTEMPTS)
            throw conflicted(e, `${where} could not be claimed: another Region wrote the row at the same moment at each of ${attempt} tries (ReplicatedWriteConflictException): the function was not run, and the window is not marked by this run (a later run runs it, unless another has marked it); the lease is given up`);
          conflictTold(e, 'the claim', attempt, "one that landed is the same claim in this term, and the claim again is answered with the row as it stands", 'claiming it again, the function not yet run');
          // cancelled meanwhile: the function never starts
          cancel?.throwIfAborted();
        }
      }
    };
    // withLease's own writes of the window's row unanswered (or throttled, denied, failed on
    // DynamoDB's side, answered by something else): named with the lease, the window, whether the
    // function ran and what stands (a bare TimeoutError named none), and, denied, the grant; the
    // caller's cancel reason and the term's end as they are
    const grant = `this role may not write the window's row (UpdateItem); grant it Conclave's grantWorker with the lease among its leaseNames (or allLeases), and check its credentials`;
    const named = async (e: unknown, advice: string, denied: string): Promise<unknown> =>
      (cancel?.aborted && e === cancel.reason) || e instanceof LeaseLostError ? e : unretriedWriteFault(e, subject, advice, client, `${grant}; ${denied}`);
    const claimed: Claimed =
      row !== undefined
        ? await claim(row)
            .catch((e: unknown) => claimOnceMade(e, () => claim(row)))
            .catch(async (e: unknown) => {
              const failed = `the claim of ${where} failed: the function was not run, and this run marked nothing (a claim that landed unanswered only keeps older terms' marks off the row); the lease is given up, and ${call} does not retry`;
              throw await named(e, `${failed}: call it again (it runs the window, unless another run has marked it)`, `${failed}: call it again once the role may`);
            })
        : { runs: [], revision: 0 };
    if ('higherFence' in claimed) {
      // a lease taken (the elector has seen it): told as such
      if (stopped !== undefined || !inItsTerm()) throw new LeaseLostError(leaseName, term.fencingToken, stopped ?? 'deposed');
      // the lease still names this term: the row's token is a term's that ran or claimed the window, a
      // later holder's not yet seen, or an earlier one's above this term's (tokens gone backwards after
      // the lease row was deleted, a clock behind: docs/safety.md) - never "another holder took the lease"
      const e = new LeaseLostError(leaseName, term.fencingToken, 'deposed');
      e.message = `lease "${leaseName}": the run-once window ${window}'s row "${row}" carries ${claimed.higherFence === undefined ? 'a fencing token' : `fencing token ${claimed.higherFence}`}, higher than this term's (${term.fencingToken}): a term with a higher token ran or claimed the window - a later holder of the lease, or, when the lease row was deleted and a clock behind made later tokens lower, an earlier one; the function was not run, and this term cannot mark the window (a term whose token is higher can)`;
      throw e;
    }
    const done = claimed;
    // a periodic window's period: only that period's windows judge it (lib/sdk/run-once-windows.ts)
    const every = runOnce && 'every' in runOnce ? runOnce.every : undefined;
    const ran = window !== undefined ? windowRun(done.runs, window, every) : undefined;
    if (window !== undefined && ran) {
      // a periodic run without `at`, its first look just before the next window began, on a host whose
      // clock is judged ahead: it may have fired for that window's start, and it is not run
      const early = runOnce && 'every' in runOnce ? earlyForNextWindow(runOnce, looked.at, time) : undefined;
      if (early) report(new Error(`${subject}: skipped the run-once window ${window}, ${ran.run ? `already run by "${ran.run.holder}"` : 'older than those the lease remembers'}; ${early}`));
      return { status: 'skipped', window, run: ran.run };
    }
    const crowded = every !== undefined ? newPeriodRefusal(done.runs, every) : undefined;
    if (crowded) throw new ValidationError(what, [{ field: 'runOnce.every', message: crowded }]);
    let completed = false;
    // the function's complete(), while it is in flight
    let inFlight: Promise<void> | undefined;
    // why a complete(items) of the function failed, its items not written: the run's outcome unless a
    // later complete() marks the window (withLease's own mark, without the items, never does)
    let itemsFailed: { error: unknown } | undefined;
    // this run's mark, stamped once: a mark abandoned unanswered may land, and each try after it
    // writes the same row, so the row read back tells whether any of them landed
    let marker: WindowRun | undefined;
    // the caller's items of each mark sent (none: a mark of the row alone): what a mark that landed unanswered wrote
    const sentItems: (readonly TransactWriteItem[])[] = [];
    // the row's runs with this run's mark
    const runsWith = (m: WindowRun) => (every !== undefined ? rememberRun(done.runs, { ...m, every }) : [m]);
    // A mark that failed unanswered (no answer within its bound) may have landed all the same: the
    // row read back tells, and a mark that landed is the window run. The read ends as `ends` does:
    // once it has, the function is not held for its answer (the mark landed, and the next run
    // skips the window, or it did not, and the next run does it). Undefined: the read failed.
    const readBack = async (ends: Ends): Promise<boolean | undefined> => {
      if (row === undefined || marker === undefined) return false;
      const now = await until(ends, (s) => rows.read(leaseName, row, s)).catch(() => {
        if (ends.signal.aborted) throw ends.error();
        return undefined;
      });
      return now && rows.wrote(now, leaseName, row, runsWith(marker), done, term.fencingToken);
    };
    // whether the function has returned (what stands when its window cannot be marked)
    let returned = false;
    // The window's row alone: one conditional write, fenced by the row's claim. A try refused by
    // another Region's write at that moment was not applied (or, an earlier try of the SDK's landed
    // unanswered, it was: the row read back, and the next try's refusal, tell): marked again, still
    // conditioned on this term's claim and the revision read, at most CONFLICT_ATTEMPTS times.
    // False: a newer term has claimed the row.
    const markRow = async (runs: WindowRun[], ends: Ends): Promise<boolean> => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await until(ends, (s) => rows.complete(leaseName, row!, runs, done, term.fencingToken, s));
        } catch (e) {
          if (await readBack(ends)) return true;
          if (!isReplicatedWriteConflict(e)) throw e;
          if (attempt >= CONFLICT_ATTEMPTS)
            throw conflicted(
              e,
              `${where} could not be marked: another Region wrote the row at the same moment at each of ${attempt} tries (ReplicatedWriteConflictException): ${returned ? 'the function ran and returned, but ' : ''}the window is not marked: it stays open, and the next run runs it again${returned ? '' : ' (unless a later complete() of this run marks it)'}`,
            );
          conflictTold(e, 'the mark', attempt, 'the row read back does not show it (or was not answered), and a mark again refused by its condition is judged by the row as it stands (one that landed is the window run)', 'marking it again');
        }
      }
    };
    // the window's mark, abandoned (with `ends`' error) if `ends` ends before it is answered
    const mark = async (items: readonly TransactWriteItem[], ends: Ends): Promise<void> => {
      // a list of transaction items, checked before anything else: it was "items is not iterable"
      parse(z.object({ items: TransactItemsSchema }), { items }, `complete(items) of lease "${leaseName}"`);
      if (window === undefined || row === undefined) throw new RangeError('complete(): this run has no run-once window; give the runOnce option, or use fencedWrite');
      if (completed) throw new RangeError(`complete(): the window ${window} was already marked by this run`);
      if (!inItsTerm()) throw new FencingError(leaseName, term.fencingToken, 'the term is over (this worker is not leading in it)');
      if (leaseRefused) throw new FencingError(leaseName, term.fencingToken, "the term is over: a write of it was refused by the lease's fence (the lease moved on)");
      marker ??= { window, fencingToken: term.fencingToken, holder: identity, at: time.now() };
      const runs = runsWith(marker);
      const landed = async (e: unknown): Promise<true> => {
        if (await readBack(ends)) return true;
        throw e;
      };
      if (items.length === 0) {
        // the window's row alone: one conditional write, fenced by the row's claim
        sentItems.push(items);
        if (!(await markRow(runs, ends))) throw refusal(new FencingError(leaseName, term.fencingToken, 'a newer term has claimed the window\'s row'));
      } else {
        if (o.multiRegion) throw new RangeError(`complete(items): ${NO_TRANSACTIONS}; write the items with fencedItemWrite, then call complete()`);
        // the window's row and the fence take two of a transaction's items: refused before anything is sent or read
        // the window's row too: DynamoDB allows one operation per item in a transaction ("cannot include multiple operations on one item")
        const onRow = items.findIndex((i) => {
          const op = i.Put ?? i.Update ?? i.Delete ?? i.ConditionCheck;
          const key = i.Put?.Item ?? (i.Update ?? i.Delete ?? i.ConditionCheck)?.Key;
          return op?.TableName === o.tables.candidates && key?.['leaseName']?.S === leaseName && key?.['name']?.S === row;
        });
        if (onRow >= 0)
          throw new RangeError(`complete(items): items[${onRow}] is the run-once window's row ("${row}" of lease "${leaseName}" on the candidates table "${o.tables.candidates}"), which complete() writes itself (DynamoDB allows one operation per item in a transaction); leave the window's row to withLease`);
        const most = MAX_TRANSACTION_ITEMS - 2;
        if (items.length > most)
          throw new RangeError(`complete(items): ${items.length} items do not fit one transaction with the window's row and the fence (at most ${most}); write the rest first with term.fencedWrite, idempotently (a window not marked is run again), and give complete() at most ${most}`);
        // the caller's items, the window's row, and the fence (a ConditionCheck of the term on the lease): all or nothing
        const item = rows.writeItem(leaseName, row, runs, done, term.fencingToken);
        const send = (s: AbortSignal) => {
          sentItems.push(items);
          return fenced(fencedTransactWriteInTerm(requests, { table: o.tables.leases, leaseName, term, signal: s }, { TransactItems: [...items, item] }, inTerm));
        };
        await until(ends, send).catch(async (e: unknown) => {
          // refused by the fence, no earlier mark of this run sent: nothing of it landed, nothing to read
          // back (a read the elector's, woken by the refusal, would race: the term's end abandons it)
          if (e instanceof FencingError && sentItems.length === 1) throw e;
          if (!refusedAt(e, items.length)) return landed(e); // all or nothing: a mark that landed is the caller's items written
          // refused by the row: a write from outside the term, a newer term's claim, or this run's own earlier mark, unanswered, that landed
          await landed(new ConflictError(`run-once window "${window}" of lease "${leaseName}" (its row changed since this run read it, by a write from outside the term, or a newer term claimed it)`, undefined));
          // this run's mark landed: its items are those of the try that landed, these if every try sent these
          if (!sentItems.every((sent) => isDeepStrictEqual(sent, items))) {
            completed = true; // the window is marked, by this run's earlier complete()
            throw new RangeError(`complete(items): the window ${window} was already marked by this run: an earlier complete(), unanswered, landed with its own items, and these were not written`);
          }
          return true;
        });
      }
      completed = true;
    };
    // fn's writes in its term: refused once the term is over (FencingError), else ended by fn's signal
    const fnWrite = <R>(write: (signal: AbortSignal) => Promise<R>): Promise<R> =>
      inItsTerm() ? until(fnSignal, write) : Promise.reject(new FencingError(leaseName, term.fencingToken, 'the term is over (this worker is not leading in it)'));
    const handle: LeaseTerm = {
      leaseName,
      identity,
      fencingToken: term.fencingToken,
      window,
      held() {
        return inItsTerm();
      },
      assertHeld() {
        if (!inItsTerm()) throw new LeaseLostError(leaseName, term.fencingToken, stopped ?? 'renewDeadline');
      },
      fencedWrite(input) {
        if (o.multiRegion) return Promise.reject(new RangeError(NO_TRANSACTIONS));
        return fnWrite((s) => fenced(fencedTransactWriteInTerm(requests, { table: o.tables.leases, leaseName, term, signal: s }, input, inTerm)));
      },
      fencedItemWrite(input, attribute) {
        return fnWrite((s) => fenced(fencedItemWrite(requests, { leaseName, fencingToken: term.fencingToken, signal: s, ...(attribute !== undefined ? { attribute } : {}) }, input), true));
      },
      complete(items: readonly TransactWriteItem[] = []): Promise<void> {
        const marking = mark(items, fnSignal);
        // in flight until settled (cleared before the function's own await of it resumes)
        inFlight = marking;
        const settled = () => void (inFlight === marking && (inFlight = undefined));
        marking.then(settled, (e: unknown) => {
          // items given (malformed ones too: withLease's own mark, without them, never stands in for them)
          if (!(Array.isArray(items) && items.length === 0) && !completed) itemsFailed = { error: e };
          settled();
        });
        return marking;
      },
    };
    // The run-once read above may have taken past the term (a process frozen while it was in
    // flight): a term others may already have seen expire is not worked on, as the elector never
    // leads one (fn would start with its signal already aborted, and with a stale token).
    if (!inItsTerm()) throw new LeaseLostError(leaseName, term.fencingToken, stopped ?? 'renewDeadline');
    // cancelled while the window was claimed: the function never starts
    cancel?.throwIfAborted();
    // Once the function returned, its work is done: a cancel that comes after it changes nothing,
    // and its window is marked (else another run would do the work again)
    const value = await work(signal, handle);
    returned = true;
    // a complete() the function returned without waiting for: its outcome is the run's, as if it
    // had waited (withLease's own mark, without its items, never stands in for it)
    if (inFlight) await inFlight;
    const lost = (e: unknown) => (e instanceof FencingError ? new LeaseLostError(leaseName, term.fencingToken, stopped ?? 'deposed') : e);
    // A complete(items) that failed, caught by the function: withLease's own mark, without the
    // items, never stands in for it. The run ran if a mark of this run landed all the same (read
    // back); else it rejects with that error, and the window stays open for a retry.
    if (itemsFailed && !completed) {
      if (!(await readBack(theTerm).catch((e: unknown) => Promise.reject(lost(e))))) throw lost(itemsFailed.error);
      completed = true;
    }
    // a write of the function DynamoDB refused: its term was over before it returned (the elector
    // may not have read so yet), its work may be incomplete, and its window is not marked
    if (refused && !completed) {
      const e = new LeaseLostError(leaseName, term.fencingToken, stopped ?? 'deposed');
      // The elector has not seen the term end, and an item's own fence refused the write: said so,
      // not "another holder took the lease", which the run may still hold (a token of another lease
      // on the item: a review, 2026-12-07, tenth)
      if (stopped === undefined && itemRefused !== undefined && !leaseRefused) {
        e.message = `lease "${leaseName}": a fencedItemWrite of the function was refused by the item's own fence (${itemRefused.message}), and the function returned: its work may be incomplete, so the run does not count${window !== undefined ? `, and the run-once window ${window} is not marked` : ''}. This run had not seen its term (fencing token ${term.fencingToken}) end: the item carries a higher token, written by a newer term of this lease, or by another lease (tokens of different leases do not compare: fence each item by one lease only)`;
        e.cause = itemRefused;
      }
      throw e;
    }
    if (window !== undefined && !completed)
      await mark([], theTerm).catch(async (e: unknown) => {
        const failed = `the function ran and returned, but ${call}'s mark of ${where} failed, and no read back showed it landed: whether the window is marked is not known. If the mark landed, the next run (a retry of this call, or the next one scheduled) skips the window; if not, it runs the function again for it (make its effects idempotent, keyed by term.window). The lease is given up, and ${call} does not retry`;
        throw await named(lost(e), failed, failed);
      });
    if (!completed && !inItsTerm()) throw new LeaseLostError(leaseName, term.fencingToken, stopped ?? 'renewDeadline');
    return { status: 'ran', value, fencingToken: term.fencingToken, ...(window !== undefined ? { window } : {}) };
  } catch (e) {
    ended = { error: e };
    throw e;
  } finally {
    if (relay) {
      relay.signal.removeEventListener('abort', relay.lost);
      cancel?.removeEventListener('abort', relay.cancelled);
    }
    stop.abort(INTERNAL_STOP);
    // fn's signal ends with the run, in every outcome: it aborted with the term's end (LeaseLostError)
    // or the caller's cancel (its reason), else it aborts now (a review, 2026-12-07, tenth: it never
    // did once the listeners above were removed, and a task still watching it worked on beside the next holder)
    relay?.over(ended);
    await running;
  }
}

/** `auto`: the lease's own strategy says NoCoordination, or nobody stands for it → first come, first served. */
async function autoMode(client: DynamoDBClient, table: string, leaseName: string, lease: Lease | undefined): Promise<'coordinated' | 'NoCoordination'> {
  if (lease?.strategy === NO_COORDINATION) return 'NoCoordination';
  const { candidates } = await new CandidateStore(client, table).list(leaseName, true);
  return candidates.length > 0 ? 'coordinated' : 'NoCoordination';
}

/**
 * The lease as its term is judged: one held on a session lives by the later of its own stamp and
 * its session's (effectiveLease), as the coordinator and getLeader judge it. A session row the
 * schema refuses is judged by nobody: the term counts as live, and `report` is told the row and its
 * repair (a BrokenSessionError); one that cannot be read (not granted: grantWorker's `sessions`)
 * leaves the lease's own stamp to judge it, and `report` is told. DynamoDB's missing table is
 * thrown as it is: the caller waits for an identities table still being made, as getLeader does.
 */
async function judged(lease: Lease, client: DynamoDBClient, table: string, now: number, subject: string, report: (e: Error) => void): Promise<Lease> {
  if (lease.session === undefined) return lease;
  const key = sessionKey(lease.session);
  let row: Awaited<ReturnType<IdentityStore['read']>>['item'];
  try {
    row = (await new IdentityStore(client, table).read(key.component, key.name)).item;
  } catch (e) {
    if (isMissingTable(e)) throw e;
    if (e instanceof ValidationError && lease.holderIdentity !== undefined) {
      report(new BrokenSessionError(subject, { lease: lease.name, holderIdentity: lease.holderIdentity, fencingToken: lease.fencingToken, session: lease.session }, table, e));
      return renewedBy(lease, now);
    }
    report(new Error(`${subject}: lease "${lease.name}" is held on session "${lease.session}", whose row could not be read: its holder is judged by the lease's own stamp, and a live one waited for`, { cause: e }));
    return lease;
  }
  return effectiveLease(lease, sessionStampAt(row, now, now), now);
}

/** `runOnce.at` judged against `time`'s now (scheduledAtIssue): refused when it is ahead; left to the next look while DynamoDB's time is not known. */
function checkScheduledAt(runOnce: z.output<typeof RunOnceSchema> | undefined, time: StampClock, sync: ClockSync, what: string): void {
  const ahead = scheduledAtIssue(runOnce, time, sync);
  if (ahead) throw new ValidationError(what, [ahead]);
}

/** A holder's last stamp is older than its term by DynamoDB's clock, beyond every clock's margin: it crashed, or was frozen. */
function isStale(lease: Lease, now: number): boolean {
  return lease.renewTime !== undefined && lease.renewTime + lease.leaseDurationSeconds * 1000 + STALE_MARGIN_MS < now;
}

/** An error as one line of a message: its name and message. */
const errorLine = (e: unknown): string => (e instanceof Error ? `${e.name}: ${e.message}` : String(e));

/** What ends a call: its signal, and the error the call rejects with once it has aborted. */
interface Ends {
  readonly signal: AbortSignal;
  readonly error: () => unknown;
}

/** `write`, ended by `ends` (untilTermEnds): abandoned, its request aborted, once `ends.signal` aborts. */
const until = <T>(ends: Ends, write: (signal: AbortSignal) => Promise<T>): Promise<T> => untilTermEnds(ends.signal, ends.error, write);

/** Whether a transaction was cancelled because the condition of its item `index` failed (a fenced one's: a ConflictError, DynamoDB's error its cause). */
function refusedAt(conflict: unknown, index: number): boolean {
  const e = conflict instanceof ConflictError ? conflict.cause : conflict;
  const reasons = (e as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
  return e instanceof Error && e.name === 'TransactionCanceledException' && reasons?.[index]?.Code === 'ConditionalCheckFailed';
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
