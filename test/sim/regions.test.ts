/**
 * The simulator's MRSC layer (sim/regions.ts' RegionSet) on the model: quorum, the witness, a Region
 * catching up, replicated write conflicts, the cross-Region round trip, no transactions.
 */
import { GetItemCommand, PutItemCommand, TransactWriteItemsCommand, UpdateItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { drainMicrotasks, seededRandom, simulatedClock } from '../../lib/clock.js';
import { DynamoDBModel } from '../../sim/dynamodb-model/index.js';
import { RegionSet, regionFigures, type RegionPlan, type RegionSetOptions } from '../../sim/regions.js';
import { ns } from '../../sim/feed.js';
import type { HistoryRecord } from '../../lib/history/schema.js';
import { createTables } from '../../lib/local/tables.js';
import { defaultTableNames } from '../../lib/tables.js';

const names = defaultTableNames('mrsc');
const A = 'us-east-1';
const B = 'us-east-2';
const C = 'us-west-2';

async function world(shape: Pick<RegionSetOptions, 'replicas' | 'witness'>) {
  const clock = simulatedClock({ start: 1_800_000_000_000, seed: 3, settle: drainMicrotasks() });
  const model = new DynamoDBModel({ now: () => clock.now() });
  const regions = new RegionSet(clock, seededRandom(5), { ...shape, crossRegionMs: [10, 30], catchUpMs: 5_000, keysOf: (t) => (t === names.leases ? ['name'] : ['pk']) });
  await createTables(model.client({ name: 'setup' }), names);
  // the SDK's jittered backoff between attempts, on simulated time
  const client = (region: string): DynamoDBClient => model.client({ name: region, intercept: (req, apply) => regions.serve(region, req, apply), backoff: (attempt) => clock.sleep(25 * 2 ** attempt) });
  /** Runs `p` to its end on simulated time; resolves to its value or its error. */
  const settle = async <T>(p: Promise<T>): Promise<T | Error> => {
    let done: { v: T | Error } | undefined;
    p.then((v) => (done = { v }), (e: unknown) => (done = { v: e as Error }));
    for (let i = 0; i < 1_000 && !done; i++) await clock.run(10);
    if (!done) throw new Error('never settled');
    return done.v;
  };
  const put = (region: string, name: string, v: number) => client(region).send(new PutItemCommand({ TableName: names.leases, Item: marshall({ name, v }) }));
  const get = async (region: string, name: string, consistent: boolean) => {
    const r = await client(region).send(new GetItemCommand({ TableName: names.leases, Key: marshall({ name }), ConsistentRead: consistent }));
    return r.Item ? unmarshall(r.Item)['v'] : undefined;
  };
  return { clock, regions, client, settle, put, get };
}

describe('MRSC Regions in the simulator', () => {
  it('three replicas: a write in one Region is read strongly in another; a cut-off Region refuses writes and strong reads, serves eventual ones; the other two keep the quorum', async () => {
    const w = await world({ replicas: [A, B, C] });
    await w.settle(w.put(A, 'x', 1));
    expect(await w.settle(w.get(C, 'x', true))).toBe(1);
    w.regions.cutOff(C);
    expect(w.regions.status(C)).toBe('no-quorum');
    expect((await w.settle(w.put(C, 'x', 2))) as Error).toMatchObject({ name: 'InternalServerError' });
    expect((await w.settle(w.get(C, 'x', true))) as Error).toMatchObject({ name: 'InternalServerError' });
    expect(await w.settle(w.get(C, 'x', false))).toBe(1);
    await w.settle(w.put(B, 'x', 3));
    expect(await w.settle(w.get(A, 'x', true))).toBe(3);
  });

  it('two replicas and a witness: losing a replica leaves the other serving; losing the witness too leaves nobody a quorum', async () => {
    const w = await world({ replicas: [A, B], witness: C });
    w.regions.lose(A);
    expect(w.regions.status(B)).toBe('serving');
    await w.settle(w.put(B, 'y', 1));
    w.regions.cutOff(C);
    expect(w.regions.status(B)).toBe('no-quorum');
    expect((await w.settle(w.put(B, 'y', 2))) as Error).toMatchObject({ name: 'InternalServerError' });
  });

  it('a Region that rejoins answers errors while it catches up, then serves what was written meanwhile', async () => {
    const w = await world({ replicas: [A, B, C] });
    w.regions.cutOff(A);
    await w.settle(w.put(B, 'z', 7));
    w.regions.rejoin(A);
    expect(w.regions.status(A)).toBe('catching-up');
    expect((await w.settle(w.get(A, 'z', false))) as Error).toMatchObject({ name: 'InternalServerError' });
    await w.clock.run(5_000);
    expect(w.regions.status(A)).toBe('serving');
    expect(await w.settle(w.get(A, 'z', true))).toBe(7);
  });

  it('writes to one item from two Regions at once: the later is a ReplicatedWriteConflictException, not applied; the SDK’s retry then lands it', async () => {
    const w = await world({ replicas: [A, B, C] });
    const apply = (v: number) => () => v;
    const req = (region: string) => ({ operation: 'UpdateItem', client: region, attempt: 1, input: { TableName: names.leases, Key: marshall({ name: 'k' }) } });
    const first = w.regions.serve(A, req(A), apply(1));
    const second = await w.settle(w.regions.serve(B, req(B), apply(2)));
    expect(second).toMatchObject({ name: 'ReplicatedWriteConflictException' });
    expect(await w.settle(first)).toBe(1);
    // a write to another item is no conflict
    const other = w.regions.serve(A, req(A), apply(3));
    expect(await w.settle(w.regions.serve(B, { ...req(B), input: { TableName: names.leases, Key: marshall({ name: 'other' }) } }, apply(4)))).toBe(4);
    await w.settle(other);
    // through the client: the conflict is retried by the SDK and the write lands
    const racing = Promise.all([w.put(A, 'k', 10), w.put(B, 'k', 20)]);
    expect(await w.settle(racing)).toHaveLength(2);
    expect([10, 20]).toContain(await w.settle(w.get(C, 'k', true)));
  });

  it('a write or strong read pays the round trip to the nearest other Region; an eventual read does not', async () => {
    const w = await world({ replicas: [A, B, C] });
    const t0 = w.clock.now();
    await w.settle(w.put(A, 'p', 1));
    expect(w.clock.now() - t0).toBeGreaterThanOrEqual(20);
    const t1 = w.clock.now();
    await w.settle(w.get(A, 'p', false));
    expect(w.clock.now() - t1).toBeLessThanOrEqual(10);
  });

  it('no transactions on MRSC tables; the Region set is three distinct Regions', async () => {
    const w = await world({ replicas: [A, B, C] });
    const tx = await w.settle(w.client(A).send(new TransactWriteItemsCommand({ TransactItems: [{ Update: { TableName: names.leases, Key: marshall({ name: 'q' }), UpdateExpression: 'SET v = :v', ExpressionAttributeValues: marshall({ ':v': 1 }) } }] })));
    expect(tx).toMatchObject({ name: 'ValidationException' });
    expect(await w.settle(w.client(A).send(new UpdateItemCommand({ TableName: names.leases, Key: marshall({ name: 'q' }), UpdateExpression: 'SET v = :v', ExpressionAttributeValues: marshall({ ':v': 1 }) })))).toBeTruthy();
    const clock = { now: () => 0, sleep: async () => undefined };
    expect(() => new RegionSet(clock, Math.random, { replicas: [A, B], crossRegionMs: [1, 2], catchUpMs: 0, keysOf: () => [] })).toThrow(/exactly three distinct Regions/);
    expect(() => new RegionSet(clock, Math.random, { replicas: [A, B, C], witness: 'eu-west-1', crossRegionMs: [1, 2], catchUpMs: 0, keysOf: () => [] })).toThrow(/exactly three/);
  });
});

describe('the Region figures (npm run sim -- --regions)', () => {
  const plan: RegionPlan = { replicas: ['us-east-1', 'us-east-2', 'us-west-2'], witness: undefined, events: [], crossRegionMs: [10, 40], catchUpMs: 2_000 };
  const rec = (event: 'started' | 'stopped', identity: string, instance: string, fencingToken: number, atMs: number, reason?: string): HistoryRecord => ({
    event,
    lease: 'job-0',
    identity,
    instance,
    fencingToken,
    mono: ns(atMs),
    wall: atMs,
    ...(reason ? { reason } : {}),
  });

  it('a cut-off Region’s leader that leads again once its Region rejoined ends the wait: the next term counts, whoever leads it (seed 17052 read 275.7 s over a 70.9 s gap)', () => {
    // w0 runs in us-east-1 (regionOf: workers in the replica Regions in turn)
    const history = [
      rec('started', 'w0', 'w0_1', 5, 1_000),
      rec('stopped', 'w0', 'w0_1', 5, 24_000, 'renewDeadline'),
      rec('started', 'w0', 'w0_1', 7, 80_900),
      rec('stopped', 'w0', 'w0_1', 7, 200_000, 'preempted'),
      rec('started', 'w1', 'w1_1', 8, 285_700),
    ];
    const [f] = regionFigures(plan, [{ kind: 'cutOff', region: 'us-east-1', mono: 10_000 }], history, ['job-0']);
    expect(f).toMatchObject({ kind: 'cutOff', lease: 'job-0', leaderStoppedAfterMs: 14_000, newLeaderAfterMs: 70_900, newLeaderRegion: 'us-east-1' });
  });

  it('a cut-off Region’s leader frozen (paused) through its deadline: its stop, recorded when it thawed, is not counted as stopping on its own (seed 17132 read 25.5 s)', () => {
    const history = [rec('started', 'w0', 'w0_1', 5, 1_000), rec('stopped', 'w0', 'w0_1', 5, 35_500, 'renewDeadline'), rec('started', 'w1', 'w1_1', 6, 24_000)];
    const paused = { kind: 'pause', from: ns(11_000), to: ns(35_200), instances: ['w0_1'] };
    const [f] = regionFigures(plan, [{ kind: 'cutOff', region: 'us-east-1', mono: 10_000 }], history, ['job-0'], [paused]);
    expect(f).toMatchObject({ leaderStoppedAfterMs: undefined, leaderFrozen: true, newLeaderAfterMs: 14_000 });
    // not frozen: counted
    const [g] = regionFigures(plan, [{ kind: 'cutOff', region: 'us-east-1', mono: 10_000 }], history, ['job-0'], [{ ...paused, instances: ['w1_1'] }]);
    expect(g).toMatchObject({ leaderStoppedAfterMs: 25_500 });
    expect(g).not.toHaveProperty('leaderFrozen');
  });

  it('a cut-off Region’s leader that stopped and then took its term again (nobody could take it meanwhile; a new token) ends the wait: seed 37503 was told "never"', () => {
    const history = [rec('started', 'w0', 'w0_1', 5, 1_000), rec('stopped', 'w0', 'w0_1', 5, 20_000, 'renewDeadline'), rec('started', 'w0', 'w0_1', 6, 65_700)];
    const [f] = regionFigures(plan, [{ kind: 'cutOff', region: 'us-east-1', mono: 10_000 }], history, ['job-0']);
    expect(f).toMatchObject({ kind: 'cutOff', leaderStoppedAfterMs: 10_000, newLeaderAfterMs: 55_700, newLeaderRegion: 'us-east-1' });
  });

  it('a cut-off Region’s lease whose next leader waited while no replica had quorum (another Region lost meanwhile): that time is counted apart (seed 33173 was told as a plain cut-off)', () => {
    const history = [rec('started', 'w0', 'w0_1', 5, 1_000), rec('stopped', 'w0', 'w0_1', 5, 20_000, 'renewDeadline'), rec('started', 'w1', 'w1_1', 6, 70_000)];
    const cutOff = [{ kind: 'cutOff' as const, region: 'us-east-1', mono: 10_000 }];
    // no quorum from 15 s to 55 s, and again from 80 s (after the next leader: not counted)
    const [f] = regionFigures(plan, cutOff, history, ['job-0'], [], [{ from: 15_000, to: 55_000 }, { from: 80_000, to: undefined }]);
    expect(f).toMatchObject({ kind: 'cutOff', newLeaderAfterMs: 60_000, quorumlessMs: 40_000 });
    // a span still open at the next leader counts up to it
    const [g] = regionFigures(plan, cutOff, history, ['job-0'], [], [{ from: 65_000, to: undefined }]);
    expect(g).toMatchObject({ quorumlessMs: 5_000 });
    // quorum throughout
    const [h] = regionFigures(plan, cutOff, history, ['job-0']);
    expect(h).toMatchObject({ quorumlessMs: 0 });
  });

  it('a lost Region’s leader: killed with it (no stop of its own), the next leader elsewhere', () => {
    const history = [rec('started', 'w0', 'w0_1', 5, 1_000), rec('stopped', 'w0', 'w0_1', 5, 10_000, 'killed'), rec('started', 'w1', 'w1_1', 6, 23_500)];
    const [f] = regionFigures(plan, [{ kind: 'lose', region: 'us-east-1', mono: 10_000, quorumBack: 10_000 }], history, ['job-0']);
    expect(f).toMatchObject({ kind: 'lose', leaderStoppedAfterMs: undefined, newLeaderAfterMs: 13_500, newLeaderRegion: 'us-east-2', quorumBackAfterMs: 0 });
  });
});
