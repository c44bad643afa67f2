/**
 * The naming service behind a lease's name, as a port: point the name at a leader, or clear it.
 * Cloud Map (lib/discovery/cloud-map.ts) and Route 53 (lib/discovery/route53.ts) implement it; the
 * ordering (lib/discovery/apply.ts) is written against this alone.
 */
import { parseAddress, type LeaderAddress } from './address.js';
import type { DiscoveryRow } from './state-store.js';

/** Whom a name points at. */
export interface LeaderTarget {
  readonly holder: string;
  readonly fencingToken: number;
  readonly address: LeaderAddress;
}

/** A naming service, for every lease the deployment names. */
export interface LeaderNaming {
  /** For logs: the service and where, e.g. `Route 53 zone Z123 ({lease}.leader.example.internal)`. */
  readonly describe: string;
  /**
   * Points the lease's name at `target`, replacing whatever it showed, within `withinMs` if given
   * (else it fails). Idempotent. Resolves to why, when the service refused the target there (Route
   * 53: a record the zone will not take at that name) and the name was cleared instead.
   */
  point(lease: string, target: LeaderTarget, withinMs?: number): Promise<string | void>;
  /** The lease's name shows nothing (a no-op when it shows nothing already), within `withinMs` if given. Idempotent. */
  clear(lease: string, withinMs?: number): Promise<void>;
  /**
   * Why this service cannot point a name at `target` (a value it refuses), or undefined when it
   * can: the name is then cleared, as for an address no name can point at. Absent: it takes every
   * target an address parses to.
   */
  issue?(target: LeaderTarget): string | undefined;
  /**
   * Why this service gives `lease` no name at all, or undefined when it has one of its own: its name
   * would be another lease's too (Route 53: DNS names ignore case), or is none the service can hold.
   * Nothing is written for such a lease, neither pointed nor cleared (a clear would delete the other
   * lease's name): its events are logged as errors and ignored, and the sweep passes it by. Absent:
   * every lease has a name of its own.
   */
  leaseIssue?(lease: string): string | undefined;
  /**
   * The name `lease`'s writes land on, when another lease's may land on it too (Route 53 with a
   * record per lease: DNS names ignore case, so `Orders` and `orders` have one record), and whether
   * the deployment gave it to this lease (`given`: leaseNames, which names no two leases that share
   * one). Such a name is written only by the lease that holds it (DiscoveryStateStore.holdName,
   * lib/discovery/apply.ts). Absent: every lease's name is its own.
   */
  sharedName?(lease: string): { readonly name: string; readonly given: boolean };
}

/** What the name must show for a row's state: its holder's address, or nothing (and why). */
export type NameState = { readonly kind: 'point'; readonly target: LeaderTarget } | { readonly kind: 'clear'; readonly why: string };

/**
 * What the name shows for `row`: the holder's address while its term is on and it advertised one
 * `naming` can point at; otherwise nothing, for a pointer to a previous leader is wrong (a target
 * the service refuses failed every delivery and left the previous leader named).
 */
export function nameStateOf(row: Pick<DiscoveryRow, 'ended' | 'holder' | 'address' | 'fencingToken'>, naming?: Pick<LeaderNaming, 'describe' | 'issue'>): NameState {
  if (row.ended) return { kind: 'clear', why: 'the term ended' };
  if (row.address === undefined || row.holder === undefined) return { kind: 'clear', why: 'the leader advertised no address (its elector has no `advertise` option)' };
  const address = parseAddress(row.address);
  if ('issue' in address) return { kind: 'clear', why: `the leader's address cannot be named: ${address.issue}` };
  const target = { holder: row.holder, fencingToken: row.fencingToken, address };
  const refused = naming?.issue?.(target);
  if (refused !== undefined) return { kind: 'clear', why: `${naming!.describe} cannot name the leader: ${refused}` };
  return { kind: 'point', target };
}

/** Sets the name to `state`, within `withinMs` if given (the invocation's time left): what it shows then (cleared, if the service refused the target). */
export async function showName(naming: LeaderNaming, lease: string, state: NameState, withinMs?: number): Promise<NameState> {
  if (state.kind === 'clear') {
    await naming.clear(lease, withinMs);
    return state;
  }
  const refused = await naming.point(lease, state.target, withinMs);
  return typeof refused === 'string' ? { kind: 'clear', why: `${naming.describe} refused to name the leader: ${refused}` } : state;
}
