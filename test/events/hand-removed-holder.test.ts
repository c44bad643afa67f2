/**
 * A holder removed by hand (a review of the lease-change events, 2026-12-07, thirteenth), records
 * fed through functions/lease-stream.ts on DynamoDB Local: the row keeps no name of the holder an
 * operator's `update-item REMOVE holderIdentity` took off it, so the next leader's Leader Elected
 * named the holder before that one as previousHolder, and no Leader Changed told the change of
 * leader. The lease stream records the removed holder as the row's last holder before its reconcile.
 */
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { DETAIL_SCHEMAS, type ConclaveEvent } from '../../lib/events/schemas.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { NOW } from '../fixtures.js';
import { publishingDeps } from './publishing-deps.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => {
  t = await testTables('hand-removed');
});
afterAll(async () => {
  await t.drop();
});

const recordsOf = async (lease: string) => (await streamRecords(t.client, t.names.leases)).filter((x) => x.dynamodb!.Keys!['name']!.S === lease);
const feed = async (d: FunctionDeps, recs: Awaited<ReturnType<typeof recordsOf>>) =>
  expect(await leaseStream(d)({ Records: recs } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });
/** Each event as [detail-type, holder, previousHolder]. */
const told = (events: readonly ConclaveEvent[]) =>
  events.map((e) => {
    const d = e.detail as { holder?: string; previousHolder?: string };
    return [e.detailType, d.holder, d.previousHolder];
  });

/** `lease` held by a, elected over z's release (the row's last holder z, or none), and fed so; then z a fresh candidate. */
async function heldByAAfterZ(d: FunctionDeps, lease: string, now: number, last: 'z' | 'none' = 'z'): Promise<void> {
  const c = d.coordinator;
  await c.leases.write(await c.leases.read(lease), { set: { lastHolderIdentity: last === 'z' ? 'z' : undefined, leaseDurationSeconds: 15, renewTime: now, leaseTransitions: 0, fencingToken: 1 } });
  await c.leases.write(await c.leases.read(lease), {
    set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 1, fencingToken: 2, electedBy: 'coordinator', electedStrategy: OLDEST_EMULATION_VERSION },
  });
  await feed(d, await recordsOf(lease));
  await c.candidates.write(await c.candidates.read(lease, 'z'), { set: { identity: 'z-1', binaryVersion: '1.0.0', emulationVersion: '1.0.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: now, createdAt: now } });
}

/** An operator's `aws dynamodb update-item --update-expression 'REMOVE holderIdentity'`: the docs count it a release. */
const removeHolderByHand = (lease: string) =>
  t.client.send(new UpdateItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }), UpdateExpression: 'REMOVE holderIdentity' }));

describe('a holder removed by hand', () => {
  it('the next leader z is told as changed from a, the holder removed (before: Leader Elected {z, previousHolder z}, no Leader Changed)', async () => {
    const { clock, d, events } = publishingDeps(t, NOW);
    const lease = 'hand-removed';
    await heldByAAfterZ(d, lease, NOW);
    expect(told(events)).toEqual([['Leader Elected', 'a', 'z'], ['Leader Changed', 'a', 'z']]);
    events.length = 0;
    clock.advance(1_000);
    await removeHolderByHand(lease);
    await feed(d, (await recordsOf(lease)).slice(2));
    // the release names a; the lease stream's reconcile elects z at once (its row fresh)
    expect((await d.coordinator.leases.read(lease)).item).toMatchObject({ holderIdentity: 'z', lastHolderIdentity: 'a' });
    await feed(d, (await recordsOf(lease)).slice(3));
    expect(told(events)).toEqual([
      ['Lease Released', undefined, 'a'],
      ['Leader Elected', 'z', 'a'],
      ['Leader Changed', 'z', 'a'],
    ]);
    for (const e of events) DETAIL_SCHEMAS[e.detailType].parse(e.detail);
  });

  it("a's first term (no last holder on the row): z's Leader Changed names a too", async () => {
    const { clock, d, events } = publishingDeps(t, NOW);
    const lease = 'hand-removed-first';
    await heldByAAfterZ(d, lease, NOW, 'none');
    expect(told(events)).toEqual([['Leader Elected', 'a', undefined]]);
    events.length = 0;
    clock.advance(1_000);
    await removeHolderByHand(lease);
    await feed(d, (await recordsOf(lease)).slice(2));
    await feed(d, (await recordsOf(lease)).slice(3));
    expect(told(events)).toEqual([
      ['Lease Released', undefined, 'a'],
      ['Leader Elected', 'z', 'a'],
      ['Leader Changed', 'z', 'a'],
    ]);
  });

  it('a release that records its holder writes nothing more: the reconcile elects z on the row the release left', async () => {
    const { clock, d, events } = publishingDeps(t, NOW);
    const c = d.coordinator;
    const lease = 'released-recorded';
    await heldByAAfterZ(d, lease, NOW);
    events.length = 0;
    clock.advance(1_000);
    const released = await c.leases.releaseTerm(lease, { holderIdentity: 'a', fencingToken: 2 }, clock.now());
    expect(released).toMatchObject({ lastHolderIdentity: 'a' });
    await feed(d, (await recordsOf(lease)).slice(2));
    // the election's write alone, on the released row's revision
    expect((await c.leases.read(lease)).item).toMatchObject({ holderIdentity: 'z', lastHolderIdentity: 'a', revision: released!.revision + 1 });
    await feed(d, (await recordsOf(lease)).slice(3));
    expect(told(events)).toEqual([
      ['Lease Released', undefined, 'a'],
      ['Leader Elected', 'z', 'a'],
      ['Leader Changed', 'z', 'a'],
    ]);
  });
});
