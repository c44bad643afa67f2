/**
 * What the model does that DynamoDB Local cannot show on demand (so the contract suite cannot pin
 * it): stale reads chosen by the injected random source, stream positions and shards, TTL on the
 * model's clock, and the client's hooks for latency, loss, lost answers, throttling and retries.
 */
import {
  BatchWriteItemCommand,
  DeleteItemCommand,
  DescribeTableCommand,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
  TransactGetItemsCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  paginateScan,
  type AttributeValue,
  type TransactWriteItemsCommandInput,
} from '@aws-sdk/client-dynamodb';
import { GetRecordsCommand, GetShardIteratorCommand } from '@aws-sdk/client-dynamodb-streams';
import { beforeEach, describe, expect, it } from 'vitest';
import { createTables } from '../../lib/local/tables.js';
import type { TableNames } from '../../lib/schemas/config.js';
import { DynamoDBModel, UnsupportedByModelError, faults, type ModelRequest } from '../../sim/dynamodb-model/index.js';
import { isConditionFailed } from '../../lib/stores/errors.js';
import { defaultTableNames } from '../../lib/tables.js';
import { VALIDATION, outcome } from './engines.js';

const S = (s: string): AttributeValue => ({ S: s });
const N = (n: number | string): AttributeValue => ({ N: String(n) });
const T0 = 1_800_000_000_000;

let now: number;
let names: TableNames;
beforeEach(() => {
  now = T0;
  names = defaultTableNames('m');
});

async function modelWith(opts: Partial<ConstructorParameters<typeof DynamoDBModel>[0]> = {}) {
  const model = new DynamoDBModel({ now: () => now, ...opts });
  const client = model.client();
  await createTables(client, names);
  return { model, client };
}

const put = (name: string, extra: Record<string, AttributeValue> = {}) => new PutItemCommand({ TableName: names.leases, Item: { name: S(name), ...extra } });
const get = (name: string, consistent?: boolean) => new GetItemCommand({ TableName: names.leases, Key: { name: S(name) }, ...(consistent === undefined ? {} : { ConsistentRead: consistent }) });

describe('copies', () => {
  it('nothing a caller holds reaches the stored items: inputs, outputs and stream records are copies', async () => {
    const { model, client } = await modelWith();
    const item = { name: S('a'), l: { L: [N(1)] }, m: { M: { x: S('y') } } };
    await client.send(new PutItemCommand({ TableName: names.leases, Item: item }));
    item.l.L.push(N(2));
    (item.m.M.x as { S: string }).S = 'changed';
    const out = (await client.send(get('a', true))).Item!;
    expect(out).toEqual({ name: S('a'), l: { L: [N(1)] }, m: { M: { x: S('y') } } });
    (out['l'] as { L: AttributeValue[] }).L.length = 0;
    model.stream(names.leases).records()[0]!.dynamodb!.NewImage!['name']!.S = 'changed';
    expect((await client.send(get('a', true))).Item).toEqual({ name: S('a'), l: { L: [N(1)] }, m: { M: { x: S('y') } } });
    expect(model.stream(names.leases).records()[0]!.dynamodb!.NewImage!['name']).toEqual(S('a'));
  });

  it('an attribute named constructor or __proto__ is data', async () => {
    const { client } = await modelWith();
    await client.send(new PutItemCommand({ TableName: names.leases, Item: JSON.parse('{"name":{"S":"p"},"constructor":{"S":"c"},"__proto__":{"S":"x"}}') as Record<string, AttributeValue> }));
    const item = (await client.send(get('p', true))).Item!;
    expect(Object.keys(item).sort()).toEqual(['__proto__', 'constructor', 'name']);
    expect(await outcome(client.send(new UpdateItemCommand({ TableName: names.leases, Key: { name: S('q') }, UpdateExpression: 'SET a = toString' })))).toEqual(VALIDATION);
  });
});

describe('eventually consistent reads', () => {
  it('see a version no older than the lag, chosen by the injected random source; consistent reads see the newest', async () => {
    let r = 0;
    const { client } = await modelWith({ random: () => r, staleReadMaxLagMs: 1_000 });
    await client.send(put('a', { v: N(1) }));
    now += 400;
    await client.send(put('a', { v: N(2) }));
    now += 100; // v1 until T0+400, v2 since
    const read = async (random: number, consistent?: boolean) => {
      r = random;
      return (await client.send(get('a', consistent))).Item?.['v']?.N;
    };
    expect(await read(0)).toBe('2'); // reads at now
    expect(await read(0.2)).toBe('1'); // reads at now − 200 ms: before the second write
    expect(await read(0.6)).toBeUndefined(); // reads at now − 600 ms: before the item existed
    expect(await read(0.99, true)).toBe('2');
    now += 1_000;
    expect(await read(0.99)).toBe('2'); // the old versions are older than the lag now
  });

  it('a deleted item may still be read within the lag, and is gone for good after it; GSI queries are stale too', async () => {
    let r = 0;
    const { client } = await modelWith({ random: () => r, staleReadMaxLagMs: 1_000 });
    await client.send(put('a', { holderPlatformId: S('task-1') }));
    now += 2_000;
    await client.send(new UpdateItemCommand({ TableName: names.leases, Key: { name: S('a') }, UpdateExpression: 'REMOVE holderPlatformId' }));
    now += 100;
    const held = async (random: number) => {
      r = random;
      const q = await client.send(new QueryCommand({ TableName: names.leases, IndexName: 'byHolderPlatform', KeyConditionExpression: '#p = :p', ExpressionAttributeNames: { '#p': 'holderPlatformId' }, ExpressionAttributeValues: { ':p': S('task-1') } }));
      return q.Items?.map((i) => i['name']!.S);
    };
    expect(await held(0)).toEqual([]);
    expect(await held(0.5)).toEqual(['a']);
    await client.send(new UpdateItemCommand({ TableName: names.leases, Key: { name: S('b') }, UpdateExpression: 'SET v = :v', ExpressionAttributeValues: { ':v': N(1) } }));
    now += 100;
    await client.send(new DeleteItemCommand({ TableName: names.leases, Key: { name: S('b') } }));
    r = 0.05; // 50 ms ago: b existed
    expect((await client.send(get('b'))).Item).toEqual({ name: S('b'), v: N(1) });
    expect((await client.send(new ScanCommand({ TableName: names.leases }))).Items?.map((i) => i['name']!.S).sort()).toEqual(['a', 'b']);
    expect((await client.send(new ScanCommand({ TableName: names.leases, ConsistentRead: true }))).Items?.map((i) => i['name']!.S)).toEqual(['a']);
    now += 5_000;
    await client.send(put('c')); // a write lets the table forget what no read can see
    const scan = async (random: number) => {
      r = random;
      return (await client.send(new ScanCommand({ TableName: names.leases }))).Items?.map((i) => i['name']!.S).sort();
    };
    expect(await scan(0.99)).toEqual(['a']); // c is too new to be seen by every read; b is gone from all of them
    expect(await scan(0)).toEqual(['a', 'c']);
  });

  it('needs a random source to be stale at all', () => {
    expect(() => new DynamoDBModel({ now: () => now, staleReadMaxLagMs: 10 })).toThrow(/random source/);
  });
});

describe('streams', () => {
  it('are read from a position, as often as the simulator likes (at least once), and trimmed when delivered', async () => {
    const { model, client } = await modelWith();
    for (const v of [1, 2, 3]) await client.send(put('a', { v: N(v) }));
    const s = model.stream(names.leases);
    const [shard] = s.shardIds();
    const all = s.read(shard!);
    expect(all.map((r) => r.eventName)).toEqual(['INSERT', 'MODIFY', 'MODIFY']);
    const after = s.read(shard!, { after: all[0]!.dynamodb!.SequenceNumber!, limit: 1 });
    expect(after.map((r) => r.dynamodb?.NewImage?.['v'])).toEqual([N(2)]);
    expect(s.read(shard!, { after: all[0]!.dynamodb!.SequenceNumber! })).toEqual(all.slice(1)); // again: the same records
    expect(all[0]).toMatchObject({ eventSource: 'aws:dynamodb', eventVersion: '1.1', eventSourceARN: s.arn, dynamodb: { ApproximateCreationDateTime: T0 / 1000, StreamViewType: 'NEW_AND_OLD_IMAGES' } });
    s.trim(all[1]!.dynamodb!.SequenceNumber!);
    expect(s.read(shard!)).toEqual(all.slice(2));
  });

  it('are read through a filter as Lambda filters them: the records kept are what read() gives, the position is past every record read', async () => {
    const { model, client } = await modelWith();
    await client.send(put('a', { v: N(1) }));
    await client.send(put('a', { v: N(2), m: { M: { x: { B: new Uint8Array([1, 2]) } } } }));
    await client.send(put('a', { v: N(3), b: { B: new Uint8Array([3]) } }));
    await client.send(put('a', { v: N(4) }));
    const s = model.stream(names.leases);
    const [shard] = s.shardIds();
    const all = s.read(shard!);
    const seen: unknown[] = [];
    const keep = (r: (typeof all)[number]) => {
      seen.push(JSON.parse(JSON.stringify(r)));
      return r.dynamodb?.NewImage?.['v']?.N !== '2' && (r.dynamodb?.SizeBytes ?? 0) > 0;
    };
    const batch = s.readWhere(shard!, { limit: 3 }, keep);
    // the filter saw exactly the records read() gives (binary as base64, sizes included), and kept two
    expect(seen).toEqual(JSON.parse(JSON.stringify(all.slice(0, 3))));
    expect(batch).toEqual({ kept: [all[0], all[2]], read: 3, last: all[2]!.dynamodb!.SequenceNumber });
    expect(s.readWhere(shard!, { after: batch.last! }, undefined)).toEqual({ kept: [all[3]], read: 1, last: all[3]!.dynamodb!.SequenceNumber });
    expect(s.readWhere(shard!, { after: all[3]!.dynamodb!.SequenceNumber! }, keep)).toEqual({ kept: [], read: 0, last: undefined });
  });

  it('keep one key in one shard, in order, across several shards', async () => {
    const { model, client } = await modelWith({ streamShards: 4 });
    for (let i = 0; i < 40; i++) await client.send(put(`k${i % 8}`, { v: N(i) }));
    const s = model.stream(names.leases);
    expect(s.shardIds()).toHaveLength(4);
    const byKey = new Map<string, { shard: string; v: number }[]>();
    for (const shard of s.shardIds()) {
      for (const r of s.read(shard)) {
        const k = r.dynamodb!.Keys!['name']!.S!;
        byKey.set(k, [...(byKey.get(k) ?? []), { shard, v: Number(r.dynamodb!.NewImage!['v']!.N) }]);
      }
    }
    expect(byKey.size).toBe(8);
    for (const seen of byKey.values()) {
      expect(new Set(seen.map((x) => x.shard)).size).toBe(1);
      expect(seen.map((x) => x.v)).toEqual([...seen.map((x) => x.v)].sort((a, b) => a - b));
    }
    expect(new Set([...byKey.values()].map((x) => x[0]!.shard)).size).toBeGreaterThan(1);
  });

  it('keep records for the retention period, by the model clock', async () => {
    const { model, client } = await modelWith({ streamRetentionMs: 60_000 });
    await client.send(put('a'));
    now += 61_000;
    await client.send(put('b'));
    expect(model.stream(names.leases).records().map((r) => r.dynamodb?.Keys?.['name']?.S)).toEqual(['b']);
  });

  it('are readable through the Streams API, with TRIM_HORIZON, LATEST and AFTER_SEQUENCE_NUMBER iterators', async () => {
    const { model, client } = await modelWith();
    const streams = model.streamsClient();
    await client.send(put('a'));
    const arn = (await client.send(new DescribeTableCommand({ TableName: names.leases }))).Table!.LatestStreamArn!;
    const [shard] = model.stream(arn).shardIds();
    const iterator = async (type: 'TRIM_HORIZON' | 'LATEST' | 'AFTER_SEQUENCE_NUMBER', seq?: string) =>
      (await streams.send(new GetShardIteratorCommand({ StreamArn: arn, ShardId: shard, ShardIteratorType: type, SequenceNumber: seq }))).ShardIterator;
    const latest = await iterator('LATEST');
    await client.send(put('b'));
    const first = await streams.send(new GetRecordsCommand({ ShardIterator: await iterator('TRIM_HORIZON') }));
    expect(first.Records?.map((r) => r.dynamodb?.Keys?.['name']?.S)).toEqual(['a', 'b']);
    expect(first.Records?.[0]?.dynamodb?.ApproximateCreationDateTime).toEqual(new Date(T0));
    expect((await streams.send(new GetRecordsCommand({ ShardIterator: latest }))).Records?.map((r) => r.dynamodb?.Keys?.['name']?.S)).toEqual(['b']);
    const next = await streams.send(new GetRecordsCommand({ ShardIterator: first.NextShardIterator }));
    expect(next.Records).toEqual([]);
    const after = await streams.send(new GetRecordsCommand({ ShardIterator: await iterator('AFTER_SEQUENCE_NUMBER', first.Records![0]!.dynamodb!.SequenceNumber) }));
    expect(after.Records?.map((r) => r.dynamodb?.Keys?.['name']?.S)).toEqual(['b']);
  });
});

describe('TTL', () => {
  it('deletes when the simulator sweeps, past expiry only, with REMOVE records carrying the service identity', async () => {
    const { model, client } = await modelWith();
    const exp = (s: number) => ({ expiresAt: N(Math.floor(now / 1000) + s) });
    await client.send(put('soon', exp(10)));
    await client.send(put('later', exp(100)));
    expect(model.sweepTtl()).toEqual([]);
    now += 11_000;
    expect(model.sweepTtl()).toEqual([{ table: names.leases, key: { name: S('soon') } }]);
    expect(model.items(names.leases).map((i) => i['name']!.S)).toEqual(['later']);
    const removed = model.stream(names.leases).records().at(-1)!;
    expect(removed).toMatchObject({ eventName: 'REMOVE', userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' }, dynamodb: { OldImage: { name: S('soon') } } });
    const streams = model.streamsClient();
    const arn = model.stream(names.leases).arn;
    const it0 = (await streams.send(new GetShardIteratorCommand({ StreamArn: arn, ShardId: model.stream(arn).shardIds()[0], ShardIteratorType: 'TRIM_HORIZON' }))).ShardIterator;
    expect((await streams.send(new GetRecordsCommand({ ShardIterator: it0 }))).Records?.at(-1)?.userIdentity).toEqual({ Type: 'Service', PrincipalId: 'dynamodb.amazonaws.com' });
  });
});

describe('the client', () => {
  it('is a DynamoDBClient for the SDK: paginators accept it', async () => {
    const { client } = await modelWith();
    for (let i = 0; i < 5; i++) await client.send(put(`p${i}`));
    const seen: string[] = [];
    for await (const page of paginateScan({ client, pageSize: 2 }, { TableName: names.leases })) seen.push(...(page.Items ?? []).map((i) => i['name']!.S!));
    expect(seen.sort()).toEqual(['p0', 'p1', 'p2', 'p3', 'p4']);
  });

  it('hands every attempt to intercept, which decides when and whether it reaches the model', async () => {
    const model = new DynamoDBModel({ now: () => now });
    const seen: ModelRequest[] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const client = model.client({
      name: 'w1',
      intercept: async (req, apply) => {
        seen.push(req);
        if (req.operation === 'PutItem') await gate; // held back: latency
        return apply();
      },
    });
    await createTables(model.client(), names);
    const pending = client.send(put('a'));
    await Promise.resolve();
    expect(model.items(names.leases)).toEqual([]); // not yet applied
    release();
    expect((await pending).$metadata).toMatchObject({ httpStatusCode: 200, attempts: 1 });
    expect(model.items(names.leases)).toEqual([{ name: S('a') }]);
    expect(seen.map((r) => [r.operation, r.client, r.attempt])).toEqual([['PutItem', 'w1', 1]]);
  });

  it('retries what the SDK retries (throttling, lost answers), with the backoff the simulator gives; a lost answer may have been applied', async () => {
    const model = new DynamoDBModel({ now: () => now });
    await createTables(model.client(), names);
    const backoffs: number[] = [];
    let attempts = 0;
    const throttled = model.client({
      intercept: async (req, apply) => {
        attempts++;
        if (req.attempt < 3) throw faults.provisionedThroughputExceeded();
        return apply();
      },
      backoff: async (n) => {
        backoffs.push(n);
      },
    });
    await throttled.send(put('t'));
    expect([attempts, backoffs]).toEqual([3, [1, 2]]);

    // applied, answer lost, retried: the retry of a create finds the item there
    const create = () =>
      new UpdateItemCommand({ TableName: names.leases, Key: { name: S('c') }, UpdateExpression: 'SET v = :v', ConditionExpression: 'attribute_not_exists(#n)', ExpressionAttributeNames: { '#n': 'name' }, ExpressionAttributeValues: { ':v': N(1) } });
    const lossy = model.client({
      intercept: async (req, apply) => {
        const out = apply();
        if (req.attempt === 1) throw faults.timeout();
        return out;
      },
    });
    const e = await lossy.send(create()).catch((x: unknown) => x);
    expect(isConditionFailed(e)).toBe(true);
    expect((e as { $metadata: { attempts: number } }).$metadata.attempts).toBe(2);
    expect(model.items(names.leases).find((i) => i['name']?.S === 'c')).toEqual({ name: S('c'), v: N(1) });

    // not retried: a lost condition is an answer
    let tries = 0;
    const once = model.client({
      intercept: async (_req, apply) => {
        tries++;
        return apply();
      },
    });
    await expect(once.send(create())).rejects.toMatchObject({ name: 'ConditionalCheckFailedException' });
    expect(tries).toBe(1);
    // and with maxAttempts 1 nothing is retried
    await expect(model.client({ maxAttempts: 1, intercept: async () => Promise.reject(faults.throttling()) }).send(put('x'))).rejects.toMatchObject({ name: 'ThrottlingException' });
  });

  it('applies a transaction once, however often its request arrives: the token is per request, as the SDK makes it', async () => {
    const model = new DynamoDBModel({ now: () => now });
    await createTables(model.client(), names);
    const tx: TransactWriteItemsCommandInput = {
      TransactItems: [{ Update: { TableName: names.leases, Key: { name: S('tx') }, UpdateExpression: 'ADD #r :one', ExpressionAttributeNames: { '#r': 'revision' }, ExpressionAttributeValues: { ':one': N(1) } } }],
    };
    const twice = model.client({ intercept: async (_req, apply) => (apply(), apply()) });
    await twice.send(new TransactWriteItemsCommand(tx));
    expect(model.items(names.leases)).toEqual([{ name: S('tx'), revision: N(1) }]);
    // two requests, two tokens, from any number of clients
    await model.client({ name: 'a' }).send(new TransactWriteItemsCommand(tx));
    await model.client({ name: 'a' }).send(new TransactWriteItemsCommand(tx));
    expect(model.items(names.leases)).toEqual([{ name: S('tx'), revision: N(3) }]);
    // a token reused for another request is refused; after ten minutes it is forgotten
    const client = model.client();
    await client.send(new TransactWriteItemsCommand({ ...tx, ClientRequestToken: 't1' }));
    await expect(client.send(new TransactWriteItemsCommand({ TransactItems: [{ Put: { TableName: names.leases, Item: { name: S('other') } } }], ClientRequestToken: 't1' }))).rejects.toMatchObject({
      name: 'IdempotentParameterMismatchException',
    });
    now += 11 * 60_000;
    await client.send(new TransactWriteItemsCommand({ ...tx, ClientRequestToken: 't1' }));
    expect(model.items(names.leases).find((i) => i['name']?.S === 'tx')).toEqual({ name: S('tx'), revision: N(5) });
  });

  it("runs the middleware the SDK's server clock adds, with a Date header from the model's clock", async () => {
    const { client } = await modelWith();
    const dates: (string | undefined)[] = [];
    client.middlewareStack.add(
      (next) => async (args) => {
        const out = await next(args);
        dates.push((out.response as { headers?: Record<string, string> }).headers?.['date']);
        return out;
      },
      { step: 'deserialize', priority: 'low', name: 'test' },
    );
    now = T0 + 1_500;
    await client.send(put('a'));
    await client.send(new UpdateItemCommand({ TableName: names.leases, Key: { name: S('a') }, UpdateExpression: 'SET v = :v', ConditionExpression: 'attribute_not_exists(v) AND attribute_not_exists(#n)', ExpressionAttributeNames: { '#n': 'name' }, ExpressionAttributeValues: { ':v': N(1) } })).catch(() => undefined);
    expect(dates).toEqual([new Date(T0 + 1_000).toUTCString(), new Date(T0 + 1_000).toUTCString()]); // errors have responses too
    expect(Date.parse(dates[0]!)).toBe(T0 + 1_000);
  });

  it('says clearly what it does not model', async () => {
    const { client } = await modelWith();
    await expect(client.send(new TransactGetItemsCommand({ TransactItems: [] }))).rejects.toBeInstanceOf(UnsupportedByModelError);
    await expect(client.send(new PutItemCommand({ TableName: names.leases, Item: { name: S('a') }, Expected: {} }))).rejects.toBeInstanceOf(UnsupportedByModelError);
  });
});

describe('limits', () => {
  it('refuses an item over 400 KB', async () => {
    const { client } = await modelWith();
    expect(await outcome(client.send(put('big', { blob: S('x'.repeat(400 * 1024)) })))).toEqual(VALIDATION);
    expect(await outcome(client.send(put('fits', { blob: S('x'.repeat(300 * 1024)) })))).toEqual({ ok: {} });
  });

  it('BatchWriteItem puts and deletes; Scan segments split the table without overlap', async () => {
    const { model, client } = await modelWith();
    await client.send(new BatchWriteItemCommand({ RequestItems: { [names.leases]: Array.from({ length: 20 }, (_, i) => ({ PutRequest: { Item: { name: S(`b${i}`) } } })) } }));
    await client.send(new BatchWriteItemCommand({ RequestItems: { [names.leases]: [{ DeleteRequest: { Key: { name: S('b0') } } }] } }));
    expect(model.items(names.leases)).toHaveLength(19);
    const segments = await Promise.all([0, 1, 2].map((Segment) => client.send(new ScanCommand({ TableName: names.leases, Segment, TotalSegments: 3 }))));
    const names3 = segments.flatMap((s) => s.Items!.map((i) => i['name']!.S));
    expect(names3.sort()).toEqual(model.items(names.leases).map((i) => i['name']!.S).sort());
  });
});
