import type { Candidate } from '../schemas/candidate.js';
import type { IdentityLease } from '../schemas/identity.js';
import type { Lease } from '../schemas/lease.js';

export type VacancyReason = 'noLease' | 'noHolder' | 'expired' | 'reported';
export type Vacancy = { vacant: false; expiresAt: number } | { vacant: true; reason: VacancyReason };

/** A session's last renewal as an observer knows it (lib/sdk/session.ts). */
export interface SessionStamp {
  /** The session row's name: what a lease held on it carries as `session`. */
  readonly name: string;
  /** Its renewTime: for a judgement made later than the read, moved forward by the read's age (see effectiveLease). */
  readonly renewTime: number;
}

/**
 * A session row read at `readAt`, as a stamp to judge by at `now` (a later moment): its renewTime
 * moved forward by the read's age, so judging at `now` is judging as of the moment the read was
 * sent — a renewal may have landed since, and only a read sent no earlier than the moment judged
 * proves the holder has stopped. Undefined when there was no row.
 */
export function sessionStampAt(row: { readonly name: string; readonly renewTime: number } | undefined, readAt: number, now: number): SessionStamp | undefined {
  return row ? { name: row.name, renewTime: row.renewTime + Math.max(0, now - readAt) } : undefined;
}

/**
 * The lease as observers judge it: a lease held on a session has `renewTime` the later of its own and
 * the session's; any other lease (or a session that is not the lease's, or is gone) as it is. A
 * coordinator judging at `now` from a session read it sent at `readAt` passes the session's stamp
 * moved forward by `now − readAt`: a renewal that landed since the read could otherwise be missed,
 * and only a read sent no earlier than the moment judged proves the holder has stopped.
 */
export function effectiveLease(lease: Lease, session: SessionStamp | undefined): Lease;
export function effectiveLease(lease: Lease | undefined, session: SessionStamp | undefined): Lease | undefined;
export function effectiveLease(lease: Lease | undefined, session: SessionStamp | undefined): Lease | undefined {
  if (!lease?.session || !session || session.name !== lease.session || lease.holderIdentity === undefined) return lease;
  const renewTime = Math.max(lease.renewTime ?? 0, session.renewTime);
  return renewTime === lease.renewTime ? lease : { ...lease, renewTime };
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

/** A candidate not renewed for `staleAfterMs` no longer counts, and is collected (Kubernetes: 30 min). */
export function isCandidateStale(c: Candidate, now: number, staleAfterMs: number): boolean {
  return c.renewTime + staleAfterMs < now;
}

export function liveCandidates(candidates: readonly Candidate[], now: number, staleAfterMs: number): Candidate[] {
  return candidates.filter((c) => !isCandidateStale(c, now, staleAfterMs));
}

/** An identity lease is collected only `graceMs` after it expired: late rather than early. */
export function isIdentityExpired(i: IdentityLease, now: number, graceMs: number): boolean {
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
 * durations (lib/sdk/follower.ts): the point of a session is a fleet of many leases per process,
 * where these backstop reads are most of what a quiet lease costs. Its holder reads it as rarely, or
 * sooner (LeaderElector's holder backstop); a request to yield (preferredHolder) may wait that long
 * for a holder whose wake was lost, which `conclave release` waits out.
 */
export const SESSION_QUIET_LEASES = 4;
