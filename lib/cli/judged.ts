/**
 * A lease as the coordinator judges it. One held on a session (lib/sdk/session.ts) lives until the
 * later of its own renewTime and its session row's, plus leaseDurationSeconds (effectiveLease): its
 * own stamp stays where the holder last wrote the lease itself. The CLI reads the session rows after
 * the leases (read.ts) and judges with them, as lib/coordinator/reconcile.ts does.
 */
import { effectiveLease, judgingRow, leaseExpiresAt, leftStamp, renewedBy, sessionStampAt, sessionStanding, vacancy, type JudgingRow, type SessionStamp, type VacancyReason } from '../election/vacancy.js';
import type { RefusedDeletion, RefusedWaitOn } from '../coordinator/refused-session.js';
import type { ElectionConfig } from '../schemas/config.js';
import type { IdentityLease } from '../schemas/identity.js';
import type { Lease } from '../schemas/lease.js';
import type { FieldIssue } from '../schemas/validation.js';
import type { BrokenSessionError } from '../stores/errors.js';
import { ago, joined, relative, stamp, type Named, type named } from './format.js';

/**
 * A lease's session row as the CLI read it (`row` undefined: gone, or refused), and when (the CLI's
 * clock) the read was sent: either judged, as the coordinator's tick judges it (`judging`), or
 * refused by the schema (`refused`), judged by no one.
 */
export type SessionSeen = JudgedSession | RefusedSession;

interface SessionRead {
  readonly name: string;
  readonly row: IdentityLease | undefined;
  readonly readAt: number;
}

/** A session row the term is judged by. */
export interface JudgedSession extends SessionRead {
  readonly refused?: undefined;
  readonly deletion?: undefined;
  /**
   * The row the term is judged by, as the coordinator's tick judges it (vacancy.ts judgingRow): the
   * row named, or, where it does not stand for the holder, its holder's own process's session
   * (`own`; null: none left, the lease's own stamp decides).
   */
  readonly judging: JudgingRow<IdentityLease>;
}

/**
 * A session row that is there and that the schema refuses: no one judges the term by it (the
 * coordinator, getLeader), nor does the CLI. `name`: that row's, the one the lease names or, for a
 * term judged off it, one of its holder's process's that may be its own session (mayBeProcessSession).
 */
export interface RefusedSession extends SessionRead {
  readonly refused: BrokenSessionError;
  /** When the coordinator's tick will delete the row, as it stands (read for `describe` and `watch` only). */
  readonly deletion?: RefusedRowDeletion;
  readonly judging?: undefined;
}

/**
 * When the tick will delete a refused session row: timed by its sighting (refusedDeletion) for
 * `holdMs`, the longest lease held on it (`on` 'named'), or, no held lease naming it, the longest
 * of the held terms it may vouch for as their process's own session ('process') or, none, the
 * longest a lease may state ('any'); or, no held lease naming it and its stamp readable, never timed but collected
 * once expired by that stamp (`expires`: renewTime + leaseDurationSeconds + identityGcGraceMs +
 * clockSkewMs, `deleteAfter`), if no held lease or live candidate names it then.
 */
export type RefusedRowDeletion =
  | (RefusedDeletion & { readonly holdMs: number; readonly on: RefusedWaitOn })
  | { readonly kind: 'expires'; readonly renewTime: number; readonly leaseDurationSeconds: number; readonly deleteAfter: number };

/** The session rows a list command read (once, however many leases), and when the read was sent. */
export interface SessionsSeen {
  readonly rows: ReadonlyMap<string, IdentityLease>;
  readonly readAt: number;
  /** By lease: the term is held on a session row the schema refuses. */
  readonly refused: ReadonlyMap<string, BrokenSessionError>;
}

/** The coordinator's next step on a term held on a session row the schema refuses. */
export const UNJUDGED_STEP = 'none: the coordinator leaves the lease alone until the session row is rewritten valid or deleted';

/** The session a lease's term lives by: only while it has a holder, as effectiveLease has it. */
export const sessionOf = (l: Lease | undefined): string | undefined => (l?.holderIdentity !== undefined ? l.session : undefined);

/** A lease's session as a list command saw it; undefined when the lease is not held on one. */
export function seenIn(sessions: SessionsSeen, l: Lease): SessionSeen | undefined {
  const name = sessionOf(l);
  if (name === undefined) return undefined;
  const refused = sessions.refused.get(l.name);
  // (the row refused: the one named, or one of its holder's process's that may be its own session)
  if (refused) return { name: refused.term.session, row: sessions.rows.get(refused.term.session), readAt: sessions.readAt, refused };
  const row = sessions.rows.get(name);
  // the rows read include every partition of the holder's process where the row named does not stand for it (read.ts scanSessions);
  // held on a session (sessionOf), so judged by some row
  return { name, row, readAt: sessions.readAt, judging: judgingRow(l, row, () => sessions.rows.values())! };
}

/**
 * The session's stamp to judge by at `now`: its renewTime moved forward by the read's age, so judging
 * at `now` is judging at the moment the read was sent (a renewal may have landed since), as the
 * coordinator does. Without it, `release` could take a live session's term for one that ran out.
 */
export function stampAt(seen: SessionSeen | undefined, now: number): SessionStamp | undefined {
  return seen && sessionStampAt(seen.refused ? seen.row : seen.judging.row, seen.readAt, now);
}

/** The lease as the coordinator judges it at `now`: what vacancy() and decide() are given. */
export function judgedLease(lease: Lease, seen: SessionSeen | undefined, now: number): Lease;
export function judgedLease(lease: Lease | undefined, seen: SessionSeen | undefined, now: number): Lease | undefined;
export function judgedLease(lease: Lease | undefined, seen: SessionSeen | undefined, now: number): Lease | undefined {
  // judged by no one: held as of now, never ended by a row the CLI cannot read
  if (seen?.refused && lease?.holderIdentity !== undefined) return renewedBy(lease, now);
  return effectiveLease(lease, stampAt(seen, now), now);
}

/**
 * Whether the session a lease names vouches for its holder (sessionStanding): false when the row is
 * gone or is another process's. The term is then judged by its holder's own process's session
 * (SessionSeen.judging), as the coordinator's tick judges it.
 */
export function unvouched(l: Lease, seen: SessionSeen | undefined): boolean {
  return seen !== undefined && sessionStanding(l, seen.row && { name: seen.name, renewTime: seen.row.renewTime, process: seen.row.process }) === 'unvouched';
}

/**
 * The term's end cannot be foreseen: it is held on a session row the schema refuses, which no one
 * judges a term by. Any other term is judged by some row (SessionSeen.judging), one its named row
 * does not vouch for by its holder's own process's, as the coordinator's tick judges it.
 */
const unforeseen = (seen: SessionSeen | undefined): boolean => seen?.refused !== undefined;

/** The EXPIRES column: when the term ends as judged, `unknown` on a session row the schema refuses. */
export function expiresOf(l: Lease, seen: SessionSeen | undefined, now: number): string {
  if (l.holderIdentity === undefined) return '-';
  return unforeseen(seen) ? 'unknown' : relative(leaseExpiresAt(judgedLease(l, seen, now)), now);
}

/** describe's State line for a lease held on a session row the schema refuses (judged by no one); undefined otherwise. */
export function refusedState(l: Lease | undefined, seen: SessionSeen | undefined): string | undefined {
  return l && unforeseen(seen) ? 'unknown: held on a session row the schema refuses, which no one judges a term by (the coordinator, getLeader, followers)' : undefined;
}

/** What `-o json` adds to a lease item (as `judged`): the CLI's verdict, by the coordinator's rules. */
export interface Judged {
  /** When the CLI judged (its clock, epoch ms). */
  at: number;
  /** vacancy() of the lease as judged, with the clock skew margin of the config judged with. */
  vacant: boolean;
  /** Why it is vacant: noHolder, expired, reported. */
  reason?: VacancyReason;
  /**
   * When the holder's term ends (or ended): the later of its own and its session's renewal (for a
   * term its process left, the stamp it was left at), plus leaseDurationSeconds; on a session that
   * does not vouch for it, by its holder's own process's session, or its own stamp with none left,
   * as the coordinator's tick judges it. Absent on a session row the schema refuses.
   */
  expiresAt?: number;
  /**
   * A lease held on a session: the session's name, its row as read (null: gone or refused), and
   * whether it vouches for the holder (unvouched); `refused`: what the schema refused of the row,
   * and the command that deletes it (the term is then judged by nobody: not vacant, no end); from
   * `describe`, once the coordinator's tick has timed the row as it is, since when it has seen it
   * unchanged and after when it deletes it (its clock, epoch ms); for a row no held lease names
   * whose stamp reads, after when it deletes it as expired by that stamp (no `unchangedSince`).
   */
  session?: { name: string; row: IdentityLease | null; vouches: boolean; refused?: { issues: readonly FieldIssue[]; repair: string; unchangedSince?: number; deleteAfter?: number } };
}

export function judged(lease: Lease, seen: SessionSeen | undefined, now: number, config: ElectionConfig): Judged {
  const effective = judgedLease(lease, seen, now);
  const v = vacancy(effective, now, config.clockSkewMs);
  const vouches = !seen?.refused && !unvouched(lease, seen);
  const expiresAt = lease.holderIdentity === undefined || unforeseen(seen) ? undefined : leaseExpiresAt(effective);
  const d = seen?.deletion?.kind === 'timed' ? { unchangedSince: seen.deletion.seen.at, deleteAfter: seen.deletion.deleteAfter } : seen?.deletion?.kind === 'expires' ? { deleteAfter: seen.deletion.deleteAfter } : {};
  const refused = seen?.refused ? { refused: { issues: seen.refused.issues, repair: seen.refused.repair, ...d } } : {};
  return {
    at: now,
    vacant: v.vacant,
    ...(v.vacant ? { reason: v.reason } : {}),
    ...(expiresAt === undefined ? {} : { expiresAt }),
    ...(seen ? { session: { name: seen.name, row: seen.row ?? null, vouches, ...refused } } : {}),
  };
}

/** A lease for `-o json`: the item as stored, and what the CLI judged of it. */
export const withJudged = (lease: Lease, seen: SessionSeen | undefined, now: number, config: ElectionConfig): Lease & { judged: Judged } => ({
  ...lease,
  judged: judged(lease, seen, now, config),
});

/** The last renewal observers count: the lease's own, or its session's; for the leases table's RENEWED. */
export function renewedOf(l: Lease, seen: SessionSeen | undefined, now: number): string {
  if (!seen) return ago(l.renewTime, now);
  if (seen.refused) return `${ago(l.renewTime, now)} (session row refused)`;
  const counted = countedRenewal(l, seen);
  if (counted?.left) return `${ago(Math.max(l.renewTime ?? 0, counted.at), now)} (its process left the term)`;
  if (counted?.own !== undefined) return `${ago(Math.max(l.renewTime ?? 0, counted.at), now)} (its process's session)`;
  if (!seen.row) return `${ago(l.renewTime, now)} (session gone)`;
  if (!counted) return `${ago(l.renewTime, now)} (another process's session)`;
  return `${ago(Math.max(l.renewTime ?? 0, counted.at), now)} (session)`;
}

/**
 * The session renewal a term is judged by: the row named's, or its holder's own process's session's
 * (`own`: that row's name; SessionSeen.judging); for a term its process left (leftTerms), the stamp
 * it was left at (`left`). Undefined: judged by no session row (the row named gone, or none of its
 * holder's process left: the lease's own stamp).
 */
function countedRenewal(l: Lease, seen: JudgedSession): { at: number; left: boolean; own?: string } | undefined {
  const own = seen.judging.own;
  const row = own === undefined ? seen.row : own;
  if (!row) return undefined;
  const left = leftStamp(l, row);
  return { at: left ?? row.renewTime, left: left !== undefined, ...(own ? { own: own.name } : {}) };
}

/** The holder's last renewal as observers count it: `2s ago`, or `2s ago, through its session s-1` when the session's is the later. */
export function lastRenewal(l: Lease, seen: SessionSeen | undefined, now: number): string {
  const counted = seen && !seen.refused ? countedRenewal(l, seen) : undefined;
  if (!counted || counted.at <= (l.renewTime ?? 0)) return ago(l.renewTime, now);
  const session = counted.own ?? seen!.name;
  if (counted.left) return `${relative(counted.at, now)}, when its process left the term on its session ${session}`;
  return `${relative(counted.at, now)}, through its ${counted.own === undefined ? 'session' : "process's session"} ${session}`;
}

/** `describe lease`'s Session line; the holder it names escaped as `as` (describe's namer) escapes names. */
export function sessionLine(l: Lease, seen: SessionSeen | undefined, now: number, as: ReturnType<typeof named>): string | Named {
  if (!seen) return l.holderIdentity === undefined ? '-' : 'none: the holder renews the lease itself';
  const r = seen.row;
  if (seen.refused) return `held on session ${seen.name}, whose row does not match the schema: ${seen.refused.issues.map((i) => `${i.field}: ${i.message}`).join('; ')}`;
  const own = seen.judging?.own;
  const said = !r
    ? `held on session ${seen.name}, whose row is gone: it vouches for nothing (the lease's session was rewritten under its holder, or the row deleted)`
    : unvouched(l, seen) || own !== undefined
      ? as(`held on session ${seen.name}, of another process (${r.process ?? 'unnamed'}; host ${r.hostname}): it does not vouch for `, ...(l.holderIdentity === undefined ? ['its holder'] : [{ name: l.holderIdentity }]), "'s term (the lease's session was rewritten under its holder)")
      : `held on session ${seen.name}, last renewed ${relative(r.renewTime, now)} by the session (${new Date(r.renewTime).toISOString()}; host ${r.hostname}, process ${r.process ?? r.holderIdentity})${leftLine(l, r, now, '; it')}`;
  if (own === undefined) return said;
  if (own === null) return joined(said, `; no session of its holder's process ${seen.judging!.row!.process} is left, so the coordinator judges it by the lease's own stamp`);
  const by = joined(said, `; judged, as the coordinator judges it, by its holder's own process's session ${own.name} (process ${own.process})`);
  return joined(by, leftStamp(l, own) === undefined ? `, last renewed ${relative(own.renewTime, now)}` : leftLine(l, own, now, ', which'));
}

/** A session row's word on a term its process left to run out (leftTerms), after `lead`; nothing for any other term. */
function leftLine(l: Lease, row: IdentityLease, now: number, lead: string): string {
  const left = leftStamp(l, row);
  if (left === undefined) return '';
  return `${lead} names this term as left by its stopped elector ${relative(left, now)} (${new Date(left).toISOString()}): later renewals do not keep it`;
}

/** `describe lease`'s Renewed line: the lease's own stamp, which a session-held term does not move. */
export function renewedLine(l: Lease, seen: SessionSeen | undefined, now: number): string {
  const own = stamp(l.renewTime, now);
  return seen ? `${own} (the lease's own; the session's renewals keep the term)` : own;
}
