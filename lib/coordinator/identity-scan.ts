/**
 * What a pass of the tick keeps of its scan of the identities table (lib/coordinator/reconcile.ts).
 *
 * The scan reads every row (a session a lease names may be in any partition), but a worker may
 * write any number of rows in its own session partition (or a component's), each up to DynamoDB's
 * 400 KB with valid labels and leftTerms (attacker review, 2026-12-07: some 3,000 such rows held
 * whole ran the 512 MB coordinator out of memory at every invocation, and no lease was reconciled).
 * So a pass keeps, in memory bounded by its own leases and candidates and by the caps below, only:
 * - the session rows its leases and candidates name, and the freshest row of each partition of each
 *   process holding one of its terms (judgingRow's rows), each as `kept`: no labels, no marks, of
 *   leftTerms only the entries naming a term it judges (leftStamp);
 * - with `collect` (a whole pass, a round's end), the rows expired by their stamps (at most
 *   MAX_EXPIRED_IDENTITIES: the rest are collected by a later pass, late rather than early);
 * - of a row the schema refuses: its key and reason (told: the first MAX_REFUSED_IDENTITIES, and
 *   any a lease or candidate names), its name where a lease or candidate names it (judged by nobody), at most one of each partition and
 *   process where it may be a held term's holder's own session (refusedOwn), and, to time or
 *   collect it (the first MAX_REFUSED_IDENTITIES and those a lease or candidate names), its digest
 *   and the few attributes the timing reads (RefusedRow): the row is read again, whole, to write
 *   against it.
 * A row none of this needs costs its scan and no memory.
 *
 * A `renewTime` further ahead of the tick's clock than a day and clockSkewMs is no time any writer
 * stamps (a Session stamps DynamoDB's time; no lease is longer than a day), and would keep its row
 * for ever (stampCannotBe): such a row is timed as one whose stamp does not parse, from the tick's
 * first sighting, and deleted once unchanged for the longest lease that may be held on it and
 * clockSkewMs (refused-session.ts), never collected by that stamp. Not collected as expired at once: a
 * peer of the same grant may stamp an honest process's row so, and that process's electors lead until
 * their renew deadline after its last renewal, which the row deleted at once would hide from the next
 * pass. Until then it is judged by as written: its stamp only keeps alive what it names.
 */
import type { Clock } from '../clock.js';
import { isIdentityExpired, namesTerm, stampCannotBe } from '../election/vacancy.js';
import { electionConfig, type ElectionConfig } from '../schemas/config.js';
import { IdentityStamp, isSessionComponent, processOf, processSessionComponents, sessionKey, type IdentityLease } from '../schemas/identity.js';
import type { Lease } from '../schemas/lease.js';
import type { IdentityStore } from '../stores/identity-store.js';
import type { InvalidItem } from '../stores/item-store.js';
import { RefusedSummary } from './refused-session.js';

/** Refused identity rows a pass tells, times and collects: the first this many it scans (a row a lease names is judged by nobody whatever its place). */
export const MAX_REFUSED_IDENTITIES = 1_000;
/** Rows expired by their stamps a pass keeps to collect: the first this many it scans (the rest wait for a later pass). */
export const MAX_EXPIRED_IDENTITIES = 10_000;

/** What a pass judges and collects by, known before its identity scan. */
export interface IdentityNeeds {
  /** The leases it judges (those held: their sessions, their holders' processes' rows, the terms those rows name as left). */
  readonly leases?: ReadonlyMap<string, Lease | undefined>;
  /** Other sessions it judges by: its candidates' (undefined: none). */
  readonly sessions?: Iterable<string | undefined>;
  /** Keep the rows it may collect or time: expired rows, refused ones (a whole pass, a round's end). */
  readonly collect?: boolean;
}

/** A session row the schema refuses, as kept: what was refused, and of the row what mayBeProcessSession reads (refusedFacts). `more`: others of its partition and process were not kept. */
export interface RefusedRead {
  invalid: InvalidItem;
  row: Record<string, unknown>;
  more?: true;
}

/** An identity row the tick times (a session row the schema refuses; any row whose stamp does not parse, or cannot be true): its key, what its timing reads of it, its summary. */
export interface RefusedRow {
  key: { component: string; name: string };
  facts: Record<string, unknown>;
  summary: RefusedSummary;
  /** Its renewTime or leaseDurationSeconds does not parse, or cannot be true (IdentityStamp, stampCannotBe): never collected by them. */
  unstamped: boolean;
}

/** A refused identity row whose stamp reads, expired by it at the scan: read again to collect (collectGarbage). */
export interface RefusedIdentity {
  key: { component: string; name: string };
  stamp: IdentityStamp;
}

export interface IdentityScan {
  /** When the scan was sent (this clock). */
  readAt: number;
  /** The rows kept (`kept`): those the pass's leases and candidates name, their holders' processes' freshest, with `collect` those expired. */
  identities: IdentityLease[];
  /** Refused session rows a lease or candidate names: a term on one is judged by nobody. */
  badSessions: Set<string>;
  /** Refused session rows that may be a held term's holder's own session: one of each partition and process. */
  refusedReads: RefusedRead[];
  /** With `collect`, the rows to time. */
  refusedRows: RefusedRow[];
  /** With `collect`, refused rows expired by their stamps. */
  refusedIdentities: RefusedIdentity[];
  /** The refused rows told: the first MAX_REFUSED_IDENTITIES, and those a lease or candidate names. */
  invalid: InvalidItem[];
}

/** The stamp a refused row (as stored) is collected by at `now`, where it reads and can be true. */
export function stampOf(row: Record<string, unknown>, now: number, skewMs: number): IdentityStamp | undefined {
  const stamp = IdentityStamp.safeParse(row).data;
  return stamp && !stampCannotBe(stamp.renewTime, now, skewMs) ? stamp : undefined;
}

/** Of a row as stored, what mayBeProcessSession and heldOnRefusedMs read: a `process` no process can be (over an instance's 512 characters) cut to 513, one not a string as null. */
function refusedFacts(row: Record<string, unknown>): Record<string, unknown> {
  const p = row['process'];
  const d = row['leaseDurationSeconds'];
  return { component: row['component'], name: row['name'], ...(p === undefined ? {} : { process: typeof p === 'string' ? p.slice(0, 513) : null }), ...(typeof d === 'number' ? { leaseDurationSeconds: d } : {}) };
}

/**
 * How far from DynamoDB's time the SDK may stamp a heartbeat's or a session's row: it stamps one only
 * while it knows that time within the default clockSkewMs (lib/sdk/server-clock.ts' stampNow),
 * whatever clockSkewMs this coordinator is configured with.
 */
const ROW_STAMP_ERROR_MS = electionConfig().clockSkewMs;

/**
 * What an identity row is allowed past its renewTime and leaseDurationSeconds before it is collected:
 * identityGcGraceMs, and the larger of clockSkewMs and the stamp's own error (ROW_STAMP_ERROR_MS), so
 * that a clockSkewMs set below that error never collects a row its writer still counts live.
 */
export const identityGraceMs = (config: ElectionConfig): number => config.identityGcGraceMs + Math.max(config.clockSkewMs, ROW_STAMP_ERROR_MS);

/**
 * Scans every identity row, keeping what `needs` calls for (see the module's comment). Undefined
 * when `stop()` before the scan's end.
 */
export async function scanIdentities(deps: { identities: IdentityStore; clock: Clock; config: ElectionConfig }, needs: IdentityNeeds, stop: () => boolean): Promise<IdentityScan | undefined> {
  const readAt = deps.clock.now();
  const skewMs = deps.config.clockSkewMs;
  const graceMs = identityGraceMs(deps.config);
  const leases = needs.leases ?? new Map<string, Lease | undefined>();
  const named = new Set<string | undefined>(needs.sessions);
  // each held term's holder's process with each partition it keeps its sessions in (processSessionComponents), and those partitions
  const own = new Set<string>();
  const owned = new Set<string>();
  for (const l of leases.values()) {
    if (l?.holderIdentity === undefined || l.session === undefined) continue;
    named.add(l.session);
    const p = processOf(l.holderInstance);
    for (const c of p === undefined ? [] : processSessionComponents(l.session, p)) {
      owned.add(c);
      own.add(JSON.stringify([c, p]));
    }
  }
  const out: IdentityScan = { readAt, identities: [], badSessions: new Set(), refusedReads: [], refusedRows: [], refusedIdentities: [], invalid: [] };
  const freshest = new Map<string, IdentityLease>();
  const refusedOwn = new Map<string, RefusedRead>();
  let refused = 0;
  let expired = 0;
  // a row as kept: without its maps (what else the schema holds is a few short fields), but the left terms of terms it judges
  const kept = ({ labels: _l, endedTerms: _e, endedTermStamps: _s, leftTerms, ...rest }: IdentityLease): IdentityLease => {
    const left = Object.entries(leftTerms ?? {}).filter(([n, t]) => namesTerm(leases.get(n), t));
    return left.length ? { ...rest, leftTerms: Object.fromEntries(left) } : rest;
  };
  for await (const page of deps.identities.scan()) {
    if (stop()) return undefined;
    for (const s of page) {
      const component = String(s.row['component']);
      const name = String(s.row['name']);
      const key = { component, name };
      const session = isSessionComponent(component);
      const mine = session && sessionKey(name).component === component;
      // its partition and process (one not a string as 0): whose own session it may be
      const p = s.row['process'];
      const k = JSON.stringify([component, typeof p === 'string' ? p : 0]);
      const cannotBe = s.ok && stampCannotBe(s.item.renewTime, readAt, skewMs);
      // told, timed and collected: the first rows refused or stamped so (and those a lease or candidate names, timed)
      const first = (!s.ok || cannotBe) && refused++ < MAX_REFUSED_IDENTITIES;
      // timed (refused-session.ts): a session row the schema refuses, which terms may be held on; any row whose stamp does not read, or cannot be true
      const time = (stamped: boolean) => needs.collect && (first || (session && named.has(name))) && out.refusedRows.push({ key, facts: refusedFacts(s.row), summary: new RefusedSummary(s.row), unstamped: !stamped });
      if (s.ok) {
        const i = s.item;
        if (cannotBe) time(false);
        const collect = needs.collect && expired < MAX_EXPIRED_IDENTITIES && isIdentityExpired(i, readAt, graceMs);
        if (collect) expired++;
        if (collect || (mine && named.has(name))) out.identities.push(kept(i));
        else if (mine && own.has(k) && !((freshest.get(k)?.renewTime ?? -1) >= i.renewTime)) freshest.set(k, kept(i));
        continue;
      }
      // told: the first ones, and one a lease or candidate names (the terms on it are told as unjudged beside it)
      if (first || (session && named.has(name))) out.invalid.push(s.invalid);
      if (session && named.has(name)) out.badSessions.add(name);
      // one that may be the own session of a held term's holder (mayBeProcessSession): one of each partition and process kept
      if (mine && owned.has(component) && p !== undefined && (typeof p !== 'string' || own.has(k))) {
        const was = refusedOwn.get(k);
        if (was) was.more = true;
        else refusedOwn.set(k, { invalid: s.invalid, row: refusedFacts(s.row) });
      }
      const stamp = stampOf(s.row, readAt, skewMs);
      if (session || !stamp) time(stamp !== undefined);
      if (needs.collect && stamp && first && isIdentityExpired(stamp, readAt, graceMs)) out.refusedIdentities.push({ key, stamp });
    }
  }
  out.identities.push(...freshest.values());
  out.refusedReads.push(...refusedOwn.values());
  return out;
}
