/**
 * A worker granted one lease writes thousands of valid candidate rows in its partition (IAM limits
 * keys and attributes, not counts): an attacker review, 2026-12-06. Before: the tick read and held
 * every row of the table before reconciling any lease, an election pinged every row at once, and
 * the scans ran past the tick's deadline. Now pings go 25 at a time, a lease over
 * MAX_CANDIDATES_PER_LEASE is left alone and told (the others reconciled as before), and the scans
 * stop at the deadline. On DynamoDB Local.
 */
import { BatchWriteItemCommand, DeleteItemCommand, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { coordinatorDeps, reconcileAll, reconcileLease, type CoordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { MAX_CANDIDATES_PER_LEASE, TooManyCandidatesError } from '../../lib/stores/candidate-store.js';
import { manualClock, streamRecords, testTables, type TestTables } from '../support.js';

const OEV = 'OldestEmulationVersion';
let t: TestTables;
beforeAll(async () => {
  t = await testTables('flood');
});
afterAll(async () => {
  await t.drop();
});

const row = (lease: string, name: string, now: number) => ({ leaseName: lease, name, binaryVersion: '1.31.0', emulationVersion: '1.30.0', preferredStrategies: [OEV], renewTime: now, createdAt: now, revision: 1 });

/** `n` valid candidate rows of `lease`, as a worker's BatchWriteItem would put them. */
async function flood(lease: string, n: number, now: number): Promise<void> {
  const rows = Array.from({ length: n }, (_, i) => row(lease, `w${String(i).padStart(5, '0')}`, now));
  const batches = Array.from({ length: Math.ceil(n / 25) }, (_, i) => rows.slice(i * 25, i * 25 + 25));
  for (const b of batches) {
    let req: Record<string, WriteRequest[]> | undefined = { [t.names.candidates]: b.map((r) => ({ PutRequest: { Item: marshall(r) } })) };
    while (req && Object.keys(req).length) req = (await t.client.send(new BatchWriteItemCommand({ RequestItems: req }))).UnprocessedItems;
  }
}

/** The stream functions' deps on the test tables, on `clock`, sending nothing anywhere. */
const functionDeps = (clock: ReturnType<typeof manualClock>): FunctionDeps => ({
  coordinator: coordinatorDeps(t.client, t.names, { clock }),
  timer: { schedule: async () => undefined },
  publish: async () => undefined,
  deadLetter: async () => undefined,
  ...observability('test', 'SILENT'),
});

const vacant = async (d: CoordinatorDeps, lease: string) => d.leases.write(await d.leases.read(lease), { set: { leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 1 } });

it('an election pings its candidates at most 25 at a time, every one of them', async () => {
  const clock = manualClock();
  const d = coordinatorDeps(t.client, t.names, { clock });
  await flood('pings', 60, clock.now() - 60_000); // last seen a minute ago: asked first
  await vacant(d, 'pings');
  let inFlight = 0;
  let most = 0;
  const ping = d.candidates.ping.bind(d.candidates);
  d.candidates.ping = async (...a) => {
    most = Math.max(most, ++inFlight);
    try {
      return await ping(...a);
    } finally {
      inFlight--;
    }
  };
  const o = await reconcileLease(d, 'pings');
  expect(o.decision.kind).toBe('openElection');
  expect(o.pinged).toHaveLength(60);
  expect(most).toBe(25); // before: 60
});

it('a lease over the cap is left alone and told, by the tick and by its own reconcile; the other leases are reconciled', async () => {
  const clock = manualClock();
  const d = coordinatorDeps(t.client, t.names, { clock });
  const now = clock.now();
  await flood('over', MAX_CANDIDATES_PER_LEASE + 1, now);
  // a term that ended: an election would be opened on it
  await d.leases.write(await d.leases.read('over'), { set: { holderIdentity: 'x', holderInstance: 'x-1', leaseDurationSeconds: 15, acquireTime: now - 120_000, renewTime: now - 60_000, leaseTransitions: 0, fencingToken: 2, electedBy: 'coordinator' } });
  const overBefore = await d.leases.read('over');
  await flood('under', 3, now - 60_000);
  await vacant(d, 'under');

  // its own reconcile (the streams' and timers' path): reads cap + 1 rows, then stops
  let queried = 0;
  const counting = coordinatorDeps(t.client, t.names, { clock });
  t.client.middlewareStack.add(
    (next, c) => async (args) => {
      const r = await next(args);
      if (c.commandName === 'QueryCommand') queried += (r.output as { Count?: number }).Count ?? 0;
      return r;
    },
    { step: 'initialize', name: 'count-query' },
  );
  try {
    const e = await reconcileLease(counting, 'over').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(TooManyCandidatesError); // before: an election of 1,001 pings
    expect(e).toMatchObject({ rows: MAX_CANDIDATES_PER_LEASE + 1, message: expect.stringContaining('lease "over"') });
    expect(queried).toBe(MAX_CANDIDATES_PER_LEASE + 1);
  } finally {
    t.client.middlewareStack.remove('count-query');
  }

  // the tick: rows past the cap are counted, not parsed or kept
  let overRowsYielded = 0;
  const scan = d.candidates.scan.bind(d.candidates);
  d.candidates.scan = async function* (opts) {
    for await (const page of scan(opts)) {
      overRowsYielded += page.filter((s) => (s.ok ? s.item.leaseName : s.invalid.key['leaseName']) === 'over').length;
      yield page;
    }
  };
  const r = await reconcileAll(d);
  expect(r.errors.map((e) => [e.lease, e.error.name])).toEqual([['over', 'TooManyCandidatesError']]);
  expect(r.errors[0]!.error.message).toMatch(/"over": 1001\+ candidate rows, over 1000: left alone until its workers write fewer/);
  expect(overRowsYielded).toBe(MAX_CANDIDATES_PER_LEASE);
  const under = r.outcomes.filter((o) => o.lease !== 'pings'); // (the first test's lease, left as it was)
  expect(under.map((o) => [o.lease, o.decision.kind])).toEqual([['under', 'openElection']]);
  expect(under[0]!.pinged).toHaveLength(3);
  // its holder's term untouched, no election opened
  expect((await d.leases.read('over')).revision).toBe(overBefore.revision);
});

it("the tick's scans stop at its deadline, between pages, and say so", async () => {
  const tt = await testTables('flood-deadline');
  try {
    const clock = manualClock();
    const d = coordinatorDeps(tt.client, tt.names, { clock });
    for (const n of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']) await d.candidates.write(await d.candidates.read('slow', n), { set: { binaryVersion: '1.31.0', emulationVersion: '1.30.0', preferredStrategies: [OEV], renewTime: clock.now(), createdAt: clock.now() } });
    // each row its own page, each taking 1 s of the coordinator's clock
    let pages = 0;
    const scan = d.candidates.scan.bind(d.candidates);
    d.candidates.scan = async function* (opts) {
      for await (const page of scan(opts))
        for (const s of page) {
          pages++;
          clock.advance(1_000);
          yield [s];
        }
    };
    const r = await reconcileAll(d, { deadline: clock.monotonic() + 3_500 });
    expect(pages).toBe(4); // before: 8, and on to the identities' scan
    expect(r.stopped).toEqual({ after: undefined });
    expect(r.reached).toBe(0);
    expect(r.outcomes).toEqual([]);
    expect(r.errors.map((e) => e.lease)).toEqual(['(the scans)']);
  } finally {
    await tt.drop();
  }
});

it("an operator's delete of a held row of a lease over the cap: the lease stream's record is handled (left alone and told), not failed to be retried for hours ahead of its shard's other leases", async () => {
  const clock = manualClock();
  const lease = 'flooded-deleted';
  const logged: string[] = [];
  const d = functionDeps(clock);
  const error = d.logger.error.bind(d.logger);
  d.logger.error = (message: string, ...rest: unknown[]) => void (logged.push(message), error(message, ...(rest as [])));
  await flood(lease, MAX_CANDIDATES_PER_LEASE + 1, clock.now());
  const c = d.coordinator;
  await c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'w00000', holderInstance: 'w00000-1', leaseDurationSeconds: 15, acquireTime: clock.now(), renewTime: clock.now(), leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' } });
  await t.client.send(new DeleteItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }) }));
  const removed = (await streamRecords(t.client, t.names.leases)).filter((x) => x.eventName === 'REMOVE' && x.dynamodb!.Keys!['name']!.S === lease).at(-1)!;
  expect(await leaseStream(d)({ Records: [removed] } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] }); // before: this record failed
  expect(logged.some((m) => m.includes(`lease "${lease}"`) && m.includes('candidate rows'))).toBe(true);
  expect((await c.leases.read(lease)).item).toBeUndefined(); // no row made again, no election: left alone
});

it("an operator's delete of a held row pings the election it opens at most 25 at a time, every candidate", async () => {
  const clock = manualClock();
  const lease = 'deleted-pings';
  const d = functionDeps(clock);
  const c = d.coordinator;
  await flood(lease, 60, clock.now() - 60_000);
  let inFlight = 0;
  let most = 0;
  const counted =
    <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      most = Math.max(most, ++inFlight);
      try {
        return await f(...a);
      } finally {
        inFlight--;
      }
    };
  c.candidates.ping = counted(c.candidates.ping.bind(c.candidates));
  await c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'w00000', holderInstance: 'w00000-1', leaseDurationSeconds: 15, acquireTime: clock.now() - 60_000, renewTime: clock.now() - 60_000, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' } });
  await t.client.send(new DeleteItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }) }));
  const removed = (await streamRecords(t.client, t.names.leases)).filter((x) => x.eventName === 'REMOVE' && x.dynamodb!.Keys!['name']!.S === lease).at(-1)!;
  expect(await leaseStream(d)({ Records: [removed] } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });
  const election = (await c.leases.read(lease)).item?.election;
  expect(election).toBeDefined();
  const pinged = (await c.candidates.list(lease)).candidates.filter((x) => x.pingTime !== undefined);
  expect(pinged).toHaveLength(60);
  expect(most).toBe(25); // before: 60
});

it('the sessions a lease\'s candidates name are read at most 25 at a time, every one of them', async () => {
  const clock = manualClock();
  const lease = 'sessions';
  const d = coordinatorDeps(t.client, t.names, { clock });
  const rows = Array.from({ length: 60 }, (_, i) => ({ ...row(lease, `s${String(i).padStart(3, '0')}`, clock.now()), session: `process-${i}` }));
  for (let i = 0; i < rows.length; i += 25) await t.client.send(new BatchWriteItemCommand({ RequestItems: { [t.names.candidates]: rows.slice(i, i + 25).map((r) => ({ PutRequest: { Item: marshall(r) } })) } }));
  await vacant(d, lease);
  let inFlight = 0;
  let most = 0;
  const names = new Set<string>();
  const read = d.identities.readFields.bind(d.identities);
  d.identities.readFields = async (...a) => {
    most = Math.max(most, ++inFlight);
    names.add(a[1]);
    try {
      return await read(...a);
    } finally {
      inFlight--;
    }
  };
  await reconcileLease(d, lease);
  expect(names.size).toBeGreaterThanOrEqual(60);
  expect(most).toBe(25); // before: 60
});
