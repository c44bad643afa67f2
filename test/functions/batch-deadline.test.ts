/**
 * A stream or queue batch whose records take longer than the invocation has left
 * (lib/functions/lambda.ts, BATCH_DEADLINE_MARGIN_MS): no record is started with less than the
 * margin left; the ones not started are reported as batchItemFailures (a stream's next delivery
 * starts from the first of them, a queue's messages go back to the queue), so the records handled
 * are not run again, and the invocation answers after its last record: nothing of it goes on after
 * the answer, beside the retry. The run's `end` still runs, with the time left.
 */
import type { Context, DynamoDBRecord, DynamoDBStreamEvent, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { BATCH_DEADLINE_MARGIN_MS, queueBatchHandler } from '../../lib/functions/lambda.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('batch-deadline')));
afterAll(() => t.drop());

const failedIds = (r: unknown) => (r as { batchItemFailures: { itemIdentifier: string }[] }).batchItemFailures.map((f) => f.itemIdentifier);
/** A Lambda context with `ms` left, counting down as the test moves its clock (`spend`): no wall clock, so a busy machine changes nothing. */
function leftMs(name: 'leaseStream' | 'electionTimer', ms: number) {
  let spent = 0;
  const context = { ...lambdaContext(name), getRemainingTimeInMillis: () => ms - spent } as Context;
  return { context, spend: (d: number) => void (spent += d) };
}
/** A few turns of the event loop: what an invocation left running would do meanwhile. */
const turns = async (n = 50) => {
  for (let i = 0; i < n; i++) await new Promise<void>((r) => setImmediate(r));
};

describe('a lease stream batch that outlasts the invocation', () => {
  it('stops starting records at the margin and reports the rest; the records handled are not delivered again; no DynamoDB call after the answer', async () => {
    const now = Date.now();
    const setup = coordinatorDeps(t.client, t.names);
    const N = 20;
    for (let i = 0; i < N; i++) {
      const lease = `dl-${i}`;
      for (const w of ['a', 'b']) await setup.candidates.write(await setup.candidates.read(lease, w), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: now - 600_000, createdAt: now - 3_600_000, identity: `${w}-1` } });
      await setup.leases.write(await setup.leases.read(lease), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' } });
      await setup.leases.write(await setup.leases.read(lease), { set: { renewTime: Date.now(), lastHolderIdentity: 'a' }, remove: ['holderIdentity', 'holderInstance'] });
    }
    // the releases, one per lease, in order
    const releases = (await streamRecords(t.client, t.names.leases)).filter((r) => r.eventName === 'MODIFY');
    expect(releases).toHaveLength(N);
    const leaseOf = (r: DynamoDBRecord) => r.dynamodb!.Keys!['name']!.S!;

    // DynamoDB answering in 200 ms a request (a throttled table's backoff, a far Region), on the
    // invocation's clock: a release's reconcile is several requests, so the batch outlasts the
    // BATCH_DEADLINE_MARGIN_MS + 1.5 s the invocation has
    const slow = localClient(inject('ddbEndpoint'));
    let invocation = leftMs('leaseStream', BATCH_DEADLINE_MARGIN_MS + 1_500);
    let delayMs = 200;
    let calls = 0;
    let phase = 1;
    const leaseReads: { phase: number; lease: string }[] = [];
    slow.middlewareStack.add((next, c) => async (args) => {
      calls++;
      const key = (args as { input: { Key?: { name?: { S?: string } } } }).input.Key?.name?.S;
      if (c.commandName === 'GetItemCommand' && key?.startsWith('dl-')) leaseReads.push({ phase, lease: key });
      invocation.spend(delayMs);
      return next(args);
    }, { step: 'initialize', name: 'slow' });
    try {
      const d: FunctionDeps = { coordinator: coordinatorDeps(slow, t.names), timer: { schedule: async () => undefined }, publish: async () => undefined, deadLetter: async () => undefined, ...observability('leaseStream', 'SILENT') };
      const handler = leaseStream(d);

      const first = await handler({ Records: releases } as DynamoDBStreamEvent, invocation.context).catch((e: unknown) => e as Error);
      const callsAtAnswer = calls;
      await turns(); // what the first invocation still does after its answer
      const callsAfterAnswer = calls - callsAtAnswer;
      delayMs = 0;

      // the records reported failed; Lambda's next delivery starts from the first of them (a
      // function error: the whole batch again)
      const failed = first instanceof Error ? releases.map((r) => r.dynamodb!.SequenceNumber!) : failedIds(first);
      expect.soft(first instanceof Error ? `${first.name}: ${first.message}` : 'answered').toBe('answered');
      const from = releases.findIndex((r) => r.dynamodb!.SequenceNumber === failed[0]);
      expect.soft(from, 'the first record is always started').toBeGreaterThan(0);
      expect.soft(from, 'records past the margin are not started').toBeLessThan(N);
      // reported: every record from the first not started on, in order
      expect.soft(failed).toEqual(releases.slice(Math.max(from, 0)).map((r) => r.dynamodb!.SequenceNumber));
      expect.soft(callsAfterAnswer, 'DynamoDB calls of the first invocation after it answered').toBe(0);

      phase = 2;
      invocation = leftMs('leaseStream', 60_000);
      const retry = await handler({ Records: releases.slice(Math.max(from, 0)) } as DynamoDBStreamEvent, invocation.context);
      expect(failedIds(retry)).toEqual([]);
      // each lease reconciled by one invocation only: the records handled were not run again
      const handledFirst = new Set(leaseReads.filter((r) => r.phase === 1).map((r) => r.lease));
      const readAgain = [...new Set(leaseReads.filter((r) => r.phase === 2 && handledFirst.has(r.lease)).map((r) => r.lease))];
      expect.soft(readAgain, 'leases of records handled by the first invocation, read again by the retry').toEqual([]);
      expect(new Set(leaseReads.map((r) => r.lease))).toEqual(new Set(releases.map(leaseOf)));
    } finally {
      slow.destroy();
    }
  });
});

describe('a queue batch that outlasts the invocation', () => {
  const message = (id: string): SQSRecord => ({ messageId: id, receiptHandle: id, body: '{}', attributes: { ApproximateReceiveCount: '1' } as SQSRecord['attributes'], messageAttributes: {}, md5OfBody: '', eventSource: 'aws:sqs', eventSourceARN: 'arn:aws:sqs:local:000000000000:timer', awsRegion: 'local' }) as SQSRecord;
  const messages = Array.from({ length: 10 }, (_, i) => message(`m-${i}`));
  const deps = { ...observability('electionTimer', 'SILENT') } as FunctionDeps;

  /** A handler whose messages take `eachMs` of `spend`'s clock, and what it ran: the messages, when the run's end came, and with what time left. */
  function timed(eachMs: number, spend: (ms: number) => void = () => undefined) {
    const ran: string[] = [];
    const ends: (number | undefined)[] = [];
    const runningAfterEnd: string[] = [];
    let ended = false;
    const handler = queueBatchHandler(deps, () => ({
      record: async (r) => {
        ran.push(r.messageId);
        spend(eachMs);
        await turns(1);
        if (ended) runningAfterEnd.push(r.messageId);
      },
      end: async (remainingMs) => {
        ended = true;
        ends.push(remainingMs);
      },
    }));
    return { handler, ran, ends, runningAfterEnd };
  }

  it('stops starting messages at the margin, reports the rest, runs `end` with the time left, and nothing runs after the answer', async () => {
    const invocation = leftMs('electionTimer', BATCH_DEADLINE_MARGIN_MS + 250);
    const h = timed(100, invocation.spend);
    // 3 messages start before less than the margin is left (10,250, 10,150 and 10,050 ms left; then 9,950)
    const out = await h.handler({ Records: messages } as SQSEvent, invocation.context).catch((e: unknown) => e as Error);
    const answeredWithRan = h.ran.length;
    await turns();
    expect.soft(out instanceof Error ? `${out.name}: ${out.message}` : 'answered').toBe('answered');
    expect.soft(answeredWithRan, 'messages started').toBe(3);
    if (!(out instanceof Error)) expect.soft(failedIds(out)).toEqual(messages.slice(answeredWithRan).map((m) => m.messageId));
    expect.soft(h.ran.length, 'messages started after the answer').toBe(answeredWithRan);
    expect.soft(h.runningAfterEnd).toEqual([]);
    expect.soft(h.ends).toHaveLength(1);
    expect.soft(h.ends[0]).toBeLessThan(BATCH_DEADLINE_MARGIN_MS);
  });

  it('runs every message where the context tells no remaining time (the simulator\'s), as before', async () => {
    const h = timed(1);
    const { getRemainingTimeInMillis: _, ...context } = lambdaContext('electionTimer');
    expect(failedIds(await h.handler({ Records: messages } as SQSEvent, context as Context))).toEqual([]);
    expect(h.ran).toEqual(messages.map((m) => m.messageId));
    expect(h.ends).toEqual([undefined]);
  });
});
