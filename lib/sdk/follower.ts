/**
 * A follower's poll, decided apart from done (STYLE.md §1): `decideFollower` is a plain function of
 * what the worker read and remembers; LeaderElector carries out what it returns.
 */
import type { Lease } from '../schemas/lease.js';

/** What a follower knows after reading its lease: everything its decision rests on. */
export interface FollowerView {
  readonly lease: Lease | undefined;
  readonly identity: string;
  /** This start-up (a restart is another instance of the same identity). */
  readonly instance: string;
  readonly mode: 'coordinated' | 'NoCoordination';
  /** Whether this worker stands as a candidate (coordinated mode with a candidacy). */
  readonly candidate: boolean;
  /** The election this worker answered last. */
  readonly ackedElection: string | undefined;
  /** A ping went unanswered while DynamoDB's time was in doubt. */
  readonly unanswered: boolean;
  /** Monotonic now. */
  readonly now: number;
  /** Monotonic time the lease's current term (holder, instance, renewal, token, duration) was first seen. */
  readonly observedAt: number;
  /** Monotonic time since when the lease has been vacant, as this worker saw it. */
  readonly vacantSince: number | undefined;
  readonly retryPeriodMs: number;
  readonly fallbackAfterMs: number;
}

/** What a follower does after a poll, in this order. */
export interface FollowerDecision {
  /** The coordinator elected this start-up: confirm the term by renewing it (and nothing else). */
  readonly confirm: boolean;
  /**
   * Answer the open election (by renewing the candidacy), or the ping that went unanswered while
   * the clock was in doubt; the elector answers only if it can vouch for its clock.
   */
  readonly answer: { readonly election: string } | 'unanswered' | undefined;
  /** What to remember as `vacantSince`. */
  readonly vacantSince: number | undefined;
  /** Poll again no later than this (monotonic): the successor looks the moment the term would run out. */
  readonly wakeAt: number | undefined;
  /** Tell the coordinator the holder has not renewed for a whole term. */
  readonly reportVacancy: boolean;
  /** Take the vacant lease directly: as its designated successor, or by itself (NoCoordination, the fallback). */
  readonly take: 'successor' | 'self' | undefined;
}

/**
 * Whether the coordinator designated this worker (this start-up) to take the lease when it falls
 * vacant. Never while the lease prefers somebody else: the holder is yielding to that candidate.
 */
export function isSuccessor(lease: Lease | undefined, identity: string, instance: string): boolean {
  return lease?.successor === identity && (lease.successorInstance === undefined || lease.successorInstance === instance) && (lease.preferredHolder === undefined || lease.preferredHolder === identity);
}

const CONFIRM: FollowerDecision = { confirm: true, answer: undefined, vacantSince: undefined, wakeAt: undefined, reportVacancy: false, take: undefined };

export function decideFollower(v: FollowerView): FollowerDecision {
  const { lease, now } = v;
  if (lease?.holderIdentity === v.identity && lease.holderInstance === v.instance) return CONFIRM;
  const answer = !v.candidate ? undefined : lease?.election && v.ackedElection !== lease.election.id ? { election: lease.election.id } : v.unanswered ? ('unanswered' as const) : undefined;

  const held = lease?.holderIdentity !== undefined;
  const termMs = (lease?.leaseDurationSeconds ?? 0) * 1000;
  // the observer's clock, not renewTime: tolerates skew between machines
  const expired = held && now - v.observedAt > termMs;
  const successor = v.mode === 'coordinated' && isSuccessor(lease, v.identity, v.instance);
  if (held && !expired && !lease!.vacancyReport) {
    return { confirm: false, answer, vacantSince: undefined, wakeAt: successor ? v.observedAt + termMs + 1 : undefined, reportVacancy: false, take: undefined };
  }
  const vacantSince = v.vacantSince ?? (expired ? v.observedAt + termMs : now);
  const base = { confirm: false, answer, vacantSince, wakeAt: undefined };
  if (v.mode === 'NoCoordination') return { ...base, reportVacancy: false, take: 'self' };
  if (successor) return { ...base, reportVacancy: false, take: 'successor' };
  // A live successor takes the lease at once; give it one poll before asking for an election.
  const successorsTurn = lease?.successor !== undefined && now - vacantSince < v.retryPeriodMs;
  return {
    ...base,
    reportVacancy: expired && !lease!.vacancyReport && !lease!.election && !successorsTurn,
    take: now - vacantSince >= v.fallbackAfterMs ? 'self' : undefined,
  };
}
