/**
 * A session-held lease whose holder field an operator wrote malformed, then repaired as `conclave
 * describe lease` tells: in place (REMOVE holderIdentity, ADD revision 1) or by deleting the row.
 * The breaking write's record is poison (dead-lettered); the repair's record has a broken old image.
 * That image still carries the term's session and fencing token, which is all the mark needs: the
 * term is marked ended on its session, so its holder stops at its next session renewal, and the
 * next election is held as for a valid row's end or delete. Before: the repair was reconciled as
 * any change to a broken row (an election at once, no hold, the successor free to take the vacant
 * row) and the session never marked: the old holder led on until its backstop lease read. On real
 * stream records of DynamoDB Local, through the lease stream's handler; time is a manual clock.
 */
import { DeleteItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makeHandler as electionTimer } from '../../functions/election-timer.js';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { unmarkedHoldMs } from '../../lib/election/decide.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import type { PoisonRecord } from '../../lib/functions/dead-letter.js';
import { observability } from '../../lib/functions/env.js';
import { timerQueueBody, type TimerQueueMessage } from '../../lib/functions/timer.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { sessionKey } from '../../lib/schemas/identity.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { EndedTermsFullError } from '../../lib/stores/errors.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => {
  t = await testTables('broken-holder-repair');
});
afterAll(async () => {
  await t.drop();
});

const DURATION_S = 15;
const TOKEN = 7;

/** Lease `lease` held by a on session `session` (token TOKEN), b its successor; then a's holder field written malformed (a number), its record handled (poison). */
async function brokenHeld(lease: string, session: string, attribute = 'holderIdentity') {
  const start = Date.now();
  const clock = manualClock(start);
  const scheduled: { message: TimerQueueMessage; at: number }[] = [];
  const poison: PoisonRecord[] = [];
  const d: FunctionDeps = {
    coordinator: coordinatorDeps(t.client, t.names, { clock, config: { ackWindowMs: 5_000 } }),
    timer: { schedule: async (message, delayMs) => void scheduled.push({ message, at: clock.now() + delayMs }) },
    publish: async () => undefined,
    deadLetter: async (p) => void poison.push(p),
    ...observability('test', 'SILENT'),
  };
  const co = d.coordinator;
  for (const name of ['a', 'b']) {
    await co.candidates.write(await co.candidates.read(lease, name), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: start, createdAt: start - 60_000, identity: `${name}-1` } });
  }
  const key = sessionKey(session);
  await co.identities.write(await co.identities.read(key.component, key.name), { set: { holderIdentity: session, hostname: 'h', leaseDurationSeconds: DURATION_S, acquireTime: start, renewTime: start } });
  await co.leases.write(await co.leases.read(lease), {
    set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: DURATION_S, acquireTime: start, renewTime: start, leaseTransitions: 0, fencingToken: TOKEN, termToken: TOKEN, electedBy: 'coordinator', session, successor: 'b', successorInstance: 'b-1' },
  });
  const records = async () => (await streamRecords(t.client, t.names.leases)).filter((x) => x.dynamodb!.Keys!['name']!.S === lease);
  let seen = (await records()).length;
  /** The lease's one stream record since the last, through the lease stream's handler. */
  const handleNext = async () => {
    const fresh = (await records()).slice(seen);
    expect(fresh).toHaveLength(1);
    seen += fresh.length;
    return leaseStream(d)({ Records: fresh } as DynamoDBStreamEvent, lambdaContext('leaseStream'));
  };
  // the operator's malformed write: the holder's name as a number
  await t.client.send(new UpdateItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }), UpdateExpression: `SET ${attribute} = :n ADD revision :one`, ExpressionAttributeValues: marshall({ ':n': 42, ':one': 1 }) }));
  clock.set(start + 1_000);
  expect(await handleNext()).toEqual({ batchItemFailures: [] });
  expect(poison).toHaveLength(1); // the breaking write's record: dead-lettered, as poison
  return {
    start,
    clock,
    d,
    co,
    scheduled,
    handleNext,
    markOf: async () => (await co.identities.read(key.component, key.name)).item!.endedTerms?.[lease],
  };
}

it('repaired in place (REMOVE holderIdentity, ADD revision 1): the term is marked ended on its session before the next election (before: never marked; the old holder led on until its backstop read)', async () => {
  const lease = 'broken-holder-fixed';
  const w = await brokenHeld(lease, 'broken-holder-s1');
  await t.client.send(new UpdateItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }), UpdateExpression: 'REMOVE holderIdentity ADD revision :one', ExpressionAttributeValues: marshall({ ':one': 1 }) }));
  w.clock.set(w.start + 2_000);
  expect(await w.handleNext()).toEqual({ batchItemFailures: [] });
  // a reads this mark in the answer to its next session renewal, and stops
  expect(await w.markOf()).toBe(TOKEN);
  const row = (await w.co.leases.read(lease)).item!;
  expect(row.holderIdentity === undefined || row.fencingToken > TOKEN).toBe(true); // vacant, or a term after it
});

it('repaired in place while the session row refuses the mark for now: the next election held, the mark deferred without the holder\'s name (unreadable) and written when the timer queue brings it back', async () => {
  const lease = 'broken-holder-deferred';
  const w = await brokenHeld(lease, 'broken-holder-s4');
  const ids = w.co.identities;
  const mark = ids.markTermEnded.bind(ids);
  ids.markTermEnded = async (session, l) => {
    throw new EndedTermsFullError(session, l);
  };
  await t.client.send(new UpdateItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }), UpdateExpression: 'REMOVE holderIdentity ADD revision :one', ExpressionAttributeValues: marshall({ ':one': 1 }) }));
  w.clock.set(w.start + 2_000);
  const seenAt = w.clock.now();
  expect(await w.handleNext()).toEqual({ batchItemFailures: [] });
  ids.markTermEnded = mark;
  expect(await w.markOf()).toBeUndefined();
  const held = (await w.co.leases.read(lease)).item!;
  expect(held.holderIdentity).toBeUndefined();
  expect(held.successor).toBeUndefined(); // b does not take the vacant row itself
  expect(held.election).toMatchObject({ notBefore: seenAt + unmarkedHoldMs(DURATION_S) });
  const deferred = w.scheduled.filter((x) => 'markEnded' in x.message);
  expect(deferred).toHaveLength(1);
  expect(deferred[0]!.message).toMatchObject({ markEnded: { session: 'broken-holder-s4', fencingToken: TOKEN, deleted: false } });
  expect((deferred[0]!.message as { markEnded: object }).markEnded).not.toHaveProperty('holderIdentity');
  w.clock.set(deferred[0]!.at);
  const body = timerQueueBody(deferred[0]!.message);
  const sqs = { messageId: 'm-1', receiptHandle: 'm-1', body, attributes: { ApproximateReceiveCount: '1' }, messageAttributes: {}, md5OfBody: '', eventSource: 'aws:sqs', eventSourceARN: 'arn:aws:sqs:local:000000000000:timer', awsRegion: 'local' } as unknown as SQSRecord;
  expect(await electionTimer(w.d)({ Records: [sqs] } as SQSEvent, lambdaContext('electionTimer'))).toEqual({ batchItemFailures: [] });
  expect(await w.markOf()).toBe(TOKEN);
  // the hold cut to a lease duration from the mark
  expect((await w.co.leases.read(lease)).item!.election).toMatchObject({ notBefore: w.clock.now() + DURATION_S * 1000 });
});

it('repaired in place by putting the holder back: the same term goes on, nothing marked', async () => {
  const lease = 'broken-holder-restored';
  const w = await brokenHeld(lease, 'broken-holder-s2');
  await t.client.send(new UpdateItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }), UpdateExpression: 'SET holderIdentity = :a ADD revision :one', ExpressionAttributeValues: marshall({ ':a': 'a', ':one': 1 }) }));
  w.clock.set(w.start + 2_000);
  expect(await w.handleNext()).toEqual({ batchItemFailures: [] });
  expect(await w.markOf()).toBeUndefined();
  expect((await w.co.leases.read(lease)).item).toMatchObject({ holderIdentity: 'a', fencingToken: TOKEN });
});

it('its start-up (holderInstance) broken, then put back in place: the same term goes on, nothing marked (an unreadable field is no evidence of another start-up; before: marked ended, the live leader stopped)', async () => {
  const lease = 'broken-instance-restored';
  const w = await brokenHeld(lease, 'broken-instance-s9', 'holderInstance');
  await t.client.send(new UpdateItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }), UpdateExpression: 'SET holderInstance = :a ADD revision :one', ExpressionAttributeValues: marshall({ ':a': 'a-1', ':one': 1 }) }));
  w.clock.set(w.start + 2_000);
  expect(await w.handleNext()).toEqual({ batchItemFailures: [] });
  expect(await w.markOf()).toBeUndefined();
  expect((await w.co.leases.read(lease)).item).toMatchObject({ holderIdentity: 'a', fencingToken: TOKEN });
});

it('deleted: the term is marked ended on its session and the next election held a lease duration, as for a valid held row\'s delete (before: nothing marked, nothing held: the tick created the row and elected)', async () => {
  const lease = 'broken-holder-deleted';
  const w = await brokenHeld(lease, 'broken-holder-s3');
  await t.client.send(new DeleteItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }) }));
  w.clock.set(w.start + 2_000);
  const seenAt = w.clock.now();
  expect(await w.handleNext()).toEqual({ batchItemFailures: [] });
  expect(await w.markOf()).toBe(TOKEN);
  const row = (await w.co.leases.read(lease)).item!;
  expect(row.holderIdentity).toBeUndefined();
  expect(row.successor).toBeUndefined();
  expect(row.election).toMatchObject({ notBefore: seenAt + DURATION_S * 1000 });
});
