import type { Candidate } from '../schemas/candidate.js';
import { MAX_IDENTITY_LEASE_SECONDS, processOf, processSessionComponents, sessionKey, vouchesFor, type IdentityLease, type LeftTerm } from '../schemas/identity.js';
import type { Lease } from '../schemas/lease.js';
import { OLDEST_EMULATION_VERSION } from '../schemas/strategy.js';

export type VacancyReason = 'noLease' | 'noHolder' | 'expired' | 'reported';
export type Vacancy = { vacant: false; expiresAt: number } | { vacant: true; reason: VacancyReason };

/** A session's last renewal as an observer knows it (lib/sdk/session.ts). */
export interface SessionStamp {
  /** The session row's name: what a lease held on it carries as `session`. */
  readonly name: string;
  /** Its renewTime: for a judgement made later than the read, moved forward by the read's age (see effectiveLease). */
  readonly renewTime: number;
  /** The process that renews it (IdentityLeaseItem.process): it vouches for its own electors' terms only. */
  readonly process: string | undefined;
  /** The terms its process's stopped electors left to run out (IdentityLeaseItem.leftTerms): never moved by the read's age. */
  readonly leftTerms?: Readonly<Record<string, LeftTerm>> | undefined;
}

/**
 * A session row read at `readAt`, as a stamp to judge by at `now` (a later moment): its renewTime
 * moved forward by the read's age, so judging at `now` is judging as of the moment the read was
 * sent — a renewal may have landed since, and only a read sent no earlier than the moment judged
 * proves the holder has stopped. Undefined when there was no row.
 */
export function sessionStampAt(row: { readonly name: string; readonly renewTime: number; readonly process?: string | undefined; readonly leftTerms?: Readonly<Record<string, LeftTerm>> | undefined } | undefined, readAt: number, now: number): SessionStamp | undefined {
  return row ? { name: row.name, renewTime: row.renewTime + Math.max(0, now - readAt), process: row.process, ...(row.leftTerms ? { leftTerms: row.leftTerms } : {}) } : undefined;
}

/** What names a term on a lease row (namesTerm): its holder's instance and the token it was led with. */
export interface TermNames {
  readonly holderInstance?: string | undefined;
  readonly fencingToken?: number | undefined;
  readonly termToken?: number | undefined;
}

/**
 * The stamp a session row's process left `lease`'s term to run out from (IdentityLeaseItem.leftTerms):
 * its elector stopped, so the row vouches for that term no later than this, however long the
 * process's other electors renew it. Undefined: the row does not name this term (another holder or
 * token, or nothing left).
 */
export function leftStamp(lease: Pick<Lease, 'name'> & TermNames, row: { readonly leftTerms?: Readonly<Record<string, LeftTerm>> | undefined } | undefined): number | undefined {
  const left = row?.leftTerms?.[lease.name];
  return left !== undefined && namesTerm(lease, left) ? left.stamp : undefined;
}

/**
 * Whether `lease` shows the term `left` names: its holder's instance, and the token it was led with
 * (`termToken`, which an operator's or a peer's move of the fencing token leaves as it was; an older
 * SDK's row without one, its fencing token).
 */
export function namesTerm(lease: TermNames | undefined, left: { readonly token: number; readonly instance: string }): boolean {
  return lease?.holderInstance === left.instance && (lease.termToken ?? lease.fencingToken) === left.token;
}

/**
 * `lease` as renewed by a session row that vouches for its holder: by the row's stamp, or, for a term
 * its process left to run out (leftStamp), by the stamp it was left at, which no later renewal moves.
 */
export function renewedBySession(lease: Lease, row: { readonly renewTime: number; readonly leftTerms?: Readonly<Record<string, LeftTerm>> | undefined }): Lease {
  return renewedBy(lease, leftStamp(lease, row) ?? row.renewTime);
}

/**
 * How a lease's term stands with the session it names:
 * - `none`: not held on a session (no holder, no `session`, or a holder on no session, which renews
 *   the lease itself): judged by its own stamp. A row without `process` (an older SDK's) is trusted;
 * - `vouched`: the session row exists and is the holder's own process's (IdentityLeaseItem.process):
 *   the term lives by the later of its own stamp and the session's;
 * - `unvouched`: the row is gone, or another process's. Only a write the holder did not make puts a
 *   term there (a peer of the same lease redirecting `session`, issue 36), or the row was collected
 *   while the lease still named it. The session's stamp says nothing about the holder then: only the
 *   holder's own read of its lease (which ends a term it finds moved off its session) or its
 *   followers' fallback, which waits that read out (lib/sdk/step.ts sessionFallbackMs), ends it;
 *   the coordinator's tick, which scans every session row, judges it by the holder's own process's
 *   (lib/coordinator/reconcile.ts reconcileAll).
 */
export type SessionStanding = 'none' | 'vouched' | 'unvouched';

export function sessionStanding(lease: Pick<Lease, 'session' | 'holderIdentity' | 'holderInstance'> | undefined, session: SessionStamp | undefined): SessionStanding {
  if (lease?.session === undefined || lease.holderIdentity === undefined) return 'none';
  const row = session?.name === lease.session ? session : undefined;
  // a row an SDK wrote before sessions named their process: trusted as it was (a mixed fleet)
  if (row !== undefined && row.process === undefined) return 'vouched';
  // a holder on no session (it renews the lease itself): a `session` on its lease is not its own
  if (processOf(lease.holderInstance) === undefined) return 'none';
  return row !== undefined && vouchesFor(row.process, lease.holderInstance) ? 'vouched' : 'unvouched';
}

/**
 * When a held term whose row was deleted (`deleted`: the row as it last stood, the lease stream's
 * old image) is over by its own stamp, as `vacancy` judges a row that stands: the first moment past
 * renewTime + its lease duration + `skewMs`. Only for a term that sessionStanding calls 'none' by
 * `session`, the row it named as read (consistently) after the delete: on no session, or naming one
 * that cannot hold it (none there, or another process's, its holder on none). Such a holder renews
 * the lease row itself, each renewal conditioned on the row as it left it, so the delete only makes
 * its renewals fail, and the old image carries the last that landed: it stops as it would with the
 * row standing unrenewed. So too a holder whose instance names a process (a Session's elector) on a
 * row that named no session: its elector counts a session's renewals only for a term whose row it
 * wrote naming that session (decideLeader 'sessionRenewed'), a write the old image would show, and
 * every later write of the row fails from the delete on; the tick judges the standing row by its
 * own stamp too (sessionStanding 'none'). Undefined: no stamp, a holder whose instance names a
 * process on a row that named a session (its term may live on its own session, whatever row the
 * lease named: deletedSessionTermOverAt), or a term that may live on the named session (its holder
 * hears of the delete only from the mark or its own read: a lease duration from then).
 */
export function deletedTermOverAt(deleted: Pick<Lease, 'session' | 'holderIdentity' | 'holderInstance' | 'leaseDurationSeconds'> & { readonly renewTime?: number | undefined }, session: SessionStamp | undefined, skewMs: number): number | undefined {
  if (deleted.renewTime === undefined || (deleted.session !== undefined && processOf(deleted.holderInstance) !== undefined) || sessionStanding(deleted, session) !== 'none') return undefined;
  return deleted.renewTime + deleted.leaseDurationSeconds * 1000 + skewMs + 1;
}

/** A held row's term as its delete left it (the lease stream's old image): what deletedSessionTermOverAt judges. */
export type DeletedTerm = Pick<Lease, 'name' | 'session' | 'holderIdentity' | 'holderInstance' | 'leaseDurationSeconds'> & {
  readonly renewTime?: number | undefined;
  readonly fencingToken?: number | undefined;
  readonly termToken?: number | undefined;
};

/**
 * Whether a session row's marks (`endedTerms`, as read) end the term `term` shows for its elector,
 * which stops at a mark of its lease no lower than the token it leads with (decideLeader
 * 'sessionRenewed'): that is the term's `termToken` (its fencing token where there is none), which
 * a move of the row's fencing token leaves as it was, so a mark must reach both.
 */
export function marksTermEnded(endedTerms: Readonly<Record<string, number>> | undefined, term: Pick<Lease, 'name'> & TermNames): boolean {
  const ended = endedTerms?.[term.name];
  return ended !== undefined && term.fencingToken !== undefined && ended >= Math.max(term.fencingToken, term.termToken ?? term.fencingToken);
}

/**
 * When a held term whose row was deleted, its holder's instance naming a process (a Session's
 * elector, whose term may live on its session), is over by that process's session rows: `judged`,
 * judgingRow of the deleted row over rows read consistently after the lease stream saw the delete,
 * all of them sent at or after `readAt` (the function's clock); `endMarked`, whether the named row
 * as read shows this term's end (marksTermEnded).
 * The first moment past the later of the row's own stamp and the session's, plus the lease duration
 * and `skewMs` (as `vacancy` judges the standing row, effectiveLease), but only where no write its
 * process may still make can renew the term:
 * - the judging row names the term as left (`leftTerms`, leftStamp): its elector stopped, and no
 *   later renewal of any row of its process vouches for it past the stamp it was left at;
 * - the session's stamp was over already when the reads were sent (renewTime + lease duration +
 *   `skewMs` < `readAt`): its electors stopped at their renew deadline after that stamp, and a
 *   renewal answered later extends nothing (lib/sdk/session.ts);
 * - its end is marked on the named row, which is its own process's (judged by it, not off it): the
 *   elector's term is renewed only by renewals of the session its lease named (decideLeader
 *   'sessionRenewed'), each answered with the row as it is, marks included, so one answered after
 *   the mark stops it (a mark leaves the revision alone: no renewal in flight misses it); those
 *   answered before landed before the mark, before the read, so the stamp read covers them.
 * Undefined (the whole hold): no stamp, a holder on no process, no session row judged (the lease
 * named none), or a session that may still renew the term. A lease row renewed itself since (its
 * session down) is covered by the deleted row's own stamp: each such renewal is conditioned on the
 * row as it left it, and fails from the delete on.
 */
export function deletedSessionTermOverAt(deleted: DeletedTerm, judged: JudgingRow<unknown> | undefined, endMarked: boolean, readAt: number, skewMs: number): number | undefined {
  if (deleted.renewTime === undefined || deleted.holderIdentity === undefined || processOf(deleted.holderInstance) === undefined || judged?.row === undefined) return undefined;
  const span = deleted.leaseDurationSeconds * 1000 + skewMs + 1;
  const ownOver = deleted.renewTime + span;
  const left = leftStamp(deleted, judged.row);
  if (left !== undefined) return Math.max(ownOver, left + span);
  const sessionOver = judged.row.renewTime + span;
  // over as of the reads' sending, or marked on its own session's row (a row judged off the named one never carries its mark)
  const final = sessionOver <= readAt || (endMarked && judged.own === undefined);
  return final ? Math.max(ownOver, sessionOver) : undefined;
}

/**
 * The lease as the coordinator (or the CLI) judges it at `now`: a lease held on a session that
 * vouches for it has `renewTime` the later of its own and the session's; one on a session that does
 * not (sessionStanding) is alive as of `now` — the coordinator has no memory to time a fallback by,
 * so it leaves such a term to its holder's own read and to its followers' vacancy report; any other
 * lease as it is. A coordinator judging at `now` from a session read it sent at `readAt` passes the
 * session's stamp moved forward by `now − readAt` (sessionStampAt): a renewal that landed since the
 * read could otherwise be missed, and only a read sent no earlier than the moment judged proves the
 * holder has stopped.
 */
export function effectiveLease(lease: Lease, session: SessionStamp | undefined, now: number): Lease;
export function effectiveLease(lease: Lease | undefined, session: SessionStamp | undefined, now: number): Lease | undefined;
export function effectiveLease(lease: Lease | undefined, session: SessionStamp | undefined, now: number): Lease | undefined {
  switch (sessionStanding(lease, session)) {
    case 'none':
      return lease;
    case 'vouched':
      return renewedBySession(lease!, session!);
    case 'unvouched':
      return renewedBy(lease!, now);
  }
}

/** A session row's fields a term held on it is judged by (IdentityLeaseItem), under the name its lease gives it. */
export interface SessionRowStamp {
  readonly name: string;
  readonly renewTime: number;
  readonly process?: string | undefined;
  readonly leftTerms?: Readonly<Record<string, LeftTerm>> | undefined;
}

/** A session row as read, with the partition it was read from (IdentityLeaseItem.component). */
export interface SessionRowRead extends SessionRowStamp {
  readonly component: string;
}

/**
 * Whether a held term is judged by a row other than the one its lease names (`named`, as read;
 * undefined: gone): its holder's instance names a process, and `named` is not that process's
 * (IdentityLeaseItem.process): a peer of the same lease rewrote `session`, or the row was deleted.
 */
export function judgedOffNamed(lease: Pick<Lease, 'session' | 'holderIdentity' | 'holderInstance'>, named: { readonly process?: string | undefined } | undefined): boolean {
  return lease.session !== undefined && lease.holderIdentity !== undefined && processOf(lease.holderInstance) !== undefined && !vouchesFor(named?.process, lease.holderInstance);
}

/** The row a term held on a session is judged by (judgingRow). */
export interface JudgingRow<R> {
  /** What to judge the term by (sessionStampAt, then effectiveLease), under the name the lease gives its session; undefined: the row named is gone (a holder on no session: the lease's own stamp). */
  readonly row: SessionRowStamp | undefined;
  /**
   * Present when judged off the row named (judgedOffNamed): its holder's own process's freshest
   * session row, or null: none of that process is left, so the lease's own stamp decides.
   */
  readonly own?: R | null;
}

/**
 * The row a held term is judged by, from session rows read after its lease, as a pass over every
 * session row (the coordinator's tick, lib/coordinator/reconcile.ts; the CLI) judges it: the row its
 * lease names (`named`; undefined: gone), where judgedOffNamed says it stands for the holder; else
 * its holder's own process's freshest session row (IdentityLeaseItem.process) among `rowsOf(process)`
 * in the partitions that process keeps its sessions in (processSessionComponents): the session it
 * renews, which names the terms its stopped electors left (leftTerms: judged by the stamp each was
 * left at, renewedBySession); else, with none of that process left, a stamp of 0, so the lease's
 * own stamp decides. Undefined: the lease is not held on a session.
 */
export function judgingRow<R extends SessionRowRead>(lease: Pick<Lease, 'session' | 'holderIdentity' | 'holderInstance'> | undefined, named: R | undefined, rowsOf: (process: string) => Iterable<R>): JudgingRow<R> | undefined {
  if (lease?.session === undefined || lease.holderIdentity === undefined) return undefined;
  if (!judgedOffNamed(lease, named)) return { row: named };
  const process = processOf(lease.holderInstance)!;
  const components = processSessionComponents(lease.session, process);
  let own: R | undefined;
  // a row naming the process in another grant's partition (or under another partition's name) is not its own
  for (const r of rowsOf(process)) if (r.process === process && components.includes(r.component) && sessionKey(r.name).component === r.component && (own === undefined || r.renewTime > own.renewTime)) own = r;
  // judged as on the holder's own session: its stamp and the terms it left, or none (0: the lease's own stamp decides)
  return { row: { name: lease.session, renewTime: own?.renewTime ?? 0, process, ...(own?.leftTerms ? { leftTerms: own.leftTerms } : {}) }, own: own ?? null };
}

/** `lease` with `renewTime` at least `at` (the later of its own stamp and its session's). */
export function renewedBy(lease: Lease, at: number): Lease {
  return at > (lease.renewTime ?? 0) ? { ...lease, renewTime: at } : lease;
}

/** When the holder's term ends by its own stamp: renewTime + leaseDurationSeconds (of the effective lease, for one held on a session). */
export function leaseExpiresAt(lease: Lease): number | undefined {
  return lease.renewTime === undefined ? undefined : lease.renewTime + lease.leaseDurationSeconds * 1000;
}

/**
 * A server-side judgement of vacancy. It compares another machine's stamp with our clock, so the
 * lease counts as expired only `skewMs` after its term ends (and, like Kubernetes, not at the
 * very end of it). A worker's vacancy report needs no margin: the report's write was conditioned
 * on the revision the worker watched unchanged for a whole lease duration on its own clock, and
 * every renewal removes the report.
 */
export function vacancy(lease: Lease | undefined, now: number, skewMs: number): Vacancy {
  if (!lease) return { vacant: true, reason: 'noLease' };
  if (lease.holderIdentity === undefined) return { vacant: true, reason: 'noHolder' };
  if (lease.vacancyReport) return { vacant: true, reason: 'reported' };
  const expiresAt = leaseExpiresAt(lease);
  if (expiresAt === undefined || expiresAt + skewMs < now) return { vacant: true, reason: 'expired' };
  return { vacant: false, expiresAt };
}

/**
 * When a held lease should be judged again, though no trigger is due: its holder's stamp (of the
 * effective lease) is older than half its term, which a holder renewing on time never lets happen,
 * so the term may run out before the next tick (a minute in AWS). Then: the first moment `vacancy`
 * calls it expired. Undefined: vacant already, or renewed recently.
 */
export function recheckAt(lease: Lease | undefined, now: number, skewMs: number): number | undefined {
  const v = vacancy(lease, now, skewMs);
  if (v.vacant || lease?.renewTime === undefined) return undefined;
  return now - lease.renewTime > lease.leaseDurationSeconds * 500 ? v.expiresAt + skewMs + 1 : undefined;
}

/**
 * A candidate as its session shows it, as effectiveLease shows a lease: a row that names a session
 * (`session`) whose row is its own process's (the session row's `process` is the one its
 * `identity` names) has renewTime the later of its own and the session's. Such a worker renews its
 * own row rarely (lib/sdk/candidate.ts); its process renews the session every few seconds while it
 * lives. `row`: the session row the candidate names, as read (undefined: gone, or not read).
 */
export function vouchedCandidate(c: Candidate, row: Pick<IdentityLease, 'name' | 'renewTime' | 'process'> | undefined): Candidate {
  if (c.session === undefined || row === undefined || row.name !== c.session || row.renewTime <= c.renewTime) return c;
  return row.process !== undefined && row.process === processOf(c.identity) ? { ...c, renewTime: row.renewTime } : c;
}

/**
 * Whether `renewTime` is later than any writer stamps, judged at `now`: more than a day (the longest
 * lease, and far past any clock's error) and `skewMs` ahead. Read as written, such a stamp keeps its
 * row for ever: a candidate's counts stale (isCandidateStale), an identity row's is timed as one
 * that does not parse (lib/coordinator/identity-scan.ts).
 */
export const stampCannotBe = (renewTime: number, now: number, skewMs: number): boolean => renewTime > now + MAX_IDENTITY_LEASE_SECONDS * 1000 + skewMs;

/**
 * A candidate not renewed for `staleAfterMs` no longer counts, and is collected (Kubernetes: 30 min);
 * nor does one whose stamp cannot be (stampCannotBe): a renewTime in the year 9999, valid, never went
 * stale, so a dead worker's row so stamped counted live for ever (pinged as one, and never collected).
 */
export function isCandidateStale(c: Pick<Candidate, 'renewTime'>, now: number, staleAfterMs: number): boolean {
  return c.renewTime + staleAfterMs < now || stampCannotBe(c.renewTime, now, 0);
}

export function liveCandidates(candidates: readonly Candidate[], now: number, staleAfterMs: number): Candidate[] {
  return candidates.filter((c) => !isCandidateStale(c, now, staleAfterMs));
}

/** An identity lease is collected only `graceMs` after it expired: late rather than early. */
export function isIdentityExpired(i: Pick<IdentityLease, 'renewTime' | 'leaseDurationSeconds'>, now: number, graceMs: number): boolean {
  return i.renewTime + i.leaseDurationSeconds * 1000 + graceMs < now;
}

/**
 * The holder whose term ended before the current one (`lastHolderIdentity`) and whose candidate row
 * has not been renewed since the current term began (`since`): its process most likely died with
 * its term — it stopped renewing — yet its row, often the oldest, still ranks first. It is passed
 * over for preemption and succession until its row shows life (a renewal, an acknowledged ping),
 * so a failover is not followed by an ack window spent re-electing a dead worker before anyone is
 * named to take over.
 */
export function isDeparted(c: Candidate, lease: Lease | undefined, since = lease?.acquireTime): boolean {
  return lease?.lastHolderIdentity === c.name && since !== undefined && c.renewTime < since && (c.ackedPingTime ?? 0) < since;
}

/**
 * With the push path live, followers of a lease held on a session read it every this many lease
 * durations (lib/sdk/step.ts): the point of a session is a fleet of many leases per process,
 * where these backstop reads are most of what a quiet lease costs. Its holder reads it as rarely, or
 * sooner (LeaderElector's holder backstop); a request to yield (preferredHolder) may wait that long
 * for a holder whose wake was lost, which `conclave release` waits out.
 */
export const SESSION_QUIET_LEASES = 4;

/**
 * Whether the successors the lease names stand: not while it is set to a strategy Conclave does not
 * run (by an operator or a third party), whose choice a name left from before is not (the
 * coordinator clears them: lib/election/successor.ts).
 */
export const successionStands = (lease: Lease | undefined): boolean => lease?.strategy === undefined || lease.strategy === OLDEST_EMULATION_VERSION;

/** Whether this start-up is the lease's successor, as its SDK judges it (lib/sdk/step.ts) and the CLI foresees it (never while the lease prefers somebody else, nor while its succession does not stand). */
export function isSuccessor(lease: Lease | undefined, identity: string, instance: string): boolean {
  return (
    lease?.successor === identity &&
    (lease.successorInstance === undefined || lease.successorInstance === instance) &&
    (lease.preferredHolder === undefined || lease.preferredHolder === identity) &&
    successionStands(lease)
  );
}

/** Whether this start-up is the lease's second successor (not while another is preferred, nor when it is also the successor). */
export function isSecondSuccessor(lease: Lease | undefined, identity: string, instance: string): boolean {
  return (
    lease?.secondSuccessor === identity &&
    (lease.secondSuccessorInstance === undefined || lease.secondSuccessorInstance === instance) &&
    (lease.preferredHolder === undefined || lease.preferredHolder === identity) &&
    successionStands(lease) &&
    !isSuccessor(lease, identity, instance)
  );
}
