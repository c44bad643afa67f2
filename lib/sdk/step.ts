/**
 * The elector's step: `decide(settings, State, event, moment) → { state, effects }` and the plain
 * decisions it orders. No I/O, no clock read. Why each decision is as it is: docs/architecture.md,
 * "Inside the elector".
 */
import { isSecondSuccessor, isSuccessor, leftStamp, namesTerm, renewedBy, renewedBySession, SESSION_QUIET_LEASES, sessionStanding, successionStands } from '../election/vacancy.js';
import { MAX_LEFT_TERMS, processOf, vouchesFor, type IdentityLease, type LeftTerm } from '../schemas/identity.js';
import type { Candidate } from '../schemas/candidate.js';
import type { IdentityClaim, Lease } from '../schemas/lease.js';
import type { Heir, LeaseRead, SecondSuccessor, Term } from '../stores/lease-store.js';
import type { ClockCheck, ClockDoubt } from './server-clock.js';
import { RETRY_JITTER, retryDelayMs } from './faults.js';
import { SINCE_BOOT_DRIFT, SINCE_BOOT_RESOLUTION_MS } from '../clock.js';

/**
 * What a direct acquisition came to: the row as written, or the holder of the row that refused it
 * (whoever moved first) and its start-up (`refusedByInstance`: what tells apart two start-ups given
 * one identity, for withLease; the step goes by the name).
 */
export type Acquired = { readonly written: Lease } | { readonly refusedBy: unknown; readonly refusedByInstance?: unknown };

/** What a session read found, and when (monotonic) it was sent. */
export interface SessionRead {
  readonly row: IdentityLease | undefined;
  /** Monotonic time the read was sent: what it says holds from then on, at the earliest. */
  readonly sentAt: number;
  /** False: an eventually consistent copy, which may be older than a row already seen (sessionReadConsistent). Undefined: consistent. */
  readonly consistent?: boolean;
}

// ---- the follower's decisions ----

/** What a follower knows after reading its lease: everything its decision rests on. */
export interface FollowerView {
  readonly lease: Lease | undefined;
  readonly identity: string;
  /** This start-up (a restart is another instance of the same identity). */
  readonly instance: string;
  readonly mode: 'coordinated' | 'NoCoordination';
  /** Whether this worker stands as a candidate (coordinated mode with a candidacy). */
  readonly candidate: boolean;
  /** The election this worker answered last (or the failed one it answered by renewing: askedInVainKey). */
  readonly ackedElection: string | undefined;
  /** A ping went unanswered while DynamoDB's time was in doubt. */
  readonly unanswered: boolean;
  /** The token of a term this start-up stopped leading while it stands on (FollowerState.standAgain). */
  readonly standAgain: number | undefined;
  /** The read before this one found the lease row (this one may find it gone). */
  readonly hadRow: boolean;
  /** Monotonic now. */
  readonly now: number;
  /** Monotonic time the lease's current term (holder, instance, renewal, token, duration) was first seen. */
  readonly observedAt: number;
  /** Monotonic time since when the lease has been vacant, as this worker saw it. */
  readonly vacantSince: number | undefined;
  /** The lease row is gone, and the term this start-up saw last on it named it (FollowerState.vanished); `observedAt`: when it was first found gone. */
  readonly vanished: Vanished | undefined;
  /** Monotonic time this worker first saw what the row asks of a coordinator now: its vacancy report, or its open election (FollowerState.askSeen). */
  readonly askSeenAt?: number | undefined;
  readonly retryPeriodMs: number;
  readonly fallbackAfterMs: number;
}

/**
 * A lease row found gone (a consistent read) where the read before showed a term held off a
 * session (or naming a session row found unable to hold it: offSessionRead), by a holder on no
 * session, renewed by it at least once, that named this start-up as
 * successor (`role`) or second successor: the holder renews that row itself, each renewal
 * conditioned on its term, so from the delete on every renewal fails and it stops at its renew
 * deadline. `termMs`: that term's lease duration.
 */
export interface Vanished {
  readonly role: 'successor' | 'second';
  readonly termMs: number;
  /** The lease's candidates were read once it was due, and none can hold a term on a session (rest). */
  readonly checked?: boolean;
}

/** What a follower does after a poll, in this order. */
export interface FollowerDecision {
  /** The coordinator elected this start-up: confirm the term by renewing it (and nothing else). */
  readonly confirm: boolean;
  /**
   * Renew the candidacy: to answer the open election, or the ping left unanswered while the clock
   * was in doubt, or to stand again once the lease is in a later term than the one this start-up
   * stopped leading (`standAgain`), or because the lease row is gone (`noRow`, at the first read
   * that finds it gone): the coordinator makes the row again as soon as the lease has a candidate,
   * so this worker's own candidate row may be gone too (the tables made anew: local mode started
   * again on a DynamoDB Local in memory), which a renewal finds and registers again, instead of at
   * the candidacy's next renewal, up to 10 minutes away. A successor of the term on the row
   * (`vanished`) too, before it takes the lease itself once that term is surely over: a holder
   * without a candidate row is moved by the coordinator to any candidate that has one.
   */
  readonly answer: { readonly election: string } | 'unanswered' | 'standAgain' | 'noRow' | undefined;
  /** What to remember as `vacantSince`. */
  readonly vacantSince: number | undefined;
  /** Poll again no later than this (monotonic): the successor looks the moment the term would run out. */
  readonly wakeAt: number | undefined;
  /** Tell the coordinator the holder has not renewed for a whole term. */
  readonly reportVacancy: boolean;
  /** Take the vacant lease directly: as its designated successor, or by itself (NoCoordination, the fallback). */
  readonly take: 'successor' | 'self' | undefined;
}

/** Whether this worker watches the holder's renewals closely: the successor, or the second successor. */
export const watchesTerm = (lease: Lease | undefined, identity: string, instance: string): boolean => isSuccessor(lease, identity, instance) || isSecondSuccessor(lease, identity, instance);

/** How long after a term ran out, as it watched it, the second successor waits for the successor before taking the lease. */
export const SECOND_SUCCESSOR_GRACE_MS = 200;

/**
 * How long a running coordinator takes at most to answer a vacancy report (its lease stream's lag,
 * a cold start included, then an election opened or a leader elected): a report standing longer,
 * unanswered, means none runs.
 */
export const REPORT_ANSWER_MS = 10_000;

/** Whether `lease` is vacant as this follower watched it: unheld, reported vacant, or its term run out since `observedAt`. */
export function isVacant(lease: Lease | undefined, observedAt: number, now: number): boolean {
  return lease?.holderIdentity === undefined || lease.vacancyReport !== undefined || now - observedAt > lease.leaseDurationSeconds * 1000;
}

/** What a follower's next poll reads. */
export interface PollPlan {
  /** A consistent read of the lease row (NoCoordination, or woken: it is news); otherwise an eventually consistent one (every write it leads to is conditioned on it). */
  readonly consistent: boolean;
  /** Only the session row: a quiet lease held on a session, wakes reaching this worker, the lease row read within the backstop, the last view's term vouched for by a session row that does not name it as left. */
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
  /**
   * Whether the last view's term was vouched for by a session row of its holder's process that does
   * not name it as left (FollowerState.viewedSession). Not: that row gone (the session ended, its
   * process stopping), or naming the term as left (its elector stopped: handed over, released, or
   * left to run out): the lease row says what became of the term, and a lost wake would otherwise
   * leave it unread until the backstop, four lease durations (a review: 49.4 s leaderless).
   */
  readonly vouched: boolean;
}): PollPlan {
  const coordinated = p.mode === 'coordinated';
  const l = p.raw;
  const sessionOnly = !p.woken && coordinated && p.pushLive && l?.session !== undefined && l.holderIdentity !== undefined && isQuiet(p.view) && p.vouched && p.leaseReadAt !== undefined && p.now - p.leaseReadAt < p.backstopMs;
  return { consistent: !coordinated || p.woken, sessionOnly };
}

/** The term a row naming this start-up can confirm, or `end`: a term rewritten under it, to end on the row instead. */
export function termToConfirm(l: Lease, ledToken: number, endedToken = -1): { readonly end: boolean; readonly term: { readonly holderIdentity: string; readonly fencingToken: number } } {
  if (l.fencingToken < ledToken || (l.termToken !== undefined && l.termToken !== l.fencingToken) || (l.termToken ?? l.fencingToken) <= endedToken) return { end: true, term: { holderIdentity: l.holderIdentity!, fencingToken: l.termToken ?? l.fencingToken } };
  return { end: false, term: { holderIdentity: l.holderIdentity!, fencingToken: l.fencingToken } };
}

/** A session row as a follower judges a term by it. */
export interface SessionRow {
  readonly name: string;
  readonly renewTime: number;
  readonly process?: string | undefined;
  /** The terms its process left to run out (IdentityLeaseItem.leftTerms). */
  readonly leftTerms?: Readonly<Record<string, LeftTerm>> | undefined;
}

const stampOf = (r: SessionRow | undefined) => r && { name: r.name, renewTime: r.renewTime, process: r.process, leftTerms: r.leftTerms };

/** Where a follower last found the holder's own process's session: by a query sent at `at`, after a lease read at `revision`. */
export interface OwnSessionFound {
  readonly holderInstance: string;
  readonly revision: number;
  /** The row's name; undefined: the partition had no row of that process. */
  readonly name: string | undefined;
  readonly at: number;
}

/**
 * What a follower reads when the session row a lease names (`named`) does not vouch for its holder:
 * `query` the holder's process's sessions, `read` the row found before, or `none` (the fallback
 * judges). Undefined: nothing more to read. Why a found row holds: docs/architecture.md.
 */
export function ownSessionRead(l: Lease, revision: number, named: SessionRow | undefined, found: OwnSessionFound | undefined, now: number, leaseDurationMs: number): { readonly kind: 'query'; readonly process: string } | { readonly kind: 'read'; readonly name: string } | { readonly kind: 'none' } | undefined {
  if (sessionStanding(l, stampOf(named)) !== 'unvouched') return undefined;
  const holds = found !== undefined && found.holderInstance === l.holderInstance && found.revision === revision && now - found.at < leaseDurationMs;
  if (!holds) return { kind: 'query', process: processOf(l.holderInstance)! };
  return found.name === undefined ? { kind: 'none' } : { kind: 'read', name: found.name };
}

/**
 * The term `l` as a follower judges it by the session row it names (`named`), else by its holder's
 * own process's row (`own`), else for `sessionFallbackMs`; `by`: the row it was judged by.
 */
export function judgedOnSession(l: Lease, named: SessionRow | undefined, own: SessionRow | undefined, sessionFallbackMs: number): { readonly lease: Lease; readonly by: SessionRow | undefined } {
  const standing = sessionStanding(l, stampOf(named));
  if (standing === 'none') return { lease: l, by: undefined };
  // a term its process left to run out (its elector stopped): by the stamp it was left at, whatever later renewals say
  if (standing === 'vouched') return { lease: renewedBySession(l, named!), by: named };
  if (own !== undefined && vouchesFor(own.process, l.holderInstance)) return { lease: renewedBySession(l, own), by: own };
  return { lease: { ...l, leaseDurationSeconds: Math.max(l.leaseDurationSeconds, Math.ceil(sessionFallbackMs / 1000)) }, by: undefined };
}

/** The most a stamp another worker wrote may be ahead of DynamoDB's time: half the coordinator's default clockSkewMs. */
export const STAMP_ERROR_MS = 500;

/** What an heir does with a read that shows a term handed to this start-up (leadFromRead). */
export type HandedTerm =
  /** Lead now, counting the term as renewed at `renewedAt` (it stands until then + renewDeadlineMs); the confirmation goes out as the first renewal. */
  | { readonly kind: 'lead'; readonly renewedAt: number }
  /** Read the lease again, strongly consistent, and decide on that: the read was an eventually consistent copy. */
  | { readonly kind: 'readAgain' }
  /** Confirm by renewing before leading, as an electee does. */
  | { readonly kind: 'confirm' };

const CONFIRM_FIRST: HandedTerm = { kind: 'confirm' };
const READ_AGAIN: HandedTerm = { kind: 'readAgain' };

/** Whether an heir may lead a handed term from the read that showed it, before confirming it, and from when. */
export function leadFromRead(r: {
  readonly lease: Lease;
  readonly identity: string;
  readonly consistent: boolean;
  /** This worker's measurement of DynamoDB's time now (server time less monotonic, and its error); undefined while it cannot vouch for it. */
  readonly clock: { readonly offset: number; readonly errorMs: number } | undefined;
  /** The most the giver's stamp may be ahead of DynamoDB's time. */
  readonly stampErrorMs: number;
  /** Monotonic now. */
  readonly now: number;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}): HandedTerm {
  const l = r.lease;
  if (r.clock === undefined || l.electedBy !== 'successor' || l.renewTime === undefined || l.renewTime !== l.acquireTime) return CONFIRM_FIRST;
  if (l.vacancyReport !== undefined || l.session !== undefined || (l.preferredHolder !== undefined && l.preferredHolder !== r.identity)) return CONFIRM_FIRST;
  // no later than the hand-over landed, on this worker's monotonic clock
  const anchor = l.renewTime - r.clock.offset - r.clock.errorMs - r.stampErrorMs;
  // a hand-over stamped after this read's answer by this worker's clock: that clock is behind (clockSync
  // 'none' on a slow wall clock), and a term led from the stamp would stand past any deadline (renewedAt in
  // the monotonic future, no renewal due): confirmed by renewing first, judged from its send
  if (anchor > r.now) return CONFIRM_FIRST;
  const until = anchor + (l.leaseDurationSeconds * 1000 * r.renewDeadlineMs) / r.leaseDurationMs;
  if (until - r.now < r.retryPeriodMs / 2) return CONFIRM_FIRST;
  return r.consistent ? { kind: 'lead', renewedAt: until - r.renewDeadlineMs } : READ_AGAIN;
}

/**
 * How much sooner than its own renew deadline a leader stops in a term whose row, as a write's
 * answer or a read showed it, has a shorter lease duration than the leader's own: observers count
 * the term out a row's duration after they see it, whatever the leader meant to write (a write of
 * its term it did not make: the coordinator's election of it taken for its own take, 5b64190; a
 * foreign writer within the trust domain). Its renew deadline scaled to the row's duration, as
 * leadFromRead scales a handed term's; 0 for a row of its own duration or longer.
 */
export function shortTermMs(s: { readonly leaseDurationMs: number; readonly renewDeadlineMs: number }, lease: Lease | undefined): number {
  return lease === undefined ? 0 : Math.max(0, Math.ceil(s.renewDeadlineMs - (lease.leaseDurationSeconds * 1000 * s.renewDeadlineMs) / s.leaseDurationMs));
}

/**
 * The key a candidate answers an election under (`ackedElection`): its id and when it started. Ids
 * repeat: `<lease>#<revision>`, and a lease row made again after a delete (an operator's, or the
 * tables made anew) starts at revision 1, so a worker that had answered `job#1` once let the new
 * `job#1` pass unanswered.
 */
export const electionKey = (e: { readonly id: string; readonly startedAt: number }): string => `${e.id}@${e.startedAt}`;

/** An unheld lease's last election failed for want of a live candidate: the key a candidate answers it under. */
function askedInVainKey(lease: Lease | undefined): string | undefined {
  const f = lease?.lastElectionFailure;
  if (!f || f.reason !== 'noLiveCandidates' || lease!.holderIdentity !== undefined) return undefined;
  return `failed:${f.electionId ?? ''}@${f.at}`;
}

/**
 * Whether the lease is in a later term than the one this start-up stopped leading while it stands
 * on (`standAgain`): its candidate row is renewed now, after that term began — the coordinator passes
 * over a last holder whose row shows no life since (lib/election/vacancy.ts isDeparted), which is
 * right for a holder that died with its term, not for one that lost it and lives on.
 */
export function standsAgainNow(lease: Lease | undefined, v: Pick<FollowerView, 'identity' | 'standAgain'>): boolean {
  return v.standAgain !== undefined && lease?.holderIdentity !== undefined && (lease.holderIdentity !== v.identity || lease.fencingToken > v.standAgain);
}

const CONFIRM: FollowerDecision = { confirm: true, answer: undefined, vacantSince: undefined, wakeAt: undefined, reportVacancy: false, take: undefined };

export function decideFollower(v: FollowerView): FollowerDecision {
  const { lease, now } = v;
  if (lease?.holderIdentity === v.identity && lease.holderInstance === v.instance) return CONFIRM;
  const asked = lease?.election ? electionKey(lease.election) : askedInVainKey(lease);
  const answer = !v.candidate
    ? undefined
    : asked !== undefined && v.ackedElection !== asked
      ? { election: asked }
      : v.unanswered
        ? ('unanswered' as const)
        : standsAgainNow(lease, v)
          ? ('standAgain' as const)
          : lease === undefined && v.hadRow
            ? ('noRow' as const)
            : undefined;

  const termMs = (lease?.leaseDurationSeconds ?? 0) * 1000;
  const expired = lease?.holderIdentity !== undefined && now - v.observedAt > termMs;
  const successor = v.mode === 'coordinated' && isSuccessor(lease, v.identity, v.instance);
  const second = v.mode === 'coordinated' && isSecondSuccessor(lease, v.identity, v.instance);
  if (!isVacant(lease, v.observedAt, now)) {
    const wakeAt = successor ? v.observedAt + termMs + 1 : second ? v.observedAt + termMs + SECOND_SUCCESSOR_GRACE_MS + 1 : undefined;
    return { confirm: false, answer, vacantSince: undefined, wakeAt, reportVacancy: false, take: undefined };
  }
  const vacantSince = v.vacantSince ?? (expired ? v.observedAt + termMs : now);
  const base = { confirm: false, answer, vacantSince, wakeAt: undefined, reportVacancy: false };
  if (v.mode === 'NoCoordination') return { ...base, take: 'self' };
  // an election held (notBefore: a term ended by someone else, its holder on a session perhaps not
  // told yet) is taken by no fallback before its hold ends, timed from when this worker first saw it
  const e = lease?.election;
  const heldUntil = e?.notBefore !== undefined ? (v.askSeenAt ?? now) + Math.max(0, e.notBefore - e.startedAt) : undefined;
  const pastFallback = now - vacantSince >= v.fallbackAfterMs;
  const fallback = pastFallback && (heldUntil === undefined || now >= heldUntil) ? ('self' as const) : undefined;
  const holdEnds = pastFallback && fallback === undefined ? heldUntil! + 1 : undefined;
  // the row gone under a term that named this start-up: the holder's last renewal landed before the
  // delete, and the delete before this worker first found the row gone (observedAt), so a lease
  // duration watched from then outlasts the holder's renew deadline, as for the successor's take
  if (lease === undefined && v.vanished !== undefined) {
    const due = v.observedAt + v.vanished.termMs + (v.vanished.role === 'second' ? SECOND_SUCCESSOR_GRACE_MS : 0);
    return now > due ? { ...base, take: 'successor' } : { ...base, wakeAt: due + 1, take: fallback };
  }
  // the successor's turn first: the second successor takes the lease once the successor had its
  // grace; neither before a hold ends (a coordinator that left them named on a held row)
  if (successor || second) {
    const due = Math.max(second ? vacantSince + SECOND_SUCCESSOR_GRACE_MS : now, heldUntil ?? now);
    return now >= due ? { ...base, take: 'successor' } : { ...base, wakeAt: due + 1, take: undefined };
  }
  // give the successors one poll beyond their turn before asking for an election
  const successorsTurnEnds = lease?.successor !== undefined && successionStands(lease) ? vacantSince + v.retryPeriodMs + (lease.secondSuccessor !== undefined ? SECOND_SUCCESSOR_GRACE_MS : 0) : vacantSince;
  // a report, or an election, no running coordinator answered: the fallback need not wait out its
  // three terms, which only leave a running coordinator its choice. A report proves the term over
  // (its writer watched it unchanged for a lease duration, and any renewal removes it); an election
  // left open past its ack window (its coordinator gone) blocks every report, and this worker has
  // watched the lease vacant itself. Not one waiting for the lease stream: a deleted term's holder
  // may lead on until the stream has handled the delete (Election awaitsStream)
  const answerDue = v.askSeenAt === undefined || lease === undefined || lease.election?.awaitsStream ? undefined : Math.max(successorsTurnEnds, v.askSeenAt + REPORT_ANSWER_MS + (lease.election ? Math.max(0, lease.election.deadline - lease.election.startedAt) : 0));
  const take = fallback ?? (answerDue !== undefined && now >= answerDue ? ('self' as const) : undefined);
  const wakes = take === undefined ? [answerDue === undefined ? undefined : answerDue + 1, holdEnds].filter((x) => x !== undefined) : [];
  return {
    ...base,
    wakeAt: wakes.length ? Math.min(...wakes) : undefined,
    reportVacancy: expired && !lease!.vacancyReport && !lease!.election && now >= successorsTurnEnds,
    take,
  };
}

/**
 * Where the successor expects the holder's next renewal to become readable, learnt from its own
 * reads: a value (each sighting gives a new one). It only times reads.
 */
export class RenewalPhase {
  /** Nothing seen yet. */
  static readonly NONE = new RenewalPhase();

  private constructor(
    private readonly term: string | undefined = undefined,
    /** The last renewals seen: the holder's stamp, oldest first. */
    private readonly stamps: readonly number[] = [],
    /** Upper bounds of the landing offset (answer time − stamp), most recent last. */
    private readonly hi: readonly number[] = [],
    /** Lower bounds of the landing offset (send time − the stamp expected), most recent last. */
    private readonly lo: readonly number[] = [],
    /** Renewals seen since the tightest lower bound was set: it is forgotten after PROBE_EVERY. */
    private readonly loAge = 0,
  ) {}

  /** A read answered at `at` first found a renewal stamped `stamp` in `term`; the read before it was sent at `previousSentAt`. */
  seen(term: string, stamp: number, at: number, previousSentAt?: number, maxIntervalMs = Infinity): RenewalPhase {
    const last = term === this.term ? this.stamps.at(-1) : undefined;
    if (last !== undefined && stamp <= last) return this; // an older copy (an eventually consistent read): nothing new
    // another term, or farther apart than two renewals of a live term can be: the cadence starts again from this one
    // (and the read before was of another term, or too long ago to bracket this renewal)
    const fresh = term !== this.term || (last !== undefined && stamp - last > maxIntervalMs);
    let from: RenewalPhase = fresh ? new RenewalPhase(term) : this;
    const before = fresh ? undefined : previousSentAt;
    // stamped earlier than its cadence allows (a renewal is never early on the holder's own clock): the holder's
    // estimate of DynamoDB's time moved back (a later sample narrowed it), so the landing offsets learnt against
    // its older stamps are that much too small: moved with it, not kept as the tightest
    const interval = from.intervalMs();
    if (!fresh && last !== undefined && interval !== undefined) {
      const early = last + Math.max(1, Math.round((stamp - last) / interval)) * interval - stamp;
      if (early > LOCKED_MS) from = new RenewalPhase(term, from.stamps, from.hi.map((h) => h + early), from.lo.map((l) => l + early), from.loAge);
    }
    // bounds that contradict a newer one are out of date
    const bound = at - stamp;
    let lo: readonly number[] = from.lo.filter((l) => l < bound);
    let loAge = from.loAge + 1;
    if (loAge >= PROBE_EVERY) lo = []; // renewals may land earlier now: probe
    let hi = bound >= Math.min(...from.hi) ? from.hi : keep(from.hi, bound); // only a tighter upper bound
    if (before !== undefined && before - stamp < bound) {
      const lower = before - stamp;
      hi = hi.filter((h) => h > lower);
      // only a read sent within half an interval of this bound (a chase, a probe) brackets the renewal
      if ((interval === undefined || lower > bound - interval / 2) && lower > Math.max(...lo)) {
        lo = keep(lo, lower);
        loAge = 0;
      }
    }
    return new RenewalPhase(term, keep(from.stamps, stamp), hi, lo, loAge);
  }

  /** Whether the holder's cadence is known (two renewals seen in this term). */
  get known(): boolean {
    return this.intervalMs() !== undefined;
  }

  /** A read sent at `sentAt` found no renewal after the last one seen: the next one lands later than that. */
  missed(sentAt: number): RenewalPhase {
    const interval = this.intervalMs();
    const last = this.stamps.at(-1);
    if (interval === undefined || last === undefined) return this;
    const bound = sentAt - (last + interval);
    // no tighter than one standing: nothing new (the same read, told again by electors sharing one phase and one read, say)
    if (bound <= Math.max(...this.lo)) return this;
    // the upper bounds below it are out of date: the renewals land later now
    return new RenewalPhase(this.term, this.stamps, this.hi.filter((h) => h > bound), keep(this.lo, bound), 0);
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

/** `xs` with `x` appended, keeping the last PHASE_SAMPLES. */
const keep = (xs: readonly number[], x: number): readonly number[] => [...xs, x].slice(-PHASE_SAMPLES);

/** How many times a woken read older than the revision its wake announced is read again at once (FollowerState.awaited). */
export const AWAIT_REREADS = 2;

/** Before any read has come too early, the successor aims this much before the earliest answer it has had. */
const PROBE_EARLIER_MS = 100;
/** A bracket this narrow is locked on: reads aim at its top (wider, at its middle: a binary search, one read per miss). */
const LOCKED_MS = 20;
/** Renewals after which the tightest lower bound is forgotten, so one read probes PROBE_EARLIER_MS below the top (every 4 minutes at the default renew interval). */
const PROBE_EVERY = 32;
/** Renewals a RenewalPhase remembers: enough for a stable median, few enough to follow a changed cadence. */
const PHASE_SAMPLES = 8;
/** A successor that did not find the renewal it expected reads again after this, doubling each time. */
export const CHASE_FIRST_MS = 50;
/** While a lease settles, followers read this often (at most every retry period): a new term is seen this soon after its write. */
export const SETTLING_READ_MS = 150;
/** …for at most this many lease durations of settling; a lease that stays in flux longer (an election that keeps failing) is read every retry period. */
export const SETTLING_TERMS = 2;
/** Woken reads a worker sends in any WOKEN_READS_WINDOW_MS at most (per lease): an election's few wakes are read at once, a flood of them costs no more. */
export const WOKEN_READS = 8;
export const WOKEN_READS_WINDOW_MS = 1_000;

/**
 * How long a woken poll waits, given when the worker's last woken polls went out (oldest first,
 * monotonic): 0 while fewer than WOKEN_READS of them fall in the last WOKEN_READS_WINDOW_MS. A wake
 * is a hint that costs at most a read; forged, repeated or from a push path that keeps reconnecting
 * (each reconnect wakes every elector), a flood of them costs WOKEN_READS reads a window.
 */
export function wokenReadDelay(sentAt: readonly number[], now: number): number {
  const oldest = sentAt[sentAt.length - WOKEN_READS];
  return oldest === undefined ? 0 : Math.max(0, oldest + WOKEN_READS_WINDOW_MS - now);
}

/** While wakes reach it, a follower of a quiet lease that is not its successor reads every this many lease durations. */
export const PUSH_QUIET_LEASES = 2;

// …and every SESSION_QUIET_LEASES lease durations when the lease is held on a session
export { SESSION_QUIET_LEASES };

/** Followers of one process share a session read sent this recently (ms). */
export const SHARED_READ_MS = 100;

/** The successor reads this long after the moment it aims at: landing times vary by a few ms. */
export const READ_AFTER_MS = 10;

/** What a follower's next read is timed by (followerDelay gathers it). */
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
  /** How long the lease has been settling (in flux, or, for its successor, of a cadence not yet learnt); undefined: it is not. */
  readonly settlingForMs: number | undefined;
  readonly leaseDurationMs: number;
  /** Monotonic time the held term would run out as this worker watched it (when it first saw its last renewal, plus its duration). */
  readonly termEndsAt: number | undefined;
  /** Reads since the last new renewal seen that found nothing new past its expected time. */
  readonly misses: number;
  /** Whether wakes reach this worker now (the push path): quiet followers then read rarely. */
  readonly pushLive?: boolean;
  /** Whether the lease is held on a session: with the push path live, its quiet followers read it more rarely still (SESSION_QUIET_LEASES). */
  readonly sessionHeld?: boolean;
  /** A uniform draw in [0, 1): jitter. */
  readonly random: number;
  /**
   * Whether the last read showed a renewal stamped longer ago than the renew deadline and a stamp's
   * error, by this worker's measure of DynamoDB's time (holderSilent): its holder has stopped.
   */
  readonly holderSilent?: boolean;
}

/** Whether a lease needs nobody's attention: held, renewed since it was taken, no election, vacancy report or preemption. */
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

/** How long a follower waits before its next read (docs/architecture.md, "How often a follower reads"); the elector also wakes for `wakeAt`. */
export function nextReadDelay(v: CadenceView): number {
  if (v.mode === 'NoCoordination') return jittered(v, v.retryPeriodMs, 0.2);
  const lease = v.lease;
  const successor = isSuccessor(lease, v.identity, v.instance);
  const second = !successor && isSecondSuccessor(lease, v.identity, v.instance);
  const yieldingToMe = lease?.holderIdentity !== undefined && lease.preferredHolder === v.identity;
  const due = v.expectedAt === undefined ? undefined : v.expectedAt + READ_AFTER_MS;
  const settling = v.settlingForMs !== undefined && v.settlingForMs < SETTLING_TERMS * v.leaseDurationMs;
  // the holder yields right after the renewal that tells it to: look again at once, then less often
  if (yieldingToMe) return chaseDelay(v);
  if (!isQuiet(lease)) return unsureDelay(v, settling);
  if (successor || second) {
    // at the renewal expected, then chasing it, never past the end of the term it watches
    const graceMs = second ? SECOND_SUCCESSOR_GRACE_MS : 0;
    if (due !== undefined) return atTermEnd(v, due > v.now ? due - v.now : Math.min(Math.max(CHASE_FIRST_MS, v.now - due), v.retryPeriodMs), graceMs);
    return atTermEnd(v, v.cadenceKnown ? chaseDelay(v) : unsureDelay(v, settling), graceMs);
  }
  // a holder already silent when last read, and no wake will say its term is over: read once the
  // successors' turn is over (they may be out of reach too), to report the vacancy
  if (v.pushLive && v.holderSilent && v.termEndsAt !== undefined && v.now < v.termEndsAt + SETTLING_TERMS * v.leaseDurationMs) {
    const turnOver = v.termEndsAt + v.retryPeriodMs + (lease?.secondSuccessor !== undefined ? SECOND_SUCCESSOR_GRACE_MS : 0) + READ_AFTER_MS;
    return turnOver > v.now ? turnOver - v.now : jittered(v, Math.min(SETTLING_READ_MS, v.retryPeriodMs), 0.2);
  }
  // told of every change by a wake: read only as a backstop for a lost one
  if (v.pushLive) return jittered(v, Math.max((v.sessionHeld ? SESSION_QUIET_LEASES : PUSH_QUIET_LEASES) * v.leaseDurationMs, 2 * v.retryPeriodMs), 0.1);
  // a term not seen renewed for nearly its whole duration: read often around its end, to see the next term soon
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

/**
 * `ms`, but never past the end of the term the successor watches (just after it); for the second
 * successor, just after it too, then `graceMs` after it.
 */
function atTermEnd(v: CadenceView, ms: number, graceMs = 0): number {
  const untilEnd = v.termEndsAt === undefined ? Infinity : v.termEndsAt - v.now;
  if (untilEnd > 0) return Math.min(ms, untilEnd + READ_AFTER_MS);
  // the second successor, in its grace: the successor takes the term as it runs out, so that write is chased as a
  // renewal is (at the end, 50 ms later, then as long again as it has been overdue, until the grace is over): seen
  // late, the successor's new term would run out that much late as this worker, named its successor, watches it.
  // Three reads at most a term's end; none while the holder renews.
  const untilGrace = untilEnd + graceMs;
  if (untilGrace > 0) return Math.min(ms, Math.max(CHASE_FIRST_MS, -untilEnd), untilGrace + READ_AFTER_MS);
  // run out: read often while the next term should come, for at most SETTLING_TERMS lease durations;
  // a take held off longer (its clock in doubt, its takes refused) is read every retry period, as
  // other followers' settling reads are: never 150 ms reads without end
  const settling = -untilGrace < SETTLING_TERMS * v.leaseDurationMs;
  return Math.min(ms, settling ? Math.min(SETTLING_READ_MS, v.retryPeriodMs) : v.retryPeriodMs);
}

/** How old a session read another elector of the process sent a follower may take instead of its own. */
export function sessionShareMs(p: {
  readonly watches: boolean;
  readonly now: number;
  readonly due: number | undefined;
  readonly previousSentAt: number | undefined;
  readonly marginMs: number;
  readonly sharedMs: number;
}): number {
  if (!p.watches) return p.marginMs;
  const afterOwn = p.previousSentAt === undefined ? p.now - p.sharedMs : p.previousSentAt + 1;
  const after = p.due !== undefined && p.due <= p.now ? Math.max(afterOwn, p.due) : afterOwn;
  return Math.max(0, Math.min(p.marginMs, p.now - after));
}

/** While DynamoDB's time is in doubt, the elector polls about this soon (jittered: the next Date lands elsewhere in the second). */
export const CLOCK_RESAMPLE_MS = 500;

/**
 * The least pause before a leader in doubt of its clock reads again near its renew deadline: a Date
 * header that long after the last narrows DynamoDB's time to within 500 ms less half of it.
 */
export const CLOCK_RESAMPLE_FLOOR_MS = 20;

/**
 * A leader's next step while it cannot vouch for its clock (one renewing its term itself): within
 * half the time left before its renew deadline, never sooner than CLOCK_RESAMPLE_FLOOR_MS. Woken
 * from a sleep with less of its term left than the clock's resample pace, it reads again in time
 * to renew (each read a sample later than the last).
 */
export const doubtingLeaderDelay = (planned: number, deadline: number, now: number): number => Math.min(planned, Math.max(CLOCK_RESAMPLE_FLOOR_MS, (deadline - now) / 2));

/** How long until the next step: `planned`, shortened while the clock is in doubt and, for a follower, to `wakeAt`. */
export function stepDelay(d: { readonly planned: number; readonly clockKnown: boolean; readonly random: number; readonly wakeAt: number | undefined; readonly now: number }): number {
  const poll = d.clockKnown ? d.planned : Math.min(d.planned, CLOCK_RESAMPLE_MS * (0.6 + 0.8 * d.random));
  return Math.min(poll, d.wakeAt !== undefined ? Math.max(0, d.wakeAt - d.now) : Infinity);
}

// ---- the leader's decisions ----

/**
 * Why a leader stopped: run() cancelled, another candidate preferred, the renew deadline passed (or
 * its clock jumped, so the deadline could no longer be judged), the lease moved on (seen on a read,
 * or the work's own fenced write of the term refused; or its term was rewritten under it), or the
 * leader's work failed (onStartedLeading rejected or threw, other than with its own term's
 * FencingError or LeaseLostError, and `onLeaderWorkFailure` is `'release'`, the default).
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
  /** How much sooner than its renew deadline the term's row as last seen has observers count it out (shortTermMs): a session's renewal counts from that much before its send. */
  readonly shortMs: number;
}

/** The settings a leader decides by (the elector's options, resolved). */
export interface LeaderSettings {
  readonly leaseName: string;
  readonly identity: string;
  readonly mode: 'coordinated' | 'NoCoordination';
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
}

/** One thing a leader learnt. */
export type LeaderObservation =
  /**
   * The renew deadline's timer fired (armed for renewedAt + renewDeadline), someone asked
   * `isLeader()`, or its step's turn came (before it renews or reads): the last two judged on the
   * monotonic clock at `now`.
   */
  | { readonly kind: 'deadline' | 'asked' | 'step'; readonly now: number }
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
  /** Stop acting now; `look`: read the lease at once after; `endTerm`: end the term rewritten under it on the row too. */
  | { readonly kind: 'stop'; readonly reason: StopReason; readonly look: boolean; readonly endTerm?: true }
  /** The term is renewed from `renewedAt`; `lease`, when a write or read returned the row. */
  | { readonly kind: 'renewed'; readonly renewedAt: number; readonly lease: Lease | undefined }
  /** The term stands; the row as read (the coordinator may have named a successor or a preferred holder). */
  | { readonly kind: 'seen'; readonly lease: Lease }
  /** Look at the lease now (the next step renews it itself). */
  | { readonly kind: 'look' };

const NONE: LeaderStep = { kind: 'none' };
const stop = (reason: StopReason): LeaderStep => ({ kind: 'stop', reason, look: false });
/** Its term was rewritten under it: stop, end the term on the row too, and read the lease at once. */
const REWRITTEN: LeaderStep = { kind: 'stop', reason: 'deposed', look: true, endTerm: true };

/** Whether `l` is still in the term `t` (holder, this start-up, token). */
export function inTerm(l: Lease | undefined, t: TermView): l is Lease {
  return l?.holderIdentity === t.holderIdentity && l.holderInstance === t.instance && l.fencingToken === t.fencingToken;
}

/** A leader's decision on one observation. */
export function decideLeader(s: LeaderSettings, t: TermView, o: LeaderObservation): LeaderStep {
  switch (o.kind) {
    case 'deadline':
      // even should the monotonic clock read a hair short of it: a timer may fire a millisecond early
      return stop('renewDeadline');
    case 'asked':
    case 'step':
      // client-go: stop acting once the renew deadline has passed since the last renewal was sent (and never renew after)
      return o.now >= t.renewedAt + s.renewDeadlineMs ? stop('renewDeadline') : NONE;
    case 'sessionRenewed': {
      if (t.session !== o.name) return NONE;
      // someone else ended this term: the lease stream marked it on the session (ended on the row too)
      const end = o.ended[s.leaseName];
      if (end !== undefined && end >= t.fencingToken) return REWRITTEN;
      // answered after the deadline: it extends nothing (others may already have seen the session expire)
      if (o.now >= t.renewedAt + s.renewDeadlineMs) return stop('renewDeadline');
      // (its row shorter than its own duration: observers count the session's stamp out that much sooner)
      const from = o.sentAt - t.shortMs;
      return from > t.renewedAt ? { kind: 'renewed', renewedAt: from, lease: undefined } : NONE;
    }
    case 'sessionEnded':
      return t.session === o.name ? { kind: 'look' } : NONE;
    case 'renewed':
      if (!o.lease) return stop('deposed'); // the lease is no longer in this term
      // renewed by the token copy, yet the row's holder or token was rewritten under it
      if (!inTerm(o.lease, t)) return REWRITTEN;
      // never past the moment observers count the row it answered out: a row shorter than its own
      // duration counts from before this send, whatever an earlier or a session's renewal allowed
      const short = shortTermMs(s, o.lease);
      return { kind: 'renewed', renewedAt: short > 0 ? o.sentAt - short : Math.max(t.renewedAt, o.sentAt), lease: o.lease };
    case 'read': {
      const termToken = o.lease?.termToken;
      if (inTerm(o.lease, t)) {
        // held on its session, yet the row names another or none: `session` was rewritten under it
        if (t.session !== undefined && o.lease.session !== t.session) return REWRITTEN;
        return { kind: 'seen', lease: o.lease };
      }
      // the row carries this term's token copy, not its holder or token: rewritten under it
      return termToken === t.fencingToken ? REWRITTEN : stop('deposed');
    }
  }
}

/**
 * Whether the machine slept since its clocks were last compared: its clock since boot (else its wall
 * clock), less its monotonic one, gained `gainedMs` since. A suspend stops Linux's CLOCK_MONOTONIC,
 * and with it Node's timers and the renew deadline, so a leader that slept wakes with its deadline
 * that much late. A gain counts beyond the clock's resolution (SINCE_BOOT_RESOLUTION_MS: os.uptime()
 * in whole seconds gains up to a second between two looks with no sleep), or beyond `seenMs` less
 * twice the resolution once DynamoDB's Date headers showed a sleep of `seenMs` (measured to the same
 * resolution: not yet counted, it shows here as more than that). Where the wall clock stands in, an
 * NTP step forward looks the same.
 */
export const sleptSince = (gainedMs: number, seenMs?: number): boolean => gainedMs > (seenMs === undefined ? SINCE_BOOT_RESOLUTION_MS : Math.min(SINCE_BOOT_RESOLUTION_MS, seenMs - 2 * SINCE_BOOT_RESOLUTION_MS));

/** The machine's clock since boot (else its wall clock) less its monotonic one (`gauge`), read at monotonic `at`: steady, but for a sleep the monotonic clock did not count. */
export interface SleepGauge {
  readonly gauge: number;
  readonly at: number;
}

/**
 * What `now` gained on `low` that may be a sleep (for sleptSince): the gain, less the most the two
 * clocks may have drifted apart since (SINCE_BOOT_DRIFT: os.uptime() on macOS follows the wall
 * clock, the monotonic clock its own oscillator). Not above 0: `now` is the lower, the one to keep.
 * A leader keeps the lowest of its gauges so (the top of the clock's rounding, let rise as fast as
 * drift may): a sleep, a step, shows against it whole but for the allowance over the low's age,
 * while drift, however long it goes on, never adds up to one.
 */
export const gainedSince = (low: SleepGauge, now: SleepGauge): number => now.gauge - low.gauge - SINCE_BOOT_DRIFT * Math.max(0, now.at - low.at);

/** The sleep a leader counts against its renew deadline for a gain of `gainedMs`: all it may have been, the clock's rounding included. */
export const sleepToCount = (gainedMs: number): number => Math.max(0, gainedMs) + SINCE_BOOT_RESOLUTION_MS;

/** The term this worker leads: one record, replaced by each step. */
export interface Lead {
  readonly term: Term;
  /** Monotonic time the last successful renewal was *sent*: the term is safe until then + renewDeadline. */
  readonly renewedAt: number;
  /** Renewals since the term was won. */
  readonly renewals: number;
  /** The last renewal (or the next try) failed: try again a retry period after the try went out, not a renew interval. */
  readonly retrying: boolean;
  /** Monotonic time the last try to renew went out (a renewal, or the read sent instead of one). */
  readonly triedAt: number;
  /** Tries in a row refused because a transaction held the lease row (isContended: the work's own fenced writes): the next goes out after contendedRetryMs, not a retry period. */
  readonly contended: number;
  /** The lease as the last renewal (or the acquisition, or a read) returned it: whom the coordinator named successor. */
  readonly lease: Lease | undefined;
  /** The session the term is held on (the lease's `session` as last written): its renewals are the term's. */
  readonly session: string | undefined;
  /** Monotonic time it started leading. */
  readonly since: number;
  /** DynamoDB's pace (paceMs) from the answers of the take and the renewals: how long it takes to answer now (renewalBoundMs, pacedCadenceMs). */
  readonly answerMs?: number;
  /** The sleeps counted against the term's renew deadline (`ms` in all), the last at monotonic `at`: a renewal sent before then is counted from before them. */
  readonly slept?: { readonly ms: number; readonly at: number };
  /** A renewal of this term was refused for this worker's own reasons (its role denied it, a row refused as invalid), not for a fault of DynamoDB's or the network's: failedAtStart. */
  readonly refused?: true;
  /** This start-up's terms so far, this one included: an answer or a timer of an earlier term changes nothing. */
  readonly no: number;
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
  if (k.candidate && lease.election && k.ackedElection !== electionKey(lease.election)) return { kind: 'ack', election: electionKey(lease.election) };
  return { kind: 'none' };
}

/** The heir a leader hands its term to: its identity and the instance the lease names (its candidate row's identity). */
export type HeirOf = { readonly name: string; readonly instance: string };

/** Whom a leader stepping down hands its term to: the lease's successor, unless somebody else is preferred. */
export function heirOf(s: LeaderSettings, l: Lease | undefined): HeirOf | undefined {
  if (s.mode !== 'coordinated' || !l?.successor || !l.successorInstance || !successionStands(l)) return undefined;
  if (l.preferredHolder !== undefined && l.preferredHolder !== l.successor) return undefined;
  if (l.successor === s.identity) return undefined;
  return { name: l.successor, instance: l.successorInstance };
}

/** The token a row's term was led with: its `termToken`, which a move of the fencing token leaves as it was (an older SDK's row without one: its fencing token). */
const ledWith = (l: Lease): number => l.termToken ?? l.fencingToken;

/**
 * What a stopping worker does about the lease as read, its candidacy withdrawn, so that no term
 * waits for it once it is gone: a term of this start-up's (one handed to it as it stopped: it never
 * leads it) is released, and its name as successor or second successor declined (declinePatch);
 * undefined: the lease does not name it. A hand-over is conditioned on the heir it names, so it and
 * the decline are ordered on the row: the heir finds the term and releases it, or the hand-over is
 * refused. `keptToken`: a term it led with a token up to it is left to run out (releaseOnCancel
 * false: its work may outlive run()), -1 none.
 */
export type Departure = { readonly kind: 'release'; readonly term: Term } | { readonly kind: 'decline'; readonly role: 'successor' | 'second' };

export function departure(l: Lease | undefined, identity: string, instance: string, keptToken = -1): Departure | undefined {
  if (!l) return undefined;
  // by instance: another start-up of this identity (the next deploy's) may be named or hold it
  // a term it led is known by the token it was led with (termToken): a peer's or an operator's move of the fencing token leaves that
  if (l.holderIdentity === identity && l.holderInstance === instance) return ledWith(l) <= keptToken ? undefined : { kind: 'release', term: { holderIdentity: identity, fencingToken: l.fencingToken } };
  if (l.successor === identity && l.successorInstance === instance) return { kind: 'decline', role: 'successor' };
  if (l.secondSuccessor === identity && l.secondSuccessorInstance === instance) return { kind: 'decline', role: 'second' };
  return undefined;
}

/**
 * What a stopping elector does with its hold on session `held` (a write putting its term there may
 * have landed unanswered: LeaderElector.putOnSession), from a consistent read made after it stepped
 * down. `drop`: the row shows no term of this start-up on that session. `release`: the term there,
 * the hold dropped once the release lands. `keep`: a term it led and keeps (`keptToken`, as
 * departure's), taken off the session as leavingKept says, the hold dropped once that lands; where
 * it does not land, dropped all the same when `left` (the term is the one named as left on its
 * process's session rows, leftTerm: no row vouches for it past that stamp, and a held session would
 * end at its renew deadline, costing the process's other electors theirs), else kept, so the
 * session ends and the term runs out on its stamps. A hold never goes unsettled: the session's
 * renewals for the process's other electors would keep alive a term nobody leads.
 */
export type LeavingDoubt = { readonly kind: 'drop' } | { readonly kind: 'release'; readonly term: Term } | { readonly kind: 'keep'; readonly left: boolean };

export function leavingDoubt(l: Lease | undefined, held: string, identity: string, instance: string, keptToken = -1): LeavingDoubt {
  if (l?.holderIdentity !== identity || l.holderInstance !== instance || l.session !== held) return { kind: 'drop' };
  return ledWith(l) <= keptToken ? { kind: 'keep', left: showsLeftTerm(l, { token: keptToken, instance }) } : { kind: 'release', term: { holderIdentity: identity, fencingToken: l.fencingToken } };
}

/**
 * What a stopping elector does about a term it led and keeps (`keptToken`, as departure's) where
 * the row has it on `live`, the session its process renews for its other electors (`stamp`: that
 * row's stamp as the process last knew it landed, SessionSeam.stamp; `leftAt`: the stamp the term
 * was left at, SessionSeam.leave's, if it was named as left); left there, those renewals would keep
 * the term alive for ever. `offSession`: taken off by a renewal conditioned on its token, stamped
 * with the later of the session's stamp and the row's own plus 1 ms, its duration the row's: it
 * then runs out on that stamp. The session's stamp is taken no later than `leftAt`: a renewal since
 * names the term as left, and observers judge it by the stamp it was left at (renewedBySession).
 * So never later than observers judge it by, nor earlier than its leader's last counted renewal.
 * `hold`: the row unread and the term last led on that session (`ledOn`): nothing written, the
 * term left there, named as left on the process's session rows (leftTerm). `none`: no such term.
 */
export type LeavingKept = { readonly kind: 'none' } | { readonly kind: 'offSession'; readonly term: Term; readonly stamp: number; readonly seconds: number } | { readonly kind: 'hold'; readonly session: string };

export function leavingKept(l: Lease | undefined | 'unread', live: { readonly name: string; readonly stamp: number; readonly leftAt?: number | undefined } | undefined, identity: string, instance: string, keptToken: number, ledOn?: string): LeavingKept {
  if (!live || keptToken < 0) return { kind: 'none' };
  if (l === 'unread') return ledOn === live.name ? { kind: 'hold', session: live.name } : { kind: 'none' };
  if (l?.holderIdentity !== identity || l.holderInstance !== instance || l.session !== live.name || l.fencingToken > keptToken) return { kind: 'none' };
  // (the session renewed since the term was left names it as left: observers judge it by the stamp it was left at)
  const session = live.leftAt === undefined ? live.stamp : Math.min(live.stamp, live.leftAt);
  const stamp = l.renewTime === undefined ? session : Math.max(session, l.renewTime + 1);
  return { kind: 'offSession', term: { holderIdentity: identity, fencingToken: l.fencingToken }, stamp, seconds: l.leaseDurationSeconds };
}

/**
 * The term a stopping elector on a process that runs a Session leaves to run out on its process's
 * session rows (SessionSeam.leave, IdentityLeaseItem.leftTerms), whatever the lease row shows: the
 * one with token `keptToken` (the last it led and keeps, or one whose release did not land). Named
 * there, no row vouches for it past the stamp it was left at, though the process's other electors
 * renew on. Undefined: nothing to leave.
 */
export function leftTerm(keptToken: number, instance: string, onSession: boolean): { readonly token: number; readonly instance: string } | undefined {
  return onSession && keptToken >= 0 ? { token: keptToken, instance } : undefined;
}

/**
 * Whether a process whose stopped electors left `count` terms to run out (leftTerm) holds its
 * session rows: more than a row names (MAX_LEFT_TERMS, IdentityLeaseItem.leftTerms), so none is
 * renewed and none started until the leases show some of them no more. A row naming only some
 * would vouch for the others by its own stamp, past the stamps they were left at; held, the session
 * ends at its deadline and the process's electors renew their leases themselves.
 */
export function holdsForLeft(count: number): boolean {
  return count > MAX_LEFT_TERMS;
}

/** Whether lease row `l` still shows a term left to run out (leftTerm): until it does not, its process's session rows name it. */
export const showsLeftTerm: (l: Lease | undefined, term: { readonly token: number; readonly instance: string }) => boolean = namesTerm;

/**
 * How a stopping elector's write leaving the lease (a release, a decline, a kept term's move off its
 * session) came out: `landed`; `refused`, the row moved on since the read it was decided from (a
 * lost race: another's take or end, a move of its fencing token, or the AWS SDK's second send
 * refused by its first, which landed unanswered); `unknown`, unanswered on every try (it may have
 * landed: mayHaveLanded); `failed`, a fault after which it did not land.
 */
export type WriteOutcome = 'landed' | 'refused' | 'unknown' | 'failed';

/** How many consistent reads of the lease a stopping elector decides its leaving from before it leaves the row as it is: each lost race is a write that moved the row on. */
export const LEAVING_READS = 5;

/**
 * What a stopping elector does after a write leaving the lease (`out`), decided from its `reads`-th
 * consistent read since it stepped down (0: from what it knew, the term its step-down led, unread):
 * `again`, decide again from a new read, where the write was refused or may have landed and reads
 * remain (the row as it is now tells what is left to do); `settled`, it landed; `unsettled`, it did
 * not (a fault, or races lost on every read): the row is left as it is, and the caller leaves the
 * term to run out on its stamp or keeps its session held. In a stop, a fault is not decided here:
 * it is tried again after a pause within the stop's wait (leavingPause), else given up.
 */
export function afterLeaving(out: WriteOutcome, reads: number): 'again' | 'settled' | 'unsettled' {
  if (out === 'landed') return 'settled';
  return (out === 'refused' || out === 'unknown') && reads < LEAVING_READS ? 'again' : 'unsettled';
}

/** The least of a stop's wait on DynamoDB a try after a pause is given (a read, then a write: round trips): a pause that would leave less is not taken. */
export const LEAVING_TRY_MS = 1_000;

/**
 * How long a stopping elector pauses after its `faults`-th fault while leaving the lease (a write
 * that failed or went unanswered, a read that failed) before it reads the lease and decides again:
 * the retry period, doubling (retryDelayMs), so never sooner than a follower tries again. A release
 * that failed at the SIGTERM, tried again within the stop's 10 s, spares its successor the rest of
 * the lease duration. Undefined: the pause and a try after it (LEAVING_TRY_MS) do not fit in what is
 * left of the stop's wait (`leftMs`): the part is given up, the row left as it is (nothing is sent
 * once the wait is spent). No stop known (`leftMs` undefined: the step fed by hand, the model
 * check): no pause, afterLeaving decides at once.
 */
export function leavingPause(faults: number, retryPeriodMs: number, random: number, leftMs: number | undefined): number | undefined {
  if (leftMs === undefined) return undefined;
  const ms = retryDelayMs(faults, retryPeriodMs, random);
  return ms + LEAVING_TRY_MS <= leftMs ? ms : undefined;
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
  /** When that try went out (monotonic). */
  readonly triedAt: number;
  /** Tries in a row refused by a transaction on the lease row (Lead.contended). */
  readonly contended: number;
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
 * When a leader steps next: on its live session it only reads; after a failed try, a retry period
 * after that try went out (at once after one abandoned unanswered: it has waited its bound,
 * renewalBoundMs), or a moment after one a transaction on the row refused (contendedRetryMs); else a
 * renew interval after the last renewal.
 */
export function leaderDelay(t: LeaderTiming): number {
  if (t.onLiveSession) return t.pushLive ? t.holderBackstopMs * (1 + 0.1 * t.random) : t.cadenceMs;
  if (t.retrying) return Math.max(0, t.triedAt + (t.contended > 0 ? contendedRetryMs(t.contended, t.retryPeriodMs, t.random) : t.retryPeriodMs) - t.now);
  if (t.everyRetryPeriod) return t.retryPeriodMs;
  return Math.max(0, t.renewedAt + t.cadenceMs - t.now);
}

/** The pause before the first try again after a renewal a transaction on the lease row refused. */
export const CONTENDED_RETRY_MS = 20;

/**
 * How long after the `tries`-th renewal in a row a transaction on the lease row refused the next
 * goes out: CONTENDED_RETRY_MS, half again as long each time, jittered (`random` in [0, 1)), never
 * longer than a retry period. A transaction holds the row for about one request's time, so the
 * term is not lost to a deadline while the work's fenced writes keep the row busy, and the tries
 * stay far from a hot loop (about a dozen between a renewal and its deadline at client-go's timings).
 */
export function contendedRetryMs(tries: number, retryPeriodMs: number, random: number): number {
  return Math.min(retryPeriodMs, CONTENDED_RETRY_MS * 1.5 ** (tries - 1) * (0.5 + random));
}

/** The least time a renewal is given before it is abandoned: longer than any answer a healthy DynamoDB gives, its own retries included. */
export const MIN_RENEWAL_BOUND_MS = 1_000;

/**
 * How long a request sent `leftMs` before its renew deadline waits for its answer: half the time
 * left, so that when it is abandoned unanswered (a black-holed connection) tries on new connections
 * still land before the deadline (two dead connections in a row cost nothing); never under
 * MIN_RENEWAL_BOUND_MS. Where DynamoDB answers slowly (`answerMs`, the last answer's round trip: a
 * degraded path, a slow proxy), half again that, up to MIN_RENEWAL_BOUND_MS before the deadline: a
 * DynamoDB answering every request in 2.5 s otherwise lost the term at each renewal (abandoned at
 * 2.1 s, its try again given 1 s), each abandoned write landed.
 */
export const renewalBoundMs = (leftMs: number, answerMs = 0): number =>
  Math.max(MIN_RENEWAL_BOUND_MS, leftMs / 2, Math.min(leftMs - MIN_RENEWAL_BOUND_MS, 1.5 * answerMs));

/**
 * DynamoDB's pace as a leader or a Session judges it (`answerMs`): the last answer's round trip, or,
 * where an earlier answer took longer, that less a tenth for each answer since. A DynamoDB that
 * answers slowly with jitter (1-4 s) is then waited for as its slower answers need: judged by the
 * last answer alone, one answer slower than half again the one before was abandoned, and the term
 * with it.
 */
export const paceMs = (answerMs: number, was = 0): number => Math.max(answerMs, 0.9 * was);

/**
 * How long after a renewal was sent the next goes out: every `cadenceMs`, or, where DynamoDB answers
 * so slowly (`answerMs`, the last answer's round trip) that a renewal sent then would not be given
 * half again that (renewalBoundMs), early enough that it is, with a try again MIN_RENEWAL_BOUND_MS
 * before the renew deadline; never sooner than a retry period. A Session renewing every 5 s against
 * a 7.5 s deadline otherwise never renewed on a DynamoDB answering in 1.5 s (each renewal abandoned,
 * its electors renewing every lease themselves), and a leader lost every term on one answering in 3.5 s.
 */
export function pacedCadenceMs(o: { readonly cadenceMs: number; readonly renewDeadlineMs: number; readonly retryPeriodMs: number }, answerMs = 0): number {
  if (renewalBoundMs(o.renewDeadlineMs - o.cadenceMs, answerMs) >= 1.5 * answerMs) return o.cadenceMs;
  return Math.min(o.cadenceMs, Math.max(o.retryPeriodMs, o.renewDeadlineMs - MIN_RENEWAL_BOUND_MS - 1.5 * answerMs));
}

/** How long a follower's fallback waits before it takes a lease last seen held on a session: until its holder has stopped. */
export function sessionFallbackMs(o: { readonly sessionBackstopMs: number; readonly renewDeadlineMs: number; readonly retryPeriodMs: number }): number {
  return Math.ceil(1.1 * o.sessionBackstopMs) + o.renewDeadlineMs + o.retryPeriodMs;
}

/**
 * How soon a cancelled leader leading on for its heir first reads the heir's candidate row, to see
 * whether the heir still stands (then each time twice as long after, up to a retry period): an heir
 * stopping at the same moment (a whole fleet SIGTERMed) has withdrawn its candidacy within a few
 * round trips, and its term is then released at once, not when the heir would have read (up to a
 * renewal interval later).
 */
export const HEIR_CHECK_FIRST_MS = 250;

/**
 * The longest a cancelled leader leads on for its heir: with its stop's 10 s on DynamoDB
 * (STOP_BUDGET_MS) and 5 s of the caller's own, inside the 30 s ECS and Kubernetes give before
 * SIGKILL. A renew interval past it (a 60 s lease: 30 s) hands over at it, the heir then leading
 * from its next read: a SIGKILL cutting the hand-over would leave the lease to run out instead.
 */
export const HEIR_WAIT_MAX_MS = 15_000;

/** How long a cancelled leader with an heir leads on before it hands the term over: until the heir next reads, HEIR_WAIT_MAX_MS at most. */
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
  return t.retrying || young ? 0 : Math.min(t.renewedAt + t.cadenceMs - t.now, HEIR_WAIT_MAX_MS);
}

// ---- the follower's step ----

/** The settings a follower decides by (the elector's options, resolved). */
export interface FollowerSettings {
  readonly leaseName: string;
  readonly identity: string;
  /** This start-up. */
  readonly instance: string;
  readonly mode: 'coordinated' | 'NoCoordination';
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  readonly fallbackAfterMs: number;
  /** How long a follower waits out a session-held term's holder's own backstop read (sessionFallbackMs). */
  readonly sessionFallbackMs: number;
  /** Whether this worker stands as a candidate. */
  readonly candidate: boolean;
  /** The follower's decision on a poll (decideFollower, or a planted bug's). */
  readonly decideFollower: typeof decideFollower;
  /** Whether an heir leads a handed term from its read, before confirming it (leadFromRead, or a planted bug's). */
  readonly leadFromRead: typeof leadFromRead;
  /** The most another worker's stamp may be ahead of DynamoDB's time: max(STAMP_ERROR_MS, maxClockErrorMs). */
  readonly stampErrorMs: number;
  /** Whether this worker's own clock is measured (clockSync 'server'); 'none': its wall clock, assumed within stampErrorMs. */
  readonly clockMeasured: boolean;
}

/** The moment an event is decided at. */
export interface Moment {
  /** Monotonic now. */
  readonly now: number;
  /** DynamoDB's time as this worker measures it, against maxClockErrorMs. */
  readonly clock: ClockCheck;
  /** DynamoDB's time less the monotonic clock, as this worker stamps now. */
  readonly offset: number;
  /** The clock's jumps so far: a term won while it jumped is given back. */
  readonly jumps: number;
  /** The session a write of this worker's term names: its live session's, null (take the term off one that ended), or undefined (no session option). */
  readonly session?: string | null | undefined;
  /** Whether wakes reach this worker now. */
  readonly pushLive?: boolean;
  /** The renewal cadences of the sessions the process's electors follow leases on, shared by them (the effect `sessionCadence` updates one). */
  readonly sessionCadences?: ReadonlyMap<string, RenewalPhase>;
  /** The live session's stamp as its process last knew it landed (SessionSeam.stamp), if any: what a kept term's take-off is stamped from (leavingKept). */
  readonly sessionStamp?: number | undefined;
  /** In a stop (run()'s signal aborted): what is left of its wait on DynamoDB (the shell's StopBudget), which a stopping elector's pause after a fault must fit in (leavingPause). Undefined: none known (no pause). */
  readonly stopLeftMs?: number;
}

/** The part of the record a renewal changes: what client-go compares to reset observedTime. */
interface TermKey {
  readonly holderIdentity: string | undefined;
  readonly holderInstance: string | undefined;
  readonly renewTime: number | undefined;
  readonly fencingToken: number;
  readonly leaseDurationSeconds: number;
}

/** What a direct acquisition is for: the successor's first try, its second after a second look, or the worker's own (NoCoordination, the fallback). */
type Attempt = 'first' | 'second' | 'self';
/** How a term given to this start-up is won: confirmed by renewing it first, or handed over and led from the read (confirmed after). */
type Given = 'confirm' | 'handed';

/**
 * A poll's consistent read that found the lease row gone under a term that named a session
 * (vanishedUnder): `reading` its named session row; `offSession`: that row read, and it cannot
 * hold the term (sessionStanding 'none').
 */
type GoneRead = 'reading' | 'offSession';

/** Where a poll stands while it waits on an answer. */
type Pending =
  /** Reading the lease row (and the session row of a lease held on one), for a poll or for the successor's second look. */
  | { readonly kind: 'read'; readonly then: 'poll' | 'secondLook'; readonly woken: boolean; readonly consistent: boolean; readonly sentAt: number; readonly reread: boolean; readonly raw?: LeaseRead; readonly sessionReread?: boolean; readonly named?: SessionRead; readonly ownReread?: boolean; readonly awaitRereads?: number; readonly sessionConsistent?: boolean; readonly gone?: GoneRead; readonly sessionOnly?: true }
  /** Answering an election (or a ping left unanswered) by renewing the candidacy. */
  | { readonly kind: 'answer'; readonly raw: LeaseRead; readonly d: FollowerDecision }
  /** Reporting a vacancy, then acknowledging by renewing the candidacy. */
  | { readonly kind: 'report' | 'reportAck'; readonly raw: LeaseRead; readonly d: FollowerDecision }
  /** Reading the candidates before taking a row gone under a term that named this start-up (FollowerState.vanished). */
  | { readonly kind: 'candidates'; readonly raw: LeaseRead }
  /** Confirming a term the coordinator gave this start-up (`sentAt`: the renewal's send time). */
  | { readonly kind: 'confirm'; readonly term: Term; readonly jumps: number; readonly sentAt: number }
  /** A direct acquisition written (`sentAt`: its send time); `confirm`: a stopped term of this start-up's taken again. */
  | { readonly kind: 'acquire'; readonly read: LeaseRead; readonly then: Attempt | 'confirm'; readonly jumps: number; readonly sentAt: number }
  /** A term won while the clock jumped, being given back. */
  | { readonly kind: 'giveBack'; readonly then: Attempt | Given }
  /** Starting to lead a term won. */
  | { readonly kind: 'lead'; readonly then: Attempt | Given; readonly token: number };

/** What a follower knows between events: one record, replaced by each step. */
export interface FollowerState {
  /** The lease row as last read. */
  readonly lastRaw: LeaseRead | undefined;
  /** The lease as last read (for a lease held on a session, as judged with the session's stamp). */
  readonly lastRead: Lease | undefined;
  /** When (monotonic) the lease row itself was last read. */
  readonly leaseReadAt: number | undefined;
  /** What was last observed, and when (monotonic) the term or its renewal last changed: client-go's observedTime. */
  readonly observed: { readonly key: TermKey | undefined; readonly at: number; readonly revision: number; readonly token: number } | undefined;
  /** When the last poll's read was sent (monotonic): a renewal the next read finds first landed after it. */
  readonly previousReadSentAt: number | undefined;
  /** Since when (monotonic) the lease has been settling as this follower saw it (nextReadDelay). */
  readonly settlingSince: number | undefined;
  /** Reads since the last new renewal seen that found nothing new past its expected time. */
  readonly misses: number;
  /** The holder's renewal cadence, as this worker's reads found it (for a lease held on a session, the session's is the process's: Moment.sessionCadences). */
  readonly cadence: RenewalPhase;
  /** Whether the last term a read showed was held on a session, or could have been (its holder's instance names a session's process, or a read found no row at all): its fallback waits longer (sessionFallbackMs). */
  readonly lastHeldOnSession: boolean;
  /** The longest lease duration (s) the last held term's row showed, and whose term it was (sessionFallbackFor). */
  readonly lastHeldSeconds: { readonly instance: string | undefined; readonly token: number; readonly seconds: number } | undefined;
  /** The session row the last view was judged with, if any, and the lease `session` it was judged for (`of`); `left`: the row names the term as left (leftStamp). */
  readonly viewedSession: { readonly name: string; readonly renewTime: number; readonly of: string; readonly left?: true } | undefined;
  /**
   * The `session` the last view's lease names where a consistent read of that row showed it cannot
   * hold the term (sessionStanding 'none': no such row, or another process's, its holder on none):
   * the holder renews the lease row itself, so that view's own stamp is its renewal's (stampedBy).
   */
  readonly offNamedSession: { readonly name: string; readonly renewTime: number | undefined } | undefined;
  /** Where the holder's own process's session was last looked for, for a term its named session does not vouch for (ownSessionRead). */
  readonly ownFound: OwnSessionFound | undefined;
  /** Since when (monotonic) the lease has been vacant, as this worker saw it. */
  readonly vacantSince: number | undefined;
  /**
   * The lease row found gone by a consistent read, the term read just before naming this start-up
   * its successor or second successor (vanishedUnder): it takes the lease once the row has been gone
   * a lease duration. Any read or write that finds a row clears it.
   */
  readonly vanished: Vanished | undefined;
  /** Monotonic time the successor looks again (when the term it watches would run out, or a report stands unanswered too long). */
  readonly wakeAt: number | undefined;
  /** What the row asks of a coordinator now (its open election, or else its vacancy report), and when (monotonic) this worker first saw it (REPORT_ANSWER_MS). */
  readonly askSeen: { readonly key: string; readonly at: number } | undefined;
  /** The highest fencing token this start-up has led with: it never confirms a term below it. */
  readonly ledToken: number;
  /** The highest token of a term this start-up's leader ended on the row itself (a rewritten term): it never confirms it again. */
  readonly endedToken: number;
  /** A ping went unanswered while DynamoDB's time was in doubt: answered as soon as it can be. */
  readonly unanswered: boolean;
  /**
   * The token of a term this start-up stopped leading while it stands on (its renew deadline
   * passed, or it was deposed): once a read shows the lease in a later term, the candidacy is renewed
   * (standsAgainNow), then this is cleared.
   */
  readonly standAgain: number | undefined;
  /** The election this candidate last answered (its leader side answers too). */
  readonly ackedElection: string | undefined;
  /** The holder last reported to onNewLeader. */
  readonly lastLeader: string | undefined;
  /** The last claim to this worker's name it answered. */
  readonly answeredClaim: string | undefined;
  /** The other start-up last told of as leading under this worker's identity (twinOf). */
  readonly twinTold: string | undefined;
  /** Since when this worker could not vouch for the times it writes, and whether it said so. */
  readonly doubt: { readonly since: number; readonly reported: boolean } | undefined;
  /** Clock skew preventions so far. */
  readonly preventions: number;
  /** A wake came: the next step reads at once, for news. */
  readonly wakePending: boolean;
  /**
   * The revision a wake announced, later than the one this worker read: the write it announces may
   * be in flight (a hand-over's wake goes out beside its write). A woken read older than it is read
   * again at once, at most AWAIT_REREADS times, rather than waiting for the wake sent after the
   * write's answer: a wake costs at most 1 + AWAIT_REREADS reads.
   */
  readonly awaited: number | undefined;
  /** The poll under way, waiting on an answer. */
  readonly pending: Pending | undefined;
  /** The work of this start-up's last `failures` terms failed soon after it started: it takes no term (nor confirms one) before monotonic `until`. */
  readonly heldOff: { readonly until: number; readonly failures: number } | undefined;
  /**
   * Its last two terms (or more) failed at their start in a row (stopTerm): it stands down until its
   * candidacy renews its row on its own (`candidateRenewed` onTurn, every 10 minutes by default): it answers
   * no election and takes no lease itself meanwhile (but one left vacant a lease duration past the
   * fallback: standsDownFallback), so its row shows no life (on a session, whose
   * renewals show it alive, its row is marked: standDown) and the coordinator neither elects it
   * nor preempts a healthy holder for it. Cleared too by a term it leads (one the
   * coordinator gave it all the same, its row renewed moments before: declined, the lease would stand
   * leaderless until that term ran out).
   */
  readonly standsDown: boolean;
}

export const FOLLOWING: FollowerState = {
  lastRaw: undefined,
  lastRead: undefined,
  leaseReadAt: undefined,
  observed: undefined,
  previousReadSentAt: undefined,
  settlingSince: undefined,
  misses: 0,
  cadence: RenewalPhase.NONE,
  lastHeldOnSession: false,
  lastHeldSeconds: undefined,
  viewedSession: undefined,
  offNamedSession: undefined,
  ownFound: undefined,
  vacantSince: undefined,
  askSeen: undefined,
  vanished: undefined,
  wakeAt: undefined,
  ledToken: -1,
  endedToken: -1,
  unanswered: false,
  standAgain: undefined,
  ackedElection: undefined,
  lastLeader: undefined,
  answeredClaim: undefined,
  twinTold: undefined,
  doubt: undefined,
  preventions: 0,
  wakePending: false,
  awaited: undefined,
  pending: undefined,
  heldOff: undefined,
  standsDown: false,
};

/** Until when (monotonic) a term is held off at `now`, the work of this start-up's last terms having failed (workFailed); undefined: not held off. */
const heldOffUntil = (state: FollowerState, now: number): number | undefined => (state.heldOff !== undefined && now < state.heldOff.until ? state.heldOff.until : undefined);

/** One thing a follower learnt. */
export type FollowerEvent =
  /** Its next step is due: a poll (woken if a wake came since the last: `wakePending`, cleared by it). */
  | { readonly kind: 'poll'; readonly pushLive: boolean }
  /** The lease row, as read. */
  | { readonly kind: 'leaseRead'; readonly raw: LeaseRead }
  /** The session row a lease is held on, as read (or, for a term that row does not vouch for, the holder's own process's row, read by name). */
  | { readonly kind: 'sessionRead'; readonly read: SessionRead }
  /** The freshest row of the holder's process in the partition its sessions are in (LeaseLock.processSession). */
  | { readonly kind: 'processSessionRead'; readonly read: SessionRead }
  /** The instances of the lease's candidates (LeaseLock.candidates), before a take of a row gone under a term that named this start-up; undefined: the read failed. */
  | { readonly kind: 'candidatesRead'; readonly instances: readonly (string | undefined)[] | undefined }
  /** The candidacy renewed (an answer, an acknowledgement; `onTurn`: on its own, its timer's turn: a start-up that stands down stands again). */
  | { readonly kind: 'candidateRenewed'; readonly onTurn?: boolean }
  /** The vacancy report's answer (undefined: the lease moved on, nothing reported). */
  | { readonly kind: 'reported'; readonly lease: Lease | undefined }
  /** The confirming renewal's answer (undefined: the lease is no longer in that term). */
  | { readonly kind: 'confirmed'; readonly lease: Lease | undefined }
  /** A direct acquisition's answer. */
  | { readonly kind: 'acquired'; readonly got: Acquired }
  /** A term given back (released). */
  | { readonly kind: 'released' }
  /** Whether it leads the term it won (`leading`: still, after the renewal's follow-up). */
  | { readonly kind: 'led'; readonly ok: boolean; readonly leading: boolean }
  /** The leader's own write or read of its lease. */
  | { readonly kind: 'observed'; readonly read: LeaseRead }
  /** The leader read its lease: a claim it carries is answered. */
  | { readonly kind: 'claimIn'; readonly lease: Lease | undefined }
  /** This worker leads now: the cadence it learnt was another holder's. */
  | { readonly kind: 'leading' }
  /** Its leader ends the term with token `token` on the row (rewritten under it). */
  | { readonly kind: 'ending'; readonly token: number }
  /** A wake for the lease (revision: the row's it announces, if known; undefined: the push path went up or down). */
  | { readonly kind: 'wake'; readonly revision: number | undefined };

/** What the shell carries out, in this order. At most one read or write, last: its answer is the next event. */
export type FollowerEffect =
  | { readonly kind: 'readLease'; readonly consistent: boolean }
  /**
   * Read session row `name` (LeaseLock.session), strongly consistent or not (sessionReadConsistent),
   * for the held `term` the row judges (what a row the schema refuses is reported for): with the
   * lease row gone, the last term read, whose row named it (offSessionRead).
   */
  | { readonly kind: 'readSession'; readonly name: string; readonly shareMs: number; readonly pendingMs: number; readonly consistent: boolean; readonly term: Term | undefined }
  /** Look for the holder's own process's session (ownSessionRead): the freshest row of `process` in its sessions' partition, the lease naming session row `named` (processSessionComponents), for its holder's `term`. */
  | { readonly kind: 'readProcessSession'; readonly named: string; readonly process: string; readonly term: Term }
  /** Read the lease's candidate rows (LeaseLock.candidates). */
  | { readonly kind: 'readCandidates' }
  /** Renew the candidacy; `conflictIsNothing`: a ConflictError (the row re-registered meanwhile) is no fault. */
  | { readonly kind: 'renewCandidate'; readonly conflictIsNothing: boolean }
  /** Report the vacancy (a ConflictError is no fault). */
  | { readonly kind: 'reportVacancy'; readonly read: LeaseRead }
  /** Confirm `term` by renewing it. */
  | { readonly kind: 'confirm'; readonly term: Term }
  /** End `term` on a row rewritten under it. The poll ends with it. */
  | { readonly kind: 'endChanged'; readonly term: Term }
  | { readonly kind: 'acquire'; readonly read: LeaseRead; readonly electedBy: 'self' | 'successor' }
  /** Take a term of this start-up's that it stopped leading again as a new term (lock.ts `takenAgain`), if the row is still at the revision read. */
  | { readonly kind: 'takeAgain'; readonly read: LeaseRead }
  | { readonly kind: 'release'; readonly term: Term }
  /** Lead `term`, won by the write sent at `sentAt` (taken by decide: follow); `confirmed`: act on the renewal's row; `handed`: led from the read of a hand-over, confirmed by its first renewal. */
  | { readonly kind: 'lead'; readonly term: Term; readonly sentAt: number; readonly lease: Lease; readonly confirmed: boolean; readonly handed: boolean }
  /** onNewLeader. */
  | { readonly kind: 'newLeader'; readonly holder: string }
  /** Another start-up claims this worker's name: say so, and renew the candidacy (which refuses it). */
  | { readonly kind: 'claim'; readonly claim: IdentityClaim }
  /** Tell onError another live start-up, `instance`, leads under this worker's identity (twinOf). */
  | { readonly kind: 'twin'; readonly instance: string }
  /** Tell onError this worker cannot vouch for its times. */
  | { readonly kind: 'clockSkew'; readonly doubt: ClockDoubt }
  /** Tell onError a coordinated worker took the lease itself (the fallback), after it stood vacant `vacantMs` with no coordinator electing anyone. */
  | { readonly kind: 'tookUnelected'; readonly vacantMs: number }
  /** Tell onError a leader stopped `lateMs` past its renew deadline: none of its timers ran meanwhile (its process did not run them), which is what cost the term. */
  | { readonly kind: 'stalled'; readonly lateMs: number }
  /** End the sleep before the next step (a wake); `at`: at monotonic `at`, and a sleep given such an end keeps its first (recoveryWake). */
  | { readonly kind: 'stepNow'; readonly at?: number }
  /** Session `name`'s renewal cadence is now `phase`: shared with the process's other electors before anything else is carried out. */
  | { readonly kind: 'sessionCadence'; readonly name: string; readonly phase: RenewalPhase };

type Out = { readonly state: FollowerState; readonly effects: FollowerEffect[] };

/**
 * Whether this worker can vouch for the times it would write now (DynamoDB's clock measured within
 * maxClockErrorMs): if not, a prevention, told once per spell; `settling`: a doubt about to clear does not count.
 */
function vouch<S extends FollowerState>(s: FollowerSettings, state: S, at: Moment, fx: { push(e: { kind: 'clockSkew'; doubt: ClockDoubt }): unknown }, settling = false): { readonly state: S; readonly trusted: boolean } {
  const c = at.clock;
  if (c.ok) return { state: state.doubt === undefined ? state : { ...state, doubt: undefined }, trusted: true };
  const doubt = state.doubt ?? { since: at.now, reported: false };
  const lasting = at.now - doubt.since >= s.leaseDurationMs;
  if (settling && c.reason !== 'noSamples' && !lasting) return { state: { ...state, doubt }, trusted: true };
  const counted = { ...state, doubt, preventions: state.preventions + 1 };
  if (doubt.reported || (c.reason !== 'jumped' && !lasting)) return { state: counted, trusted: false };
  fx.push({ kind: 'clockSkew', doubt: c });
  return { state: { ...counted, doubt: { since: doubt.since, reported: true } }, trusted: false };
}

/** A write not made, or a term stopped, for the clock (`jumpMs`: a jump, reported at once). */
export function prevented<S extends FollowerState>(state: S, now: number, jumpMs?: number): { readonly state: S; readonly report?: ClockDoubt } {
  const counted = { ...state, preventions: state.preventions + 1 };
  if (jumpMs === undefined) return { state: counted };
  return { state: { ...counted, doubt: { since: state.doubt?.since ?? now, reported: true } }, report: { reason: 'jumped', jumpMs } };
}

const termKey = (l: Lease | undefined): TermKey | undefined =>
  l && { holderIdentity: l.holderIdentity, holderInstance: l.holderInstance, renewTime: l.renewTime, fencingToken: l.fencingToken, leaseDurationSeconds: l.leaseDurationSeconds };

/** Whether `l` has the term key `k`. */
function sameTerm(k: TermKey | undefined, l: Lease | undefined): boolean {
  if (!k || !l) return k === undefined && l === undefined;
  return k.holderIdentity === l.holderIdentity && k.holderInstance === l.holderInstance && k.renewTime === l.renewTime && k.fencingToken === l.fencingToken && k.leaseDurationSeconds === l.leaseDurationSeconds;
}

/** Monotonic time the held term last read runs out as this follower watches it (undefined: none held). */
const termEndsAt = (st: FollowerState): number | undefined => (st.lastRead?.holderIdentity !== undefined && st.observed ? st.observed.at + st.lastRead.leaseDurationSeconds * 1000 : undefined);

/** Whether the lease as last read is held on a session. */
const sessionHeld = (st: FollowerState): boolean => st.lastRaw?.item?.session !== undefined && st.lastRaw.item.holderIdentity !== undefined;

/** The renewal cadence this follower times its reads by: its session's (shared by the process's electors), else its holder's. */
function activeCadence(st: FollowerState, at: Pick<Moment, 'sessionCadences'>, fx: readonly FollowerEffect[] = []): RenewalPhase {
  return sessionHeld(st) && st.viewedSession !== undefined ? sessionCadence(st.viewedSession.name, at, fx) : st.cadence;
}

/** Session `name`'s renewal cadence as the process's electors share it: as this step set it last (`fx`), else as the step began. */
function sessionCadence(name: string, at: Pick<Moment, 'sessionCadences'>, fx: readonly FollowerEffect[]): RenewalPhase {
  const set = fx.findLast((f) => f.kind === 'sessionCadence' && f.name === name) as Extract<FollowerEffect, { kind: 'sessionCadence' }> | undefined;
  return set?.phase ?? at.sessionCadences?.get(name) ?? RenewalPhase.NONE;
}

/** A read sent at `sentAt` found no renewal past the expected one: the cadence its reads are timed by learns it. */
function missedRenewal(st: FollowerState, sentAt: number, at: Moment, fx: FollowerEffect[]): FollowerState {
  const was = activeCadence(st, at, fx);
  const phase = was.missed(sentAt);
  if (phase === was) return st;
  if (sessionHeld(st) && st.viewedSession !== undefined) {
    fx.push({ kind: 'sessionCadence', name: st.viewedSession.name, phase });
    return st;
  }
  return { ...st, cadence: phase };
}

/** Reports a holder seen (onNewLeader) when it is not the one last reported. */
function noteHolder(st: FollowerState, holder: unknown, fx: FollowerEffect[]): FollowerState {
  if (typeof holder !== 'string' || holder === st.lastLeader) return st;
  fx.push({ kind: 'newLeader', holder });
  return { ...st, lastLeader: holder };
}

/**
 * Another live start-up leading under this worker's identity, when `l` shows one not told of yet:
 * its term (same instance and token) renewed since the last read. Two processes given one identity
 * (NoCoordination has no candidacy to refuse the second) are safe, terms being told apart by
 * instance, but events, logs and onNewLeader cannot tell them apart. A term left by this identity's
 * previous start-up is not renewed again, so a restart is never taken for one. Terms that are or
 * were on a session are left out: a start-up stopping writes its term off its session, stamped anew
 * (an elector of one process started again before the last one ended would take that for a renewal),
 * and two start-ups of one identity on sessions are coordinated ones, which the candidacy refuses.
 */
function twinOf(s: FollowerSettings, st: FollowerState, l: Lease | undefined): string | undefined {
  const was = st.observed?.key;
  if (l?.holderIdentity !== s.identity || l.holderInstance === undefined || l.holderInstance === s.instance || l.holderInstance === st.twinTold) return undefined;
  if (st.lastHeldOnSession || l.session !== undefined || processOf(l.holderInstance) !== undefined) return undefined;
  return was?.holderInstance === l.holderInstance && was.fencingToken === l.fencingToken && was.renewTime !== l.renewTime ? l.holderInstance : undefined;
}

/** Another start-up claims this worker's name: answered once, by renewing its candidate row (which refuses the newcomer). */
function claimIn(s: FollowerSettings, st: FollowerState, l: Lease | undefined, fx: FollowerEffect[]): FollowerState {
  const c = l?.identityClaim;
  if (!c || !s.candidate || c.name !== s.identity || c.of !== s.instance || c.instance === s.instance) return st;
  const key = `${c.instance}@${c.at}`;
  if (key === st.answeredClaim) return st;
  fx.push({ kind: 'claim', claim: c });
  return { ...st, answeredClaim: key };
}

/** The longest duration the rows of held term `l` showed: its first term's (an election's, a hand-over's) is shorter than its holder's own. */
const heldSeconds = (was: FollowerState['lastHeldSeconds'], l: Lease): FollowerState['lastHeldSeconds'] => {
  const same = was !== undefined && was.instance === l.holderInstance && was.token === l.fencingToken;
  return { instance: l.holderInstance, token: l.fencingToken, seconds: same ? Math.max(was.seconds, l.leaseDurationSeconds) : l.leaseDurationSeconds };
};

/**
 * How long the fallback waits out a session-held term's holder (sessionFallbackMs), for a term whose
 * row showed `seconds`: a holder whose lease duration is longer than this worker's (a fleet part way
 * through a change of its timings) reads its own row more rarely, and its renew deadline is later,
 * so the wait is figured on its duration (its renew deadline and retry period at most that).
 */
export function sessionFallbackFor(s: Pick<FollowerSettings, 'leaseDurationMs' | 'sessionFallbackMs'>, seconds: number | undefined): number {
  const d = (seconds ?? 0) * 1000;
  if (d <= s.leaseDurationMs) return s.sessionFallbackMs;
  return Math.max(s.sessionFallbackMs, sessionFallbackMs({ sessionBackstopMs: SESSION_QUIET_LEASES * d, renewDeadlineMs: d, retryPeriodMs: d }));
}

/** Records what was read (or written); `changed`: the term or its renewal changed since the last read. */
function observe(s: FollowerSettings, st: FollowerState, read: LeaseRead, at: Moment, fx: FollowerEffect[]): { st: FollowerState; changed: boolean } {
  const now = at.now;
  const changed = !st.observed || !sameTerm(st.observed.key, read.item);
  const l = read.item;
  // a holder whose instance names a session's process can move its term onto its session at any renewal:
  // a copy read a moment before (or a move just before a delete) may not show it yet
  // the duration as the row says it, not as a view judged on an unvouched session stretched it (judgedOnSession)
  const row = st.lastRaw?.item !== undefined && st.lastRaw.revision === read.revision ? st.lastRaw.item : l;
  // no row at all: its last term may have been on a session, whoever held it (a row created again
  // without a holder, an election held for the deleted term, tells nothing more); nor does a row
  // created again whose election waits for the lease stream, which may not have handled a delete yet
  const unseenDelete = l === undefined || (l.holderIdentity === undefined && l.election?.awaitsStream === true);
  let next: FollowerState = l?.holderIdentity !== undefined ? { ...st, lastHeldOnSession: l.session !== undefined || processOf(l.holderInstance) !== undefined, lastHeldSeconds: heldSeconds(st.lastHeldSeconds, row!) } : unseenDelete ? { ...st, lastHeldOnSession: true } : st;
  if (l !== undefined && next.vanished !== undefined) next = { ...next, vanished: undefined };
  if (changed) {
    // a term naming a session only as judged by the row it names (not the lease row's own stamp, as a
    // write's answer shows it), or by its own row where that session row cannot hold it
    const byHolder = (st.viewedSession !== undefined && st.viewedSession.name === l?.session && st.viewedSession.renewTime === l.renewTime) || (st.offNamedSession !== undefined && st.offNamedSession.name === l?.session && st.offNamedSession.renewTime === l.renewTime);
    next = { ...next, observed: { key: termKey(l), at: Math.min(now, stampedBy(s, l, byHolder, at)), revision: read.revision, token: l?.fencingToken ?? -1 } };
    // a term's first write (an election's, a hand-off's, an acquisition's) is not on the holder's renewal cadence
    const v = st.viewedSession;
    if (v && l?.session === v.of && l.holderInstance !== undefined && l.holderInstance !== s.instance) {
      const was = sessionCadence(v.name, at, fx);
      const phase = was.seen(`session:${v.name}`, v.renewTime, now, st.previousReadSentAt, l.leaseDurationSeconds * 1000);
      if (phase !== was) fx.push({ kind: 'sessionCadence', name: v.name, phase });
    } else if (l?.holderInstance !== undefined && l.renewTime !== undefined && l.renewTime !== l.acquireTime && l.holderInstance !== s.instance) {
      next = { ...next, cadence: st.cadence.seen(`${l.holderInstance}|${l.fencingToken}`, l.renewTime, now, st.previousReadSentAt, l.leaseDurationSeconds * 1000) };
    }
  } else next = { ...next, observed: { ...st.observed!, revision: read.revision } };
  const twin = twinOf(s, st, l);
  if (twin !== undefined) {
    fx.push({ kind: 'twin', instance: twin });
    next = { ...next, twinTold: twin };
  }
  next = noteHolder(next, read.item?.holderIdentity, fx);
  return { st: claimIn(s, next, read.item, fx), changed };
}

/**
 * The latest moment on this worker's monotonic clock that the renewal `l` shows can have been sent,
 * by its stamp: a term first seen long after its last renewal (a follower back from an outage, a
 * new process, a quiet follower's rare read) is then counted as watched since that moment, not
 * since it was first seen, and runs out a lease duration after it, as the coordinator counts it
 * (stamp + duration + clockSkewMs). Sound because the holder stamps a renewal with DynamoDB's time
 * as it measures it, at most `stampErrorMs` off, after the moment it counts its renew deadline
 * from, and stops a renew deadline later, short of the lease duration; this worker maps the stamp
 * onto its own clock with its own measured error. Only in coordinated mode, where the coordinator
 * already expires terms by their stamps (clockSkewMs's assumption), with this worker's clock
 * measured and trusted now, and for a term off a session or whose `session` is judged (`byHolder`):
 * by the session row it names (`l` carries that row's stamp, later than the lease row's, and a
 * Session stamps each renewal after the moment its leaders count their deadline from), or by its
 * own row where a consistent read of the row it names showed that row cannot hold it (a peer's
 * `session` on a holder on no session, which renews the lease row itself, as the coordinator judges
 * it: FollowerState.offNamedSession); not one judged by its holder's other rows or the session
 * fallback, nor by a copy of the session row. Infinity: not by its stamp.
 */
function stampedBy(s: FollowerSettings, l: Lease | undefined, byHolder: boolean, at: Moment): number {
  if (s.mode !== 'coordinated' || !s.clockMeasured || !at.clock.ok || l?.holderIdentity === undefined || l.renewTime === undefined || (l.session !== undefined && !byHolder)) return Infinity;
  return l.renewTime + s.stampErrorMs + at.clock.errorMs + 1 - at.offset; // (+1: stamps are whole ms)
}

/**
 * What a consistent read that finds the lease row gone makes of the row read just before it
 * (FollowerState.vanished): a term held off a session, by a holder on no session (its instance
 * names no process: it can never put the term on one), renewed at least once (a first term's holder
 * may renew for longer), that named this start-up successor or second successor, the last this
 * start-up learnt of the lease, and found gone within that term of its renewal's stamp (so no other
 * follower could have taken the term before the delete). Session-held terms are not: their holder
 * learns of a delete only from the lease stream's mark or its own backstop read (sessionFallbackMs).
 * A term whose row named a session is off it (`offSession`) once a consistent read of that session
 * row, sent after the row was found gone, shows it cannot hold the term (sessionStanding 'none': no
 * such row, or another process's, its holder on none); until then it is not (offSessionRead). Nor,
 * once due, is a lease one of whose candidates can hold a term on a session (rest): the term
 * may have been handed to it, or released and elected, and moved onto its session unseen.
 */
function vanishedUnder(s: FollowerSettings, st: FollowerState, at: Moment, offSession = false): Vanished | undefined {
  const last = st.lastRaw;
  const l = last?.item;
  if (s.mode !== 'coordinated' || last === undefined || l === undefined || l.holderIdentity === undefined || (l.session !== undefined && !offSession) || processOf(l.holderInstance) !== undefined) return undefined;
  if (l.renewTime === undefined || l.renewTime === l.acquireTime || (l.holderIdentity === s.identity && l.holderInstance === s.instance)) return undefined;
  if (st.observed === undefined || st.observed.revision !== last.revision || !sameTerm(st.observed.key, l)) return undefined;
  const role = isSuccessor(l, s.identity, s.instance) ? 'successor' : isSecondSuccessor(l, s.identity, s.instance) ? 'second' : undefined;
  if (role === undefined || !at.clock.ok) return undefined;
  // the renewal landed no earlier than its stamp dated as leadFromRead dates a hand-over: any other
  // follower's take of the term comes a term after that at the earliest, so after this answer
  const termMs = l.leaseDurationSeconds * 1000;
  const landed = l.renewTime - at.offset - (1 + (s.clockMeasured ? at.clock.errorMs : s.stampErrorMs)) - s.stampErrorMs;
  return at.now < landed + termMs ? { role, termMs } : undefined;
}

/**
 * The session row to read, consistently, before a poll's consistent read that found the lease row
 * gone is judged: the one the term read before named, where that term would count as vanished
 * (vanishedUnder) but for its `session`. A holder on no session renews its row itself whatever
 * `session` a peer wrote on it, as everyone judges it (sessionStanding); only a row that exists and
 * vouches (an older SDK's, which names no process) can hold its term, and the lease row gone, its
 * holder learns of the delete only from the stream's mark or its backstop read. Read for that term:
 * a row the schema refuses is its BrokenSessionError, as every by-name read of a refused row.
 */
function offSessionRead(s: FollowerSettings, st: FollowerState, at: Moment): { readonly name: string; readonly term: Term } | undefined {
  const l = st.lastRaw?.item;
  return l?.session !== undefined && vanishedUnder(s, st, at, true) !== undefined ? { name: l.session, term: termOf(l) } : undefined;
}

/**
 * An eventually consistent read older than one already seen: not acted on, but read again
 * consistently. Older by its token (tokens only grow for a lease name, a row deleted and created
 * again included, whose revision starts over), or by its revision within the term seen.
 */
function isStale(st: FollowerState, read: LeaseRead): boolean {
  const o = st.observed;
  if (!o || o.token < 0) return false;
  if (!read.item) return true;
  return read.item.fencingToken < o.token || (read.revision < o.revision && read.item.fencingToken <= o.token);
}

/** How stale a session read may be and its judgement still sound: any renewal landing after it was sent comes after the holder's own deadline. */
const sessionMargin = (s: FollowerSettings): number => Math.max(SHARED_READ_MS, Math.min(s.retryPeriodMs, (s.leaseDurationMs - s.renewDeadlineMs) / 4));

/** A session row read again, strongly consistent or not, shared with no other elector's read, for `term` (readSession's). */
const readSessionAgain = (name: string, consistent: boolean, term: Term | undefined): FollowerEffect => ({ kind: 'readSession', name, shareMs: 0, pendingMs: 0, consistent, term });
const done = (state: FollowerState, fx: FollowerEffect[]): Out => ({ state: { ...state, pending: undefined }, effects: fx });
const waiting = (state: FollowerState, pending: Pending, fx: FollowerEffect[], effect: FollowerEffect): Out => ({ state: { ...state, pending }, effects: [...fx, effect] });

/** One step of a follower: its record after `e`, decided at `at`, and what to carry out. */
export function followerStep(s: FollowerSettings, state: FollowerState, e: FollowerEvent, at: Moment): Out {
  const fx: FollowerEffect[] = [];
  const p = state.pending;
  switch (e.kind) {
    case 'poll': {
      const woken = state.wakePending;
      const st = woken ? { ...state, wakePending: false } : state;
      const last = st.lastRaw;
      const v = state.viewedSession;
      const vouched = v !== undefined && v.of === last?.item?.session && v.left === undefined;
      const plan = pollPlan({ mode: s.mode, woken, pushLive: e.pushLive, raw: last?.item, view: state.lastRead, leaseReadAt: state.leaseReadAt, now: at.now, backstopMs: SESSION_QUIET_LEASES * s.leaseDurationMs, vouched });
      const read: Pending = { kind: 'read', then: 'poll', woken, consistent: plan.consistent, sentAt: at.now, reread: false };
      if (plan.sessionOnly && last) return readSession(s, st, { ...read, raw: last, sessionOnly: true }, last, at, fx);
      return waiting(st, read, fx, { kind: 'readLease', consistent: plan.consistent });
    }
    case 'leaseRead': {
      if (p?.kind !== 'read') return done(state, fx);
      if (!p.consistent && !p.reread && isStale(state, e.raw)) return waiting(state, { ...p, reread: true }, fx, { kind: 'readLease', consistent: true });
      let st = state;
      if (p.woken && st.awaited !== undefined) {
        // the announced write has not landed yet: read again at once (this read is older than what is coming)
        const n = p.awaitRereads ?? 0;
        if (e.raw.revision < st.awaited && n < AWAIT_REREADS) return waiting(st, { ...p, consistent: true, sentAt: at.now, awaitRereads: n + 1 }, fx, { kind: 'readLease', consistent: true });
        st = { ...st, awaited: undefined };
      }
      return readSession(s, { ...st, leaseReadAt: p.sentAt }, p, e.raw, at, fx);
    }
    case 'sessionRead': {
      if (p?.kind !== 'read' || !p.raw) return done(state, fx);
      // the lease row gone, its last term's named session read: judged as the row gone, off that session if the row cannot hold it
      if (p.gone === 'reading') {
        const offSession = sessionStanding(state.lastRaw?.item, stampOf(e.read.row)) === 'none';
        return viewed(s, state, { ...p, gone: offSession ? 'offSession' : undefined }, p.raw, p.raw, p.sentAt, at, fx);
      }
      const l = p.raw.item!;
      const margin = sessionMargin(s);
      if (p.named) {
        // the holder's own process's row, read by name: gone, it is looked for again
        if (!e.read.row) return waiting(state, p, fx, { kind: 'readProcessSession', named: l.session!, process: processOf(l.holderInstance)!, term: termOf(l) });
        if (!p.ownReread && at.now - e.read.sentAt > margin) return waiting(state, { ...p, ownReread: true }, fx, readSessionAgain(e.read.row.name, sessionReadConsistent(s, state, p, l, at.now), termOf(l)));
        return judgedView(s, state, p, p.named, e.read, at, fx);
      }
      // a read sent longer ago than the margin (the process frozen or starved meanwhile) is read again
      if (!p.sessionReread && at.now - e.read.sentAt > margin) return waiting(state, { ...p, sessionReread: true }, fx, readSessionAgain(l.session!, sessionReadConsistent(s, state, p, l, at.now), termOf(l)));
      // a row that does not vouch for the holder: its own process's session is looked for
      const own = ownSessionRead(l, p.raw.revision, e.read.row, state.ownFound, at.now, s.leaseDurationMs);
      if (own?.kind === 'query') return waiting(state, { ...p, named: e.read }, fx, { kind: 'readProcessSession', named: l.session!, process: own.process, term: termOf(l) });
      if (own?.kind === 'read') return waiting(state, { ...p, named: e.read }, fx, { kind: 'readSession', name: own.name, shareMs: watchesTerm(l, s.identity, s.instance) ? SHARED_READ_MS : margin, pendingMs: margin, consistent: sessionReadConsistent(s, state, p, l, at.now), term: termOf(l) });
      return judgedView(s, state, p, e.read, undefined, at, fx);
    }
    case 'processSessionRead': {
      if (p?.kind !== 'read' || !p.raw || !p.named) return done(state, fx);
      const l = p.raw.item!;
      const st = { ...state, ownFound: { holderInstance: l.holderInstance!, revision: p.raw.revision, name: e.read.row?.name, at: e.read.sentAt } };
      if (e.read.row && !p.ownReread && at.now - e.read.sentAt > sessionMargin(s)) return waiting(st, { ...p, ownReread: true }, fx, readSessionAgain(e.read.row.name, sessionReadConsistent(s, st, p, l, at.now), termOf(l)));
      return judgedView(s, st, p, p.named, e.read.row ? e.read : undefined, at, fx);
    }
    case 'candidatesRead': {
      if (p?.kind !== 'candidates' || state.vanished === undefined) return done(state, fx);
      // a candidate that can hold a term on a session may lead now, unseen: the term read last was
      // handed to it, or released and elected, then moved onto its session before the delete; it
      // hears of the delete only from the lease stream's mark or its backstop read: the session fallback
      // (as when the read failed: a role without the Query, say, must not keep the lease waiting for ever)
      if (e.instances === undefined || e.instances.some((i) => i !== s.instance && processOf(i) !== undefined)) return done({ ...state, vanished: undefined }, fx);
      return acquire(s, { ...state, vanished: { ...state.vanished, checked: true } }, p.raw, 'first', at, fx);
    }
    case 'candidateRenewed':
      // on its own: beside whatever poll is under way, nothing to read or write
      if (e.onTurn === true) return { state: state.standsDown ? { ...state, standsDown: false } : state, effects: fx };
      if (p?.kind === 'answer') {
        // any renewal after the term this start-up stopped leading stands it again
        const a = p.d.answer;
        const renewed = standsAgainNow(p.raw.item, { identity: s.identity, standAgain: state.standAgain }) ? { ...state, standAgain: undefined } : state;
        const st = a === 'unanswered' ? { ...renewed, unanswered: false } : typeof a === 'object' ? { ...renewed, ackedElection: a.election } : renewed;
        return rest(s, st, p.raw, p.d, at, fx);
      }
      if (p?.kind === 'reportAck') return afterReport(s, state, p.raw, p.d, at, fx);
      return done(state, fx);
    case 'reported': {
      if (p?.kind !== 'report') return done(state, fx);
      // Landed or refused, the row moved: judged again from the row read before (a session-only
      // poll), it would be reported again, refused every time. Landed: the lease as last judged
      // carries the report, seen now (REPORT_ANSWER_MS counts from this write), so the next polls
      // read the row while it stands. Refused: whoever moved first is read at once.
      const st: FollowerState =
        e.lease === undefined
          ? { ...state, leaseReadAt: undefined, wakeAt: at.now }
          : { ...state, lastRead: state.lastRead && { ...state.lastRead, vacancyReport: e.lease.vacancyReport, revision: e.lease.revision }, askSeen: { key: askOf(e.lease) ?? '', at: at.now } };
      if (e.lease !== undefined && s.candidate && !st.standsDown) {
        const j = vouch(s, st, at, fx, true);
        if (j.trusted) return waiting(j.state, { ...p, kind: 'reportAck' }, fx, { kind: 'renewCandidate', conflictIsNothing: true });
        return afterReport(s, j.state, p.raw, p.d, at, fx);
      }
      return afterReport(s, st, p.raw, p.d, at, fx);
    }
    case 'confirmed': {
      if (p?.kind !== 'confirm') return done(state, fx);
      if (!e.lease) return done({ ...state, leaseReadAt: undefined }, fx);
      const { st } = observe(s, state, { key: { name: s.leaseName }, item: e.lease, revision: e.lease.revision }, at, fx);
      return won(s, st, p.term, p.jumps, p.sentAt, e.lease, 'confirm', at, fx);
    }
    case 'acquired': {
      if (p?.kind !== 'acquire') return done(state, fx);
      // the row DynamoDB returned with the refusal names whoever moved first: a new holder, seen now
      if (!('written' in e.got)) {
        const st = noteHolder(state, e.got.refusedBy, fx);
        // a stopped term not taken again (the row moved on): the next step reads the row itself, not a copy
        return p.then === 'confirm' ? done({ ...st, leaseReadAt: undefined }, fx) : attempted(s, st, p.then, false, at, fx);
      }
      const written = e.got.written;
      // taken by the fallback: no coordinator elected anyone (none runs on these tables, or it fails)
      if (p.then === 'self' && s.mode === 'coordinated') fx.push({ kind: 'tookUnelected', vacantMs: state.vacantSince === undefined ? 0 : Math.round(at.now - state.vacantSince) });
      const { st } = observe(s, state, { ...p.read, item: written, revision: written.revision }, at, fx);
      return won(s, st, { holderIdentity: s.identity, fencingToken: written.fencingToken }, p.jumps, p.sentAt, written, p.then, at, fx);
    }
    case 'released':
      if (p?.kind !== 'giveBack') return done(state, fx);
      return p.then === 'confirm' || p.then === 'handed' ? done({ ...state, leaseReadAt: undefined }, fx) : attempted(s, state, p.then, false, at, fx);
    case 'led': {
      if (p?.kind !== 'lead') return done(state, fx);
      const st = e.ok ? { ...state, ledToken: Math.max(state.ledToken, p.token), vacantSince: undefined } : state;
      // not confirmed (the term moved on): the next step reads the lease row itself, not a copy
      if (p.then === 'confirm' || p.then === 'handed') return done(e.leading ? st : { ...st, leaseReadAt: undefined }, fx);
      return attempted(s, st, p.then, e.ok, at, fx);
    }
    case 'observed':
      return { state: observe(s, state, e.read, at, fx).st, effects: fx };
    case 'claimIn':
      return { state: claimIn(s, state, e.lease, fx), effects: fx };
    case 'ending':
      return { state: { ...state, endedToken: Math.max(state.endedToken, e.token) }, effects: fx };
    case 'leading':
      return { state: { ...state, misses: 0, previousReadSentAt: undefined, cadence: RenewalPhase.NONE }, effects: fx };
    case 'wake': {
      // a wake for the very revision this worker has read is nothing new (its own hand-off, say)
      const seen = state.observed;
      if (e.revision !== undefined && seen !== undefined && e.revision === seen.revision) return { state, effects: fx };
      // a revision after the one read: a write in flight that this read may come too early for
      const ahead = e.revision !== undefined && seen !== undefined && e.revision > seen.revision;
      return { state: { ...state, wakePending: true, awaited: ahead ? e.revision : state.awaited }, effects: [{ kind: 'stepNow' }] };
    }
  }
}

/** The term a held lease row shows (its holder and fencing token). */
const termOf = (l: Lease): Term => ({ holderIdentity: l.holderIdentity!, fencingToken: l.fencingToken });

/** The lease as this follower judges it by the session rows read (judgedOnSession). */
function judgedView(s: FollowerSettings, state: FollowerState, p: Extract<Pending, { kind: 'read' }>, named: SessionRead, own: SessionRead | undefined, at: Moment, fx: FollowerEffect[]): Out {
  const raw = p.raw!;
  const l = raw.item!;
  const { lease, by } = judgedOnSession(l, notOlder(state, l, named).row, own && notOlder(state, l, own).row, sessionFallbackFor(s, l.leaseDurationSeconds));
  // a poll of the session row alone that finds no row vouching for the term, or the term named as left
  // (its elector stopped: handed over, released or left to run out): the lease row says what became
  // of it, read now, consistently (it is news), not at the next poll (pollPlan's `vouched`)
  if (p.sessionOnly && (by === undefined || leftStamp(l, by) !== undefined)) return waiting(state, { kind: 'read', then: 'poll', woken: false, consistent: true, sentAt: at.now, reread: false }, fx, { kind: 'readLease', consistent: true });
  // a copy may be old: a term judged run out on one is read again, consistently, before anything is done on it
  const o = state.observed;
  const copy = named.consistent === false || own?.consistent === false;
  if (copy && o !== undefined && sameTerm(o.key, lease) && at.now - o.at > lease.leaseDurationSeconds * 1000) {
    return waiting(state, { ...p, named: undefined, sessionReread: false, ownReread: false, sessionConsistent: true }, fx, readSessionAgain(l.session!, true, termOf(l)));
  }
  const offNamedSession = named.consistent !== false && sessionStanding(l, stampOf(named.row)) === 'none' ? { name: l.session!, renewTime: l.renewTime } : undefined;
  const st = { ...state, viewedSession: by && { name: by.name, renewTime: by.renewTime, of: l.session!, ...(leftStamp(l, by) === undefined ? {} : { left: true as const }) }, offNamedSession };
  // the row judged by, whose renewals the cadence times
  return viewed(s, st, p, raw, { ...raw, item: lease }, own?.row ? own.sentAt : named.sentAt, at, fx);
}

/** The lease row read (`raw`): judged as it is, or, held on a session, once that session's row is read. */
function readSession(s: FollowerSettings, state: FollowerState, p: Extract<Pending, { kind: 'read' }>, raw: LeaseRead, at: Moment, fx: FollowerEffect[]): Out {
  const l = raw.item;
  const st = { ...state, viewedSession: undefined, offNamedSession: undefined };
  // the row gone under a term that named a session: that session row first, read now (vanishedUnder)
  const gone = l === undefined && p.then === 'poll' && (p.consistent || p.reread) ? offSessionRead(s, st, at) : undefined;
  if (gone !== undefined) return waiting(st, { ...p, raw, gone: 'reading' }, fx, readSessionAgain(gone.name, true, gone.term));
  if (l?.session === undefined || l.holderIdentity === undefined) return viewed(s, st, p, raw, raw, p.sentAt, at, fx);
  const margin = sessionMargin(s);
  const aim = sessionCadence(l.session, at, fx).expectedAt();
  const shareMs = sessionShareMs({ watches: watchesTerm(l, s.identity, s.instance), now: at.now, due: aim === undefined ? undefined : aim + READ_AFTER_MS, previousSentAt: state.previousReadSentAt, marginMs: margin, sharedMs: SHARED_READ_MS });
  return waiting(st, { ...p, raw }, fx, { kind: 'readSession', name: l.session, shareMs, pendingMs: margin, consistent: sessionReadConsistent(s, state, p, l, at.now), term: termOf(l) });
}

/**
 * Whether a session read is sent strongly consistent. A copy (half a read unit) is enough while the
 * term this follower watches has more than a retry period left on its clock: a copy older than the
 * row only makes the term look renewed later, and the term is judged run out only on a consistent
 * read (judgedView reads again). Consistent from a retry period before the term's end, for a
 * second look before a take, and once a copy was found too old to judge by.
 */
export function sessionReadConsistent(s: Pick<FollowerSettings, 'retryPeriodMs'>, state: Pick<FollowerState, 'observed'>, p: { readonly then: 'poll' | 'secondLook'; readonly sessionConsistent?: boolean }, l: Lease, now: number): boolean {
  if (p.sessionConsistent || p.then === 'secondLook') return true;
  const o = state.observed;
  return o !== undefined && now >= o.at + l.leaseDurationSeconds * 1000 - s.retryPeriodMs;
}

/** A copy of a session row older than the renewal of the same term this follower has already seen counts as that renewal: a copy never moves a term back. */
function notOlder(state: FollowerState, l: Lease, r: SessionRead): SessionRead {
  const seen = state.lastRead;
  const ofThisTerm = seen?.session === l.session && seen?.holderInstance === l.holderInstance && seen?.fencingToken === l.fencingToken;
  if (r.consistent !== false || !r.row || !ofThisTerm || seen.renewTime === undefined || r.row.renewTime >= seen.renewTime) return r;
  return { ...r, row: { ...r.row, renewTime: seen.renewTime } };
}

/** The lease read (`raw`) and as judged (`view`), at `sentAt`: a poll's, or the successor's second look. */
function viewed(s: FollowerSettings, state: FollowerState, p: Extract<Pending, { kind: 'read' }>, raw: LeaseRead, view: LeaseRead, sentAt: number, at: Moment, fx: FollowerEffect[]): Out {
  if (p.then === 'secondLook') {
    const { st } = observe(s, { ...state, lastRaw: raw }, view, at, fx);
    const l = view.item;
    if (isVacant(l, st.observed!.at, at.now) && watchesTerm(l, s.identity, s.instance)) return acquire(s, st, raw, 'second', at, fx);
    return done(st, fx);
  }
  return polled(s, state, raw, view, sentAt, p.woken, p.consistent || p.reread, at, fx, p.gone === 'offSession');
}

/** What `lease` asks of a coordinator now, as a key that changes with each ask: its open election, or else its vacancy report. */
function askOf(lease: Lease | undefined): string | undefined {
  // counted afresh once the lease stream has seen the row (awaitsStream cleared)
  if (lease?.election) return `election|${electionKey(lease.election)}${lease.election.awaitsStream ? '|stream' : ''}`;
  const r = lease?.vacancyReport;
  return r === undefined ? undefined : `report|${r.by}|${r.at}|${r.observedRevision}`;
}

/** A poll's read: recorded, then decided on (decideFollower), then acted on in order. */
function polled(s: FollowerSettings, state: FollowerState, raw: LeaseRead, view: LeaseRead, sentAt: number, woken: boolean, consistent: boolean, at: Moment, fx: FollowerEffect[], offSession = false): Out {
  // the row gone: only a consistent read says so of the term read before (a copy may lag a re-creation);
  // a term that named a session, once its session row was read (offSessionRead): decided now, after that read's answer
  const gone = raw.item === undefined && consistent ? vanishedUnder(s, state, at, offSession) : undefined;
  const o = observe(s, { ...state, lastRaw: raw, vanished: gone ?? state.vanished }, view, at, fx);
  let st = o.st;
  if (o.changed) st = { ...st, misses: 0 };
  else if (!woken) {
    st = missedRenewal({ ...st, misses: st.misses + 1 }, sentAt, at, fx); // the next renewal lands later than this read was served
  }
  const hadRow = st.lastRead !== undefined;
  st = { ...st, previousReadSentAt: sentAt, lastRead: view.item };
  const settling = !isQuiet(view.item) || (watchesTerm(view.item, s.identity, s.instance) && !activeCadence(st, at, fx).known);
  st = { ...st, settlingSince: settling ? (st.settlingSince ?? at.now) : undefined };
  const askKey = askOf(view.item);
  st = { ...st, askSeen: askKey === undefined ? undefined : st.askSeen?.key === askKey ? st.askSeen : { key: askKey, at: at.now } };
  const d = s.decideFollower({
    lease: view.item,
    identity: s.identity,
    instance: s.instance,
    mode: s.mode,
    // standing down, it answers nothing: its row shows no life until its candidacy's own renewal
    candidate: s.candidate && !st.standsDown,
    ackedElection: st.ackedElection,
    unanswered: st.unanswered,
    standAgain: st.standAgain,
    hadRow,
    now: at.now,
    observedAt: st.observed!.at,
    vacantSince: st.vacantSince,
    vanished: view.item === undefined ? st.vanished : undefined,
    askSeenAt: st.askSeen?.at,
    retryPeriodMs: s.retryPeriodMs,
    fallbackAfterMs: fallbackAfter(s, st, view.item),
  });
  if (d.confirm) {
    // elected: confirm by renewing before acting (a term rewritten under it is ended instead)
    st = { ...st, wakeAt: undefined };
    const c = termToConfirm(view.item!, st.ledToken, st.endedToken);
    // ended there: the next poll reads the row, never this copy again (a session-only poll would end it once more)
    if (c.end) return done({ ...st, leaseReadAt: undefined }, [...fx, { kind: 'endChanged', term: c.term }]);
    // its work just failed: confirmed once its backoff is over, if still elected (else the term runs out unconfirmed)
    const held = heldOffUntil(st, at.now);
    if (held !== undefined) return done({ ...st, leaseReadAt: undefined, wakeAt: held }, fx);
    // not confirmed while the clock is in doubt: the coordinator's short first term runs out, or the doubt clears first
    const j = vouch(s, st, at, fx);
    if (!j.trusted) return done({ ...j.state, leaseReadAt: undefined }, fx);
    // a term this start-up stopped leading (its renew deadline passed, its clock jumped), still its own:
    // taken again as a new term, the token raised on the revision read, so its stopped work's late
    // writes are told apart by any fence on the token, and the row is never vacant while that work winds down
    if (c.term.fencingToken === st.ledToken) {
      if (raw.item?.fencingToken !== c.term.fencingToken) return done({ ...j.state, leaseReadAt: undefined }, fx);
      return waiting(j.state, { kind: 'acquire', read: raw, then: 'confirm', jumps: at.jumps, sentAt: at.now }, fx, { kind: 'takeAgain', read: raw });
    }
    // handed over: led from this read, confirmed after (leadFromRead); an eventually consistent copy is read again first
    const clock = at.clock.ok ? { offset: at.offset, errorMs: 1 + (s.clockMeasured ? at.clock.errorMs : s.stampErrorMs) } : undefined; // (+1: stamps are whole ms)
    const h = s.leadFromRead({ lease: view.item!, identity: s.identity, consistent, clock, stampErrorMs: s.stampErrorMs, now: at.now, leaseDurationMs: s.leaseDurationMs, renewDeadlineMs: s.renewDeadlineMs, retryPeriodMs: s.retryPeriodMs });
    if (h.kind === 'readAgain') return waiting(j.state, { kind: 'read', then: 'poll', woken: true, consistent: true, sentAt: at.now, reread: true }, fx, { kind: 'readLease', consistent: true });
    if (h.kind === 'lead') return won(s, j.state, c.term, at.jumps, h.renewedAt, view.item!, 'handed', at, fx);
    return waiting(j.state, { kind: 'confirm', term: c.term, jumps: at.jumps, sentAt: at.now }, fx, { kind: 'confirm', term: c.term });
  }
  // An answer makes this worker electable: not while it cannot tell DynamoDB's time for long.
  if (d.answer !== undefined && s.candidate) {
    const j = vouch(s, st, at, fx, true);
    if (j.trusted) return waiting(j.state, { kind: 'answer', raw, d }, fx, { kind: 'renewCandidate', conflictIsNothing: false });
    st = typeof d.answer === 'object' ? { ...j.state, unanswered: true } : j.state;
  }
  return rest(s, st, raw, d, at, fx);
}

/**
 * How long a vacant lease waits for the fallback (FollowerView.fallbackAfterMs) after a read of
 * `item`: longer after a term on a session, or with no row at all (this start-up may never have seen
 * it: a session-held holder of a deleted row leads on until its backstop read when the lease stream
 * is down).
 */
const fallbackAfter = (s: FollowerSettings, st: FollowerState, item: Lease | undefined): number =>
  st.lastHeldOnSession || item === undefined ? Math.max(s.fallbackAfterMs, sessionFallbackFor(s, st.lastHeldSeconds?.seconds)) : s.fallbackAfterMs;

/** A poll's actions after its answer: take the lease as successor, or report a vacancy and take it by fallback. */
function rest(s: FollowerSettings, state: FollowerState, raw: LeaseRead, d: FollowerDecision, at: Moment, fx: FollowerEffect[]): Out {
  const st = { ...state, vacantSince: d.vacantSince, wakeAt: d.wakeAt };
  // the row gone under a term that named this start-up: first, no candidate can have put a term on a session since
  if (d.take === 'successor' && raw.item === undefined && st.vanished !== undefined && st.vanished.checked !== true) return waiting(st, { kind: 'candidates', raw }, fx, { kind: 'readCandidates' });
  // as successor (or second successor): a lost race is read again at once (attempted)
  if (d.take === 'successor') return acquire(s, st, raw, 'first', at, fx);
  if (d.reportVacancy) return waiting(st, { kind: 'report', raw, d }, fx, { kind: 'reportVacancy', read: raw });
  return afterReport(s, st, raw, d, at, fx);
}

function afterReport(s: FollowerSettings, state: FollowerState, raw: LeaseRead, d: FollowerDecision, at: Moment, fx: FollowerEffect[]): Out {
  return d.take === 'self' ? acquire(s, state, raw, 'self', at, fx) : done(state, fx);
}

/** Direct acquisition (NoCoordination, the fallback, or as the designated successor), conditioned on the revision read. */
function acquire(s: FollowerSettings, state: FollowerState, read: LeaseRead, then: Attempt, at: Moment, fx: FollowerEffect[]): Out {
  // its work just failed: not taken again before its backoff (a peer may take it meanwhile); looked at again then
  const held = heldOffUntil(state, at.now);
  if (held !== undefined) return done({ ...state, wakeAt: Math.min(state.wakeAt ?? Infinity, held) }, fx);
  // standing down: nor as successor or by the fallback until its candidacy's own renewal (candidateRenewed onTurn),
  // unless the lease stood vacant a lease duration past the fallback (standsDownFallback): a stand-down never leaves it leaderless
  if (state.standsDown && !(then === 'self' && standsDownFallback(s, state, read.item, at.now))) return done(state, fx);
  const j = vouch(s, state, at, fx);
  if (!j.trusted) return attempted(s, j.state, then, false, at, fx);
  return waiting(j.state, { kind: 'acquire', read, then, jumps: at.jumps, sentAt: at.now }, fx, { kind: 'acquire', read, electedBy: then === 'self' ? 'self' : 'successor' });
}

/**
 * Whether a start-up that stands down takes the lease (read as `item`) by the fallback all the same
 * at `now`: it has stood vacant a lease duration past the fallback, so no healthy candidate was
 * elected or took it by the fallback meanwhile (every candidate stands down, their work failing at
 * once everywhere, say; or the only one does). A stand-down keeps a candidate that cannot hold a term
 * from taking the lease from a healthy one; it does not leave the lease leaderless until its
 * candidacy's renewal. A healthy candidate's fallback, due a lease duration sooner, takes it first:
 * the fallback the poll's decision waited (fallbackAfter, a session's after a term on one), not the plain one.
 */
const standsDownFallback = (s: FollowerSettings, st: FollowerState, item: Lease | undefined, now: number): boolean =>
  st.vacantSince !== undefined && now - st.vacantSince >= fallbackAfter(s, st, item) + s.leaseDurationMs;

/** A term won by the write sent at `sentAt`: led, unless the clock jumped meanwhile (then given back). */
function won(s: FollowerSettings, state: FollowerState, term: Term, jumps: number, sentAt: number, lease: Lease, then: Attempt | Given, at: Moment, fx: FollowerEffect[]): Out {
  if (at.jumps !== jumps) return waiting(prevented(state, at.now).state, { kind: 'giveBack', then }, fx, { kind: 'release', term });
  return waiting(state, { kind: 'lead', then, token: term.fencingToken }, fx, { kind: 'lead', term, sentAt, lease, confirmed: then === 'confirm', handed: then === 'handed' });
}

/** An acquisition came to `ok`: the successor's first that lost a race reads the lease again at once (a second look). */
function attempted(s: FollowerSettings, state: FollowerState, then: Attempt, ok: boolean, at: Moment, fx: FollowerEffect[]): Out {
  if (then !== 'first' || ok) return done(state, fx);
  return waiting(state, { kind: 'read', then: 'secondLook', woken: false, consistent: true, sentAt: at.now, reread: true }, fx, { kind: 'readLease', consistent: true });
}

/**
 * Whether the lease as last read shows its holder silent: its renewal stamped longer ago than the
 * renew deadline and a stamp's error when the read was sent, on the worker's measure of DynamoDB's
 * time (`offset`; undefined while it cannot vouch for it). A holder renewing on time never is.
 */
export function holderSilent(s: Pick<FollowerSettings, 'renewDeadlineMs' | 'stampErrorMs'>, st: Pick<FollowerState, 'lastRead' | 'leaseReadAt'>, offset: number | undefined): boolean {
  const l = st.lastRead;
  if (offset === undefined || l?.holderIdentity === undefined || l.renewTime === undefined || st.leaseReadAt === undefined) return false;
  return st.leaseReadAt - (l.renewTime - offset) > s.renewDeadlineMs + s.stampErrorMs;
}

/** When a follower reads next (nextReadDelay), at `now`; `offset`: DynamoDB's time less monotonic, while the worker can vouch for it. */
export function followerDelay(s: FollowerSettings, st: FollowerState, at: Pick<Moment, 'now' | 'sessionCadences'>, pushLive: boolean, random: number, offset?: number): number {
  const now = at.now;
  const cadence = activeCadence(st, at);
  return nextReadDelay({
    lease: st.lastRead,
    identity: s.identity,
    instance: s.instance,
    mode: s.mode,
    now,
    retryPeriodMs: s.retryPeriodMs,
    expectedAt: cadence.expectedAt(),
    cadenceKnown: cadence.known,
    settlingForMs: st.settlingSince === undefined ? undefined : now - st.settlingSince,
    leaseDurationMs: s.leaseDurationMs,
    termEndsAt: termEndsAt(st),
    misses: st.misses,
    pushLive,
    sessionHeld: sessionHeld(st),
    random,
    holderSilent: holderSilent(s, st, offset),
  });
}

// ---- the elector's step: following and leading, one record ----

/** What an elector knows between events, in one record replaced by each step: following (`lead` undefined) or leading. */
export interface State extends FollowerState {
  readonly lead: Lead | undefined;
  /** Terms this start-up has led. */
  readonly terms: number;
  /** The session the last term it led was on, as it knew it when it stopped (leavingKept: where the lease cannot be read as it stops). */
  readonly ledOn: string | undefined;
  /** Stopping: its leaving of the lease under way (leave), after its step-down and its candidacy withdrawn. */
  readonly leaving: Leaving | undefined;
}

export const START: State = { ...FOLLOWING, lead: undefined, terms: 0, ledOn: undefined, leaving: undefined };

/** The settings an elector decides by (its options, resolved), and the decisions it calls through (a planted bug's, in the simulator). */
export interface Settings extends FollowerSettings {
  readonly decideLeader: typeof decideLeader;
  /** What a leader whose work failed does with its term (the `onLeaderWorkFailure` option). */
  readonly onWorkFailure: 'keep' | 'giveUp';
  readonly releaseOnCancel: boolean;
  /** A cancelled leader hands over at once, not at its next renewal slot (withLease). */
  readonly promptly: boolean;
  /** How long after a renewal was sent the next goes out. */
  readonly cadenceMs: number;
  /** NoCoordination without a renewIntervalMs of its own: a leader steps every retry period, as client-go's. */
  readonly everyRetryPeriod?: boolean;
}

/** How long until the elector's next step after one that did not fail; `draw` is called only when a draw is used. */
export function nextStepDelay(s: Settings, st: State, at: Moment, draw: () => number): number {
  const l = st.lead;
  const pushLive = at.pushLive === true;
  let planned: number;
  if (l) {
    const onLiveSession = l.session !== undefined && at.session === l.session;
    // as rarely as its followers: a term ended while the functions are down is not taken by a follower's fallback before this read (sessionFallbackMs)
    const holderBackstopMs = SESSION_QUIET_LEASES * s.leaseDurationMs;
    planned = leaderDelay({ onLiveSession, pushLive, holderBackstopMs, retrying: l.retrying, triedAt: l.triedAt, contended: l.contended, everyRetryPeriod: s.everyRetryPeriod === true, retryPeriodMs: s.retryPeriodMs, cadenceMs: pacedCadenceMs(s, l.answerMs), renewedAt: l.renewedAt, now: at.now, random: (onLiveSession && pushLive) || (l.retrying && l.contended > 0) ? draw() : 0 });
    if (!at.clock.ok && !onLiveSession) planned = doubtingLeaderDelay(planned, l.renewedAt + s.renewDeadlineMs, at.now);
  } else planned = followerDelay(s, st, at, pushLive, draw(), at.clock.ok ? at.offset : undefined);
  const clockKnown = at.clock.ok;
  return stepDelay({ planned, clockKnown, random: clockKnown ? 0 : draw(), wakeAt: l ? undefined : st.wakeAt, now: at.now });
}

/** One thing an elector learnt: a follower's event, or one of these. */
export type Event =
  | FollowerEvent
  /** The renew deadline's timer of term `no` fired. */
  | { readonly kind: 'deadline'; readonly no: number }
  /** Someone asked whether it leads (isLeader): the renew deadline is judged now. */
  | { readonly kind: 'asked' }
  /** Its session was renewed by a write sent at `sentAt` (answered now); `ended`: the row's marks of terms ended. */
  | { readonly kind: 'sessionRenewed'; readonly name: string; readonly sentAt: number; readonly ended: Readonly<Record<string, number>> }
  /** Its session ended: the leader renews its term itself from now on. */
  | { readonly kind: 'sessionEnded'; readonly name: string }
  /** The measurement of DynamoDB's time jumped by `jumpMs`. */
  | { readonly kind: 'clockJump'; readonly jumpMs: number }
  /** The machine slept `ms` its monotonic clock did not count (a suspend: sleptSince, sleepToCount). */
  | { readonly kind: 'slept'; readonly ms: number }
  /**
   * The work of term `no` (token `token`) failed: onStartedLeading rejected or threw; `random` in [0, 1) jitters the backoff before the next term.
   * `fenced`: it failed with that term's own fenced write refused because the lease (or the fenced item) is in a later term (a
   * FencingError of `token`), or abandoned as the term was lost (a LeaseLostError of it): proof the term is over, not a failure of
   * the work. A refusal naming another token, or none (the worker was not leading), proves nothing of this term.
   * `itemFenced`: that refusal was an item's own fence's (fencedItemWrite: the item carries a higher token), not the lease's.
   */
  | { readonly kind: 'workFailed'; readonly no: number; readonly token: number; readonly cause: unknown; readonly random: number; readonly fenced?: boolean; readonly itemFenced?: boolean }
  /** run() was cancelled: step down. */
  | { readonly kind: 'cancel' }
  /**
   * Term `no`'s work was not started: its renew deadline had passed when the shell came to start it
   * (a freeze after this step decided to lead), or (`cancelled`) run()'s signal had aborted: a take
   * in flight at the SIGTERM that landed after it.
   */
  | { readonly kind: 'startedLate'; readonly no: number; readonly cancelled?: boolean }
  /** Stepped down (`led`: what its step-down led), its candidacy withdrawn: leave the lease (`held`: a session whose renewals are held for a write onto it in doubt). */
  | { readonly kind: 'leave'; readonly led: SteppedDown; readonly held: string | undefined }
  /** A stopping elector's consistent read of the lease ('unread': it failed, reported; `random` in [0, 1) jitters the pause after it, leavingPause). */
  | { readonly kind: 'leavingRead'; readonly read: LeaseRead | 'unread'; readonly random?: number }
  /** A stopping elector's write (leavingWrite) came out so (`random`: as leavingRead's). */
  | { readonly kind: 'leavingWritten'; readonly out: WriteOutcome; readonly random?: number }
  /** The term left to run out was named on its process's session rows, left at stamp `at` (SessionSeam.leave). */
  | { readonly kind: 'termLeft'; readonly at: number }
  /**
   * A request of this process answered after failures (lib/sdk/faults.ts recovered); `failures`: this elector's steps failed in a row
   * (it waits out their backoff); `triedAt`: when its last step went out (monotonic; none: a retry period ago or more); `random` in
   * [0, 1) jitters its wake (recoveryWake).
   */
  | { readonly kind: 'endpointRecovered'; readonly failures: number; readonly triedAt?: number | undefined; readonly random?: number }
  /**
   * A leader's read or write answered (`failed`: a fault, already reported; `contended`: a transaction held the row, isContended;
   * `refused`: refused for this worker's own reasons, its role denied or a row refused as invalid, not a 5xx, a throttle, a timeout or an answer lost); `rest`: what it does next.
   */
  | { readonly kind: 'answer'; readonly rest: readonly Next[]; readonly lease?: Lease | undefined; readonly row?: Candidate | undefined; readonly ok?: boolean; readonly failed?: boolean; readonly contended?: boolean; readonly refused?: boolean };

/**
 * What the shell carries out, in this order: a follower's effects (but `lead`), or these. At most
 * one read or write that has a `rest`, last: its answer is the next event (`answer`, with `rest`).
 */
export type Effect =
  | Exclude<FollowerEffect, { readonly kind: 'lead' }>
  /** Arm the renew deadline's timer of term `no` for monotonic `at`. */
  | { readonly kind: 'armDeadline'; readonly at: number; readonly no: number }
  /**
   * Start the leader's work (onStartedLeading) for term `no`, unless its renew `deadline` (monotonic)
   * has passed when the shell comes to it (the process frozen since this step), or run()'s signal
   * has aborted: then `startedLate`.
   */
  | { readonly kind: 'started'; readonly term: Term; readonly no: number; readonly deadline: number; readonly rest: readonly Next[] }
  /** Stop acting (onStoppedLeading with `reason`, the work's signal aborted, the deadline's timer cancelled). */
  | { readonly kind: 'stop'; readonly reason: StopReason; readonly token: number }
  /** End `term` on a row rewritten under it, in the background. */
  | { readonly kind: 'endTerm'; readonly term: Term }
  /** Renew `term` (onto `session`, or off one: null), abandoned unanswered after `withinMs`. A fault is reported, and answered `failed`. */
  | { readonly kind: 'renew'; readonly term: Term; readonly session: string | null | undefined; readonly withinMs: number; readonly rest: readonly Next[] }
  /** Read the lease (a fault is thrown, or with `reportFault`, reported and answered `failed`), abandoned unanswered after `withinMs` if given. */
  | { readonly kind: 'look'; readonly consistent: boolean; readonly reportFault: boolean; readonly rest: readonly Next[]; readonly withinMs?: number }
  /** Read the heir's candidate row: right before the hand-over, and while a cancelled leader leads on for it. A fault is reported, and answered `failed`. */
  | { readonly kind: 'readHeir'; readonly name: string; readonly rest: readonly Next[] }
  /** Hand `term` to `heir` in one write (answered `ok`); a wake for `revision` goes out beside it. */
  | { readonly kind: 'handOver'; readonly term: Term; readonly heir: Heir; readonly leaseTransitions: number; readonly second: SecondSuccessor; readonly revision: number; readonly rest: readonly Next[] }
  /** Release `term` (a fault is reported: the term runs out). */
  | { readonly kind: 'releaseTerm'; readonly term: Term; readonly rest: readonly Next[] }
  /**
   * Its second failed start in a row (stopTerm): the candidacy marks its row as standing down (on a
   * session only: LeaseCandidate standDown), before the hand-over or release that follows, so the
   * coordinator elects it not meanwhile; abandoned unanswered after `withinMs`, a fault reported.
   */
  | { readonly kind: 'standDown'; readonly withinMs: number }
  /** Renew the candidacy (an acknowledgement, or alive after yielding), abandoned unanswered after `withinMs` if given. A fault is reported, and answered `failed`: `rest` goes on, the election not acknowledged. */
  | { readonly kind: 'renewCandidacy'; readonly rest: readonly Next[]; readonly withinMs?: number }
  /**
   * Lead on `ms` before handing over (a cancelled leader): a wait of the stop's own, not counted in
   * its wait on DynamoDB. `counted`: a stopping elector's pause after a fault (leavingPause), counted.
   */
  | { readonly kind: 'sleep'; readonly ms: number; readonly rest: readonly Next[]; readonly counted?: boolean }
  /**
   * Tell onError the leader's work failed, and what became of the term. `itemFence`: it stopped on a
   * fencedItemWrite refused by the item's own fence (`cause`) while the lease, as last read, was still
   * in the term (which ended, deposed: `outcome` 'ended'): the item carries a token higher than the
   * term's that no read of this lease shows (another lease's, an operator's), told as that.
   */
  | { readonly kind: 'workFailure'; readonly token: number; readonly outcome: 'givenUp' | 'kept' | 'ended'; readonly cause: unknown; readonly itemFence?: true }
  /** Stepped down: the term led (handed over or not: released as it leaves, after its candidacy is withdrawn), or none. */
  | { readonly kind: 'steppedDown'; readonly led: SteppedDown }
  /** Read the lease, strongly consistent, to decide the leaving from (a fault is reported, and answered 'unread'). */
  | { readonly kind: 'readToLeave' }
  /** Leave the lease with `write`: answered with how it came out (`leavingWritten`). */
  | { readonly kind: 'leavingWrite'; readonly write: LeavingWrite }
  /** Name `term` as left to run out on the process's session rows (SessionSeam.leave): answered `termLeft`. */
  | { readonly kind: 'leaveTerm'; readonly term: { readonly token: number; readonly instance: string } }
  /** The write onto its session in doubt is settled: the session's renewals go on. */
  | { readonly kind: 'settleDoubt' };

/** What a step-down led: the term it led as it stepped down, and whether it was handed over; undefined: it led none. */
export type SteppedDown = { readonly term: Term; readonly handed: boolean } | undefined;

/** What a leader does once a read or write answers (the head of `rest`), then the rest. */
export type Next =
  /** A renewal of term `no` sent at `sentAt` answered. */
  | { readonly k: 'renewed'; readonly no: number; readonly sentAt: number }
  /** A read of its lease answered; `recheck`: an eventually consistent copy older than `rev` (or none) is read again. */
  | { readonly k: 'read'; readonly no: number; readonly rev: number; readonly recheck: boolean }
  /** A cancelled leader's read of its lease answered: a successor may have been named since the last renewal. */
  | { readonly k: 'refreshed'; readonly no: number }
  /** Yield to a preferred holder, or answer an open election, as `lease` says. */
  | { readonly k: 'after'; readonly lease: Lease }
  /** The leader's step, if it still leads (a handed term's confirmation). */
  | { readonly k: 'step' }
  /** A read sent instead of a renewal of term `no` while the clock was in doubt answered: renew now if its Date header settled the doubt. */
  | { readonly k: 'resampled'; readonly no: number }
  /** The follower learns whether it leads the term won. */
  | { readonly k: 'led'; readonly ok: boolean }
  /** The heir's candidate row answered: hand over if it is that process's and the clock permits. */
  | { readonly k: 'heirRow'; readonly term: Term; readonly heir: HeirOf; readonly leaseTransitions: number; readonly second: SecondSuccessor; readonly revision: number }
  /** Released unless handed over. */
  | { readonly k: 'releaseUnlessHanded'; readonly term: Term }
  | { readonly k: 'stepNow' }
  /** Renew the candidacy, if any: still alive after yielding. */
  | { readonly k: 'rejoin' }
  | { readonly k: 'acked'; readonly election: string }
  /**
   * A cancelled leader, refreshed (or not, while wakes reach it: `again`): leads on until the heir
   * reads, then hands over; meanwhile it looks whether the heir still stands every `checkMs`
   * (HEIR_CHECK_FIRST_MS, doubling), and an heir found `gone` is handed nothing.
   */
  | { readonly k: 'leadOn'; readonly again: boolean; readonly checkMs?: number; readonly gone?: string; readonly until?: number }
  /** A cancelled leader leading on for `heir`: its candidate row read (heirStands). */
  | { readonly k: 'checkHeir'; readonly no: number; readonly heir: HeirOf; readonly again: boolean; readonly checkMs: number; readonly until: number }
  /** That row answered: still the heir's, it leads on; gone, it reads the lease for the heir named now, or releases. */
  | { readonly k: 'heirStands'; readonly no: number; readonly heir: HeirOf; readonly again: boolean; readonly checkMs: number; readonly until: number }
  | { readonly k: 'handOffNow'; readonly heir: HeirOf | undefined; readonly again: boolean }
  /** Stepped down, handed or not; `again`: a hand-over sent without the refresh and not given reads the lease and tries once more. */
  | { readonly k: 'down'; readonly term: Term; readonly again: boolean }
  /** The lease read after such a refusal: handed to the heir it names now, if still in `term`. */
  | { readonly k: 'handAgain'; readonly term: Term }
  /** A stopping elector's pause after a fault over (leavingPause): it reads the lease and decides its leaving again. */
  | { readonly k: 'leaveAgain' };

type Step = { readonly state: State; readonly effects: Effect[] };
const STEP_NOW: Effect = { kind: 'stepNow' };

/**
 * When a follower napping out an error backoff (up to RETRY_CAP_PERIODS retry periods) tries again
 * as a request of its process answers after failures (endpointRecovered): at once, or a retry period
 * after its own last try (`triedAt`) if that is later, jittered up to RETRY_JITTER of a retry period
 * (`random` in [0, 1)). So a recovery cuts a long backoff short, yet never makes a lease's follower
 * try more than once a retry period: under partial throttling (some requests pass) every answer is a
 * recovery, and a wake at once on each set the followers that had just failed trying again at a
 * round trip's pace, each wave's few answers waking the next (a review, 2026-12-08, sixteenth).
 */
export function recoveryWake(retryPeriodMs: number, triedAt: number | undefined, now: number, random: number): number {
  return Math.max(now, (triedAt ?? -Infinity) + retryPeriodMs) + retryPeriodMs * RETRY_JITTER * random;
}

/**
 * The elector's step: its record after `e`, decided at `at`, and what the shell carries out. A
 * follower's events go to followerStep; a term it wins is led here, in the leader's order.
 */
export function decide(s: Settings, state: State, e: Event, at: Moment): Step {
  const fx: Effect[] = [];
  const lead = state.lead;
  switch (e.kind) {
    case 'poll':
      if (lead) return leaderStepNow(s, { ...state, wakePending: false }, lead, state.wakePending, at, fx);
      break;
    case 'answer':
      return go(s, state, e.rest, e, at, fx);
    case 'deadline':
    case 'asked':
    case 'sessionRenewed':
    case 'sessionEnded':
      // (the deadline's timer of an earlier term changes nothing)
      if (!lead || (e.kind === 'deadline' && lead.no !== e.no)) return { state, effects: fx };
      return { state: apply(s, state, lead, e.kind === 'sessionEnded' ? e : { ...e, now: at.now }, at, fx), effects: fx };
    case 'endpointRecovered': {
      // DynamoDB answers again: a follower napping out an error backoff reads soon (nothing else moves)
      if (lead || e.failures === 0) return { state, effects: fx };
      const wakeAt = recoveryWake(s.retryPeriodMs, e.triedAt, at.now, e.random ?? 0);
      return { state, effects: [wakeAt <= at.now ? STEP_NOW : { kind: 'stepNow', at: wakeAt }] };
    }
    case 'clockJump': {
      // its deadline (monotonic) and its last stamp can no longer be vouched for: it stops at once
      if (!lead) return { state, effects: fx };
      const p = prevented(stopTerm(s, state, lead, 'renewDeadline', at.now, fx, true), at.now, e.jumpMs);
      if (p.report) fx.push({ kind: 'clockSkew', doubt: p.report });
      return { state: p.state, effects: fx };
    }
    case 'slept': {
      // its monotonic clock, and the renew deadline's timer on it, stood still: the deadline counts the sleep
      if (!lead) return { state, effects: fx };
      const counted: Lead = { ...lead, renewedAt: lead.renewedAt - e.ms, slept: { ms: (lead.slept?.ms ?? 0) + e.ms, at: at.now } };
      const st = apply(s, { ...state, lead: counted }, counted, { kind: 'asked', now: at.now }, at, fx);
      if (st.lead) fx.push({ kind: 'armDeadline', at: counted.renewedAt + s.renewDeadlineMs, no: lead.no });
      return { state: st, effects: fx };
    }
    case 'startedLate': {
      // the process froze between this step's decision to lead and the shell's start, past the renew
      // deadline: a newer term may have begun meanwhile; or run() was cancelled while its take was in
      // flight. Given back as a term won too late is (follow), never led: its work never starts (no
      // onStartedLeading, so no onStoppedLeading)
      if (lead?.no !== e.no) return { state, effects: fx };
      const lateMs = at.now - (lead.renewedAt + s.renewDeadlineMs);
      if (lateMs >= s.retryPeriodMs && e.cancelled !== true) fx.push({ kind: 'stalled', lateMs: Math.round(lateMs) });
      fx.push({ kind: 'releaseTerm', term: lead.term, rest: [{ k: 'led', ok: false }] });
      return { state: { ...state, lead: undefined, leaseReadAt: undefined, ledOn: lead.session, standAgain: lead.term.fencingToken }, effects: fx };
    }
    case 'workFailed': {
      const current = lead?.no === e.no;
      // the work stopped on a fenced write of its own term that DynamoDB refused (README's worker rethrows
      // the FencingError): the lease is in a later term, so this one is over, as the next read would find
      // (deposed): nothing failed, so nothing is told, no backoff (but for an item's own fence, below), and
      // nothing to hand over or release
      if (e.fenced === true) {
        if (!current) return { state, effects: fx };
        // Refused by the item's own fence while the lease, as last read, was still in this term: the
        // item carries a higher token no read of this lease shows (another lease's, an operator's; or a
        // later term's of this lease not read yet). The term ends all the same (the safe reading), but
        // told, once per term, and counted as a failed start (its backoff, as workFailed's): else each
        // new term's work meets the same item, and the lease is taken again and again, each retake silent
        const byItem = e.itemFenced === true && lead.lease?.fencingToken === lead.term.fencingToken && lead.lease.holderIdentity === lead.term.holderIdentity;
        let before = state;
        if (byItem) {
          fx.push({ kind: 'workFailure', token: e.token, outcome: 'ended', cause: e.cause, itemFence: true });
          const failures = failedStarts(s, state, lead, 'workFailed', at.now);
          before = { ...state, heldOff: { until: at.now + retryDelayMs(failures, s.retryPeriodMs, e.random), failures } };
        }
        const st = stopTerm(s, before, lead, 'deposed', at.now, fx);
        fx.push(STEP_NOW); // read the lease now: who leads, as its followers see it
        return { state: st, effects: fx };
      }
      // a leader whose work died does not keep the lease doing nothing (unless the options say keep)
      const keep = s.onWorkFailure === 'keep';
      fx.push({ kind: 'workFailure', token: e.token, outcome: !current ? 'ended' : keep ? 'kept' : 'givenUp', cause: e.cause });
      if (!current || keep) return { state, effects: fx };
      // no hot loop of terms taken and given up: the next waits a backoff, longer while the work fails soon after each start
      // (the count itself is stopTerm's)
      const failures = failedStarts(s, state, lead, 'workFailed', at.now);
      const held = { ...state, heldOff: { until: at.now + retryDelayMs(failures, s.retryPeriodMs, e.random), failures: state.heldOff?.failures ?? 0 } };
      return giveUp(s, held, lead, 'workFailed', [], at, fx);
    }
    case 'leave':
    case 'leavingRead':
    case 'leavingWritten':
    case 'termLeft':
      return leave(s, state, e, at);
    case 'cancel': {
      // the lease is read first, unless wakes reach this leader and its view names an heir (`again`)
      const again = at.pushLive === true && lead !== undefined && heirOf(s, lead.lease) !== undefined;
      const rest: Next[] = [{ k: 'leadOn', again }];
      if (lead && s.releaseOnCancel && s.mode === 'coordinated' && !again) return look(state, true, true, [{ k: 'refreshed', no: lead.no }, ...rest], fx, inTermMs(s, lead, at.now));
      return go(s, state, rest, {}, at, fx);
    }
  }
  return follow(s, state, e, at, fx);
}

/** A follower's event: followerStep; a term it won is led (start). */
function follow(s: Settings, state: State, e: FollowerEvent, at: Moment, fx: Effect[]): Step {
  const out = followerStep(s, state, e, at);
  const st = out.state as State;
  const last = out.effects.at(-1);
  if (last?.kind !== 'lead') return { state: st, effects: [...fx, ...(out.effects as Effect[])] };
  fx.push(...(out.effects.slice(0, -1) as Effect[]));
  // counted from its write's send, less what the row it answered (or read, handed: leadFromRead
  // anchored it so) shortens: never led past the moment observers count that row out
  const renewedAt = last.handed ? last.sentAt : last.sentAt - shortTermMs(s, last.lease);
  // never a term whose renew deadline has passed (a frozen process, a late answer): given back, never led
  if (at.now >= renewedAt + s.renewDeadlineMs) return { state: st, effects: [...fx, { kind: 'releaseTerm', term: last.term, rest: [{ k: 'led', ok: false }] }] };
  const no = st.terms + 1;
  // recorded as led now, not at the end of the chain below (which a fault may cut short): a term led is never confirmed again
  const led = { ...note(s, st, { kind: 'leading' }, at, fx), ledToken: Math.max(st.ledToken, last.term.fencingToken), standsDown: false };
  const lead: Lead = { term: last.term, renewedAt, renewals: 0, retrying: false, triedAt: last.sentAt, contended: 0, lease: last.lease, session: last.lease.session, since: last.sentAt, answerMs: at.now - last.sentAt, no };
  // a confirmed term acts on its renewal's row; a handed one is confirmed now by the leader's first renewal
  const rest: Next[] = [...(last.confirmed ? [{ k: 'after', lease: last.lease } as const] : []), ...(last.handed ? [{ k: 'step' } as const] : []), { k: 'led', ok: true }];
  fx.push({ kind: 'armDeadline', at: renewedAt + s.renewDeadlineMs, no }, { kind: 'started', term: last.term, no, deadline: renewedAt + s.renewDeadlineMs, rest });
  return { state: { ...led, lead, terms: no }, effects: fx };
}

/** A follower's event that asks for no read or write (the leader's own reads and writes): its record after it. */
function note(s: Settings, st: State, e: FollowerEvent, at: Moment, fx: Effect[]): State {
  const out = followerStep(s, st, e, at);
  fx.push(...(out.effects as Effect[]));
  return out.state as State;
}

/**
 * Whether `lead` stopping for `reason` now failed at its start: its work failed within a lease
 * duration of its start, or its renew deadline passed before any renewal of it landed and one was
 * refused for this worker's own reasons (`refused`: a write its role may not make, say). Not a term
 * whose renewals DynamoDB or the network failed (a 5xx, a throttle, a timeout, an answer lost: an
 * outage that comes and goes costs every candidate such terms, and none did anything wrong) or that
 * were never answered (a paused process), nor one that slept or saw its clock jump (`jumped`).
 * A term on a session is renewed by the Session's writes, whose refusals never reach it: a Session
 * denied its renewals ends at its own renew deadline, which its options put a retry period before
 * the term's (elector-options.ts), and the term renews itself from then ('sessionEnded'), so a
 * refusal of those renewals counts. A Session denied its first write (the same write to the same
 * row) starts none: its electors renew their own. Either way, a term whose own renewals land is led.
 */
const failedAtStart = (s: Settings, lead: Lead, reason: StopReason, now: number, jumped: boolean): boolean =>
  reason === 'workFailed' ? now - lead.since < s.leaseDurationMs : reason === 'renewDeadline' && lead.renewals === 0 && lead.refused === true && !jumped && lead.slept === undefined;

/**
 * Terms of this start-up that failed in a row at their start (failedAtStart), counting the one
 * `lead` stops for `reason` now. Work that failed later counts 1; any other end of a term that
 * lasted a lease duration ends the run (0).
 */
function failedStarts(s: Settings, st: State, lead: Lead, reason: StopReason, now: number, jumped = false): number {
  const before = st.heldOff?.failures ?? 0;
  if (failedAtStart(s, lead, reason, now, jumped)) return before + 1;
  if (reason === 'workFailed') return 1;
  return now - lead.since >= s.leaseDurationMs ? 0 : before;
}

/** Stops `lead`; `jumped`: for a clock jump. */
function stopTerm(s: Settings, st: State, lead: Lead, reason: StopReason, now: number, fx: Effect[], jumped = false): State {
  fx.push({ kind: 'stop', reason, token: lead.term.fencingToken });
  const failures = failedStarts(s, st, lead, reason, now, jumped);
  // lost while it lives on (not cancelled, not handing over): it stands again once the lease is in a later term,
  // its work failed included (its term taken only after its backoff). Not a second failed start in a row: it
  // stands down until its candidacy's own renewal (standsDown), as a crash-looping process would, so a best
  // candidate that cannot hold a term does not take the lease from a healthy one in a loop; a stand-again
  // left from the first (its term taken back since) would renew the row at the next term's read, and the
  // coordinator would preempt for it at once
  const secondFailure = failures >= 2 && failedAtStart(s, lead, reason, now, jumped);
  const lost = (reason === 'renewDeadline' || reason === 'deposed' || reason === 'workFailed') && !secondFailure;
  const heldOff = failures === (st.heldOff?.failures ?? 0) ? st.heldOff : { until: st.heldOff?.until ?? now, failures };
  const stands = lost ? { standAgain: lead.term.fencingToken } : secondFailure ? { standAgain: undefined, standsDown: s.candidate } : {};
  // (on a session, whose renewals show it alive, its row is marked so, before any hand-over or release)
  // waited for a retry period at most: the hand-over after it waits on it, the lease leaderless meanwhile (a mark
  // abandoned leaves it to be elected back, as before the mark: its next stand-down marks again)
  if (secondFailure && s.candidate) fx.push({ kind: 'standDown', withinMs: Math.min(inTermMs(s, lead, now), s.retryPeriodMs) });
  // its follower's view of the row is from before it led: the next poll reads the row, never the session alone
  return { ...st, heldOff, lead: undefined, leaseReadAt: undefined, ledOn: lead.session, ...stands };
}

/** Carries out the leader's decision on `o` (decideLeader): stops the term (ending it on the row, looking at once), extends it, or records the row it saw. */
function apply(s: Settings, st: State, lead: Lead, o: LeaderObservation, at: Moment, fx: Effect[]): State {
  // a renewal sent before a sleep was counted may have been sent before the sleep: counted from before it
  const early = (o.kind === 'renewed' || o.kind === 'sessionRenewed') && lead.slept && o.sentAt < lead.slept.at;
  const d = s.decideLeader(s, { ...lead.term, instance: s.instance, renewedAt: lead.renewedAt, session: lead.session, shortMs: shortTermMs(s, lead.lease) }, early ? { ...o, sentAt: o.sentAt - lead.slept!.ms } : o);
  switch (d.kind) {
    case 'stop': {
      // judged more than a retry period past its deadline: its timers, which check at least that often, were held (a stalled process)
      const lateMs = at.now - (lead.renewedAt + s.renewDeadlineMs);
      if (d.reason === 'renewDeadline' && lateMs >= s.retryPeriodMs) fx.push({ kind: 'stalled', lateMs: Math.round(lateMs) });
      let next = stopTerm(s, st, lead, d.reason, at.now, fx);
      if (d.endTerm) {
        // the follower never confirms this term again, its end in flight or not (termToConfirm)
        next = note(s, next, { kind: 'ending', token: lead.term.fencingToken }, at, fx);
        fx.push({ kind: 'endTerm', term: lead.term });
      }
      if (d.look) fx.push(STEP_NOW); // read the lease now: a successor may be named, an election open
      return next;
    }
    case 'look':
      fx.push(STEP_NOW);
      return st;
    case 'renewed':
      fx.push({ kind: 'armDeadline', at: d.renewedAt + s.renewDeadlineMs, no: lead.no });
      return { ...st, lead: { ...lead, renewedAt: d.renewedAt, renewals: lead.renewals + 1, retrying: false, contended: 0, answerMs: o.kind === 'renewed' || o.kind === 'sessionRenewed' ? paceMs(at.now - o.sentAt, lead.answerMs) : lead.answerMs, ...(d.lease ? { lease: d.lease, session: d.lease.session } : {}) } };
    case 'seen':
      return { ...st, lead: { ...lead, lease: d.lease } };
    case 'none':
      return st;
  }
}

const look = (state: State, consistent: boolean, reportFault: boolean, rest: readonly Next[], fx: Effect[], withinMs?: number): Step => ({ state, effects: [...fx, { kind: 'look', consistent, reportFault, rest, ...(withinMs === undefined ? {} : { withinMs }) }] });

/** How long a leader in its term waits for the answer to a request its loop waits on (renewalBoundMs): a renewal still fits after it is abandoned. */
const inTermMs = (s: Settings, lead: Lead, now: number): number => renewalBoundMs(lead.renewedAt + s.renewDeadlineMs - now, lead.answerMs);
const steppedDown = (state: State, led: SteppedDown, fx: Effect[]): Step => ({ state, effects: [...fx, { kind: 'steppedDown', led }] });

/** Whether the leader's renewal is due (or its last try failed) within `ms` of `now`. */
const renewalDueWithin = (s: Settings, lead: Lead, now: number, ms: number): boolean => lead.retrying || now + ms >= lead.renewedAt + pacedCadenceMs(s, lead.answerMs);

/** The leader's step: renews its term, or reads the lease (woken, on its live session, or the clock in doubt). */
function leaderStepNow(s: Settings, state: State, lead: Lead, woken: boolean, at: Moment, fx: Effect[], rest: readonly Next[] = []): Step {
  // client-go: past its renew deadline it stops, never renews. A loop stalled past it (a busy machine) may see
  // its renewal's turn before the deadline's timer: the deadline is judged here too
  if (at.now >= lead.renewedAt + s.renewDeadlineMs) {
    const st = apply(s, state, lead, { kind: 'step', now: at.now }, at, fx);
    if (!st.lead) return go(s, st, rest, {}, at, fx);
  }
  const withinMs = inTermMs(s, lead, at.now);
  const onSession = lead.session !== undefined && at.session === lead.session;
  // woken, it reads the lease (the wake may be the coordinator's word on this term), unless it renews
  // its term itself and the renewal falls due before that read and one more request are answered (a
  // slow DynamoDB): it renews now, whose answer shows the row as the read's would
  if (woken && (onSession || !renewalDueWithin(s, lead, at.now, 2 * (lead.answerMs ?? 0)))) return look(state, true, false, [{ k: 'read', no: lead.no, rev: lead.lease?.revision ?? 0, recheck: false }, ...rest], fx, withinMs);
  if (onSession) return look(state, false, false, [{ k: 'read', no: lead.no, rev: lead.lease?.revision ?? 0, recheck: true }, ...rest], fx, withinMs);
  const j = vouch(s, { ...state, lead: { ...lead, retrying: true, triedAt: at.now } }, at, fx); // retrying until this renewal succeeds
  // read instead (its Date header is a sample): renewed as soon as that settles the doubt, not a retry period on (a woken leader's term may not last that long)
  if (!j.trusted) return look(j.state, true, false, [{ k: 'resampled', no: lead.no }, ...rest], fx, withinMs);
  // onto the live session, or off one that ended
  const session = at.session === null && lead.session === undefined ? undefined : at.session;
  return { state: j.state, effects: [...fx, { kind: 'renew', term: lead.term, session, withinMs, rest: [{ k: 'renewed', no: lead.no, sentAt: at.now }, ...rest] }] };
}

/** Yields to a preferred holder, or answers an open election (afterRenewal); then `rest`. */
function after(s: Settings, st: State, lease: Lease, rest: readonly Next[], at: Moment, fx: Effect[]): Step {
  const lead = st.lead;
  if (!lead) return go(s, st, rest, {}, at, fx);
  const next = afterRenewal(s, lease, { candidate: s.candidate, ackedElection: st.ackedElection });
  // the preferred candidate is the successor (named at once): it reads right after this renewal, so the term is handed to it now
  if (next.kind === 'yield') return giveUp(s, st, lead, 'preempted', [{ k: 'rejoin' }, ...rest], at, fx);
  if (next.kind === 'ack') return { state: st, effects: [...fx, { kind: 'renewCandidacy', rest: [{ k: 'acked', election: next.election }, ...rest], withinMs: inTermMs(s, lead, at.now) }] };
  return go(s, st, rest, {}, at, fx);
}

/** Stops the term and gives it to the successor: handed over when the coordinator named one, else released; then the elector steps at once. */
function giveUp(s: Settings, state: State, lead: Lead, reason: 'preempted' | 'workFailed', rest: readonly Next[], at: Moment, fx: Effect[]): Step {
  const heir = heirOf(s, lead.lease);
  // the follower never confirms this term again while its hand-over or release is in flight
  const st = note(s, stopTerm(s, state, lead, reason, at.now, fx), { kind: 'ending', token: lead.term.fencingToken }, at, fx);
  if (!heir) return { state: st, effects: [...fx, { kind: 'releaseTerm', term: lead.term, rest: [{ k: 'stepNow' }, ...rest] }] };
  return handOff(st, lead, heir, [{ k: 'releaseUnlessHanded', term: lead.term }, { k: 'stepNow' }, ...rest], fx);
}

/** Hands the term to `heir`: its candidate row read now (never earlier), then the write; `rest` is told whether it was handed. */
function handOff(st: State, lead: Pick<Lead, 'term' | 'lease'>, heir: HeirOf, rest: readonly Next[], fx: Effect[]): Step {
  const l = lead.lease!;
  const row: Next = { k: 'heirRow', term: lead.term, heir, leaseTransitions: l.leaseTransitions, second: { name: l.secondSuccessor, instance: l.secondSuccessorInstance }, revision: l.revision + 1 };
  return { state: st, effects: [...fx, { kind: 'readHeir', name: heir.name, rest: [row, ...rest] }] };
}

/** The leader's chain from an answer `a`: each of `rest` in order, until one waits on a read or write. */
function go(s: Settings, state: State, rest: readonly Next[], a: Omit<Extract<Event, { kind: 'answer' }>, 'kind' | 'rest'>, at: Moment, fx: Effect[]): Step {
  let st = state;
  let ok = a.ok === true;
  for (let i = 0; i < rest.length; i++) {
    const n = rest[i]!;
    const tail = rest.slice(i + 1);
    const lead = st.lead?.no !== undefined && 'no' in n && n.no === st.lead.no ? st.lead : undefined;
    switch (n.k) {
      case 'renewed': {
        // a fault: kept trying until the renew deadline (its timer stops the term there); an answer after the term stopped changes nothing
        if (a.failed && lead) st = { ...st, lead: { ...lead, contended: a.contended ? lead.contended + 1 : 0, ...(a.refused ? { refused: true } : {}) } };
        if (a.failed || !lead) break;
        st = apply(s, st, lead, { kind: 'renewed', sentAt: n.sentAt, lease: a.lease }, at, fx);
        const l = a.lease;
        if (!st.lead || !l) break;
        st = note(s, st, { kind: 'observed', read: { key: { name: s.leaseName }, item: l, revision: l.revision } }, at, fx);
        return after(s, st, l, tail, at, fx);
      }
      case 'read': {
        // an eventually consistent copy older than what this term last wrote or saw proves nothing
        if (n.recheck && (a.lease === undefined || a.lease.revision < n.rev)) return look(st, true, false, [{ ...n, recheck: false }, ...tail], fx, st.lead && inTermMs(s, st.lead, at.now));
        if (!lead) break;
        st = note(s, st, { kind: 'claimIn', lease: a.lease }, at, fx);
        st = apply(s, st, lead, { kind: 'read', lease: a.lease }, at, fx);
        if (st.lead && a.lease) return after(s, st, a.lease, tail, at, fx);
        break;
      }
      case 'refreshed': {
        const l = a.lease;
        if (!a.failed && l && lead && l.holderIdentity === lead.term.holderIdentity && l.fencingToken === lead.term.fencingToken) st = { ...st, lead: { ...lead, lease: l } };
        break;
      }
      case 'after':
        return after(s, st, n.lease, tail, at, fx);
      case 'step':
        if (st.lead) return leaderStepNow(s, st, st.lead, false, at, fx, tail);
        break;
      case 'resampled':
        // trusted now, the step renews (it reads again only while the doubt lasts: at the clock's resample pace, stepDelay)
        if (lead && at.clock.ok) return leaderStepNow(s, st, lead, false, at, fx, tail);
        break;
      case 'led':
        return follow(s, st, { kind: 'led', ok: n.ok, leading: st.lead !== undefined }, at, fx);
      case 'heirRow': {
        const row = a.failed ? undefined : a.row;
        if (row?.identity !== n.heir.instance) {
          ok = false;
          break;
        }
        const j = vouch(s, st, at, fx);
        st = j.state;
        if (!j.trusted) {
          ok = false;
          break;
        }
        return { state: st, effects: [...fx, { kind: 'handOver', term: n.term, heir: { ...n.heir, platform: row.platform, address: row.address }, leaseTransitions: n.leaseTransitions, second: n.second, revision: n.revision, rest: tail }] };
      }
      case 'releaseUnlessHanded':
        if (!ok) return { state: st, effects: [...fx, { kind: 'releaseTerm', term: n.term, rest: tail }] };
        break;
      case 'stepNow':
        fx.push(STEP_NOW);
        break;
      case 'rejoin':
        // still a candidate, and alive: else the coordinator passes over the holder it just replaced as departed
        if (s.candidate) return { state: st, effects: [...fx, { kind: 'renewCandidacy', rest: tail }] };
        break;
      case 'acked':
        // not answered (a fault): the next renewal acknowledges it again
        if (!a.failed) st = { ...st, ackedElection: n.election };
        break;
      case 'leadOn': {
        // a cancelled leader with an heir leads on until its next renewal would be due: the heir reads just after it
        const l = st.lead;
        const named = l && s.releaseOnCancel ? heirOf(s, l.lease) : undefined;
        // an heir whose candidacy is gone (stopping too: a whole fleet SIGTERMed) is handed nothing: released now
        const heir = named?.instance === n.gone ? undefined : named;
        const due = heir && l ? handOffDelay({ promptly: s.promptly, pushLive: at.pushLive === true, retrying: l.retrying, renewals: l.renewals, since: l.since, renewedAt: l.renewedAt, cadenceMs: s.cadenceMs, leaseDurationMs: s.leaseDurationMs, now: at.now }) : 0;
        // the hand-over's moment is decided once, at the cancel: renewals landing while it leads on (a session's, every few
        // seconds) move renewedAt, and a delay recomputed after each look would never run out
        const wait = n.until === undefined ? due : Math.min(due, n.until - at.now);
        const until = n.until ?? at.now + wait;
        const then: Next = { k: 'handOffNow', heir, again: n.again };
        // looks whether the heir still stands while it waits, soon and then less often: a few reads, however long the wait
        const checkMs = n.checkMs ?? HEIR_CHECK_FIRST_MS;
        if (heir && l && wait > checkMs) return { state: st, effects: [...fx, { kind: 'sleep', ms: checkMs, rest: [{ k: 'checkHeir', no: l.no, heir, again: n.again, checkMs, until }, ...tail] }] };
        if (wait > 0) return { state: st, effects: [...fx, { kind: 'sleep', ms: wait, rest: [then, ...tail] }] };
        return go(s, st, [then, ...tail], {}, at, fx);
      }
      case 'checkHeir':
        // (the term stopped meanwhile, at its renew deadline: stepped down as handOffNow says)
        if (!lead) return go(s, st, [{ k: 'handOffNow', heir: n.heir, again: n.again }, ...tail], {}, at, fx);
        return { state: st, effects: [...fx, { kind: 'readHeir', name: n.heir.name, rest: [{ k: 'heirStands', no: n.no, heir: n.heir, again: n.again, checkMs: n.checkMs, until: n.until }, ...tail] }] };
      case 'heirStands': {
        const next = Math.min(2 * n.checkMs, s.retryPeriodMs);
        // the row still this heir's (or not known: a fault, reported): leads on as planned
        if (a.failed || a.row?.identity === n.heir.instance) return go(s, st, [{ k: 'leadOn', again: n.again, checkMs: next, until: n.until }, ...tail], {}, at, fx);
        // gone: the lease as it is now (its decline, or the coordinator's, may name the next heir), this one handed nothing
        const leadOn: Next = { k: 'leadOn', again: n.again, checkMs: next, gone: n.heir.instance, until: n.until };
        if (!lead) return go(s, st, [leadOn, ...tail], {}, at, fx);
        return look(st, true, true, [{ k: 'refreshed', no: lead.no }, leadOn, ...tail], fx, inTermMs(s, lead, at.now));
      }
      case 'handOffNow': {
        const l = st.lead;
        if (!l) return steppedDown(st, undefined, fx);
        st = stopTerm(s, st, l, 'cancelled', at.now, fx);
        if (!n.heir) return steppedDown(st, { term: l.term, handed: false }, fx);
        return handOff(st, l, n.heir, [{ k: 'down', term: l.term, again: n.again }, ...tail], fx);
      }
      case 'down':
        if (!ok && n.again) return look(st, true, true, [{ k: 'handAgain', term: n.term }, ...tail], fx);
        return steppedDown(st, { term: n.term, handed: ok }, fx);
      case 'handAgain': {
        // the lease as it is now: still in this (stopped) term and naming an heir, one more try
        const l = a.failed ? undefined : a.lease;
        const heir = l && l.holderIdentity === n.term.holderIdentity && l.fencingToken === n.term.fencingToken ? heirOf(s, l) : undefined;
        if (heir) return handOff(st, { term: n.term, lease: l }, heir, [{ k: 'down', term: n.term, again: false }, ...tail], fx);
        return steppedDown(st, { term: n.term, handed: false }, fx);
      }
      case 'leaveAgain':
        return { state: st, effects: [...fx, READ_TO_LEAVE] };
    }
  }
  return { state: st, effects: fx };
}

// ---- stopping: the leaving of the lease, after the step-down ----

/** A write a stopping elector leaves the lease with (the shell's leavingWrite): a release of its term, a decline of its name (the row at the revision read), a kept term's move off its session. */
export type LeavingWrite =
  | { readonly kind: 'release'; readonly term: Term }
  | { readonly kind: 'decline'; readonly read: LeaseRead; readonly role: 'successor' | 'second' }
  | { readonly kind: 'offSession'; readonly term: Term; readonly stamp: number; readonly seconds: number };

/**
 * A stopping elector's leaving, in order, each part decided from consistent reads of the lease, up
 * to LEAVING_READS a part (afterLeaving): `lease`, the term it led released (its first move, from
 * the step-down: unread) or what the row names it for given up (departure), then the term it keeps
 * or did not release named as left on its process's session rows (leftTerm); `doubt`, a write onto
 * its session in doubt settled (leavingDoubt) before the session's hold goes; `kept`, a term it led
 * and keeps on its live session taken off it (leavingKept). Then it is `gone`: nothing more to write.
 */
export interface Leaving {
  readonly part: 'lease' | 'doubt' | 'kept' | 'gone';
  /** Consistent reads decided from in this part so far. */
  readonly reads: number;
  /** The session whose renewals are held for a write onto it in doubt. */
  readonly held: string | undefined;
  /** The token of the term its step-down led, released first: left to run out unless the release lands. */
  readonly releasing?: number;
  /** The stamp the term left to run out was left at (SessionSeam.leave): a take-off is stamped no later. */
  readonly leftAt?: number;
  /** The last doubt read showed its kept term there, named as left: the hold is not needed. */
  readonly left?: boolean;
  /** Faults the `lease` part met, where it tries them again (retriesFaults): each a write that failed or went unanswered, or a read that failed; leavingPause's count. */
  readonly faults?: number;
  /** The write it sent last (moved): what the `lease` part leaves undone if it ends unsettled. */
  readonly tried?: LeavingWrite;
  /** The pause to take once the term is named as left (pauseAfter: its session's renewals would keep the term alive meanwhile). */
  readonly pauseMs?: number;
  /**
   * The `lease` part ended unsettled: the write it last sent not seen to land, or ('unread') the row
   * never read: what the shell tells onError once as run() resolves (LeaderElector.tellUndone).
   */
  readonly leaseLeft?: LeavingWrite | 'unread';
}

/** What a part of the leaving decides from a read: a write, `settled` (nothing more to write), or `stay` (nothing it can write: the row left as it is). */
type Move = LeavingWrite | { readonly kind: 'settled' } | { readonly kind: 'stay' };
const SETTLED: Move = { kind: 'settled' };
const STAY: Move = { kind: 'stay' };
const READ_TO_LEAVE: Effect = { kind: 'readToLeave' };

/**
 * Whether the write of a term this start-up's follower won, or took, or gave back went unanswered (a
 * timeout, a dropped connection: the shell's step failed with it pending): the row may name it in a
 * term nobody leads. NoCoordination's take above all, whose follower reads nothing else as it stops.
 */
const takeInDoubt = (st: State): boolean => st.pending?.kind === 'acquire' || st.pending?.kind === 'confirm' || st.pending?.kind === 'giveBack';

/** The token of the last term it led, kept with releaseOnCancel false (departure's `keptToken`); -1: none kept. */
const keptTokenOf = (s: Settings, st: State): number => (s.releaseOnCancel ? -1 : st.ledToken);

/**
 * The leaving, one event at a time: `leave` starts it; each read's answer decides the part's next
 * move; each write's outcome says whether to read and decide again (afterLeaving); a part settled
 * or given up leads to the next. A follower in coordinated mode gives up what the lease still names
 * it for whatever releaseOnCancel says: that option keeps a term its work may outlive run() in, and
 * a follower's name guards no work.
 */
function leave(s: Settings, state: State, e: Extract<Event, { kind: 'leave' | 'leavingRead' | 'leavingWritten' | 'termLeft' }>, at: Moment): Step {
  const lv = state.leaving?.part === 'gone' ? undefined : state.leaving;
  switch (e.kind) {
    case 'leave': {
      const first: Leaving = { part: 'lease', reads: 0, held: e.held };
      // with releaseOnCancel, a term it led and did not hand over is released as led, then as a consistent read shows it
      if (e.led && s.releaseOnCancel && !e.led.handed) return moved(s, state, { ...first, releasing: e.led.term.fencingToken }, { kind: 'release', term: e.led.term }, at);
      // a follower reads what the row still names it for: coordinated, its succession or a term handed to it; with
      // releaseOnCancel, also a term it led and stopped leading (its renew deadline, a clock jump) that may stand on the row still;
      // in any mode, a term its unanswered take may have won (never led: no work outlives run() in it, so never kept)
      if (!e.led && (s.candidate || takeInDoubt(state) || (s.releaseOnCancel && state.ledToken >= 0))) return { state: { ...state, leaving: first }, effects: [READ_TO_LEAVE] };
      return partDone(s, state, first, true, at);
    }
    case 'leavingRead': {
      if (!lv) return { state, effects: [] };
      const read = { ...lv, reads: lv.reads + 1 };
      if (e.read !== 'unread' || !retriesFaults(lv, at)) return decidedFrom(s, state, read, e.read, at);
      // a fault: read again after a pause while the stop's wait allows, else decided from the row unread
      const faulted = { ...read, faults: (lv.faults ?? 0) + 1 };
      return pauseAfter(s, state, faulted, e.random, at) ?? decidedFrom(s, state, faulted, 'unread', at);
    }
    case 'leavingWritten': {
      if (!lv) return { state, effects: [] };
      // failed, or unanswered (it may have landed): decided again from a read after a pause while the stop's wait
      // allows, else given up (never tried again sooner: a fault is no lost race); elsewhere, as afterLeaving says
      if ((e.out === 'failed' || e.out === 'unknown') && retriesFaults(lv, at)) {
        const faulted = { ...lv, faults: (lv.faults ?? 0) + 1 };
        return pauseAfter(s, state, faulted, e.random, at) ?? partDone(s, state, faulted, false, at);
      }
      const next = afterLeaving(e.out, lv.reads);
      if (next === 'again') return { state, effects: [READ_TO_LEAVE] };
      return partDone(s, state, lv, next === 'settled', at);
    }
    case 'termLeft': {
      if (!lv) return { state, effects: [] };
      const { pauseMs, ...left } = { ...lv, leftAt: e.at };
      // named as left before a pause (pauseAfter): the pause, then the part decided again
      if (pauseMs !== undefined) return { state: { ...state, leaving: left }, effects: [pause(pauseMs)] };
      return doubt(s, state, left, at);
    }
  }
}

/**
 * Whether part `lv.part` tries a fault again after a pause (pauseAfter): the `lease` part, in a stop
 * whose wait on DynamoDB is known, while it holds no session's renewals. Not while it holds them
 * (`held`: a write onto its session in doubt), nor in the parts after (`doubt`, `kept`: a hold
 * stands until they end): each pause would bring the session's renew deadline nearer, ending it for
 * the process's other electors; there afterLeaving decides at once, and a hold left outlives run(),
 * the session ending at its deadline.
 */
const retriesFaults = (lv: Leaving, at: Moment): boolean => at.stopLeftMs !== undefined && lv.part === 'lease' && lv.held === undefined;

const LEAVE_AGAIN: readonly Next[] = [{ k: 'leaveAgain' }];
const pause = (ms: number): Effect => ({ kind: 'sleep', ms, counted: true, rest: LEAVE_AGAIN });

/**
 * After a fault of the `lease` part (`lv.faults` counted): a pause (leavingPause), then a read to
 * decide the part again; undefined where no pause fits in the stop's wait. A term the part would
 * leave to run out on its process's session rows if it ended now is named so first (leftTerm, as
 * partDone does): meanwhile the session's renewals for the process's other electors would keep it
 * alive, nobody leading it.
 */
function pauseAfter(s: Settings, state: State, lv: Leaving, random: number | undefined, at: Moment): Step | undefined {
  const ms = leavingPause(lv.faults ?? 1, s.retryPeriodMs, random ?? 0, at.stopLeftMs);
  if (ms === undefined) return undefined;
  const term = lv.leftAt === undefined ? leftTerm(s.releaseOnCancel ? (lv.releasing ?? -1) : keptTokenOf(s, state), s.instance, at.session !== undefined) : undefined;
  if (term) return { state: { ...state, leaving: { ...lv, pauseMs: ms } }, effects: [{ kind: 'leaveTerm', term }] };
  return { state: { ...state, leaving: lv }, effects: [pause(ms)] };
}

/** Part `lv.part`'s move from `read` (its `lv.reads`-th read). */
function decidedFrom(s: Settings, state: State, lv: Leaving, read: LeaseRead | 'unread', at: Moment): Step {
  const keptToken = keptTokenOf(s, state);
  switch (lv.part) {
    case 'lease': {
      // what it gives up of the lease as read: a term of its own it does not keep released, by the token the row shows (a peer may have moved it under the term, termToken kept); its name declined
      const d = read === 'unread' ? undefined : departure(read.item, s.identity, s.instance, keptToken);
      return moved(s, state, lv, read === 'unread' ? STAY : !d ? SETTLED : d.kind === 'decline' ? { ...d, read } : d, at);
    }
    case 'doubt': {
      if (read === 'unread') return moved(s, state, lv, STAY, at);
      const next = leavingDoubt(read.item, lv.held!, s.identity, s.instance, keptToken);
      const left = { ...lv, left: next.kind === 'keep' && next.left };
      if (next.kind === 'release') return moved(s, state, left, next, at);
      if (next.kind === 'keep') return moved(s, state, left, keptOff(s, state, left, read.item, lv.held!, at), at);
      // no term of its own on that session: the hold goes, and a kept term is looked for from this read
      return kept(s, state, left, [{ kind: 'settleDoubt' }], read, at);
    }
    default:
      return moved(s, state, lv, keptOff(s, state, lv, read === 'unread' ? read : read.item, at.session!, at), at);
  }
}

/** Carries out `move`: its write, or the part settled (`settled`) or given up (`stay`). */
function moved(s: Settings, state: State, lv: Leaving, move: Move, at: Moment): Step {
  if (move.kind === 'settled' || move.kind === 'stay') return partDone(s, state, lv, move.kind === 'settled', at);
  return { state: { ...state, leaving: { ...lv, tried: move } }, effects: [{ kind: 'leavingWrite', write: move }] };
}

/** Part `lv.part` over, `settled` or not: the next part. */
function partDone(s: Settings, state: State, lv: Leaving, settled: boolean, at: Moment): Step {
  switch (lv.part) {
    case 'lease': {
      // unsettled: what it leaves undone, told as run() resolves
      const done: Leaving = settled ? lv : { ...lv, leaseLeft: lv.tried ?? 'unread' };
      // the term left on the row is left to run out on its stamp, named so on its process's session rows: the one it keeps, or one whose release did not land
      // (unless named so already, before a pause: pauseAfter)
      const token = s.releaseOnCancel ? (settled ? -1 : (lv.releasing ?? -1)) : keptTokenOf(s, state);
      const term = lv.leftAt === undefined ? leftTerm(token, s.instance, at.session !== undefined) : undefined;
      if (term) return { state: { ...state, leaving: done }, effects: [{ kind: 'leaveTerm', term }] };
      return doubt(s, state, done, at);
    }
    case 'doubt':
      // settled, or its kept term named as left there (a held session would end at its renew deadline, costing the process's other electors theirs): the hold goes
      return gone(state, lv, settled || lv.left === true ? [{ kind: 'settleDoubt' }] : []);
    default:
      return gone(state, lv, []);
  }
}

/** The `doubt` part: a write onto its session in doubt settled before the hold goes (unsettled, the hold outlives run()); without one, the `kept` part. */
function doubt(s: Settings, state: State, lv: Leaving, at: Moment): Step {
  if (lv.held === undefined) return kept(s, state, lv, [], undefined, at);
  return { state: { ...state, leaving: { ...lv, part: 'doubt', reads: 0 } }, effects: [READ_TO_LEAVE] };
}

/**
 * The `kept` part (releaseOnCancel false): a term it led and keeps on the session its process
 * renews for its other electors taken off it, so its followers, quiet while the session vouched for
 * it, judge it by its stamp; decided from `read` if one was made. Where that cannot be done, the term
 * stays on the session, named as left on its process's rows: it runs out on that stamp.
 */
function kept(s: Settings, state: State, lv: Leaving, fx: Effect[], read: LeaseRead | undefined, at: Moment): Step {
  const next: Leaving = { ...lv, part: 'kept', reads: read ? 1 : 0 };
  if (typeof at.session !== 'string' || keptTokenOf(s, state) < 0) return gone(state, next, fx);
  const step = read ? decidedFrom(s, state, next, read, at) : { state: { ...state, leaving: next }, effects: [READ_TO_LEAVE] };
  return { state: step.state, effects: [...fx, ...step.effects] };
}

/** A kept term on session `name` as `l` shows it, taken off as leavingKept says: stamped from the session's stamp as its process last knew it landed, no later than the stamp it was left at. */
function keptOff(s: Settings, state: State, lv: Leaving, l: Lease | undefined | 'unread', name: string, at: Moment): Move {
  const stamp = at.session === name ? at.sessionStamp : undefined;
  const next = leavingKept(l, stamp === undefined ? undefined : { name, stamp, leftAt: lv.leftAt }, s.identity, s.instance, keptTokenOf(s, state), state.ledOn);
  return next.kind === 'none' ? SETTLED : next.kind === 'hold' ? STAY : next;
}

const gone = (state: State, lv: Leaving, fx: Effect[]): Step => ({ state: { ...state, leaving: { ...lv, part: 'gone' } }, effects: fx });
