/**
 * withLease's run-once windows on DynamoDB Local: the marker and the run's result in one fenced
 * transaction, on the real engine. Every run here takes a vacant (or released) lease at its first
 * step, so nothing waits for time to pass. The protocol on simulated time: with-lease.test.ts.
 */
import { CreateTableCommand, DeleteTableCommand, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FencingError } from '../../lib/sdk/fencing.js';
import { withLease, type WithLeaseOptions } from '../../lib/sdk/with-lease.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { testTables, type TestTables } from '../support.js';

const L = 'nightly-report';
let t: TestTables;
const reports = `t-reports-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  t = await testTables('with-lease');
  await t.client.send(new CreateTableCommand({ TableName: reports, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }] }));
});
afterAll(async () => {
  await t?.client.send(new DeleteTableCommand({ TableName: reports }));
  await t?.drop();
});

const opts = (identity: string, extra: Partial<WithLeaseOptions> = {}): WithLeaseOptions => ({ client: t.client, tables: t.names, identity, platform: 'none', ...extra });
const report = async (id: string) => {
  const r = await t.client.send(new GetItemCommand({ TableName: reports, Key: marshall({ id }), ConsistentRead: true }));
  return r.Item && unmarshall(r.Item);
};
const put = (id: string, by: string) => ({ Put: { TableName: reports, Item: marshall({ id, by }) } });

describe('run-once windows on DynamoDB Local', () => {
  it('the first run marks the window with its token; the second skips without running; the lease is released each time', async () => {
    let calls = 0;
    const first = await withLease(L, async () => ++calls, opts('inv-1', { runOnce: { window: '2026-11-24' } }));
    expect(first).toMatchObject({ status: 'ran', value: 1, window: '2026-11-24' });
    const lease = (await new LeaseStore(t.client, t.names.leases).read(L)).item!;
    expect(lease.runs).toEqual([expect.objectContaining({ window: '2026-11-24', holder: 'inv-1', fencingToken: first.status === 'ran' ? first.fencingToken : -1 })]);
    expect(lease.holderIdentity).toBeUndefined();
    const second = await withLease(L, async () => ++calls, opts('inv-2', { runOnce: { window: '2026-11-24' } }));
    expect(second).toEqual({ status: 'skipped', window: '2026-11-24', run: lease.runs![0] });
    expect(calls).toBe(1);
  });

  it('a failed run leaves the window open; the next one completes it, its result and the marker in one transaction', async () => {
    const failed = await withLease(L, async (_s, term) => {
      await t.client.send(new GetItemCommand({ TableName: reports, Key: marshall({ id: 'r-25' }) }));
      throw new Error(`the report for ${term.window} failed`);
    }, opts('inv-3', { runOnce: { window: '2026-11-25' } })).catch((e: unknown) => e);
    expect((failed as Error).message).toBe('the report for 2026-11-25 failed');
    expect((await new LeaseStore(t.client, t.names.leases).read(L)).item!.runs!.map((r) => r.window)).toEqual(['2026-11-24']);
    const ok = await withLease(L, async (_s, term) => {
      await term.complete([put('r-25', term.identity)]);
      return 'written';
    }, opts('inv-4', { runOnce: { window: '2026-11-25' } }));
    expect(ok).toMatchObject({ status: 'ran', value: 'written' });
    expect(await report('r-25')).toEqual({ id: 'r-25', by: 'inv-4' });
    expect((await new LeaseStore(t.client, t.names.leases).read(L)).item!.runs!.map((r) => [r.window, r.holder])).toEqual([['2026-11-25', 'inv-4'], ['2026-11-24', 'inv-1']]);
  });

  it('a run whose term moved on while it worked: complete() is refused by DynamoDB, and neither its result nor the marker lands', async () => {
    const leases = new LeaseStore(t.client, t.names.leases);
    const e = await withLease(L, async (_s, term) => {
      // another holder took the lease meanwhile (as after a freeze): the token is raised
      const read = await leases.read(L);
      await leases.write(read, { set: { holderIdentity: 'inv-6', holderInstance: 'inv-6_1', fencingToken: term.fencingToken + 1, renewTime: read.item!.renewTime!, acquireTime: read.item!.renewTime! } });
      await term.complete([put('r-26', term.identity)]);
      return 'unreachable';
    }, opts('inv-5', { runOnce: { window: '2026-11-26' } })).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(FencingError);
    expect(await report('r-26')).toBeUndefined();
    const lease = (await leases.read(L)).item!;
    expect(lease.runs!.map((r) => r.window)).toEqual(['2026-11-25', '2026-11-24']);
    expect(lease.holderIdentity).toBe('inv-6'); // inv-5's release was refused too: the term is inv-6's
  });
});
