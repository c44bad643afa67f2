import type * as z from 'zod';
import { vouchedCandidate } from '../election/vacancy.js';
import type { Candidate } from '../schemas/candidate.js';
import { IdentityLeaseItem, sessionKey } from '../schemas/identity.js';
import { MAX_CANDIDATES_PER_LEASE, PER_LEASE_IN_FLIGHT, type CandidateList, type CandidateStore } from '../stores/candidate-store.js';
import type { IdentityStore } from '../stores/identity-store.js';
import { mapLimit } from '../util/pool.js';

/**
 * What a session row vouches for a candidate by (vouchedCandidate): its name, stamp and process,
 * the session schema's own fields.
 */
export const SessionVouch = IdentityLeaseItem.pick({ name: true, renewTime: true, process: true, minReader: true });
export type SessionVouch = z.output<typeof SessionVouch>;
const VOUCH_FIELDS = Object.keys(SessionVouch.shape);

/**
 * The most sessions one lease's candidates are vouched by (listVouched): one a candidate row, of the
 * MAX_CANDIDATES_PER_LEASE the coordinator holds of a lease — the busy lease docs/benchmarks.md
 * measures, 1,000 processes standing for it, each on its own session. A candidate on a session
 * past it counts by its own renewTime (unvouched), and the look-up says so.
 */
export const MAX_SESSIONS_PER_LEASE = MAX_CANDIDATES_PER_LEASE;

/**
 * What the session rows named `names` (a lease's candidates' `session`) vouch by, each read once,
 * consistently, of the first `max` distinct names; a name whose row is gone, or not read (past
 * `max`), maps to undefined. Of a row only SessionVouch's fields are read (a projection: the read
 * units are the whole row's) and parsed, by that part of the session schema, never kept in the
 * parsed rows' cache: a worker may fill its sessions' partition with valid rows of ~230 KB (256
 * left terms, 64 labels), and a reconcile of its lease that kept 999 of them whole held 418 MB (1.2
 * GB with labels of control characters: the 256 MB stream functions and the 512 MB coordinator ran
 * out of memory, and the lease stream retried it without end); now some 100 bytes a session. A row
 * whose vouching fields do not parse vouches for nothing; one the schema refuses only in fields not
 * read (its labels, left or ended terms) vouches as they read, while the tick, which scans rows
 * whole, counts it for no candidate: only the workers its partition is granted to can write it so,
 * and they can write it valid as well. The coordinator's reconcile holds at most
 * MAX_CANDIDATES_PER_LEASE candidates of a lease, so as many names.
 */
export async function readSessions(identities: IdentityStore, names: Iterable<string>, max = Infinity): Promise<Map<string, SessionVouch | undefined>> {
  const distinct = [...new Set(names)].slice(0, max);
  const rows = await mapLimit(distinct, PER_LEASE_IN_FLIGHT, (n) => readVouch(identities, n));
  return new Map<string, SessionVouch | undefined>(distinct.map((n, i) => [n, rows[i]]));
}

/** What session row `name` vouches by, or undefined when it is gone or that does not parse (a malformed row vouches for nothing). */
async function readVouch(identities: IdentityStore, name: string): Promise<SessionVouch | undefined> {
  const k = sessionKey(name);
  const row = await identities.readFields(k.component, k.name, VOUCH_FIELDS);
  const p = row && SessionVouch.safeParse(row);
  return p?.success ? p.data : undefined;
}

/** The sessions a lease's candidates name. */
export const candidateSessions = (candidates: readonly Candidate[]): string[] => candidates.flatMap((c) => (c.session === undefined ? [] : [c.session]));

/** `candidates`, each as the session it names shows it (vouchedCandidate), from rows already read. */
export function vouchAll(candidates: readonly Candidate[], sessions: ReadonlyMap<string, SessionVouch | undefined>): Candidate[] {
  return candidates.map((c) => vouchedCandidate(c, c.session === undefined ? undefined : sessions.get(c.session)));
}

/**
 * A lease's candidates as the coordinator judges them: listed, then each vouched for by the session
 * its row names, read after the list (a candidate on a session renews its own row rarely:
 * lib/sdk/candidate.ts). What the CLI and the functions judge candidates by, as the reconcile does.
 * Of the first MAX_SESSIONS_PER_LEASE sessions named (readSessions); past them, a candidate counts
 * by its own renewTime, and a warning says so once a look-up.
 */
export async function listVouched(stores: { readonly candidates: CandidateStore; readonly identities: IdentityStore }, lease: string): Promise<CandidateList> {
  const list = await stores.candidates.list(lease);
  const named = candidateSessions(list.candidates);
  if (named.length === 0) return list;
  const sessions = await readSessions(stores.identities, named, MAX_SESSIONS_PER_LEASE);
  const unread = new Set(named).size - sessions.size;
  if (unread > 0)
    process.emitWarning(`lease "${lease}": ${unread} sessions its candidates name past the first ${MAX_SESSIONS_PER_LEASE} not read: candidates on them count by their own renewTime`, { code: 'CONCLAVE_SESSIONS_UNREAD' });
  return { ...list, candidates: vouchAll(list.candidates, sessions) };
}
