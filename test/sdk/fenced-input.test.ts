/**
 * A fenced transaction given what it cannot send, and refusals that were told as something else,
 * on DynamoDB Local (a review, 2026-12-06):
 * - input that is no list of transaction items (`complete({ Put })`, `fencedWrite(undefined)`,
 *   `{ TransactItems: {} }`, `[undefined]`) was a raw TypeError ("items is not iterable"): a
 *   ValidationError naming `items` / `TransactItems` and the shape to give;
 * - an item of `complete(items)` on the window's own row was DynamoDB's "multiple operations on one
 *   item": refused first, naming it;
 * - a bare fencedTransactWrite whose `fence.table` is not the leases table (or whose leaseName is
 *   wrong) was DynamoDB's bare "One of the required keys was not given a value", or a FencingError
 *   saying the lease had moved on though it has no row there;
 * - a run-once claim refused by the window row's higher fence, the lease still this term's (tokens
 *   gone backwards after the lease row was deleted), was "another holder took the lease";
 * - fencedItemWrite's refusal said "a newer term", which a higher token need not be.
 */
import { CreateTableCommand, DeleteTableCommand, GetItemCommand, PutItemCommand, type TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyedWindowRow } from '../../lib/schemas/run-once.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { FencingError, fencedItemWrite, fencedTransactWrite } from '../../lib/sdk/fencing.js';
import { LeaseLostError, withLease, type WithLeaseOptions } from '../../lib/sdk/with-lease.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
const table = `t-input-${randomUUID().slice(0, 8)}`;
/** A table keyed `name`, as the leases table is, that is not it. */
const named = `t-named-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  t = await testTables('fenced-input');
  await t.client.send(new CreateTableCommand({ TableName: table, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }] }));
  await t.client.send(new CreateTableCommand({ TableName: named, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'name', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'name', KeyType: 'HASH' }] }));
  await t.client.send(new PutItemCommand({ TableName: t.names.leases, Item: marshall({ name: 'ledger', holderIdentity: 'a', fencingToken: 7 }) }));
});
afterAll(async () => {
  for (const name of [table, named]) await t?.client.send(new DeleteTableCommand({ TableName: name }));
  await t?.drop();
});

const item = async (id: string) => {
  const r = await t.client.send(new GetItemCommand({ TableName: table, Key: marshall({ id }), ConsistentRead: true }));
  return r.Item && unmarshall(r.Item);
};
const refusal = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e);
const put = (id: string): TransactWriteItem => ({ Put: { TableName: table, Item: marshall({ id, v: 1 }) } });
const fence = { table: '', leaseName: 'ledger', term: { holderIdentity: 'a', fencingToken: 7 } };
const opts = (identity: string, extra: Partial<WithLeaseOptions> = {}): WithLeaseOptions => ({ client: t.client, tables: t.names, identity, platform: 'none', mode: 'NoCoordination', ...extra });

/** Malformed inputs of a fenced transaction, and the field each is named by. */
const malformed: [string, unknown, string][] = [
  ['undefined', undefined, 'TransactItems'],
  ['no TransactItems', {}, 'TransactItems'],
  ['TransactItems an object', { TransactItems: {} }, 'TransactItems'],
  ['TransactItems one put, not a list', { TransactItems: { Put: { TableName: 'x', Item: {} } } }, 'TransactItems'],
  ['an item undefined', { TransactItems: [undefined] }, 'TransactItems[0]'],
  ['an item with no operation', { TransactItems: [{ Put: { TableName: 'x', Item: { id: { S: 'm' } } } }, {}] }, 'TransactItems[1]'],
  ['an item with two operations', { TransactItems: [{ Put: { TableName: 'x', Item: {} }, Delete: { TableName: 'x', Key: {} } }] }, 'TransactItems[0]'],
  ['an operation not an object', { TransactItems: [{ Put: 'x' }] }, 'TransactItems[0]'],
];

describe('malformed input of a fenced transaction: a ValidationError naming the field and the shape to give (it was a TypeError naming nothing)', () => {
  it.each(malformed)('fencedTransactWrite, %s', async (_, input, field) => {
    const e = await refusal(fencedTransactWrite(t.client, { ...fence, table: t.names.leases }, input as never));
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as ValidationError).fields).toEqual([field]);
    expect((e as Error).message).toMatch(/\{ Put \}, \{ Update \}, \{ Delete \} or \{ ConditionCheck \}|Put must be an object/);
  });

  it.each(malformed)("withLease's term.fencedWrite, %s", async (_, input, field) => {
    let seen: unknown;
    const r = await withLease('job-input', async (_s, term) => {
      seen = await refusal(term.fencedWrite(input as never));
      return term.held();
    }, opts('a'));
    expect(seen).toBeInstanceOf(ValidationError);
    expect((seen as ValidationError).fields).toEqual([field]);
    expect(r).toMatchObject({ status: 'ran', value: true });
  });

  it('complete({ Put }) (an object, not a list): a ValidationError naming items; the run rejects with it though the function caught it, and the window stays open', async () => {
    let seen: unknown;
    const r = await refusal(withLease('job-complete-input', async (_s, term) => {
      seen = await refusal(term.complete(put('c1') as never));
      return 1;
    }, opts('a', { runOnce: { window: 'w1' } })));
    expect(seen).toBeInstanceOf(ValidationError);
    expect((seen as ValidationError).fields).toEqual(['items']);
    expect((seen as Error).message).toMatch(/items: must be a list, not an object: give a list of transaction items/);
    expect(r).toBe(seen);
    for (const bad of [[undefined], [{}], null]) {
      const e = await refusal(withLease('job-complete-input', async (_s, term) => term.complete(bad as never), opts('a', { runOnce: { window: 'w1' } })));
      expect(e, JSON.stringify(bad)).toBeInstanceOf(ValidationError);
      expect((e as ValidationError).fields[0]).toMatch(/^items/);
    }
    expect(await item('c1')).toBeUndefined();
    // the window is open: the next run does it
    expect(await withLease('job-complete-input', async (_s, term) => (await term.complete([put('c1')]), 2), opts('b', { runOnce: { window: 'w1' } }))).toMatchObject({ status: 'ran', value: 2 });
    expect(await item('c1')).toEqual({ id: 'c1', v: 1 });
  });

  it("complete(items) with an item on the window's own row: refused before anything is sent, naming it (it was DynamoDB's \"multiple operations on one item\")", async () => {
    let seen: unknown;
    const r = await refusal(withLease('job-own-row', async (_s, term) => {
      const own: TransactWriteItem = { Put: { TableName: t.names.candidates, Item: marshall({ leaseName: 'job-own-row', name: keyedWindowRow('w2'), note: 'mine' }) } };
      seen = await refusal(term.complete([put('r1'), own]));
      return 1;
    }, opts('a', { runOnce: { window: 'w2' } })));
    expect(seen).toBeInstanceOf(RangeError);
    expect((seen as Error).message).toMatch(/complete\(items\): items\[1\] is the run-once window's row \("~run-once\/w2" of lease "job-own-row" on the candidates table .*leave the window's row to withLease/);
    expect(r).toBe(seen);
    expect(await item('r1')).toBeUndefined();
  });
});

describe("a bare fencedTransactWrite whose fence.table is not the leases table, or whose lease has no row: told so (it was DynamoDB's bare ValidationException, or \"the lease is no longer in this term\")", () => {
  it("fence.table keyed otherwise (the caller's own table): DynamoDB's ValidationException, its message saying fence.table must be the leases table", async () => {
    const e = await refusal(fencedTransactWrite(t.client, { ...fence, table }, { TransactItems: [put('k1')] }));
    expect((e as Error).name).toBe('ValidationException');
    expect((e as Error).message).toMatch(new RegExp(`One of the required keys was not given a value - a key does not match its table's: the fence's \\(a ConditionCheck of \\{ name: "ledger" \\} on table "${table}": fence.table must be the leases table`));
    // the candidates table (keyed leaseName + name)
    const c = await refusal(fencedTransactWrite(t.client, { ...fence, table: t.names.candidates }, { TransactItems: [put('k1')] }));
    expect((c as Error).message).toMatch(/fence.table must be the leases table/);
    expect(await item('k1')).toBeUndefined();
  });

  it('fence.table keyed `name` but not the leases table, or a lease name with no row: a FencingError saying there is no lease row (not that the lease moved on)', async () => {
    for (const f of [{ ...fence, table: named }, { ...fence, table: t.names.leases, leaseName: 'ledgr' }]) {
      const e = await refusal(fencedTransactWrite(t.client, f, { TransactItems: [put('k2')] }));
      expect(e).toBeInstanceOf(FencingError);
      expect((e as Error).message).toContain(`refused: table "${f.table}" has no lease row "${f.leaseName}": fence.table must be the leases table`);
      expect((e as Error).message).not.toContain('no longer in this term');
    }
    // the lease in another term: said so, with whose it is
    const e = await refusal(fencedTransactWrite(t.client, { ...fence, table: t.names.leases, term: { holderIdentity: 'a', fencingToken: 6 } }, { TransactItems: [put('k2')] }));
    expect(e).toBeInstanceOf(FencingError);
    expect((e as Error).message).toContain('refused: the lease is no longer in this term (its row names holder "a", fencing token 7); nothing was written');
    expect(await item('k2')).toBeUndefined();
    // the right table and term: written
    await fencedTransactWrite(t.client, { ...fence, table: t.names.leases }, { TransactItems: [put('k2')] });
    expect(await item('k2')).toEqual({ id: 'k2', v: 1 });
  });
});

describe('a refusal by a higher fencing token, which tokens gone backwards after a deleted lease row make without a newer term', () => {
  it("a run-once claim refused by the window row's higher fence while the lease is this term's: says so, not \"another holder took the lease\"", async () => {
    // an earlier term, before the lease row was deleted, claimed the window with a higher token than this run's will be
    const higher = 9_000_000_000_000_000;
    await t.client.send(new PutItemCommand({ TableName: t.names.candidates, Item: marshall({ leaseName: 'job-backwards', name: keyedWindowRow('w3'), fence: higher }) }));
    let ran = false;
    const e = await refusal(withLease('job-backwards', async () => void (ran = true), opts('a', { runOnce: { window: 'w3' } })));
    expect(ran).toBe(false);
    expect(e).toBeInstanceOf(LeaseLostError);
    const m = (e as Error).message;
    expect(m).toMatch(new RegExp(`the run-once window w3's row "~run-once/w3" carries fencing token ${higher}, higher than this term's \\(\\d+\\): a term with a higher token ran or claimed the window`));
    expect(m).not.toContain('another holder took the lease');
  });

  it("fencedItemWrite: the item's token is called higher than this term's, not a newer term's", async () => {
    await fencedItemWrite(t.client, { leaseName: 'ledger', fencingToken: 9 }, { put: { TableName: table, Item: marshall({ id: 'h1' }) } });
    const e = await refusal(fencedItemWrite(t.client, { leaseName: 'ledger', fencingToken: 5 }, { put: { TableName: table, Item: marshall({ id: 'h1', v: 2 }) } }));
    expect(e).toBeInstanceOf(FencingError);
    expect((e as Error).message).toContain('refused: the item was written with fencing token 9, a higher fencing token than this term\'s');
    expect((e as Error).message).not.toContain('newer term');
  });
});
