/**
 * A fenced transaction whose caller's own condition fails while its fence passes, on DynamoDB Local:
 * a ConflictError naming the caller's item (its index in TransactItems) and saying the fence passed,
 * DynamoDB's TransactionCanceledException its cause (its CancellationReasons, the fence's last).
 * It was DynamoDB's error as it came, "[ConditionalCheckFailed, None]", the `None` the fence the SDK
 * added, told apart from a FencingError by nothing but the reasons' order.
 */
import { CreateTableCommand, DeleteTableCommand, GetItemCommand, PutItemCommand, type TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FencingError, fencedTransactWrite } from '../../lib/sdk/fencing.js';
import { withLease, type WithLeaseOptions } from '../../lib/sdk/with-lease.js';
import { ConflictError } from '../../lib/stores/errors.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
const table = `t-own-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  t = await testTables('own-condition');
  await t.client.send(new CreateTableCommand({ TableName: table, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }] }));
  for (const id of ['exists', 'exists-too']) await t.client.send(new PutItemCommand({ TableName: table, Item: marshall({ id, v: 1 }) }));
});
afterAll(async () => {
  await t?.client.send(new DeleteTableCommand({ TableName: table }));
  await t?.drop();
});

const item = async (id: string) => {
  const r = await t.client.send(new GetItemCommand({ TableName: table, Key: marshall({ id }), ConsistentRead: true }));
  return r.Item && unmarshall(r.Item);
};
const refusal = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e);
const put = (id: string): TransactWriteItem => ({ Put: { TableName: table, Item: marshall({ id, v: 2 }) } });
/** A put refused by its own condition: the item is there. */
const refusedPut = (id = 'exists'): TransactWriteItem => ({ Put: { TableName: table, Item: marshall({ id, v: 3 }), ConditionExpression: 'attribute_not_exists(id)' } });
const opts = (identity: string, extra: Partial<WithLeaseOptions> = {}): WithLeaseOptions => ({ client: t.client, tables: t.names, identity, platform: 'none', mode: 'NoCoordination', ...extra });

/** What every such refusal shows: its kind, the items it names, the fence passed, DynamoDB's reasons on its cause (the fence's last). */
function expectOwnCondition(e: unknown, indexes: number[], reasons: number) {
  expect(e).toBeInstanceOf(ConflictError);
  expect(e).not.toBeInstanceOf(FencingError);
  const m = (e as Error).message;
  for (const k of indexes) expect(m).toContain(`TransactItems[${k}] (Put on table "${table}")`);
  expect(m).toMatch(/failed (its|their) own condition \(ConditionalCheckFailed\); the fence passed .*nothing was written/);
  const cause = (e as Error).cause as { name: string; CancellationReasons: { Code: string }[] };
  expect(cause.name).toBe('TransactionCanceledException');
  expect(cause.CancellationReasons).toHaveLength(reasons);
  expect(cause.CancellationReasons.at(-1)!.Code).toBe('None');
  for (const k of indexes) expect(cause.CancellationReasons[k]!.Code).toBe('ConditionalCheckFailed');
}

describe("a fenced transaction refused by the caller's own condition, its fence passing", () => {
  it('fencedTransactWrite: a ConflictError naming the item by its index, DynamoDB\'s error its cause; nothing written. A fence refused is still a FencingError', async () => {
    await t.client.send(new PutItemCommand({ TableName: t.names.leases, Item: marshall({ name: 'ledger', holderIdentity: 'a', fencingToken: 7 }) }));
    const fence = { table: t.names.leases, leaseName: 'ledger', term: { holderIdentity: 'a', fencingToken: 7 } };
    const e = await refusal(fencedTransactWrite(t.client, fence, { TransactItems: [put('one'), refusedPut()] }));
    expectOwnCondition(e, [1], 3);
    expect((e as Error).message).not.toContain('TransactItems[0]');
    expect(await item('one')).toBeUndefined();
    expect(await item('exists')).toEqual({ id: 'exists', v: 1 });
    // two of them: both named
    const both = await refusal(fencedTransactWrite(t.client, fence, { TransactItems: [refusedPut(), put('three'), refusedPut('exists-too')] }));
    expectOwnCondition(both, [0, 2], 4);
    expect((both as Error).message).toMatch(/TransactItems\[0\] .* and TransactItems\[2\] .* failed their own condition/);
    // another term's: the fence refuses, whatever the items' conditions say
    const fenced = await refusal(fencedTransactWrite(t.client, { ...fence, term: { holderIdentity: 'a', fencingToken: 6 } }, { TransactItems: [refusedPut()] }));
    expect(fenced).toBeInstanceOf(FencingError);
  });

  it("withLease: term.fencedWrite and complete(items) reject with the ConflictError (complete(items)'s run rejects with it, the window left open)", async () => {
    const seen: unknown[] = [];
    const r = await withLease('job-own', async (_s, term) => {
      seen.push(await refusal(term.fencedWrite({ TransactItems: [refusedPut()] })));
      return term.held();
    }, opts('a'));
    expect(r).toMatchObject({ status: 'ran', value: true });
    expectOwnCondition(seen[0], [0], 2);
    const r2 = await refusal(withLease('job-own-2', async (_s, term) => {
      await term.complete([put('two'), refusedPut()]);
      return 1;
    }, opts('b', { runOnce: { window: 'w1' } })));
    // the caller's items, the window's row, the fence
    expectOwnCondition(r2, [1], 4);
    expect(await item('two')).toBeUndefined();
    // the window is open: the next run does it
    const r3 = await withLease('job-own-2', async (_s, term) => (await term.complete([put('two')]), 2), opts('c', { runOnce: { window: 'w1' } }));
    expect(r3).toMatchObject({ status: 'ran', value: 2 });
    expect(await item('two')).toEqual({ id: 'two', v: 2 });
  });
});
