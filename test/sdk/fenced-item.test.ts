/**
 * fencedItemWrite on DynamoDB Local: the application's own item carries the highest fencing token
 * that wrote it, and a write of an older token is refused by DynamoDB itself, no transaction
 * needed (so it works on multi-Region strongly consistent tables).
 */
import { CreateTableCommand, DeleteTableCommand, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../lib/schemas/validation.js';
import { DEFAULT_FENCE_ATTRIBUTE, FencingError, fencedItemWrite, fencedTransactWrite } from '../../lib/sdk/fencing.js';
import { withLease, type LeaseTerm } from '../../lib/sdk/with-lease.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
const table = `t-fenced-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  t = await testTables('fenced-item');
  await t.client.send(new CreateTableCommand({ TableName: table, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }] }));
});
afterAll(async () => {
  await t?.client.send(new DeleteTableCommand({ TableName: table }));
  await t?.drop();
});

const item = async (id: string) => {
  const r = await t.client.send(new GetItemCommand({ TableName: table, Key: marshall({ id }), ConsistentRead: true }));
  return r.Item && unmarshall(r.Item);
};
const fence = (fencingToken: number, attribute?: string) => ({ leaseName: 'ledger', fencingToken, ...(attribute ? { attribute } : {}) });
const refusal = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e);

describe('fencedItemWrite: the item is the sequencer', () => {
  it('a put records its token; a newer term overwrites; the older term is then refused and nothing of its write lands', async () => {
    await fencedItemWrite(t.client, fence(5), { put: { TableName: table, Item: marshall({ id: 'a', balance: 10 }) } });
    expect(await item('a')).toEqual({ id: 'a', balance: 10, [DEFAULT_FENCE_ATTRIBUTE]: 5 });
    await fencedItemWrite(t.client, fence(7), { put: { TableName: table, Item: marshall({ id: 'a', balance: 20 }) } });
    const e = await refusal(fencedItemWrite(t.client, fence(5), { put: { TableName: table, Item: marshall({ id: 'a', balance: 99 }) } }));
    expect(e).toBeInstanceOf(FencingError);
    expect((e as Error).message).toMatch(/fencing token 5 refused: the item was written with fencing token 7, a higher fencing token than this term's/);
    expect(await item('a')).toEqual({ id: 'a', balance: 20, fence: 7 });
  });

  it('an update joins the SET clause (or makes one), keeps the caller’s names and values, and the same term may write again', async () => {
    await fencedItemWrite(t.client, fence(3), { update: { TableName: table, Key: marshall({ id: 'b' }), UpdateExpression: 'ADD #n :one', ExpressionAttributeNames: { '#n': 'n' }, ExpressionAttributeValues: marshall({ ':one': 1 }) } });
    await fencedItemWrite(t.client, fence(3), { update: { TableName: table, Key: marshall({ id: 'b' }), UpdateExpression: 'set #s = :s ADD #n :one', ExpressionAttributeNames: { '#n': 'n', '#s': 's' }, ExpressionAttributeValues: marshall({ ':one': 1, ':s': 'x' }) } });
    expect(await item('b')).toEqual({ id: 'b', n: 2, s: 'x', fence: 3 });
    const e = await refusal(fencedItemWrite(t.client, fence(2), { update: { TableName: table, Key: marshall({ id: 'b' }), UpdateExpression: 'REMOVE #s', ExpressionAttributeNames: { '#s': 's' } } }));
    expect(e).toBeInstanceOf(FencingError);
    expect(await item('b')).toEqual({ id: 'b', n: 2, s: 'x', fence: 3 });
  });

  it('the caller’s own condition is ANDed on, and its refusal is DynamoDB’s, not a FencingError', async () => {
    await fencedItemWrite(t.client, fence(1, 'epoch'), { put: { TableName: table, Item: marshall({ id: 'c', v: 1 }) } });
    const e = await refusal(
      fencedItemWrite(t.client, fence(2, 'epoch'), { update: { TableName: table, Key: marshall({ id: 'c' }), UpdateExpression: 'SET v = :v', ConditionExpression: 'v = :was', ExpressionAttributeValues: marshall({ ':v': 3, ':was': 2 }) } }, ),
    );
    expect((e as Error).name).toBe('ConditionalCheckFailedException');
    expect(await item('c')).toEqual({ id: 'c', v: 1, epoch: 1 });
  });

  it('refuses, before sending anything, an item that already names the fence and an update without an expression', async () => {
    expect(await refusal(fencedItemWrite(t.client, fence(1), { put: { TableName: table, Item: marshall({ id: 'd', fence: 9 }) } }))).toBeInstanceOf(RangeError);
    expect(await refusal(fencedItemWrite(t.client, fence(1), { update: { TableName: table, Key: marshall({ id: 'd' }) } }))).toBeInstanceOf(RangeError);
    expect(await item('d')).toBeUndefined();
  });

  it('refuses, before sending anything, an update that sets or removes the fence attribute itself, by name or placeholder (DynamoDB said only "Two document paths overlap")', async () => {
    for (const u of [
      { UpdateExpression: 'SET fence = :v', ExpressionAttributeValues: marshall({ ':v': 5 }) },
      { UpdateExpression: 'SET #f = :v', ExpressionAttributeNames: { '#f': 'fence' }, ExpressionAttributeValues: marshall({ ':v': 5 }) },
      { UpdateExpression: 'SET v = :v REMOVE fence', ExpressionAttributeValues: marshall({ ':v': 5 }) },
      { UpdateExpression: 'add fence :v', ExpressionAttributeValues: marshall({ ':v': 5 }) },
      { UpdateExpression: 'SET v = list_append(v, :l), #f = :v', ExpressionAttributeNames: { '#f': 'fence' }, ExpressionAttributeValues: marshall({ ':v': 5, ':l': [1] }) },
    ]) {
      const e = await refusal(fencedItemWrite(t.client, fence(1), { update: { TableName: table, Key: marshall({ id: 'd2' }), ...u } }));
      expect(e, u.UpdateExpression).toBeInstanceOf(RangeError);
      expect((e as Error).message).toBe('fencedItemWrite: the UpdateExpression names the fence attribute "fence"; leave it out (the write sets it) or give another attribute');
    }
    // a path inside another attribute, a value placeholder spelled like it, or a value that reads it (DynamoDB takes those
    // beside the fence's own SET; a review: refused), is not the fence
    await fencedItemWrite(t.client, fence(1), { update: { TableName: table, Key: marshall({ id: 'd2' }), UpdateExpression: 'SET m = :m, m2 = :fence', ExpressionAttributeValues: marshall({ ':m': { fence: 1 }, ':fence': 2 }) } });
    await fencedItemWrite(t.client, fence(1), { update: { TableName: table, Key: marshall({ id: 'd2' }), UpdateExpression: 'SET m.fence = :v', ExpressionAttributeValues: marshall({ ':v': 3 }) } });
    await fencedItemWrite(t.client, fence(2), { update: { TableName: table, Key: marshall({ id: 'd2' }), UpdateExpression: 'SET prevFence = fence, firstFence = if_not_exists(fence, :z), #w = #f', ExpressionAttributeNames: { '#w': 'lastWriter', '#f': 'fence' }, ExpressionAttributeValues: marshall({ ':z': 0 }) } });
    expect(await item('d2')).toEqual({ id: 'd2', m: { fence: 3 }, m2: 2, fence: 2, prevFence: 1, firstFence: 1, lastWriter: 1 });
  });

  it.each(['put', 'update'] as const)('%s refused by a newer fence on an item that holds a number JavaScript cannot (12345678901234567890.5): a FencingError (it was util-dynamodb’s BigInt error)', async (how) => {
    await t.client.send(new PutItemCommand({ TableName: table, Item: { id: { S: `big-${how}` }, amount: { N: '12345678901234567890.5' }, fence: { N: '20' } } }));
    const input = how === 'put' ? { put: { TableName: table, Item: marshall({ id: `big-${how}`, v: 'old' }) } } : { update: { TableName: table, Key: marshall({ id: `big-${how}` }), UpdateExpression: 'SET v = :v', ExpressionAttributeValues: marshall({ ':v': 'old' }) } };
    const e = await refusal(fencedItemWrite(t.client, fence(10), input));
    expect(e).toBeInstanceOf(FencingError);
    expect((e as Error).message).toMatch(/written with fencing token 20, a higher fencing token than this term's/);
  });

  it('refuses a fence without a lease name (or a table, for a transaction) with a ValidationError naming it (a transaction was refused as "the lease row \"undefined\" itself")', async () => {
    const e = await refusal(fencedTransactWrite(t.client, { table: t.names.leases, leaseName: undefined as unknown as string, term: { holderIdentity: 'w', fencingToken: 3 } }, { TransactItems: [{ Put: { TableName: table, Item: marshall({ id: 'ln' }) } }] }));
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as ValidationError).fields).toEqual(['leaseName']);
    const noTable = await refusal(fencedTransactWrite(t.client, { table: '', leaseName: 'ledger', term: { holderIdentity: 'w', fencingToken: 3 } }, { TransactItems: [{ Put: { TableName: table, Item: marshall({ id: 'ln' }) } }] }));
    expect((noTable as ValidationError).fields).toEqual(['table']);
    const item1 = await refusal(fencedItemWrite(t.client, { leaseName: '', fencingToken: 3 }, { put: { TableName: table, Item: marshall({ id: 'ln' }) } }));
    expect((item1 as ValidationError).fields).toEqual(['leaseName']);
    expect(await item('ln')).toBeUndefined();
  });

  it('refuses an input that is neither one put nor one update with a ValidationError naming input (it was a TypeError reading ExpressionAttributeNames of undefined)', async () => {
    for (const input of [{}, { put: undefined }, { put: { TableName: table, Item: marshall({ id: 'in' }) }, update: { TableName: table, Key: marshall({ id: 'in' }), UpdateExpression: 'SET v = :v' } }, null]) {
      const e = await refusal(fencedItemWrite(t.client, fence(1), input as never));
      expect(e).toBeInstanceOf(ValidationError);
      expect((e as ValidationError).fields).toEqual(['input']);
    }
    expect(await item('in')).toBeUndefined();
    // a key given as undefined is not given (TypeScript takes `{ put, update: undefined }` for the union): written as the put
    await fencedItemWrite(t.client, fence(1), { put: { TableName: table, Item: marshall({ id: 'in2' }) }, update: undefined } as never);
    expect(await item('in2')).toEqual({ id: 'in2', fence: 1 });
    await fencedItemWrite(t.client, fence(1), { put: undefined, update: { TableName: table, Key: marshall({ id: 'in3' }), UpdateExpression: 'SET v = :v', ExpressionAttributeValues: marshall({ ':v': 1 }) } } as never);
    expect(await item('in3')).toEqual({ id: 'in3', v: 1, fence: 1 });
  });

  it('an update whose placeholders are named `#set` or `:set` keeps them: the fence joins the SET clause, not a placeholder', async () => {
    await fencedItemWrite(t.client, fence(4), { update: { TableName: table, Key: marshall({ id: 'e' }), UpdateExpression: 'ADD #set :set', ExpressionAttributeNames: { '#set': 'n' }, ExpressionAttributeValues: marshall({ ':set': 2 }) } });
    await fencedItemWrite(t.client, fence(4), { update: { TableName: table, Key: marshall({ id: 'e' }), UpdateExpression: 'REMOVE #set SET #v = :v', ExpressionAttributeNames: { '#set': 'n', '#v': 'v' }, ExpressionAttributeValues: marshall({ ':v': 'x' }) } });
    expect(await item('e')).toEqual({ id: 'e', v: 'x', fence: 4 });
  });

  it('refuses, before sending anything, a caller’s placeholder that is one of the fence’s own (#conclaveFence, :conclaveToken): never silently replaced', async () => {
    await fencedItemWrite(t.client, fence(5), { put: { TableName: table, Item: marshall({ id: 'f', v: 5 }) } });
    // the caller's condition names its own :conclaveToken (3): were it replaced by the token (5), the write would land
    const own = await refusal(fencedItemWrite(t.client, fence(5), { put: { TableName: table, Item: marshall({ id: 'f', v: 6 }), ConditionExpression: 'v = :conclaveToken', ExpressionAttributeValues: marshall({ ':conclaveToken': 3 }) } }));
    expect(own).toBeInstanceOf(RangeError);
    expect((own as Error).message).toMatch(/:conclaveToken/);
    const name = await refusal(fencedItemWrite(t.client, fence(5), { update: { TableName: table, Key: marshall({ id: 'f' }), UpdateExpression: 'SET #conclaveFence = :v', ExpressionAttributeNames: { '#conclaveFence': 'v' }, ExpressionAttributeValues: marshall({ ':v': 7 }) } }));
    expect(name).toBeInstanceOf(RangeError);
    expect((name as Error).message).toMatch(/#conclaveFence/);
    expect(await item('f')).toEqual({ id: 'f', v: 5, fence: 5 });
  });

  it('refuses a fencing token that is none (a string, a fraction, NaN, missing) with a ValidationError naming it: a string would land as the item’s fence and refuse every later term', async () => {
    for (const bad of ['9', 1.5, Number.NaN, -1, undefined]) {
      const e = await refusal(fencedItemWrite(t.client, { leaseName: 'ledger', fencingToken: bad as number }, { put: { TableName: table, Item: marshall({ id: 'g', v: 1 }) } }));
      expect(e, String(bad)).toBeInstanceOf(ValidationError);
      expect((e as ValidationError).fields).toContain('fencingToken');
    }
    expect(await item('g')).toBeUndefined();
    const e = await refusal(fencedTransactWrite(t.client, { table: t.names.leases, leaseName: 'ledger', term: { holderIdentity: 'w', fencingToken: undefined as unknown as number } }, { TransactItems: [{ Put: { TableName: table, Item: marshall({ id: 'g' }) } }] }));
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as ValidationError).fields).toContain('term.fencingToken');
  });

  it('an item whose fence attribute holds no token (the application’s own "fence", a string): a ValidationError naming the attribute and the way out, not a bare condition failure', async () => {
    await t.client.send(new PutItemCommand({ TableName: table, Item: marshall({ id: 'h', fence: 'north' }) }));
    const e = await refusal(fencedItemWrite(t.client, fence(5), { update: { TableName: table, Key: marshall({ id: 'h' }), UpdateExpression: 'SET v = :v', ExpressionAttributeValues: marshall({ ':v': 1 }) } }));
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as ValidationError).fields).toEqual(['fence']);
    expect((e as Error).message).toMatch(/attribute/);
    expect(await item('h')).toEqual({ id: 'h', fence: 'north' });
  });

  it('withLease hands the run its term’s token: a later run writes over it, and the earlier term’s write is refused', async () => {
    const write = (term: LeaseTerm, by: string) => term.fencedItemWrite({ put: { TableName: table, Item: marshall({ id: 'report', by }) } });
    const opts = (identity: string) => ({ client: t.client, tables: t.names, identity, platform: 'none' as const, mode: 'NoCoordination' as const });
    let late: (() => Promise<unknown>) | undefined;
    const first = await withLease('reports', async (_s, term) => {
      await write(term, 'first');
      late = () => fencedItemWrite(t.client, { leaseName: 'reports', fencingToken: term.fencingToken }, { put: { TableName: table, Item: marshall({ id: 'report', by: 'first, late' }) } });
    }, opts('run-1'));
    const second = await withLease('reports', async (_s, term) => write(term, 'second'), opts('run-2'));
    expect(first.status === 'ran' && second.status === 'ran' && second.fencingToken > first.fencingToken).toBe(true);
    expect(await refusal(late!())).toBeInstanceOf(FencingError);
    expect(await item('report')).toMatchObject({ by: 'second', fence: second.status === 'ran' ? second.fencingToken : -1 });
  });
});

describe('fencedTransactWrite: the lease row is the sequencer', () => {
  it('refuses, before sending anything, a transaction that writes or checks the lease row itself (DynamoDB allows one operation per item), naming it', async () => {
    const term = { holderIdentity: 'a', fencingToken: 1 };
    const own = { TableName: t.names.leases, Key: marshall({ name: 'ledger' }) };
    for (const write of [{ Update: { ...own, UpdateExpression: 'SET x = :x', ExpressionAttributeValues: marshall({ ':x': 1 }) } }, { ConditionCheck: { ...own, ConditionExpression: 'attribute_exists(#n)', ExpressionAttributeNames: { '#n': 'name' } } }, { Put: { TableName: t.names.leases, Item: marshall({ name: 'ledger' }) } }]) {
      const e = await refusal(fencedTransactWrite(t.client, { table: t.names.leases, leaseName: 'ledger', term }, { TransactItems: [{ Put: { TableName: table, Item: marshall({ id: 'tx', v: 1 }) } }, write] }));
      expect(e).toBeInstanceOf(RangeError);
      expect((e as Error).message).toMatch(/TransactItems\[1\] .*lease row "ledger"/);
    }
    expect(await item('tx')).toBeUndefined();
  });

  it('a table that does not exist is named: DynamoDB says only "a non-existent table", and the fence adds the leases table', async () => {
    const term = { holderIdentity: 'a', fencingToken: 1 };
    const missing = `no-such-reports-${randomUUID().slice(0, 8)}`;
    const e = await refusal(fencedTransactWrite(t.client, { table: t.names.leases, leaseName: 'ledger', term }, { TransactItems: [{ Put: { TableName: missing, Item: marshall({ id: 'x' }) } }] }));
    // still DynamoDB's error, for code that tells errors by name
    expect((e as Error).name).toBe('ResourceNotFoundException');
    expect((e as Error).message).toContain(`${missing} (TransactItems[0])`);
    expect((e as Error).message).toContain(`${t.names.leases} (the fence`);
    // one of them, not each (a new user's trial: the leases table named beside theirs read as missing too)
    expect((e as Error).message).toMatch(/a table it names does not exist where the DynamoDB client points, one of \(DynamoDB does not say which\) /);
    const one = await refusal(fencedItemWrite(t.client, fence(1), { put: { TableName: missing, Item: marshall({ id: 'x' }) } }));
    expect((one as Error).name).toBe('ResourceNotFoundException');
    expect((one as Error).message).toContain(missing);
  });
});
