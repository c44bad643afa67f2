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
 * `leaseNames` (a worker granted every lease): SESSION_COMPONENT.
 */
export function sessionComponent(leaseNames?: readonly string[]): string {
  if (leaseNames === undefined) return SESSION_COMPONENT;
  return `${SESSION_COMPONENT}:${sessionScope(leaseNames)}`;
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

/** Whether `component` is a partition of session rows (SESSION_COMPONENT or a scoped one). */
export function isSessionComponent(component: string): boolean {
  return component === SESSION_COMPONENT || component.startsWith(`${SESSION_COMPONENT}:`);
}

/**
 * The key of session row `name` (what a lease held on it carries as `session`). A scoped session's
 * name starts with its scope and a colon (`<scope>:<prefix>-<id>`, see Session); any other name is
 * a row of SESSION_COMPONENT.
 */
export function sessionKey(name: string): { component: string; name: string } {
  const colon = name.indexOf(':');
  return { component: colon < 0 ? SESSION_COMPONENT : `${SESSION_COMPONENT}:${name.slice(0, colon)}`, name };
}
