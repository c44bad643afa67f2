/**
 * A worker of lease A fills its own session partition (review, 2026-12-07, thirteenth): IAM lets it
 * write any number of session rows there, each up to DynamoDB's 400 KB with valid labels and
 * leftTerms, and rows the schema refuses as large. The coordinator's tick keeps only what it
 * judges (lib/coordinator/identity-scan.ts, test/coordinator/session-flood.test.ts); the other
 * readers of a holder's process's sessions kept the whole partition, parsed rows and refused rows
 * as stored: IdentityStore.processSessions (getLeader, a follower's LeaseLock.processSession, the
 * lease stream's deleted term) and the CLI's session scan. Some 3,000 such rows once the lease's
 * named row is gone: ~700 MB, a Lambda out of memory retrying its batch, a CLI or getLeader caller
 * crashing. Now each keeps, as it pages, only the rows its judgement reads, and judges as before.
 *
 * What a reader holds is measured by the heap left after a full garbage collection at each page of
 * its Query (a client middleware): the pages it has read and still holds are there, whatever the
 * time it takes. On DynamoDB Local.
 */
import { BatchWriteItemCommand, type DynamoDBClient, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { cliContext } from '../../lib/cli/context.js';
import { seenIn } from '../../lib/cli/judged.js';
import { TOLD_REFUSED_SESSIONS, scanLeasesJudged } from '../../lib/cli/read.js';
import { manualClock } from '../../lib/clock.js';
import { judgingRow } from '../../lib/election/vacancy.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { processSessionComponents, sessionKey, sessionScope } from '../../lib/schemas/identity.js';
import { getLeader } from '../../lib/sdk/get-leader.js';
import { SessionReader } from '../../lib/sdk/lock.js';
import { BrokenSessionError } from '../../lib/stores/errors.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { MIN, NOW, SEC } from '../fixtures.js';
import { testTables, type TestTables } from '../support.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const SCOPE_A = sessionKey(`${sessionScope(['A'])}:x`).component;
/** Rows of each kind in the flood: some 230 KB each, about 5 to a Query page. */
const FLOOD = 36;
/** Some 230 KB of the flood's rows, every field valid: 64 labels of 128 + 256 characters, 256 left terms of 253-character lease names and 512-character instances. */
const labels = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`l${i}`.padEnd(128, 'x'), 'v'.repeat(256)]));
const leftTerms = Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`gone-${i}`.padEnd(253, 'x'), { token: i, instance: `w${i}@`.padEnd(512, 'p'), stamp: NOW - MIN }]));
/** The bytes of the flood's rows (labels, leftTerms), each. */
const ROW_BYTES = 64 * 384 + 256 * (253 + 512);

let t: TestTables;
let identities: IdentityStore;
let leases: LeaseStore;

/** Session row `name` of A's partition of process `process`, renewed at `renewTime`, as large as its labels and leftTerms make it; `hostname` a number: a row the schema refuses. */
const row = (name: string, process: unknown, renewTime: number, refused = false): Record<string, unknown> => ({
  ...sessionKey(`${sessionScope(['A'])}:${name}`),
  holderIdentity: `${name}_1`,
  process,
  hostname: refused ? 7 : 'web-9',
  leaseDurationSeconds: 15,
  acquireTime: NOW - 10 * MIN,
  renewTime,
  revision: 1,
  labels,
  leftTerms,
});

async function put(client: DynamoDBClient, table: string, rows: Record<string, unknown>[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 5) {
    let req: Record<string, WriteRequest[]> | undefined = { [table]: rows.slice(i, i + 5).map((x) => ({ PutRequest: { Item: marshall(x) } })) };
    while (req && Object.keys(req).length) req = (await client.send(new BatchWriteItemCommand({ RequestItems: req }))).UnprocessedItems;
  }
}

/** The freshest of pA's flood: in the middle of the partition's order. */
const FRESHEST = `${sessionScope(['A'])}:pa-${String(FLOOD / 2).padStart(3, '0')}`;

beforeAll(async () => {
  t = await testTables('session-readers-flood');
  identities = new IdentityStore(t.client, t.names.identities);
  leases = new LeaseStore(t.client, t.names.leases);
  const n = (i: number) => String(i).padStart(3, '0');
  // the flood: pA's rows (one freshest, one as fresh under another partition's name), rows of pX the schema refuses
  await put(t.client, t.names.identities, [
    ...Array.from({ length: FLOOD }, (_, i) => row(`pa-${n(i)}`, 'pA', i === FLOOD / 2 ? NOW - 2 * SEC : NOW - MIN)),
    ...Array.from({ length: FLOOD }, (_, i) => row(`px-${n(i)}`, 'pX', NOW - 2 * SEC, true)),
  ]);
  // A held by w of process pA on a row that is gone: judged by pA's own freshest row (NOW - 2 s)
  await leases.write(LeaseStore.readOf('A', undefined), { set: { holderIdentity: 'w', holderInstance: 'w_1@pA', session: `${sessionScope(['A'])}:gone`, acquireTime: NOW - 10 * MIN, renewTime: NOW - MIN, leaseDurationSeconds: 15, leaseTransitions: 1, fencingToken: 7 } });
});
afterAll(() => t?.drop());

/**
 * What `read` holds while it reads the identities table, over what was held before it: the most
 * the heap holds after a full collection at the answer of any of its Queries, less the heap so
 * collected before it began.
 */
async function held(read: (client: DynamoDBClient) => Promise<unknown>): Promise<{ bytes: number; pages: number; result: unknown }> {
  const client = localClient(inject('ddbEndpoint'));
  let most = 0;
  let pages = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const answer = await next(args);
      if (context.commandName === 'QueryCommand') {
        pages++;
        gc();
        most = Math.max(most, process.memoryUsage().heapUsed);
      }
      return answer;
    },
    { step: 'deserialize' },
  );
  try {
    gc();
    const before = process.memoryUsage().heapUsed;
    const result = await read(client).catch((e: unknown) => e);
    return { bytes: most - before, pages, result };
  } finally {
    client.destroy();
  }
}

/** At most what a reader may hold: some of the flood's rows (a page or two being read; the rows it keeps), against the flood's 72 (before: some 12.7 MB; now some 1.5 to 1.8 MB). */
const BOUND = 16 * ROW_BYTES;

it("processSessions keeps of a flooded partition, as it pages, its process's freshest row (no refused row there may be its own), and judges as over the whole partition", async () => {
  const all = await identities.query(SCOPE_A);
  expect(all.items.length + all.invalid.length).toBe(2 * FLOOD);
  const { bytes, pages, result } = await held((client) => new IdentityStore(client, t.names.identities).processSessions(`${sessionScope(['A'])}:gone`, 'pA'));
  const read = result as Awaited<ReturnType<IdentityStore['processSessions']>>;
  expect(pages).toBeGreaterThan(10);
  expect(read.rows.map((r) => r.name)).toEqual([FRESHEST]); // before: all 36 of pA's
  expect(read.refused).toEqual([]); // pX's are not pA's
  expect(bytes, `held ${(bytes / 1e6).toFixed(1)} MB`).toBeLessThan(BOUND); // before: some 36 parsed and 36 refused rows as stored
  // judged as over the whole partition (vacancy.ts judgingRow)
  const lease = (await leases.read('A')).item!;
  const whole = judgingRow(lease, undefined, () => all.items);
  expect(judgingRow(lease, undefined, () => read.rows)).toEqual(whole);
  expect(whole?.own?.name).toBe(FRESHEST);
});

it("processSessions: a fresher row of the process's under another partition's name (a follower's freshestOf takes it, judgingRow does not) is kept beside its freshest, and its first refused row", async () => {
  const tt = await testTables('session-readers-flood-odd');
  try {
    const named = `${sessionScope(['A'])}:gone`;
    expect(processSessionComponents(named, 'pA')).toEqual([SCOPE_A]);
    const store = new IdentityStore(tt.client, tt.names.identities);
    const reader = new SessionReader(tt.client, tt.names.identities, { monotonic: () => 0 });
    const term = { lease: 'A', holderIdentity: 'w', fencingToken: 7 };
    await put(tt.client, tt.names.identities, [
      row('a-own', 'pA', NOW - 3 * SEC),
      { ...row('b-misnamed', 'pA', NOW - SEC), name: 'elsewhere:b-misnamed' },
      row('c-own', 'pA', NOW - 3 * SEC),
      ...Array.from({ length: 8 }, (_, i) => row(`d-other-${i}`, 'pX', NOW)),
    ]);
    const all = (await store.query(SCOPE_A)).items;
    const read = await store.processSessions(named, 'pA');
    expect(read.rows.map((r) => r.name)).toEqual(['elsewhere:b-misnamed', `${sessionScope(['A'])}:a-own`]);
    // as over the whole partition: the tick's rule (the first of equal stamps), and a follower's
    const lease = { session: named, holderIdentity: 'w', holderInstance: 'w_1@pA' };
    expect(judgingRow(lease, undefined, () => read.rows)).toEqual(judgingRow(lease, undefined, () => all));
    expect((await reader.freshestOf(named, 'pA', term)).row?.name).toBe('elsewhere:b-misnamed');
    // rows the schema refuses that may be pA's own (naming it, or a process that does not read): the first kept, the term judged by nobody
    await put(tt.client, tt.names.identities, Array.from({ length: 8 }, (_, i) => row(`e-refused-${i}`, i % 2 ? 'pA' : 5, NOW, true)));
    expect((await store.processSessions(named, 'pA')).refused.map((r) => r.row['name'])).toEqual([`${sessionScope(['A'])}:e-refused-0`]);
    const e = await reader.freshestOf(named, 'pA', term).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(BrokenSessionError);
    expect((e as BrokenSessionError).term.session).toBe(`${sessionScope(['A'])}:e-refused-0`);
  } finally {
    await tt.drop();
  }
});

it("getLeader on a term judged off its named row holds a few rows of the flood at most, and answers as before", async () => {
  const at = (ms: number) => (client: DynamoDBClient) => getLeader('A', { client, tables: t.names, clockSync: 'none', clock: manualClock(ms) });
  // pA's freshest row + 15 s + the 1 s skew margin
  const live = await held(at(NOW + 14 * SEC));
  expect(live.result).toMatchObject({ holder: 'w', fencingToken: 7 });
  expect(live.bytes, `held ${(live.bytes / 1e6).toFixed(1)} MB`).toBeLessThan(BOUND); // before: the whole partition
  expect(await at(NOW + 14 * SEC + 1)(t.client)).toBeNull();
});

it(`the CLI's session scan keeps the rows its leases are judged by, tells the first ${TOLD_REFUSED_SESSIONS} refused rows and counts the rest`, async () => {
  const err: string[] = [];
  const sink = { out: () => {}, err: (s: string) => void err.push(s), color: false };
  const { bytes, result } = await held((client) => scanLeasesJudged(cliContext(client, { tablePrefix: t.names.leases.replace(/-leases$/, ''), tables: t.names }, { clock: manualClock(NOW), sink, output: 'table' })));
  const { leases: listed, sessions } = result as Awaited<ReturnType<typeof scanLeasesJudged>>;
  expect([...sessions.rows.keys()]).toEqual([FRESHEST]); // before: all 36 of pA's
  expect(bytes, `held ${(bytes / 1e6).toFixed(1)} MB`).toBeLessThan(BOUND); // before: the whole partition, pX's rows as stored
  const seen = seenIn(sessions, listed.find((l) => l.name === 'A')!);
  expect(seen?.judging?.own?.name).toBe(FRESHEST);
  expect(seen?.judging?.row?.renewTime).toBe(NOW - 2 * SEC);
  const skipped = err.filter((l) => l.startsWith('warning: skipped an identity row'));
  expect(skipped).toHaveLength(TOLD_REFUSED_SESSIONS); // before: 36
  expect(err.filter((l) => !l.startsWith('warning: skipped an identity row'))).toEqual([`warning: skipped ${FLOOD - TOLD_REFUSED_SESSIONS} more identity rows of the session partitions read that do not match the schema (not shown)`]);
});
