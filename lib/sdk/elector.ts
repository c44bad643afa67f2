import type { DynamoDBClient, PutItemCommandOutput, TransactWriteItemsCommandInput, TransactWriteItemsCommandOutput, UpdateItemCommandOutput } from '@aws-sdk/client-dynamodb';
import { Nap, systemClock, uniqueId } from '../clock.js';
import { instanceOnSession } from '../schemas/identity.js';
import type { Platform } from '../schemas/platform.js';
import { parse } from '../schemas/validation.js';
import { ConflictError } from '../stores/errors.js';
import { CandidateStore } from '../stores/candidate-store.js';
import { LeaseStore } from '../stores/lease-store.js';
import { dynamoLeaseLock, type Acquired, type LeaseLock, type LeaseRead, type SessionRead, type Term } from './lock.js';
import type { Lease } from '../schemas/lease.js';
import { DuplicateIdentityError, LeaseCandidate } from './candidate.js';
import { fencedItemWrite, fencedTransactWrite, FencingError, NO_TRANSACTIONS, type FencedItemInput } from './fencing.js';
import { checkMultiRegion } from './multi-region.js';
import { INTERNAL_STOP, StartUp, deepFreeze, stampClockFor } from './options.js';
import { LeaderElectorOptionsSchema, defaultRenewIntervalMs, renewCadenceMs, type ElectorRunPhase, type ElectorStats, type LeaderCallbacks, type LeaderElectorOptions, type ResolvedLeaderElectorOptions } from './elector-options.js';

export { CandidacySchema, LeaderElectorOptionsSchema, PHASE_STEP_MS, defaultRenewIntervalMs, renewCadenceMs } from './elector-options.js';
export type { ElectorRunPhase, ElectorStats, LeaderCallbacks, LeaderElectorOptions, ResolvedLeaderElectorOptions, StopReason } from './elector-options.js';
import { RenewalPhase, SESSION_QUIET_LEASES, stepDelay } from './follower.js';
import { FOLLOWING, followerDelay, followerStep, judgeClock, prevented, type FollowerEffect, type FollowerEvent, type FollowerSettings, type FollowerState, type Moment } from './step.js';
import { DECISIONS, Leadership, type Decisions } from './leadership.js';
import { sessionFallbackMs } from './leader.js';
import { SessionReader, sessionSeam, type Session } from './session.js';
import { detectPlatform } from './platform.js';
import { ClockSkewError, type StampClock } from './server-clock.js';
import { TermWrites } from './term-writes.js';
import type { Push, Wake } from './push.js';
import { faultReporter } from './faults.js';

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
  /** The decisions it calls through (lib/sdk/leadership.ts DECISIONS, or a planted bug's). */
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
  private state: FollowerState = FOLLOWING;
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
    this.follow = { ...this.options, instance: this.instance, fallbackAfterMs: this.fallbackAfterMs, sessionFallbackMs: this.sessionFallbackMs, candidate: this.candidate !== undefined, decideFollower: this.decide.decideFollower, cadence: { own, session: (name) => sessions.phase(name) } };
    this.writes = new TermWrites(this.lock, this.options, this.instance, this.time, (r) => this.announce(r), this.report);
    const self = this;
    const guard = { trusted: () => this.clockTrusted(), prevented: (jumpMs?: number) => this.clockPrevented(jumpMs) };
    const watch = { leading: () => this.note({ kind: 'leading' }), observe: (read: LeaseRead) => this.note({ kind: 'observed', read }), claimIn: (lease: Lease | undefined) => this.note({ kind: 'claimIn', lease }) };
    const acked = {
      get election() {
        return self.state.ackedElection;
      },
      set election(v: string | undefined) {
        self.state = { ...self.state, ackedElection: v };
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
    return { clockSkewPreventions: this.state.preventions, clockSynced: c.ok, clockErrorMs: 'errorMs' in c ? c.errorMs : undefined, clockOffsetMs: this.time.wallOffsetMs() };
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
    const j = judgeClock(this.state, this.moment(), this.options.leaseDurationMs, settling);
    this.state = j.state;
    if (j.report) this.carry({ kind: 'clockSkew', doubt: j.report });
    return j.trusted;
  }

  /** A write not made, or a term stopped, for the clock (a jump: reported at once). */
  private clockPrevented(jumpMs?: number): void {
    const p = prevented(this.state, this.mono(), jumpMs);
    this.state = p.state;
    if (p.report) this.carry({ kind: 'clockSkew', doubt: p.report });
  }

  /** The moment a step decides at: monotonic now, DynamoDB's time as measured, the clock's jumps so far. */
  private moment(): Moment {
    return { now: this.mono(), clock: this.time.check(this.options.maxClockErrorMs), jumps: this.time.jumps };
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
    return this.state.lastLeader;
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
    const unwatch = this.push?.watch(this.options.leaseName, (w) => this.onWake(w));
    const detach = this.session ? sessionSeam(this.session).attach(this.term.sessionListener()) : undefined;
    try {
      // follower steps failed in a row: the next waits the backoff (lib/sdk/faults.ts), whatever it had planned
      let failures = 0;
      while (!signal.aborted) {
        const woken = this.state.wakePending;
        this.state = { ...this.state, wakePending: false };
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
        if (!this.state.wakePending) await this.napFor(failures > 0 && !this.term.active ? this.decide.retryDelayMs(failures, this.options.retryPeriodMs, this.time.random()) : this.nextDelay(), signal);
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
    const planned = leading ? this.term.delay() : followerDelay(this.follow, this.state, this.mono(), this.pushLive, this.time.random());
    const clockKnown = this.time.check(this.options.maxClockErrorMs).ok;
    // (a draw only while the clock is in doubt: the simulator replays the same draws)
    return stepDelay({ planned, clockKnown, random: clockKnown ? 0 : this.time.random(), wakeAt: leading ? undefined : this.state.wakeAt, now: this.mono() });
  }

  /** The session a write of this worker's term should name: the live one's, or null to take a term off a session that is gone (undefined: no session option, name nothing). */
  private sessionToWrite(): string | null | undefined {
    return this.session ? (this.session.name ?? null) : undefined;
  }

  /** How long a follower waits out a session-held term's holder's own backstop read (lib/sdk/leader.ts sessionFallbackMs). */
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
  private announce(revision: number | undefined): void {
    this.push?.wake(this.options.leaseName, revision);
  }

  /**
   * Feeds `e` to the follower's step (lib/sdk/step.ts followerStep) and carries out its effects,
   * each read's or write's answer fed back as the next event, until the step asks for nothing more.
   */
  private async feed(e: FollowerEvent): Promise<void> {
    let next: FollowerEvent | undefined = e;
    while (next) {
      const { state, effects } = followerStep(this.follow, this.state, next, this.moment());
      this.state = state;
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
    const { state, effects } = followerStep(this.follow, this.state, e, this.moment());
    this.state = state;
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
        return { sent: this.lead(f.term, f.sentAt, f.lease, f.confirmed), answer: (ev) => ev as FollowerEvent };
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

  /** Leads the term won by the write sent at `sentAt` (Leadership.start: never one whose renew deadline already passed); a confirmed term then acts on its renewal's row. */
  private async lead(term: Term, sentAt: number, lease: Lease, confirmed: boolean): Promise<FollowerEvent> {
    const ok = await this.term.start(term, sentAt, lease);
    if (ok && confirmed) await this.term.afterRenewal(lease);
    return { kind: 'led', ok, leading: this.term.active };
  }
}
