/**
 * The two engines the contract suite runs on — DynamoDB Local (the run's instance, see
 * test/global-setup.ts) and the model (sim/dynamodb-model) — made the same way: the declared
 * tables through lib/local/tables.ts' createTables (so the model also answers CreateTable,
 * DescribeTable and UpdateTimeToLive as that code needs), plus one table with a numeric sort key.
 */
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DescribeTableCommand, DynamoDBServiceException, type CreateTableCommandInput, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient, GetRecordsCommand, GetShardIteratorCommand } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord } from 'aws-lambda';
import { inject } from 'vitest';
import { createTables, deleteTables } from '../../lib/local/tables.js';
import { toLambdaRecord } from '../../lib/local/stream-poller.js';
import type { TableNames } from '../../lib/schemas/config.js';
import { DynamoDBModel } from '../../sim/dynamodb-model/index.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION, localClient } from '../../lib/stores/client.js';
import { defaultTableNames } from '../../lib/tables.js';

/** The contract's own table: a numeric sort key (ordering, BETWEEN) and a keys-only stream. */
export const numsTable = (name: string): CreateTableCommandInput => ({
  TableName: name,
  BillingMode: 'PAY_PER_REQUEST',
  AttributeDefinitions: [
    { AttributeName: 'pk', AttributeType: 'S' },
    { AttributeName: 'n', AttributeType: 'N' },
  ],
  KeySchema: [
    { AttributeName: 'pk', KeyType: 'HASH' },
    { AttributeName: 'n', KeyType: 'RANGE' },
  ],
  StreamSpecification: { StreamEnabled: true, StreamViewType: 'KEYS_ONLY' },
});

export interface TestEngine {
  readonly kind: 'DynamoDB Local' | 'model';
  readonly client: DynamoDBClient;
  readonly streams: DynamoDBStreamsClient;
  readonly names: TableNames & { nums: string };
  /** The model, on the model engine. */
  readonly model: DynamoDBModel | undefined;
  /** The engine's clock: DynamoDB Local's is the machine's, the model's is moved by hand. */
  now(): number;
  drop(): Promise<void>;
}

async function withTables(client: DynamoDBClient, prefix: string): Promise<TableNames & { nums: string }> {
  const names = { ...defaultTableNames(prefix), nums: `${prefix}-nums` };
  await createTables(client, names);
  await client.send(new CreateTableCommand(numsTable(names.nums)));
  return names;
}

export async function localEngine(label: string): Promise<TestEngine> {
  const endpoint = inject('ddbEndpoint');
  const client = localClient(endpoint);
  const streams = new DynamoDBStreamsClient({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  const names = await withTables(client, `t-${label}-${randomUUID().slice(0, 8)}`);
  return {
    kind: 'DynamoDB Local',
    client,
    streams,
    names,
    model: undefined,
    now: () => Date.now(),
    async drop() {
      await deleteTables(client, names); // nums too: it is one of the names
      client.destroy();
      streams.destroy();
    },
  };
}

/** A model whose clock starts at the machine's time (so TTL values mean the same on both) and moves only by `advance`. */
export async function modelEngine(label: string): Promise<TestEngine & { advance(ms: number): void }> {
  let t = Date.now();
  const model = new DynamoDBModel({ now: () => t });
  const client = model.client({ name: label });
  const names = await withTables(client, `t-${label}`);
  return {
    kind: 'model',
    client,
    streams: model.streamsClient(),
    names,
    model,
    now: () => t,
    advance(ms) {
      t += ms;
    },
    async drop() {
      await deleteTables(client, names);
    },
  };
}

/** Every record on a table's stream so far, read through the Streams API, in sequence order, as Lambda would deliver them. */
export async function streamRecords(e: TestEngine, table: string): Promise<DynamoDBRecord[]> {
  const arn = (await e.client.send(new DescribeTableCommand({ TableName: table }))).Table!.LatestStreamArn!;
  const out: DynamoDBRecord[] = [];
  for (const s of (await e.streams.send(new DescribeStreamCommand({ StreamArn: arn }))).StreamDescription!.Shards!) {
    let iterator = (await e.streams.send(new GetShardIteratorCommand({ StreamArn: arn, ShardId: s.ShardId, ShardIteratorType: 'TRIM_HORIZON' }))).ShardIterator;
    while (iterator) {
      const r = await e.streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
      out.push(...(r.Records ?? []).map((x) => toLambdaRecord(x, arn)));
      iterator = r.Records?.length ? r.NextShardIterator : undefined;
    }
  }
  return out.sort((a, b) => (BigInt(a.dynamodb!.SequenceNumber!) < BigInt(b.dynamodb!.SequenceNumber!) ? -1 : 1));
}

/** What a record says, without what differs by engine and run (ids, times, sizes). */
export const change = (r: DynamoDBRecord) => ({
  eventName: r.eventName,
  keys: r.dynamodb?.Keys,
  ...(r.dynamodb?.NewImage ? { new: r.dynamodb.NewImage } : {}),
  ...(r.dynamodb?.OldImage ? { old: r.dynamodb.OldImage } : {}),
});

export type Outcome =
  | { ok: Record<string, unknown> }
  | { error: string; class: string; service: boolean; item?: unknown; reasons?: unknown };

const OUTPUT_FIELDS = ['Item', 'Items', 'Attributes', 'Count', 'ScannedCount', 'LastEvaluatedKey', 'Responses', 'UnprocessedKeys', 'UnprocessedItems'];

/**
 * A request's outcome, comparable across engines: the output's data fields (not $metadata, not
 * ConsumedCapacity, which DynamoDB Local sometimes adds unasked), or the error's name, class,
 * item and cancellation reasons — never message text.
 */
export async function outcome(p: Promise<unknown>): Promise<Outcome> {
  try {
    const out = (await p) as Record<string, unknown>;
    return { ok: Object.fromEntries(OUTPUT_FIELDS.filter((k) => out[k] !== undefined).map((k) => [k, out[k]])) };
  } catch (e) {
    if (!(e instanceof Error)) throw e;
    const x = e as Error & { Item?: unknown; CancellationReasons?: { Code?: string; Item?: unknown }[] };
    return {
      error: x.name,
      class: x.constructor.name,
      service: x instanceof DynamoDBServiceException,
      ...(x.Item ? { item: x.Item } : {}),
      ...(x.CancellationReasons ? { reasons: x.CancellationReasons.map((r) => ({ Code: r.Code, ...(r.Item ? { Item: r.Item } : {}) })) } : {}),
    };
  }
}

/** The outcome of a ValidationException, as both engines give it. */
export const VALIDATION = { error: 'ValidationException', class: 'DynamoDBServiceException', service: true } as const;
