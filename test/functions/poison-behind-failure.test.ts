/**
 * A poison record behind a failing one in a stream batch (a review, 2026-12-08, from the simulator:
 * seed 13000005). An operator wrote a malformed lease row during a 250 s DynamoDB outage; the lease
 * stream's batch had a record failing on the outage before it, Lambda delivered the batch again from
 * that failure (the lowest sequence number reported) at each retry, and each delivery dead-lettered
 * the malformed row's record again: 334 times. Now a record to dead-letter behind a failed record of
 * its batch is reported for retry (not counted failed), and dead-lettered once, by the delivery
 * from the failure that reaches it with nothing failed before it. A queue's messages are independent:
 * each still runs, whatever failed before it. Real stream records of DynamoDB Local.
 */
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBRecord, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import type { PoisonRecord } from '../../lib/functions/dead-letter.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/observability.js';
import { queueBatchHandler } from '../../lib/functions/lambda.js';
import { RECORDS_FAILED } from '../../lib/functions/metrics.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { publishingDeps } from '../events/publishing-deps.js';
import { metricDocs, streamRecords, testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('poison-behind')));
afterAll(() => t.drop());

const throttled = () => Object.assign(new Error('Rate of requests exceeds the allowed throughput'), { name: 'ThrottlingException' });
const failedIds = (r: DynamoDBBatchResponse) => r.batchItemFailures.map((f) => f.itemIdentifier);
const seq = (r: DynamoDBRecord) => r.dynamodb!.SequenceNumber!;
const failedCounts = (docs: Record<string, unknown>[]) => docs.filter((d) => RECORDS_FAILED in d).map((d) => d[RECORDS_FAILED]);

describe('a stream batch after a failure', () => {
  it('lease stream: a malformed row behind a record failing on a fault is not dead-lettered while the fault lasts; once it passes, dead-lettered once', async () => {
    const { d } = publishingDeps(t, Date.now());
    const letters: PoisonRecord[] = [];
    const deps: FunctionDeps = { ...d, deadLetter: async (p) => void letters.push(p) };
    const c = deps.coordinator;
    const now = c.clock.now();
    const hold = async (lease: string) =>
      c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' } });
    await hold('failing');
    const before = (await streamRecords(t.client, t.names.leases)).length;
    await hold('fine'); // another lease's take, before the failure: handled
    await c.leases.write(await c.leases.read('failing'), { set: { renewTime: now, lastHolderIdentity: 'a' }, remove: ['holderIdentity', 'holderInstance'] }); // released: its reconcile fails
    // an operator's hand: a lease row the schema refuses (a fencing token that is no number)
    await t.client.send(new PutItemCommand({ TableName: t.names.leases, Item: marshall({ name: 'broken', holderIdentity: 'x', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 'oops' }) }));
    const recs = (await streamRecords(t.client, t.names.leases)).slice(before);
    expect(recs.map((r) => r.dynamodb!.Keys!['name']!.S)).toEqual(['fine', 'failing', 'broken']);
    const list = c.candidates.list.bind(c.candidates);
    let failing = true;
    c.candidates.list = async (lease, ...rest) => {
      if (lease === 'failing' && failing) throw throttled(); // DynamoDB refusing, for this lease's reads
      return list(lease, ...rest);
    };
    const handler = leaseStream(deps);
    const { out, docs } = await metricDocs(() => handler({ Records: recs }, lambdaContext('leaseStream')));
    // the failed record, and the malformed one behind it: reported for retry, only the first counted failed
    expect(failedIds(out)).toEqual([seq(recs[1]!), seq(recs[2]!)]);
    expect(failedCounts(docs)).toEqual([1]);
    // Lambda delivers from the earliest failure, again and again while the fault lasts (every record
    // of such a batch fails: the whole batch, for the event source to deliver again)
    const fromFailure = recs.slice(1);
    for (let delivery = 0; delivery < 3; delivery++) await expect(handler({ Records: fromFailure }, lambdaContext('leaseStream'))).rejects.toThrow();
    // before the fix: 4, one per delivery (each reported it processed; Lambda delivered it again with the failure before it)
    expect(letters).toEqual([]);
    failing = false;
    expect(failedIds(await handler({ Records: fromFailure }, lambdaContext('leaseStream')))).toEqual([]);
    expect(letters.map((l) => [l.kind, l.eventID])).toEqual([['poisonRecord', recs[2]!.eventID]]);
  });

  it('a malformed row with no failure before it in its batch is dead-lettered at once', async () => {
    const { d } = publishingDeps(t, Date.now());
    const letters: PoisonRecord[] = [];
    const deps: FunctionDeps = { ...d, deadLetter: async (p) => void letters.push(p) };
    const now = deps.coordinator.clock.now();
    const before = (await streamRecords(t.client, t.names.leases)).length;
    await t.client.send(new PutItemCommand({ TableName: t.names.leases, Item: marshall({ name: 'broken-alone', holderIdentity: 'x', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 'oops' }) }));
    const recs = (await streamRecords(t.client, t.names.leases)).slice(before);
    expect(await leaseStream(deps)({ Records: recs }, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });
    expect(letters.map((l) => l.eventID)).toEqual([recs[0]!.eventID]);
  });

  it("a queue's batch: every message runs, whatever failed before it; only the failing ones are reported", async () => {
    const deps = { ...observability('electionTimer', 'SILENT'), coordinator: { clock: { now: () => Date.now() } } } as unknown as FunctionDeps;
    const message = (id: string): SQSRecord =>
      ({ messageId: id, receiptHandle: id, body: '{}', attributes: { ApproximateReceiveCount: '1' } as SQSRecord['attributes'], messageAttributes: {}, md5OfBody: '', eventSource: 'aws:sqs', eventSourceARN: 'arn:aws:sqs:local:000000000000:timer', awsRegion: 'local' }) as SQSRecord;
    const ran: string[] = [];
    const handler = queueBatchHandler(deps, () => ({
      record: async (m) => {
        ran.push(m.messageId);
        if (m.messageId === 'm1' || m.messageId === 'm3') throw throttled();
      },
    }));
    const { out, docs } = await metricDocs(() => handler({ Records: ['m1', 'm2', 'm3', 'm4'].map(message) } as SQSEvent, lambdaContext('electionTimer')));
    expect(ran).toEqual(['m1', 'm2', 'm3', 'm4']);
    expect(out).toEqual({ batchItemFailures: [{ itemIdentifier: 'm1' }, { itemIdentifier: 'm3' }] });
    expect(failedCounts(docs)).toEqual([2]);
  });
});
