/**
 * The follower's step: one record of what a LeaderElector knows of its lease between events
 * (`FollowerState`), and `followerStep(settings, state, event, at) → { state, effects }`, a pure
 * function of it and one event. The events are a poll begun, each read's and each write's answer;
 * the effects are the reads and writes to make next, in the poll's order, and what to tell (a new
 * holder, a claim to this worker's name, a clock doubt). The shell (lib/sdk/elector.ts) carries out
 * the effects through the LeaseLock and feeds each answer back as the next event, until a step
 * asks for nothing more. No I/O, no clock read: `at` brings the moment (monotonic time, DynamoDB's
 * time as measured, the clock's jumps so far). The leader's step is lib/sdk/leader.ts leaderStep.
 *
 * The renewal cadences (RenewalPhase) only time reads — no decision about a term rests on them —
 * and a session's is shared by the process's electors: they are the shell's, updated in place.
 */
import { renewedBy, sessionStanding } from '../election/vacancy.js';
import type { IdentityClaim, Lease } from '../schemas/lease.js';
import type { Acquired, LeaseRead, SessionRead, Term } from './lock.js';
import type { ClockCheck, ClockDoubt } from './server-clock.js';
import { isQuiet, isVacant, nextReadDelay, pollPlan, SESSION_QUIET_LEASES, SHARED_READ_MS, termToConfirm, watchesTerm, type decideFollower, type FollowerDecision, type RenewalPhase } from './follower.js';

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
  /** How long a follower waits out a session-held term's holder's own backstop read (lib/sdk/leader.ts sessionFallbackMs). */
  readonly sessionFallbackMs: number;
  /** Whether this worker stands as a candidate. */
  readonly candidate: boolean;
  /** The follower's decision on a poll (lib/sdk/follower.ts, or a planted bug's). */
  readonly decideFollower: typeof decideFollower;
  /** Read cadences: this worker's of its holder, and session `name`'s, shared by the process's electors. */
  readonly cadence: { readonly own: RenewalPhase; session(name: string): RenewalPhase };
}

/** The moment an event is decided at. */
export interface Moment {
  /** Monotonic now. */
  readonly now: number;
  /** DynamoDB's time as this worker measures it, against maxClockErrorMs. */
  readonly clock: ClockCheck;
  /** The clock's jumps so far: a term won while it jumped is given back. */
  readonly jumps: number;
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

/** Where a poll stands while it waits on an answer. */
type Pending =
  /** Reading the lease row (and the session row of a lease held on one), for a poll or for the successor's second look. */
  | { readonly kind: 'read'; readonly then: 'poll' | 'secondLook'; readonly woken: boolean; readonly consistent: boolean; readonly sentAt: number; readonly reread: boolean; readonly raw?: LeaseRead; readonly sessionReread?: boolean }
  /** Answering an election (or a ping left unanswered) by renewing the candidacy. */
  | { readonly kind: 'answer'; readonly raw: LeaseRead; readonly d: FollowerDecision }
  /** Reporting a vacancy, then acknowledging by renewing the candidacy. */
  | { readonly kind: 'report' | 'reportAck'; readonly raw: LeaseRead; readonly d: FollowerDecision }
  /** Confirming a term the coordinator gave this start-up (`sentAt`: the renewal's send time). */
  | { readonly kind: 'confirm'; readonly term: Term; readonly jumps: number; readonly sentAt: number }
  /** A direct acquisition written (`sentAt`: its send time). */
  | { readonly kind: 'acquire'; readonly read: LeaseRead; readonly then: Attempt; readonly jumps: number; readonly sentAt: number }
  /** A term won while the clock jumped, being given back. */
  | { readonly kind: 'giveBack'; readonly then: Attempt | 'confirm' }
  /** Starting to lead a term won. */
  | { readonly kind: 'lead'; readonly then: Attempt | 'confirm'; readonly token: number };

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
  /** Whether the last term a read showed was held on a session: its fallback waits longer (sessionFallbackMs). */
  readonly lastHeldOnSession: boolean;
  /** The session row the last view was judged with, if any. */
  readonly viewedSession: { readonly name: string; readonly renewTime: number } | undefined;
  /** Since when (monotonic) the lease has been vacant, as this worker saw it. */
  readonly vacantSince: number | undefined;
  /** Monotonic time the successor looks again (when the term it watches would run out). */
  readonly wakeAt: number | undefined;
  /** The highest fencing token this start-up has led with: it never confirms a term below it. */
  readonly ledToken: number;
  /** A ping went unanswered while DynamoDB's time was in doubt: answered as soon as it can be. */
  readonly unanswered: boolean;
  /** The election this candidate last answered (its leader side answers too). */
  readonly ackedElection: string | undefined;
  /** The holder last reported to onNewLeader. */
  readonly lastLeader: string | undefined;
  /** The last claim to this worker's name it answered. */
  readonly answeredClaim: string | undefined;
  /** Since when this worker could not vouch for the times it writes, and whether it said so. */
  readonly doubt: { readonly since: number; readonly reported: boolean } | undefined;
  /** Clock skew preventions so far. */
  readonly preventions: number;
  /** A wake came: the next step reads at once, for news. */
  readonly wakePending: boolean;
  /** The poll under way, waiting on an answer. */
  readonly pending: Pending | undefined;
}

export const FOLLOWING: FollowerState = {
  lastRaw: undefined,
  lastRead: undefined,
  leaseReadAt: undefined,
  observed: undefined,
  previousReadSentAt: undefined,
  settlingSince: undefined,
  misses: 0,
  lastHeldOnSession: false,
  viewedSession: undefined,
  vacantSince: undefined,
  wakeAt: undefined,
  ledToken: -1,
  unanswered: false,
  ackedElection: undefined,
  lastLeader: undefined,
  answeredClaim: undefined,
  doubt: undefined,
  preventions: 0,
  wakePending: false,
  pending: undefined,
};

/** One thing a follower learnt. */
export type FollowerEvent =
  /** Its next step is due: a poll (`woken`: a wake asked for it). */
  | { readonly kind: 'poll'; readonly woken: boolean; readonly pushLive: boolean }
  /** The lease row, as read. */
  | { readonly kind: 'leaseRead'; readonly raw: LeaseRead }
  /** The session row a lease is held on, as read. */
  | { readonly kind: 'sessionRead'; readonly read: SessionRead }
  /** The candidacy renewed (an answer, an acknowledgement). */
  | { readonly kind: 'candidateRenewed' }
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
  /** A wake for the lease (revision: the row's it announces, if known; undefined: the push path went up or down). */
  | { readonly kind: 'wake'; readonly revision: number | undefined };

/** What the shell carries out, in this order. At most one read or write, last: its answer is the next event. */
export type FollowerEffect =
  | { readonly kind: 'readLease'; readonly consistent: boolean }
  | { readonly kind: 'readSession'; readonly name: string; readonly shareMs: number; readonly pendingMs: number }
  /** Renew the candidacy; `conflictIsNothing`: a ConflictError (the row re-registered meanwhile) is no fault. */
  | { readonly kind: 'renewCandidate'; readonly conflictIsNothing: boolean }
  /** Report the vacancy (a ConflictError is no fault). */
  | { readonly kind: 'reportVacancy'; readonly read: LeaseRead }
  /** Confirm `term` by renewing it. */
  | { readonly kind: 'confirm'; readonly term: Term }
  /** End `term` on a row rewritten under it. The poll ends with it. */
  | { readonly kind: 'endChanged'; readonly term: Term }
  | { readonly kind: 'acquire'; readonly read: LeaseRead; readonly electedBy: 'self' | 'successor' }
  | { readonly kind: 'release'; readonly term: Term }
  /** Lead `term`, won by the write sent at `sentAt` (the shell's Leadership.start); `confirmed`: then act on the renewal's row. */
  | { readonly kind: 'lead'; readonly term: Term; readonly sentAt: number; readonly lease: Lease; readonly confirmed: boolean }
  /** onNewLeader. */
  | { readonly kind: 'newLeader'; readonly holder: string }
  /** Another start-up claims this worker's name: say so, and renew the candidacy (which refuses it). */
  | { readonly kind: 'claim'; readonly claim: IdentityClaim }
  /** Tell onError this worker cannot vouch for its times. */
  | { readonly kind: 'clockSkew'; readonly doubt: ClockDoubt }
  /** End the sleep before the next step (a wake). */
  | { readonly kind: 'stepNow' };

type Out = { readonly state: FollowerState; readonly effects: FollowerEffect[] };

/**
 * Whether the times this worker would write at `at` are within maxClockErrorMs of DynamoDB's clock
 * (`at.clock`). If not, the caller does not write them: a clock skew prevention, counted, and
 * reported once per spell — at once after a jump, otherwise once it has lasted a lease duration
 * (the first responses of a start-up settle the estimate; that is no fault).
 *
 * `settling`: for an acknowledgement, a doubt that is about to clear does not count. An answer
 * carries no time the coordinator relies on (it judges the copy of its own ping), and a worker that
 * does not answer is written off until it renews on its own — minutes. Such a worker is elected
 * only to confirm the term a poll later, once the next responses have settled the estimate; a
 * worker whose doubt lasts (no Date header, responses too slow) does not answer.
 */
export function judgeClock(state: FollowerState, at: Moment, leaseDurationMs: number, settling = false): { readonly state: FollowerState; readonly trusted: boolean; readonly report?: ClockDoubt } {
  const c = at.clock;
  if (c.ok) return { state: state.doubt === undefined ? state : { ...state, doubt: undefined }, trusted: true };
  const doubt = state.doubt ?? { since: at.now, reported: false };
  const lasting = at.now - doubt.since >= leaseDurationMs;
  if (settling && c.reason !== 'noSamples' && !lasting) return { state: { ...state, doubt }, trusted: true };
  const counted = { ...state, doubt, preventions: state.preventions + 1 };
  if (!doubt.reported && (c.reason === 'jumped' || lasting)) return { state: { ...counted, doubt: { since: doubt.since, reported: true } }, trusted: false, report: c };
  return { state: counted, trusted: false };
}

/** A write not made, or a term stopped, for the clock (`jumpMs`: a jump, reported at once). */
export function prevented(state: FollowerState, now: number, jumpMs?: number): { readonly state: FollowerState; readonly report?: ClockDoubt } {
  const counted = { ...state, preventions: state.preventions + 1 };
  if (jumpMs === undefined) return { state: counted };
  return { state: { ...counted, doubt: { since: state.doubt?.since ?? now, reported: true } }, report: { reason: 'jumped', jumpMs } };
}

const termKey = (l: Lease | undefined): TermKey | undefined =>
  l && { holderIdentity: l.holderIdentity, holderInstance: l.holderInstance, renewTime: l.renewTime, fencingToken: l.fencingToken, leaseDurationSeconds: l.leaseDurationSeconds };

/** Whether `l` has the term key `k` (compared field by field: no string made per read). */
function sameTerm(k: TermKey | undefined, l: Lease | undefined): boolean {
  if (!k || !l) return k === undefined && l === undefined;
  return k.holderIdentity === l.holderIdentity && k.holderInstance === l.holderInstance && k.renewTime === l.renewTime && k.fencingToken === l.fencingToken && k.leaseDurationSeconds === l.leaseDurationSeconds;
}

/**
 * The renewal cadence this follower times its reads by: for a lease held on a session, the
 * session's, shared by every elector of the process that follows a lease on it (they then aim at
 * the same moment, and one read serves them all); otherwise its own holder's.
 */
function activeCadence(s: FollowerSettings, st: FollowerState): RenewalPhase {
  const l = st.lastRaw?.item;
  return l?.session !== undefined && l.holderIdentity !== undefined && st.viewedSession !== undefined ? s.cadence.session(l.session) : s.cadence.own;
}

/** Whether the lease as last read is held on a session. */
const sessionHeld = (st: FollowerState): boolean => st.lastRaw?.item?.session !== undefined && st.lastRaw.item.holderIdentity !== undefined;

/** Reports a holder seen (onNewLeader) when it is not the one last reported. */
function noteHolder(st: FollowerState, holder: unknown, fx: FollowerEffect[]): FollowerState {
  if (typeof holder !== 'string' || holder === st.lastLeader) return st;
  fx.push({ kind: 'newLeader', holder });
  return { ...st, lastLeader: holder };
}

/**
 * Another start-up claims this worker's candidate name (one identity, one process): this one is
 * alive, so it answers by renewing its candidate row, which refuses the newcomer; and says so.
 * Each claim is answered once.
 */
function claimIn(s: FollowerSettings, st: FollowerState, l: Lease | undefined, fx: FollowerEffect[]): FollowerState {
  const c = l?.identityClaim;
  if (!c || !s.candidate || c.name !== s.identity || c.of !== s.instance || c.instance === s.instance) return st;
  const key = `${c.instance}@${c.at}`;
  if (key === st.answeredClaim) return st;
  fx.push({ kind: 'claim', claim: c });
  return { ...st, answeredClaim: key };
}

/** Records what was read (or written); `changed`: the term or its renewal changed since the last read. */
function observe(s: FollowerSettings, st: FollowerState, read: LeaseRead, now: number, fx: FollowerEffect[]): { st: FollowerState; changed: boolean } {
  const changed = !st.observed || !sameTerm(st.observed.key, read.item);
  const l = read.item;
  let next: FollowerState = l?.holderIdentity !== undefined ? { ...st, lastHeldOnSession: l.session !== undefined } : st;
  if (changed) {
    next = { ...next, observed: { key: termKey(l), at: now, revision: read.revision, token: l?.fencingToken ?? -1 } };
    // a term's first write (an election's, a hand-off's, an acquisition's) is not on the holder's renewal cadence
    const v = st.viewedSession;
    if (v && l?.session === v.name && l.holderInstance !== undefined && l.holderInstance !== s.instance) s.cadence.session(v.name).seen(`session:${v.name}`, v.renewTime, now, st.previousReadSentAt, l.leaseDurationSeconds * 1000);
    else if (l?.holderInstance !== undefined && l.renewTime !== undefined && l.renewTime !== l.acquireTime && l.holderInstance !== s.instance) s.cadence.own.seen(`${l.holderInstance}|${l.fencingToken}`, l.renewTime, now, st.previousReadSentAt, l.leaseDurationSeconds * 1000);
  } else next = { ...next, observed: { ...st.observed!, revision: read.revision } };
  next = noteHolder(next, read.item?.holderIdentity, fx);
  return { st: claimIn(s, next, read.item, fx), changed };
}

/**
 * An eventually consistent read older than one already seen (a lower revision in the same or an
 * earlier term, or no row where there was one): not acted on; it is read again, consistently.
 */
function isStale(st: FollowerState, read: LeaseRead): boolean {
  const o = st.observed;
  if (!o || o.token < 0) return false;
  if (!read.item) return true;
  return read.revision < o.revision && read.item.fencingToken <= o.token;
}

/**
 * How stale a session read may be: a read of the session serves every elector of the process that
 * wants one about then — the successor shares one sent SHARED_READ_MS ago (it times the holder's
 * renewals), others one up to a quarter of the margin between the renew deadline and the term, and
 * anyone one still in flight that was sent within that margin. A judgement from a read sent that
 * much earlier is still sound: any renewal landing after it was sent after the holder's own
 * deadline (see Session).
 */
const sessionMargin = (s: FollowerSettings): number => Math.max(SHARED_READ_MS, Math.min(s.retryPeriodMs, (s.leaseDurationMs - s.renewDeadlineMs) / 4));

/**
 * The term `l` as this follower judges it with the session row it names (`row`): on a session that
 * vouches for its holder (sessionStanding), renewed by the later of the two stamps; on one that
 * does not (gone, or another process's: the lease's `session` was rewritten under its holder),
 * lasting sessionFallbackMs from when it was first seen — the holder's own backstop read, which
 * ends a term it finds moved off its session, comes first — as a lease duration of that length.
 */
function judged(s: FollowerSettings, l: Lease, row: SessionRead['row']): Lease {
  const stamp = row && { name: row.name, renewTime: row.renewTime, process: row.process };
  if (sessionStanding(l, stamp) === 'vouched') return renewedBy(l, row!.renewTime);
  return { ...l, leaseDurationSeconds: Math.max(l.leaseDurationSeconds, Math.ceil(s.sessionFallbackMs / 1000)) };
}

const done = (state: FollowerState, fx: FollowerEffect[]): Out => ({ state: { ...state, pending: undefined }, effects: fx });
const waiting = (state: FollowerState, pending: Pending, fx: FollowerEffect[], effect: FollowerEffect): Out => ({ state: { ...state, pending }, effects: [...fx, effect] });

/** One step of a follower: its record after `e`, decided at `at`, and what to carry out. */
export function followerStep(s: FollowerSettings, state: FollowerState, e: FollowerEvent, at: Moment): Out {
  const fx: FollowerEffect[] = [];
  const p = state.pending;
  switch (e.kind) {
    case 'poll': {
      // what it reads: lib/sdk/follower.ts pollPlan (most polls write nothing)
      const last = state.lastRaw;
      const plan = pollPlan({ mode: s.mode, woken: e.woken, pushLive: e.pushLive, raw: last?.item, view: state.lastRead, leaseReadAt: state.leaseReadAt, now: at.now, backstopMs: SESSION_QUIET_LEASES * s.leaseDurationMs });
      const read: Pending = { kind: 'read', then: 'poll', woken: e.woken, consistent: plan.consistent, sentAt: at.now, reread: false };
      if (plan.sessionOnly && last) return readSession(s, state, { ...read, raw: last }, last, at, fx);
      return waiting(state, read, fx, { kind: 'readLease', consistent: plan.consistent });
    }
    case 'leaseRead': {
      if (p?.kind !== 'read') return done(state, fx);
      if (!p.consistent && !p.reread && isStale(state, e.raw)) return waiting(state, { ...p, reread: true }, fx, { kind: 'readLease', consistent: true });
      return readSession(s, { ...state, leaseReadAt: p.sentAt }, p, e.raw, at, fx);
    }
    case 'sessionRead': {
      if (p?.kind !== 'read' || !p.raw) return done(state, fx);
      const l = p.raw.item!;
      // A read sent longer ago than the margin (the process was frozen, or starved, between sending
      // it and now) proves nothing about now: read again before judging by it.
      if (!p.sessionReread && at.now - e.read.sentAt > sessionMargin(s)) return waiting(state, { ...p, sessionReread: true }, fx, { kind: 'readSession', name: l.session!, shareMs: 0, pendingMs: 0 });
      const row = e.read.row;
      const st = { ...state, viewedSession: row && { name: row.name, renewTime: row.renewTime } };
      return viewed(s, st, p, p.raw, { ...p.raw, item: judged(s, l, row) }, e.read.sentAt, at, fx);
    }
    case 'candidateRenewed':
      if (p?.kind === 'answer') {
        const st = p.d.answer === 'unanswered' ? { ...state, unanswered: false } : { ...state, ackedElection: (p.d.answer as { election: string }).election };
        return rest(s, st, p.raw, p.d, at, fx);
      }
      if (p?.kind === 'reportAck') return afterReport(s, state, p.raw, p.d, at, fx);
      return done(state, fx);
    case 'reported': {
      if (p?.kind !== 'report') return done(state, fx);
      if (e.lease !== undefined && s.candidate) {
        const j = judgeClock(state, at, s.leaseDurationMs, true);
        if (j.report) fx.push({ kind: 'clockSkew', doubt: j.report });
        if (j.trusted) return waiting(j.state, { ...p, kind: 'reportAck' }, fx, { kind: 'renewCandidate', conflictIsNothing: true });
        return afterReport(s, j.state, p.raw, p.d, at, fx);
      }
      return afterReport(s, state, p.raw, p.d, at, fx);
    }
    case 'confirmed': {
      if (p?.kind !== 'confirm') return done(state, fx);
      if (!e.lease) return done({ ...state, leaseReadAt: undefined }, fx);
      const { st } = observe(s, state, { key: { name: s.leaseName }, item: e.lease, revision: e.lease.revision }, at.now, fx);
      return won(s, st, p.term, p.jumps, p.sentAt, e.lease, 'confirm', at, fx);
    }
    case 'acquired': {
      if (p?.kind !== 'acquire') return done(state, fx);
      // the row DynamoDB returned with the refusal names whoever moved first: a new holder, seen now
      if (!('written' in e.got)) return attempted(s, noteHolder(state, e.got.refusedBy, fx), p.then, false, at, fx);
      const written = e.got.written;
      const { st } = observe(s, state, { ...p.read, item: written, revision: written.revision }, at.now, fx);
      return won(s, st, { holderIdentity: s.identity, fencingToken: written.fencingToken }, p.jumps, p.sentAt, written, p.then, at, fx);
    }
    case 'released':
      if (p?.kind !== 'giveBack') return done(state, fx);
      return p.then === 'confirm' ? done({ ...state, leaseReadAt: undefined }, fx) : attempted(s, state, p.then, false, at, fx);
    case 'led': {
      if (p?.kind !== 'lead') return done(state, fx);
      const st = e.ok ? { ...state, ledToken: Math.max(state.ledToken, p.token), vacantSince: undefined } : state;
      // not confirmed (the term moved on): the next step reads the lease row itself, not a copy
      if (p.then === 'confirm') return done(e.leading ? st : { ...st, leaseReadAt: undefined }, fx);
      return attempted(s, st, p.then, e.ok, at, fx);
    }
    case 'observed':
      return { state: observe(s, state, e.read, at.now, fx).st, effects: fx };
    case 'claimIn':
      return { state: claimIn(s, state, e.lease, fx), effects: fx };
    case 'leading':
      s.cadence.own.reset();
      return { state: { ...state, misses: 0, previousReadSentAt: undefined }, effects: fx };
    case 'wake': {
      // A wake for the very revision this worker has read is nothing new (its own hand-off, say;
      // only the very revision: a deleted and re-created row counts its revisions from 1 again).
      const seen = state.observed;
      if (e.revision !== undefined && seen !== undefined && e.revision === seen.revision) return { state, effects: fx };
      return { state: { ...state, wakePending: true }, effects: [{ kind: 'stepNow' }] };
    }
  }
}

/** The lease row read (`raw`): judged as it is, or, held on a session, once that session's row is read. */
function readSession(s: FollowerSettings, state: FollowerState, p: Extract<Pending, { kind: 'read' }>, raw: LeaseRead, at: Moment, fx: FollowerEffect[]): Out {
  const l = raw.item;
  const st = { ...state, viewedSession: undefined };
  if (l?.session === undefined || l.holderIdentity === undefined) return viewed(s, st, p, raw, raw, p.sentAt, at, fx);
  const margin = sessionMargin(s);
  const successor = watchesTerm(l, s.identity, s.instance);
  return waiting(st, { ...p, raw }, fx, { kind: 'readSession', name: l.session, shareMs: successor ? SHARED_READ_MS : margin, pendingMs: margin });
}

/** The lease read (`raw`) and as judged (`view`), at `sentAt`: a poll's, or the successor's second look. */
function viewed(s: FollowerSettings, state: FollowerState, p: Extract<Pending, { kind: 'read' }>, raw: LeaseRead, view: LeaseRead, sentAt: number, at: Moment, fx: FollowerEffect[]): Out {
  if (p.then === 'secondLook') {
    const { st } = observe(s, { ...state, lastRaw: raw }, view, at.now, fx);
    const l = view.item;
    if (isVacant(l, st.observed!.at, at.now) && watchesTerm(l, s.identity, s.instance)) return acquire(s, st, raw, 'second', at, fx);
    return done(st, fx);
  }
  return polled(s, state, raw, view, sentAt, p.woken, at, fx);
}

/** A poll's read: recorded, then decided on (decideFollower), then acted on in order. */
function polled(s: FollowerSettings, state: FollowerState, raw: LeaseRead, view: LeaseRead, sentAt: number, woken: boolean, at: Moment, fx: FollowerEffect[]): Out {
  const o = observe(s, { ...state, lastRaw: raw }, view, at.now, fx);
  let st = o.st;
  if (o.changed) st = { ...st, misses: 0 };
  else if (!woken) {
    st = { ...st, misses: st.misses + 1 };
    activeCadence(s, st).missed(sentAt); // the next renewal lands later than this read was served
  }
  st = { ...st, previousReadSentAt: sentAt, lastRead: view.item };
  const settling = !isQuiet(view.item) || (watchesTerm(view.item, s.identity, s.instance) && !activeCadence(s, st).known);
  st = { ...st, settlingSince: settling ? (st.settlingSince ?? at.now) : undefined };
  const d = s.decideFollower({
    lease: view.item,
    identity: s.identity,
    instance: s.instance,
    mode: s.mode,
    candidate: s.candidate,
    ackedElection: st.ackedElection,
    unanswered: st.unanswered,
    now: at.now,
    observedAt: st.observed!.at,
    vacantSince: st.vacantSince,
    retryPeriodMs: s.retryPeriodMs,
    fallbackAfterMs: st.lastHeldOnSession ? Math.max(s.fallbackAfterMs, s.sessionFallbackMs) : s.fallbackAfterMs,
  });
  if (!(d.confirm || (d.answer !== undefined && s.candidate) || d.take !== undefined || d.reportVacancy)) return done({ ...st, vacantSince: d.vacantSince, wakeAt: d.wakeAt }, fx);
  if (d.confirm) {
    // Elected (by the coordinator, for this start-up): confirm by renewing before acting. A term
    // rewritten under this start-up is ended on the row, not confirmed (follower.ts termToConfirm).
    st = { ...st, wakeAt: undefined };
    const c = termToConfirm(view.item!, st.ledToken);
    if (c.end) return done(st, [...fx, { kind: 'endChanged', term: c.term }]);
    // not confirmed while the clock is in doubt: the coordinator's short first term runs out, or the doubt clears first
    const j = judgeClock(st, at, s.leaseDurationMs);
    if (j.report) fx.push({ kind: 'clockSkew', doubt: j.report });
    if (!j.trusted) return done({ ...j.state, leaseReadAt: undefined }, fx);
    return waiting(j.state, { kind: 'confirm', term: c.term, jumps: at.jumps, sentAt: at.now }, fx, { kind: 'confirm', term: c.term });
  }
  // An answer makes this worker electable: not while it cannot tell DynamoDB's time for long.
  if (d.answer !== undefined && s.candidate) {
    const j = judgeClock(st, at, s.leaseDurationMs, true);
    if (j.report) fx.push({ kind: 'clockSkew', doubt: j.report });
    if (j.trusted) return waiting(j.state, { kind: 'answer', raw, d }, fx, { kind: 'renewCandidate', conflictIsNothing: false });
    st = d.answer !== 'unanswered' ? { ...j.state, unanswered: true } : j.state;
  }
  return rest(s, st, raw, d, at, fx);
}

/** A poll's actions after its answer: take the lease as successor, or report a vacancy and take it by fallback. */
function rest(s: FollowerSettings, state: FollowerState, raw: LeaseRead, d: FollowerDecision, at: Moment, fx: FollowerEffect[]): Out {
  const st = { ...state, vacantSince: d.vacantSince, wakeAt: d.wakeAt };
  // As its designated successor (or second successor, once the successor has had its grace): a lost
  // race is read again at once (attempted).
  if (d.take === 'successor') return acquire(s, st, raw, 'first', at, fx);
  // Tells the coordinator the holder has not renewed for a whole term, as this worker watched.
  if (d.reportVacancy) return waiting(st, { kind: 'report', raw, d }, fx, { kind: 'reportVacancy', read: raw });
  return afterReport(s, st, raw, d, at, fx);
}

function afterReport(s: FollowerSettings, state: FollowerState, raw: LeaseRead, d: FollowerDecision, at: Moment, fx: FollowerEffect[]): Out {
  return d.take === 'self' ? acquire(s, state, raw, 'self', at, fx) : done(state, fx);
}

/** Direct acquisition (NoCoordination, the fallback, or as the designated successor), conditioned on the revision read. */
function acquire(s: FollowerSettings, state: FollowerState, read: LeaseRead, then: Attempt, at: Moment, fx: FollowerEffect[]): Out {
  const j = judgeClock(state, at, s.leaseDurationMs);
  if (j.report) fx.push({ kind: 'clockSkew', doubt: j.report });
  if (!j.trusted) return attempted(s, j.state, then, false, at, fx);
  return waiting(j.state, { kind: 'acquire', read, then, jumps: at.jumps, sentAt: at.now }, fx, { kind: 'acquire', read, electedBy: then === 'self' ? 'self' : 'successor' });
}

/**
 * A term won (`term`, by the write sent at `sentAt`, answered with `lease`): led, unless the clock
 * jumped meanwhile — its stamp may be off by the jump, so it is given back rather than led on.
 */
function won(s: FollowerSettings, state: FollowerState, term: Term, jumps: number, sentAt: number, lease: Lease, then: Attempt | 'confirm', at: Moment, fx: FollowerEffect[]): Out {
  if (at.jumps !== jumps) return waiting(prevented(state, at.now).state, { kind: 'giveBack', then }, fx, { kind: 'release', term });
  return waiting(state, { kind: 'lead', then, token: term.fencingToken }, fx, { kind: 'lead', term, sentAt, lease, confirmed: then === 'confirm' });
}

/**
 * An acquisition came to `ok`. The successor's first that lost a race (a vacancy report, an election
 * opened, somebody else's write) reads the lease again at once: if it is still vacant and still
 * names this worker, it tries once more; otherwise the election goes on as usual.
 */
function attempted(s: FollowerSettings, state: FollowerState, then: Attempt, ok: boolean, at: Moment, fx: FollowerEffect[]): Out {
  if (then !== 'first' || ok) return done(state, fx);
  return waiting(state, { kind: 'read', then: 'secondLook', woken: false, consistent: true, sentAt: at.now, reread: true }, fx, { kind: 'readLease', consistent: true });
}

/** When a follower reads next (lib/sdk/follower.ts nextReadDelay), at `now`. */
export function followerDelay(s: FollowerSettings, st: FollowerState, now: number, pushLive: boolean, random: number): number {
  return nextReadDelay({
    lease: st.lastRead,
    identity: s.identity,
    instance: s.instance,
    mode: s.mode,
    now,
    retryPeriodMs: s.retryPeriodMs,
    expectedAt: activeCadence(s, st).expectedAt(),
    cadenceKnown: activeCadence(s, st).known,
    settlingForMs: st.settlingSince === undefined ? undefined : now - st.settlingSince,
    leaseDurationMs: s.leaseDurationMs,
    termEndsAt: st.lastRead?.holderIdentity !== undefined && st.observed ? st.observed.at + st.lastRead.leaseDurationSeconds * 1000 : undefined,
    misses: st.misses,
    pushLive,
    sessionHeld: sessionHeld(st),
    random,
  });
}
