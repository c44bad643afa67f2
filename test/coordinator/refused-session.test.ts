/**
 * The tick's timing of a session row the schema refuses (lib/coordinator/refused-session.ts): pure,
 * no DynamoDB. The rows on DynamoDB Local are in test/coordinator/reconcile.test.ts and tick.test.ts.
 */
import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { ANY_TERM, MAX_REFUSED_ATTRIBUTES, REFUSED_SEEN, heldOnRefusedMs, refusedSessionStep, rowDigest, termsOnRefused } from '../../lib/coordinator/refused-session.js';
import { rowOf } from '../../lib/stores/item-store.js';

const T = Date.UTC(2026, 11, 1);
const row = { component: 'conclave-session', name: 's-1', holderIdentity: 's-1', hostname: '', leaseDurationSeconds: 15, acquireTime: T - 60_000, renewTime: T - 2_000, revision: 4 };
const digest = rowDigest(row);
const seenAt = (at: number, d = digest) => ({ ...row, [REFUSED_SEEN]: { at, digest: d } });

describe('refusedSessionStep', () => {
  it.each([
    { name: 'no stamp: stamped now, the wait starting now', r: row, now: T, want: { kind: 'stamp', seen: { at: T, digest }, deleteAfter: T + 16_000 } },
    { name: 'stamped, unchanged, inside the wait', r: seenAt(T), now: T + 10_000, want: { kind: 'wait', seen: { at: T, digest }, deleteAfter: T + 16_000 } },
    { name: 'stamped, unchanged, at the end of the wait: not yet', r: seenAt(T), now: T + 16_000, want: { kind: 'wait', seen: { at: T, digest }, deleteAfter: T + 16_000 } },
    { name: 'stamped, unchanged, past the wait', r: seenAt(T), now: T + 16_001, want: { kind: 'delete', seen: { at: T, digest }, deleteAfter: T + 16_000 } },
    { name: 'changed since the stamp (renewed): stamped afresh', r: { ...seenAt(T - 3_600_000), renewTime: T - 1_000, revision: 5 }, now: T, want: { kind: 'stamp', seen: { at: T, digest: rowDigest({ ...row, renewTime: T - 1_000, revision: 5 }) }, deleteAfter: T + 16_000 } },
    { name: 'a stamp from the future (another clock ahead, or forged): stamped afresh, never earlier', r: seenAt(T + 60_000), now: T, want: { kind: 'stamp', seen: { at: T, digest }, deleteAfter: T + 16_000 } },
    { name: 'a stamp that does not parse: stamped afresh', r: { ...row, [REFUSED_SEEN]: 'yesterday' }, now: T, want: { kind: 'stamp', seen: { at: T, digest }, deleteAfter: T + 16_000 } },
  ])('$name', ({ r, now, want }) => expect(refusedSessionStep(r, 15_000, now, 1_000)).toEqual(want));

  it('leaves a row with more attributes than a condition can name alone', () => {
    const wide = Object.fromEntries(Array.from({ length: MAX_REFUSED_ATTRIBUTES + 1 }, (_, i) => [`a${i}`, i]));
    expect(refusedSessionStep(wide, 15_000, T, 1_000)).toEqual({ kind: 'tooLarge' });
  });
});

describe('rowDigest', () => {
  it('leaves the stamp out, and tells every other change, whatever the order of keys, sets or maps', () => {
    expect(rowDigest(seenAt(T))).toBe(digest);
    expect(rowDigest(Object.fromEntries(Object.entries(row).reverse()))).toBe(digest);
    expect(rowDigest({ ...row, tags: new Set(['b', 'a']), m: { y: 1, x: 2 } })).toBe(rowDigest({ ...row, m: { x: 2, y: 1 }, tags: new Set(['a', 'b']) }));
    expect(rowDigest({ ...row, revision: 5 })).not.toBe(digest);
    expect(rowDigest({ ...row, extra: null })).not.toBe(digest);
    expect(rowDigest({ ...row, hostname: new Uint8Array([1]) })).not.toBe(rowDigest({ ...row, hostname: new Uint8Array([2]) }));
  });

  it('a number JavaScript cannot hold, as the stores read it (rowOf), is digested by its digits: the row is timed and deleted like any refused row (a BigInt threw, so the row and the terms on it were never judged)', () => {
    const big = (n: string) => rowOf({ ...marshall(row), renewTime: { N: n } });
    expect(rowDigest(big('99999999999999999999'))).not.toBe(rowDigest(big('99999999999999999998')));
    expect(rowDigest(big('12345678901234567890.5'))).toBe(rowDigest(big('12345678901234567890.5')));
    expect(refusedSessionStep(big('99999999999999999999'), 15_000, T, 1_000)).toMatchObject({ kind: 'stamp', deleteAfter: T + 16_000 });
    // a BigInt (unmarshall's own way) too
    expect(rowDigest({ ...row, renewTime: 99999999999999999999n })).toBe(rowDigest(big('99999999999999999999')));
  });
});

describe('heldOnRefusedMs', () => {
  it.each([
    { name: 'the longest lease held on it', terms: [{ leaseDurationSeconds: 15 }, { leaseDurationSeconds: 30 }], r: { leaseDurationSeconds: 0 }, want: 30_000 },
    { name: "the row's own duration where it reads and is longer", terms: [{ leaseDurationSeconds: 15 }], r: { leaseDurationSeconds: 60 }, want: 60_000 },
    { name: 'a term whose duration does not read: the longest a row may state', terms: [{ leaseDurationSeconds: undefined }], r: {}, want: 86_400_000 },
  ])('$name', ({ terms, r, want }) => expect(heldOnRefusedMs(terms, r)).toBe(want));
});

describe('termsOnRefused', () => {
  // p1's session row as another writer left it, its stamp unreadable
  const own = { component: 'conclave-session', name: 's-p1-other', process: 'p1', renewTime: 'then' };
  const term = (session: string, holderInstance: string | undefined, leaseDurationSeconds = 15) => ({ holderIdentity: 'a', holderInstance, session, leaseDurationSeconds });
  it.each([
    { name: 'terms naming it: those', named: [term('s-p1-other', 'a_1@p1')], held: [term('s-p1-other', 'a_1@p1'), term('s-x', 'b_1@p1', 60)], want: { on: 'named', terms: [term('s-p1-other', 'a_1@p1')] } },
    { name: "none naming it, a term of the process it may be the session of: that term (before: a day)", named: [], held: [term('s-gone', 'a_1@p1'), term('s-y', 'c_1@p2', 60)], want: { on: 'process', terms: [term('s-gone', 'a_1@p1')] } },
    { name: 'none naming it, terms of other processes only: any term a lease may state (a day)', named: [], held: [term('s-y', 'c_1@p2', 60)], want: { on: 'any', terms: ANY_TERM } },
    { name: 'a term whose holder names no process: no bar to the day', named: [], held: [term('s-z', undefined)], want: { on: 'any', terms: ANY_TERM } },
  ])('$name', ({ named, held, want }) => expect(termsOnRefused(own, named, held)).toEqual(want));
});
