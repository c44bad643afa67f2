/**
 * A leader's decisions, as plain functions of what it knows and one observation (client-go's
 * `tryAcquireOrRenew` and `renew` loop, with Conclave's sessions and push path as inputs): no I/O,
 * no timers, no clock — `now` comes in with the observation. LeaderElector feeds them and carries
 * out what they say; the follower's side is lib/sdk/follower.ts.
 *
 * Observations: the renew deadline's timer fired, someone asked whether it leads, the answer to its
 * own renewal, a read of its lease (woken, or its backstop), its session renewed (with the terms
 * the lease stream's function marked ended on the row) or ended.
 */
import type { Lease } from '../schemas/lease.js';
import { SETTLING_TERMS } from './follower.js';

/**
 * Why a leader stopped: run() cancelled, another candidate preferred, the renew deadline passed (or
 * its clock jumped, so the deadline could no longer be judged), the lease moved on (or its term was
 * rewritten under it), or the leader's work failed (onStartedLeading rejected or threw, and
 * `onLeaderWorkFailure` is `'release'`, the default).
 */
export type StopReason = 'cancelled' | 'preempted' | 'renewDeadline' | 'deposed' | 'workFailed';

/** What a leader knows of its own term. */
export interface TermView {
  readonly holderIdentity: string;
  readonly instance: string;
  readonly fencingToken: number;
  /** Monotonic send time of the last write that renewed the term (its own, or its session's). */
  readonly renewedAt: number;
  /** The session the term is held on, as last written. */
  readonly session: string | undefined;
}

/** The settings a leader decides by (the elector's options, resolved). */
export interface LeaderSettings {
  readonly leaseName: string;
  readonly identity: string;
  readonly mode: 'coordinated' | 'NoCoordination';
  readonly renewDeadlineMs: number;
}

/** One thing a leader learnt. */
export type LeaderObservation =
  /** The renew deadline's timer fired (armed for renewedAt + renewDeadline), or someone asked `isLeader()` (judged on the monotonic clock at `now`). */
  | { readonly kind: 'deadline' | 'asked'; readonly now: number }
  /** Its session was renewed by a write sent at `sentAt`, answered at `now`; `ended`: the row's marks. */
  | { readonly kind: 'sessionRenewed'; readonly name: string; readonly sentAt: number; readonly now: number; readonly ended: Readonly<Record<string, number>> }
  /** Its session ended: the term must be renewed by the elector itself from now on. */
  | { readonly kind: 'sessionEnded'; readonly name: string }
  /** Its own renewal, sent at `sentAt`, was answered with `lease` (undefined: refused, the lease is no longer in this term). */
  | { readonly kind: 'renewed'; readonly sentAt: number; readonly lease: Lease | undefined }
  /** A read of its lease (woken, or the backstop read of a term held on a session). */
  | { readonly kind: 'read'; readonly lease: Lease | undefined };

/** What the leader does next. */
export type LeaderStep =
  /** Nothing changes. */
  | { readonly kind: 'none' }
  /**
   * Stop acting now (onStoppedLeading with `reason`); `look`: read the lease at once after;
   * `endTerm`: the row still carries this term's token copy but not its holder or token (rewritten
   * under it): end the term on the row too, so it is elected again at once.
   */
  | { readonly kind: 'stop'; readonly reason: StopReason; readonly look: boolean; readonly endTerm?: true }
  /** The term is renewed from `renewedAt`; `lease`, when a write or read returned the row. */
  | { readonly kind: 'renewed'; readonly renewedAt: number; readonly lease: Lease | undefined }
  /** The term stands; the row as read (the coordinator may have named a successor or a preferred holder). */
  | { readonly kind: 'seen'; readonly lease: Lease }
  /** Look at the lease now (the next step renews it itself). */
  | { readonly kind: 'look' };

const NONE: LeaderStep = { kind: 'none' };
const stop = (reason: StopReason, look = false): LeaderStep => ({ kind: 'stop', reason, look });

/** Whether `l` is still in the term `t` (holder, this start-up, token). */
export function inTerm(l: Lease | undefined, t: TermView): l is Lease {
  return l?.holderIdentity === t.holderIdentity && l.holderInstance === t.instance && l.fencingToken === t.fencingToken;
}

/** A leader's decision on one observation. */
export function decideLeader(s: LeaderSettings, t: TermView, o: LeaderObservation): LeaderStep {
  switch (o.kind) {
    case 'deadline':
      // the timer armed for renewedAt + renewDeadline (re-armed at every renewal) fired: stop, even
      // should the monotonic clock read a hair short of it (a timer may fire a millisecond early)
      return stop('renewDeadline');
    case 'asked':
      // client-go: stop acting once the renew deadline has passed since the last renewal was sent
      return o.now >= t.renewedAt + s.renewDeadlineMs ? stop('renewDeadline') : NONE;
    case 'sessionRenewed': {
      if (t.session !== o.name) return NONE;
      // someone else ended this term (the coordinator, the platform function, the CLI, an
      // operator's delete): the lease stream's function marked it on the session, wake or no wake.
      // Also ended on the row, where the row still carries this term's token copy (a fencing token
      // moved under it: the session would otherwise keep the rewritten term alive, nobody leading it)
      const end = o.ended[s.leaseName];
      if (end !== undefined && end >= t.fencingToken) return { kind: 'stop', reason: 'deposed', look: true, endTerm: true };
      // answered after the deadline: it extends nothing (others may already have seen the session expire)
      if (o.now >= t.renewedAt + s.renewDeadlineMs) return stop('renewDeadline');
      return o.sentAt > t.renewedAt ? { kind: 'renewed', renewedAt: o.sentAt, lease: undefined } : NONE;
    }
    case 'sessionEnded':
      return t.session === o.name ? { kind: 'look' } : NONE;
    case 'renewed':
      if (!o.lease) return stop('deposed'); // the lease is no longer in this term
      // Renewed (the term's token copy matched), yet the row is not this term's: its holder or
      // fencing token was rewritten under it (an operator, a peer). Fenced writes are refused from
      // now on: leading on would hold the lease and do nothing. Stop, and end the term on the row.
      if (!inTerm(o.lease, t)) return { kind: 'stop', reason: 'deposed', look: true, endTerm: true };
      return { kind: 'renewed', renewedAt: Math.max(t.renewedAt, o.sentAt), lease: o.lease };
    case 'read': {
      const termToken = o.lease?.termToken;
      if (inTerm(o.lease, t)) {
        // Held on its session, yet the row names another (or none): `session` was rewritten under
        // the holder (a peer of the same lease can write it). Observers no longer judge the term by
        // this holder's renewals — they wait out this very read (sessionStanding, sessionFallbackMs) —
        // so it ends here, on the row too, and is elected again.
        if (t.session !== undefined && o.lease.session !== t.session) return { kind: 'stop', reason: 'deposed', look: true, endTerm: true };
        return { kind: 'seen', lease: o.lease };
      }
      // The row still carries this term's token copy, yet not its holder or fencing token: rewritten
      // under it, as above. A leader on a session renews no lease row and learns it by reading:
      // left as it is, the session would keep the rewritten term alive with nobody leading it.
      return termToken === t.fencingToken ? { kind: 'stop', reason: 'deposed', look: true, endTerm: true } : stop('deposed');
    }
  }
}

/** A holder's term: its identity and the fencing token of its acquisition. */
export interface HeldTerm {
  readonly holderIdentity: string;
  readonly fencingToken: number;
}

/** The part of a leader's state its decisions change: one record, replaced by each step (the shell keeps the deadline's timer and the work's signal). */
export interface LeaderTerm {
  readonly term: HeldTerm;
  /** Monotonic time the last successful renewal was *sent*: the term is safe until then + renewDeadline. */
  readonly renewedAt: number;
  /** Renewals since the term was won. */
  readonly renewals: number;
  /** The last renewal (or the next try) failed: try again after a retry period, not a renew interval. */
  readonly retrying: boolean;
  /** The lease as the last renewal (or the acquisition, or a read) returned it: whom the coordinator named successor. */
  readonly lease: Lease | undefined;
  /** The session the term is held on (the lease's `session` as last written): its renewals are the term's. */
  readonly session: string | undefined;
}

/** What the shell carries out after a leader's step, in this order. */
export type LeaderEffect =
  /** Stop acting (onStoppedLeading with `reason`, the work's signal aborted). */
  | { readonly kind: 'stop'; readonly reason: StopReason }
  /** End the term on the row too (it was rewritten under the holder): elected again at once. */
  | { readonly kind: 'endTerm' }
  /** Read the lease now. */
  | { readonly kind: 'look' }
  /** Arm the renew deadline's timer for renewedAt + renewDeadline. */
  | { readonly kind: 'armDeadline' };

const END: LeaderEffect = { kind: 'endTerm' };
const LOOK: LeaderEffect = { kind: 'look' };
const ARM: LeaderEffect = { kind: 'armDeadline' };

/**
 * One step of a leader: its term after `o` (undefined: it stopped) and what to carry out. Pure:
 * `decide` is decideLeader (or, in the simulator, a planted bug's).
 */
export function leaderStep(s: LeaderSettings, instance: string, t: LeaderTerm, o: LeaderObservation, decide: typeof decideLeader = decideLeader): { readonly term: LeaderTerm | undefined; readonly effects: readonly LeaderEffect[] } {
  const d = decide(s, { ...t.term, instance, renewedAt: t.renewedAt, session: t.session }, o);
  switch (d.kind) {
    case 'stop':
      return { term: undefined, effects: [{ kind: 'stop', reason: d.reason }, ...(d.endTerm ? [END] : []), ...(d.look ? [LOOK] : [])] };
    case 'look':
      return { term: t, effects: [LOOK] };
    case 'renewed':
      return { term: { ...t, renewedAt: d.renewedAt, renewals: t.renewals + 1, retrying: false, ...(d.lease ? { lease: d.lease, session: d.lease.session } : {}) }, effects: [ARM] };
    case 'seen':
      return { term: { ...t, lease: d.lease }, effects: [] };
    case 'none':
      return { term: t, effects: [] };
  }
}

/** What a leader does after a renewal or a read showed it the lease in its term. */
export type AfterRenewal =
  /** The coordinator prefers another holder: stop ('preempted'), hand the term to the heir if one is named, else release; then ack. */
  | { readonly kind: 'yield' }
  /** An election is open that this candidate has not answered: ack it. */
  | { readonly kind: 'ack'; readonly election: string }
  | { readonly kind: 'none' };

/** After a renewal: yield to a preferred holder, answer an open election, or nothing. */
export function afterRenewal(s: LeaderSettings, lease: Lease, k: { readonly candidate: boolean; readonly ackedElection: string | undefined }): AfterRenewal {
  if (s.mode === 'coordinated' && lease.preferredHolder && lease.preferredHolder !== s.identity) return { kind: 'yield' };
  if (k.candidate && lease.election && k.ackedElection !== lease.election.id) return { kind: 'ack', election: lease.election.id };
  return { kind: 'none' };
}

/**
 * Whom a leader stepping down hands its term to: the successor the coordinator designated on the
 * lease as last renewed (its process named), in coordinated mode, unless the lease prefers somebody
 * else (or names this worker).
 */
export function heirOf(s: LeaderSettings, l: Lease | undefined): { name: string; instance: string } | undefined {
  if (s.mode !== 'coordinated' || !l?.successor || !l.successorInstance) return undefined;
  if (l.preferredHolder !== undefined && l.preferredHolder !== l.successor) return undefined;
  if (l.successor === s.identity) return undefined;
  return { name: l.successor, instance: l.successorInstance };
}

/** What a leader's next-step timing depends on. */
export interface LeaderTiming {
  /** Held on the process's live session (it renews nothing itself). */
  readonly onLiveSession: boolean;
  /** Wakes reach this worker now. */
  readonly pushLive: boolean;
  /** How often a leader on its live session reads its own lease while wakes reach it (the followers' backstop). */
  readonly holderBackstopMs: number;
  /** The last renewal (or the next try) failed. */
  readonly retrying: boolean;
  /** NoCoordination without a renewIntervalMs of its own: a retry period after each step, as client-go. */
  readonly everyRetryPeriod: boolean;
  readonly retryPeriodMs: number;
  /** How long after a renewal was sent the next goes out (the renew interval less PHASE_STEP_MS). */
  readonly cadenceMs: number;
  readonly renewedAt: number;
  readonly now: number;
  /** A number in [0, 1) (jitter). */
  readonly random: number;
}

/**
 * When a leader steps next: held on its live session, it only looks at the lease (rarely while
 * wakes reach it, else every renew interval); a retry period after a failed try; otherwise a renew
 * interval after the last renewal was sent — a steady cadence its successor can read right behind.
 */
export function leaderDelay(t: LeaderTiming): number {
  if (t.onLiveSession) return t.pushLive ? t.holderBackstopMs * (1 + 0.1 * t.random) : t.cadenceMs;
  if (t.retrying || t.everyRetryPeriod) return t.retryPeriodMs;
  return Math.max(0, t.renewedAt + t.cadenceMs - t.now);
}

/**
 * How long a follower waits before its fallback takes a lease it last saw held on a session and
 * now sees vacant or gone, at the least. A term end its holder did not write reaches it through its
 * session (the lease stream's mark, read at each session renewal); with that function down too (an
 * operator's delete while the functions are down), only the holder's own backstop read of its lease
 * tells it — every `sessionBackstopMs`, jittered by up to a tenth — and it stops at once. So the
 * fallback waits that long, its renew deadline and a retry period more: the holder has stopped
 * before anyone takes the lease by fallback, and the holder keeps reading its lease rarely (what a
 * session saves). A lease not held on a session keeps `fallbackAfterMs`.
 */
export function sessionFallbackMs(o: { readonly sessionBackstopMs: number; readonly renewDeadlineMs: number; readonly retryPeriodMs: number }): number {
  return Math.ceil(1.1 * o.sessionBackstopMs) + o.renewDeadlineMs + o.retryPeriodMs;
}

/**
 * How long a cancelled leader with an heir leads on before it hands the term over: until its next
 * renewal would be due, the moment the heir reads (at most a renew interval). At once when the heir
 * is told (a wake reaches it: `pushLive`), when the caller waits for the release (`promptly`:
 * withLease), after a failed renewal, and in a term not yet renewed twice, which the heir is still
 * settling on (it reads it every SETTLING_READ_MS for its first lease durations: it sees a hand-off
 * now as soon).
 */
export function handOffDelay(t: {
  readonly promptly: boolean;
  readonly pushLive: boolean;
  readonly retrying: boolean;
  /** Renewals since the term was won, at `since` (monotonic). */
  readonly renewals: number;
  readonly since: number;
  readonly renewedAt: number;
  /** How long after a renewal was sent the next goes out. */
  readonly cadenceMs: number;
  readonly leaseDurationMs: number;
  readonly now: number;
}): number {
  if (t.promptly || t.pushLive) return 0;
  const young = t.renewals < 2 && t.now - t.since < (SETTLING_TERMS - 0.5) * t.leaseDurationMs;
  return t.retrying || young ? 0 : t.renewedAt + t.cadenceMs - t.now;
}
