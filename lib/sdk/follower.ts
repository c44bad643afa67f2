/**
 * A follower's poll, decided apart from done (STYLE.md §1): `decideFollower` is a plain function of
 * what the worker read and remembers; LeaderElector carries out what it returns.
 */
import { renewedBy, SESSION_QUIET_LEASES, sessionStanding } from '../election/vacancy.js';
import { processOf, vouchesFor } from '../schemas/identity.js';
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

/**
 * Whether the coordinator named this worker (this start-up) second successor: it takes a lease
 * whose term ran out as it watched it when the successor has not taken it within
 * SECOND_SUCCESSOR_GRACE_MS. Never while the lease prefers somebody else, nor when it is the
 * successor too (a lease written by hand).
 */
export function isSecondSuccessor(lease: Lease | undefined, identity: string, instance: string): boolean {
  return (
    lease?.secondSuccessor === identity &&
    (lease.secondSuccessorInstance === undefined || lease.secondSuccessorInstance === instance) &&
    (lease.preferredHolder === undefined || lease.preferredHolder === identity) &&
    !isSuccessor(lease, identity, instance)
  );
}

/** Whether this worker watches the holder's renewals closely: the successor, or the second successor. */
export const watchesTerm = (lease: Lease | undefined, identity: string, instance: string): boolean => isSuccessor(lease, identity, instance) || isSecondSuccessor(lease, identity, instance);

/**
 * How long after a term ran out, as it watched it, the second successor waits for the successor
 * before it takes the lease itself. Longer than the successor's takeover (a read and a write just
 * after the term's end, each a round trip) and the spread between two close watchers' views of the
 * last renewal (each sees it within tens of ms of its landing); short against the term: a dead
 * successor costs this, not an election.
 */
export const SECOND_SUCCESSOR_GRACE_MS = 200;

/**
 * Whether `lease` is vacant as this follower watched it: nobody holds it, a vacancy was reported, or
 * its term has run out since it was first seen at `observedAt` (the observer's clock, not
 * renewTime: tolerates skew between machines).
 */
export function isVacant(lease: Lease | undefined, observedAt: number, now: number): boolean {
  return lease?.holderIdentity === undefined || lease.vacancyReport !== undefined || now - observedAt > lease.leaseDurationSeconds * 1000;
}

/** What a follower's next poll reads. */
export interface PollPlan {
  /** A consistent read of the lease row (NoCoordination, or woken: it is news); otherwise an eventually consistent one (every write it leads to is conditioned on it). */
  readonly consistent: boolean;
  /**
   * Only the session row, not the lease row: a quiet lease held on a session (shared by the
   * process's electors), with wakes reaching this worker and the lease row read within the backstop.
   */
  readonly sessionOnly: boolean;
}

/** How a follower reads on its next poll, from what it last read (`raw`: the lease row; `view`: as judged) and when. */
export function pollPlan(p: {
  readonly mode: 'coordinated' | 'NoCoordination';
  readonly woken: boolean;
  readonly pushLive: boolean;
  readonly raw: Lease | undefined;
  readonly view: Lease | undefined;
  /** Monotonic time the lease row itself was last read. */
  readonly leaseReadAt: number | undefined;
  readonly now: number;
  /** The lease row is read at least this often (a backstop for a lost wake). */
  readonly backstopMs: number;
}): PollPlan {
  const coordinated = p.mode === 'coordinated';
  const l = p.raw;
  const sessionOnly = !p.woken && coordinated && p.pushLive && l?.session !== undefined && l.holderIdentity !== undefined && isQuiet(p.view) && p.leaseReadAt !== undefined && p.now - p.leaseReadAt < p.backstopMs;
  return { consistent: !coordinated || p.woken, sessionOnly };
}

/**
 * The term a row names this start-up's holder of, as it can confirm it: the row's own (holder and
 * fencing token), or `end` — a term rewritten under it, which no renewal can confirm, ended on the
 * row instead (conditioned on the token copy) so it is elected anew with a token above both. Such a
 * row either carries a token below one this start-up has led (`ledToken`: moved back, then adopted
 * by a write of the coordinator's), or a token that no longer matches its term's copy (`termToken`:
 * moved under the term, which each renewal is conditioned on, and a session can keep alive for
 * ever: simulator seed 1448349414, 164 s leaderless once the leader's own end had been refused).
 */
export function termToConfirm(l: Lease, ledToken: number): { readonly end: boolean; readonly term: { readonly holderIdentity: string; readonly fencingToken: number } } {
  if (l.fencingToken < ledToken || (l.termToken !== undefined && l.termToken !== l.fencingToken)) return { end: true, term: { holderIdentity: l.holderIdentity!, fencingToken: l.termToken ?? l.fencingToken } };
  return { end: false, term: { holderIdentity: l.holderIdentity!, fencingToken: l.fencingToken } };
}

/** A session row as a follower judges a term by it. */
export interface SessionRow {
  readonly name: string;
  readonly renewTime: number;
  readonly process?: string | undefined;
}

const stampOf = (r: SessionRow | undefined) => r && { name: r.name, renewTime: r.renewTime, process: r.process };

/**
 * Where a follower last looked for the session of a term's holder's own process (a term whose named
 * session does not vouch for it): the freshest row of that process in the partition the lease's
 * `session` names, found by a query sent at `at` (monotonic) after a read of the lease at `revision`.
 */
export interface OwnSessionFound {
  readonly holderInstance: string;
  readonly revision: number;
  /** The row's name; undefined: the partition had no row of that process. */
  readonly name: string | undefined;
  readonly at: number;
}

/**
 * What a follower reads to judge a term held on a session whose row (`named`, as read; undefined:
 * gone) does not vouch for its holder — a peer rewrote the lease's `session`, or the row was
 * collected: the holder's own process's session, which its term lives by. `query`: look for it (a
 * Query of the partition, LeaseLock.processSession); `read`: read the row found before, by name;
 * `none`: the partition had none a moment ago (judged by the fallback). Undefined: the row named
 * vouches (or the term is on no session), nothing more to read.
 *
 * What was `found` stands for its term, at the lease revision it was found at, for a lease duration:
 * the term lives by the session its holder put it on, and a process runs one session at a time, a
 * new row only after the last one ended, so that session is the freshest row of the process at any
 * query sent after the holder's write that named it: every lease write up to the revision read
 * had landed before that read was answered, and the query is sent after that answer (never one
 * another elector sent: LeaseLock.processSession is not shared).
 * A later move of the term onto a newer session is another write of the lease: another revision,
 * another query. A term whose session ended lives by its holder's own lease renewals meanwhile,
 * which move the lease's stamp. Once a lease duration it is looked for again.
 */
export function ownSessionRead(l: Lease, revision: number, named: SessionRow | undefined, found: OwnSessionFound | undefined, now: number, leaseDurationMs: number): { readonly kind: 'query'; readonly process: string } | { readonly kind: 'read'; readonly name: string } | { readonly kind: 'none' } | undefined {
  if (sessionStanding(l, stampOf(named)) !== 'unvouched') return undefined;
  const holds = found !== undefined && found.holderInstance === l.holderInstance && found.revision === revision && now - found.at < leaseDurationMs;
  if (!holds) return { kind: 'query', process: processOf(l.holderInstance)! };
  return found.name === undefined ? { kind: 'none' } : { kind: 'read', name: found.name };
}

/**
 * The term `l` as a follower judges it with the session row it names (`named`) and, where that does
 * not vouch for its holder (sessionStanding), the holder's own process's session (`own`,
 * ownSessionRead), and the row it was judged by (`by`: its renewals are the ones to time reads by):
 * - a holder on no session renews the lease itself: by the lease's own stamp, whatever `session` a
 *   peer wrote on it (as the coordinator and the CLI judge it: effectiveLease; simulator seed 9248);
 * - renewed by the later of its own stamp and the session's that vouches — the named one, else its
 *   holder's own — and expired a lease duration after this follower first saw that stamp (its own
 *   clock, as ever; never the stamp against its clock). The coordinator's tick judges it by the same
 *   row (lib/coordinator/reconcile.ts byProcess);
 * - with neither (the holder's process has no row in that partition: gone, or in another grant's),
 *   it lasts `sessionFallbackMs` from when it was first seen — the holder's own backstop read, which
 *   ends a term it finds moved off its session, comes first — as a lease duration of that length.
 */
export function judgedOnSession(l: Lease, named: SessionRow | undefined, own: SessionRow | undefined, sessionFallbackMs: number): { readonly lease: Lease; readonly by: SessionRow | undefined } {
  const standing = sessionStanding(l, stampOf(named));
  if (standing === 'none') return { lease: l, by: undefined };
  if (standing === 'vouched') return { lease: renewedBy(l, named!.renewTime), by: named };
  if (own !== undefined && vouchesFor(own.process, l.holderInstance)) return { lease: renewedBy(l, own.renewTime), by: own };
  return { lease: { ...l, leaseDurationSeconds: Math.max(l.leaseDurationSeconds, Math.ceil(sessionFallbackMs / 1000)) }, by: undefined };
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
  const second = v.mode === 'coordinated' && isSecondSuccessor(lease, v.identity, v.instance);
  if (!isVacant(lease, v.observedAt, now)) {
    const wakeAt = successor ? v.observedAt + termMs + 1 : second ? v.observedAt + termMs + SECOND_SUCCESSOR_GRACE_MS + 1 : undefined;
    return { confirm: false, answer, vacantSince: undefined, wakeAt, reportVacancy: false, take: undefined };
  }
  const vacantSince = v.vacantSince ?? (expired ? v.observedAt + termMs : now);
  const base = { confirm: false, answer, vacantSince, wakeAt: undefined };
  if (v.mode === 'NoCoordination') return { ...base, reportVacancy: false, take: 'self' };
  if (successor) return { ...base, reportVacancy: false, take: 'successor' };
  // The successor's turn first: the second successor takes the lease once it has had its grace
  // (judged on this worker's clock; the take is conditioned on the revision read, so if the
  // successor's write landed meanwhile this one fails).
  if (second) {
    const due = vacantSince + SECOND_SUCCESSOR_GRACE_MS;
    return now >= due ? { ...base, reportVacancy: false, take: 'successor' } : { ...base, wakeAt: due + 1, reportVacancy: false, take: undefined };
  }
  // A live successor takes the lease at once, the second successor a grace later; give them one
  // poll beyond that before asking for an election.
  const successorsTurn = lease?.successor !== undefined && now - vacantSince < v.retryPeriodMs + (lease.secondSuccessor !== undefined ? SECOND_SUCCESSOR_GRACE_MS : 0);
  return {
    ...base,
    reportVacancy: expired && !lease!.vacancyReport && !lease!.election && !successorsTurn,
    take: now - vacantSince >= v.fallbackAfterMs ? 'self' : undefined,
  };
}

/**
 * Where the designated successor expects the holder's next renewal to become readable, learnt from
 * its own reads: the holder's cadence (the median gap between renewal stamps seen one after
 * another) and when, relative to a renewal's stamp, the renewal lands. Each read brackets that
 * landing offset: a read that found a renewal was answered after it landed (an upper bound, its
 * answer time less the stamp), a read that found nothing new was served before it did (a lower
 * bound, its send time less the stamp expected). The next read is aimed inside the bracket while it
 * is wide, and at its top once it is tight, so after a few renewals the successor reads each one
 * within a few milliseconds of its landing, with one read. Both clocks' bases cancel out (only
 * differences of the holder's stamps and of this worker's monotonic clock are used). It only times
 * reads: expiry is still judged by when this worker saw the term, never by the stamp.
 *
 * A bound is kept only while it is the tightest standing (a looser one tells nothing new) and until
 * a newer one contradicts it; so a locked-on bracket stays locked on. Kept otherwise, each hit's
 * looser upper bound and each "the read before did not find it" lower bound (that read was the
 * previous renewal's, an interval earlier) pushed the tight ones out of the last PHASE_SAMPLES:
 * the aim crept later by a read's delay every few renewals and, every PHASE_SAMPLES renewals, the
 * bracket fell open into a new search of the whole interval — 1.65–1.9 reads per renewal on
 * simulated time, where there is no jitter at all (issue 38). Renewals that come to land earlier
 * contradict nothing a read at the top of the bracket shows, so the lower bound is forgotten every
 * PROBE_EVERY renewals: one read then probes PROBE_EARLIER_MS below the top, and a short binary
 * search narrows the bracket to LOCKED_MS again (on simulated time: 1.15 reads per renewal, each
 * renewal seen about 10 ms after it landed; 1.65–1.9 and 18–32 ms before).
 */
export class RenewalPhase {
  private term: string | undefined;
  /** The last renewals seen: the holder's stamp, oldest first. */
  private stamps: number[] = [];
  /** Upper bounds of the landing offset (answer time − stamp), most recent last. */
  private hi: number[] = [];
  /** Lower bounds of the landing offset (send time − the stamp expected), most recent last. */
  private lo: number[] = [];
  /** Renewals seen since the tightest lower bound was set: it is forgotten after PROBE_EVERY (see the class). */
  private loAge = 0;

  /**
   * A read answered at `at` found a renewal stamped `stamp` in term `term` (holder instance and
   * token) for the first time; the read before it, in the same term, was sent at `previousSentAt`
   * and did not find it (so the renewal landed after that).
   */
  seen(term: string, stamp: number, at: number, previousSentAt?: number, maxIntervalMs = Infinity): void {
    if (term !== this.term) {
      this.reset();
      this.term = term;
      previousSentAt = undefined; // that read was of another term
    }
    const last = this.stamps.at(-1);
    if (last !== undefined && stamp <= last) return; // an older copy (an eventually consistent read): nothing new
    if (last !== undefined && stamp - last > maxIntervalMs) {
      // Longer apart than any renewal of a live term can be (`maxIntervalMs`: its lease duration):
      // not two renewals in a row — the term lived on a session meanwhile, or the renewals between
      // went unseen. The cadence starts again from this one (a gap of 275 s once made a successor
      // wait that long for the "next" renewal: simulator seed 1846405520).
      const term = this.term;
      this.reset();
      this.term = term;
      previousSentAt = undefined;
    }
    // Bounds that contradict a newer one are out of date (the holder's phase, or its stamp clock, moved).
    const bound = at - stamp;
    this.lo = this.lo.filter((l) => l < bound);
    if (++this.loAge >= PROBE_EVERY) this.lo = []; // renewals may land earlier now: probe (see the class)
    if (!(bound >= least(this.hi))) push(this.hi, bound); // only a tighter upper bound
    if (previousSentAt !== undefined && previousSentAt - stamp < bound) {
      const lower = previousSentAt - stamp;
      this.hi = this.hi.filter((h) => h > lower);
      // The read before usually found the previous renewal, an interval earlier: that it did not find
      // this one says nothing about where this one lands. Only a read sent within half an interval
      // of this one's bound (a chase, a probe) brackets it.
      const interval = this.intervalMs();
      if (interval === undefined || lower > bound - interval / 2) this.lower(lower);
    }
    push(this.stamps, stamp);
  }

  /** A lower bound of the landing offset, kept if it is tighter than every one standing. */
  private lower(bound: number): void {
    if (bound <= greatest(this.lo)) return;
    push(this.lo, bound);
    this.loAge = 0;
  }

  /** Whether the holder's cadence is known (two renewals seen in this term). */
  get known(): boolean {
    return this.intervalMs() !== undefined;
  }

  /** A read sent at `sentAt` found no renewal after the last one seen: the next one lands later than that. */
  missed(sentAt: number): void {
    const interval = this.intervalMs();
    const last = this.stamps.at(-1);
    if (interval === undefined || last === undefined) return;
    const bound = sentAt - (last + interval);
    // no tighter than one standing: nothing new (the same read, told again by electors sharing one phase and one read, say)
    if (bound <= greatest(this.lo)) return;
    this.hi = this.hi.filter((h) => h > bound); // out of date: the renewals land later now
    this.lower(bound);
  }

  /** Forgets the holder's cadence (the term ended, or this worker leads). */
  reset(): void {
    this.term = undefined;
    this.stamps = [];
    this.hi = [];
    this.lo = [];
    this.loAge = 0;
  }

  /** The holder's renewal interval as seen, or undefined before two renewals. */
  intervalMs(): number | undefined {
    const gaps = this.stamps.slice(1).map((s, i) => s - this.stamps[i]!).sort((a, b) => a - b);
    return gaps.length === 0 ? undefined : gaps[Math.floor((gaps.length - 1) / 2)]; // the median (the lower of two)
  }

  /** Monotonic time to read for the renewal after the last one seen, or undefined before two renewals. */
  expectedAt(): number | undefined {
    const interval = this.intervalMs();
    const last = this.stamps.at(-1);
    if (interval === undefined || last === undefined || this.hi.length === 0) return undefined;
    const hi = Math.min(...this.hi);
    const lo = this.lo.length ? Math.max(...this.lo) : undefined;
    const aim = lo === undefined ? hi - PROBE_EARLIER_MS : hi - lo > LOCKED_MS ? (lo + hi) / 2 : hi;
    return last + interval + aim;
  }
}

const push = (xs: number[], x: number) => {
  xs.push(x);
  if (xs.length > PHASE_SAMPLES) xs.shift();
};
/** The least of `xs` (Infinity when empty), and the greatest (-Infinity): loops, not spreads (this runs at every read of every watcher). */
function least(xs: readonly number[]): number {
  let m = Infinity;
  for (const x of xs) if (x < m) m = x;
  return m;
}
function greatest(xs: readonly number[]): number {
  let m = -Infinity;
  for (const x of xs) if (x > m) m = x;
  return m;
}

/** Before any read has come too early, the successor aims this much before the earliest answer it has had. */
const PROBE_EARLIER_MS = 100;
/** A bracket this narrow is locked on: reads aim at its top (wider, at its middle: a binary search, one read per miss). */
const LOCKED_MS = 20;
/** Renewals after which the tightest lower bound is forgotten, so one read probes PROBE_EARLIER_MS below the top (see RenewalPhase). */
const PROBE_EVERY = 16;
/** Renewals a RenewalPhase remembers: enough for a stable median, few enough to follow a changed cadence. */
const PHASE_SAMPLES = 8;
/** A successor that did not find the renewal it expected reads again after this, doubling each time. */
export const CHASE_FIRST_MS = 50;
/**
 * While a lease settles (see nextReadDelay), followers read this often (at most every retry
 * period): they see a new term within this of its first write, so a holder that dies soon after
 * taking the lease is timed as precisely as one the successor had locked on to.
 */
export const SETTLING_READ_MS = 150;
/** …for at most this many lease durations of settling; a lease that stays in flux longer (an election that keeps failing) is read every retry period. */
export const SETTLING_TERMS = 2;

/** While wakes reach it, a follower of a quiet lease that is not its successor reads every this many lease durations. */
export const PUSH_QUIET_LEASES = 2;

// …and every SESSION_QUIET_LEASES lease durations when the lease is held on a session (declared
// with the vacancy rules, so the CLI can say how long a holder may take to see a request)
export { SESSION_QUIET_LEASES };

/** The successor reads this long after the moment it aims at: landing times vary by a few ms. */
export const READ_AFTER_MS = 10;

/** What a follower's next read is timed by (lib/sdk/elector.ts gathers it after each poll). */
export interface CadenceView {
  readonly lease: Lease | undefined;
  readonly identity: string;
  readonly instance: string;
  readonly mode: 'coordinated' | 'NoCoordination';
  /** Monotonic now. */
  readonly now: number;
  readonly retryPeriodMs: number;
  /** The successor's expectation of the holder's next renewal (RenewalPhase.expectedAt). */
  readonly expectedAt: number | undefined;
  /** Whether the holder's cadence is known (RenewalPhase.known): a missing renewal is then chased, not polled for. */
  readonly cadenceKnown: boolean;
  /**
   * How long the lease has been settling as this worker saw it — in flux, or, for its successor, in
   * a term whose cadence it has not learnt yet — or undefined when it is not (the elector keeps it).
   */
  readonly settlingForMs: number | undefined;
  readonly leaseDurationMs: number;
  /** Monotonic time the held term would run out as this worker watched it (when it first saw its last renewal, plus its duration). */
  readonly termEndsAt: number | undefined;
  /** Reads since the last new renewal seen that came at or after the expected next one (or, while the lease prefers this worker, any read) and found nothing new. */
  readonly misses: number;
  /** Whether wakes reach this worker now (the push path): quiet followers then read rarely. */
  readonly pushLive?: boolean;
  /** Whether the lease is held on a session: with the push path live, its quiet followers read it more rarely still (SESSION_QUIET_LEASES). */
  readonly sessionHeld?: boolean;
  /** A uniform draw in [0, 1): jitter. */
  readonly random: number;
}

/**
 * Whether a lease needs nobody's attention: held, renewed by its holder at least once since it was
 * taken (an electee or an heir confirms by renewing), no election, no vacancy report, no
 * preemption. Followers read it rarely; anything else is read every retry period.
 */
export function isQuiet(lease: Lease | undefined): boolean {
  return (
    lease?.holderIdentity !== undefined &&
    lease.renewTime !== undefined &&
    lease.acquireTime !== undefined &&
    lease.renewTime > lease.acquireTime &&
    !lease.election &&
    !lease.vacancyReport &&
    !lease.preferredHolder
  );
}

/**
 * How long a follower waits before its next read (the elector also wakes for `wakeAt`).
 * - NoCoordination: every retry period, jittered, as client-go.
 * - The lease is in flux (vacant, an election, an electee not yet confirmed or a term not yet
 *   renewed, a vacancy report, a preemption not aimed at this worker): every SETTLING_READ_MS for
 *   the first SETTLING_TERMS lease durations of it, then every retry period, jittered. So is a
 *   successor that has not learnt its holder's cadence yet.
 * - The designated successor of a quiet lease, and its second successor: just after each renewal
 *   it expects (RenewalPhase), and if that renewal is not there yet, again after 50, 100, 200 … ms
 *   up to a retry period: so it sees the holder's last renewal within tens of milliseconds, and the
 *   term's end as precisely (the second successor takes the lease SECOND_SUCCESSOR_GRACE_MS after
 *   it when the successor has not). Also the worker the lease prefers while its holder yields: the
 *   hand-off comes right after the holder's next renewal.
 * - Every other follower of a quiet lease: every two retry periods, jittered by a tenth — often
 *   enough to answer a ping inside the coordinator's ack window (2.5 retry periods by default) —
 *   except from two retry periods before the term it watches would run out: then every
 *   SETTLING_READ_MS, so it sees the successor's takeover at once (a crashed holder).
 * - With the push path live (`pushLive`), every other follower of a quiet lease reads only every
 *   PUSH_QUIET_LEASES lease durations, as a backstop for a lost wake: pings, takeovers, hand-offs and
 *   designations arrive as wakes, which make the elector read at once.
 */
export function nextReadDelay(v: CadenceView): number {
  // (helpers at module level, not closures: this runs at every poll of every follower)
  if (v.mode === 'NoCoordination') return jittered(v, v.retryPeriodMs, 0.2);
  const lease = v.lease;
  const successor = isSuccessor(lease, v.identity, v.instance);
  const second = !successor && isSecondSuccessor(lease, v.identity, v.instance);
  const yieldingToMe = lease?.holderIdentity !== undefined && lease.preferredHolder === v.identity;
  const due = v.expectedAt === undefined ? undefined : v.expectedAt + READ_AFTER_MS;
  // Settling, and not for long: read often (a new term is seen within SETTLING_READ_MS of its write).
  const settling = v.settlingForMs !== undefined && v.settlingForMs < SETTLING_TERMS * v.leaseDurationMs;
  // The holder yields right after the renewal that tells it to: look again at once, then less often.
  if (yieldingToMe) return chaseDelay(v);
  if (!isQuiet(lease)) return unsureDelay(v, settling);
  if (successor || second) {
    // (The second successor watches alike: it takes the lease a grace after the term's end.)
    // Never past the end of the term it watches: that is when it takes over, whatever cadence it has
    // learnt (and once the end has passed, a takeover whose answer was lost may have landed: look
    // again within SETTLING_READ_MS).
    // While the bracket is wide each miss moves the aim up (a binary search within one renewal);
    // once the renewal is overdue, chase it: again after as long as it has been overdue (at least
    // 50 ms), so 50, 100, 200 … ms after the aim; if the bracket gave way (it lands later now), by
    // the misses since the last renewal seen.
    const graceMs = second ? SECOND_SUCCESSOR_GRACE_MS : 0;
    if (due !== undefined) return atTermEnd(v, due > v.now ? due - v.now : Math.min(Math.max(CHASE_FIRST_MS, v.now - due), v.retryPeriodMs), graceMs);
    return atTermEnd(v, v.cadenceKnown ? chaseDelay(v) : unsureDelay(v, settling), graceMs);
  }
  // Told of every change (a ping, a takeover, a hand-off, being named successor) by a wake: read
  // only as a backstop for a lost one, every two lease durations (at least two retry periods).
  if (v.pushLive) return jittered(v, Math.max((v.sessionHeld ? SESSION_QUIET_LEASES : PUSH_QUIET_LEASES) * v.leaseDurationMs, 2 * v.retryPeriodMs), 0.1);
  // A term nobody has seen renewed for nearly its whole duration: its holder may be gone, and its
  // successor takes it the moment it runs out. Read often around then, so the new term is seen
  // (and timed) within SETTLING_READ_MS of its write, not up to two retry periods later.
  const quietPoll = 2 * v.retryPeriodMs * 1.1;
  const watchFrom = v.termEndsAt === undefined ? Infinity : v.termEndsAt - quietPoll;
  if (v.now >= watchFrom && v.now < v.termEndsAt! + SETTLING_TERMS * v.leaseDurationMs) return jittered(v, Math.min(SETTLING_READ_MS, v.retryPeriodMs), 0.2);
  // …and not a poll late into that window
  const quiet = jittered(v, 2 * v.retryPeriodMs, 0.1);
  return v.now < watchFrom ? Math.min(quiet, watchFrom - v.now) : quiet;
}

/** `base`, stretched by up to `by` of itself at the view's random draw. */
function jittered(v: CadenceView, base: number, by: number): number {
  return base * (1 + v.random * by);
}

/** Chasing a renewal that is due: 50, 100, 200 … ms by the misses, at most a retry period. */
function chaseDelay(v: CadenceView): number {
  return Math.min(CHASE_FIRST_MS * 2 ** Math.max(0, v.misses - 1), v.retryPeriodMs);
}

/** Not sure what comes next: SETTLING_READ_MS while settling, else a retry period (jittered). */
function unsureDelay(v: CadenceView, settling: boolean): number {
  return settling ? jittered(v, Math.min(SETTLING_READ_MS, v.retryPeriodMs), 0.2) : jittered(v, v.retryPeriodMs, 0.2);
}

/** `ms`, but never past the end of the term the successor watches (just after it; for the second successor, `graceMs` after it). */
function atTermEnd(v: CadenceView, ms: number, graceMs = 0): number {
  const untilEnd = v.termEndsAt === undefined ? Infinity : v.termEndsAt + graceMs - v.now;
  return Math.min(ms, untilEnd > 0 ? untilEnd + READ_AFTER_MS : Math.min(SETTLING_READ_MS, v.retryPeriodMs));
}

/** While DynamoDB's time is not known well enough, the elector polls about this soon (jittered, so responses land at other points of the server's second). */
export const CLOCK_RESAMPLE_MS = 500;

/**
 * How long until an elector's next step: the delay its side planned (`planned`: leaderDelay or
 * nextReadDelay), shortened while DynamoDB's time is in doubt (the next response, at another point
 * of the server's second, narrows it: `random` is drawn only then) and, for a follower, to the
 * moment the term it watches would run out (`wakeAt`, monotonic).
 */
export function stepDelay(d: { readonly planned: number; readonly clockKnown: boolean; readonly random: number; readonly wakeAt: number | undefined; readonly now: number }): number {
  const poll = d.clockKnown ? d.planned : Math.min(d.planned, CLOCK_RESAMPLE_MS * (0.6 + 0.8 * d.random));
  return Math.min(poll, d.wakeAt !== undefined ? Math.max(0, d.wakeAt - d.now) : Infinity);
}
