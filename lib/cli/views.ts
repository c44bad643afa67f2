/** What the tables' rows look like to an operator: one place for every column and field. */
import { answeredLastPing, ignoredLastPing } from '../election/decide.js';
import { locationOf, locationRank, locationText } from '../election/location.js';
import { effectivePriority } from '../election/ordering.js';
import type { Candidate } from '../schemas/candidate.js';
import type { ElectionConfig } from '../schemas/config.js';
import type { Lease } from '../schemas/lease.js';
import { termStrategy } from '../election/leader.js';
import { ago, dash, named, platformOf, relative, type Column } from './format.js';
import { vacancy } from '../election/vacancy.js';
import { expiresOf, judgedLease, renewedOf, seenIn, type SessionSeen, type SessionsSeen } from './judged.js';
import type { FieldIssue } from '../schemas/validation.js';

/** The names a lease row gives besides its candidates' (holder, successors, preferred and last holder): compared with theirs where shown (format.ts named). */
export const leaseNames = (lease: Lease | undefined): string[] =>
  [lease?.holderIdentity, lease?.successor, lease?.secondSuccessor, lease?.preferredHolder, lease?.lastHolderIdentity].filter((n): n is string => n !== undefined);

/**
 * The names only `describe` shows of a lease row, beside leaseNames: who lost it last (holderLoss),
 * the holder an open re-election keeps, who reported it vacant, who ran its newest run-once window.
 * Compared with the candidates' there (describe.ts), not in namesOf: the writes' lines (set-priority,
 * preempt, release, set-locations) never show them, so a candidate there would be escaped for a
 * look-alike the operator is not shown, and their look-alike warning compares with the candidates
 * and the holder only (priority.ts), which these do not change.
 */
export const pastNames = (lease: Lease | undefined): string[] =>
  [lease?.holderLoss?.holder, lease?.election?.holder, lease?.vacancyReport?.by, lease?.runs?.[0]?.holder].filter((n): n is string => n !== undefined);

/** A lease's candidates' names and the names its row gives: those compared with one another where shown (namerOf, a change table's values). */
export const namesOf = (lease: Lease | undefined, candidates: readonly Pick<Candidate, 'name'>[]): string[] => [...candidates.map((c) => c.name), ...leaseNames(lease)];

/** Shows a lease's names and its candidates' in a line, each escaped where it passes for another of them (describe, and the writes' "next step"). */
export const namerOf = (lease: Lease | undefined, candidates: readonly Pick<Candidate, 'name'>[]) => named(namesOf(lease, candidates));

export type Namer = ReturnType<typeof namerOf>;

/** The strategy in force: an operator's (sticky), else the one the term began under (termStrategy: none for a term a worker took itself). */
export function strategyOf(l: Lease): string {
  if (l.strategy) return `${l.strategy} (operator)`;
  return dash(termStrategy(l));
}

/** The open election, else the last failure, else `-`. */
export function electionOf(l: Lease, now: number): string {
  if (l.election) {
    const e = l.election;
    return `${e.id} ${e.holder ? 're-election' : 'open'}, acks ${now < e.deadline ? `until ${relative(e.deadline, now)}` : `closed ${relative(e.deadline, now)}`}`;
  }
  if (l.lastElectionFailure) return `failed ${relative(l.lastElectionFailure.at, now)} (${l.lastElectionFailure.reason})`;
  return '-';
}

/**
 * The HOLDER column: the holder of a term that lives, as judged (judgedLease, vacancy: the
 * coordinator's and `leader`'s judgement); a term over shows whose it was and why (`- (was a:
 * expired)`, `- (was a: reported)`: the row still names it); no holder, the last one (`- (was w1)`).
 */
export function holderOf(l: Lease, seen: SessionSeen | undefined, now: number, config: Pick<ElectionConfig, 'clockSkewMs'>): string {
  if (l.holderIdentity) {
    const v = vacancy(judgedLease(l, seen, now), now, config.clockSkewMs);
    return v.vacant && v.reason !== 'noHolder' && v.reason !== 'noLease' ? `- (was ${l.holderIdentity}: ${v.reason})` : l.holderIdentity;
  }
  return l.lastHolderIdentity ? `- (was ${l.lastHolderIdentity})` : '-';
}

/**
 * A lease row the schema refuses, as a listing shows it (`get leases`, `watch`): its name, what was
 * refused, and the format of readers it asks for where it was written for a newer Conclave
 * (`minReader`). The coordinator decides nothing on it; `describe lease` shows it whole.
 */
export interface RefusedLease {
  readonly name: string;
  readonly issues: readonly FieldIssue[];
  /** The row's minReader, where the row was refused for it alone: written for a newer Conclave. */
  readonly minReader?: unknown;
}

/** A lease row the schema refuses, as a listing's line shows it: its name, why, and where it is shown whole. */
export function refusedLeaseLine(r: RefusedLease): string {
  const why = r.minReader !== undefined ? `minReader ${String(r.minReader)}: written for a newer Conclave` : r.issues.map((i) => `${i.field}: ${i.message}`).join('; ');
  return `${r.name}: row refused (${why}): \`conclave describe lease ${r.name}\` shows ${r.minReader !== undefined ? 'what to do' : 'the repair'}`;
}

/** The leases table; a lease held on a session is judged with its session's row from `sessions`. */
export function leaseColumns(now: number, sessions: SessionsSeen, config: Pick<ElectionConfig, 'clockSkewMs'>): Column<Lease>[] {
  return [
    { header: 'NAME', cell: (l) => l.name },
    { header: 'HOLDER', cell: (l) => holderOf(l, seenIn(sessions, l), now, config) },
    { header: 'TOKEN', cell: (l) => String(l.fencingToken) },
    { header: 'STRATEGY', cell: strategyOf },
    { header: 'ELECTION', cell: (l) => electionOf(l, now) },
    { header: 'PREFERRED', cell: (l) => dash(l.preferredHolder) },
    { header: 'RENEWED', cell: (l) => renewedOf(l, seenIn(sessions, l), now) },
    { header: 'EXPIRES', cell: (l) => expiresOf(l, seenIn(sessions, l), now) },
  ];
}

/** `5`, `5 (expires in 9m)`, `5 (expired 1m ago, counts as none)`, `-`. */
export function priorityOf(c: Candidate, now: number): string {
  if (c.priority === undefined) return '-';
  if (c.priorityExpiresAt === undefined) return String(c.priority);
  return effectivePriority(c, now) === 0 ? `${c.priority} (expired ${relative(c.priorityExpiresAt, now)}, counts as none)` : `${c.priority} (expires ${relative(c.priorityExpiresAt, now)})`;
}

/** Whether the candidate answered the coordinator's last ping. */
export function pingOf(c: Candidate, now: number, config: ElectionConfig): string {
  if (c.pingTime === undefined) return '-';
  const pinged = `pinged ${relative(c.pingTime, now)}`;
  if (answeredLastPing(c)) return `acked (${pinged})`; // the coordinator's rule: ackedPingTime, else renewTime (a KEP-style row)
  if (ignoredLastPing(c, now, config.ackWindowMs)) return `ignored (${pinged})`;
  return `pending (${pinged})`;
}

/**
 * Where a candidate runs and its place in the lease's preference: `us-east-1a`, `us-east-1a
 * (preferred #1)`, `eu-west-1a (not preferred)`, `- (unknown: not preferred)`.
 */
export function placeOf(c: Candidate, preferred: readonly string[]): string {
  const where = locationText(locationOf(c));
  if (preferred.length === 0) return where;
  const i = locationRank(c, preferred);
  if (i < preferred.length) return `${where} (preferred #${i + 1})`;
  return where === '-' ? '- (unknown: not preferred)' : `${where} (not preferred)`;
}

/** The preference in force on a lease, in words: the lease's own, the coordinator's, or none. */
export function preferenceOf(l: Pick<Lease, 'name' | 'preferredLocations'> | undefined, config: ElectionConfig, name = l?.name ?? 'NAME'): string {
  if (l?.preferredLocations) {
    const list = l.preferredLocations.length ? l.preferredLocations.join(', ') : 'none';
    return `${list} (set on the lease by an operator; \`conclave set-locations ${name} --clear\` returns to the coordinator's)`;
  }
  return config.preferredLocations.length ? `${config.preferredLocations.join(', ')} (the coordinator's preferredLocations)` : 'none';
}

export function candidateColumns(now: number, config: ElectionConfig): Column<Candidate>[] {
  return [
    { header: 'NAME', cell: (c) => c.name },
    { header: 'LEASE', cell: (c) => c.leaseName },
    { header: 'EMULATION', cell: (c) => c.emulationVersion },
    { header: 'BINARY', cell: (c) => c.binaryVersion },
    { header: 'PRIORITY', cell: (c) => priorityOf(c, now) },
    { header: 'STRATEGIES', cell: (c) => c.preferredStrategies.join(',') },
    { header: 'RENEWED', cell: (c) => ago(c.renewTime, now) },
    { header: 'PING/ACK', cell: (c) => pingOf(c, now, config) },
    { header: 'IDENTITY', cell: (c) => dash(c.identity) },
    { header: 'LOCATION', cell: (c) => locationText(locationOf(c)) },
    { header: 'PLATFORM', cell: (c) => platformOf(c.platform) },
  ];
}

export const byName = <T extends { name: string }>(a: T, b: T): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
