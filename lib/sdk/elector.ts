import type { DynamoDBClient, PutItemCommandOutput, TransactWriteItemsCommandInput, TransactWriteItemsCommandOutput, UpdateItemCommandOutput } from '@aws-sdk/client-dynamodb';
import { every, Nap, systemClock, uniqueId, type Clock, type Timer } from '../clock.js';
import type { Candidate } from '../schemas/candidate.js';
import { instanceOnSession } from '../schemas/identity.js';
import type { Lease } from '../schemas/lease.js';
import type { Platform } from '../schemas/platform.js';
import { OLDEST_EMULATION_VERSION } from '../schemas/strategy.js';
import { parse, ValidationError } from '../schemas/validation.js';
import { ConflictError } from '../stores/errors.js';
import { CandidateStore } from '../stores/candidate-store.js';
import { LeaseStore } from '../stores/lease-store.js';
import { acquisition, takenAgain, dynamoLeaseLock, SessionReader, type Acquired, type LeaseLock, type LeaseRead, type SessionRead, type Term } from './lock.js';
import { candidateWith, DuplicateIdentityError, LeaseCandidate, leaseRowRead, standDown, UNIQUE_IDENTITY } from './candidate.js';
import { fencedItemWrite, fencedTransactWriteInTerm, FencingError, LeaseLostError, NO_TRANSACTIONS, untilTermEnds, type FencedItemInput } from './fencing.js';
import { checkMultiRegion, type CheckedTable } from './multi-region.js';
import { INTERNAL_STOP, StartUp, deepFreeze, runningTableFault, stampClockFor, LEASES_AND_IDENTITIES } from './options.js';
import { tableState } from './table-state.js';
import { LeaderElectorOptionsSchema, defaultRenewIntervalMs, renewCadenceMs, type ElectorRunPhase, type ElectorStats, type LeaderCallbacks, type LeaderElectorOptions, type LeadingTerm, type ResolvedLeaderElectorOptions, type StopReason, type AnyLeaderElectorOptions } from './elector-options.js';

export { CandidacySchema, LeaderElectorOptionsSchema, PHASE_STEP_MS, defaultRenewIntervalMs, renewCadenceMs } from './elector-options.js';
export type { AnyLeaderElectorOptions, ElectorRunPhase, ElectorStats, LeaderCallbacks, LeaderElectorOptions, LeadingTerm, ResolvedLeaderElectorOptions, StopReason } from './elector-options.js';
import {
  LEAVING_READS,
  decide,
  decideFollower,
  decideLeader,
  gainedSince,
  showsLeftTerm,
  leadFromRead,
  nextStepDelay,
  SESSION_QUIET_LEASES,
  sessionFallbackMs,
  sleepToCount,
  sleptSince,
  STAMP_ERROR_MS,
  START,
  WOKEN_READS,
  wokenReadDelay,
  type Effect,
  type Event,
  type LeavingWrite,
  type Moment,
  type Settings,
  type SleepGauge,
  type State,
  type SteppedDown,
  type WriteOutcome,
} from './step.js';
import { sessionSeam, type Session } from './session.js';
import { detectPlatform } from './platform.js';
import { ClockSkewError, type StampClock } from './server-clock.js';
import { abortAfter, boundedClient, CREDENTIALS_STUCK_MS, heldOnCredentialsMs, raced, requestBoundMs } from './bounded-client.js';
import type { Push } from './push.js';
import { leadingTerm, leaving, type ExitCall } from './leaving.js';
import { awaitedCallBack, callBack, errorSink, faultKind, faultReporter, isContended, mayHaveLanded, LeaderStalledError, NoCoordinatorError, onRecovered, recovered, retryDelayMs, sendsToThisMachine, START_RETRY_MS, STOPPED_LEADING_WAIT_MS, STOP_WRITES_MS, StopBudget } from './faults.js';
/**
 * What the SDK's own code and the simulator give an elector beyond its options: its lock wrapped or
 * its decisions replaced (a planted bug: sim/bugs.ts). Not part of the public API.
 * @internal
 */
export interface ElectorInternals {
  readonly lock?: (lock: LeaseLock) => LeaseLock;
  readonly decisions?: Partial<Decisions>;
  /** A cancelled leader hands over or releases at once, not at its next renewal slot (withLease: its caller waits). */
  readonly promptly?: boolean;
  /** How a step-down whose write is in progress is noted (leaving.ts); by default only on the system clock: a simulated machine's process never exits. */
  readonly stepDowns?: (who: string, call?: ExitCall) => () => void;
  /** Who a process's exit names, and the call to end on, for a withLease (or tryWithLease) call's elector (leaving.ts); by default the LeaderElector and its run(). */
  readonly exits?: { readonly who: string; readonly call: ExitCall };
}

/** The internals of the elector being constructed by electorWith (read once, by the constructor). */
let building: ElectorInternals = {};

/**
 * A LeaderElector built with `internals`: the constructor the SDK's own code and the simulator use.
 * @internal
 */
export function electorWith(internals: ElectorInternals, options: AnyLeaderElectorOptions): LeaderElector {
  building = internals;
  try {
    // any mode with any option, as the SDK's own callers build them: the constructor's parse refuses a bad combination
    return new LeaderElector(options as LeaderElectorOptions);
  } finally {
    building = {};
  }
}

/**
 * Whether a renewal failed with `e` was refused for the worker's own reasons: its role denied it, or
 * a row refused as invalid (faultKind). Not a 5xx, a throttle, a timeout, DynamoDB unreachable or an
 * answer lost: a term lost to those is no failed start (step.ts failedAtStart).
 */
const refusedForItsOwnReasons = (e: unknown): boolean => faultKind(e) === 'denied' || faultKind(e) === 'invalidRow';

/** Each term onStartedLeading was given, and how its elector hears of a write of it refused (LeaderElector's refusedBy). */
const refusals = new WeakMap<LeadingTerm, (e: unknown) => void>();

/**
 * Tells the elector that led `term` (the LeadingTerm its onStartedLeading was given) of `e`, an
 * error a write of that term made without its `fencedWrite` or `fencedItemWrite` rejected with
 * (withLease's term handle, which writes with its function's signal): a FencingError from
 * DynamoDB's fence has the leader read its lease at once, as one of its own fenced writes does.
 * @internal
 */
export function refusedInTermOf(term: LeadingTerm, e: unknown): void {
  refusals.get(term)?.(e);
}

/**
 * The term's signal, whose `aborted` and `throwIfAborted()` judge the renew deadline at the moment
 * they are read (LeaderElector.isLeader): after a freeze the deadline timer may not have run yet
 * when the function resumes, but its first look at the signal already says the term is over. The
 * signal onStartedLeading and withLease's function are given.
 * @internal
 */
export function judgedSignal(signal: AbortSignal, elector: LeaderElector): AbortSignal {
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
 * The lease's holder as `elector` last learned it from the lease: the row as it last read it (its
 * polls and looks), or, where a take of its own was refused since that read, the holder the
 * refusal's row named (whoever moved first; its address not known until the next read; none when
 * the refusal came with no row, or one with no holder). Undefined before its first read or with no
 * row: what a follower's health check names the holder and its address by (health.ts).
 * @internal
 */
export function holderLastKnown(elector: LeaderElector): Pick<Lease, 'holderIdentity' | 'holderAddress'> | undefined {
  const read = elector['known'].lastRaw;
  const refused = elector['refusedTake'];
  // the step keeps the row read before a refused take (a new read replaces it): the refusal is newer until then
  if (refused !== undefined && refused.after === read) return refused.by === undefined ? {} : { holderIdentity: refused.by };
  return read?.item;
}

/**
 * How many steps `elector`'s loop has begun: a health check that found it stuck waits for this to
 * move, the elector's own loop running again (health.ts).
 * @internal
 */
export function loopSteps(elector: LeaderElector): number {
  return elector['x'].loopSteps;
}

/**
 * client-go's LeaderElector on a DynamoDB lease, taking part in KEP-4355's coordinated election:
 * a follower reads the lease, judges expiry on its own monotonic clock, acknowledges elections and
 * reports vacancies; a leader renews every renew interval (`renewIntervalMs`), stops acting when it
 * has not renewed for the renew deadline (before the term can expire for anyone else), and yields to
 * preferredHolder by handing its term over (released when no successor is named). Built from one
 * options object (LeaderElectorOptions), then `run(signal)` once per process start-up. The shell of
 * lib/sdk/step.ts `decide`: it feeds it events and carries out its effects through the LeaseLock.
 */
export class LeaderElector {
  /** The options as resolved: defaults applied, table names resolved. Frozen. */
  readonly options: ResolvedLeaderElectorOptions;
  /** Coordinated mode: this worker's candidacy, which run() runs beside the election. */
  readonly candidate: LeaseCandidate | undefined;
  /** Unique per start-up: written as the lease's holderInstance. */
  readonly instance: string;
  /**
   * Resolves once run() takes part: the platform looked up and, in coordinated mode, the candidate
   * row written (NoCoordination: the lease read once, so its table is known to be there). Rejects
   * if run() failed before that (or its signal aborted first). Pending until run() is called.
   */
  readonly ready: Promise<void>;
  /** What it knows, following or leading (lib/sdk/step.ts): replaced by each step. */
  private known: State = START;
  /** Its last take refused (another moved first), the lease read it followed, and who the refusal's row named (holderLastKnown). */
  private refusedTake: { readonly after: LeaseRead | undefined; readonly by: string | undefined } | undefined;
  /** What it carries effects out with. */
  private readonly x: Shell;

  /** Validates and resolves `options`; nothing is read or written until run(). @throws ValidationError naming each bad option */
  constructor(options: LeaderElectorOptions) {
    const internals = building;
    building = {};
    const o = parse(LeaderElectorOptionsSchema, options, `LeaderElector options${typeof options?.identity === 'string' ? ` for "${options.identity}"` : ''}`);
    const { client, callbacks, onError, clock, detectPlatform: detect, push, session, ...data } = o;
    const machine = clock ?? systemClock;
    const time = stampClockFor(data.clockSync, client, machine);
    // session rows are read by the session's reader, shared by the process's electors, or this elector's own
    // its reads and writes give up after a retry period (at least 5 s): one that never answers must not stop the elector (bounded-client.ts); a leader's, sooner (withinMs)
    const requests = boundedClient(client, machine, requestBoundMs(data.retryPeriodMs));
    // its stop (and its candidacy's) waits on DynamoDB STOP_BUDGET_MS at most: then the lock's requests are abandoned (faults.ts)
    const stop = new StopBudget(machine);
    const lockRequests = stop.requests(requests);
    const sessions = session ? sessionSeam(session).reader : new SessionReader(lockRequests, data.tables.identities, time);
    const subject = `LeaderElector "${data.identity}" of lease "${data.leaseName}"`;
    const told = errorSink(onError, subject, machine);
    // NoCoordination: the lease rows, and the session rows a holder's term may be on; coordinated: the candidacy's too (all three)
    const uses = data.mode === 'NoCoordination' ? LEASES_AND_IDENTITIES : undefined;
    const faultReport = faultReporter(told, subject, client, runningTableFault(subject, data.tables, uses));
    // a request its stop's budget cut is told once, with the rest left undone, as run() resolves (tellUndone)
    const report = (e: unknown) => void (stop.failed(e) || faultReport(e));
    const built = dynamoLeaseLock(data.leaseName, new LeaseStore(lockRequests, data.tables.leases, data.multiRegion), new CandidateStore(lockRequests, data.tables.candidates), sessions);
    const lock = internals.lock ? internals.lock(built) : built;
    const decisions = { ...DECISIONS, ...internals.decisions };
    // on a session, the instance names the session's process: only its rows vouch for this elector's terms
    const unique = uniqueId(machine);
    this.instance = session ? instanceOnSession(data.identity, unique, session.process) : `${data.identity}_${unique}`;
    const c = data.candidacy;
    this.candidate = c
      ? // multiRegion: its reads of its own row strongly consistent too (the option's promise: every read)
        candidateWith({ multiRegion: data.multiRegion, stop, renewedOnTurn: () => this.note({ kind: 'candidateRenewed', onTurn: true }) }, { ...c, leaseName: data.leaseName, name: data.identity, tables: data.tables, client, clock: time, clockSync: 'none', instance: this.instance, claimWindowMs: data.leaseDurationMs, onError: told, ...(session ? { session } : {}) })
      : undefined;
    const opts = (this.options = deepFreeze(data));
    const settings: Settings = {
      ...opts,
      instance: this.instance,
      fallbackAfterMs: opts.fallbackAfterMs ?? 3 * opts.leaseDurationMs,
      sessionFallbackMs: sessionFallbackMs({ sessionBackstopMs: SESSION_QUIET_LEASES * opts.leaseDurationMs, ...opts }),
      candidate: this.candidate !== undefined,
      decideFollower: decisions.decideFollower,
      leadFromRead: decisions.leadFromRead,
      decideLeader: decisions.decideLeader,
      onWorkFailure: decisions.workFailure(opts),
      stampErrorMs: Math.max(STAMP_ERROR_MS, opts.maxClockErrorMs),
      clockMeasured: opts.clockSync !== 'none',
      promptly: internals.promptly === true,
      // how long after a renewal was sent a coordinated leader sends the next: the renew interval less PHASE_STEP_MS
      cadenceMs: renewCadenceMs(this.renewIntervalMs, opts.retryPeriodMs),
      everyRetryPeriod: opts.mode === 'NoCoordination' && opts.renewIntervalMs === undefined,
    };
    // a missing table met by NoCoordination's first look (firstLook) is looked at (DescribeTable), as the candidacy's is
    const startUp = new StartUp<void>(subject, opts.tables, { state: tableState(requests), clock: machine }, uses);
    // the user's callback failing is the user's fault, told as such: never named as a DynamoDB fault (faultReporter's namedFault)
    const threw = (callback: string) => (e: unknown) => told(new Error(`${subject}: ${callback} threw: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}; the elector goes on as if it had returned`, { cause: e }));
    this.x = { settings, lock, sessions, time, machine, client, requests, callbacks, report, told, threw, retryDelayMs: decisions.retryDelayMs, detect: detect ?? (async (signal) => detectPlatform({ ...((await sendsToThisMachine(client)) ? { ec2: false } : {}), clock: machine, signal, onUnanswered: (e) => told(new Error(`${subject}: ${e.message}`, { cause: e })) })), push, session, startUp, phase: 'idle', failure: undefined, platform: undefined, nap: undefined, reads: undefined, wokenAt: [], loopSteps: 0, failures: 0, triedAt: undefined, napEnds: undefined, work: undefined, deadline: undefined, deadlineAt: undefined, deadlineToken: undefined, cancelled: false, clocks: undefined, sleepGauge: { gauge: 0, at: 0 }, aside: new Set(), takeInDoubt: undefined, stop, stepDown: () => (internals.stepDowns ?? (machine === systemClock ? leaving : undefined))?.(internals.exits?.who ?? subject, internals.exits?.call), leads: (token) => (machine === systemClock && opts.releaseOnCancel ? leadingTerm(internals.exits?.who ?? subject, token, () => this.runsOut(token), internals.exits?.call) : undefined), led: undefined };
    this.ready = startUp.ready;
  }

  /** Clock skew preventions so far, and this worker's measurement of DynamoDB's clock. */
  get stats(): ElectorStats {
    const t = this.x.time;
    const c = t.check(this.options.maxClockErrorMs);
    return { clockSkewPreventions: this.known.preventions, clockSynced: c.ok, clockErrorMs: 'errorMs' in c ? c.errorMs : undefined, clockOffsetMs: t.wallOffsetMs() };
  }

  /** The moment a step decides at: monotonic now, DynamoDB's time as measured, the clock's jumps so far, the session to write, whether wakes reach it. */
  private moment(): Moment {
    const t = this.x.time;
    const now = t.monotonic();
    const session = this.sessionToWrite();
    const sessionStamp = typeof session === 'string' ? sessionSeam(this.x.session!).stamp(session) : undefined;
    // in a stop: what is left of its wait on DynamoDB (a pause after a fault must fit in it: step.ts leavingPause)
    const stopLeftMs = this.x.stop.remainingMs;
    return { now, clock: t.check(this.options.maxClockErrorMs), offset: t.now() - now, jumps: t.jumps, session, pushLive: this.pushLive, sessionCadences: this.x.sessions.cadences, sessionStamp, ...(Number.isFinite(stopLeftMs) ? { stopLeftMs } : {}) };
  }

  /** How often this worker renews while it leads (the `renewIntervalMs` option, or its default). */
  get renewIntervalMs(): number {
    const o = this.options;
    return o.renewIntervalMs ?? defaultRenewIntervalMs(o);
  }

  /**
   * Whether this worker leads now (between onStartedLeading and onStoppedLeading). It judges the
   * renew deadline on the monotonic clock at the moment it is asked: a process that was frozen past
   * its deadline (a Lambda between invocations, SIGSTOP, a long pause) learns here that it stopped
   * leading — the term is stopped and the signal aborted — before any of its timers has run. One
   * whose monotonic clock stood still while the machine slept (a laptop's suspend) is inside its
   * deadline when it wakes: its wall clock, gained on the monotonic one, has it read its lease at
   * once, so it is told within a round trip if another leads now.
   */
  isLeader(): boolean {
    if (this.known.lead) this.note({ kind: 'asked' });
    this.lookAtClocks();
    return this.known.lead !== undefined;
  }

  /**
   * While leading: its clock since boot (else its wall clock) compared with its monotonic one.
   * Gained on it (sleptSince), the machine slept: its renew deadline counts the sleep (past it, it
   * stops), and it reads its lease at once, as woken. `seenMs`: DynamoDB's Date headers showed a
   * sleep that long.
   */
  private lookAtClocks(seenMs?: number): void {
    const lead = this.known.lead;
    if (!lead) return;
    const { x, options: o } = this;
    const low = x.sleepGauge;
    const now = sleepGauge(x.machine);
    const gained = gainedSince(low, now);
    // a gain too small to count may be the clock's rounding: not counted, nor forgotten (only a fall below the low, let
    // rise by the drift since, is taken: the rounding's top, and drift, which over an hour would add up to a "sleep")
    if (!sleptSince(gained, seenMs)) return void (gained <= 0 && (x.sleepGauge = now));
    x.sleepGauge = now;
    // the clock since boot counts only a sleep; the wall clock stands in for it only where it is what the stamps go by (clockSync 'none'): an NTP step moves it too
    const trusted = x.machine.sinceBoot !== undefined || o.clockSync === 'none';
    // all it gained, drift included: a sleep is never counted short
    if (trusted) this.note({ kind: 'slept', ms: sleepToCount(now.gauge - low.gauge) });
    this.note({ kind: 'wake', revision: undefined });
  }

  /** The fencing token of the current term; undefined when not leading (judged when read, as isLeader() judges). */
  get fencingToken(): number | undefined {
    return this.isLeader() ? this.known.lead?.term.fencingToken : undefined;
  }

  /**
   * The holder last observed (this worker included, until a read of the lease shows another): not
   * whether this worker leads now, which isLeader() says. Reading it judges this worker's own term
   * as isLeader() does, so the two agree from then on.
   */
  get leader(): string | undefined {
    if (this.known.lead) this.isLeader();
    return this.known.lastLeader;
  }

  /**
   * Where to reach the leader: this worker's own `advertise` while it leads, else the address the
   * holder advertised (the lease's `holderAddress`) as this worker last read the lease. Undefined
   * when the holder advertised none, or the lease last read had no holder.
   */
  get leaderAddress(): string | undefined {
    // a term past its renew deadline (an event loop stalled past it) ends here, not at the deadline's timer
    if (this.known.lead && this.isLeader()) return this.options.advertise;
    const row = this.known.lastRaw?.item;
    return row?.holderIdentity !== undefined && row.holderIdentity === this.known.lastLeader ? row.holderAddress : undefined;
  }

  /**
   * client-go's healthz adaptor: a leader whose term, as it last renewed it, is expired by more
   * than the tolerance is unhealthy (it is stuck: its renew deadline should have stopped it). A
   * leader asked looks at its clocks too, as isLeader() does. So is a worker whose DynamoDB client
   * has been held on its credential provider for longer than the lease duration and the tolerance,
   * and at least CREDENTIALS_STUCK_MS (the AWS SDK holds every request of the client on that one
   * call until it ends, which may be never: a restart is what ends it).
   */
  healthy(toleranceMs = this.options.healthToleranceMs): boolean {
    this.lookAtClocks();
    const now = this.x.time.monotonic();
    if (heldOnCredentialsMs(this.x.client, this.x.machine.monotonic()) > Math.max(CREDENTIALS_STUCK_MS, this.options.leaseDurationMs + toleranceMs)) return false;
    const l = this.known.lead;
    return !l || now - l.renewedAt <= this.options.leaseDurationMs + toleranceMs;
  }

  /**
   * Runs the user's DynamoDB transaction with one more condition: the lease is still in the term
   * this worker leads when it is called (holder and fencing token). Work started by
   * onStartedLeading should write with its own term's (`term.fencedWrite`, LeadingTerm), which a
   * later term of this worker never lets through. A deposed or paused leader's write fails with a
   * FencingError and writes nothing; refused so by DynamoDB, it also has the leader read its lease at
   * once, so it stops (deposed) then rather than at its next renewal. One still unanswered when the
   * term ends (a black-holed connection) is abandoned: it rejects with a LeaseLostError then, and
   * lands, if ever, only while the lease is still in this term. One unanswered within the elector's request bound (its retry
   * period, at least 5 s) while the term lives is abandoned as a timeout (an Error named
   * TimeoutError, as the AWS SDK names one): it may have landed, in this term. The fence's check reads the lease row, so a write that meets
   * this worker's own renewal of it (or another fenced write) is cancelled, nothing written, and
   * sent again a moment later (20 ms, half again as long each time, jittered), FENCE_CONFLICT_TRIES
   * (4) tries at most; then it rejects with DynamoDB's TransactionCanceledException (TransactionConflict
   * at the last item), which says to send it again. (The renewal, refused in turn by a transaction in
   * flight, tries again within moments: busy fenced writes cost no term.) One DynamoDB throttled
   * (ThrottlingError or ProvisionedThroughputExceeded at an item: nothing written, and the AWS SDK
   * does not send a cancelled transaction again) is sent again after a longer pause (100 ms, twice
   * as long each time, jittered), THROTTLED_TRIES (5) tries at most, each fenced anew; then it
   * rejects with DynamoDB's TransactionCanceledException, its message naming the items throttled
   * (`TransactItems[i]`) and what to do. Its own condition
   * failing (the fence passed) is a ConflictError naming the items, DynamoDB's error its cause.
   */
  fencedWrite(input: TransactWriteItemsCommandInput): Promise<TransactWriteItemsCommandOutput> {
    return this.transact(this.current(), input);
  }

  /**
   * Writes one of the application's own items, fenced by the token the item carries
   * (`fencedItemWrite`), in the term this worker leads when it is called: refused with a
   * FencingError when this worker is not leading, or when a newer term has written the item. Work
   * should use its own term's (`term.fencedItemWrite`, LeadingTerm). Needs no transaction: works on
   * multi-Region tables too. One still unanswered when the term ends, or after the elector's
   * request bound, is abandoned, as fencedWrite's is.
   */
  fencedItemWrite(input: FencedItemInput, attribute?: string): Promise<PutItemCommandOutput | UpdateItemCommandOutput> {
    return this.itemWrite(this.current(), input, attribute);
  }

  /** The term this worker leads now and the signal that ends it, judged at the moment asked (isLeader); undefined: it does not lead. */
  private current(): FencedBy | undefined {
    const term = this.isLeader() ? this.known.lead?.term : undefined;
    return term && { term, ends: this.x.work?.signal ?? AbortSignal.abort('renewDeadline') };
  }

  /** fencedWrite in the term `by` (refused when there is none: its worker does not lead, or the term has ended). */
  private transact(by: FencedBy | FencingError | undefined, input: TransactWriteItemsCommandInput): Promise<TransactWriteItemsCommandOutput> {
    if (this.options.multiRegion) return Promise.reject(new RangeError(NO_TRANSACTIONS));
    return this.inTerm(by, (term, signal) => fencedTransactWriteInTerm(this.x.requests, { table: this.options.tables.leases, leaseName: this.options.leaseName, term, signal }, input, { clock: this.x.time, retryPeriodMs: this.options.retryPeriodMs }));
  }

  /** fencedItemWrite in the term `by`: a refusal by the item's own fence is marked so (ITEM_REFUSALS). */
  private itemWrite(by: FencedBy | FencingError | undefined, input: FencedItemInput, attribute?: string): Promise<PutItemCommandOutput | UpdateItemCommandOutput> {
    return this.inTerm(by, (term, signal) =>
      fencedItemWrite(this.x.requests, { leaseName: this.options.leaseName, fencingToken: term.fencingToken, signal, ...(attribute !== undefined ? { attribute } : {}) }, input).catch((e: unknown) => {
        if (e instanceof FencingError) ITEM_REFUSALS.add(e);
        throw e;
      }),
    );
  }

  /** `write` in the term `by`, abandoned with a LeaseLostError if that term ends (its work's signal aborts) before it is answered. */
  private inTerm<T>(by: FencedBy | FencingError | undefined, write: (term: Term, signal: AbortSignal) => Promise<T>): Promise<T> {
    if (by instanceof FencingError) return Promise.reject(by);
    if (!by) return Promise.reject(new FencingError(this.options.leaseName, undefined, 'this worker is not leading'));
    const { term, ends } = by;
    const sent = (signal: AbortSignal) =>
      write(term, signal).catch((e: unknown) => {
        this.refusedBy(e, ends);
        throw e;
      });
    return untilTermEnds(ends, () => new LeaseLostError(this.options.leaseName, term.fencingToken, ends.reason as StopReason), sent);
  }

  /** A write of the term `ends` ends failed with `e`: refused by DynamoDB's fence, the lease moved on, so the leader reads it now (as woken), not at its next renewal. */
  private refusedBy(e: unknown, ends: AbortSignal): void {
    if (e instanceof FencingError && !ends.aborted) this.note({ kind: 'wake', revision: undefined });
  }

  /**
   * Where run() is: idle, starting, running (following or leading), stopping, stopped, or failed (it
   * rejected). What a readiness check reports: an elector `running` and healthy() takes part as it
   * should, whether or not it leads (lib/sdk/health.ts).
   */
  get runPhase(): ElectorRunPhase {
    return this.x.phase;
  }

  /** Why run() rejected, once runPhase is 'failed' (the value it rejected with); else undefined. */
  get runError(): unknown {
    return this.x.phase === 'failed' ? this.x.failure : undefined;
  }

  /** Where this worker runs, once run() has looked (undefined: not known, or `platform: 'none'`). */
  get platform(): Platform | undefined {
    return this.x.platform;
  }

  /**
   * Takes part until `signal` aborts: looks up the platform, runs the candidacy (coordinated
   * mode; NoCoordination reads the lease once instead), then polls and leads as the options say;
   * resolves after stepping down, withdrawing the candidacy and releasing the lease (if releaseOnCancel). Rejects only for what can never
   * succeed, and `ready` rejects with the same: a client that can never send (no region, an endpoint
   * that is not a URL or has no host; nothing is sent), a TableNotFoundError (the `tables` option names no
   * table), a TableKeyError met at start-up (by the candidacy, or by NoCoordination's first read: a table keyed otherwise than Conclave's), a
   * ValidationError on `multiRegion` (the table is a global table without multi-Region strong
   * consistency), a DuplicateIdentityError (another live process stands under this identity), or a
   * second run(). Called without a `signal` (plain JavaScript's `run()`), it rejects at once with a
   * ValidationError naming `signal` and claims nothing: called again with one, it runs. Every other fault, at start-up or later (DynamoDB unreachable, a
   * denied or throttled request, a malformed row), goes to onError, once per try, and is tried
   * again with backoff (lib/sdk/faults.ts). Once per instance: a new start-up is a new LeaderElector.
   */
  async run(signal: AbortSignal): Promise<void> {
    const x = this.x;
    // checked before the claim: a call that cannot run leaves the start-up to a call that can
    if (!isSignal(signal)) throw new ValidationError(`run() argument of LeaderElector "${this.options.identity}" of lease "${this.options.leaseName}"`, [{ field: 'signal', message: NO_SIGNAL }]);
    x.startUp.claim('LeaderElector');
    x.phase = 'starting';
    // its stop's wait on DynamoDB counts from the signal (a SIGTERM), whatever is in flight then; its
    // Session's (its row's delete comes after) lasts at least as long, whenever its own signal aborted
    const stopping = () => {
      x.cancelled = true;
      x.stop.doing = STEPPING_DOWN;
      x.stop.start();
      if (x.session) sessionSeam(x.session).stopAtLeast(x.stop.remainingMs);
    };
    if (signal.aborted) stopping();
    else signal.addEventListener('abort', stopping, { once: true });
    try {
      await this.takePart(signal);
      x.phase = 'stopped';
    } catch (e) {
      x.phase = 'failed';
      x.failure = e;
      throw e;
    } finally {
      signal.removeEventListener('abort', stopping);
      x.stop.end();
      // run() settled: no term is led any more, whatever path ended it (an exit from now on is no exit while leading)
      x.led?.();
      x.led = undefined;
      this.tellUndone();
    }
  }

  /**
   * onError is told, once, what its stop left undone, and that nothing waits on it: what its budget
   * cut (STOP_BUDGET_MS ran out), or else its leaving of the lease row given up (step.ts leave: every
   * try within the budget failed, or lost its race), with when a term it did not release runs out.
   */
  private tellUndone(): void {
    const { x, options: o } = this;
    const undone = x.stop.leftUndone;
    const left = this.known.leaving?.leaseLeft;
    const subject = `LeaderElector "${o.identity}" of lease "${o.leaseName}"`;
    const term = left !== undefined && left !== 'unread' && left.kind === 'release' ? left.term.fencingToken : undefined;
    const runsOut = term !== undefined ? this.runsOut(term) : undefined;
    if (undone.length > 0) {
      x.told(new Error(`${subject}: its stop left undone ${undone.join('; ')}: DynamoDB did not answer within the ${x.stop.ms / 1000} s a stop waits for it, and run() resolved. Nothing waits on them: a term not released runs out a lease duration after its last renewal${runsOut ? ` (its term with fencing token ${term}: ${runsOut})` : ''}, a successor's name left on the row is passed over, and a candidate row left behind answers no election and is collected once stale`));
      return;
    }
    if (left === undefined) return;
    const faults = this.known.leaving?.faults ?? 0;
    // its reads all spent on lost races (afterLeaving), whatever faults came before: no want of time
    const racesLost = (this.known.leaving?.reads ?? 0) >= LEAVING_READS;
    const why =
      faults > 0 && !racesLost
        ? `after ${faults} fault${faults === 1 ? '' : 's'} (each told above), no time left of the ${x.stop.ms / 1000} s a stop waits on DynamoDB for another try`
        : left === 'unread'
          ? 'its read failed (told above)'
          : 'the row moved on under each try, or a fault (told above)';
    const what =
      left === 'unread'
        ? `it could not read the lease to leave it (${why}): whatever the row still names it for is left there (a term of its own runs out a lease duration after its last renewal; its name as successor is passed over)`
        : left.kind === 'release'
          ? `its release of the term (fencing token ${term}) was not seen to land (${why}): the term is left to run out, ${runsOut ?? 'a lease duration after its last renewal'}, before another worker can lead`
          : left.kind === 'decline'
            ? `its giving up of its name as ${left.role === 'second' ? 'second successor' : 'successor'} was not seen to land (${why}): the coordinator passes over a successor that is gone`
            : `its kept term's move off its session was not seen to land (${why}): the term runs out on its stamp`;
    x.told(new Error(`${subject}: its stop tried nothing more and run() resolved: ${what}. Nothing waits on it`));
  }

  /** When the term with fencing token `token` runs out as this worker last renewed it (a lease duration after; DynamoDB's time as measured), if it led that term; else undefined. */
  private runsOut(token: number): string | undefined {
    const { x, options: o } = this;
    if (x.deadlineAt === undefined || x.deadlineToken !== token) return undefined;
    const inMs = x.deadlineAt - o.renewDeadlineMs + o.leaseDurationMs - x.time.monotonic();
    return `a lease duration (${o.leaseDurationMs / 1000} s) after its last renewal, at about ${new Date(x.time.now() + inMs).toISOString()}${inMs > 0 ? ` (in ${(inMs / 1000).toFixed(1)} s)` : ''}`;
  }

  /**
   * The tables whose conditions this elector relies on, for the multiRegion check: the leases
   * table and the identities tables, where a holder's term held on a session is judged by the
   * session's renewals (in either mode: a NoCoordination follower judges one so too); coordinated,
   * also the candidates table (its candidacy). A table that does not exist is skipped by the check.
   */
  private checkedTables(): CheckedTable[] {
    const { tables, mode } = this.options;
    const identities = [...new Set([tables.identities, ...(this.x.session ? [this.x.session.options.tables.identities] : [])])].map((name) => ({ role: 'identities' as const, name }));
    const leases = { role: 'leases' as const, name: tables.leases };
    return mode === 'NoCoordination' ? [leases, ...identities] : [leases, { role: 'candidates', name: tables.candidates }, ...identities];
  }

  /** run() once claimed: start up, then follow and lead until `signal` aborts, then step down. */
  private async takePart(signal: AbortSignal): Promise<void> {
    const { x, options: o } = this;
    const { startUp, time, push, session } = x;
    // a client that can never send (no region, an endpoint with no host): rejected before anything
    await startUp.checkClient(x.client, time, signal);
    // before anything is written: multiRegion on an eventually consistent global table can never be safe
    // bounded as the elector's own requests are: a DescribeTable never answered leaves the option unchecked (told), and the worker starts
    // (a stop ends it: unanswered, it would hold run() for its bound and then tell of a check nobody waits for)
    if (o.multiRegion) {
      try {
        await checkMultiRegion(boundedClient(x.client, x.time, requestBoundMs(o.retryPeriodMs), signal), this.checkedTables(), `options for lease "${o.leaseName}"`, x.report, signal);
      } catch (e) {
        if (signal.aborted) return startUp.failed(signal.reason);
        throw startUp.fail(e);
      }
    }
    const standing = new AbortController();
    let candidacy: Promise<void> | undefined;
    // run() cancelled while the candidacy is still trying to register: it stops trying
    const stopStanding = () => standing.abort(INTERNAL_STOP);
    signal.addEventListener('abort', stopStanding, { once: true });
    try {
      const p = o.platform;
      // a stop during detection ends the wait at once (the process's shared detection goes on for its other electors)
      x.platform = p === 'none' ? undefined : p === 'detect' ? await x.detect(signal) : p;
      if (signal.aborted) return startUp.failed(signal.reason);
      if (this.candidate) {
        this.candidate.setPlatform(x.platform);
        this.candidate.setAddress(o.advertise);
        // faults it can outlive are retried inside (reported to onError); only a missing table rejects
        candidacy = this.candidate.run(standing.signal);
        await Promise.race([this.candidate.ready, candidacy]).catch((e: unknown) => {
          if (!signal.aborted) throw e;
        });
        if (signal.aborted) {
          await candidacy;
          return startUp.failed(signal.reason);
        }
      } else if (!(await this.firstLook(signal))) return startUp.failed(signal.reason);
    } catch (e) {
      throw startUp.fail(e);
    } finally {
      signal.removeEventListener('abort', stopStanding);
    }
    startUp.started();
    x.phase = 'running';
    const unsubscribe = time.onJump((jumpMs) => this.note({ kind: 'clockJump', jumpMs }));
    const unsleep = time.onSleep((sleptMs) => this.lookAtClocks(sleptMs));
    const unwatch = push?.watch(o.leaseName, (w) => this.note({ kind: 'wake', revision: w?.revision }), this.instance);
    const detach = session
      ? sessionSeam(session).attach({ renewed: (name, sentAt, ended) => this.note({ kind: 'sessionRenewed', name, sentAt, ended }), ended: (name) => this.note({ kind: 'sessionEnded', name }) })
      : undefined;
    // a request of this process (the Session's, another elector's) answered after failures: a backoff nap ends
    // (the clock's random is drawn only for a worker backing off: the one the step jitters)
    const unrecovered = onRecovered(x.client, () => this.note({ kind: 'endpointRecovered', failures: x.failures, triedAt: x.triedAt, random: x.failures > 0 ? time.random() : 0 }));
    const reads = (x.reads = new AbortController());
    const abandonReads = () => reads.abort(READ_ABANDONED);
    signal.addEventListener('abort', abandonReads, { once: true });
    try {
      while (!signal.aborted) {
        // when this step's first request goes out: a backoff after it fails counts from here, so a
        // request left unanswered until its bound (a black-holed DynamoDB) waits that bound once, not
        // that bound and then the whole backoff (DynamoDB back meanwhile: read again within the backoff)
        const triedAt = (x.triedAt = time.monotonic());
        x.loopSteps++;
        try {
          this.lookAtClocks();
          // following: the gauge from before this step, so a sleep while a take is in flight counts against the term it starts
          if (!this.known.lead) x.sleepGauge = sleepGauge(x.machine);
          if (this.known.wakePending) x.wokenAt = [...x.wokenAt.slice(1 - WOKEN_READS), time.monotonic()];
          await this.feed({ kind: 'poll', pushLive: this.pushLive });
          if (x.failures > 0) {
            x.failures = 0;
            recovered(x.client);
          }
        } catch (e) {
          // a fault: told once per try, and tried again after the backoff (a follower) or at the
          // leader's retry period (its renew deadline guards its term). A row the schema refuses is
          // no load to shed: read again every retry period, so its repair is seen at once
          x.failures = faultKind(e) === 'invalidRow' ? 1 : x.failures + 1;
          this.report(e);
        }
        // (cancelled during the step: no nap — a nap begun on an aborted signal would run its whole length before the step-down)
        if (!this.known.wakePending && !signal.aborted) await this.napFor(x.failures > 0 && !this.known.lead ? Math.max(0, triedAt + x.retryDelayMs(x.failures, o.retryPeriodMs, time.random()) - time.monotonic()) : nextStepDelay(x.settings, this.known, this.moment(), () => time.random()), signal);
        // woken (before the nap or during it): a flood of wakes is read WOKEN_READS times a window at most
        for (let ms; this.known.wakePending && !signal.aborted && (ms = wokenReadDelay(x.wokenAt, time.monotonic())) > 0; ) await this.napFor(ms, signal);
      }
    } finally {
      x.phase = 'stopping';
      signal.removeEventListener('abort', abandonReads);
      x.reads = undefined;
      // leading, it hands over or releases from here: a process that exits before that is answered is told why (leaving.ts)
      const stepDown = this.known.lead && this.options.releaseOnCancel ? x.stepDown() : undefined;
      unrecovered();
      unsubscribe();
      unsleep();
      unwatch?.();
      try {
        await this.besideDone();
        // With an heir, lead on until the next renewal would be due and hand the term over then. The
        // candidacy stands until then: withdrawn earlier, the coordinator would re-elect meanwhile.
        const led = await this.feed({ kind: 'cancel' });
        await this.besideDone();
        // Candidacy goes before the lease is released, so the election the release starts cannot
        // pick this departing worker (it would never confirm, and its term would have to run out).
        x.stop.doing = WITHDRAWING;
        standing.abort(INTERNAL_STOP);
        await candidacy;
        // the lease left so that no term waits for this worker (step.ts leave): released, given up, or left to run out; a write
        // onto its session in doubt settled before the hold goes (else the hold stays); a term it keeps taken off its live session
        x.stop.doing = LEAVING_LEASE;
        await this.feed({ kind: 'leave', led, held: x.takeInDoubt?.session });
      } finally {
        stepDown?.();
      }
      detach?.(); // after the release: the session outlives every term held on it
    }
  }

  /**
   * NoCoordination's start-up: no candidacy writes a row before it takes part, so a first read of
   * the lease does what the candidacy's first write does in coordinated mode. A table missing (or
   * keyed otherwise) is thrown (run() rejects with a TableNotFoundError or TableKeyError), one being
   * created is waited for; any other fault is told to onError and tried again with the start-ups'
   * backoff. False: run()'s signal aborted first.
   */
  private async firstLook(signal: AbortSignal): Promise<boolean> {
    const { x } = this;
    for (let failures = 1; ; failures++) {
      // when this try goes out: the backoff after it fails counts from here (a try left unanswered waited its bound already)
      const triedAt = x.time.monotonic();
      try {
        await raced(x.lock.get(false, signal), signal);
        return true;
      } catch (e) {
        if (signal.aborted) return false;
        // a row the schema refuses is in a table that is there: the loop reads it again every retry period (and tells it)
        if (faultKind(e) === 'invalidRow') return true;
        if (await x.startUp.cannotStart(e)) throw e;
        // a fault it can outlive (unreachable, denied, throttled, a table being created): told, tried again
        x.report(e);
        await new Nap(x.time, Math.max(0, triedAt + x.retryDelayMs(failures, START_RETRY_MS, x.time.random()) - x.time.monotonic()), signal).done;
        if (signal.aborted) return false;
      }
    }
  }

  /**
   * One write a stopping elector leaves the lease with: a release of its term, a decline of its
   * name as successor (the row at the revision read), or a kept term's move off its session (a
   * renewal conditioned on its token, stamped as leavingKept says). A release or a move off the
   * session that lands is announced to the lease's followers (endWith): quiet while a session
   * vouched for the term, they read it now. A decline is not announced.
   */
  private async leavingWrite(m: LeavingWrite): Promise<WriteOutcome> {
    const x = this.x;
    switch (m.kind) {
      case 'release':
        return this.endWith(() => x.lock.release(m.term, x.time.now()), undefined, m.term);
      case 'offSession':
        return this.endWith(() => x.lock.renew(m.term, { now: m.stamp, leaseDurationSeconds: m.seconds, session: null }));
      case 'decline':
        try {
          return (await x.lock.decline(m.read, m.role)) ? 'landed' : 'refused';
        } catch (e) {
          x.report(e);
          // unanswered on every try, it may have landed: decided again from a new read, as a release is
          return mayHaveLanded(e) ? 'unknown' : 'failed';
        }
    }
  }

  /**
   * A write that puts a term on `session` (a take, an electee's confirmation, or a leader's renewal
   * off no session): failed in a way that may have landed (its answer lost), the term it may have
   * written is kept alive by nobody's knowing it: that session's renewals are held until this
   * elector reads the lease or leads a term it knows is on that session (doubtRead, settleDoubt).
   */
  private putOnSession<T>(sent: Promise<T>, session: string | null | undefined, what: PutOnSession): Promise<T> {
    if (typeof session !== 'string') return sent;
    return sent.catch((e: unknown) => {
      if (mayHaveLanded(e)) this.doubtTake(session, what);
      throw e;
    });
  }

  /** A take (or confirmation) on `session` in doubt: its renewals held (one hold per elector: a later session means the earlier ended). */
  private doubtTake(session: string, what: PutOnSession): void {
    const { x, options: o } = this;
    if (x.takeInDoubt?.session === session || !x.session) return;
    x.takeInDoubt?.release();
    const release = sessionSeam(x.session).hold(session, `a ${what} of lease "${o.leaseName}" naming it may have landed unanswered, and its elector has not read the lease since`);
    x.takeInDoubt = { session, release };
  }

  /** A consistent read of the lease answered: a take in doubt is settled unless the row shows a term of this start-up on its session (it is led first: settleDoubt). */
  private doubtRead(lease: Lease | undefined): void {
    const d = this.x.takeInDoubt;
    if (!d || (lease?.holderInstance === this.instance && lease.session === d.session)) return;
    this.settleDoubt();
  }

  /**
   * Stopping on a process that runs a Session: `term` left on the lease is left to run out on its
   * process's session rows (step.ts leftTerm, SessionSeam.leave), dropped there once a consistent
   * read of the lease shows it no more; else the process's renewals for its other electors would keep
   * it alive for ever, nobody leading it. Returns the stamp it was left at.
   */
  private leaveTerm(term: { readonly token: number; readonly instance: string }): number {
    const { x, options: o } = this;
    const lock = x.lock;
    return sessionSeam(x.session!).leave(o.leaseName, term, o.leaseDurationMs, async () => showsLeftTerm((await lock.get(true)).item, term));
  }

  /** The take in doubt settled: its session renewed again. */
  private settleDoubt(): void {
    const d = this.x.takeInDoubt;
    this.x.takeInDoubt = undefined;
    d?.release();
  }

  /** The session a write of this worker's term should name: the live one's, or null to take a term off a session that is gone (undefined: no session option, name nothing). */
  private sessionToWrite(): string | null | undefined {
    return this.x.session ? (this.x.session.name ?? null) : undefined;
  }

  /** Sleeps until the next step is due, or until a wake (or `signal`) ends the sleep. */
  private napFor(ms: number, signal: AbortSignal): Promise<void> {
    const x = this.x;
    const nap = (x.nap = new Nap(x.time, ms, signal));
    return nap.done.then(() => void (x.nap === nap && (x.nap = undefined)));
  }

  /** Ends the nap under way at monotonic `at` (a recovery's wake, step.ts recoveryWake), unless one already set when it ends: its jitter drawn once. */
  private endNapAt(at: number): void {
    const x = this.x;
    const nap = x.nap;
    if (!nap || x.napEnds === nap) return;
    x.napEnds = nap;
    const timer = x.time.setTimer(Math.max(0, at - x.time.monotonic()), () => nap.end());
    void nap.done.then(() => timer.cancel());
  }

  /** Whether wakes reach this worker now: quiet followers then read rarely, and a cancelled leader hands over at once. */
  private get pushLive(): boolean {
    return this.x.push?.healthy() === true;
  }

  /** Feeds `e` to the step and carries out its effects, each answer fed back, until it asks for nothing more; returns what a step-down led. */
  private async feed(e: Event): Promise<SteppedDown> {
    // a term given up while running (preempted, its work failed) is handed over or released in this step: noted until it is answered (leaving.ts)
    let stepDown: (() => void) | undefined;
    try {
      return await this.steps(e, () => (stepDown ??= this.x.stepDown()));
    } finally {
      stepDown?.();
    }
  }

  /** feed's loop; `givingUp` is called as a term is given up (its hand-over or release follows in this step). */
  private async steps(e: Event, givingUp: () => void): Promise<SteppedDown> {
    let next: Event | undefined = e;
    let led: SteppedDown;
    while (next) {
      const { state, effects } = decide(this.x.settings, this.known, next, this.moment());
      this.known = state;
      // leading a term it knows is on that session: renewed and stopped by its rules (a leader's
      // renewal onto it in doubt is settled once one is answered, or by a read)
      if (state.lead && state.lead.session === this.x.takeInDoubt?.session) this.settleDoubt();
      next = undefined;
      // the process's electors share a session's cadence: set before anything is awaited, so the next step of any of them sees it
      for (const f of effects) if (f.kind === 'sessionCadence') this.x.sessions.setCadence(f.name, f.phase);
      for (const f of effects) {
        if (f.kind === 'steppedDown') led = f.led;
        if (f.kind === 'stop' && (f.reason === 'preempted' || f.reason === 'workFailed')) givingUp();
        // a leader waits for an answer only as long as the step says (withinMs): abandoned then, aborted where the lock can
        const bound = 'withinMs' in f && f.withinMs !== undefined ? abortAfter(this.x.time, f.withinMs) : undefined;
        const io = this.carry(f, bound?.signal);
        if (!io) continue;
        try {
          next = io.answer(await (bound ? raced(io.sent, bound.signal) : io.sent));
        } catch (err) {
          // a conflict where the step expects one (a vacancy report, or its acknowledgement): the row moved on meanwhile
          if (io.conflict && err instanceof ConflictError) next = io.conflict;
          else if (io.fault) {
            this.x.report(err);
            next = typeof io.fault === 'function' ? io.fault(err) : io.fault;
          } else throw err;
        } finally {
          bound?.cancel();
        }
      }
    }
    return led;
  }

  /** An event from outside the step's own reads and writes (a timer, a wake, the session, the clock, the work): decided and carried out now. */
  private note(e: Event): void {
    this.aside(this.feed(e).catch(this.report));
  }

  /** onError, told `e`: not a read the stop abandoned. */
  private readonly report = (e: unknown): void => {
    if (e !== READ_ABANDONED) this.x.report(e);
  };

  /** `read`, abandoned (rejected with READ_ABANDONED) as run()'s signal aborts during the loop. */
  private untilStop<T>(read: Promise<T>): Promise<T> {
    const reads = this.x.reads;
    return reads ? raced(read, reads.signal) : read;
  }

  /** Work carried out beside the loop (a chain `note` began, a write not waited on): run() resolves only once it is done. */
  private aside(p: Promise<unknown>): void {
    const { aside } = this.x;
    aside.add(p);
    void p.finally(() => aside.delete(p));
  }

  /** Until nothing is carried out beside the loop (a work failure's hand-over, say, must land before run() steps down and resolves). */
  private async besideDone(): Promise<void> {
    while (this.x.aside.size > 0) await Promise.allSettled([...this.x.aside]);
  }

  /** The lease's duration, as written on the row (whole seconds). */
  private get seconds(): number {
    return Math.ceil(this.options.leaseDurationMs / 1000);
  }

  /** Confirms or renews `term` (onto `session`, or off one: null), stamped with DynamoDB's time as this worker measures it; `signal` abandons it. */
  private renew(term: Term, session: string | null | undefined, signal?: AbortSignal): Promise<Lease | undefined> {
    return this.x.lock.renew(term, { now: this.x.time.now(), leaseDurationSeconds: this.seconds, session, signal });
  }

  /**
   * A hand-over, a release or an end of a term: announced to the other followers (a wake) once it
   * landed, on the lease's topic and on the process topic of whoever leads next (a hand-over's heir,
   * or the successor a vacated row names: it takes the vacancy). `refused`: the row moved on (a lost
   * race); a fault is reported, `unknown` where the write may have landed (mayHaveLanded), else `failed`.
   * `over`: the term of this start-up the write hands over or releases, named once it landed on the
   * process's session rows (SessionSeam.over), whose renewals for its other electors would show the
   * term renewed on to a successor that hears no wake and reads only them while the lease is quiet.
   */
  private async endWith(write: () => Promise<Lease | undefined>, heir?: string, over?: Term): Promise<WriteOutcome> {
    try {
      const l = await write();
      if (l) this.x.push?.wake(this.options.leaseName, l.revision, heir ?? (l.holderIdentity === undefined ? l.successorInstance : undefined));
      if (l && over && this.x.session) sessionSeam(this.x.session).over(this.options.leaseName, { token: over.fencingToken, instance: this.instance }, this.options.leaseDurationMs);
      return l !== undefined ? 'landed' : 'refused';
    } catch (e) {
      this.x.report(e);
      return mayHaveLanded(e) ? 'unknown' : 'failed';
    }
  }

  /**
   * Calls onStoppedLeading for the term with fencing token `token`, stopped for `reason`; a promise
   * it returns is waited for (`settled`), STOPPED_LEADING_WAIT_MS at most, and, where a hand-over
   * or release of the term follows (`handsOn`: preempted, workFailed, cancelled with
   * releaseOnCancel), only until the term's renew deadline: past it the term runs out whatever this
   * worker writes. Past its bound, onError is told once, and nothing waits for it any more. In a
   * stop (cancelled) it is counted in the stop's wait on DynamoDB, and bounded by what is left of
   * it less STOP_WRITES_MS (kept for the hand-over or release after it), as on a step-down while a
   * stop is under way (a work failing at the SIGTERM): a leader that led on for its heir
   * (HEIR_WAIT_MAX_MS) then ends within the stop's 10 s, inside the 30 s before SIGKILL
   * (uncounted, a 10 s callback and 10 s on DynamoDB after the heir's 15 s made 35; counted whole,
   * a slow callback left the hand-over unsent). Undefined: it returned no promise.
   */
  private stoppedLeading(reason: StopReason, token: number): { readonly settled: Promise<void>; readonly handsOn: boolean } | undefined {
    const { x, options: o } = this;
    const callback = `onStoppedLeading (reason ${reason}, term with fencing token ${token})`;
    const handsOn = reason === 'preempted' || reason === 'workFailed' || (reason === 'cancelled' && o.releaseOnCancel);
    const untilDeadline = handsOn && x.deadlineAt !== undefined ? Math.max(0, x.deadlineAt - x.time.monotonic()) : Infinity;
    // in a stop (cancelled, or a step-down while one is under way: a work failing at the SIGTERM),
    // the wait is counted in its wait on DynamoDB, STOP_WRITES_MS of it kept for the writes after the callback
    const stopping = Number.isFinite(x.stop.remainingMs);
    const untilStopEnds = stopping ? Math.max(0, x.stop.remainingMs - STOP_WRITES_MS) : Infinity;
    const ms = Math.min(STOPPED_LEADING_WAIT_MS, untilDeadline, untilStopEnds);
    const bound = ms >= STOPPED_LEADING_WAIT_MS ? `${ms / 1000} s` : `${Math.round(ms)} ms (${ms === untilStopEnds ? `the stop's 10 s on DynamoDB, less ${STOP_WRITES_MS / 1000} s kept for its writes` : "the term's renew deadline"})`;
    const late = () =>
      x.told(new Error(`LeaderElector "${o.identity}" of lease "${o.leaseName}": ${callback} did not settle within ${bound}: ${handsOn ? 'its hand-over or release of the term, and run(), went on without it' : 'run() no longer waits for it'}; it runs on in the process`));
    const settled = awaitedCallBack(() => x.callbacks.onStoppedLeading?.({ reason, fencingToken: token }), x.threw(callback), x.time, ms, late);
    // (a stop beginning during a step-down's wait counts what is left of it: the stop's 10 s run from its abort, the callback's bound from its start)
    return settled ? { settled, handsOn } : undefined;
  }

  /** Carries out one effect: a read or a write is sent, and its answer (`answer`) is the next event; `fault`: a fault is reported and answered so. `signal`: what abandons it (a renewal's request is aborted). */
  private carry(f: Effect, signal?: AbortSignal): { sent: Promise<unknown>; answer: (v: unknown) => Event | undefined; conflict?: Event; fault?: Event | ((e: unknown) => Event | undefined) } | undefined {
    const { x, options: o } = this;
    switch (f.kind) {
      case 'readLease': {
        // a take in doubt: a copy may not show it, so the row itself
        const consistent = f.consistent || x.takeInDoubt !== undefined;
        const answer = (raw: unknown): Event => {
          if (consistent) this.doubtRead((raw as LeaseRead).item);
          // no lease row: a new start-up of this identity puts its claim on the candidate row instead (LeaseCandidate.askForName);
          // one made anew, or no longer naming this worker successor: its candidate row may be gone too (LeaseCandidate.leaseSeen)
          if (this.candidate) leaseRowRead(this.candidate, (raw as LeaseRead).item);
          return { kind: 'leaseRead', raw: raw as LeaseRead };
        };
        return { sent: x.lock.get(consistent, x.reads?.signal), answer };
      }
      case 'readSession':
        // on multi-Region tables every read is strongly consistent, as the lease store's are
        // (one read the process's electors share: abandoned by this elector, not aborted)
        return { sent: this.untilStop(x.lock.session(f.name, f.shareMs, f.pendingMs, f.consistent || o.multiRegion, f.term)), answer: (read) => ({ kind: 'sessionRead', read: read as SessionRead }) };
      case 'readProcessSession':
        return { sent: this.untilStop(x.lock.processSession(f.named, f.process, f.term)), answer: (read) => ({ kind: 'processSessionRead', read: read as SessionRead }) };
      case 'readCandidates':
        return { sent: x.lock.candidates(), answer: (rows) => ({ kind: 'candidatesRead', instances: (rows as readonly Candidate[]).map((c) => c.identity) }), fault: { kind: 'candidatesRead', instances: undefined } };
      case 'renewCandidate':
        return { sent: this.candidate!.renew(), answer: () => ({ kind: 'candidateRenewed' }), ...(f.conflictIsNothing ? { conflict: { kind: 'candidateRenewed' } as const } : {}) };
      case 'reportVacancy':
        return { sent: x.lock.reportVacancy(f.read, o.identity, x.time.now()), answer: (lease) => ({ kind: 'reported', lease: lease as Lease | undefined }), conflict: { kind: 'reported', lease: undefined } };
      case 'confirm': {
        const session = this.sessionToWrite() ?? undefined;
        return { sent: this.putOnSession(this.renew(f.term, session), session, 'confirmation'), answer: (lease) => ({ kind: 'confirmed', lease: lease as Lease | undefined }) };
      }
      case 'endChanged':
        return { sent: this.endWith(() => x.lock.endChanged(f.term, x.time.now())), answer: () => undefined };
      case 'acquire':
      case 'takeAgain': {
        const session = this.sessionToWrite();
        const now = x.time.now();
        const record = f.kind === 'acquire' ? acquisition(f.read.item, { identity: o.identity, instance: this.instance, now, leaseDurationSeconds: this.seconds, electedBy: f.electedBy, address: o.advertise, platform: x.platform, session }) : takenAgain(f.read.item!, { now, leaseDurationSeconds: this.seconds, session });
        const answer = (got: unknown): Event => {
          const a = got as Acquired;
          // refused: whoever moved first holds the lease now, not the holder of the row last read (a follower's health check names it)
          if ('refusedBy' in a) this.refusedTake = { after: this.known.lastRaw, by: typeof a.refusedBy === 'string' ? a.refusedBy : undefined };
          return { kind: 'acquired', got: a };
        };
        return { sent: this.putOnSession(x.lock.acquire(f.read, record), session, 'take'), answer };
      }
      case 'release':
        return { sent: this.endWith(() => x.lock.release(f.term, x.time.now())), answer: () => ({ kind: 'released' }) };
      case 'newLeader':
        // the user's callback: what it throws (or rejects with) is told, as its own, and the term it tells of is led all the same
        callBack(() => x.callbacks.onNewLeader?.(f.holder), x.threw(`onNewLeader("${f.holder}")`));
        return undefined;
      case 'claim':
        x.report(new DuplicateIdentityError(f.claim.name, o.leaseName, f.claim.instance, this.instance, 'held'));
        this.aside(this.candidate!.renew().catch(x.report));
        return undefined;
      case 'twin':
        x.report(
          new Error(
            `LeaderElector "${o.identity}" of lease "${o.leaseName}": another live start-up (instance ${f.instance}) leads under this identity, its term renewed between two reads of this one's. ` +
              `Safe (terms are told apart by instance: this one follows it), but events, logs and onNewLeader cannot tell the two apart: ${UNIQUE_IDENTITY}`,
          ),
        );
        return undefined;
      case 'clockSkew':
        x.report(new ClockSkewError(`LeaderElector "${o.identity}" of lease "${o.leaseName}"`, f.doubt, o.maxClockErrorMs));
        return undefined;
      case 'tookUnelected': {
        // what this worker saw that may be why nobody elected: the coordinator elects only under OldestEmulationVersion
        const row = this.known.lastRead;
        const preferred = o.candidacy?.preferredStrategies;
        const lease = row?.strategy !== undefined && row.strategy !== OLDEST_EMULATION_VERSION ? row.strategy : undefined;
        x.report(
          new NoCoordinatorError(o.leaseName, o.identity, f.vacantMs, {
            ...(lease !== undefined ? { lease } : {}),
            ...(row?.lastElectionFailure?.reason === 'contradictoryStrategies' ? { contradiction: row.lastElectionFailure.message } : {}),
            ...(row?.strategy === undefined && preferred?.[0] !== undefined && preferred[0] !== OLDEST_EMULATION_VERSION ? { preferred } : {}),
          }),
        );
        return undefined;
      }
      case 'stalled':
        x.report(new LeaderStalledError(o.leaseName, o.identity, f.lateMs));
        return undefined;
      case 'stepNow':
        if (f.at === undefined) x.nap?.end();
        else this.endNapAt(f.at);
        return undefined;
      case 'armDeadline': {
        // stop acting at renewedAt + renewDeadline even if a renewal hangs: before anyone can see the term expire
        const no = f.no;
        x.deadline?.cancel();
        x.deadlineAt = f.at;
        x.deadlineToken = this.known.lead?.no === no ? this.known.lead.term.fencingToken : undefined;
        x.deadline = x.time.setTimer(Math.max(0, f.at - x.time.monotonic()), () => this.note({ kind: 'deadline', no }));
        return undefined;
      }
      case 'started': {
        // carried out past its deadline (the process frozen since the step decided to lead; a newer term
        // may have begun): its work never starts, the step gives the term back
        if (x.time.monotonic() >= f.deadline) return { sent: STARTED, answer: () => ({ kind: 'startedLate', no: f.no }) };
        // nor once run() was cancelled (a take in flight at the SIGTERM, landed after it): no work starts after the abort
        if (x.cancelled) return { sent: STARTED, answer: () => ({ kind: 'startedLate', no: f.no, cancelled: true }) };
        const controller = (x.work = new AbortController());
        const { no, term } = f;
        const token = term.fencingToken;
        // this term's own fenced writes: refused once it ends, whatever term this worker leads by then
        const by = (): FencedBy | FencingError => (this.isLeader(), controller.signal.aborted ? new FencingError(o.leaseName, token, `its term ended (${String(controller.signal.reason)})`) : { term, ends: controller.signal });
        const leading: LeadingTerm = { fencingToken: token, fencedWrite: (input) => this.transact(by(), input), fencedItemWrite: (input, attribute) => this.itemWrite(by(), input, attribute) };
        refusals.set(leading, (e) => this.refusedBy(e, controller.signal));
        // noted before its work starts: a process.exit() in onStartedLeading leaves the term unreleased, and says so (leaving.ts)
        x.led?.();
        x.led = x.leads(token);
        // a rejection once the term's signal aborted is the work stopping, as asked: nothing failed
        // (`fenced`: the work stopped on this term's own write refused by its fence, which the step takes as the term over)
        // (`itemFenced`: that write was refused by an item's own fence, not the lease's)
        const failed = (cause: unknown) => {
          if (controller.signal.aborted) return;
          const fenced = refusedInTerm(cause, o.leaseName, token);
          this.note({ kind: 'workFailed', no, token, cause, fenced, ...(fenced && ITEM_REFUSALS.has(cause as FencingError) ? { itemFenced: true } : {}), random: x.time.random() });
        };
        // work that never asks isLeader() learns of a sleep within a retry period of waking too (the gauge is the step's: set before it, following)
        x.clocks?.cancel();
        x.clocks = every(x.time, o.retryPeriodMs, () => this.lookAtClocks(), { background: true });
        // judged when read: after a freeze (SIGSTOP) the work's own timer may run before the deadline timer
        callBack(() => x.callbacks.onStartedLeading(judgedSignal(controller.signal, this), leading), failed);
        return { sent: STARTED, answer: () => ({ kind: 'answer', rest: f.rest }) };
      }
      case 'stop': {
        x.deadline?.cancel();
        x.clocks?.cancel();
        x.work?.abort(f.reason);
        x.led?.();
        x.led = undefined;
        const waited = this.stoppedLeading(f.reason, f.token);
        if (!waited) return undefined;
        // a hand-over or release follows in this step (giveUp, handOffNow): it waits; else only run() does (besideDone), the loop goes on
        if (waited.handsOn) return { sent: waited.settled, answer: () => undefined };
        this.aside(waited.settled);
        return undefined;
      }
      case 'endTerm':
        this.aside(this.endWith(() => x.lock.endChanged(f.term, x.time.now())));
        return undefined;
      case 'renew':
        // a leader renews its term itself only off its live session: a renewal naming one moves the term onto it
        return { sent: this.putOnSession(this.renew(f.term, f.session, signal), f.session, 'renewal'), answer: (lease) => ({ kind: 'answer', rest: f.rest, lease: lease as Lease | undefined }), fault: (e) => ({ kind: 'answer', rest: f.rest, failed: true, ...(isContended(e) ? { contended: true } : {}), ...(refusedForItsOwnReasons(e) ? { refused: true } : {}) }) };
      case 'look':
        return { sent: x.lock.get(f.consistent), answer: (r) => ({ kind: 'answer', rest: f.rest, lease: (r as LeaseRead).item }), ...(f.reportFault ? { fault: { kind: 'answer', rest: f.rest, failed: true } as const } : {}) };
      case 'readHeir':
        return { sent: x.lock.candidate(f.name), answer: (r) => ({ kind: 'answer', rest: f.rest, row: (r as { item: Candidate | undefined }).item }), fault: { kind: 'answer', rest: f.rest, failed: true } };
      case 'handOver': {
        const sent = this.endWith(() => x.lock.handOver(f.term, { heir: f.heir, now: x.time.now(), firstTermSeconds: Math.max(1, Math.ceil(o.leaseDurationMs / 3000)), leaseTransitions: f.leaseTransitions, second: f.second }), f.heir.instance, f.term);
        // beside the write, not after its answer: only a hint to read (endWith wakes again once it landed)
        x.push?.wake(o.leaseName, f.revision, f.heir.instance);
        return { sent, answer: (out) => ({ kind: 'answer', rest: f.rest, ok: out === 'landed' }) };
      }
      case 'releaseTerm':
        return { sent: this.endWith(() => x.lock.release(f.term, x.time.now()), undefined, f.term), answer: () => ({ kind: 'answer', rest: f.rest }) };
      case 'renewCandidacy':
        return { sent: this.candidate!.renew(), answer: () => ({ kind: 'answer', rest: f.rest }), fault: { kind: 'answer', rest: f.rest, failed: true } };
      case 'standDown':
        // answered nothing: the hand-over or release after it goes on, landed or not (it stands down all the same)
        return { sent: standDown(this.candidate!, signal), answer: () => undefined, fault: () => undefined };
      case 'sleep':
        // a cancelled leader leading on for its heir: a wait of the stop's own, not counted against its budget (nor its Session's);
        // a pause after a fault as it leaves the lease is counted (the step fitted it in)
        if (f.counted !== true) {
          x.stop.extend(f.ms);
          if (x.session) sessionSeam(x.session).stopAtLeast(x.stop.remainingMs);
        }
        return { sent: x.time.sleep(f.ms), answer: () => ({ kind: 'answer', rest: f.rest }) };
      case 'workFailure':
        // the user's work failing, told as such (as a callback's failure is): no DynamoDB fault to name;
        // stopped by an item's own fence above its term, told what that is and how to mend it
        if (f.itemFence !== true) x.told(new LeaderWorkError(o.leaseName, f.token, f.outcome, f.cause));
        else
          x.told(
            new Error(
              `LeaderElector "${o.identity}" of lease "${o.leaseName}": its work (onStartedLeading, term with fencing token ${f.token}) stopped on a fencedItemWrite refused by the item's own fence (${f.cause instanceof Error ? f.cause.message : String(f.cause)}), while the lease, as last read, was still in this term: the item carries a token higher than this term's, written by another lease (tokens of different leases do not compare), by an operator, or by a later term of this lease not read yet. The term ended (deposed), and this worker takes the lease again only after a backoff; a new term's work that writes the item is refused the same way until the item is mended. Fence each item by one lease only (and mend an item written with another lease's token, or one made up)`,
              { cause: f.cause },
            ),
          );
        return undefined;
      case 'readToLeave':
        return { sent: x.lock.get(true), answer: (read) => ({ kind: 'leavingRead', read: read as LeaseRead }), fault: () => ({ kind: 'leavingRead', read: 'unread', random: x.time.random() }) };
      case 'leavingWrite':
        // (a draw only where a pause may follow: a fault)
        return { sent: this.leavingWrite(f.write), answer: (out) => ({ kind: 'leavingWritten', out: out as WriteOutcome, ...(out === 'failed' || out === 'unknown' ? { random: x.time.random() } : {}) }) };
      case 'leaveTerm':
        return { sent: Promise.resolve(this.leaveTerm(f.term)), answer: (at) => ({ kind: 'termLeft', at: at as number }) };
      case 'settleDoubt':
        this.settleDoubt();
        return undefined;
      case 'steppedDown':
      case 'sessionCadence':
        return undefined;
    }
  }
}

const STARTED = Promise.resolve();

/** What run() is told without a signal (its ValidationError's issue on `signal`). */
const NO_SIGNAL =
  "must be an AbortSignal: the signal whose abort stops the elector (an AbortController's signal, aborted on SIGTERM: `const stop = new AbortController(); process.once('SIGTERM', () => stop.abort()); await elector.run(stop.signal)`); nothing was started, call run() again with one";

/** Whether `v` can stop a run(): an AbortSignal, or one like it (another realm's, a polyfill's), as run() uses it. */
const isSignal = (v: unknown): v is AbortSignal => {
  const o = v as Partial<AbortSignal> | null | undefined;
  return typeof o === 'object' && o !== null && typeof o.aborted === 'boolean' && typeof o.addEventListener === 'function' && typeof o.removeEventListener === 'function';
};

/** FencingErrors of a term's fencedItemWrite refused by the item's own fence (the item carries a higher token): step.ts' workFailed `itemFenced`. */
const ITEM_REFUSALS = new WeakSet<FencingError>();

/** Whether `cause` is a fenced write of lease `lease`'s term with fencing token `token` refused (FencingError) or abandoned as the term was lost (LeaseLostError): step.ts' workFailed `fenced`. */
const refusedInTerm = (cause: unknown, lease: string, token: number): boolean => (cause instanceof FencingError || cause instanceof LeaseLostError) && cause.leaseName === lease && cause.fencingToken === token;

/** What a stop does, in order, as told when its budget cut it (LeaderElector.tellUndone). */
const STEPPING_DOWN = 'its step-down (a look at the lease, a hand-over to its heir, or the request in flight)';
const WITHDRAWING = 'the removal of its candidate row';
const LEAVING_LEASE = 'its leaving of the lease row (its term released, or its name as successor given up)';

/** Why a read the loop waited on was abandoned: run()'s signal aborted (Shell.reads). Never told to onError. */
const READ_ABANDONED = new DOMException('the read was abandoned: the elector is stopping', 'AbortError');

/** The writes that put a term on a session, as a hold's reason names them. */
type PutOnSession = 'take' | 'confirmation' | 'renewal';

/** The machine's clock since boot (else its wall clock) less its monotonic one, now: steady, but for a sleep the monotonic clock did not count (or a step of the wall clock standing in) and the two clocks' drift. */
const sleepGauge = (c: Clock): SleepGauge => {
  const at = c.monotonic();
  return { gauge: (c.sinceBoot ? c.sinceBoot() : c.now()) - at, at };
};

/** A term to write in, and the signal that ends it (its work's). */
interface FencedBy {
  readonly term: Term;
  readonly ends: AbortSignal;
}

/** What a LeaderElector carries effects out with, and the little it keeps beside its State record (timers, the work's signal, the nap). */
interface Shell {
  readonly settings: Settings;
  /** The lease, as read and written (LeaseLock: DynamoDB's, or wrapped by a planted bug). */
  readonly lock: LeaseLock;
  /** The session rows' reader the lock reads them with: it keeps the sessions' renewal cadences the process's electors share. */
  readonly sessions: SessionReader;
  /** What every time this worker writes is read from (clockSync); durations use its monotonic clock. */
  readonly time: StampClock;
  /** The machine's own clock: its clock since boot (else its wall clock), beside the monotonic one, shows a sleep. */
  readonly machine: Clock;
  readonly client: DynamoDBClient;
  /** `client`, each request given up after the elector's bound (bounded-client.ts): its own, and its terms' fenced writes. */
  readonly requests: DynamoDBClient;
  readonly callbacks: LeaderCallbacks;
  /** onError, each fault named (lib/sdk/faults.ts). */
  readonly report: (e: unknown) => void;
  /** onError as given (errorSink): for what is no fault of DynamoDB's (the user's work or callbacks failing). */
  readonly told: (e: Error) => void;
  /** What a user's callback (`callback`: its name, and what it was told) that threw or rejected is told with: an Error naming the elector and the callback, what it threw as its cause. */
  readonly threw: (callback: string) => (e: unknown) => void;
  /** How long a failed step waits before the next try. */
  readonly retryDelayMs: Decisions['retryDelayMs'];
  /** How `platform: 'detect'` asks: the process's shared detection (platform.ts), waited on until `signal` aborts. */
  readonly detect: (signal: AbortSignal) => Promise<Platform | undefined>;
  /** The push path, if any (the `push` option). */
  readonly push: Push | undefined;
  /** The process's session, if any (the `session` option). */
  readonly session: Session | undefined;
  readonly startUp: StartUp<void>;
  phase: ElectorRunPhase;
  /** Why run() rejected (phase 'failed'). */
  failure: unknown;
  platform: Platform | undefined;
  /** Ends the sleep between steps early (a wake). */
  nap: Nap | undefined;
  /**
   * While the loop runs: aborted with READ_ABANDONED as run()'s signal aborts, so the read a step waits
   * on (a lease or session read still looking up DynamoDB's name, say) is abandoned and the stop goes
   * on. A read changes nothing. Writes are waited for, and the stop's own reads are not abandoned.
   */
  reads: AbortController | undefined;
  /** When its last WOKEN_READS woken polls went out (monotonic, oldest first): wokenReadDelay. */
  wokenAt: readonly number[];
  /**
   * Steps its loop has begun (loopSteps): the one mark of its own progress. Its State record is no
   * such mark: a health check's isLeader() steps it too, and so do wakes and a Session's renewals.
   */
  loopSteps: number;
  /** Steps failed in a row: a follower's next waits the backoff (lib/sdk/faults.ts), whatever it had planned, unless the endpoint recovers first (then a retry period after its last try at the soonest: step.ts recoveryWake). */
  failures: number;
  /** When its loop's last step went out (monotonic): a recovery wakes it no sooner than a retry period after. */
  triedAt: number | undefined;
  /** The nap a recovery already set the end of (endNapAt). */
  napEnds: Nap | undefined;
  /** The current term's work: its signal's controller. */
  work: AbortController | undefined;
  /** The renew deadline's timer. */
  deadline: Timer | undefined;
  /** When the term led last (or now) reaches its renew deadline (monotonic), as last armed: onStoppedLeading's wait before a hand-over ends there. */
  deadlineAt: number | undefined;
  /** That term's fencing token: a release of it left undone is told with when it runs out (tellUndone). */
  deadlineToken: number | undefined;
  /** run()'s signal aborted: no work starts from then on (a take in flight at the abort lands given back). */
  cancelled: boolean;
  /** While leading: a look at the clocks every retry period (lookAtClocks). */
  clocks: Timer | undefined;
  /** The machine's clock since boot (else its wall clock) less its monotonic one: taken before each step while following; while leading, the lowest seen (gainedSince). */
  sleepGauge: SleepGauge;
  /** What is carried out beside the loop (aside): awaited before run() steps down. */
  readonly aside: Set<Promise<unknown>>;
  /**
   * A take naming session `session` (or a confirmation or a leader's renewal putting the term on it)
   * failed in a way that may have landed: the session's renewals are held (`release`) until a
   * consistent read of the lease shows no term of this start-up on it, or this elector leads a term
   * it knows is on it; else that session alone would keep alive a term nobody leads for as long as
   * the lease cannot be read (its requests throttled, or denied).
   */
  takeInDoubt: { readonly session: string; readonly release: () => void } | undefined;
  /** Its stop's wait on DynamoDB, bounded (STOP_BUDGET_MS from run()'s signal aborting), shared with its candidacy: what it cut is told as run() resolves. */
  readonly stop: StopBudget;
  /** Notes this elector's step-down as in progress until the function it returns is called (ElectorInternals.stepDowns; none on a simulated machine). */
  readonly stepDown: () => (() => void) | undefined;
  /** Notes the term with fencing token `token` as led until the function it returns is called: a process that exits meanwhile says so (leaving.ts; with releaseOnCancel, on the system clock only). */
  readonly leads: (token: number) => (() => void) | undefined;
  /** The note of the term led now (leads): ended as it stops. */
  led: (() => void) | undefined;
}

/** The decisions a LeaderElector calls through (step.ts, faults.ts): one object per elector, so the simulator can plant a wrong one. */
export interface Decisions {
  readonly decideFollower: typeof decideFollower;
  readonly decideLeader: typeof decideLeader;
  /** Whether an heir leads a handed term from its read, before confirming it, and from when. */
  readonly leadFromRead: typeof leadFromRead;
  /** How long a failed step waits before the next try. */
  readonly retryDelayMs: typeof retryDelayMs;
  /** What a leader whose work failed does with its term (the `onLeaderWorkFailure` option). */
  readonly workFailure: (o: Pick<ResolvedLeaderElectorOptions, 'onLeaderWorkFailure'>) => 'keep' | 'giveUp';
}

export const DECISIONS: Decisions = {
  decideFollower,
  decideLeader,
  leadFromRead,
  retryDelayMs,
  workFailure: (o) => (o.onLeaderWorkFailure === 'keep' ? 'keep' : 'giveUp'),
};

/**
 * The leader's work failed: onStartedLeading rejected or threw (not with a FencingError or
 * LeaseLostError of its own term: that is the term over, `deposed`, and nothing is reported). Reported to onError; `outcome`
 * says what became of the term: given up (ended, and handed to the successor or released: the
 * default), kept (`onLeaderWorkFailure: 'keep'`), or already ended before the work failed.
 */
export class LeaderWorkError extends Error {
  /** Always `LeaderWorkError`. */
  override readonly name = 'LeaderWorkError';
  constructor(
    /** The lease whose leader's work failed. */
    readonly leaseName: string,
    /** The fencing token of the term whose work failed. */
    readonly fencingToken: number,
    /** What became of the term: given up (the default), kept (`onLeaderWorkFailure: 'keep'`), or already ended. */
    readonly outcome: 'givenUp' | 'kept' | 'ended',
    /** What onStartedLeading rejected or threw with. */
    override readonly cause: unknown,
  ) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super(
      `the leader's work for lease "${leaseName}" (onStartedLeading, term with fencing token ${fencingToken}) failed: ${why}; ` +
        (outcome === 'givenUp'
          ? 'the term is given up so that another candidate leads (onLeaderWorkFailure: "keep" keeps it)'
          : outcome === 'kept'
            ? 'the lease is kept (onLeaderWorkFailure: "keep"): nothing leads the work until this worker stops'
            : 'the term had already ended'),
    );
  }
}
