/**
 * An EventBridge outage in a batch (a review, 2026-12-07): a bus that accepted connections and
 * never answered held each lease-stream record 18.6 s (3 publish attempts, each the client's 3
 * tries of 2 s), about 3 records a minute, every session mark, wake and reconcile behind them
 * waiting, and a record started with 10-19 s left ran past the Lambda timeout (the batch ran again).
 * Now one publish is bounded (PUBLISH_WITHIN_MS, on the publisher's clock), and once a publish of
 * an invocation meets an outage (no answer, throttling: PublishError.outage) the invocation's later
 * events go to the timer queue without a call, with the ids they were derived with. Records from
 * DynamoDB Local's real streams; events through the real EventBridgeClient.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DynamoDBRecord, SQSRecord } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as candidateStream } from '../../functions/candidate-stream.js';
import { makeHandler as electionTimer } from '../../functions/election-timer.js';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { manualClock, simulatedClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { eventsFromCandidateChange } from '../../lib/events/derive.js';
import { PUBLISH_WITHIN_MS, publishOrThrow, type PublishOptions } from '../../lib/events/publisher.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { BATCH_DEADLINE_MARGIN_MS } from '../../lib/functions/lambda.js';
import { FUNCTION_REQUEST_TIMEOUT_MS } from '../../lib/functions/requests.js';
import type { TimerQueueMessage } from '../../lib/functions/timer.js';
import { localEventBridgeClient, startLocalEventBus, type LocalBusEntry, type LocalEventBus } from '../../lib/local/event-bus.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { NOW, cand } from '../fixtures.js';
import { instantClock } from '../events/publishing-deps.js';
import { waitFor } from '../sdk/harness.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

const BUS = 'conclave-test';
let t: TestTables;
beforeAll(async () => void (t = await testTables('event-outage')));
afterAll(() => t.drop());

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

/** The functions' deps with `publish`, on a manual clock, the timer queue's messages kept. */
function deps(publish: FunctionDeps['publish']) {
  const clock = manualClock(Date.now());
  const scheduled: TimerQueueMessage[] = [];
  const d: FunctionDeps = {
    coordinator: coordinatorDeps(t.client, t.names, { clock, config: { ackWindowMs: 5_000 } }),
    timer: { schedule: async (m) => void scheduled.push(m) },
    publish,
    deadLetter: async () => undefined,
    ...observability('test', 'SILENT'),
  };
  // the ids of the events deferred to the timer queue, and the attempts their messages carry
  const deferred = () => scheduled.flatMap((m) => ('republish' in m ? m.republish.map((e) => e.detail.id) : []));
  const attempts = () => scheduled.flatMap((m) => ('republish' in m ? [m.attempt] : []));
  return { d, clock, deferred, attempts };
}

const publishing = (client: ReturnType<typeof localEventBridgeClient>, opts: PublishOptions) => (list: Parameters<FunctionDeps['publish']>[0]) => publishOrThrow(client, BUS, list, opts);

/** A local bus counting its calls, `rejectCall` and `failNext` as given; a client without the SDK's retries. */
async function bus(opts: { throttle?: boolean; failNext?: (e: LocalBusEntry) => boolean } = {}) {
  let calls = 0;
  const delivered: string[] = [];
  const b: LocalEventBus = await startLocalEventBus({
    onEvent: (e) => void delivered.push((e.detail as { id: string }).id),
    rejectCall: () => (calls++, opts.throttle ? { type: 'ThrottlingException', message: 'Rate exceeded' } : undefined),
    ...(opts.failNext ? { failNext: opts.failNext } : {}),
  });
  const client = localEventBridgeClient(b.endpoint, { maxAttempts: 1 });
  stops.push(async () => {
    client.destroy();
    await b.stop();
  });
  return { client, calls: () => calls, delivered };
}

/** `n` leases taken (an INSERT each, by the coordinator: nothing to reconcile), their records in order. */
async function taken(prefix: string, n: number): Promise<DynamoDBRecord[]> {
  const c = coordinatorDeps(t.client, t.names);
  const now = Date.now();
  for (let i = 0; i < n; i++) {
    const lease = `${prefix}-${i}`;
    await c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' } });
  }
  return (await streamRecords(t.client, t.names.leases)).filter((r) => r.dynamodb!.Keys!['name']!.S!.startsWith(`${prefix}-`));
}

describe('an EventBridge outage in a stream batch', () => {
  it('a bus that never answers: one bounded publish an invocation, the later records deferred without a call; the batch answers, all handled', async () => {
    const requests: IncomingMessage[] = [];
    const hole = createServer((req) => void requests.push(req)); // accepts, reads, never answers
    await new Promise<void>((r) => hole.listen(0, '127.0.0.1', r));
    const client = localEventBridgeClient(`http://127.0.0.1:${(hole.address() as AddressInfo).port}`); // the SDK's own retries, as the functions'
    stops.push(async () => {
      client.destroy();
      hole.closeAllConnections();
      await new Promise<void>((r) => hole.close(() => r()));
    });
    const bound = simulatedClock({ start: NOW });
    const { d, clock, deferred } = deps(publishing(client, { clock: bound }));
    const recs = await taken('never', 4);
    expect(recs).toHaveLength(4);
    const answer = leaseStream(d)({ Records: recs }, lambdaContext('leaseStream', clock));
    await waitFor("the first record's events at the bus", () => requests.length === 1);
    // before the fix: no bound (0 timers): the record waited out the client's tries and 3 attempts, and each record after it again
    expect(bound.pending(), "the publish's bound, on the publisher's clock").toBe(1);
    await bound.run(PUBLISH_WITHIN_MS);
    expect(await answer).toEqual({ batchItemFailures: [] });
    expect(requests, 'one call: the later records publish none').toHaveLength(1);
    expect(bound.pending()).toBe(0);
    // every record's events on the timer queue, with their ids
    expect(deferred()).toEqual(recs.map((r) => `${r.eventID}:leader-elected`));
  });

  it('throttled calls: the first record tries its attempts, the later records defer without a call (candidate stream)', async () => {
    const b = await bus({ throttle: true });
    const { d, deferred } = deps(publishing(b.client, { clock: instantClock }));
    const c = d.coordinator;
    const now = c.clock.now();
    for (let i = 0; i < 4; i++) await c.candidates.write(await c.candidates.read(`throttled-${i}`, 'w'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: now, createdAt: now, identity: 'w-1' } });
    const recs = (await streamRecords(t.client, t.names.candidates)).filter((r) => r.dynamodb!.Keys!['leaseName']!.S!.startsWith('throttled-'));
    expect(recs).toHaveLength(4);
    expect(await candidateStream(d)({ Records: recs }, lambdaContext('candidateStream', c.clock))).toEqual({ batchItemFailures: [] });
    // before the fix: 12, three attempts for each record
    expect(b.calls()).toBe(3);
    expect(deferred()).toEqual(recs.map((r) => `${r.eventID}:candidate-joined`));
  });

  it('an entry refused while the calls are answered is no outage: the later records still publish', async () => {
    const recs = await taken('refused', 3);
    const first = `${recs[0]!.eventID}:leader-elected`;
    const b = await bus({ failNext: (e) => (e.detail as { id: string }).id === first });
    const { d, clock, deferred } = deps(publishing(b.client, { clock: instantClock }));
    expect(await leaseStream(d)({ Records: recs }, lambdaContext('leaseStream', clock))).toEqual({ batchItemFailures: [] });
    expect(deferred()).toEqual([first]);
    expect(b.delivered).toEqual(recs.slice(1).map((r) => `${r.eventID}:leader-elected`));
  });

  it('deferred events in an election-timer batch, EventBridge throttling: the first message tries, the others go back without a call', async () => {
    const b = await bus({ throttle: true });
    const { d, clock, deferred, attempts } = deps(publishing(b.client, { clock: instantClock }));
    const ids: string[] = [];
    const messages = Array.from({ length: 3 }, (_, i): SQSRecord => {
      const events = eventsFromCandidateChange({ eventID: `outage-${i}`, at: NOW, newCandidate: cand(`c${i}`, '1.30.0', '1.31.0'), staleAfterMs: 30 * 60_000 });
      ids.push(...events.map((e) => e.detail.id));
      const body = JSON.stringify({ republish: events, since: clock.now(), attempt: 1 });
      return { messageId: `m${i}`, receiptHandle: `m${i}`, body, attributes: { ApproximateReceiveCount: '1' } as SQSRecord['attributes'], messageAttributes: {}, md5OfBody: '', eventSource: 'aws:sqs', eventSourceARN: 'arn:aws:sqs:local:000000000000:timer', awsRegion: 'local' };
    });
    expect(await electionTimer(d)({ Records: messages }, lambdaContext('electionTimer', clock))).toEqual({ batchItemFailures: [] });
    // before the fix: 9, three attempts for each message
    expect(b.calls()).toBe(3);
    expect(deferred()).toEqual(ids);
    expect(attempts()).toEqual([2, 2, 2]);
  });

  it("a record's publishing, bounded, fits in the margin a batch keeps before its deadline beside the deferral's first try", () => {
    expect(PUBLISH_WITHIN_MS + FUNCTION_REQUEST_TIMEOUT_MS).toBeLessThan(BATCH_DEADLINE_MARGIN_MS);
  });
});
