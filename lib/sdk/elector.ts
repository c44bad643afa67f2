import type { DynamoDBClient, PutItemCommandOutput, TransactWriteItemsCommandInput, TransactWriteItemsCommandOutput, UpdateItemCommandOutput } from '@aws-sdk/client-dynamodb';
import { Nap, systemClock, uniqueId, type Timer } from '../clock.js';
import type { Candidate } from '../schemas/candidate.js';
import { instanceOnSession } from '../schemas/identity.js';
import type { Lease } from '../schemas/lease.js';
import type { Platform } from '../schemas/platform.js';
import { parse } from '../schemas/validation.js';
import { ConflictError } from '../stores/errors.js';
import { CandidateStore } from '../stores/candidate-store.js';
import { LeaseStore } from '../stores/lease-store.js';
import { acquisition, dynamoLeaseLock, SessionReader, type Acquired, type Heir, type LeaseLock, type LeaseRead, type SessionRead, type Term } from './lock.js';
import { DuplicateIdentityError, LeaseCandidate } from './candidate.js';
import { fencedItemWrite, fencedTransactWrite, FencingError, NO_TRANSACTIONS, type FencedItemInput } from './fencing.js';
import { checkMultiRegion } from './multi-region.js';
import { INTERNAL_STOP, StartUp, deepFreeze, stampClockFor } from './options.js';
import { LeaderElectorOptionsSchema, defaultRenewIntervalMs, renewCadenceMs, type ElectorRunPhase, type ElectorStats, type LeaderCallbacks, type LeaderElectorOptions, type ResolvedLeaderElectorOptions, type StopReason } from './elector-options.js';

export { CandidacySchema, LeaderElectorOptionsSchema, PHASE_STEP_MS, defaultRenewIntervalMs, renewCadenceMs } from './elector-options.js';
export type { ElectorRunPhase, ElectorStats, LeaderCallbacks, LeaderElectorOptions, ResolvedLeaderElectorOptions, StopReason } from './elector-options.js';
import {
  afterRenewal,
  decideFollower,
  decideLeader,
  FOLLOWING,
  followerDelay,
  followerStep,
  handOffDelay,
  heirOf,
  judgeClock,
  leadFromRead,
  leaderDelay,
  leaderStep,
  prevented,
  RenewalPhase,
  SESSION_QUIET_LEASES,
  sessionFallbackMs,
  STAMP_ERROR_MS,
  stepDelay,
  type FollowerEffect,
  type FollowerEvent,
  type FollowerSettings,
  type FollowerState,
  type LeaderObservation,
  type LeaderTerm,
  type Moment,
} from './step.js';
import { sessionSeam, type Session, type SessionListener } from './session.js';
import { detectPlatform } from './platform.js';
import { ClockSkewError, type StampClock } from './server-clock.js';
import type { Push, Wake } from './push.js';
import { faultReporter, retryDelayMs } from './faults.js';
/**
 * What the SDK's own code, and the simulator, give an elector beyond its options: its lock wrapped
 * (a planted bug: sim/bugs.ts), its decisions replaced (likewise), and whether a cancelled leader
 * hands over at once (withLease). Not part of the public API.
 * @internal
 */
export interface ElectorInternals {
  readonly lock?: (lock: LeaseLock) => LeaseLock;
  readonly decisions?: Partial<Decisions>;
  /** A cancelled leader hands its term over (or releases it) at once instead of leading on to its next renewal slot: short-lived code whose caller waits for the release. */
  readonly promptly?: boolean;
}

/** The internals of the elector being constructed by electorWith (read once, by the constructor). */
let building: ElectorInternals = {};

/**
 * A LeaderElector built with `internals`: the constructor the SDK's own code and the simulator use.
 * @internal
 */
export function electorWith(internals: ElectorInternals, options: LeaderElectorOptions): LeaderElector {
  building = internals;
  try {
    return new LeaderElector(options);
  } finally {
    building = {};
  }
}

/**
 * client-go's LeaderElector on a DynamoDB lease, taking part in KEP-4355's coordinated election:
 * a follower polls the lease, judges expiry on its own monotonic clock, acknowledges elections and
 * reports vacancies; a leader renews every retry period, stops acting when it has not renewed for
 * the renew deadline (before the term can expire for anyone else), and yields to preferredHolder
 * by releasing the lease. Built from one options object (LeaderElectorOptions), then `run(signal)`
 * once per start-up.
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
   * row written. Rejects if run() failed before that (or its signal aborted first). Pending until
   * run() is called.
   */
  readonly ready: Promise<void>;
  /** The lease, as read and written (LeaseLock: DynamoDB's, or wrapped by a planted bug). */
  private readonly lock: LeaseLock;
  /** The decisions it calls through (DECISIONS below, or a planted bug's). */
  private readonly decide: Decisions;
  private readonly client: DynamoDBClient;
  /** What every time this worker writes is read from (clockSync); durations use its monotonic clock. */
  private readonly time: StampClock;
  /** Its writes on the lease (LeaseStore's, conditioned on the read or the term). */
  private readonly writes: TermWrites;
  private readonly callbacks: LeaderCallbacks;
  private readonly onError: (e: Error) => void;
  /** onError, each fault named (lib/sdk/faults.ts). */
  private readonly report: (e: unknown) => void;
  private readonly startUp: StartUp<void>;
  /** Its term, while it leads. */
  private readonly term: Leadership;
  /** What it knows of its lease as a follower (lib/sdk/step.ts): replaced by each step. */
  private known: FollowerState = FOLLOWING;
  /** What its follower's step decides by. */
  private readonly follow: FollowerSettings;
  private readonly detect: () => Promise<Platform | undefined>;
  private platformFound: Platform | undefined;
  /** The push path, if any (the `push` option). */
  private readonly push: Push | undefined;
  /** Ends the sleep between steps early (a wake). */
  private nap: Nap | undefined;
  /** The process's session, if any (the `session` option). */
  private readonly session: Session | undefined;
  /** Where run() is (the `state` getter). */
  private phase: ElectorRunPhase = 'idle';

  /** Validates and resolves `options`; nothing is read or written until run(). @throws ValidationError naming each bad option */
  constructor(options: LeaderElectorOptions) {
    const internals = building;
    building = {};
    const o = parse(LeaderElectorOptionsSchema, options, `LeaderElector options${typeof options?.identity === 'string' ? ` for "${options.identity}"` : ''}`);
    const { client, callbacks, onError, clock, detectPlatform: detect, push, session, ...data } = o;
    this.client = client;
    this.push = push;
    this.session = session;
    this.time = stampClockFor(data.clockSync, client, clock ?? systemClock);
    // session rows are read by the session's reader, shared by the process's electors, or this elector's own
    const sessions = session ? sessionSeam(session).reader : new SessionReader(client, data.tables.identities, this.time);
    this.callbacks = callbacks;
    this.onError = onError ?? ((e) => process.emitWarning(e));
    this.report = faultReporter(this.onError, `LeaderElector "${data.identity}" of lease "${data.leaseName}"`, client);
    const lock = dynamoLeaseLock(data.leaseName, new LeaseStore(client, data.tables.leases, data.multiRegion), new CandidateStore(client, data.tables.candidates), sessions);
    this.lock = internals.lock ? internals.lock(lock) : lock;
    this.decide = { ...DECISIONS, ...internals.decisions };
    // on a session, the instance names the session's process: only its rows vouch for this elector's terms
    const unique = uniqueId(clock ?? systemClock);
    this.instance = session ? instanceOnSession(data.identity, unique, session.process) : `${data.identity}_${unique}`;
    this.detect = detect ?? (() => detectPlatform());
    const c = data.candidacy;
    this.candidate = c
      ? new LeaseCandidate({ ...c, leaseName: data.leaseName, name: data.identity, tables: data.tables, client, clock: this.time, clockSync: 'none', instance: this.instance, claimWindowMs: data.leaseDurationMs, onError: this.onError })
      : undefined;
    this.options = deepFreeze(data);
    const own = new RenewalPhase();
    this.follow = { ...this.options, instance: this.instance, fallbackAfterMs: this.fallbackAfterMs, sessionFallbackMs: this.sessionFallbackMs, candidate: this.candidate !== undefined, decideFollower: this.decide.decideFollower, leadFromRead: this.decide.leadFromRead, stampErrorMs: Math.max(STAMP_ERROR_MS, this.options.maxClockErrorMs), clockMeasured: this.options.clockSync !== 'none', cadence: { own, session: (name) => sessions.phase(name) } };
    this.writes = new TermWrites(this.lock, this.options, this.instance, this.time, (r, to) => this.announce(r, to), this.report);
    const self = this;
    const guard = { trusted: () => this.clockTrusted(), prevented: (jumpMs?: number) => this.clockPrevented(jumpMs) };
    const watch = { leading: () => this.note({ kind: 'leading' }), ending: (token: number) => this.note({ kind: 'ending', token }), observe: (read: LeaseRead) => this.note({ kind: 'observed', read }), claimIn: (lease: Lease | undefined) => this.note({ kind: 'claimIn', lease }) };
    const acked = {
      get election() {
        return self.known.ackedElection;
      },
      set election(v: string | undefined) {
        self.known = { ...self.known, ackedElection: v };
      },
    };
    const { options: opts, instance, time, writes, lock: leaseLock, decide, callbacks: cbs, candidate } = this;
    this.term = new Leadership({ options: opts, instance, time, guard, writes, lock: leaseLock, decide, watch, callbacks: cbs, onError: this.report, candidate, session, acked,
      // how long after a renewal was sent a coordinated leader sends the next: the renew interval less PHASE_STEP_MS
      cadenceMs: renewCadenceMs(this.renewIntervalMs, opts.retryPeriodMs),
      pushLive: () => this.pushLive,
      stepNow: () => this.nap?.end(),
      promptly: internals.promptly === true,
      sessionToWrite: () => this.sessionToWrite(),
    });
    this.startUp = new StartUp(`LeaderElector "${this.options.identity}" of lease "${this.options.leaseName}"`, this.options.tables);
    this.ready = this.startUp.ready;
  }

  private mono(): number {
    return this.time.monotonic();
  }


  /** Clock skew preventions so far, and this worker's measurement of DynamoDB's clock. */
  get stats(): ElectorStats {
    const c = this.time.check(this.options.maxClockErrorMs);
    return { clockSkewPreventions: this.known.preventions, clockSynced: c.ok, clockErrorMs: 'errorMs' in c ? c.errorMs : undefined, clockOffsetMs: this.time.wallOffsetMs() };
  }

  /**
   * Whether the times this worker would write now are within maxClockErrorMs of DynamoDB's clock.
   * If not, the caller does not write them: a clock skew prevention, counted, and reported to
   * onError once per spell — at once after a jump, otherwise once it has lasted a lease duration
   * (the first responses of a start-up settle the estimate; that is no fault).
   *
   * `settling`: for an acknowledgement, a doubt that is about to clear does not count. An answer
   * carries no time the coordinator relies on (it judges the copy of its own ping), and a worker
   * that does not answer is written off until it renews on its own — minutes. Such a worker is
   * elected only to confirm the term a poll later, once the next responses have settled the
   * estimate; a worker whose doubt lasts (no Date header, responses too slow) does not answer.
   * (lib/sdk/step.ts judgeClock.)
   */
  private clockTrusted(settling = false): boolean {
    const j = judgeClock(this.known, this.moment(), this.options.leaseDurationMs, settling);
    this.known = j.state;
    if (j.report) this.carry({ kind: 'clockSkew', doubt: j.report });
    return j.trusted;
  }

  /** A write not made, or a term stopped, for the clock (a jump: reported at once). */
  private clockPrevented(jumpMs?: number): void {
    const p = prevented(this.known, this.mono(), jumpMs);
    this.known = p.state;
    if (p.report) this.carry({ kind: 'clockSkew', doubt: p.report });
  }

  /** The moment a step decides at: monotonic now, DynamoDB's time as measured, the clock's jumps so far. */
  private moment(): Moment {
    const now = this.mono();
    return { now, clock: this.time.check(this.options.maxClockErrorMs), offset: this.time.now() - now, jumps: this.time.jumps };
  }

  private get fallbackAfterMs(): number {
    return this.options.fallbackAfterMs ?? 3 * this.options.leaseDurationMs;
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
   * leading — the term is stopped and the signal aborted — before any of its timers has run.
   */
  isLeader(): boolean {
    return this.term.isLeader();
  }

  /** The fencing token of the current term; undefined when not leading. */
  get fencingToken(): number | undefined {
    return this.term.term?.fencingToken;
  }

  /** The holder last observed (this worker included). */
  get leader(): string | undefined {
    return this.known.lastLeader;
  }

  /**
   * client-go's healthz adaptor: a leader whose term, as it last renewed it, is expired by more
   * than the tolerance is unhealthy (it is stuck: its renew deadline should have stopped it).
   */
  healthy(toleranceMs = this.options.healthToleranceMs): boolean {
    return this.term.healthy(toleranceMs);
  }

  /**
   * Runs the user's DynamoDB transaction with one more condition: the lease is still in this
   * worker's term (holder and fencing token). A deposed or paused leader's write fails with a
   * FencingError and writes nothing.
   */
  fencedWrite(input: TransactWriteItemsCommandInput): Promise<TransactWriteItemsCommandOutput> {
    if (this.options.multiRegion) return Promise.reject(new RangeError(NO_TRANSACTIONS));
    const term = this.isLeader() ? this.term.term : undefined;
    if (!term) return Promise.reject(new FencingError(this.options.leaseName, undefined, 'this worker is not leading'));
    return fencedTransactWrite(this.client, { table: this.options.tables.leases, leaseName: this.options.leaseName, term }, input);
  }

  /**
   * Writes one of the application's own items, fenced by the token the item carries
   * (`fencedItemWrite`): refused with a FencingError when this worker is not leading, or when a
   * newer term has written the item. Needs no transaction: works on multi-Region tables too.
   */
  fencedItemWrite(input: FencedItemInput, attribute?: string): Promise<PutItemCommandOutput | UpdateItemCommandOutput> {
    const term = this.isLeader() ? this.term.term : undefined;
    if (!term) return Promise.reject(new FencingError(this.options.leaseName, undefined, 'this worker is not leading'));
    return fencedItemWrite(this.client, { leaseName: this.options.leaseName, fencingToken: term.fencingToken, ...(attribute !== undefined ? { attribute } : {}) }, input);
  }

  /**
   * Where run() is: idle, starting, running (following or leading), stopping, stopped, or failed (it
   * rejected). What a readiness check reports: an elector `running` and healthy() takes part as it
   * should, whether or not it leads (lib/sdk/health.ts).
   */
  get runPhase(): ElectorRunPhase {
    return this.phase;
  }

  /** Where this worker runs, once run() has looked (undefined: not known, or `platform: 'none'`). */
  get platform(): Platform | undefined {
    return this.platformFound;
  }

  /**
   * Takes part until `signal` aborts: looks up the platform, runs the candidacy (coordinated
   * mode), then polls and leads as the options say; resolves after stepping down, withdrawing the
   * candidacy and releasing the lease (if releaseOnCancel). Rejects only for what can never
   * succeed, and `ready` rejects with the same: a TableNotFoundError (the `tables` option names no
   * table), a ValidationError on `multiRegion` (the table is a global table without multi-Region
   * strong consistency), a DuplicateIdentityError (another live process stands under this
   * identity), or a second run(). Every other fault, at start-up or later (DynamoDB unreachable, a
   * denied or throttled request, a malformed row), goes to onError, once per try, and is tried
   * again with backoff (lib/sdk/faults.ts). Once per instance: a new start-up is a new LeaderElector.
   */
  async run(signal: AbortSignal): Promise<void> {
    this.startUp.claim('LeaderElector');
    this.phase = 'starting';
    try {
      await this.takePart(signal);
      this.phase = 'stopped';
    } catch (e) {
      this.phase = 'failed';
      throw e;
    }
  }

  /** run() once claimed: start up, then follow and lead until `signal` aborts, then step down. */
  private async takePart(signal: AbortSignal): Promise<void> {
    // before anything is written: multiRegion on an eventually consistent global table can never be safe
    if (this.options.multiRegion) await checkMultiRegion(this.client, this.options.tables.leases, `options for lease "${this.options.leaseName}"`, this.onError).catch((e: unknown) => { throw this.startUp.fail(e); });
    const standing = new AbortController();
    let candidacy: Promise<void> | undefined;
    // run() cancelled while the candidacy is still trying to register: it stops trying
    const stopStanding = () => standing.abort(INTERNAL_STOP);
    signal.addEventListener('abort', stopStanding, { once: true });
    try {
      const p = this.options.platform;
      this.platformFound = p === 'none' ? undefined : p === 'detect' ? await this.detect() : p;
      if (signal.aborted) return this.startUp.failed(signal.reason);
      if (this.candidate) {
        this.candidate.setPlatform(this.platformFound);
        this.candidate.setAddress(this.options.advertise);
        // faults it can outlive are retried inside (reported to onError); only a missing table rejects
        candidacy = this.candidate.run(standing.signal);
        await Promise.race([this.candidate.ready, candidacy]).catch((e: unknown) => {
          if (!signal.aborted) throw e;
        });
        if (signal.aborted) {
          await candidacy;
          return this.startUp.failed(signal.reason);
        }
      }
    } catch (e) {
      throw this.startUp.fail(e);
    } finally {
      signal.removeEventListener('abort', stopStanding);
    }
    this.startUp.started();
    this.phase = 'running';
    const unsubscribe = this.time.onJump((j) => this.term.onClockJump(j));
    const unwatch = this.push?.watch(this.options.leaseName, (w) => this.onWake(w), this.instance);
    const detach = this.session ? sessionSeam(this.session).attach(this.term.sessionListener()) : undefined;
    try {
      // follower steps failed in a row: the next waits the backoff (lib/sdk/faults.ts), whatever it had planned
      let failures = 0;
      while (!signal.aborted) {
        const woken = this.known.wakePending;
        this.known = { ...this.known, wakePending: false };
        try {
          if (this.term.active) await (woken ? this.term.woken() : this.term.step());
          else await this.feed({ kind: 'poll', woken, pushLive: this.pushLive });
          failures = 0;
        } catch (e) {
          // a fault: told once per try, and tried again after the backoff (a follower) or at the
          // leader's retry period (its renew deadline guards its term)
          failures++;
          this.report(e);
        }
        // (cancelled during the step: no nap — a nap begun on an aborted signal would run its whole length before the step-down)
        if (!this.known.wakePending && !signal.aborted) await this.napFor(failures > 0 && !this.term.active ? this.decide.retryDelayMs(failures, this.options.retryPeriodMs, this.time.random()) : this.nextDelay(), signal);
      }
    } finally {
      this.phase = 'stopping';
      unsubscribe();
      unwatch?.();
      // With an heir, lead on until the next renewal would be due and hand the term over then. The
      // candidacy stands until then: withdrawn earlier, the coordinator would re-elect meanwhile.
      const led = await this.term.stepDown();
      // Candidacy goes before the lease is released, so the election the release starts cannot
      // pick this departing worker (it would never confirm, and its term would have to run out).
      standing.abort(INTERNAL_STOP);
      await candidacy;
      if (led && this.options.releaseOnCancel && !led.handed) await this.writes.release(led.term);
      detach?.(); // after the release: the session outlives every term held on it
    }
  }

  /** How long until the next step, as planned after a step that did not fail. */
  private nextDelay(): number {
    const leading = this.term.active;
    const planned = leading ? this.term.delay() : followerDelay(this.follow, this.known, this.mono(), this.pushLive, this.time.random());
    const clockKnown = this.time.check(this.options.maxClockErrorMs).ok;
    // (a draw only while the clock is in doubt: the simulator replays the same draws)
    return stepDelay({ planned, clockKnown, random: clockKnown ? 0 : this.time.random(), wakeAt: leading ? undefined : this.known.wakeAt, now: this.mono() });
  }

  /** The session a write of this worker's term should name: the live one's, or null to take a term off a session that is gone (undefined: no session option, name nothing). */
  private sessionToWrite(): string | null | undefined {
    return this.session ? (this.session.name ?? null) : undefined;
  }

  /** How long a follower waits out a session-held term's holder's own backstop read (lib/sdk/step.ts sessionFallbackMs). */
  private get sessionFallbackMs(): number {
    return sessionFallbackMs({ sessionBackstopMs: this.sessionBackstopMs, ...this.options });
  }

  /** Lease reads of a lease held on a session, while wakes reach this worker: this often (a backstop for a lost wake). */
  private get sessionBackstopMs(): number {
    return SESSION_QUIET_LEASES * this.options.leaseDurationMs;
  }

  /** Sleeps until the next step is due, or until a wake (or `signal`) ends the sleep. (A reaction: no frame per nap.) */
  private napFor(ms: number, signal: AbortSignal): Promise<void> {
    const nap = (this.nap = new Nap(this.time, ms, signal));
    return nap.done.then(() => void (this.nap === nap && (this.nap = undefined)));
  }

  /**
   * A wake for this lease (or `undefined`: the push path went up or down): look at the lease now.
   * A wake for the very revision this worker has read is nothing new (its own hand-off, say; only
   * the very revision: a deleted and re-created row counts its revisions from 1 again).
   */
  private onWake(w: Wake | undefined): void {
    this.note({ kind: 'wake', revision: w?.revision });
  }

  /** Whether wakes reach this worker now: quiet followers then read rarely, and a cancelled leader hands over at once. */
  private get pushLive(): boolean {
    return this.push?.healthy() === true;
  }

  /** Tells the other followers the lease changed (after a hand-off or a release this worker wrote). */
  private announce(revision: number | undefined, to?: string): void {
    this.push?.wake(this.options.leaseName, revision, to);
  }

  /**
   * Feeds `e` to the follower's step (lib/sdk/step.ts followerStep) and carries out its effects,
   * each read's or write's answer fed back as the next event, until the step asks for nothing more.
   */
  private async feed(e: FollowerEvent): Promise<void> {
    let next: FollowerEvent | undefined = e;
    while (next) {
      const { state, effects } = followerStep(this.follow, this.known, next, this.moment());
      this.known = state;
      next = undefined;
      for (const f of effects) {
        const io = this.carry(f);
        if (!io) continue;
        try {
          next = io.answer(await io.sent);
        } catch (e) {
          // a conflict where the step expects one (a vacancy report, or its acknowledgement): the row moved on meanwhile
          if (!(io.conflict && e instanceof ConflictError)) throw e;
          next = io.conflict;
        }
      }
    }
  }

  /** An event that asks for no read or write (the leader's own reads and writes, a wake): decided and carried out now. */
  private note(e: FollowerEvent): void {
    const { state, effects } = followerStep(this.follow, this.known, e, this.moment());
    this.known = state;
    for (const f of effects) this.carry(f);
  }

  /** Carries out one effect of the follower's step: a read or a write is sent, and its answer (`answer`) is the next event. */
  private carry(f: FollowerEffect): { sent: Promise<unknown>; answer: (v: unknown) => FollowerEvent | undefined; conflict?: FollowerEvent } | undefined {
    switch (f.kind) {
      case 'readLease':
        return { sent: this.lock.get(f.consistent), answer: (raw) => ({ kind: 'leaseRead', raw: raw as LeaseRead }) };
      case 'readSession':
        return { sent: this.lock.session(f.name, f.shareMs, f.pendingMs), answer: (read) => ({ kind: 'sessionRead', read: read as SessionRead }) };
      case 'renewCandidate':
        return { sent: this.candidate!.renew(), answer: () => ({ kind: 'candidateRenewed' }), ...(f.conflictIsNothing ? { conflict: { kind: 'candidateRenewed' } as const } : {}) };
      case 'reportVacancy':
        return { sent: this.writes.reportVacancy(f.read), answer: (lease) => ({ kind: 'reported', lease: lease as Lease | undefined }), conflict: { kind: 'reported', lease: undefined } };
      case 'confirm':
        return { sent: this.writes.renew(f.term, this.sessionToWrite() ?? undefined), answer: (lease) => ({ kind: 'confirmed', lease: lease as Lease | undefined }) };
      case 'endChanged':
        return { sent: this.writes.endChanged(f.term), answer: () => undefined };
      case 'acquire':
        return { sent: this.writes.acquire(f.read, f.electedBy, this.sessionToWrite(), this.platformFound), answer: (got) => ({ kind: 'acquired', got: got as Acquired }) };
      case 'release':
        return { sent: this.writes.release(f.term), answer: () => ({ kind: 'released' }) };
      case 'lead':
        return { sent: this.lead(f.term, f.sentAt, f.lease, f.confirmed, f.handed), answer: (ev) => ev as FollowerEvent };
      case 'newLeader':
        this.callbacks.onNewLeader?.(f.holder);
        return undefined;
      case 'claim':
        this.onError(new DuplicateIdentityError(f.claim.name, this.options.leaseName, f.claim.instance, this.instance, 'held'));
        void this.candidate!.renew().catch(this.report);
        return undefined;
      case 'clockSkew':
        this.onError(new ClockSkewError(`LeaderElector "${this.options.identity}" of lease "${this.options.leaseName}"`, f.doubt, this.options.maxClockErrorMs));
        return undefined;
      case 'stepNow':
        this.nap?.end();
        return undefined;
    }
  }

  /**
   * Leads the term won by the write sent at `sentAt` (Leadership.start: never one whose renew
   * deadline already passed); a confirmed term then acts on its renewal's row; a handed one, led
   * from the read of its hand-over (`sentAt`: step.ts leadFromRead's anchor), is confirmed now by
   * the leader's first renewal, whose answer extends the term or stops it.
   */
  private async lead(term: Term, sentAt: number, lease: Lease, confirmed: boolean, handed: boolean): Promise<FollowerEvent> {
    const ok = await this.term.start(term, sentAt, lease);
    if (ok && confirmed) await this.term.afterRenewal(lease);
    if (ok && handed && this.term.active) await this.term.step();
    return { kind: 'led', ok, leading: this.term.active };
  }
}

// ---- the term, while it leads ----

/**
 * A LeaderElector's term while it leads: it carries out the leader's decisions (lib/sdk/step.ts
 * leaderStep, through `Decisions`) on each observation — its renewals' answers, reads of its lease,
 * its session's renewals and end, the renew deadline's timer — and keeps the deadline armed:
 * client-go's rule, a leader stops acting once it has not renewed for its renew deadline, before
 * anyone else can see the term expire. Its writes go through TermWrites; its callbacks are the user's.
 */
/**
 * The decisions a LeaderElector calls through: the pure functions of lib/sdk/step.ts
 * and faults.ts. One object per elector, so the simulator can plant a wrong decision in
 * the electors it builds (sim/bugs.ts, through the internal `electorWith`).
 */
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

/** What the elector shares with its term. */
export interface LeadershipContext {
  readonly options: ResolvedLeaderElectorOptions;
  readonly instance: string;
  readonly time: StampClock;
  /** Whether it may write the times it would write now, and a term stopped for the clock (lib/sdk/step.ts judgeClock, prevented). */
  readonly guard: { trusted(): boolean; prevented(jumpMs?: number): void };
  readonly writes: TermWrites;
  readonly lock: LeaseLock;
  readonly decide: Decisions;
  /** The follower's record of the lease (lib/sdk/step.ts): told of the term's own writes and reads. */
  readonly watch: { leading(): void; ending(token: number): void; observe(read: LeaseRead): void; claimIn(lease: Lease | undefined): void };
  readonly callbacks: LeaderCallbacks;
  readonly onError: (e: Error) => void;
  readonly candidate: LeaseCandidate | undefined;
  readonly session: Session | undefined;
  /** The election this candidate last answered (shared with the follower's side). */
  readonly acked: { election: string | undefined };
  /** How long after a renewal was sent the next goes out. */
  readonly cadenceMs: number;
  /** Wakes reach this worker now. */
  pushLive(): boolean;
  /** Ends the elector's sleep: it steps at once. */
  stepNow(): void;
  /** A cancelled leader hands over at once, not at its next renewal slot (withLease). */
  readonly promptly: boolean;
  /** The session a write of this worker's term should name (the live one's, null: take it off, undefined: none). */
  sessionToWrite(): string | null | undefined;
}

/** A term while it is led: what the leader's decisions change (`t`, replaced by each leaderStep), and what the shell keeps. */
interface Leading {
  t: LeaderTerm;
  readonly controller: AbortController;
  deadline: Timer | undefined;
  /** Monotonic time the term was won. */
  readonly since: number;
}

export class Leadership {
  private leading: Leading | undefined;

  constructor(private readonly c: LeadershipContext) {}

  private mono(): number {
    return this.c.time.monotonic();
  }

  /** Whether it leads now (the renew deadline judged at this moment: a thawed process learns here that it stopped). */
  isLeader(): boolean {
    const l = this.leading;
    if (l) this.apply(l, { kind: 'asked', now: this.mono() });
    return this.leading !== undefined;
  }

  /** Whether it leads, as last decided (no deadline check). */
  get active(): boolean {
    return this.leading !== undefined;
  }

  /** The current term. */
  get term(): Term | undefined {
    return this.leading?.t.term;
  }

  /** client-go's healthz: a leader whose term, as it last renewed it, is expired by more than the tolerance is stuck. */
  healthy(toleranceMs: number): boolean {
    if (!this.leading) return true;
    return this.mono() - this.leading.t.renewedAt <= this.c.options.leaseDurationMs + toleranceMs;
  }

  /**
   * Leads the term won by the write sent at `renewedAt` — unless its renew deadline has already
   * passed (the process was frozen, or the answer came late, between the write landing and now):
   * a term others may already have seen expire is given back, never led, so a thawed process does
   * not start work on a stale term. False when it was given back.
   */
  async start(term: Term, renewedAt: number, lease: Lease): Promise<boolean> {
    if (this.mono() >= renewedAt + this.c.options.renewDeadlineMs) {
      await this.c.writes.release(term);
      return false;
    }
    const controller = new AbortController();
    const leading: Leading = { t: { term, renewedAt, renewals: 0, retrying: false, lease, session: lease.session }, controller, deadline: undefined, since: renewedAt };
    this.c.watch.leading();
    this.leading = leading;
    this.armDeadline(leading);
    try {
      const r = this.c.callbacks.onStartedLeading(controller.signal, { fencingToken: term.fencingToken });
      if (r instanceof Promise) r.catch((e: unknown) => this.workFailed(leading, e));
    } catch (e) {
      this.workFailed(leading, e);
    }
    return true;
  }

  /**
   * The leader's work (onStartedLeading) rejected or threw. A leader whose work died must not keep
   * the lease doing nothing: unless the options say `onLeaderWorkFailure: 'keep'`, the term ends
   * now and goes to the successor (handed over when one is named, else released for an election).
   * A rejection after the term ended (the work stopping on its aborted signal) is only reported.
   */
  private workFailed(leading: Leading, e: unknown): void {
    const current = this.leading === leading;
    const keep = this.c.decide.workFailure(this.c.options) === 'keep';
    this.c.onError(new LeaderWorkError(this.c.options.leaseName, leading.t.term.fencingToken, !current ? 'ended' : keep ? 'kept' : 'givenUp', e));
    if (current && !keep) void this.giveUp(leading, 'workFailed');
  }

  /** Stops the term and gives it to the successor: handed over when the coordinator named one, else released. */
  private async giveUp(leading: Leading, reason: 'preempted' | 'workFailed'): Promise<void> {
    const heir = heirOf(this.c.options, leading.t.lease);
    this.stop(reason);
    if (!(heir && (await this.handOff(leading, heir)))) await this.c.writes.release(leading.t.term);
    this.c.stepNow();
  }

  /** Stop acting at renewedAt + renewDeadline even if a renewal hangs: before anyone can see the term expire. */
  private armDeadline(leading: Leading): void {
    leading.deadline?.cancel();
    const left = leading.t.renewedAt + this.c.options.renewDeadlineMs - this.mono();
    leading.deadline = this.c.time.setTimer(Math.max(0, left), () => {
      if (this.leading === leading) this.apply(leading, { kind: 'deadline', now: this.mono() });
    });
  }

  /** Stops the current term (onStoppedLeading, its signal aborted). */
  stop(reason: StopReason): Lease | undefined {
    const leading = this.leading;
    if (!leading) return undefined;
    this.leading = undefined;
    leading.deadline?.cancel();
    leading.controller.abort(reason);
    try {
      this.c.callbacks.onStoppedLeading?.({ reason, fencingToken: leading.t.term.fencingToken });
    } catch (e) {
      this.c.onError(e as Error);
    }
    return leading.t.lease;
  }

  /**
   * Carries out the leader's decision on `o`: stops the term, extends it, or records the row it
   * saw. False when the term stopped.
   */
  private apply(leading: Leading, o: LeaderObservation): boolean {
    const { term, effects } = leaderStep(this.c.options, this.c.instance, leading.t, o, this.c.decide.decideLeader);
    if (term) leading.t = term;
    for (const e of effects) {
      if (e.kind === 'stop') {
        if (this.leading === leading) this.stop(e.reason);
      } else if (e.kind === 'endTerm') {
        // the follower's side never confirms this term again, its end in flight or not (step.ts termToConfirm)
        this.c.watch.ending(leading.t.term.fencingToken);
        void this.c.writes.endChanged(leading.t.term);
      }
      else if (e.kind === 'look') this.c.stepNow(); // read the lease now: a successor may be named, an election open
      else this.armDeadline(leading);
    }
    return term !== undefined;
  }

  /**
   * What the term does when the process's session is renewed or ends: a renewal answered inside the
   * renew deadline extends it from the renewal's send time; a mark of the term ended stops it; an
   * ended session wakes the leader, which renews its lease itself from then on.
   */
  sessionListener(): SessionListener {
    return {
      renewed: (name, sentAt, ended) => {
        const l = this.leading;
        if (l) this.apply(l, { kind: 'sessionRenewed', name, sentAt, now: this.mono(), ended });
      },
      ended: (name) => {
        const l = this.leading;
        if (l) this.apply(l, { kind: 'sessionEnded', name });
      },
    };
  }

  /**
   * The measurement of DynamoDB's time jumped (a suspended machine's monotonic clock stood still,
   * or the server's clock stepped): the deadline kept on the monotonic clock, and the renewal last
   * stamped, can no longer be vouched for. It stops at once.
   */
  onClockJump(jumpMs: number): void {
    if (!this.leading) return;
    this.stop('renewDeadline');
    this.c.guard.prevented(jumpMs);
  }

  /** Whether the term is held on the process's live session (the holder then renews nothing itself). */
  private onLiveSession(t: LeaderTerm): boolean {
    return t.session !== undefined && this.c.session?.name === t.session;
  }


  /** When the leader steps next (lib/sdk/step.ts leaderDelay). */
  delay(): number {
    const l = this.leading!.t;
    const onLiveSession = this.onLiveSession(l);
    const pushLive = this.c.pushLive();
    return leaderDelay({
      onLiveSession,
      pushLive,
      // as rarely as its followers: a term ended while the functions are down is not taken by a
      // follower's fallback before this read (lib/sdk/step.ts sessionFallbackMs)
      holderBackstopMs: SESSION_QUIET_LEASES * this.c.options.leaseDurationMs,
      retrying: l.retrying,
      everyRetryPeriod: this.c.options.mode === 'NoCoordination' && this.c.options.renewIntervalMs === undefined,
      retryPeriodMs: this.c.options.retryPeriodMs,
      cadenceMs: this.c.cadenceMs,
      renewedAt: l.renewedAt,
      now: this.mono(),
      // drawn only when it is used (the simulator replays the same draws)
      random: onLiveSession && pushLive ? this.c.time.random() : 0,
    });
  }

  /** A step of the leader: renews its term (or, held on its live session, only looks at the lease). */
  async step(): Promise<void> {
    const leading = this.leading!;
    // Held on the live session: its renewals keep the term; the lease is only looked at (a backstop
    // for a lost wake: a preemption, a successor named, a term that moved on).
    if (this.onLiveSession(leading.t)) return this.woken(false);
    leading.t = { ...leading.t, retrying: true }; // until this renewal succeeds
    // A renewal stamped with a time this worker cannot vouch for is not sent: the renew deadline
    // (its monotonic clock) stops it unless the doubt clears first — a read instead brings the next
    // response's Date. A jump stops it at once (onClockJump).
    if (!this.c.guard.trusted()) {
      await this.c.lock.get();
      return;
    }
    const sentAt = this.mono();
    let renewed: Lease | undefined;
    try {
      // onto the live session, or off one that ended
      const session = this.c.sessionToWrite();
      renewed = await this.c.writes.renew(leading.t.term, session === null && leading.t.session === undefined ? undefined : session);
    } catch (e) {
      // a fault: keep trying until the renew deadline (the armed timer stops us there)
      this.c.onError(e as Error);
      return;
    }
    if (this.leading !== leading) return; // the deadline passed (or the clock jumped) while the renewal was in flight
    if (!this.apply(leading, { kind: 'renewed', sentAt, lease: renewed }) || !renewed) return;
    this.c.watch.observe({ key: { name: this.c.options.leaseName }, item: renewed, revision: renewed.revision });
    await this.afterRenewal(renewed);
  }

  /**
   * A leader woken: the lease changed other than by its own renewals. It reads it (consistently):
   * a term that moved on is over now, not at the next renewal; a preemption is answered at once.
   * The renewal cadence is left as it was (the successor reads in step with it).
   */
  async woken(consistent = true): Promise<void> {
    const leading = this.leading!;
    let l = (await this.c.lock.get(consistent)).item;
    // an eventually consistent copy older than what this term last wrote or saw proves nothing
    if (!consistent && (l === undefined || l.revision < (leading.t.lease?.revision ?? 0))) l = (await this.c.lock.get()).item;
    if (this.leading !== leading) return;
    this.c.watch.claimIn(l);
    if (this.apply(leading, { kind: 'read', lease: l }) && l) await this.afterRenewal(l);
  }

  /**
   * After a renewal or a read in the term: yield to a preferred holder, or answer an open election.
   * Mostly neither: then nothing to wait for (undefined, no async function's frame per renewal).
   */
  afterRenewal(lease: Lease): Promise<void> | undefined {
    const leading = this.leading;
    if (!leading) return undefined;
    const next = afterRenewal(this.c.options, lease, { candidate: this.c.candidate !== undefined, ackedElection: this.c.acked.election });
    return next.kind === 'yield' || next.kind === 'ack' ? this.yieldOrAck(leading, next) : undefined;
  }

  private async yieldOrAck(leading: Leading, next: ReturnType<typeof afterRenewal>): Promise<void> {
    if (next.kind === 'yield') {
      // The preferred candidate is the designated successor (the coordinator names both at once):
      // it reads right after this renewal, so the term is handed to it now, in one write.
      await this.giveUp(leading, 'preempted');
      // Still a candidate, and alive: its row says so, or the coordinator passes over the holder it
      // just replaced as departed (lib/election/vacancy.ts isDeparted).
      await this.c.candidate?.renew();
    } else if (next.kind === 'ack') {
      await this.c.candidate!.renew();
      this.c.acked.election = next.election;
    }
  }

  /** Hands the term to `heir` (TermWrites.handOver), the clock permitting; `heirRow`: its candidate row, already being read. */
  private handOff(leading: Leading, heir: Omit<Heir, 'platform'>, heirRow?: Promise<{ readonly item: Candidate | undefined }>): Promise<boolean> {
    const l = leading.t.lease!;
    return this.c.writes.handOver(leading.t.term, heir, l.leaseTransitions, () => this.c.guard.trusted(), l.secondSuccessor !== undefined || l.secondSuccessorInstance !== undefined, heirRow);
  }

  /**
   * run() is cancelled while leading: with an heir, lead on until the next renewal would be due —
   * the moment the heir reads — and hand the term over then (no gap in which nobody leads, and no
   * wait for a poll); then stop. Returns the term that was led and whether it was handed over;
   * the caller withdraws the candidacy, then releases a term not handed over.
   */
  async stepDown(): Promise<{ term: Term; handed: boolean } | undefined> {
    const release = this.c.options.releaseOnCancel;
    // The heir's candidate row (its platform and address go into the hand-over) is read beside the
    // refresh, not after it: the heir the last renewal named is almost always the one the refresh
    // names, and a row read for another is not used (handOver reads that one's).
    const named = this.leading && release ? heirOf(this.c.options, this.leading.t.lease) : undefined;
    const heirRow = named ? this.c.lock.candidate(named.name) : undefined;
    heirRow?.catch(() => undefined); // reported by handOver, if it is used
    if (this.leading && release) await this.refresh(this.leading);
    const heir = this.leading && release ? heirOf(this.c.options, this.leading.t.lease) : undefined;
    if (heir && this.leading) await this.leadUntilHandOff(this.leading);
    const leading = this.leading;
    if (!leading) return undefined;
    this.stop('cancelled');
    return { term: leading.t.term, handed: heir !== undefined && (await this.handOff(leading, heir, heir.name === named?.name ? heirRow : undefined)) };
  }

  /**
   * The lease as it is now, if still in this term: the coordinator may have named the successor
   * since the last renewal (a term not renewed yet knows none). Coordinated mode only; a failed read
   * leaves what the last renewal said.
   */
  private async refresh(leading: Leading): Promise<void> {
    if (this.c.options.mode !== 'coordinated') return;
    try {
      const l = (await this.c.lock.get()).item;
      if (l && this.leading === leading && l.holderIdentity === leading.t.term.holderIdentity && l.fencingToken === leading.t.term.fencingToken) leading.t = { ...leading.t, lease: l };
    } catch (e) {
      this.c.onError(e as Error);
    }
  }

  /**
   * A cancelled leader with an heir leads on until its next renewal would be due (at most a renew
   * interval): the heir reads just after each renewal it expects, so it finds the hand-off at once.
   * The renew deadline and clock jumps still stop it as usual.
   */
  private async leadUntilHandOff(leading: Leading): Promise<void> {
    const { promptly, cadenceMs } = this.c;
    const wait = handOffDelay({ promptly, pushLive: this.c.pushLive(), retrying: leading.t.retrying, renewals: leading.t.renewals, since: leading.since, renewedAt: leading.t.renewedAt, cadenceMs, leaseDurationMs: this.c.options.leaseDurationMs, now: this.mono() });
    if (wait > 0) await this.c.time.sleep(wait);
  }
}

/**
 * The leader's work failed: onStartedLeading rejected or threw. Reported to onError; `outcome`
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

// ---- its writes ----

/**
 * The writes a LeaderElector makes on its lease, through its LeaseLock: a direct acquisition, a
 * confirmation or renewal of its term, a hand-off, a release, a vacancy report. Each is conditioned
 * on what was read or on the term (holder and fencing token), so a lost race is a refusal, never a
 * corrupted row. These stamp each write with DynamoDB's time as this worker measures it, tell the
 * other followers of a hand-off or a release, and report what fails.
 */
export interface TermWriteSettings {
  readonly leaseName: string;
  readonly identity: string;
  readonly leaseDurationMs: number;
  /** Where clients reach this worker: written as holderAddress by its direct acquisitions. */
  readonly advertise?: string | undefined;
}

export class TermWrites {
  constructor(
    private readonly lock: LeaseLock,
    private readonly s: TermWriteSettings,
    private readonly instance: string,
    private readonly time: StampClock,
    /** Tells the other followers the lease changed (a hand-off or a release this worker wrote). */
    private readonly announce: (revision: number | undefined, to?: string) => void,
    private readonly onError: (e: Error) => void,
  ) {}

  private get durationSeconds(): number {
    return Math.ceil(this.s.leaseDurationMs / 1000);
  }

  /**
   * Direct acquisition (NoCoordination, the fallback, or as the designated successor), conditioned
   * on the revision read, with this worker's address (`advertise`) or none; the term goes on
   * `session` when one is given. A lost race is `refusedBy` (whoever moved first).
   */
  acquire(read: LeaseRead, electedBy: 'self' | 'successor', session: string | null | undefined, platform: Platform | undefined): Promise<Acquired> {
    const claim = { identity: this.s.identity, instance: this.instance, now: this.time.now(), leaseDurationSeconds: this.durationSeconds, electedBy, address: this.s.advertise, platform, session };
    return this.lock.acquire(read, acquisition(read.item, claim));
  }

  /**
   * Confirms or renews `term` (LeaseLock.renew): onto `session`, or off one (null); undefined
   * when the lease is no longer in the term.
   */
  renew(term: Term, session: string | null | undefined): Promise<Lease | undefined> {
    return this.lock.renew(term, { now: this.time.now(), leaseDurationSeconds: this.durationSeconds, session });
  }

  /**
   * Hands `term` to `heir` in one write (LeaseLock.handOver), with its platform from its candidate
   * row so the platform's stop event can end its term too. False when the lease no longer names that
   * heir, the row is not that process's, `mayStamp` says no (the clock), or the write failed: the
   * caller releases instead. `heirRow`: the heir's candidate row, if the caller is reading it already.
   */
  async handOver(term: Term, heir: Omit<Heir, 'platform'>, leaseTransitions: number, mayStamp: () => boolean, secondNamed = false, heirRow?: Promise<{ readonly item: Candidate | undefined }>): Promise<boolean> {
    try {
      const row = (await (heirRow ?? this.lock.candidate(heir.name))).item;
      if (row?.identity !== heir.instance || !mayStamp()) return false;
      const firstTermSeconds = Math.max(1, Math.ceil(this.s.leaseDurationMs / 3000));
      const given = await this.lock.handOver(term, { heir: { ...heir, platform: row.platform, address: row.address }, now: this.time.now(), firstTermSeconds, leaseTransitions, secondNamed });
      if (given) this.announce(given.revision, heir.instance); // the heir's process hears it on its own topic
      return given !== undefined;
    } catch (e) {
      this.onError(e as Error);
      return false;
    }
  }

  /** Releases `term`; a failure is reported, and the term simply runs out. */
  async release(term: Term): Promise<void> {
    try {
      const released = await this.lock.release(term, this.time.now());
      if (released) this.announce(released.revision);
    } catch (e) {
      this.onError(e as Error); // the term simply runs out
    }
  }

  /** Ends `term` on a row rewritten under it (LeaseLock.endChanged); a failure is reported, and the term runs out. */
  async endChanged(term: Term): Promise<void> {
    try {
      const ended = await this.lock.endChanged(term, this.time.now());
      if (ended) this.announce(ended.revision);
    } catch (e) {
      this.onError(e as Error);
    }
  }

  /**
   * Tells the coordinator the holder has not renewed for a whole term, as this worker watched (its
   * monotonic clock; `at` is informational). Undefined when the lease moved on: nothing to report.
   */
  reportVacancy(read: LeaseRead): Promise<Lease | undefined> {
    return this.lock.reportVacancy(read, this.s.identity, this.time.now());
  }
}
