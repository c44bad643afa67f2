/**
 * A worker of lease V writes candidate rows of V, each on its own session row in its grant's
 * partition, every session row valid and as large as the schema lets it be (256 left terms, 64
 * labels: some 230 KB; review, 2026-12-07, fourteenth). Before: each reconcile of V read every one
 * whole and kept it parsed (999 of them: 418 MB held, 1.2 GB with labels of control characters:
 * the stream functions and the coordinator ran out of memory, and the lease stream retried for
 * ever). Now a look-up reads of each session only what vouches for a candidate (its name, stamp and
 * process, projected) and keeps that; at most MAX_SESSIONS_PER_LEASE sessions for one lease's
 * look-up (listVouched: the CLI, the functions). A ping answers nothing: the row it lands on is
 * neither sent back nor parsed. On DynamoDB Local.
 */
import { BatchWriteItemCommand, PutItemCommand, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps, reconcileLease, type CoordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { listVouched, MAX_SESSIONS_PER_LEASE, readSessions } from '../../lib/coordinator/vouched.js';
import { sessionKey, sessionScope } from '../../lib/schemas/identity.js';
import { CandidateStore, MAX_CANDIDATES_PER_LEASE } from '../../lib/stores/candidate-store.js';
import { testTables, type TestTables } from '../support.js';

const T0 = Date.UTC(2026, 11, 7);
const MIN = 60_000;
const OEV = 'OldestEmulationVersion';
const SCOPE = sessionScope(['V']);
const VOUCH = ['name', 'process', 'renewTime'];

let t: TestTables;
beforeAll(async () => void (t = await testTables('vouched')));
afterAll(() => t.drop());

/** 64 labels of 128 + 256 characters, and 256 left terms of 253-character lease names and 512-character instances: some 230 KB, every field valid. */
const labels = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`l${i}`.padEnd(128, 'x'), 'v'.repeat(256)]));
const leftTerms = Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`gone-${i}`.padEnd(253, 'x'), { token: i, instance: `w${i}@`.padEnd(512, 'p'), stamp: T0 }]));

const session = (i: number, renewTime: number, big: boolean) => ({ ...sessionKey(`${SCOPE}:s${i}`), holderIdentity: `s${i}`, process: `p${i}`, hostname: 'h', leaseDurationSeconds: 86_400, acquireTime: T0 - MIN, renewTime, revision: 1, ...(big ? { labels, leftTerms } : {}) });
const candidate = (lease: string, i: number, renewTime: number) => ({ leaseName: lease, name: `c${String(i).padStart(4, '0')}`, binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OEV], createdAt: T0 - 60 * MIN, renewTime, revision: 1, identity: `w${i}@p${i}`, session: `${SCOPE}:s${i}` });

async function batchPut(table: string, rows: Record<string, unknown>[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 25) {
    let req: Record<string, WriteRequest[]> | undefined = { [table]: rows.slice(i, i + 25).map((r) => ({ PutRequest: { Item: marshall(r) } })) };
    while (req && Object.keys(req).length) req = (await t.client.send(new BatchWriteItemCommand({ RequestItems: req }))).UnprocessedItems;
  }
}

/** Every answer to a read of the identities table (its row's attributes) and to a write of the candidates table, while `run` runs. */
async function answers<T>(run: () => Promise<T>): Promise<{ out: T; sessionReads: string[][]; candidateWrites: { command: string; attributes: string[] | undefined; returnValues: unknown }[] }> {
  const sessionReads: string[][] = [];
  const candidateWrites: { command: string; attributes: string[] | undefined; returnValues: unknown }[] = [];
  t.client.middlewareStack.add(
    (next, c) => async (args) => {
      const r = await next(args);
      const input = args.input as { TableName?: string; ReturnValues?: unknown };
      const output = r.output as { Item?: Record<string, unknown>; Attributes?: Record<string, unknown> };
      if (c.commandName === 'GetItemCommand' && input.TableName === t.names.identities && output.Item) sessionReads.push(Object.keys(output.Item).sort());
      if (c.commandName === 'UpdateItemCommand' && input.TableName === t.names.candidates) candidateWrites.push({ command: c.commandName, attributes: output.Attributes && Object.keys(output.Attributes).sort(), returnValues: input.ReturnValues });
      return r;
    },
    { step: 'initialize', name: 'vouched-answers' },
  );
  try {
    return { out: await run(), sessionReads, candidateWrites };
  } finally {
    t.client.middlewareStack.remove('vouched-answers');
  }
}

it("a lease's candidates on large session rows: each session read and kept as what vouches (name, stamp, process), the candidates vouched by them, and the election's pings answering no row", async () => {
  const n = 12;
  const clock = manualClock(T0);
  const deps: CoordinatorDeps = coordinatorDeps(t.client, t.names, { clock });
  // the candidates last renewed their own rows 40 minutes ago (stale by them alone); their sessions a minute ago (live, none fresh)
  for (let i = 0; i < n; i++) await t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall(session(i, T0 - MIN, true)) }));
  await batchPut(t.names.candidates, Array.from({ length: n }, (_, i) => candidate('V', i, T0 - 40 * MIN)));

  // what one lease's look-up keeps of each session (the CLI's, the functions'; the reconcile's snapshot reads them so too)
  const { out: kept, sessionReads } = await answers(() => readSessions(deps.identities, Array.from({ length: n }, (_, i) => `${SCOPE}:s${i}`)));
  expect(sessionReads).toEqual(Array.from({ length: n }, () => VOUCH)); // before: every row whole (labels, leftTerms, …)
  expect([...kept.values()].map((v) => v && Object.keys(v).sort())).toEqual(Array.from({ length: n }, () => VOUCH));
  expect(kept.get(`${SCOPE}:s3`)).toEqual({ name: `${SCOPE}:s3`, renewTime: T0 - MIN, process: 'p3' });

  // vouched by them: live, so an election opens on V and pings them
  const { candidates } = await listVouched(deps, 'V');
  expect(candidates.map((c) => c.renewTime)).toEqual(Array.from({ length: n }, () => T0 - MIN));
  const { out: o, sessionReads: reconcileReads, candidateWrites } = await answers(() => reconcileLease(deps, 'V'));
  expect(o.decision.kind).toBe('openElection');
  expect(o.pinged.length).toBeGreaterThan(0);
  expect(reconcileReads).toEqual(Array.from({ length: n }, () => VOUCH));
  // each ping landed, answering nothing (before: the row as written, ALL_NEW, parsed and kept)
  expect(candidateWrites).toHaveLength(o.pinged.length);
  for (const w of candidateWrites) expect(w).toEqual({ command: 'UpdateItemCommand', attributes: undefined, returnValues: undefined });
  for (const name of o.pinged) expect((await deps.candidates.read('V', name)).item?.pingTime).toBe(T0);
  // pinged again for the same election: refused, told as not pinged
  expect(await deps.candidates.ping('V', o.pinged[0]!, T0)).toBe(false);
  expect(await deps.candidates.ping('V', 'nobody', T0)).toBe(false);
});

it('a session whose vouching fields do not parse vouches for nothing; one gone neither', async () => {
  const deps = coordinatorDeps(t.client, t.names, { clock: manualClock(T0) });
  await t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall({ ...session(900, T0, false), process: 7 }) }));
  const kept = await readSessions(deps.identities, [`${SCOPE}:s900`, `${SCOPE}:s901`]);
  expect([...kept]).toEqual([[`${SCOPE}:s900`, undefined], [`${SCOPE}:s901`, undefined]]);
});

it(`one lease's look-up reads at most MAX_SESSIONS_PER_LEASE (${MAX_SESSIONS_PER_LEASE}) sessions: candidates on the others count by their own renewTime, and a warning says so once`, async () => {
  expect(MAX_SESSIONS_PER_LEASE).toBe(MAX_CANDIDATES_PER_LEASE); // every candidate the coordinator holds of a lease, each on a session of its own
  const n = MAX_SESSIONS_PER_LEASE + 2;
  // the CLI's store: no cap on the rows it lists
  const stores = { candidates: new CandidateStore(t.client, t.names.candidates), identities: coordinatorDeps(t.client, t.names).identities };
  await batchPut(t.names.identities, Array.from({ length: n }, (_, i) => session(1000 + i, T0, false)));
  await batchPut(t.names.candidates, Array.from({ length: n }, (_, i) => candidate('W', 1000 + i, T0 - 40 * MIN)));
  const warnings: Error[] = [];
  const warned = (w: Error) => void warnings.push(w);
  process.on('warning', warned);
  try {
    const { out: list, sessionReads } = await answers(() => listVouched(stores, 'W'));
    await new Promise((resolve) => setImmediate(resolve)); // (a warning is emitted on the next turn)
    expect(sessionReads).toHaveLength(MAX_SESSIONS_PER_LEASE); // before: one a session, however many
    expect(list.candidates.filter((c) => c.renewTime === T0)).toHaveLength(MAX_SESSIONS_PER_LEASE);
    expect(list.candidates.slice(MAX_SESSIONS_PER_LEASE).map((c) => c.renewTime)).toEqual([T0 - 40 * MIN, T0 - 40 * MIN]);
    expect(warnings.map((w) => w.message)).toEqual([`lease "W": 2 sessions its candidates name past the first ${MAX_SESSIONS_PER_LEASE} not read: candidates on them count by their own renewTime`]);
  } finally {
    process.off('warning', warned);
  }
});

it("withLease's `auto` asks only whether the lease has a candidate: one row read where the first takes, past refused rows to the first that does", async () => {
  const store = new CandidateStore(t.client, t.names.candidates);
  const queried: number[] = [];
  t.client.middlewareStack.add(
    (next, c) => async (args) => {
      const r = await next(args);
      if (c.commandName === 'QueryCommand') queried.push((r.output as { Count?: number }).Count ?? 0);
      return r;
    },
    { step: 'initialize', name: 'count-rows' },
  );
  try {
    // 40 candidates of X, all valid
    await batchPut(t.names.candidates, Array.from({ length: 40 }, (_, i) => candidate('X', i, T0)));
    expect((await store.list('X', true)).candidates.length).toBe(1);
    expect(queried).toEqual([1]); // before (list): all 40
    // Y: 30 rows the schema refuses, then a valid one
    queried.length = 0;
    await batchPut(t.names.candidates, [...Array.from({ length: 30 }, (_, i) => ({ ...candidate('Y', i, T0), binaryVersion: 7 })), candidate('Y', 30, T0)]);
    expect((await store.list('Y', true)).candidates.map((c) => c.name)).toEqual(['c0030']);
    expect(queried).toEqual([1, 25, 5]);
    queried.length = 0;
    expect((await store.list('Z', true)).candidates).toEqual([]);
    expect(queried).toEqual([0]);
  } finally {
    t.client.middlewareStack.remove('count-rows');
  }
});
