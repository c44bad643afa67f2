/**
 * A worker granted one lease writes up to MAX_CANDIDATES_PER_LEASE candidate rows of it, each up to
 * DynamoDB's 400 KB (review, 2026-12-07, fourteenth): rows the schema refuses (a binaryVersion of
 * 350 KB) whose stamp still parses or does not, and valid rows with 64 full labels (some 25 KB).
 * Before: a pass held every refused row whole, to time or collect it at its end, and every valid
 * row with its labels (some 340 MB a lease at the cap: two such leases ran the 512 MB coordinator
 * out of memory at every invocation). Now it keeps of a refused row its key and stamp, or its key
 * and summary (digest, attribute count, sighting), of the first MAX_REFUSED_CANDIDATES it scans, and
 * reads a row again whole to write against it; of a valid row, no labels. On DynamoDB Local.
 *
 * What the pass still holds is judged by reachability, not by heap size: each row the scan gives is
 * watched through a WeakRef, and once the candidates scan is over (at the identities scan) a full
 * collection (V8's gc, exposed at run time) must have freed every one but those of the scan's last
 * page (at most 1 MB, DynamoDB's page: an async function's frame may still hold it).
 */
import { BatchWriteItemCommand, GetItemCommand, PutItemCommand, UpdateItemCommand, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps, MAX_REFUSED_CANDIDATES, reconcileAll, type CoordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { REFUSED_SEEN } from '../../lib/coordinator/refused-session.js';
import { testTables, type TestTables } from '../support.js';

const T0 = Date.UTC(2026, 11, 7);
const HOUR = 3_600_000;
const OEV = 'OldestEmulationVersion';
const BIG = 'x'.repeat(350_000); // refused: a version is at most a few characters

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

let t: TestTables;
beforeAll(async () => void (t = await testTables('refused-flood')));
afterAll(() => t.drop());

const candidate = (leaseName: string, name: string, more: Record<string, unknown>) => ({ leaseName, name, binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OEV], createdAt: T0 - HOUR, renewTime: T0, revision: 1, ...more });

async function put(tables: TestTables, rows: Record<string, unknown>[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 25) {
    let req: Record<string, WriteRequest[]> | undefined = { [tables.names.candidates]: rows.slice(i, i + 25).map((r) => ({ PutRequest: { Item: marshall(r) } })) };
    while (req && Object.keys(req).length) req = (await tables.client.send(new BatchWriteItemCommand({ RequestItems: req }))).UnprocessedItems;
  }
}

const stored = async (tables: TestTables, key: { leaseName: string; name: string }) => {
  const r = await tables.client.send(new GetItemCommand({ TableName: tables.names.candidates, Key: marshall(key), ConsistentRead: true }));
  return r.Item && unmarshall(r.Item);
};

/** Watches every row (refused) and every valid row's labels the pass's candidates scan gives; `held()`: how many of its pages but the last a full collection leaves, counted at the start of the identities scan. */
function watch(deps: CoordinatorDeps) {
  const rows: WeakRef<object>[] = [];
  const labels: WeakRef<object>[] = [];
  let held: { rows: number; labels: number } | undefined;
  let last = { rows: 0, labels: 0 }; // (where the last page starts)
  const scan = deps.candidates.scan.bind(deps.candidates);
  deps.candidates.scan = async function* (opts) {
    for await (const page of scan(opts)) {
      last = { rows: rows.length, labels: labels.length };
      for (const s of page) {
        if (!s.ok) rows.push(new WeakRef(s.row));
        else if (s.item.labels) labels.push(new WeakRef(s.item.labels));
      }
      yield page;
    }
  };
  const scanIdentities = deps.identities.scan.bind(deps.identities);
  deps.identities.scan = async function* (opts) {
    if (!held) {
      await new Promise((resolve) => setImmediate(resolve)); // (a WeakRef keeps its target until its job ends)
      gc();
      const alive = (refs: WeakRef<object>[], end: number) => refs.slice(0, end).filter((r) => r.deref() !== undefined).length;
      held = { rows: alive(rows, last.rows), labels: alive(labels, last.labels) };
    }
    yield* scanIdentities(opts);
  };
  return { watched: () => ({ rows: rows.length, labels: labels.length }), judged: () => last, held: () => held };
}

it('a flood of large refused candidate rows and labelled valid ones: the pass holds none of them whole, and still collects, times and deletes the refused ones', async () => {
  const clock = manualClock(T0);
  const deps = coordinatorDeps(t.client, t.names, { clock });
  const labels = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`l${i}`.padEnd(128, 'x'), 'v'.repeat(256)]));
  // A's worker: 20 refused rows stale by their stamps, 20 whose renewTime does not parse, each of 350 KB
  const stale = Array.from({ length: 20 }, (_, i) => candidate('A', `stale-${i}`, { binaryVersion: BIG, renewTime: T0 - 2 * HOUR }));
  const unstamped = Array.from({ length: 20 }, (_, i) => candidate('A', `unstamped-${i}`, { binaryVersion: BIG, renewTime: 'then' }));
  await put(t, [...stale, ...unstamped]);
  // B: 60 live, valid candidates with 64 full labels each (1.5 MB: more than a page)
  await put(t, Array.from({ length: 60 }, (_, i) => candidate('B', `b-${i}`, { labels })));
  const keyOf = (r: { leaseName: string; name: string }) => ({ leaseName: r.leaseName, name: r.name });
  const w = watch(deps);
  // one stale row renewed by its writer within the pass, after the scans: read again, it is kept
  let renewed = false;
  const afterEach = async () => {
    if (renewed) return;
    renewed = true;
    await t.client.send(new UpdateItemCommand({ TableName: t.names.candidates, Key: marshall(keyOf(stale[0]!)), UpdateExpression: 'SET renewTime = :now', ExpressionAttributeValues: marshall({ ':now': T0 }) }));
  };

  const r = await reconcileAll(deps, { afterEach });
  expect(w.watched()).toEqual({ rows: 40, labels: 60 });
  expect(w.judged().rows + w.judged().labels, 'rows before the last page').toBeGreaterThanOrEqual(60);
  expect(w.held(), "refused rows and labels of the scan's pages but the last the pass holds after its candidates scan").toEqual({ rows: 0, labels: 0 }); // before: all of them
  expect(r.errors).toEqual([]);
  expect(r.invalid).toHaveLength(40);
  const byName = <T extends { key: { name: string } }>(xs: readonly T[]) => [...xs].sort((a, b) => a.key.name.localeCompare(b.key.name));
  // stale by their stamps: each read again and deleted as read; the one renewed meanwhile stays
  expect(r.collectedCandidates.filter((c) => c.leaseName === 'A').map((c) => c.name).sort()).toEqual(stale.slice(1).map((s) => s.name).sort());
  expect(await stored(t, keyOf(stale[1]!))).toBeUndefined();
  expect((await stored(t, keyOf(stale[0]!)))?.['renewTime']).toBe(T0);
  // whose stamp does not parse: timed from this sighting, the mark left on each row
  const wait = deps.config.candidateStaleAfterMs + deps.config.clockSkewMs;
  expect(byName(r.refusedCandidates)).toEqual(byName(unstamped.map((u) => ({ key: keyOf(u), unchangedSince: T0, deleteAfter: T0 + wait, deleted: false }))));
  expect((await stored(t, keyOf(unstamped[0]!)))?.[REFUSED_SEEN]).toMatchObject({ at: T0 });

  // unchanged past the wait: deleted, each read again whole first
  clock.set(T0 + wait + 1);
  const again = watch(deps);
  const r2 = await reconcileAll(deps);
  expect(again.held()).toEqual({ rows: 0, labels: 0 });
  expect(r2.errors).toEqual([]);
  expect(byName(r2.refusedCandidates)).toEqual(byName(unstamped.map((u) => ({ key: keyOf(u), unchangedSince: T0, deleteAfter: T0 + wait, deleted: true }))));
  for (const u of unstamped) expect(await stored(t, keyOf(u))).toBeUndefined();
  expect(r2.collectedCandidates.map((c) => c.name)).toContain(stale[0]!.name); // stale by then too
});

it(`refused candidate rows past the first ${MAX_REFUSED_CANDIDATES} a pass scans are told but neither timed nor collected, and said so; a later pass takes them`, async () => {
  const tt = await testTables('refused-flood-cap');
  try {
    const clock = manualClock(T0);
    const deps = coordinatorDeps(tt.client, tt.names, { clock });
    // two leases (a lease's rows past MAX_CANDIDATES_PER_LEASE are not read): stale by their stamps, and whose stamps do not parse
    const stale = Array.from({ length: 505 }, (_, i) => candidate('R1', `s-${String(i).padStart(4, '0')}`, { binaryVersion: 7, renewTime: T0 - 2 * HOUR }));
    const unstamped = Array.from({ length: 500 }, (_, i) => candidate('R2', `u-${String(i).padStart(4, '0')}`, { binaryVersion: 7, renewTime: 'then' }));
    await put(tt, [...stale, ...unstamped]);
    const r = await reconcileAll(deps);
    expect(r.invalid).toHaveLength(1_005); // every one told
    const collected = r.collectedCandidates.length;
    expect(collected + r.refusedCandidates.length).toBe(MAX_REFUSED_CANDIDATES); // before: 1,005
    expect(r.errors.map((e) => [e.lease, e.error.message])).toEqual([['(refused candidate rows)', `1005: past the first ${MAX_REFUSED_CANDIDATES}, timed and collected by later passes`]]);
    // the next pass: the rest
    const r2 = await reconcileAll(deps);
    expect(r2.errors).toEqual([]);
    expect(collected + r2.collectedCandidates.length).toBe(505);
    expect(r2.refusedCandidates).toHaveLength(500);
  } finally {
    await tt.drop();
  }
});
