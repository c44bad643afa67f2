import { skewedClock, systemClock } from '../../lib/clock.js';
/**
 * The local event source mapping on a real DynamoDB Local stream: Lambda's checkpoint, retry,
 * bisect and dead-letter rules, and maximum record age.
 */
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../lib/local/dynamodb-local.js';
import { StreamPoller, creationSeconds, type DeadLetter } from '../../lib/local/stream-poller.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { wiring } from '../../lib/wiring.js';
import { waitFor } from '../sdk/harness.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
let streams: DynamoDBStreamsClient;
let arn: string;
const NAMES = ['p1', 'p2', 'p3', 'p4', 'p5'];

beforeAll(async () => {
  t = await testTables('poller');
  streams = new DynamoDBStreamsClient({ endpoint: inject('ddbEndpoint'), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  arn = (await t.client.send(new DescribeTableCommand({ TableName: t.names.candidates }))).Table!.LatestStreamArn!;
  // Five records on the stream before any poller reads it: they come as one batch.
  const store = new CandidateStore(t.client, t.names.candidates);
  for (const name of NAMES) {
    await store.write(await store.read('job', name), { set: { binaryVersion: '1.0.0', emulationVersion: '1.0.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: Date.now(), createdAt: Date.now() } });
  }
});
afterAll(async () => {
  streams.destroy();
  await t.drop();
});

const names = (e: DynamoDBStreamEvent) => e.Records.map((r) => r.dynamodb!.Keys!['name']!.S!);

describe('StreamPoller', () => {
  it('a record reported failed: resumes from it, bisects, retries, dead-letters it alone; earlier records are never redelivered', async () => {
    const batches: string[][] = [];
    const dead: DeadLetter[] = [];
    const poller = new StreamPoller({
      client: streams,
      streamArn: arn,
      trigger: wiring.candidateStream.trigger,
      functionName: 'candidateStream',
      invoke: async (e) => {
        batches.push(names(e));
        const poison = e.Records.find((r) => r.dynamodb!.Keys!['name']!.S === 'p3');
        return { batchItemFailures: poison ? [{ itemIdentifier: poison.dynamodb!.SequenceNumber! }] : [] };
      },
      deadLetter: (d) => dead.push(d),
    });
    poller.start();
    await waitFor('the dead letter', () => dead.length > 0);
    await poller.stop();

    expect(batches[0]).toEqual(NAMES);
    // Every later batch starts at or after the failed record: what was done stays done.
    for (const b of batches.slice(1)) expect(b).not.toContain('p1');
    for (const b of batches.slice(1)) expect(b).not.toContain('p2');
    expect(dead).toHaveLength(1);
    expect(dead[0]!.records).toHaveLength(1);
    expect(dead[0]!.function).toBe('candidateStream');
    // p4 and p5 were delivered in a batch without p3 (the bisected half) and succeeded there.
    expect(batches.some((b) => b.includes('p4') && !b.includes('p3'))).toBe(true);
    expect(batches.some((b) => b.includes('p5') && !b.includes('p3'))).toBe(true);
    // p3 was tried as many times as the first delivery plus the retries, no more.
    expect(batches.filter((b) => b.includes('p3'))).toHaveLength(1 + wiring.candidateStream.trigger.retryAttempts);
  });

  it('a handler that throws fails the whole batch, which is retried and then dead-lettered', async () => {
    const dead: DeadLetter[] = [];
    let calls = 0;
    const poller = new StreamPoller({
      client: streams,
      streamArn: arn,
      trigger: { ...wiring.candidateStream.trigger, bisectOnError: false },
      functionName: 'candidateStream',
      invoke: async () => {
        calls++;
        throw new Error('boom');
      },
      deadLetter: (d) => dead.push(d),
    });
    poller.start();
    await waitFor('the dead letter', () => dead.length > 0);
    await poller.stop();
    expect(calls).toBe(1 + wiring.candidateStream.trigger.retryAttempts);
    expect(dead[0]!.records).toHaveLength(NAMES.length);
    expect(dead[0]!.reason).toMatch(/handler threw: boom/);
  });

  it('with retryAttempts -1 (none given up: the lease stream’s) a record failing more often than any bound is retried, spaced out, until handled; none dead-lettered', async () => {
    // before: -1 read as no retry at all, the record dead-lettered at its first failure
    const trigger = { ...wiring.candidateStream.trigger, retryAttempts: -1 };
    const batches: string[][] = [];
    const dead: DeadLetter[] = [];
    const sleeps: number[] = [];
    // the waits asked for are recorded, not slept: the test waits on the outcome alone
    const clock = { ...systemClock, sleep: (ms: number) => (sleeps.push(ms), new Promise<void>((resolve) => setImmediate(resolve))) };
    let failures = 6; // more than Lambda's retries were (3)
    let handled = false;
    const poller = new StreamPoller({
      client: streams,
      streamArn: arn,
      trigger,
      functionName: 'leaseStream',
      idleMs: 7,
      clock,
      invoke: async (e) => {
        batches.push(names(e));
        const p3 = e.Records.find((r) => r.dynamodb!.Keys!['name']!.S === 'p3');
        if (p3 && failures-- > 0) return { batchItemFailures: [{ itemIdentifier: p3.dynamodb!.SequenceNumber! }] };
        if (p3) handled = true;
        return {};
      },
      deadLetter: (d) => dead.push(d),
    });
    poller.start();
    await waitFor('p3 handled', () => handled);
    await poller.stop();
    expect(dead).toEqual([]);
    expect(batches.filter((b) => b.includes('p3'))).toHaveLength(7);
    for (const b of batches.slice(1)) expect(b).not.toContain('p1');
    // each retry waits longer than the one before, up to a bound: no spinning on a failing record
    const backoff = sleeps.filter((ms) => ms !== 7 && ms !== 2_000); // not an idle shard's wait, nor the shard discovery's (DISCOVER_EVERY_MS)
    expect(backoff.length).toBeGreaterThanOrEqual(6);
    expect(backoff.slice(0, 4)).toEqual([14, 28, 56, 112]);
  });

  it('stop() stops a poller retrying a record that never succeeds (-1), dead-lettering nothing', async () => {
    const dead: DeadLetter[] = [];
    let calls = 0;
    const poller = new StreamPoller({
      client: streams,
      streamArn: arn,
      trigger: { ...wiring.candidateStream.trigger, retryAttempts: -1 },
      functionName: 'leaseStream',
      idleMs: 5,
      invoke: async () => {
        calls++;
        throw new Error('boom');
      },
      deadLetter: (d) => dead.push(d),
    });
    poller.start();
    await waitFor('a few retries', () => calls > 6);
    await poller.stop();
    expect(dead).toEqual([]);
  });

  it('a failure describing the stream is reported and retried: its shards are still found, and stop() still stops', async () => {
    // DynamoDB Local on a starved machine drops a request now and then: the first DescribeStream fails
    const flaky = new DynamoDBStreamsClient({ endpoint: inject('ddbEndpoint'), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    let failures = 1;
    flaky.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'DescribeStreamCommand' && failures > 0) {
          failures--;
          throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
        }
        return next(args);
      },
      { step: 'initialize', name: 'failFirstDescribeStream' },
    );
    const errors: Error[] = [];
    const seen = new Set<string>();
    const poller = new StreamPoller({
      client: flaky,
      streamArn: arn,
      trigger: wiring.candidateStream.trigger,
      functionName: 'candidateStream',
      invoke: async (e) => void names(e).forEach((n) => seen.add(n)),
      deadLetter: () => undefined,
      onError: (e) => errors.push(e),
    });
    poller.start();
    try {
      await waitFor('the records, read after the failed DescribeStream', () => NAMES.every((n) => seen.has(n)));
    } finally {
      await poller.stop();
      flaky.destroy();
    }
    expect(errors.map((e) => e.message)).toEqual(['socket hang up']);
  });

  it('records older than a maxRecordAgeSeconds go to the dead-letter destination unprocessed', async () => {
    const dead: DeadLetter[] = [];
    let calls = 0;
    const poller = new StreamPoller({
      client: streams,
      streamArn: arn,
      trigger: { ...wiring.candidateStream.trigger, maxRecordAgeSeconds: 3600 },
      functionName: 'candidateStream',
      invoke: async () => void calls++,
      deadLetter: (d) => dead.push(d),
      clock: skewedClock(() => (3600 + 120) * 1000),
    });
    poller.start();
    await waitFor('the dead letter', () => dead.length > 0);
    await poller.stop();
    expect(calls).toBe(0);
    expect(dead[0]!.reason).toMatch(/maxRecordAgeSeconds/);
  });

  it('with the wiring’s maxRecordAgeSeconds (-1) a record of any age is delivered, none dead-lettered', async () => {
    expect(wiring.candidateStream.trigger.maxRecordAgeSeconds).toBe(-1);
    const dead: DeadLetter[] = [];
    let calls = 0;
    const poller = new StreamPoller({
      client: streams,
      streamArn: arn,
      trigger: wiring.candidateStream.trigger,
      functionName: 'candidateStream',
      invoke: async () => void calls++,
      deadLetter: (d) => dead.push(d),
      clock: skewedClock(() => 23 * 3600 * 1000),
    });
    poller.start();
    await waitFor('the records', () => calls > 0);
    await poller.stop();
    expect(dead).toEqual([]);
  });

  it('creation times: DynamoDB Local rounds to the minute, so a record read within it (or a poll after it) gets the second it was read, at most the minute\'s last', () => {
    const minute = new Date(Date.UTC(2026, 10, 23, 12, 0, 0));
    expect(creationSeconds(minute, minute.getTime() + 12_345)).toBe(minute.getTime() / 1000 + 12);
    // written in the minute's last moment, read a poll after it: its minute's last second (before: its first, 59 s early, as local mode's events file showed "Election Started" a minute before the election)
    expect(creationSeconds(minute, minute.getTime() + 60_100)).toBe(minute.getTime() / 1000 + 59);
    expect(creationSeconds(minute, minute.getTime() + 64_999)).toBe(minute.getTime() / 1000 + 59);
    // read again long after (a restart): the minute
    expect(creationSeconds(minute, minute.getTime() + 90_000)).toBe(minute.getTime() / 1000);
    const precise = new Date(Date.UTC(2026, 10, 23, 12, 0, 7));
    expect(creationSeconds(precise, precise.getTime() + 500)).toBe(precise.getTime() / 1000);
    expect(creationSeconds(undefined, 1)).toBeUndefined();
  });

  it('creation times after a pause (the process stopped 45 s): a record read then keeps its minute, not the read time 45 s late; one read a poll after a read that drained the shard gets the second it was read (a review, 2026-12-07)', async () => {
    // every record's time as DynamoDB Local rounds it, one fixed minute; the poller's time the test's, so
    // nothing hangs on the machine's clock: before the pause the poller reads at 12:00:01, after it at 12:00:46
    const MINUTE = Date.UTC(2026, 10, 23, 12, 0, 0);
    let now = MINUTE + 1_000;
    const clock = { ...systemClock, now: () => now };
    /** Held: the poller's next read waits (the process stopped) until resume(); reads since the start. */
    let paused: Promise<void> | undefined;
    let resume: () => void = () => undefined;
    let waiting = 0;
    let reads = 0;
    const timed = new DynamoDBStreamsClient({ endpoint: inject('ddbEndpoint'), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    timed.middlewareStack.add(
      (next) => async (args) => {
        const reading = (args.input as { ShardIterator?: string }).ShardIterator !== undefined;
        if (reading && paused) {
          waiting++;
          await paused;
        }
        const out = await next(args);
        if (reading) reads++;
        for (const r of (out.output as { Records?: { dynamodb?: { ApproximateCreationDateTime?: Date } }[] }).Records ?? []) r.dynamodb!.ApproximateCreationDateTime = new Date(MINUTE);
        return out;
      },
      { step: 'initialize', name: 'oneMinute' },
    );
    const stamped = new Map<string, number | undefined>();
    const poller = new StreamPoller({
      client: timed,
      streamArn: arn,
      trigger: { ...wiring.candidateStream.trigger, filters: undefined },
      functionName: 'candidateStream',
      idleMs: 7,
      clock,
      invoke: async (e) => {
        for (const r of e.Records) stamped.set(r.dynamodb!.Keys!['name']!.S!, r.dynamodb!.ApproximateCreationDateTime);
      },
      deadLetter: () => undefined,
    });
    const store = new CandidateStore(t.client, t.names.candidates);
    const write = async (name: string) => store.write(await store.read('job', name), { set: { binaryVersion: '1.0.0', emulationVersion: '1.0.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: Date.now(), createdAt: Date.now() } });
    poller.start();
    try {
      // the shard read to its end (the records written before: their first read, which keeps the minute)
      await waitFor('the earlier records', () => stamped.has('p5'));
      expect(stamped.get('p1')).toBe(MINUTE / 1000);
      const drained = reads;
      await waitFor('a read that found nothing new', () => reads > drained + 1);
      // the pause: the next read held, a record written meanwhile, and read 45 s later
      paused = new Promise<void>((r) => (resume = r));
      await waitFor('the next read held', () => waiting > 0);
      await write('after-pause');
      now = MINUTE + 46_000;
      paused = undefined;
      resume();
      await waitFor('the record written in the pause', () => stamped.has('after-pause'));
      // before: MINUTE + 46 s, the read time: 45 s after the last poll, when it may have been written
      expect(stamped.get('after-pause')).toBe(MINUTE / 1000);
      // polling again: a record written now is read a poll after a read that drained the shard
      now = MINUTE + 47_000;
      await write('prompt');
      await waitFor('the record written while polling', () => stamped.has('prompt'));
      expect(stamped.get('prompt')).toBe(MINUTE / 1000 + 47);
    } finally {
      paused = undefined;
      resume();
      await poller.stop();
      timed.destroy();
    }
  });

  it('the lease stream’s filters: a holder’s renewal never reaches the function; every other write does', async () => {
    const leases = new LeaseStore(t.client, t.names.leases);
    const now = Date.now();
    await leases.write(await leases.read('f'), { set: { holderIdentity: 'h', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1 } }); // INSERT
    const term = { holderIdentity: 'h', fencingToken: 1 };
    await leases.renewTerm('f', term, now + 1, 15); // renewal: filtered
    await leases.write(await leases.read('f'), { set: { preferredHolder: 'x' } }); // the coordinator's write right after a renewal
    await leases.renewTerm('f', term, now + 2, 15); // renewal: filtered
    await leases.releaseTerm('f', term, now + 3); // release
    await leases.delete(await leases.read('f')); // REMOVE
    const arnOf = (await t.client.send(new DescribeTableCommand({ TableName: t.names.leases }))).Table!.LatestStreamArn!;
    const seen: string[] = [];
    const poller = new StreamPoller({
      client: streams,
      streamArn: arnOf,
      trigger: wiring.leaseStream.trigger,
      functionName: 'leaseStream',
      invoke: async (e) => void seen.push(...e.Records.map((r) => `${r.eventName} ${r.dynamodb!.NewImage?.['preferredHolder'] ? 'preferred' : r.dynamodb!.NewImage?.['holderIdentity'] ? 'held' : 'free'}`)),
      deadLetter: () => undefined,
    });
    poller.start();
    await waitFor('the records', () => seen.length >= 4);
    await poller.stop();
    expect(seen).toEqual(['INSERT held', 'MODIFY preferred', 'MODIFY free', 'REMOVE free']);
    expect(poller.filtered).toBe(2);
  });
});
