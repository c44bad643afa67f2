import type { DynamoDBClient, PutItemCommandOutput, TransactWriteItemsCommandInput, TransactWriteItemsCommandOutput, UpdateItemCommandOutput } from '@aws-sdk/client-dynamodb';
import { Nap, systemClock, uniqueId } from '../clock.js';
import type { IdentityClaim, Lease } from '../schemas/lease.js';
import { instanceOnSession } from '../schemas/identity.js';
import type { Platform } from '../schemas/platform.js';
import { parse } from '../schemas/validation.js';
import { ConflictError } from '../stores/errors.js';
import { CandidateStore } from '../stores/candidate-store.js';
import { LeaseStore } from '../stores/lease-store.js';
import { dynamoLeaseLock, type LeaseLock, type LeaseRead, type Term } from './lock.js';
import { DuplicateIdentityError, LeaseCandidate } from './candidate.js';
import { fencedItemWrite, fencedTransactWrite, FencingError, NO_TRANSACTIONS, type FencedItemInput } from './fencing.js';
import { checkMultiRegion } from './multi-region.js';
import { INTERNAL_STOP, StartUp, deepFreeze, stampClockFor } from './options.js';
import { LeaderElectorOptionsSchema, defaultRenewIntervalMs, renewCadenceMs, type ElectorRunPhase, type ElectorStats, type LeaderCallbacks, type LeaderElectorOptions, type ResolvedLeaderElectorOptions } from './elector-options.js';

export { CandidacySchema, LeaderElectorOptionsSchema, PHASE_STEP_MS, defaultRenewIntervalMs, renewCadenceMs } from './elector-options.js';
export type { ElectorRunPhase, ElectorStats, LeaderCallbacks, LeaderElectorOptions, ResolvedLeaderElectorOptions, StopReason } from './elector-options.js';
import { isVacant, pollPlan, SESSION_QUIET_LEASES, STAMP_ERROR_MS, stepDelay, termToConfirm, watchesTerm } from './follower.js';
import { LeaseWatch } from './watch.js';
import { DECISIONS, Leadership, type Decisions } from './leadership.js';
import { sessionFallbackMs } from './leader.js';
import { SessionReader, sessionSeam, type Session } from './session.js';
import { detectPlatform } from './platform.js';
import type { StampClock } from './server-clock.js';
import { ClockGuard } from './clock-guard.js';
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
  /** Whether it may write the times it would write now (clock skew preventions). */
  private readonly guard: ClockGuard;
  /** An ack was held back for the clock: given as soon as it can be. */
  private unanswered = false;
  private readonly callbacks: LeaderCallbacks;
  private readonly onError: (e: Error) => void;
  /** onError, each fault named (lib/sdk/faults.ts). */
  private readonly report: (e: unknown) => void;
  private readonly startUp: StartUp<void>;
  /** Its term, while it leads. */
  private readonly term: Leadership;
  /** What this worker has seen of its lease: the reads, and when the term last changed (client-go's observedTime). */
  private readonly watch: LeaseWatch;
  private vacantSince: number | undefined;
  /** Monotonic time the successor should look again (when the term it watches would run out). */
  private wakeAt: number | undefined;
  private lastLeader: string | undefined;
  /** The highest fencing token this start-up has led with: it never confirms a term below it. */
  private ledToken = -1;
  /** The last claim to this worker's name it answered (answerClaim). */
  private answeredClaim: string | undefined;
  /** The election this candidate last answered (its leader side answers too). */
  private readonly acked: { election: string | undefined } = { election: undefined };
  private readonly detect: () => Promise<Platform | undefined>;
  private platformFound: Platform | undefined;
  /** The push path, if any (the `push` option). */
  private readonly push: Push | undefined;
  /** A wake came (or the push path went up or down): look at the lease now, not after the sleep. */
  private wakePending = false;
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
    this.watch = new LeaseWatch(this.options, this.instance, this.lock, (name) => sessions.phase(name), () => this.mono(), (h) => this.noteHolder(h), (c) => this.answerClaim(c), () => this.sessionFallbackMs);
    this.writes = new TermWrites(this.lock, this.options, this.instance, this.time, (r) => this.announce(r), this.report);
    this.guard = new ClockGuard(this.time, this.options, `LeaderElector "${this.options.identity}" of lease "${this.options.leaseName}"`, this.onError);
    const { options: opts, instance, time, guard, writes, lock: leaseLock, decide, watch, callbacks: cbs, candidate, acked } = this;
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
    return this.guard.stats;
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
   * (ClockGuard.)
   */
  private clockTrusted(settling = false): boolean {
    return this.guard.trusted(settling);
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
    return this.lastLeader;
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
        const woken = this.wakePending;
        this.wakePending = false;
        try {
          if (this.term.active) await (woken ? this.term.woken() : this.term.step());
          else await this.followerStep(woken);
          failures = 0;
        } catch (e) {
          // a fault: told once per try, and tried again after the backoff (a follower) or at the
          // leader's retry period (its renew deadline guards its term)
          failures++;
          this.report(e);
        }
        if (!this.wakePending) await this.napFor(failures > 0 && !this.term.active ? this.decide.retryDelayMs(failures, this.options.retryPeriodMs, this.time.random()) : this.nextDelay(), signal);
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
    const planned = leading ? this.term.delay() : this.watch.nextDelay(this.pushLive, this.time.random());
    const clockKnown = this.time.check(this.options.maxClockErrorMs).ok;
    // (a draw only while the clock is in doubt: the simulator replays the same draws)
    return stepDelay({ planned, clockKnown, random: clockKnown ? 0 : this.time.random(), wakeAt: leading ? undefined : this.wakeAt, now: this.mono() });
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
    const seen = this.watch.observed;
    if (w?.revision !== undefined && seen !== undefined && w.revision === seen.revision) return;
    this.wakePending = true;
    this.nap?.end();
  }

  /** Whether wakes reach this worker now: quiet followers then read rarely, and a cancelled leader hands over at once. */
  private get pushLive(): boolean {
    return this.push?.healthy() === true;
  }

  /** Tells the other followers the lease changed (after a hand-off or a release this worker wrote). */
  private announce(revision: number | undefined): void {
    this.push?.wake(this.options.leaseName, revision);
  }

  private followerStep(woken = false): Promise<void> {
    // what it reads: lib/sdk/follower.ts pollPlan (most polls write nothing)
    const last = this.watch.lastRaw;
    const { watch: w, options: o } = this;
    const plan = pollPlan({ mode: o.mode, woken, pushLive: this.pushLive, raw: last?.item, view: w.lastRead, leaseReadAt: w.leaseReadAt, now: this.mono(), backstopMs: this.sessionBackstopMs });
    return this.watch.readView(plan.consistent, plan.sessionOnly ? last : undefined).then(({ raw, view: read, sentAt }) => this.afterPoll(raw, read, sentAt, woken, plan.consistent && !plan.sessionOnly));
  }

  /** What a follower does with its poll: mostly nothing (undefined), else the writes it decides on. */
  private afterPoll(raw: LeaseRead, read: LeaseRead, sentAt: number, woken: boolean, consistent: boolean): Promise<void> | undefined {
    this.watch.polled(raw, read, sentAt, woken);
    const d = this.decide.decideFollower({
      lease: read.item,
      identity: this.options.identity,
      instance: this.instance,
      mode: this.options.mode,
      candidate: this.candidate !== undefined,
      ackedElection: this.acked.election,
      unanswered: this.unanswered,
      now: this.mono(),
      observedAt: this.watch.observed!.at,
      vacantSince: this.vacantSince,
      retryPeriodMs: this.options.retryPeriodMs,
      fallbackAfterMs: this.watch.lastHeldOnSession ? Math.max(this.fallbackAfterMs, this.sessionFallbackMs) : this.fallbackAfterMs,
    });
    if (d.confirm || (d.answer !== undefined && this.candidate) || d.take !== undefined || d.reportVacancy) return this.actOnPoll(raw, read, d, consistent);
    this.vacantSince = d.vacantSince;
    this.wakeAt = d.wakeAt;
    return undefined;
  }

  private async actOnPoll(raw: LeaseRead, read: LeaseRead, d: ReturnType<Decisions['decideFollower']>, consistent: boolean): Promise<void> {
    if (d.confirm) {
      // Elected (by the coordinator, for this start-up): confirm by renewing before acting; not
      // confirmed (the term moved on): the next step reads the lease row itself, not a copy
      this.wakeAt = undefined;
      // a term rewritten under this start-up is ended on the row, not confirmed (follower.ts termToConfirm)
      const c = termToConfirm(read.item!, this.ledToken);
      if (c.end) return this.writes.endChanged(c.term);
      // handed over: led from this read, confirmed after (follower.ts leadFromRead)
      const o = this.options;
      const h = this.decide.leadFromRead({ lease: read.item!, identity: o.identity, consistent, clock: this.measured(), stampErrorMs: Math.max(STAMP_ERROR_MS, o.maxClockErrorMs), now: this.mono(), leaseDurationMs: o.leaseDurationMs, renewDeadlineMs: o.renewDeadlineMs, retryPeriodMs: o.retryPeriodMs });
      if (h.kind === 'readAgain') {
        const again = await this.watch.readView(true);
        return this.afterPoll(again.raw, again.view, again.sentAt, true, true);
      }
      await (h.kind === 'lead' ? this.leadHanded(c.term, h.renewedAt, read.item!) : this.takeTerm(c.term));
      if (!this.term.active) this.watch.leaseReadAt = undefined;
      return;
    }
    // An answer makes this worker electable: not while it cannot tell DynamoDB's time for long.
    if (d.answer !== undefined && this.candidate) {
      if (this.clockTrusted(true)) {
        await this.candidate.renew();
        if (d.answer === 'unanswered') this.unanswered = false;
        else this.acked.election = d.answer.election;
      } else if (d.answer !== 'unanswered') this.unanswered = true;
    }
    this.vacantSince = d.vacantSince;
    this.wakeAt = d.wakeAt;
    if (d.take === 'successor') return this.succeed(raw);
    if (d.reportVacancy) await this.reportVacancy(raw);
    if (d.take === 'self') await this.acquire(raw, 'self');
  }

  /**
   * Takes a vacant lease as its designated successor (or second successor, once the successor has
   * had its grace: decideFollower). A lost race (a vacancy report, an election opened, somebody
   * else's write) is read again at once: if the lease is still vacant and still names this worker,
   * it tries once more; otherwise the election goes on as usual.
   */
  private async succeed(read: LeaseRead): Promise<void> {
    if (await this.acquire(read, 'successor')) return;
    const again = await this.watch.readView(true);
    this.watch.lastRaw = again.raw;
    this.watch.observe(again.view);
    const l = again.view.item;
    if (isVacant(l, this.watch.observed!.at, this.mono()) && watchesTerm(l, this.options.identity, this.instance)) await this.acquire(again.raw, 'successor');
  }

  /** Tells the coordinator the holder has not renewed for a whole term, as this worker watched. */
  private async reportVacancy(read: LeaseRead): Promise<void> {
    try {
      // undefined: the lease moved on, nothing to report
      if ((await this.writes.reportVacancy(read)) !== undefined && this.candidate && this.clockTrusted(true)) await this.candidate.renew();
    } catch (e) {
      if (!(e instanceof ConflictError)) throw e; // the candidate row re-registered by another write meanwhile
    }
  }

  /**
   * Direct acquisition (NoCoordination, the fallback, or as the designated successor), conditioned
   * on the revision read. False when somebody else moved first.
   */
  private async acquire(read: LeaseRead, electedBy: 'self' | 'successor'): Promise<boolean> {
    if (!this.clockTrusted()) return false;
    const jumps = this.time.jumps;
    const sentAt = this.mono();
    const got = await this.writes.acquire(read, electedBy, this.sessionToWrite(), this.platformFound);
    if (!('written' in got)) {
      // the row DynamoDB returned with the refusal names whoever moved first: a new holder, seen now
      this.noteHolder(got.refusedBy);
      return false;
    }
    const written = got.written;
    this.watch.observe({ ...read, item: written, revision: written.revision });
    const term = { holderIdentity: this.options.identity, fencingToken: written.fencingToken };
    if (await this.jumpedSince(jumps, term)) return false;
    return await this.startLeading(term, sentAt, written);
  }

  /**
   * Another start-up claims this worker's candidate name (one identity, one process): this one is
   * alive, so it answers by renewing its candidate row, which refuses the newcomer; and says so.
   * Each claim is answered once.
   */
  private answerClaim(c: IdentityClaim): void {
    if (!this.candidate || c.name !== this.options.identity || c.of !== this.instance || c.instance === this.instance) return;
    const key = `${c.instance}@${c.at}`;
    if (key === this.answeredClaim) return;
    this.answeredClaim = key;
    this.onError(new DuplicateIdentityError(c.name, this.options.leaseName, c.instance, this.instance, 'held'));
    void this.candidate.renew().catch(this.report);
  }

  /** Reports a holder seen (onNewLeader) when it is not the one last reported. */
  private noteHolder(holder: unknown): void {
    if (typeof holder !== 'string' || holder === this.lastLeader) return;
    this.lastLeader = holder;
    this.callbacks.onNewLeader?.(holder);
  }

  /** Confirms a term the coordinator gave this worker: a renewal first, then the work. */
  private async takeTerm(term: Term): Promise<void> {
    if (!this.clockTrusted()) return; // not confirmed: the coordinator's short first term runs out, or the doubt clears first
    const jumps = this.time.jumps;
    const sentAt = this.mono();
    const renewed = await this.writes.renew(term, this.sessionToWrite() ?? undefined);
    if (!renewed) return;
    this.watch.observe({ key: { name: this.options.leaseName }, item: renewed, revision: renewed.revision });
    if (await this.jumpedSince(jumps, term)) return;
    if (await this.startLeading(term, sentAt, renewed)) await this.term.afterRenewal(renewed);
  }

  /** DynamoDB's time less the monotonic clock as this worker measures it now, and how far off that may be; undefined while it cannot vouch for it. */
  private measured(): { offset: number; errorMs: number } | undefined {
    const c = this.time.check(this.options.maxClockErrorMs);
    if (!c.ok) return undefined;
    // clockSync 'none': the wall clock, unmeasured, within the bound every writer's is assumed within;
    // 1 ms more for the rounding of stamps to whole ms
    return { offset: this.time.now() - this.mono(), errorMs: 1 + (this.options.clockSync === 'none' ? Math.max(STAMP_ERROR_MS, this.options.maxClockErrorMs) : c.errorMs) };
  }

  /**
   * Leads a term handed to it from the read that showed it (`renewedAt`: follower.ts leadFromRead),
   * then confirms it: the leader's first renewal, whose answer extends the term or stops it.
   */
  private async leadHanded(term: Term, renewedAt: number, lease: Lease): Promise<void> {
    if ((await this.startLeading(term, renewedAt, lease)) && this.term.active) await this.term.step();
  }

  /** Leads the term won by the write sent at `sentAt` (Leadership.start: never one whose renew deadline already passed). */
  private async startLeading(term: Term, sentAt: number, lease: Lease): Promise<boolean> {
    if (!(await this.term.start(term, sentAt, lease))) return false;
    this.ledToken = Math.max(this.ledToken, term.fencingToken);
    this.vacantSince = undefined;
    return true;
  }

  /** A term written while the clock jumped: its stamp may be off by the jump, so it is given back rather than led on. */
  private async jumpedSince(jumps: number, term: Term): Promise<boolean> {
    if (this.time.jumps === jumps) return false;
    this.guard.prevented();
    await this.writes.release(term);
    return true;
  }

}
