/**
 * A held lease row deleted by an operator, the tick reaching the missing row before the lease stream
 * reaches the REMOVE (the stream behind): the row the tick made names no last holder, and the
 * stream's hold of that election (holdOpenElection) did not either, so the next leader's Leader
 * Elected had no previousHolder and no Leader Changed was published (a review, 2026-12-06). The
 * hold now keeps the deleted term's holder as the last. (Election Started, from the tick's INSERT,
 * still names none: leader discovery's sweep clears that holder's name.)
 */
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { onTick, onTimer, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import type { ConclaveEvent } from '../../lib/events/schemas.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('delete-race-events')));
afterAll(() => t.drop());

function setup(start: number) {
  const clock = manualClock(start);
  const events: ConclaveEvent[] = [];
  const d: FunctionDeps = {
    coordinator: coordinatorDeps(t.client, t.names, { clock, config: { ackWindowMs: 5_000 } }),
    timer: { schedule: async () => undefined },
    publish: async (list) => void events.push(...list),
    deadLetter: async () => undefined,
    ...observability('test', 'SILENT'),
  };
  return { clock, d, events };
}
const recordsOf = async (lease: string) => (await streamRecords(t.client, t.names.leases)).filter((x) => x.dynamodb!.Keys!['name']!.S === lease);
const feed = async (d: FunctionDeps, recs: Awaited<ReturnType<typeof recordsOf>>) =>
  expect(await leaseStream(d)({ Records: recs } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });

it('tick recreated the deleted held row before the stream saw the REMOVE: the next leader b after a', async () => {
  const start = Date.now();
  const { clock, d, events } = setup(start);
  const c = d.coordinator;
  const lease = 'del-tick-first';
  await c.candidates.write(await c.candidates.read(lease, 'b'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: start, createdAt: start - 60_000, identity: 'b-1' } });
  await c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: start, renewTime: start, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' } });
  await feed(d, await recordsOf(lease)); // the INSERT of a's term (as elected)
  events.length = 0;
  await t.client.send(new DeleteItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }) }));
  clock.set(start + 60_000);
  // the tick reaches the missing row first (the stream is behind)
  expect((await onTick(d)).outcomes.find((o) => o.lease === lease)?.decision.kind).toBe('openElection');
  clock.advance(1_000);
  await feed(d, (await recordsOf(lease)).slice(1)); // REMOVE, then the tick's INSERT, then the hold's MODIFY
  // b answers; the held election closes at its deadline
  const r = await c.candidates.read(lease, 'b');
  await c.candidates.write(r, { set: { renewTime: clock.now(), ackedPingTime: r.item!.pingTime! } });
  const el = (await c.leases.read(lease)).item!.election!;
  clock.set(el.deadline);
  const before = (await recordsOf(lease)).length;
  expect((await onTimer(d, { lease, electionId: el.id, deadline: el.deadline }))?.decision.kind).toBe('elect');
  await feed(d, (await recordsOf(lease)).slice(before));
  const row = (await c.leases.read(lease)).item!;
  expect(row.holderIdentity).toBe('b');
  // before: Leader Elected with no previousHolder, and no Leader Changed
  expect(events.find((e) => e.detailType === 'Leader Elected')?.detail).toMatchObject({ holder: 'b', previousHolder: 'a' });
  expect(events.find((e) => e.detailType === 'Leader Changed')?.detail).toMatchObject({ holder: 'b', previousHolder: 'a' });
});
