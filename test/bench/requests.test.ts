/**
 * The steady-state cost figures stand on the request counter: every request counted once, under
 * the role named at send time and its command, with the capacity DynamoDB reports — and a refused
 * conditional write still billed. The dollar arithmetic is checked on round numbers.
 */
import { randomUUID } from 'node:crypto';
import { GetItemCommand, PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createBaselineTable, deleteBaselineTable } from '../../bench/baseline/table.js';
import { dollarsPerMonth, MINUTES_PER_MONTH, PRICES } from '../../bench/prices.js';
import { addTallies, diffTallies, RequestCounter } from '../../bench/requests.js';
import { localClient } from '../../lib/local/dynamodb-local.js';

const table = `t-bench-requests-${randomUUID().slice(0, 8)}`;
let admin: DynamoDBClient;

beforeAll(async () => {
  admin = localClient(inject('ddbEndpoint'));
  await createBaselineTable(admin, table); // any table keyed by `name` will do
});
afterAll(async () => {
  await deleteBaselineTable(admin, table);
  admin.destroy();
});

describe('RequestCounter on DynamoDB Local', () => {
  it('counts each request once by role and command, with the capacity units reported, and a refused conditional write as failed and billed', async () => {
    const client = localClient(inject('ddbEndpoint'));
    let role = 'writer';
    const counter = new RequestCounter().attach(client, () => role);
    try {
      const put = (name: string, onlyIfNew = false) =>
        client.send(
          new PutItemCommand({
            TableName: table,
            Item: { name: { S: name }, v: { N: '1' } },
            ...(onlyIfNew ? { ConditionExpression: 'attribute_not_exists(#n)', ExpressionAttributeNames: { '#n': 'name' } } : {}),
          }),
        );
      await put('a');
      await put('b');
      await expect(put('a', true)).rejects.toMatchObject({ name: 'ConditionalCheckFailedException' });
      const afterWrites = counter.snapshot();

      role = 'reader';
      await client.send(new GetItemCommand({ TableName: table, Key: { name: { S: 'a' } }, ConsistentRead: true }));
      await client.send(new GetItemCommand({ TableName: table, Key: { name: { S: 'a' } } }));
      const all = counter.snapshot();

      expect(all['writer']).toEqual({ requests: 3, rru: 0, wru: 3, failed: 1, commands: { PutItem: 3 } });
      // a strongly consistent read of a small item is 1 RRU, an eventually consistent one half that
      expect(all['reader']).toEqual({ requests: 2, rru: 1.5, wru: 0, failed: 0, commands: { GetItem: 2 } });

      expect(diffTallies(all, afterWrites)).toEqual({ writer: { requests: 0, rru: 0, wru: 0, failed: 0, commands: {} }, reader: all['reader'] });
      expect(addTallies(afterWrites, diffTallies(all, afterWrites))).toEqual(all);
      // a snapshot is a copy: later requests do not change it
      expect(afterWrites['reader']).toBeUndefined();
    } finally {
      client.destroy();
    }
  });

  it("gives roleOf the command as well as the input (a session row's reads are told from its writes by it)", async () => {
    const client = localClient(inject('ddbEndpoint'));
    const seen: string[] = [];
    const counter = new RequestCounter().attach(client, (input, command) => {
      seen.push(`${command} ${input.TableName}`);
      return command === 'GetItem' ? 'reads' : 'writes';
    });
    try {
      await client.send(new PutItemCommand({ TableName: table, Item: { name: { S: 'c' } } }));
      await client.send(new GetItemCommand({ TableName: table, Key: { name: { S: 'c' } } }));
      expect(seen).toEqual([`PutItem ${table}`, `GetItem ${table}`]);
      expect(Object.keys(counter.snapshot()).sort()).toEqual(['reads', 'writes']);
    } finally {
      client.destroy();
    }
  });

  it('asks for capacity without changing what the caller sent or gets back', async () => {
    const client = localClient(inject('ddbEndpoint'));
    new RequestCounter().attach(client, () => 'x');
    try {
      const input = { TableName: table, Key: { name: { S: 'b' } }, ConsistentRead: true };
      const out = await client.send(new GetItemCommand(input));
      expect(out.Item?.['name']).toEqual({ S: 'b' });
      expect(input).toEqual({ TableName: table, Key: { name: { S: 'b' } }, ConsistentRead: true });
    } finally {
      client.destroy();
    }
  });
});

describe('dollars a month at on-demand prices', () => {
  it('a million units a month cost the listed price per million', () => {
    expect(dollarsPerMonth(1e6 / MINUTES_PER_MONTH, 0)).toBeCloseTo(PRICES.dollarsPerMillionWru, 10);
    expect(dollarsPerMonth(0, 1e6 / MINUTES_PER_MONTH)).toBeCloseTo(PRICES.dollarsPerMillionRru, 10);
  });

  it('a lease renewed every 2 s (30 WRU a minute) and read every 2 s by two followers (60 RRU) costs about $1.15 a month', () => {
    // 30 × 43,800 = 1.314 M WRU → $0.82; 60 × 43,800 = 2.628 M RRU → $0.33
    expect(MINUTES_PER_MONTH).toBe(43_800);
    expect(dollarsPerMonth(30, 60)).toBeCloseTo(0.82125 + 0.3285, 10);
  });
});
