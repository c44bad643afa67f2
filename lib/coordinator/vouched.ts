import { vouchedCandidate } from '../election/vacancy.js';
import type { Candidate } from '../schemas/candidate.js';
import { sessionKey, type IdentityLease } from '../schemas/identity.js';
import { ValidationError } from '../schemas/validation.js';
import { PER_LEASE_IN_FLIGHT, type CandidateList, type CandidateStore } from '../stores/candidate-store.js';
import type { IdentityStore } from '../stores/identity-store.js';
import { mapLimit } from '../util/pool.js';

/**
 * The session rows named `names` (a lease's `session`, its candidates' `session`), each read once,
 * consistently; a name whose row is gone maps to undefined.
 */
export async function readSessions(identities: IdentityStore, names: Iterable<string>): Promise<Map<string, IdentityLease | undefined>> {
  const distinct = [...new Set(names)];
  const rows = await mapLimit(distinct, PER_LEASE_IN_FLIGHT, (n) => readSession(identities, n));
  return new Map(distinct.map((n, i) => [n, rows[i]]));
}

/** One session row, or undefined when it is gone or does not parse (a malformed row vouches for nothing). */
async function readSession(identities: IdentityStore, name: string): Promise<IdentityLease | undefined> {
  const k = sessionKey(name);
  try {
    return (await identities.read(k.component, k.name)).item;
  } catch (e) {
    if (e instanceof ValidationError) return undefined;
    throw e;
  }
}

/** The sessions a lease's candidates name. */
export const candidateSessions = (candidates: readonly Candidate[]): string[] => candidates.flatMap((c) => (c.session === undefined ? [] : [c.session]));

/** `candidates`, each as the session it names shows it (vouchedCandidate), from rows already read. */
export function vouchAll(candidates: readonly Candidate[], sessions: ReadonlyMap<string, Pick<IdentityLease, 'name' | 'renewTime' | 'process'> | undefined>): Candidate[] {
  return candidates.map((c) => vouchedCandidate(c, c.session === undefined ? undefined : sessions.get(c.session)));
}

/**
 * A lease's candidates as the coordinator judges them: listed, then each vouched for by the session
 * its row names, read after the list (a candidate on a session renews its own row rarely:
 * lib/sdk/candidate.ts). What the CLI and the functions judge candidates by, as the reconcile does.
 */
export async function listVouched(stores: { readonly candidates: CandidateStore; readonly identities: IdentityStore }, lease: string): Promise<CandidateList> {
  const list = await stores.candidates.list(lease);
  const named = candidateSessions(list.candidates);
  if (named.length === 0) return list;
  return { ...list, candidates: vouchAll(list.candidates, await readSessions(stores.identities, named)) };
}
