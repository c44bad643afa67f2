/**
 * The lease row for the model checker: the conditional writes of lib/stores/lease-store.ts as
 * plain functions of the row before them, so the explorer can keep every state immutable and try
 * each write landing, late, or not at all. Each function says what DynamoDB would do with the
 * request: the row after it, and what the caller is answered (undefined: the condition failed).
 *
 * The conditions are LeaseStore's, clause by clause (the comments name the method); the checker
 * takes a `LeaseRows` as a parameter, so a test plants a bug by wrapping one of these (sim/bugs.ts's
 * lock-level bugs), never by patching.
 */
import { nextFencingToken } from '../../lib/schemas/fencing-token.js';
import type { Lease } from '../../lib/schemas/lease.js';
import type { RowPatch } from '../../lib/schemas/common.js';
import { HOLDER_FIELDS } from '../../lib/schemas/platform.js';
import type { Heir, SecondSuccessor, Term } from '../../lib/stores/lease-store.js';
import { ConflictError } from '../../lib/stores/errors.js';
import { MemoryLeaseTable } from '../../lib/sdk/lock.js';

export type Row = Lease | undefined;
/** What a read returned: the row and the revision a write conditioned on it names (0: no row). */
export interface RowRead {
  readonly item: Row;
  readonly revision: number;
}
/** A write's outcome: the row after it, and the answer (undefined: refused, the row unchanged). */
export interface Landed {
  readonly row: Row;
  readonly answer: Lease | undefined;
}

export interface LeaseRows {
  /** ItemStore.write through LeaseStore.write: conditioned on the revision read; keeps `termToken` the copy of the term's token. */
  write(row: Row, read: RowRead, patch: RowPatch<Lease>, name: string): Landed;
  /**
   * LeaseStore.renewTerm: conditioned on `termToken` and on moving `renewTime` forward (once more
   * just after the row's stamp); `session` puts the term on that session, null takes it off one, and
   * only a renewal that leaves it (undefined) flips `renewalMark`.
   */
  renewTerm(row: Row, term: Term, renewTime: number, leaseDurationSeconds: number, session?: string | null): Landed;
  /** LeaseStore.handOver: conditioned on the giver's term and on the lease naming that heir. */
  handOver(row: Row, term: Term, heir: Heir, now: number, firstTermSeconds: number, leaseTransitions: number, second: SecondSuccessor): Landed;
  /** LeaseStore.releaseTerm: conditioned on the term. */
  releaseTerm(row: Row, term: Term, now: number): Landed;
  /** LeaseStore.endChangedTerm: conditioned on the token copy alone. */
  endChangedTerm(row: Row, termToken: number, lastHolder: string, now: number): Landed;
}

type Fields = Record<string, unknown>;

/** SET and REMOVE, then ADD revision 1 (undefined values in `set` are not written, as marshall's removeUndefinedValues). */
function applied(row: Row, set: Fields, remove: readonly string[]): Lease {
  const next: Fields = { ...(row as Fields | undefined) };
  for (const [k, v] of Object.entries(set)) if (v !== undefined) next[k] = v;
  for (const k of remove) if (!(k in set) || set[k] === undefined) delete next[k];
  next['revision'] = ((row?.revision as number | undefined) ?? 0) + 1;
  return next as Lease;
}

const refused = (row: Row): Landed => ({ row, answer: undefined });
const inTerm = (row: Row, t: Term) => row?.holderIdentity === t.holderIdentity && row.fencingToken === t.fencingToken;
const END_TERM = [...HOLDER_FIELDS, 'termToken', 'preferredHolder', 'vacancyReport'];

/**
 * ItemStore.write through LeaseStore.write: attribute_not_exists for revision 0, else `#rev = :rev`
 * and the fencing token read (LeaseStore's `incarnation`: a row deleted and written again starts its
 * revisions anew); `byRevisionAlone`, the condition before that (a planted bug: test/model/bugs.ts).
 */
export function writeRow(row: Row, read: RowRead, patch: RowPatch<Lease>, name: string, byRevisionAlone = false): Landed {
  if ((row?.revision ?? 0) !== read.revision || (read.revision === 0 && row !== undefined)) return refused(row);
  if (!byRevisionAlone && read.item !== undefined && row?.fencingToken !== read.item.fencingToken) return refused(row);
  // LeaseStore.write: the term's token copy follows the holder and the token
  const set: Fields = { ...(patch.set as Fields | undefined) };
  const removed = new Set<string>(patch.remove ?? []);
  const holder = removed.has('holderIdentity') ? undefined : ((set['holderIdentity'] as string | undefined) ?? read.item?.holderIdentity);
  const token = (set['fencingToken'] as number | undefined) ?? read.item?.fencingToken;
  if (holder !== undefined && token !== undefined) {
    if (read.item?.termToken === undefined || set['holderIdentity'] !== undefined || set['fencingToken'] !== undefined) set['termToken'] = token;
  } else if (read.item?.termToken !== undefined) removed.add('termToken');
  const written = applied(row, { ...set, name }, [...removed]);
  return { row: written, answer: written };
}

export const leaseRows: LeaseRows = {
  write: (row, read, patch, name) => writeRow(row, read, patch, name),
  renewTerm(row, term, renewTime, leaseDurationSeconds, session) {
    for (let stamp = renewTime, attempt = 1; ; attempt++) {
      if (row?.termToken === term.fencingToken && (row.renewTime === undefined || row.renewTime < stamp)) {
        // a write that names `session` does not flip the mark (the lease stream sees every change of it)
        const mark = session === undefined ? { renewalMark: row.renewalMark === 1 ? 2 : 1 } : {};
        const written = applied(row, { renewTime: stamp, leaseDurationSeconds, ...mark, ...(session ? { session } : {}) }, ['vacancyReport', ...(session === null ? ['session'] : [])]);
        return { row: written, answer: written };
      }
      const later = row?.termToken === term.fencingToken && row.renewTime !== undefined && row.renewTime >= stamp ? row.renewTime + 1 : undefined;
      if (later === undefined || attempt > 1) return refused(row);
      stamp = later;
    }
  },
  handOver(row, term, heir, now, firstTermSeconds, leaseTransitions, read) {
    if (!inTerm(row, term) || row!.successor !== heir.name || row!.successorInstance !== heir.instance) return refused(row);
    // the second successor as the row names it as the write lands (LeaseStore.handOver writes again with it); read as none, none
    const second = read.name !== undefined || read.instance !== undefined ? { name: row!.secondSuccessor, instance: row!.secondSuccessorInstance } : {};
    const token = nextFencingToken(term.fencingToken, now);
    // that second successor (neither the heir nor the giver) is the successor now
    const up = second.name !== undefined && second.name !== heir.name && second.name !== term.holderIdentity ? { successor: second.name, successorInstance: second.instance } : {};
    const secondNamed = second.name !== undefined || second.instance !== undefined;
    const written = applied(
      row,
      { holderIdentity: heir.name, holderInstance: heir.instance, acquireTime: now, renewTime: now, leaseDurationSeconds: firstTermSeconds, leaseTransitions: leaseTransitions + 1, fencingToken: token, termToken: token, electedBy: 'successor', lastHolderIdentity: term.holderIdentity, ...up },
      ['successor', 'successorInstance', ...(secondNamed ? ['secondSuccessor', 'secondSuccessorInstance'] : []), 'preferredHolder', 'election', 'vacancyReport', 'session', 'holderPlatform', 'holderPlatformId', 'holderAddress'],
    );
    return { row: written, answer: written };
  },
  releaseTerm(row, term, now) {
    if (!inTerm(row, term)) return refused(row);
    const written = applied(row, { renewTime: now, lastHolderIdentity: term.holderIdentity }, END_TERM);
    return { row: written, answer: written };
  },
  endChangedTerm(row, termToken, lastHolder, now) {
    if (row?.termToken !== termToken) return refused(row);
    const written = applied(row, { renewTime: now, lastHolderIdentity: lastHolder }, END_TERM);
    return { row: written, answer: written };
  },
};

/**
 * The same writes through the SDK's in-memory lock (lib/sdk/lock.ts MemoryLeaseTable), one table
 * per write holding the row before it: its lock's methods do their work before their first await,
 * so the row after each call is there to read at once. What the caller is answered is the row
 * written (undefined: refused). MemoryLeaseTable also refuses a new term that does not raise the
 * token (a RangeError): a write the model then counts as refused.
 */
export function memoryTableRows(): LeaseRows {
  const name = 'model';
  const on = (row: Row, act: (t: MemoryLeaseTable) => unknown): Landed => {
    const t = new MemoryLeaseTable();
    if (row) t.overwrite(row);
    try {
      const p = act(t);
      if (p instanceof Promise) p.catch(() => undefined); // a RangeError: the write did not happen
    } catch (e) {
      if (!(e instanceof ConflictError) && !(e instanceof RangeError)) throw e;
    }
    const after = t.read(name).item;
    return after?.revision !== row?.revision ? { row: after, answer: after } : refused(row);
  };
  return {
    write: (row, read, patch) => on(row, (t) => t.write({ key: { name }, item: read.item, revision: read.revision }, patch)),
    renewTerm: (row, term, now, leaseDurationSeconds, session) => on(row, (t) => t.lock(name).renew(term, { now, leaseDurationSeconds, session })),
    handOver: (row, term, heir, now, firstTermSeconds, leaseTransitions, second) => on(row, (t) => t.lock(name).handOver(term, { heir, now, firstTermSeconds, leaseTransitions, second })),
    releaseTerm: (row, term, now) => on(row, (t) => t.lock(name).release(term, now)),
    endChangedTerm: (row, termToken, lastHolder, now) => on(row, (t) => t.lock(name).endChanged({ holderIdentity: lastHolder, fencingToken: termToken }, now)),
  };
}
