/**
 * DynamoDB Streams' rule, which Lambda's event source keeps: a parent shard is read to its end
 * before any of its children, so one item's records are handled in the order they were written
 * when a shard splits. DynamoDB Local never splits a shard on demand, so the split is staged on its
 * real Streams API: the parent is the real shard of one table's stream, the child the real shard
 * of another's, and the client's middleware reshapes only what a split changes — DescribeStream
 * lists the child first and names its parent, the parent's GetShardIterator goes to the parent's
 * stream, and the parent ends (no next iterator) once its records are read. The parent's first read
 * is held until either the child's record has been handled (what a poller that reads them side by
 * side does) or the poller has described the stream again (what one that waits does).
 */
import { DescribeTableCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient, type Shard } from '@aws-sdk/client-dynamodb-streams';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../lib/local/dynamodb-local.js';
import { StreamPoller } from '../../lib/local/stream-poller.js';
import { wiring, type StreamTrigger } from '../../lib/wiring.js';
import { waitFor } from '../sdk/harness.js';
import { testTables, type TestTables } from '../support.js';

let parentTables: TestTables;
let childTables: TestTables;
const streamArn = async (t: TestTables) => (await t.client.send(new DescribeTableCommand({ TableName: t.names.candidates }))).Table!.LatestStreamArn!;
/** The same item, written first to the parent's table, then to the child's: `written` says which. */
const write = (t: TestTables, written: string) =>
  t.client.send(new PutItemCommand({ TableName: t.names.candidates, Item: { leaseName: { S: 'job' }, name: { S: 'w1' }, written: { S: written } } }));

beforeAll(async () => {
  parentTables = await testTables('split-parent');
  childTables = await testTables('split-child');
  await write(parentTables, 'first (in the parent shard)');
  await write(childTables, 'second (in the child shard)');
});
afterAll(async () => {
  await parentTables.drop();
  await childTables.drop();
});

describe('StreamPoller on a split shard', () => {
  it("reads a child shard only once its parent is read to its end: one item's records in the order written", async () => {
    const parentArn = await streamArn(parentTables);
    const childArn = await streamArn(childTables);
    const plain = new DynamoDBStreamsClient({ endpoint: inject('ddbEndpoint'), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    const parentShard: Shard = (await plain.send(new DescribeStreamCommand({ StreamArn: parentArn }))).StreamDescription!.Shards![0]!;
    plain.destroy();
    const parentId = parentShard.ShardId!;

    let describes = 0;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const parentIterators = new Set<string>();
    let parentRead = false;
    const split = new DynamoDBStreamsClient({ endpoint: inject('ddbEndpoint'), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    split.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { StreamArn?: string; ShardId?: string; ShardIterator?: string };
        if (context.commandName === 'DescribeStreamCommand') {
          if (++describes >= 2) release();
          const r = await next(args);
          const d = (r.output as { StreamDescription?: { Shards?: Shard[] } }).StreamDescription!;
          d.Shards = [...d.Shards!.map((s) => ({ ...s, ParentShardId: parentId })), parentShard];
          return r;
        }
        if (context.commandName === 'GetShardIteratorCommand' && input.ShardId === parentId) {
          input.StreamArn = parentArn;
          const r = await next(args);
          parentIterators.add((r.output as { ShardIterator: string }).ShardIterator);
          return r;
        }
        if (context.commandName === 'GetRecordsCommand' && parentIterators.has(input.ShardIterator!)) {
          await held;
          const r = await next(args);
          const out = r.output as { Records?: unknown[]; NextShardIterator?: string };
          if (out.Records?.length) parentRead = true;
          else if (parentRead) delete out.NextShardIterator; // the closed parent, read to its end
          if (out.NextShardIterator) parentIterators.add(out.NextShardIterator);
          return r;
        }
        return next(args);
      },
      { step: 'initialize', name: 'stageShardSplit' },
    );

    const handled: string[] = [];
    const { filters: _none, ...trigger }: StreamTrigger = wiring.candidateStream.trigger;
    const poller = new StreamPoller({
      client: split,
      streamArn: childArn,
      trigger,
      functionName: 'candidateStream',
      invoke: async (e) => {
        for (const r of e.Records) handled.push(r.dynamodb!.NewImage!['written']!.S!);
        if (handled.some((w) => w.includes('child'))) release();
      },
      deadLetter: () => undefined,
    });
    poller.start();
    try {
      await waitFor('both records handled', () => handled.length >= 2);
    } finally {
      await poller.stop();
      split.destroy();
    }
    expect(handled).toEqual(['first (in the parent shard)', 'second (in the child shard)']);
  });
});
