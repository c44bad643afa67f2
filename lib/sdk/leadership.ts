/**
 * A LeaderElector's term while it leads: it carries out the leader's decisions (lib/sdk/leader.ts,
 * through `Decisions`) on each observation — its renewals' answers, reads of its lease, its session's
 * renewals and end, the renew deadline's timer — and keeps the deadline armed: client-go's rule, a
 * leader stops acting once it has not renewed for its renew deadline, before anyone else can see
 * the term expire. Its writes go through TermWrites (its LeaseLock); its callbacks are the user's.
 */
import type { Timer } from '../clock.js';
import type { Candidate } from '../schemas/candidate.js';
import type { Lease } from '../schemas/lease.js';
import type { Heir, LeaseLock, LeaseRead, Term } from './lock.js';
import type { LeaseCandidate } from './candidate.js';
import type { LeaderCallbacks, ResolvedLeaderElectorOptions, StopReason } from './elector-options.js';
import { SESSION_QUIET_LEASES } from './follower.js';
import { retryDelayMs } from './faults.js';
import { decideFollower } from './follower.js';
import { afterRenewal, decideLeader, handOffDelay, heirOf, leaderDelay, leaderStep, type LeaderObservation, type LeaderTerm } from './leader.js';
import type { StampClock } from './server-clock.js';
import type { Session, SessionListener } from './session.js';
import type { TermWrites } from './term-writes.js';

/**
 * The decisions a LeaderElector calls through: the pure functions of lib/sdk/follower.ts,
 * leader.ts and faults.ts. One object per elector, so the simulator can plant a wrong decision in
 * the electors it builds (sim/bugs.ts, through the internal `electorWith`).
 */
export interface Decisions {
  readonly decideFollower: typeof decideFollower;
  readonly decideLeader: typeof decideLeader;
  /** How long a failed step waits before the next try. */
  readonly retryDelayMs: typeof retryDelayMs;
  /** What a leader whose work failed does with its term (the `onLeaderWorkFailure` option). */
  readonly workFailure: (o: Pick<ResolvedLeaderElectorOptions, 'onLeaderWorkFailure'>) => 'keep' | 'giveUp';
}

export const DECISIONS: Decisions = {
  decideFollower,
  decideLeader,
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
  readonly watch: { leading(): void; observe(read: LeaseRead): void; claimIn(lease: Lease | undefined): void };
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
      } else if (e.kind === 'endTerm') void this.c.writes.endChanged(leading.t.term);
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


  /** When the leader steps next (lib/sdk/leader.ts leaderDelay). */
  delay(): number {
    const l = this.leading!.t;
    const onLiveSession = this.onLiveSession(l);
    const pushLive = this.c.pushLive();
    return leaderDelay({
      onLiveSession,
      pushLive,
      // as rarely as its followers: a term ended while the functions are down is not taken by a
      // follower's fallback before this read (lib/sdk/leader.ts sessionFallbackMs)
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
