/**
 * The identities table's partitions that hold process sessions, and a session row's key: named
 * apart from the row's schema (identity.ts) so the construct's grant names them without loading
 * zod, and below the tables' declaration (lib/tables.ts), which the schemas must not import.
 */
import { createHash } from 'node:crypto';
import { base32 } from '../util/base32.js';

/**
 * The identities table's partition (KEP-1965's `component`) that holds process sessions
 * (lib/sdk/session.ts): one row per process start-up.
 */
export const SESSION_COMPONENT = 'conclave-session';

/**
 * The identities table's partition that holds the session rows of workers granted exactly the
 * leases `leaseNames` (grantWorker's `leaseNames`, in any order): `conclave-session:<scope>`, where
 * the scope is base32 of the first 128 bits (26 characters) of a SHA-256 of the sorted, distinct names. A grant
 * lets a worker write only its own scope's partition (`dynamodb:LeadingKeys`), so a worker can
 * create, renew and end only the session rows of processes granted the same leases. Without
 * `leaseNames` (a worker granted every lease): SESSION_COMPONENT, where an SDK before 0.2.0 wrote
 * every such session; a Session now writes them in one of 64 partitions, `conclave-session:all-<k>`
 * with k from a hash of its process id (allLeasesSessionComponent), and its rows' names start
 * `all-<k>:`, so every reader finds a row's partition from its name.
 */
export function sessionComponent(leaseNames?: readonly string[]): string {
  if (leaseNames === undefined) return SESSION_COMPONENT;
  return `${SESSION_COMPONENT}:${sessionScope(leaseNames)}`;
}

/**
 * How many partitions the session rows of workers granted every lease are spread over. In one
 * partition key, 1,000 processes × 100,000 leases would read it about 51,000 times a second
 * (consistent reads of the sessions their leases are held on) against a partition's 3,000 RCU;
 * over 64, about 800 each (docs/benchmarks.md, "The session partition").
 */
export const SESSION_SHARDS = 64;

/** The start of every shard's part of its partition name (`all-00` … `all-63`): never a scope, which is base32 and has no `-`. */
const SHARD_PREFIX = 'all-';

/**
 * The shard of the session rows of process `process` (Session.process) when it is granted every
 * lease: `all-<k>`, k (two digits) from the first byte of a SHA-256 of the process id, so a process
 * keeps one partition for all its sessions (its own-process query reads one partition). A session's
 * name starts with it and a colon, as a scoped session's starts with its scope: sessionKey finds
 * the partition from the name alone.
 */
export function sessionShard(process: string): string {
  const k = createHash('sha256').update(process).digest()[0]! % SESSION_SHARDS;
  return `${SHARD_PREFIX}${String(k).padStart(2, '0')}`;
}

/** The partition of process `process`'s session rows when it is granted every lease: `conclave-session:all-<k>` (sessionShard). */
export function allLeasesSessionComponent(process: string): string {
  return `${SESSION_COMPONENT}:${sessionShard(process)}`;
}

/** The IAM `StringLike` patterns of the partitions a worker granted every lease writes its sessions in: the shards, and SESSION_COMPONENT (an SDK before 0.2.0). */
export const ALL_LEASES_SESSION_PARTITIONS = [SESSION_COMPONENT, `${SESSION_COMPONENT}:${SHARD_PREFIX}*`] as const;

/** Whether `component` is one of the SESSION_SHARDS partitions of sessions granted every lease (allLeasesSessionComponent). */
export function isSessionShard(component: string): boolean {
  return /^conclave-session:all-\d\d$/.test(component) && Number(component.slice(-2)) < SESSION_SHARDS;
}

/** The scope part of sessionComponent(leaseNames): 26 characters of [a-z2-7]. */
export function sessionScope(leaseNames: readonly string[]): string {
  const distinct = [...new Set(leaseNames)].sort();
  if (distinct.length === 0) throw new Error('a session scope needs at least one lease name');
  return base32(createHash('sha256').update(distinct.join('\n')).digest().subarray(0, 16));
}

/**
 * The identities table's partition that holds the coordinator's own row (its tick cursor,
 * lib/schemas/tick-cursor.ts): no process writes a session or an identity lease under it (a grant
 * may not name it), and the identities scan leaves it out.
 */
export const COORDINATOR_COMPONENT = 'conclave-coordinator';

/** Whether `component` is a partition of session rows (SESSION_COMPONENT, a shard of it or a scoped one). */
export function isSessionComponent(component: string): boolean {
  return component === SESSION_COMPONENT || component.startsWith(`${SESSION_COMPONENT}:`);
}

/**
 * The key of session row `name` (what a lease held on it carries as `session`). A scoped session's
 * name starts with its scope and a colon (`<scope>:<prefix>-<id>`, see Session), a session of a
 * process granted every lease with its shard and a colon (`all-<k>:<prefix>-<id>`, sessionShard);
 * any other name (an SDK before 0.2.0 granted every lease) is a row of SESSION_COMPONENT.
 */
export function sessionKey(name: string): { component: string; name: string } {
  const colon = name.indexOf(':');
  return { component: colon < 0 ? SESSION_COMPONENT : `${SESSION_COMPONENT}:${name.slice(0, colon)}`, name };
}

/**
 * The partitions to look for process `process`'s sessions in, when the lease it holds names session
 * row `named` (which need not be that process's: a peer may have rewritten it, or it may be gone).
 * A process writes all its sessions in one partition: its grant's scope (the partition of `named`
 * when that is scoped: a lease's holder and whoever wrote its `session` are granted that lease), or,
 * granted every lease, its own shard (allLeasesSessionComponent), which is derived from the process
 * and not from `named`. A `named` of SESSION_COMPONENT is either an older process's own (an SDK
 * before 0.2.0 wrote all its sessions there) or a name a peer wrote: both that partition and the
 * process's own shard, then.
 */
export function processSessionComponents(named: string, process: string): string[] {
  const component = sessionKey(named).component;
  if (isSessionShard(component)) return [allLeasesSessionComponent(process)];
  return component === SESSION_COMPONENT ? [SESSION_COMPONENT, allLeasesSessionComponent(process)] : [component];
}
