/**
 * Operations per second of the DynamoDB model (sim/dynamodb-model): the mix a simulated fleet
 * sends — conditional UpdateItems (renewals conditioned on the term, revision-guarded writes,
 * some losing) and consistent GetItems — through the model's client, as the stores send them,
 * while a stream consumer takes the records every 1000 requests (Lambda's shape) and trims what
 * it took, as a simulator does. Prints numbers; nothing asserts them.
 *
 *   npx tsx bench/sim-model.ts [--ops 400000] [--leases 1000] [--stale-ms 0] [--no-consumer]
 */
import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { seededRandom } from '../lib/clock.js';
import { createTables } from '../lib/local/tables.js';
import { DynamoDBModel } from '../sim/dynamodb-model/index.js';
import { LeaseStore } from '../lib/stores/lease-store.js';
import { defaultTableNames } from '../lib/tables.js';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const OPS = arg('ops', 400_000);
const LEASES = arg('leases', 1_000);
const STALE_MS = arg('stale-ms', 0);

const random = seededRandom(16); // the same run every time
let now = 1_800_000_000_000;
const model = new DynamoDBModel({ now: () => now, random, staleReadMaxLagMs: STALE_MS });
const client = model.client();
const names = defaultTableNames('bench');
await createTables(client, names);
const table = names.leases;
const leases = new LeaseStore(client, table);
for (let i = 0; i < LEASES; i++) await leases.write(LeaseStore.readOf(`lease-${i}`, undefined), { set: { leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 1, holderIdentity: `w${i}` } });

/** The renewal LeaseStore.renewTerm sends, and the revision-guarded write ItemStore.write sends. */
const renew = (name: string, token: number) =>
  new UpdateItemCommand({
    TableName: table,
    Key: { name: { S: name } },
    UpdateExpression: 'SET #renew = :renew, #duration = :duration, #mark = :three - if_not_exists(#mark, :two) REMOVE #report ADD #rev :one',
    ConditionExpression: '#term = :token',
    ExpressionAttributeNames: { '#renew': 'renewTime', '#duration': 'leaseDurationSeconds', '#mark': 'renewalMark', '#report': 'vacancyReport', '#rev': 'revision', '#term': 'termToken' },
    ExpressionAttributeValues: { ':renew': { N: String(now) }, ':duration': { N: '15' }, ':two': { N: '2' }, ':three': { N: '3' }, ':one': { N: '1' }, ':token': { N: String(token) } },
    ReturnValues: 'ALL_NEW',
  });
const guarded = (name: string, revision: number) =>
  new UpdateItemCommand({
    TableName: table,
    Key: { name: { S: name } },
    UpdateExpression: 'SET #rev = :next, #s0 = :s0',
    ConditionExpression: '#rev = :rev',
    ExpressionAttributeNames: { '#rev': 'revision', '#s0': 'preferredHolder' },
    ExpressionAttributeValues: { ':next': { N: String(revision + 1) }, ':rev': { N: String(revision) }, ':s0': { S: 'w0' } },
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  });
const get = (name: string) => new GetItemCommand({ TableName: table, Key: { name: { S: name } }, ConsistentRead: true });

const CONSUME = !process.argv.includes('--no-consumer');
const stream = model.stream(table);
let delivered = 0;
let position: string | undefined;
const consume = () => {
  for (const shard of stream.shardIds()) {
    const records = stream.read(shard, position === undefined ? {} : { after: position });
    delivered += records.length;
    if (records.length) position = records.at(-1)!.dynamodb!.SequenceNumber!;
  }
  if (position !== undefined) stream.trim(position);
};

const revisions = new Map<string, number>();
let failed = 0;
const counts = { get: 0, renew: 0, guarded: 0 };
const started = performance.now();
const cpuStarted = process.cpuUsage();
for (let i = 0; i < OPS; i++) {
  now += 1;
  if (CONSUME && i % 1000 === 999) consume();
  const name = `lease-${Math.floor(random() * LEASES)}`;
  const r = random();
  try {
    if (r < 0.5) {
      counts.get++;
      const out = await client.send(get(name));
      revisions.set(name, Number(out.Item?.['revision']?.N ?? 0));
    } else if (r < 0.85) {
      counts.renew++;
      await client.send(renew(name, random() < 0.9 ? 1 : 0)); // one in ten from a deposed holder: refused
    } else {
      counts.guarded++;
      const seen = revisions.get(name) ?? 1;
      await client.send(guarded(name, seen)); // often stale: refused
      revisions.set(name, seen + 1);
    }
  } catch (e) {
    if ((e as Error).name !== 'ConditionalCheckFailedException') throw e;
    failed++;
  }
}
if (CONSUME) consume();
const seconds = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpuStarted);
const cpuSeconds = (cpu.user + cpu.system) / 1e6; // this process only: steadier than wall time on a busy machine
const streamRecords = CONSUME ? delivered : stream.records().length;
console.log(
  JSON.stringify({
    ops: OPS,
    seconds: Number(seconds.toFixed(3)),
    opsPerSecond: Math.round(OPS / seconds),
    opsPerCpuSecond: Math.round(OPS / cpuSeconds),
    mix: counts,
    conditionFailures: failed,
    streamRecords,
    consumer: CONSUME,
    leases: LEASES,
    staleReadMaxLagMs: STALE_MS,
  }),
);
