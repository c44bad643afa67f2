/**
 * A lease whose `session` names a row the schema refuses (issue 36, item 10): the ended term cannot
 * be marked on it, and no retry can until an operator repairs the row. The lease stream's record is
 * reconciled and its events published as any other, then dead-lettered once with its content and
 * reported processed (it used to fail every retry, holding up its shard, until Lambda dead-lettered
 * its position). On DynamoDB Local.
 */
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as coordinatorTick } from '../../functions/coordinator.js';
import { makeHandler as electionTimer } from '../../functions/election-timer.js';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { coordinatorDeps, type CoordinatorDeps } from '../../lib/coordinator/reconcile.js';
import type { ConclaveEvent } from '../../lib/events/schemas.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import type { PoisonRecord } from '../../lib/functions/dead-letter.js';
import { observability } from '../../lib/functions/env.js';
import { METRIC } from '../../lib/functions/metrics.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { manualClock } from '../../lib/clock.js';
import { SESSION_COMPONENT } from '../../lib/schemas/identity.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

const MIN = 60_000;
let t: TestTables;
beforeAll(async () => {
  t = await testTables('broken-session');
});
afterAll(async () => {
  await t.drop();
});

const failures = (r: unknown) => (r as { batchItemFailures: { itemIdentifier: string }[] }).batchItemFailures.map((f) => f.itemIdentifier);

describe('a term ended on a session row the schema refuses', () => {
  it('is reconciled, then dead-lettered once with its content and reported processed; a dead-letter queue that fails leaves it for retry', async () => {
    const c = coordinatorDeps(t.client, t.names, { config: { ackWindowMs: 5_000 } });
    const lease = 'on-broken-session';
    const now = Date.now();
    // the session row, broken: a duration of 0 s (the schema wants 1 s or more)
    const row = { component: SESSION_COMPONENT, name: 'broken-1', holderIdentity: 'broken-1_1', hostname: 'host-a', leaseDurationSeconds: 0, acquireTime: now, renewTime: now, revision: 1 };
    await t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall(row) }));
    await expect(c.identities.read(SESSION_COMPONENT, 'broken-1')).rejects.toThrow(/leaseDurationSeconds/);
    for (const [name, age] of [['b', 3], ['c', 2]] as const) {
      await c.candidates.write(await c.candidates.read(lease, name), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: now - 10 * MIN, createdAt: now - age * 60 * MIN } });
    }
    await c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'a', holderInstance: 'a-1', session: 'broken-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' } });
    await c.leases.write(await c.leases.read(lease), { set: { lastHolderIdentity: 'a' }, remove: ['holderIdentity', 'holderInstance', 'session'] });
    const released = (await streamRecords(t.client, t.names.leases)).filter((r: DynamoDBRecord) => r.eventName === 'MODIFY' && r.dynamodb!.Keys!['name']!.S === lease);
    expect(released).toHaveLength(1);
    const record = released[0]!;

    const dead: PoisonRecord[] = [];
    const published: ConclaveEvent[] = [];
    let deadLetterDown = true;
    const d: FunctionDeps = {
      coordinator: c,
      timer: { schedule: async () => undefined },
      publish: async (events) => void published.push(...events),
      deadLetter: async (p) => {
        if (deadLetterDown) throw new Error('SQS unavailable');
        dead.push(p);
      },
      ...observability('test', 'SILENT'),
    };
    const handler = leaseStream(d);

    // the dead-letter queue down: nothing may be lost, so the record fails (a batch of it alone: the whole batch) and is retried
    await expect(handler({ Records: [record] }, lambdaContext('leaseStream'))).rejects.toThrow(/All records failed/);
    expect(dead).toEqual([]);

    // the queue back: dead-lettered once, with the record and the row's issues, and reported processed
    deadLetterDown = false;
    expect(failures(await handler({ Records: [record] }, lambdaContext('leaseStream')))).toEqual([]);
    expect(dead).toEqual([
      expect.objectContaining({ kind: 'poisonRecord', function: 'leaseStream', eventID: record.eventID, sequenceNumber: record.dynamodb!.SequenceNumber, record, issues: [expect.objectContaining({ field: 'leaseDurationSeconds' })], reason: expect.stringMatching(/^invalid session row broken-1 of lease on-broken-session \(term 1 not marked ended\): leaseDurationSeconds: /) }),
    ]);
    // and the release was acted on all the same: the election is open, the event out
    const after = (await c.leases.read(lease)).item!;
    expect(after.election).toBeDefined();
    expect((await c.candidates.read(lease, 'b')).item!.pingTime).toBe(after.election!.startedAt);
    expect(new Set(published.map((e) => `${e.detailType} ${e.detail.id}`))).toEqual(new Set([`Lease Released ${record.eventID}:lease-released`]));
  });
});

/** The tick's function deps on `c`, its warnings and errors kept (level, message, extra). */
function tickDeps(c: CoordinatorDeps): { d: FunctionDeps; logged: [string, string, Record<string, unknown>][] } {
  const logged: [string, string, Record<string, unknown>][] = [];
  const d: FunctionDeps = { coordinator: c, timer: { schedule: async () => undefined }, publish: async () => undefined, deadLetter: async () => undefined, ...observability('test', 'SILENT') };
  for (const level of ['warn', 'error'] as const) {
    const log = d.logger[level].bind(d.logger);
    d.logger[level] = ((message: string, extra: Record<string, unknown>) => (logged.push([level, message, extra]), log(message, extra))) as typeof d.logger.warn;
  }
  return { d, logged };
}

describe("the tick, with a live term on a session row the schema refuses", () => {
  it('reports the row once, naming the leases held on it and the repair; no failed reconcile, no write', async () => {
    const tables = await testTables('broken-session-tick');
    try {
      const c = coordinatorDeps(tables.client, tables.names);
      const now = Date.now();
      const row = { component: SESSION_COMPONENT, name: 'broken-2', holderIdentity: 'broken-2_1', process: 'p1', hostname: 'host-a', leaseDurationSeconds: 60, acquireTime: now, renewTime: 'now', revision: 1 };
      await tables.client.send(new PutItemCommand({ TableName: tables.names.identities, Item: marshall(row) }));
      await c.candidates.write(await c.candidates.read('held', 'a'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: now, createdAt: now - MIN } });
      await c.leases.write(await c.leases.read('held'), { set: { holderIdentity: 'a', holderInstance: 'a-1@p1', session: 'broken-2', leaseDurationSeconds: 15, acquireTime: now - MIN, renewTime: now - MIN, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' } });
      const before = (await c.leases.read('held')).item;
      const { d, logged } = tickDeps(c);
      const r = (await coordinatorTick(d)({ source: 'aws.events', 'detail-type': 'Scheduled Event', time: new Date().toISOString() } as never, lambdaContext('coordinator'))) as { errors: unknown[] };
      expect(r.errors).toEqual([]);
      // before: also "reconcile failed; the next trigger retries" for the lease, with the bare ValidationError
      expect(logged).toEqual([
        ['warn', 'identity row does not match its schema: a term held on it is judged by no one, and it vouches for no candidate', {
          key: { component: SESSION_COMPONENT, name: 'broken-2' },
          error: expect.stringMatching(/renewTime/),
          leases: ['held'],
          fix: expect.stringMatching(/^rewrite it valid, or delete it \(aws dynamodb delete-item --table-name \S+ --key '\{"component":\{"S":"conclave-session"\},"name":\{"S":"broken-2"\}\}'\): the coordinator leaves lease held alone until then, judging no term by it; left unchanged, the tick deletes it itself after \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \(61 s after it first saw it so: the longest lease on it and clockSkewMs, by when every holder on it has stopped\), and judges the terms without it$/),
          deleteAfter: expect.stringMatching(/^\d{4}-/),
        }],
      ]);
      expect((await c.leases.read('held')).item, 'nothing written').toEqual(before);
    } finally {
      await tables.drop();
    }
  });

  it('its holder gone: tells, each tick, when it will delete the row, and counts the lease among the unjudged (a gauge); then deletes it and says so, and ends the term', async () => {
    const tables = await testTables('broken-session-dead');
    try {
      const clock = manualClock(Date.UTC(2026, 11, 1));
      const c = coordinatorDeps(tables.client, tables.names, { clock });
      const now = clock.now();
      const row = { component: SESSION_COMPONENT, name: 'broken-3', holderIdentity: 'broken-3', process: 'p1', hostname: '', leaseDurationSeconds: 15, acquireTime: now - MIN, renewTime: now - 2_000, revision: 3 };
      await tables.client.send(new PutItemCommand({ TableName: tables.names.identities, Item: marshall(row) }));
      await c.candidates.write(await c.candidates.read('stuck', 'b'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: now, createdAt: now - MIN } });
      await c.leases.write(await c.leases.read('stuck'), { set: { holderIdentity: 'a', holderInstance: 'a-1@p1', session: 'broken-3', leaseDurationSeconds: 15, acquireTime: now - MIN, renewTime: now - MIN, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' } });
      const { d, logged } = tickDeps(c);
      const gauges: [string, number][] = [];
      const add = d.metrics.addMetric.bind(d.metrics);
      d.metrics.addMetric = (name, unit, value) => (gauges.push([name, value]), add(name, unit, value));
      const unjudgedGauge = () => gauges.filter(([name]) => name === METRIC.unjudgedLeases).map(([, value]) => value);
      const tickNow = () => coordinatorTick(d)({ source: 'aws.events', 'detail-type': 'Scheduled Event', time: new Date(clock.now()).toISOString() } as never, lambdaContext('coordinator'));
      // the function's result says it too (as the Lambda console shows it)
      expect(await tickNow()).toMatchObject({ unjudged: [{ lease: 'stuck', session: 'broken-3', fields: ['hostname'] }], refusedSessions: [{ session: 'broken-3', leases: ['stuck'], deleteAfter: new Date(now + 16_000).toISOString(), deleted: false }] });
      expect(logged.map(([, , extra]) => extra['deleteAfter'])).toEqual([new Date(now + 16_000).toISOString()]);
      // before: no gauge (the lease neither broken nor leaderless)
      expect(unjudgedGauge()).toEqual([1]);
      logged.length = 0;
      clock.advance(MIN);
      expect(await tickNow()).toMatchObject({ unjudged: [], refusedSessions: [{ session: 'broken-3', leases: ['stuck'], deleted: true }], collectedIdentities: 1 });
      expect(unjudgedGauge()).toEqual([1, 0]);
      expect(logged).toEqual([
        ['warn', 'a session row the schema refuses, unchanged for longer than the longest lease on it and clockSkewMs, was deleted: the terms on it are judged without it', {
          key: { component: SESSION_COMPONENT, name: 'broken-3' },
          leases: ['stuck'],
          unchangedSince: new Date(now).toISOString(),
        }],
      ]);
      // its term ended: an election, its one candidate pinged (its row a minute old)
      expect((await c.leases.read('stuck')).item).toMatchObject({ lastHolderIdentity: 'a', election: expect.objectContaining({ startedAt: now + MIN }) });
      expect((await c.leases.read('stuck')).item?.holderIdentity).toBeUndefined();
    } finally {
      await tables.drop();
    }
  });
});

describe('the tick, with a row the schema refuses whose stamp does not parse and that no held lease names', () => {
  it('says when it will delete it (before: "never collected", every tick, for ever); deletes it a day and the skew margin after it first saw it unchanged, and says so', async () => {
    const tables = await testTables('broken-session-unnamed');
    try {
      const clock = manualClock(Date.UTC(2026, 11, 1));
      const c = coordinatorDeps(tables.client, tables.names, { clock });
      const now = clock.now();
      const row = { component: SESSION_COMPONENT, name: 'broken-4', holderIdentity: 'broken-4', process: 'p1', hostname: 'h', leaseDurationSeconds: 15, acquireTime: now - MIN, renewTime: 'then', revision: 3 };
      await tables.client.send(new PutItemCommand({ TableName: tables.names.identities, Item: marshall(row) }));
      const { d, logged } = tickDeps(c);
      const tickNow = () => coordinatorTick(d)({ source: 'aws.events', 'detail-type': 'Scheduled Event', time: new Date(clock.now()).toISOString() } as never, lambdaContext('coordinator'));
      const deleteAfter = new Date(now + 86_400_000 + 1_000).toISOString();
      expect(await tickNow()).toMatchObject({ errors: [], refusedSessions: [{ session: 'broken-4', leases: [], deleteAfter, deleted: false }] });
      expect(logged).toEqual([
        ['warn', 'identity row does not match its schema: a term held on it is judged by no one, and it vouches for no candidate', {
          key: { component: SESSION_COMPONENT, name: 'broken-4' },
          error: expect.stringMatching(/renewTime/),
          fix: expect.stringMatching(new RegExp(`: its renewTime or leaseDurationSeconds does not parse, so it is not collected by them; no held lease names it, so left unchanged, the tick deletes it itself after ${deleteAfter} \\(by when anyone who renewed it has stopped\\)$`)),
          deleteAfter,
        }],
      ]);
      logged.length = 0;
      clock.advance(86_400_000 + 1_001);
      expect(await tickNow()).toMatchObject({ errors: [], refusedSessions: [{ session: 'broken-4', leases: [], deleted: true }], collectedIdentities: 1 });
      expect(logged).toEqual([
        ['warn', 'an identity row the schema refuses, whose stamp does not parse and that no held lease names, unchanged for longer than a day (the longest lease) and clockSkewMs, was deleted', { key: { component: SESSION_COMPONENT, name: 'broken-4' }, unchangedSince: new Date(now).toISOString() }],
      ]);
      logged.length = 0;
      await tickNow();
      expect(logged, 'told no more').toEqual([]);
    } finally {
      await tables.drop();
    }
  });
});

describe('a timer message for a lease held on a session row the schema refuses', () => {
  it('is handled (logged, nothing written), as the tick leaves that lease alone: before, it failed every receive and ended in the dead-letter queue', async () => {
    const tables = await testTables('broken-session-timer');
    try {
      const c = coordinatorDeps(tables.client, tables.names, { clock: manualClock(Date.now()) });
      const now = Date.now();
      const row = { component: SESSION_COMPONENT, name: 'broken-3', holderIdentity: 'broken-3_1', hostname: 'host-a', leaseDurationSeconds: 'fifteen', acquireTime: now, renewTime: now, revision: 1 };
      await tables.client.send(new PutItemCommand({ TableName: tables.names.identities, Item: marshall(row) }));
      await c.candidates.write(await c.candidates.read('timed', 'a'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: now, createdAt: now - MIN } });
      await c.leases.write(await c.leases.read('timed'), { set: { holderIdentity: 'a', holderInstance: 'a-1', session: 'broken-3', leaseDurationSeconds: 15, acquireTime: now - MIN, renewTime: now - MIN, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' } });
      const before = (await c.leases.read('timed')).item;
      const { d, logged } = tickDeps(c);
      const timer = electionTimer(d);
      for (const body of [{ lease: 'timed', termEnd: now }, { lease: 'timed', electionId: 'e', deadline: now }]) {
        const message: SQSRecord = { messageId: 'm1', receiptHandle: 'm1', body: JSON.stringify(body), attributes: { ApproximateReceiveCount: '1', SentTimestamp: '0', SenderId: 'x', ApproximateFirstReceiveTimestamp: '0' }, messageAttributes: {}, md5OfBody: '', eventSource: 'aws:sqs', eventSourceARN: 'arn:aws:sqs:us-east-1:1:q', awsRegion: 'us-east-1' };
        expect(failures(await timer({ Records: [message] }, lambdaContext('electionTimer')))).toEqual([]);
      }
      expect(logged.map(([level, message, extra]) => [level, message, extra['session']])).toEqual([
        ['warn', 'lease held on a session row that does not match the schema: left alone (unjudged)', 'broken-3'],
        ['warn', 'lease held on a session row that does not match the schema: left alone (unjudged)', 'broken-3'],
      ]);
      expect((await c.leases.read('timed')).item, 'nothing written').toEqual(before);
    } finally {
      await tables.drop();
    }
  });
});
