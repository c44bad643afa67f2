import * as z from 'zod';
import { Instance, Labels, Millis, MinReader, Name, Revision, StampMillis, TtlSeconds } from './common.js';
import { FencingToken } from './fencing-token.js';
import { processOf } from './instance.js';
import { processSessionComponents, sessionKey } from './session-partition.js';

/** The identities table's partitions that hold process sessions, and a session row's key (session-partition.ts). */
export { SESSION_COMPONENT, SESSION_SHARDS, allLeasesSessionComponent, isSessionComponent, isSessionShard, processSessionComponents, sessionComponent, sessionKey, sessionScope, sessionShard } from './session-partition.js';

/**
 * At most this many leases in a session row's `endedTerms`, so a row stays far below DynamoDB's
 * 400 KB item: a mark beyond it is refused, to be retried (IdentityStore.markTermEnded), never
 * written over one its owner may not have read.
 */
export const MAX_ENDED_TERMS = 512;

/**
 * At most this many terms in a session row's `leftTerms`: a process whose stopped electors left
 * more terms to run out than this holds its session's renewals instead (lib/sdk/session.ts), so a
 * row stays far below DynamoDB's 400 KB item (an entry is at most ~600 bytes).
 */
export const MAX_LEFT_TERMS = 256;

/**
 * A term a stopped elector of the session's process left to run out (releaseOnCancel false): the
 * fencing token it was led with (the lease's `termToken`, which a move of the row's fencing token
 * leaves as it was) and holder instance, and the stamp it runs out from (`stamp` + the lease's
 * `leaseDurationSeconds`), which later renewals of the row never extend. A key it does not know is
 * dropped: an older reader reads a newer owner's row (a key that changes what the entry means comes
 * with the row's `minReader`).
 */
export const LeftTerm = z.object({ token: FencingToken, instance: Instance, stamp: Millis });
export type LeftTerm = z.infer<typeof LeftTerm>;

/** The longest identity lease (a day): the heartbeat's `leaseDurationSeconds` at most. */
export const MAX_IDENTITY_LEASE_SECONDS = 86_400;

/**
 * A process heartbeat (KEP-1965), a row of the identities table (key `component` + `name`).
 * `name` comes from a hash of host name and component, so a restart takes its old row back;
 * `holderIdentity` is unique per start-up.
 */
export const IdentityLeaseItem = z.object({
  component: Name,
  name: Name,
  /** The oldest reader format that may judge the row (MinReader; absent: 1): above this Conclave's, the row is refused. */
  minReader: MinReader.optional(),
  holderIdentity: Instance,
  hostname: z.string().min(1).max(253),
  leaseDurationSeconds: z.number().int().min(1).max(MAX_IDENTITY_LEASE_SECONDS),
  acquireTime: Millis,
  renewTime: Millis,
  labels: Labels.optional(),
  revision: Revision,
  expiresAt: TtlSeconds.optional(),
  /**
   * Session rows only (lib/sdk/session.ts): the id of the process that renews the row, the same for
   * every row one Session writes. The instance of every elector on that session ends with it
   * (`@<process>`), so a session row vouches for the terms of its own process's electors and no
   * other's: an observer judges a term by the session the lease names only where that session
   * vouches for the holder (lib/election/vacancy.ts `vouches`).
   */
  process: z.string().min(1).max(64).optional(),
  /**
   * Session rows only (lib/sdk/session.ts): terms held on this session that ended by a write the
   * holder did not make (the coordinator, the platform function, the CLI, an operator's delete),
   * as lease name → the ended term's fencing token. Written by Conclave's functions and the CLI,
   * never by a worker (its grant cannot name it); the owner reads it in the answer to each renewal
   * and stops leading every term named, so a term's end reaches its holder within a renewal.
   */
  endedTerms: z
    .record(Name, FencingToken)
    .refine((m) => Object.keys(m).length <= MAX_ENDED_TERMS, `must have at most ${MAX_ENDED_TERMS} entries`)
    .optional(),
  /**
   * Session rows only, beside `endedTerms`: lease name → the row's `renewTime` when that lease's
   * mark was written, by which the mark is dropped once it has certainly done its work
   * (IdentityStore.markTermEnded). Written with the marks, by Conclave's functions and the CLI only.
   */
  endedTermStamps: z
    .record(Name, Millis)
    .refine((m) => Object.keys(m).length <= MAX_ENDED_TERMS, `must have at most ${MAX_ENDED_TERMS} entries`)
    .optional(),
  /**
   * Session rows only (lib/sdk/session.ts): terms of this process's electors that stopped and left
   * their term to run out (releaseOnCancel false), as lease name → LeftTerm, and for a lease duration
   * those they handed over or released (SessionSeam.over: a successor reading only this row then
   * reads the lease). Written by the row's owner in its renewals (every row it writes after the
   * elector stopped carries it) and dropped once the lease shows that term no more. The row does not vouch for a term named here past
   * its `stamp`: observers judge such a term by `stamp` (vacancy.ts renewedBySession), whichever
   * session the lease names, so a term whose elector has ended runs out though the process's other
   * electors keep the row renewed. Absent on an older SDK's rows: nothing is left then.
   */
  leftTerms: z
    .record(Name, LeftTerm)
    .refine((m) => Object.keys(m).length <= MAX_LEFT_TERMS, `must have at most ${MAX_LEFT_TERMS} entries`)
    .optional(),
});
/**
 * What the coordinator's collection reads of a row IdentityLeaseItem refuses: the stamp it expires
 * by (`renewTime` + `leaseDurationSeconds`). A row whose stamp does not parse (in seconds: StampMillis) is never collected by
 * it: the tick times it instead (lib/coordinator/refused-session.ts), and deletes it once unchanged for a day while no held lease names it
 * (for the longest lease of the held terms whose process's session it may be, where there are such: termsOnRefused).
 */
export const IdentityStamp = IdentityLeaseItem.pick({ renewTime: true, leaseDurationSeconds: true }).extend({ renewTime: StampMillis });
export type IdentityStamp = z.infer<typeof IdentityStamp>;

/** An elector's instance and its process (instance.ts). */
export { instanceOnSession, processOf } from './instance.js';

/** Whether a session row of process `process` vouches for a term held by `holderInstance`: that instance is an elector of its process. */
export const vouchesFor = (process: string | undefined, holderInstance: string | undefined): boolean => process !== undefined && processOf(holderInstance) === process;

/**
 * Whether a session row the schema refuses (`row`, as stored) may be process `process`'s own session,
 * the one a term of its elector on a lease naming session row `named` would be judged by were it
 * readable (judgingRow, lib/election/vacancy.ts): in a partition that process keeps its sessions in
 * (processSessionComponents), under that partition's name, and naming `process`, or naming a process
 * in a form that does not read (whose it is cannot be told). A row naming no process, or another by
 * a string, is no more that process's than a readable row so is. Such a row is judged by nobody: a
 * term it may vouch for is not judged without it (docs/safety.md, "A session row the schema refuses").
 */
export function mayBeProcessSession(row: Readonly<Record<string, unknown>>, named: string, process: string): boolean {
  const { component, name } = row;
  if (typeof component !== 'string' || typeof name !== 'string' || !processSessionComponents(named, process).includes(component) || sessionKey(name).component !== component) return false;
  return row['process'] !== undefined && (typeof row['process'] !== 'string' || row['process'] === process);
}

/** A row of the identities table as read: one process's heartbeat (KEP-1965). */
export type IdentityLease = z.infer<typeof IdentityLeaseItem>;
