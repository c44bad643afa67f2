/**
 * EventBridge refusing for good (a review, 2026-12-07: the role without events:PutEvents, the bus
 * deleted, its KMS key disabled). Every stream record counted as handled, its events deferred to
 * the timer queue; every republish failed, went back on the queue and returned normally, until
 * REPUBLISH_FOR_MS (24 h) ran out: for a day no record failed, no invocation erred, nothing reached
 * a dead-letter queue, and no metric moved, only log warnings. Deferral stays (the designed outage
 * path); each deferral now publishes how long its events have gone unpublished
 * (EVENTS_UNPUBLISHED), whose Maximum the construct alarms on at EVENTS_UNPUBLISHED_ALARM_MS
 * (test/infra/conclave.test.ts): a refusal that lasts crosses it within minutes, a brief outage
 * that heals never does. Real stream records of DynamoDB Local, a local bus refusing every call
 * with AccessDeniedException through the real EventBridgeClient, the republishes fed to the
 * election timer's handler at their due times on a manual clock.
 */
import type { DynamoDBRecord, DynamoDBStreamEvent, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as electionTimer } from '../../functions/election-timer.js';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { publishOrThrow } from '../../lib/events/publisher.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { EVENTS_UNPUBLISHED, EVENTS_UNPUBLISHED_ALARM_MS, RECORDS_FAILED } from '../../lib/functions/metrics.js';
import { observability } from '../../lib/functions/observability.js';
import { timerQueueBody, type TimerQueueMessage } from '../../lib/functions/timer.js';
import { localEventBridgeClient, startLocalEventBus } from '../../lib/local/event-bus.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { instantClock } from '../events/publishing-deps.js';
import { metricDocs, streamRecords, testTables, type TestTables } from '../support.js';

const BUS = 'conclave-test';
let t: TestTables;
beforeAll(async () => void (t = await testTables('lasting-refusal')));
afterAll(() => t.drop());

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

const values = (docs: Record<string, unknown>[], name: string): number[] => docs.filter((d) => name in d).flatMap((d) => [d[name] as number | number[]].flat());

const sqsRecord = (id: string, body: string): SQSRecord =>
  ({ messageId: id, receiptHandle: id, body, attributes: { ApproximateReceiveCount: '1' } as SQSRecord['attributes'], messageAttributes: {}, md5OfBody: '', eventSource: 'aws:sqs', eventSourceARN: 'arn:aws:sqs:local:000000000000:timer', awsRegion: 'local' }) as SQSRecord;

/**
 * A lease stream and an election timer of deployment `orders-leases` on one manual clock, publishing
 * to a local bus that refuses every call while `refusing` the time since the world began; the timer
 * queue's messages kept with their due times.
 */
async function world(refusing: (elapsedMs: number) => boolean) {
  const start = Date.now();
  const clock = manualClock(start);
  const delivered: string[] = [];
  const b = await startLocalEventBus({
    onEvent: (e) => void delivered.push((e.detail as { id: string }).id),
    rejectCall: () => (refusing(clock.now() - start) ? { type: 'AccessDeniedException', message: 'User is not authorized to perform: events:PutEvents' } : undefined),
  });
  const client = localEventBridgeClient(b.endpoint, { maxAttempts: 1 });
  stops.push(async () => {
    client.destroy();
    await b.stop();
  });
  const queue: { message: TimerQueueMessage; due: number }[] = [];
  const shared = {
    coordinator: coordinatorDeps(t.client, t.names, { clock, config: { ackWindowMs: 5_000 } }),
    timer: { schedule: async (message: TimerQueueMessage, delayMs: number) => void queue.push({ message, due: clock.now() + delayMs }) },
    publish: (events: Parameters<FunctionDeps['publish']>[0]) => publishOrThrow(client, BUS, events, { clock: instantClock }),
    deadLetter: async () => undefined,
  };
  const stream = leaseStream({ ...shared, ...observability('leaseStream', 'SILENT', 'orders-leases') });
  const timer = electionTimer({ ...shared, ...observability('electionTimer', 'SILENT', 'orders-leases') });
  let n = 0;
  /** The next republish on the queue, delivered at its due time: the metric values it published (with how long after `start`) and its answer. */
  const next = async () => {
    queue.sort((x, y) => x.due - y.due);
    const due = queue.shift()!;
    expect('republish' in due.message).toBe(true);
    clock.set(Math.max(clock.now(), due.due));
    const { docs, out } = await metricDocs(() => timer({ Records: [sqsRecord(`m-${n++}`, timerQueueBody(due.message))] } as SQSEvent, lambdaContext('electionTimer', clock)));
    return { at: clock.now() - start, unpublished: values(docs, EVENTS_UNPUBLISHED), failed: values(docs, RECORDS_FAILED), out, docs };
  };
  return { clock, start, queue, stream, next, delivered };
}

/** A lease taken (an INSERT, by the coordinator: a Leader Elected to publish); its stream record. */
async function taken(lease: string): Promise<DynamoDBRecord> {
  const c = coordinatorDeps(t.client, t.names);
  const now = Date.now();
  await c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' } });
  return (await streamRecords(t.client, t.names.leases)).filter((r) => r.dynamodb!.Keys!['name']!.S === lease).at(-1)!;
}

describe('EventBridge refusing every PutEvents', () => {
  it('a refusal that lasts: each deferral is measured, and the age crosses the alarm threshold at the republish 1,023 s in, not a day later', async () => {
    const w = await world(() => true);
    const record = await taken('refused-for-good');
    const first = await metricDocs(() => w.stream({ Records: [record] } as DynamoDBStreamEvent, lambdaContext('leaseStream', w.clock)));
    // the designed outage path: the record handled, its events deferred
    expect(first.out).toEqual({ batchItemFailures: [] });
    expect(w.queue).toHaveLength(1);
    // before the fix: no metric at all, from the stream or from any republish
    expect(values(first.docs, EVENTS_UNPUBLISHED)).toEqual([0]);
    expect(first.docs.find((d) => EVENTS_UNPUBLISHED in d)).toMatchObject({ service: 'conclave', function: 'leaseStream', deployment: 'orders-leases' });

    const seen: { at: number; unpublished: number[] }[] = [];
    while (w.clock.now() - w.start < 20 * 60_000) {
      const r = await w.next();
      // every republish fails, goes back on the queue and returns normally: no record failed, no error
      expect(r.out).toEqual({ batchItemFailures: [] });
      expect(r.failed).toEqual([]);
      expect(w.queue).toHaveLength(1);
      seen.push({ at: r.at, unpublished: r.unpublished });
      if (r.unpublished.length) expect(r.docs.find((d) => EVENTS_UNPUBLISHED in d)).toMatchObject({ function: 'electionTimer', deployment: 'orders-leases' });
    }
    // each failed republish publishes the age of its events
    expect(seen.every((s) => s.unpublished.length === 1)).toBe(true);
    expect(seen.map((s) => s.unpublished[0])).toEqual(seen.map((s) => s.at));
    const crossed = seen.find((s) => s.unpublished[0]! >= EVENTS_UNPUBLISHED_ALARM_MS)!;
    expect(crossed.at).toBe(1_023_000);
    // the ones before: below it, so the minutes a brief outage lasts never reach it
    expect(seen.filter((s) => s.at < crossed.at).every((s) => s.unpublished[0]! < EVENTS_UNPUBLISHED_ALARM_MS)).toBe(true);
  });

  it('an outage that heals within 17 minutes: measured while it lasts, never at the alarm threshold, and the events published', async () => {
    // healed 16 minutes in: the republish due 1,023 s in publishes them
    const w = await world((elapsedMs) => elapsedMs < 16 * 60_000);
    const record = await taken('refused-briefly');
    expect((await metricDocs(() => w.stream({ Records: [record] } as DynamoDBStreamEvent, lambdaContext('leaseStream', w.clock)))).out).toEqual({ batchItemFailures: [] });
    const ages: number[] = [];
    while (w.queue.length > 0) {
      const r = await w.next();
      expect(r.out).toEqual({ batchItemFailures: [] });
      ages.push(...r.unpublished);
    }
    expect(ages.length).toBeGreaterThan(5);
    expect(Math.max(...ages)).toBeLessThan(EVENTS_UNPUBLISHED_ALARM_MS);
    expect(w.delivered).toEqual([`${record.eventID}:leader-elected`]);
  });
});
