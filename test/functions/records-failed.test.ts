/**
 * A batch that fails in part is no failed invocation to Lambda: it answers its batchItemFailures,
 * and Lambda writes no Errors datapoint. A lease stream record failing, in order, beside records
 * that pass (up to 12 hours: STUCK_RECORD_MS) raised no alarm on failures (a review, 2026-12-07:
 * docs/deploy.md said LeaseStreamErrors fired). The batch functions count the records they report
 * failed (`conclave_records_failed`, with the function and its deployment), which the construct's
 * errors alarm of each adds to the function's errors (test/infra/conclave.test.ts).
 */
import type { Context, DynamoDBRecord, DynamoDBStreamEvent, SQSEvent, SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { BATCH_DEADLINE_MARGIN_MS, queueBatchHandler, streamBatchHandler } from '../../lib/functions/lambda.js';
import { RECORDS_FAILED } from '../../lib/functions/metrics.js';
import { observability } from '../../lib/functions/observability.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { metricDocs } from '../support.js';

/** The metrics `run` wrote, and what it returned or threw. */
const published = <T>(run: () => Promise<T>) => metricDocs(() => run().catch((e: unknown) => e as Error));
const failedCounts = (docs: Record<string, unknown>[]) => docs.filter((d) => RECORDS_FAILED in d).map((d) => d[RECORDS_FAILED]);

const message = (id: string): SQSRecord => ({ messageId: id, receiptHandle: id, body: '{}', attributes: { ApproximateReceiveCount: '1' } as SQSRecord['attributes'], messageAttributes: {}, md5OfBody: '', eventSource: 'aws:sqs', eventSourceARN: 'arn:aws:sqs:local:000000000000:timer', awsRegion: 'local' }) as SQSRecord;

/** A lease stream record of lease `lease` (keys only: what the batch handler reads before the run). */
const record = (id: string, lease: string, seq: number): DynamoDBRecord => ({
  eventID: id,
  eventName: 'MODIFY',
  eventSource: 'aws:dynamodb',
  dynamodb: { Keys: { name: { S: lease } }, SequenceNumber: String(seq), StreamViewType: 'NEW_AND_OLD_IMAGES' },
});

describe('a batch function counts the records it reports failed', () => {
  it('the lease stream: a record failing beside records that pass is counted (with its function and deployment); a batch that passes counts none', async () => {
    const deps = { ...observability('leaseStream', 'SILENT', 'orders-leases'), coordinator: { clock: { now: () => Date.now() } } } as unknown as FunctionDeps;
    const failing = new Set(['r-2']);
    const handler = streamBatchHandler(deps, 'leaseStream', (r) => r, () => ({
      record: async (r: DynamoDBRecord) => {
        if (failing.has(r.eventID!)) throw new Error('identities table throttled');
      },
    }));
    const batch = { Records: [record('r-1', 'a', 1), record('r-2', 'b', 2), record('r-3', 'c', 3)] } as DynamoDBStreamEvent;

    const partly = await published(() => handler(batch, lambdaContext('leaseStream')));
    expect(partly.out).toEqual({ batchItemFailures: [{ itemIdentifier: '2' }] });
    expect(failedCounts(partly.docs)).toEqual([1]);
    const doc = partly.docs.find((d) => RECORDS_FAILED in d)!;
    expect(doc).toMatchObject({ service: 'conclave', function: 'leaseStream', deployment: 'orders-leases' });
    const declared = (doc['_aws'] as { CloudWatchMetrics: { Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[] }).CloudWatchMetrics;
    expect(declared.flatMap((m) => m.Metrics)).toContainEqual({ Name: RECORDS_FAILED, Unit: 'Count' });
    expect(declared.flatMap((m) => m.Dimensions)).toEqual([expect.arrayContaining(['service', 'function', 'deployment'])]);

    failing.clear();
    const passed = await published(() => handler(batch, lambdaContext('leaseStream')));
    expect(passed.out).toEqual({ batchItemFailures: [] });
    expect(failedCounts(passed.docs)).toEqual([]);
  });

  it("a later record of the failed one's row, held behind it, is reported and counted too", async () => {
    const deps = { ...observability('leaseStream', 'SILENT', 'orders-leases'), coordinator: { clock: { now: () => Date.now() } } } as unknown as FunctionDeps;
    const handler = streamBatchHandler(deps, 'leaseStream', (r) => r, () => ({
      record: async (r: DynamoDBRecord & { held?: true }) => {
        if (r.eventID === 'r-1' && !r.held) throw new Error('identities table throttled');
      },
    }));
    const batch = { Records: [record('r-1', 'a', 1), record('r-2', 'b', 2), record('r-3', 'a', 3)] } as DynamoDBStreamEvent;
    const { out, docs } = await published(() => handler(batch, lambdaContext('leaseStream')));
    expect(out).toEqual({ batchItemFailures: [{ itemIdentifier: '1' }, { itemIdentifier: '3' }] });
    expect(failedCounts(docs)).toEqual([2]);
  });

  it('the election timer: a message failing beside others is counted; every message failing is an invocation error (Lambda counts it), not counted here', async () => {
    const deps = { ...observability('electionTimer', 'SILENT', 'orders-leases') } as FunctionDeps;
    let failing = new Set(['m-1']);
    const handler = queueBatchHandler(deps, () => ({
      record: async (r) => {
        if (failing.has(r.messageId)) throw new Error('leases table throttled');
      },
    }));
    const batch = { Records: [message('m-0'), message('m-1'), message('m-2')] } as SQSEvent;

    const partly = await published(() => handler(batch, lambdaContext('electionTimer')));
    expect(partly.out).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-1' }] });
    expect(failedCounts(partly.docs)).toEqual([1]);
    expect(partly.docs.find((d) => RECORDS_FAILED in d)).toMatchObject({ function: 'electionTimer', deployment: 'orders-leases' });

    failing = new Set(['m-0', 'm-1', 'm-2']);
    const whole = await published(() => handler(batch, lambdaContext('electionTimer')));
    expect(whole.out).toBeInstanceOf(Error);
    expect(failedCounts(whole.docs)).toEqual([]);
  });

  it('a batch cut short at its deadline counts the records that failed, not those it did not start (reported for retry, deferred: a slow DynamoDB raised the Errors alarm on them)', async () => {
    const deps = { ...observability('leaseStream', 'SILENT', 'orders-leases'), coordinator: { clock: { now: () => Date.now() } } } as unknown as FunctionDeps;
    // each record takes the invocation's time down to the margin (the invocation's clock, no wall clock)
    let leftMs = BATCH_DEADLINE_MARGIN_MS + 2_000;
    let failing = new Set<string>();
    const handler = streamBatchHandler(deps, 'leaseStream', (r) => r, () => ({
      record: async (r: DynamoDBRecord) => {
        leftMs -= 1_500;
        if (failing.has(r.eventID!)) throw new Error('identities table throttled');
      },
    }));
    const context = { ...lambdaContext('leaseStream'), getRemainingTimeInMillis: () => leftMs } as Context;
    const batch = { Records: [record('r-1', 'a', 1), record('r-2', 'b', 2), record('r-3', 'c', 3), record('r-4', 'd', 4)] } as DynamoDBStreamEvent;

    // r-1 and r-2 handled, r-3 and r-4 not started: reported for retry, none failed
    const deferred = await published(() => handler(batch, context));
    expect(deferred.out).toEqual({ batchItemFailures: [{ itemIdentifier: '3' }, { itemIdentifier: '4' }] });
    expect(failedCounts(deferred.docs)).toEqual([]);

    // r-2 failing beside them: it alone is counted
    leftMs = BATCH_DEADLINE_MARGIN_MS + 2_000;
    failing = new Set(['r-2']);
    const partly = await published(() => handler(batch, context));
    expect(partly.out).toEqual({ batchItemFailures: [{ itemIdentifier: '2' }, { itemIdentifier: '3' }, { itemIdentifier: '4' }] });
    expect(failedCounts(partly.docs)).toEqual([1]);
  });
});
