/**
 * A valid lease record handled after its row was overwritten broken (a review, 2026-12-07): a
 * release of a term held on a session, the row then written with a fencingToken the schema refuses.
 * The record marked the term ended and published Lease Released, then the hold that follows the
 * mark (holdOpenElection) read the row, the read threw the ValidationError, and the stream handler
 * dead-lettered the valid record as poison (holdUnmarked, on a mark that failed on a fault, read the
 * same way; so did the election timer's deferred mark, a message failed until its dead-letter queue).
 * docs/architecture.md (Faults) and docs/safety.md ("Broken leases"): a row the schema refuses is
 * logged and left alone on the stream paths. Real stream records of DynamoDB Local; a manual clock.
 */
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { makeHandler as electionTimer } from '../../functions/election-timer.js';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import type { ConclaveEvent } from '../../lib/events/schemas.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import type { PoisonRecord } from '../../lib/functions/dead-letter.js';
import { observability } from '../../lib/functions/env.js';
import { timerQueueBody, type TimerQueueMessage } from '../../lib/functions/timer.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { sessionKey } from '../../lib/schemas/identity.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('broken-behind')));
afterAll(() => t.drop());

const DURATION_S = 15;

/** Lease `lease` held by a on session `session` (token 1), released by someone else; its release record, then the row overwritten broken. */
async function world(lease: string, session: string) {
  const start = Date.now();
  const clock = manualClock(start);
  const letters: PoisonRecord[] = [];
  const published: ConclaveEvent[] = [];
  const scheduled: TimerQueueMessage[] = [];
  const d: FunctionDeps = {
    coordinator: coordinatorDeps(t.client, t.names, { clock, config: { ackWindowMs: 5_000 } }),
    timer: { schedule: async (m) => void scheduled.push(m) },
    publish: async (events) => void published.push(...events),
    deadLetter: async (p) => void letters.push(p),
    ...observability('test', 'SILENT'),
  };
  const co = d.coordinator;
  const key = sessionKey(session);
  await co.identities.write(await co.identities.read(key.component, key.name), { set: { holderIdentity: session, hostname: 'h', leaseDurationSeconds: DURATION_S, acquireTime: start, renewTime: start } });
  await co.leases.write(await co.leases.read(lease), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: DURATION_S, acquireTime: start, renewTime: start, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator', session } });
  expect(await co.leases.releaseTerm(lease, { holderIdentity: 'a', fencingToken: 1 }, start + 100)).toBeDefined();
  const record = (await streamRecords(t.client, t.names.leases)).filter((x) => x.dynamodb!.Keys!['name']!.S === lease && x.eventName === 'MODIFY').at(-1)!;
  // an operator's hand, after the release: the row now refused by the schema
  await t.client.send(new UpdateItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }), UpdateExpression: 'SET fencingToken = :bad', ExpressionAttributeValues: marshall({ ':bad': 'oops' }) }));
  await expect(co.leases.read(lease)).rejects.toThrow(/fencingToken/);
  clock.set(start + 1_000);
  return { d, co, clock, letters, published, scheduled, record, markOf: async () => (await co.identities.read(key.component, key.name)).item!.endedTerms?.[lease] };
}

const sqsRecord = (id: string, body: string): SQSRecord =>
  ({ messageId: id, receiptHandle: id, body, attributes: { ApproximateReceiveCount: '1' } as SQSRecord['attributes'], messageAttributes: {}, md5OfBody: '', eventSource: 'aws:sqs', eventSourceARN: 'arn:aws:sqs:local:000000000000:timer', awsRegion: 'local' }) as SQSRecord;

describe('a valid lease record whose row was overwritten broken since', () => {
  it('a release of a session-held term: marked and published, the broken row left alone, the record not dead-lettered', async () => {
    const w = await world('behind-release', 'behind-session');
    const answer = await leaseStream(w.d)({ Records: [w.record] } as DynamoDBStreamEvent, lambdaContext('leaseStream'));
    expect(answer).toEqual({ batchItemFailures: [] });
    expect(await w.markOf()).toBe(1);
    expect(w.published.map((e) => e.detailType)).toContain('Lease Released');
    // before the fix: the record sent to the dead-letter queue as poison (a valid record, its row broken after it)
    expect(w.letters).toEqual([]);
  });

  it('the mark failing on a fault: the hold leaves the broken row alone and the record is retried for the fault, not dead-lettered; the retry marks', async () => {
    const w = await world('behind-fault', 'behind-fault-session');
    const mark = vi.spyOn(w.co.identities, 'markTermEnded').mockRejectedValueOnce(Object.assign(new Error('Rate of requests exceeds the allowed throughput'), { name: 'ThrottlingException' }));
    const handler = leaseStream(w.d);
    const first = await handler({ Records: [w.record] } as DynamoDBStreamEvent, lambdaContext('leaseStream')).catch((e: unknown) => e);
    // before the fix: holdUnmarked's read threw the ValidationError, and the record was dead-lettered (its term never marked)
    expect(w.letters).toEqual([]);
    // (its one record failed: the whole batch, for the event source to deliver again)
    expect(first).toBeInstanceOf(Error);
    expect(await w.markOf()).toBeUndefined();
    mark.mockRestore();
    expect(await handler({ Records: [w.record] } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });
    expect(await w.markOf()).toBe(1);
    expect(w.letters).toEqual([]);
  });

  it("the election timer's deferred mark: marked, the broken row left alone, the message handled (not failed until its dead-letter queue)", async () => {
    const w = await world('behind-deferred', 'behind-deferred-session');
    const message: TimerQueueMessage = { lease: 'behind-deferred', markEnded: { holderIdentity: 'a', session: 'behind-deferred-session', fencingToken: 1, leaseDurationSeconds: DURATION_S, deleted: false }, since: w.clock.now() - 500, attempt: 1 };
    const answer = await electionTimer(w.d)({ Records: [sqsRecord('m-1', timerQueueBody(message))] } as SQSEvent, lambdaContext('electionTimer'));
    // before the fix: the whole batch failed (its one message), to come back until the queue's redrive
    expect(answer).toEqual({ batchItemFailures: [] });
    expect(await w.markOf()).toBe(1);
  });
});
