/**
 * The floor under a hand-off on this machine: DynamoDB Local's own latency for the two requests on
 * the path, measured alone. Starts DynamoDB Local as the runtime does, makes a table with a stream
 * (as the leases table has), then sends one conditional UpdateItem and one strongly consistent
 * GetItem after another and prints their median, p90 and p99 after a warm-up.
 *
 *   npx tsx bench/dynamodb-local-latency.ts [--requests 1000] [--warmup 500] [--c2] [--no-namespace]
 *
 * --c2 starts Java with its full JIT (the runtime starts it with C1 only); --no-namespace reaches
 * Java directly instead of through the loopback-only relay (it then listens on every interface).
 */
import { parseArgs } from 'node:util';
import { CreateTableCommand, DeleteTableCommand, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { localClient, startDynamoDBLocal } from '../lib/local/dynamodb-local.js';
import { systemClock } from '../lib/clock.js';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '1000' },
    warmup: { type: 'string', default: '500' },
    c2: { type: 'boolean', default: false },
    'no-namespace': { type: 'boolean', default: false },
  },
});
const requests = Number(values.requests);
const warmup = Number(values.warmup);
if (!Number.isInteger(requests) || requests < 1) throw new Error(`--requests must be a positive integer, got ${values.requests}`);
if (!Number.isInteger(warmup) || warmup < 0) throw new Error(`--warmup must be a non-negative integer, got ${values.warmup}`);

const ddb = await startDynamoDBLocal({
  quickStart: !values.c2,
  ...(values['no-namespace'] ? { namespace: () => ({ ok: false as const, why: '--no-namespace' }), log: () => undefined } : {}),
});
const client = localClient(ddb.endpoint);
const TableName = 'latency-floor';
await client.send(
  new CreateTableCommand({
    TableName,
    AttributeDefinitions: [{ AttributeName: 'name', AttributeType: 'S' }],
    KeySchema: [{ AttributeName: 'name', KeyType: 'HASH' }],
    BillingMode: 'PAY_PER_REQUEST',
    StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
  }),
);
const Key = { name: { S: 'job' } };
const writes: number[] = [];
const reads: number[] = [];
for (let i = 0; i < warmup + requests; i++) {
  const t0 = systemClock.monotonic();
  await client.send(
    new UpdateItemCommand({
      TableName,
      Key,
      UpdateExpression: 'SET revision = :next, holderIdentity = :holder',
      ConditionExpression: 'attribute_not_exists(revision) OR revision = :seen',
      ExpressionAttributeValues: { ':next': { N: String(i + 1) }, ':seen': { N: String(i) }, ':holder': { S: `worker-${i % 3}` } },
    }),
  );
  const t1 = systemClock.monotonic();
  await client.send(new GetItemCommand({ TableName, Key, ConsistentRead: true }));
  const t2 = systemClock.monotonic();
  if (i >= warmup) {
    writes.push(t1 - t0);
    reads.push(t2 - t1);
  }
}
await client.send(new DeleteTableCommand({ TableName }));

const at = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.ceil(q * xs.length) - 1]!.toFixed(2);
const line = (what: string, xs: number[]) => `${what.padEnd(36)} median ${at(xs, 0.5)} ms  p90 ${at(xs, 0.9)} ms  p99 ${at(xs, 0.99)} ms`;
console.log(`DynamoDB Local, ${values.c2 ? 'full JIT' : 'C1 JIT (as the runtime starts it)'}, ${values['no-namespace'] ? 'direct' : 'through the loopback-only relay'}; ${requests} of each after ${warmup}`);
console.log(line('conditional UpdateItem', writes));
console.log(line('strongly consistent GetItem', reads));
await ddb.stop();
