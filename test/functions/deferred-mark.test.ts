/**
 * A term on a session ended by someone else (`release --force`, its own mark refused or never
 * tried) while the session row's `endedTerms` map is full of marks its owner may not have read
 * (`EndedTermsFullError`). The lease stream's record, retried a few times within seconds, used to
 * be given up: the term never marked, the tick electing the next holder, the old one leading on
 * until its backstop read. Now the next election is held long enough without the mark, the mark is
 * deferred to the timer queue until the map takes it, and the lease is elected a lease duration after
 * it lands. A mark that fails on a fault (the identities table throttled) holds the election the
 * same way while the record is retried, and the retry that marks cuts the hold. On real stream records of DynamoDB Local, through the lease stream's and the election
 * timer's handlers; time is a manual clock.
 */
import { DeleteItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { makeHandler as electionTimer } from '../../functions/election-timer.js';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { unmarkedHoldMs } from '../../lib/election/decide.js';
import { onTick, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { timerQueueBody, type TimerQueueMessage } from '../../lib/functions/timer.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { MAX_ENDED_TERMS, sessionKey } from '../../lib/schemas/identity.js';
import { EndedTermsFullError } from '../../lib/stores/errors.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => {
  t = await testTables('deferred-mark');
});
afterAll(async () => {
  await t.drop();
});

const DURATION_S = 15;

const sqsRecord = (id: string, body: string): SQSRecord =>
  ({ messageId: id, receiptHandle: id, body, attributes: { ApproximateReceiveCount: '1' } as SQSRecord['attributes'], messageAttributes: {}, md5OfBody: '', eventSource: 'aws:sqs', eventSourceARN: 'arn:aws:sqs:local:000000000000:timer', awsRegion: 'local' }) as SQSRecord;

/** Lease `lease` held by a on session `session`, b its successor; the session's map full of marks stamped at its last renewal, none certainly read yet (`full`, else empty). */
async function world(lease: string, session: string, full = true) {
  const start = Date.now();
  const clock = manualClock(start);
  const scheduled: { message: TimerQueueMessage; at: number }[] = [];
  const d: FunctionDeps = {
    coordinator: coordinatorDeps(t.client, t.names, { clock, config: { ackWindowMs: 5_000 } }),
    timer: { schedule: async (message, delayMs) => void scheduled.push({ message, at: clock.now() + delayMs }) },
    publish: async () => undefined,
    deadLetter: async () => undefined,
    ...observability('test', 'SILENT'),
  };
  const co = d.coordinator;
  const renewCandidates = async () => {
    for (const name of ['a', 'b']) {
      const r = await co.candidates.read(lease, name);
      await co.candidates.write(r, { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: clock.now(), createdAt: start - 60_000, identity: `${name}-1`, ...(r.item?.pingTime !== undefined ? { ackedPingTime: r.item.pingTime } : {}) } });
    }
  };
  await renewCandidates();
  const key = sessionKey(session);
  await co.identities.write(await co.identities.read(key.component, key.name), { set: { holderIdentity: session, hostname: 'h', leaseDurationSeconds: DURATION_S, acquireTime: start, renewTime: start } });
  const marks = Object.fromEntries(Array.from({ length: MAX_ENDED_TERMS }, (_, i) => [`job-${i}`, 1]));
  if (full) await t.client.send(new UpdateItemCommand({ TableName: t.names.identities, Key: marshall(key), UpdateExpression: 'SET endedTerms = :m, endedTermStamps = :s', ExpressionAttributeValues: marshall({ ':m': marks, ':s': Object.fromEntries(Object.keys(marks).map((l) => [l, start])) }) }));
  await co.leases.write(await co.leases.read(lease), {
    set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: DURATION_S, acquireTime: start, renewTime: start, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator', session, successor: 'b', successorInstance: 'b-1' },
  });
  const timer = electionTimer(d);
  let n = 0;
  return {
    start,
    clock,
    d,
    co,
    scheduled,
    renewCandidates,
    renewSession: async (at: number) => expect((await co.identities.renewSession(await co.identities.read(key.component, key.name), at)).kind).toBe('renewed'),
    markOf: async () => (await co.identities.read(key.component, key.name)).item!.endedTerms?.[lease],
    deferred: () => scheduled.filter((x) => 'markEnded' in x.message),
    /** The timer queue's message `due`, delivered at its time through the election timer's handler. */
    fire: async (due: { message: TimerQueueMessage; at: number }) => {
      clock.set(Math.max(clock.now(), due.at));
      return timer({ Records: [sqsRecord(`m-${n++}`, timerQueueBody(due.message))] } as SQSEvent, lambdaContext('electionTimer'));
    },
    /** The lease's last stream record of kind `eventName`. */
    record: async (eventName: 'MODIFY' | 'REMOVE') => (await streamRecords(t.client, t.names.leases)).filter((x) => x.dynamodb!.Keys!['name']!.S === lease && x.eventName === eventName).at(-1)!,
  };
}

describe('a term ended by someone else, its session row full of unread marks', () => {
  it('holds the next election and defers the mark until the row takes it: no second leader meanwhile; elected a lease duration after the mark', async () => {
    const lease = 'ended-unmarked';
    const w = await world(lease, 'full-session');
    const { start, clock, d, co, scheduled, deferred, fire } = w;
    // ended by someone else (`release --force`): a still leads, on its session, until it reads a mark
    expect(await co.leases.releaseTerm(lease, { holderIdentity: 'a', fencingToken: 1 }, start + 100)).toBeDefined();
    const record = await w.record('MODIFY');

    clock.set(start + 1_000);
    const seenAt = clock.now();
    const handled = await leaseStream(d)({ Records: [record] } as DynamoDBStreamEvent, lambdaContext('leaseStream')).catch((e: unknown) => e);
    // (before: the record failed, to be given up after Lambda's few retries within seconds, and the tick elected at once while a led on)
    clock.advance(500);
    expect((await onTick(d)).outcomes.find((o) => o.lease === lease)?.decision.kind).toBe('awaitAcks');
    expect((await co.leases.read(lease)).item!.holderIdentity).toBeUndefined();
    expect(handled).toEqual({ batchItemFailures: [] });
    const held = (await co.leases.read(lease)).item!;
    // held long enough without the mark; the successor unnamed, so it does not take the vacant row itself
    expect(held.election).toMatchObject({ notBefore: seenAt + unmarkedHoldMs(DURATION_S) });
    expect(held.successor).toBeUndefined();
    expect(deferred()).toHaveLength(1);

    // a renews on, not having read the marks: the deferred mark is refused again, and deferred again
    await w.renewSession(start + 5_000);
    await fire(deferred()[0]!);
    expect(await w.markOf()).toBeUndefined();
    expect(deferred()).toHaveLength(2);
    // the tick, and the candidates answering, elect nobody meanwhile
    clock.set(start + 10_000);
    await w.renewCandidates();
    expect((await onTick(d)).outcomes.find((o) => o.lease === lease)?.decision.kind).toBe('awaitAcks');
    expect((await co.leases.read(lease)).item!.holderIdentity).toBeUndefined();

    // a's stamps move beyond a lease duration and the skew margin past the marks: read; the mark lands
    await w.renewSession(start + 16_001);
    while ((await w.markOf()) === undefined) await fire(deferred().at(-1)!);
    const markedAt = clock.now();
    expect(await w.markOf()).toBe(1);
    // the hold cut to a lease duration from the mark: a stops at its next session renewal within it
    const cut = (await co.leases.read(lease)).item!.election!;
    expect(cut.notBefore).toBe(markedAt + DURATION_S * 1000);
    clock.set(cut.notBefore! - 1);
    await w.renewCandidates();
    expect((await onTick(d)).outcomes.find((o) => o.lease === lease)?.decision.kind).toBe('awaitAcks');

    // the election's timer at its end: elected
    const close = scheduled.filter((x) => 'electionId' in x.message && x.message.electionId === cut.id && x.message.deadline === cut.deadline);
    expect(close.length).toBeGreaterThan(0);
    await fire(close.at(-1)!);
    expect((await co.leases.read(lease)).item).toMatchObject({ holderIdentity: expect.any(String), fencingToken: expect.any(Number) });
    expect((await co.leases.read(lease)).item!.fencingToken).toBeGreaterThan(1);
  });

  it('a held row deleted: the delete\'s hold stands, the mark is deferred, and the hold is cut to a lease duration once it lands', async () => {
    const lease = 'deleted-unmarked';
    const w = await world(lease, 'full-session-2');
    const { start, clock, d, co, deferred, fire } = w;
    await t.client.send(new DeleteItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }) }));
    const record = await w.record('REMOVE');

    clock.set(start + 1_000);
    const seenAt = clock.now();
    expect(await leaseStream(d)({ Records: [record] } as DynamoDBStreamEvent, lambdaContext('leaseStream')).catch((e: unknown) => e)).toEqual({ batchItemFailures: [] });
    expect((await co.leases.read(lease)).item!.election).toMatchObject({ notBefore: seenAt + unmarkedHoldMs(DURATION_S), departed: 'a' });
    expect(deferred()).toHaveLength(1);
    expect(deferred()[0]!.message).toMatchObject({ markEnded: { deleted: true } });

    await w.renewSession(start + 16_001);
    while ((await w.markOf()) === undefined) await fire(deferred().at(-1)!);
    expect((await co.leases.read(lease)).item!.election).toMatchObject({ notBefore: clock.now() + DURATION_S * 1000 });
    expect((await co.leases.read(lease)).item!.holderIdentity).toBeUndefined();
  });

  it('a mark the row refuses through the whole unmarked hold is given up (its holder has read the lease itself by then): dropped, logged, not deferred again without end nor failed to the dead-letter queue', async () => {
    const lease = 'refused-throughout';
    const session = 'full-session-3';
    const w = await world(lease, session);
    const { start, clock, d, co, deferred, fire } = w;
    expect(await co.leases.releaseTerm(lease, { holderIdentity: 'a', fencingToken: 1 }, start + 100)).toBeDefined();
    const record = await w.record('MODIFY');
    clock.set(start + 1_000);
    const since = clock.now();
    expect(await leaseStream(d)({ Records: [record] } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });
    expect(deferred()).toHaveLength(1);
    expect(deferred()[0]!.message).toMatchObject({ since, attempt: 1 });
    // the map never takes it (the owner's renewals keep it full of marks it may not have read)
    co.identities.markTermEnded = async () => {
      throw new EndedTermsFullError(session, lease);
    };
    const warn = vi.spyOn(d.logger, 'warn');

    // deferred again while the unmarked hold lasts
    const cap = since + unmarkedHoldMs(DURATION_S);
    while (deferred().at(-1)!.at < cap) {
      const n = deferred().length;
      expect(await fire(deferred().at(-1)!)).toEqual({ batchItemFailures: [] });
      expect(deferred()).toHaveLength(n + 1);
    }
    // the hold it would cut is over: the term's holder has read the lease and stopped
    expect((await co.leases.read(lease)).item!.election!.notBefore).toBeLessThanOrEqual(cap);
    const links = deferred().length;
    // (before: deferred again, a link each lease duration for as long as the map stayed full; Lambda's loop detection was the end)
    expect(await fire(deferred().at(-1)!)).toEqual({ batchItemFailures: [] });
    expect(deferred()).toHaveLength(links);
    expect(warn).toHaveBeenCalledWith(expect.stringMatching(/^ended term not marked through the unmarked hold: given up/), expect.objectContaining({ lease, session, fencingToken: 1, since }));
  });
});

describe('a term ended by someone else, its mark failing on a fault', () => {
  it('a mark that fails on a fault (the identities table throttled): the next election is held while the record is retried, and the hold cut to a lease duration once the mark lands', async () => {
    const lease = 'ended-fault';
    const w = await world(lease, 'faulty-session', false);
    const { start, clock, d, co } = w;
    expect(await co.leases.releaseTerm(lease, { holderIdentity: 'a', fencingToken: 1 }, start + 100)).toBeDefined();
    const record = await w.record('MODIFY');
    const mark = co.identities.markTermEnded.bind(co.identities);
    let faults = 1;
    co.identities.markTermEnded = async (...args) => {
      if (faults-- > 0) throw Object.assign(new Error('throttled'), { name: 'ThrottlingException' });
      return mark(...args);
    };

    clock.set(start + 1_000);
    const seenAt = clock.now();
    // the record fails, to be retried: a leads on, on its session, not having read a mark
    await expect(leaseStream(d)({ Records: [record] } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).rejects.toThrow();
    expect(await w.markOf()).toBeUndefined();
    // (before: nothing held, and the tick elected the next leader while a led on)
    clock.advance(500);
    await w.renewCandidates();
    expect((await onTick(d)).outcomes.find((o) => o.lease === lease)?.decision.kind).toBe('awaitAcks');
    const held = (await co.leases.read(lease)).item!;
    expect(held.holderIdentity).toBeUndefined();
    expect(held.successor).toBeUndefined();
    expect(held.election).toMatchObject({ notBefore: seenAt + unmarkedHoldMs(DURATION_S) });

    // the retry marks the term: the hold cut to a lease duration from the mark
    clock.set(start + 3_000);
    expect(await leaseStream(d)({ Records: [record] } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });
    expect(await w.markOf()).toBe(1);
    expect((await co.leases.read(lease)).item!.election).toMatchObject({ notBefore: clock.now() + DURATION_S * 1000 });
    clock.set(start + 3_000 + DURATION_S * 1000 - 1);
    await w.renewCandidates();
    expect((await onTick(d)).outcomes.find((o) => o.lease === lease)?.decision.kind).toBe('awaitAcks');
    expect((await co.leases.read(lease)).item!.holderIdentity).toBeUndefined();
  });

  it('an election the tick opened on the released row before the record: the hold unnames its successors too, or the successor takes the held row at once', async () => {
    const lease = 'ended-fault-opened';
    const w = await world(lease, 'faulty-session-2', false);
    const { start, clock, d, co } = w;
    expect(await co.leases.releaseTerm(lease, { holderIdentity: 'a', fencingToken: 1 }, start + 100)).toBeDefined();
    const record = await w.record('MODIFY');
    // the tick first (the candidates no longer fresh): an election opened on the vacant row, b still its successor
    clock.set(start + 6_000);
    expect((await onTick(d)).outcomes.find((o) => o.lease === lease)?.decision.kind).toBe('openElection');
    expect((await co.leases.read(lease)).item).toMatchObject({ successor: 'b', election: expect.any(Object) });
    const mark = co.identities.markTermEnded.bind(co.identities);
    co.identities.markTermEnded = async (...args) => {
      throw Object.assign(new Error('throttled'), { name: 'ThrottlingException' });
    };
    await expect(leaseStream(d)({ Records: [record] } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).rejects.toThrow();
    co.identities.markTermEnded = mark;
    const held = (await co.leases.read(lease)).item!;
    expect(held.election).toMatchObject({ notBefore: clock.now() + unmarkedHoldMs(DURATION_S) });
    // (before: b, still named, took the held row as successor at its next read while a led on)
    expect(held.successor).toBeUndefined();
    expect(held.successorInstance).toBeUndefined();
  });
});
