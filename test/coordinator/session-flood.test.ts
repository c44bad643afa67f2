/**
 * A worker of lease A fills its own session partition (attacker review, 2026-12-07, twelfth): IAM
 * lets it write any number of session rows there, each with 64 full labels and 256 leftTerms (some
 * 230 KB, valid), stamped at the largest time with a day's lease (never expiring). Before: every
 * pass of the tick scanned the whole identities table and kept every row whole, its refused rows
 * whole too (~172 KB of heap a row: some 3,000 rows ran the 512 MB coordinator out of memory at every
 * invocation, so no lease was reconciled or collected), and such a row was never collected. Now a
 * pass keeps of each row only what it judges or collects by (no labels, no marks, only the left
 * terms of the terms it judges), and only the rows it needs: the sessions its leases and candidates
 * name, their holders' processes' freshest rows, rows expired by their stamps (at most
 * MAX_EXPIRED_IDENTITIES), refused rows as their key, reason and digest (at most
 * MAX_REFUSED_IDENTITIES told and timed); a stamp further ahead than any clock (a day and
 * clockSkewMs) is timed as one that does not parse: from the tick's first sighting, deleted a day
 * on. On DynamoDB Local.
 */
import { BatchWriteItemCommand, GetItemCommand, PutItemCommand, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { manualClock, type ManualClock } from '../../lib/clock.js';
import { MAX_REFUSED_IDENTITIES, scanIdentities } from '../../lib/coordinator/identity-scan.js';
import { coordinatorDeps, reconcileAll, type CoordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { REFUSED_SEEN } from '../../lib/coordinator/refused-session.js';
import { MAX_MILLIS } from '../../lib/schemas/common.js';
import { sessionKey, sessionScope, type IdentityLease } from '../../lib/schemas/identity.js';
import { testTables, type TestTables } from '../support.js';

const T0 = Date.UTC(2026, 11, 7);
const DAY = 86_400_000;
const OEV = 'OldestEmulationVersion';
const SCOPE_A = sessionScope(['A']);
const SCOPE_B = sessionScope(['B']);

let t: TestTables;
beforeAll(async () => void (t = await testTables('session-flood')));
afterAll(() => t.drop());

/** 64 labels of 128 + 256 characters, and 256 left terms of 253-character lease names and 512-character instances: some 230 KB, every field valid. */
const labels = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`l${i}`.padEnd(128, 'x'), 'v'.repeat(256)]));
const leftTerms = Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`gone-${i}`.padEnd(253, 'x'), { token: i, instance: `w${i}@`.padEnd(512, 'p'), stamp: T0 }]));

/** A session row of A's partition, as A's worker may write it. */
const flood = (name: string, renewTime: number, leaseDurationSeconds: number, more: Partial<IdentityLease> = {}) => ({ ...sessionKey(`${SCOPE_A}:${name}`), holderIdentity: name, process: 'pA', hostname: 'h', leaseDurationSeconds, acquireTime: T0 - DAY, renewTime, revision: 1, labels, leftTerms, ...more });

async function put(rows: Record<string, unknown>[]): Promise<void> {
  for (const r of rows) await t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall(r) }));
}

async function candidate(deps: CoordinatorDeps, lease: string, name: string, at: number, session?: string): Promise<void> {
  await deps.candidates.write({ key: { leaseName: lease, name }, item: undefined, revision: 0 }, { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OEV], renewTime: at, createdAt: at, ...(session ? { session, identity: `${name}_1@pA` } : {}) } });
}

const row = async (name: string) => {
  const r = await t.client.send(new GetItemCommand({ TableName: t.names.identities, Key: marshall(sessionKey(name)), ConsistentRead: true }));
  return r.Item && unmarshall(r.Item);
};

it("a flood of large, never-expiring session rows in A's partition: the tick keeps none of their labels or foreign left terms, collects them a day after it first saw them, and B is elected in the same tick", async () => {
  const clock: ManualClock = manualClock(T0);
  const deps = coordinatorDeps(t.client, t.names, { clock });
  // the flood: never expiring; and rows expired by their stamps, as large
  await put(Array.from({ length: 12 }, (_, i) => flood(`never-${i}`, MAX_MILLIS - 1, 86_400)));
  await put(Array.from({ length: 6 }, (_, i) => flood(`old-${i}`, T0 - 3 * DAY, 15)));
  // A held on one of its rows, which names A's term as left an hour ago: judged by that stamp (the
  // one left term the tick keeps), so its term is over and an election opens
  const held = `${SCOPE_A}:held`;
  const { [`gone-0`.padEnd(253, 'x')]: _, ...others } = leftTerms;
  await put([flood('held', T0, 86_400, { leftTerms: { ...others, A: { token: 1, instance: 'w_1@pA', stamp: T0 - 3_600_000 } } })]);
  await deps.leases.write(await deps.leases.read('A'), { set: { holderIdentity: 'w', holderInstance: 'w_1@pA', session: held, acquireTime: T0 - 2 * 3_600_000, renewTime: T0 - 2 * 3_600_000, leaseDurationSeconds: 60, leaseTransitions: 0, fencingToken: 1, termToken: 1 } });
  await candidate(deps, 'A', 'a2', T0);
  // B: leaderless, a live candidate on its own session
  await put([{ ...sessionKey(`${SCOPE_B}:s`), holderIdentity: 's', process: 'pB', hostname: 'h', leaseDurationSeconds: 60, acquireTime: T0, renewTime: T0, revision: 1 }]);
  await deps.leases.write(await deps.leases.read('B'), { set: { leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 1 } });
  await candidate(deps, 'B', 'b1', T0 - 60_000);

  // what a whole pass keeps of the scan: A's session with A's left term alone, the expired rows to
  // collect, the freshest row of its holder's process (judgingRow's), the never-expiring ones to time (each a summary)
  const seen = await scanIdentities(deps, { leases: new Map([['A', (await deps.leases.read('A')).item]]), collect: true }, () => false);
  expect(seen!.identities.map((i) => i.name.replace(/-\d+$/, '')).sort()).toEqual([held, ...Array.from({ length: 6 }, () => `${SCOPE_A}:old`), `${SCOPE_A}:never`].sort());
  for (const i of seen!.identities) expect(i.labels).toBeUndefined();
  expect(seen!.identities.filter((i) => i.leftTerms).map((i) => [i.name, Object.keys(i.leftTerms!)])).toEqual([[held, ['A']]]);
  expect(seen!.refusedRows.map((x) => [x.key.name, x.unstamped, Object.keys(x.facts).sort()])).toEqual(Array.from({ length: 12 }, (_, i) => [`${SCOPE_A}:never-${i}`, true, ['component', 'leaseDurationSeconds', 'name', 'process']]).sort());

  // what the pass collects, as it kept it
  const collected: IdentityLease[] = [];
  const remove = deps.identities.delete.bind(deps.identities);
  deps.identities.delete = async (read) => {
    collected.push(read.item as IdentityLease);
    return remove(read);
  };
  const r = await reconcileAll(deps);
  expect(r.errors).toEqual([]);
  expect(Object.fromEntries(r.outcomes.map((o) => [o.lease, o.decision.kind]))).toEqual({ A: 'elect', B: 'openElection' }); // A's term judged by the stamp it was left at
  expect(collected.map((i) => i.name).sort()).toEqual(Array.from({ length: 6 }, (_, i) => `${SCOPE_A}:old-${i}`).sort());
  for (const i of collected) {
    expect(i.labels, 'kept without its labels').toBeUndefined(); // before: 64 labels on every row kept
    expect(i.leftTerms, 'kept without terms it does not judge').toBeUndefined(); // before: 256
  }
  // a stamp no clock writes: timed as one that does not parse, from this sighting, by the longest lease that may be held on it (a day: the rows' own)
  const never = r.refusedSessions.filter((x) => x.key.name.includes(':never-'));
  expect(never).toHaveLength(12); // before: never timed
  expect(never[0]).toMatchObject({ leases: [], unchangedSince: T0, deleteAfter: T0 + DAY + deps.config.clockSkewMs, deleted: false });
  expect((await row(`${SCOPE_A}:never-0`))?.[REFUSED_SEEN]).toMatchObject({ at: T0 });
  expect(r.invalid, 'valid rows: not told as refused').toEqual([]);
  expect((await row(held))?.[REFUSED_SEEN], 'a row whose stamp can be true is not timed').toBeUndefined();

  // a day and clockSkewMs on, unchanged: deleted (before: kept for ever)
  clock.set(T0 + DAY + 2 * deps.config.clockSkewMs + 1);
  const later = await reconcileAll(deps);
  expect(later.collectedIdentities.filter((k) => k.name.includes(':never-'))).toHaveLength(12);
  expect(await row(`${SCOPE_A}:never-0`)).toBeUndefined();
});

it(`refused identity rows past the first ${MAX_REFUSED_IDENTITIES} of a pass are neither told nor kept, but one a lease names: judged by nobody, told`, async () => {
  const tt = await testTables('session-flood-refused');
  try {
    const clock = manualClock(T0);
    const deps = coordinatorDeps(tt.client, tt.names, { clock });
    const n = MAX_REFUSED_IDENTITIES + 25;
    // small refused rows (hostname a number), stamped now
    const rows = Array.from({ length: n }, (_, i) => ({ ...sessionKey(`${SCOPE_A}:r-${String(i).padStart(5, '0')}`), holderIdentity: `r${i}`, process: 'pA', hostname: 7, leaseDurationSeconds: 60, acquireTime: T0, renewTime: T0, revision: 1 }));
    for (let i = 0; i < rows.length; i += 25) {
      let req: Record<string, WriteRequest[]> | undefined = { [tt.names.identities]: rows.slice(i, i + 25).map((x) => ({ PutRequest: { Item: marshall(x) } })) };
      while (req && Object.keys(req).length) req = (await tt.client.send(new BatchWriteItemCommand({ RequestItems: req }))).UnprocessedItems;
    }
    // B held on one of them (judged by nobody: told as unjudged, whichever of them it is)
    const last = rows.at(-1)!.name;
    await deps.leases.write(await deps.leases.read('B'), { set: { holderIdentity: 'w', holderInstance: 'w_1@pA', session: last, acquireTime: T0, renewTime: T0, leaseDurationSeconds: 60, leaseTransitions: 0, fencingToken: 1 } });
    await candidate(deps, 'B', 'b1', T0);
    const r = await reconcileAll(deps);
    const told = r.invalid.filter((i) => 'component' in i.key);
    expect(told).toHaveLength(MAX_REFUSED_IDENTITIES + 1); // before: all of them
    expect(told.map((i) => i.key['name'])).toContain(last); // the one a lease names, past the first
    expect(r.unjudged.map((u) => [u.term.lease, u.term.session])).toEqual([['B', last]]);
  } finally {
    await tt.drop();
  }
});
