/**
 * stream-checkpoints.json does not grow for ever: local mode on an endpoint forgets, at its start,
 * the checkpoints no one will read again (lib/local/stream-checkpoints.ts pruneCheckpoints): a
 * stream gone, a stream it does not read that is done (its table deleted, its shards closed and
 * read to their end), a shard its stream no longer lists. Real streams of the run's DynamoDB Local,
 * their tables deleted for real.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateTableCommand, DeleteTableCommand, DescribeTableCommand, PutItemCommand, waitUntilTableExists, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient, GetRecordsCommand, GetShardIteratorCommand } from '@aws-sdk/client-dynamodb-streams';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../lib/local/dynamodb-local.js';
import { startLocalRuntime } from '../../lib/local/runtime.js';
import { CHECKPOINTS_FILE, CheckpointsFile, endpointKey, loadCheckpoints, pruneCheckpoints, stalePart, streamNow } from '../../lib/local/stream-checkpoints.js';
import { createTables, deleteTables } from '../../lib/local/tables.js';
import { localClient } from '../../lib/stores/client.js';
import { deleteTable } from '../../lib/stores/table-admin.js';
import { defaultTableNames } from '../../lib/tables.js';

const admin: DynamoDBClient = localClient(inject('ddbEndpoint'));
const streams = new DynamoDBStreamsClient({ endpoint: inject('ddbEndpoint'), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
const made: string[] = [];
const prefixes: string[] = [];

afterAll(async () => {
  for (const t of made) await deleteTable(admin, t);
  for (const p of prefixes) await deleteTables(admin, defaultTableNames(p));
  admin.destroy();
  streams.destroy();
});

/** A table with a stream and two items written: its stream, its shard, and the two records' sequence numbers. */
async function streamWithTwoRecords(label: string) {
  const name = `${label}-${randomUUID().slice(0, 8)}`;
  made.push(name);
  await admin.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
    }),
  );
  await waitUntilTableExists({ client: admin, maxWaitTime: 60, minDelay: 1, maxDelay: 2 }, { TableName: name });
  for (const id of ['one', 'two']) await admin.send(new PutItemCommand({ TableName: name, Item: { id: { S: id } } }));
  const arn = (await admin.send(new DescribeTableCommand({ TableName: name }))).Table!.LatestStreamArn!;
  const shard = (await streams.send(new DescribeStreamCommand({ StreamArn: arn }))).StreamDescription!.Shards![0]!.ShardId!;
  const it = (await streams.send(new GetShardIteratorCommand({ StreamArn: arn, ShardId: shard, ShardIteratorType: 'TRIM_HORIZON' }))).ShardIterator!;
  const seqs = (await streams.send(new GetRecordsCommand({ ShardIterator: it }))).Records!.map((r) => r.dynamodb!.SequenceNumber!);
  expect(seqs).toHaveLength(2);
  return { name, arn, shard, first: seqs[0]!, last: seqs[1]! };
}

const GONE = 'arn:aws:dynamodb:ddblocal:000000000000:table/never-there/stream/2026-01-01T00:00:00.000';

describe('stalePart: what of an entry to forget', () => {
  const shards = { a: '000000000000000000001', b: '000000000000000000002' };
  it.each([
    { name: 'a stream gone, read by this process or not', now: { gone: true } as const, polled: true, want: { stream: true } },
    { name: 'a stream done, not read by this process', now: { gone: false, shards: new Set(['a', 'b']), done: true } as const, polled: false, want: { stream: true } },
    { name: 'a stream done that this process reads: its shards kept', now: { gone: false, shards: new Set(['a', 'b']), done: true } as const, polled: true, want: { stream: false, shards: [] } },
    { name: 'a stream not done (live, or not read to its end): only the shards it no longer lists', now: { gone: false, shards: new Set(['b']), done: false } as const, polled: false, want: { stream: false, shards: ['a'] } },
  ])('$name', ({ now, polled, want }) => expect(stalePart(shards, now, polled)).toEqual(want));
});

describe('local mode on an endpoint prunes stream-checkpoints.json at its start', () => {
  it('forgets the streams gone and the streams done that it does not read (their tables deleted, read to their end); keeps a stream not read to its end, a live one and another endpoint’s; forgets a shard its own stream no longer lists', async () => {
    const done = await streamWithTwoRecords('pruned-done');
    const partial = await streamWithTwoRecords('pruned-partial');
    const live = await streamWithTwoRecords('pruned-live');
    for (const t of [done, partial]) await admin.send(new DeleteTableCommand({ TableName: t.name })); // DISABLED, shards closed
    // the prefix's tables made before the start (an earlier run's), so its own stream is in the file
    const prefix = `pruned-${randomUUID().slice(0, 8)}`;
    prefixes.push(prefix);
    await createTables(admin, defaultTableNames(prefix));
    const own = (await admin.send(new DescribeTableCommand({ TableName: defaultTableNames(prefix).leases }))).Table!.LatestStreamArn!;
    const ownShard = (await streams.send(new DescribeStreamCommand({ StreamArn: own }))).StreamDescription!.Shards![0]!.ShardId!;
    const ownCandidates = (await admin.send(new DescribeTableCommand({ TableName: defaultTableNames(prefix).candidates }))).Table!.LatestStreamArn!;

    const here = endpointKey(inject('ddbEndpoint'));
    const planted: CheckpointsFile = {
      version: 1,
      streams: [
        { endpoint: here, streamArn: done.arn, shards: { [done.shard]: done.last } },
        { endpoint: here, streamArn: partial.arn, shards: { [partial.shard]: partial.first } },
        { endpoint: here, streamArn: live.arn, shards: { [live.shard]: live.last } },
        { endpoint: here, streamArn: GONE, shards: { 'shardId-00000000000000000001-00000001': '000000000000000000001' } },
        { endpoint: here, streamArn: own, shards: { 'shardId-00000000000000000002-00000002': '000000000000000000001', [ownShard]: '000000000000000000001' } },
        { endpoint: 'http://127.0.0.1:1', streamArn: GONE, shards: { 'shardId-00000000000000000001-00000001': '000000000000000000001' } },
      ],
    };
    const dir = mkdtempSync(join(tmpdir(), 'conclave-pruned-'));
    const file = join(dir, CHECKPOINTS_FILE);
    writeFileSync(file, JSON.stringify(planted));

    const rt = await startLocalRuntime({ endpoint: inject('ddbEndpoint'), prefix, dir, tickEveryMs: 600_000, logLevel: 'SILENT' });
    await rt.stop();
    const kept = CheckpointsFile.parse(JSON.parse(readFileSync(file, 'utf8'))).streams;
    // before the fix: all six entries, as planted, for ever
    expect(kept.map((s) => [s.endpoint, s.streamArn])).toEqual([
      [here, partial.arn], // closed, but a record after its checkpoint: still to be read by whoever reads it
      [here, live.arn], // another prefix's live stream: another process's to move on
      [here, own],
      ['http://127.0.0.1:1', GONE], // unreachable is not gone: left alone
      [here, ownCandidates], // named as its poller began reading it, no batch finished yet (ShardCheckpoints.open)
    ]);
    expect(Object.keys(kept.find((s) => s.streamArn === own)!.shards)).toEqual([ownShard]); // a shard its stream does not list: forgotten
  });

  it('pruneCheckpoints keeps a stream it cannot look at (DynamoDB Local unreachable), told once', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'conclave-pruned-')), CHECKPOINTS_FILE);
    const here = endpointKey(inject('ddbEndpoint'));
    writeFileSync(file, JSON.stringify({ version: 1, streams: [{ endpoint: here, streamArn: GONE, shards: { s: '000000000000000000001' } }] }));
    const told: string[] = [];
    const c = loadCheckpoints(file, here, (m) => void told.push(m));
    const unreachable = new DynamoDBStreamsClient({ endpoint: 'http://127.0.0.1:1', region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, maxAttempts: 1 });
    try {
      expect(await pruneCheckpoints(c, new Set(), (arn, shards) => streamNow(unreachable, arn, shards), (m) => void told.push(m))).toEqual({ streams: [], shards: 0 });
    } finally {
      unreachable.destroy();
    }
    expect(told).toHaveLength(1);
    expect(told[0]).toContain(`stream ${GONE} cannot be looked at`);
    expect(loadCheckpoints(file, here, () => undefined).streams()).toEqual([{ streamArn: GONE, function: undefined, shards: { s: '000000000000000000001' } }]);
  });
});
