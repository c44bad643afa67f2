/**
 * The stream and queue handlers as Lambda calls them, fed batches built from real stream records
 * of DynamoDB Local: duplicated, reordered and poisoned. Each must end in the state a clean
 * delivery gives, dead-letter exactly the poison record (with its content) and report it
 * processed — no retry can read it — and change nothing on redelivery.
 */
import { DeleteItemCommand, GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as candidateStream } from '../../functions/candidate-stream.js';
import { makeHandler as coordinatorTick } from '../../functions/coordinator.js';
import { makeHandler as electionTimer } from '../../functions/election-timer.js';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { coordinatorDeps, reconcileAll } from '../../lib/coordinator/reconcile.js';
import { REFUSED_SEEN, rowDigest } from '../../lib/coordinator/refused-session.js';
import type { ConclaveEvent } from '../../lib/events/schemas.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { METRIC } from '../../lib/functions/metrics.js';
import type { PoisonRecord } from '../../lib/functions/dead-letter.js';
import { REPUBLISH_FOR_MS, republishDelayMs, type TermEndMessage, type TimerMessage, type TimerQueueMessage } from '../../lib/functions/timer.js';
import { manualClock } from '../../lib/clock.js';
import { PublishError } from '../../lib/events/publisher.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { nextFencingToken } from '../../lib/schemas/fencing-token.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

let t: TestTables;
const MIN = 60_000;

beforeAll(async () => {
  t = await testTables('handlers');
});
afterAll(async () => {
  await t.drop();
});

function deps() {
  const published: ConclaveEvent[] = [];
  const timers: TimerMessage[] = [];
  const termEnds: TermEndMessage[] = [];
  const deferred: Extract<TimerQueueMessage, { republish: unknown }>[] = [];
  const dead: PoisonRecord[] = [];
  const d: FunctionDeps = {
    coordinator: coordinatorDeps(t.client, t.names, { config: { ackWindowMs: 5_000 } }),
    timer: { schedule: async (m) => void ('republish' in m ? deferred.push(m) : 'electionId' in m ? timers.push(m) : 'termEnd' in m ? termEnds.push(m) : undefined) },
    publish: async (events) => void published.push(...events),
    deadLetter: async (p) => void dead.push(p),
    ...observability('test', 'SILENT'),
  };
  return { d, published, timers, deferred, dead, ids: () => new Set(published.map((e) => e.detail.id)) };
}

/** A timer queue message as Lambda delivers it. */
const message = (id: string, body: string): SQSRecord =>
  ({ messageId: id, receiptHandle: id, body, attributes: {} as SQSRecord['attributes'], messageAttributes: {}, md5OfBody: '', eventSource: 'aws:sqs', eventSourceARN: 'arn:aws:sqs:local:000000000000:timer', awsRegion: 'local' }) as SQSRecord;

/** A copy of `r` that no handler can read: `field` of its new image has the wrong type. */
function poisoned(r: DynamoDBRecord, field: string, seq: string): DynamoDBRecord {
  const copy = structuredClone(r);
  copy.eventID = `poison-${seq}`;
  copy.dynamodb!.SequenceNumber = seq;
  copy.dynamodb!.NewImage![field] = { S: 'not a number' };
  return copy;
}

const failures = (r: unknown) => (r as { batchItemFailures: { itemIdentifier: string }[] }).batchItemFailures.map((f) => f.itemIdentifier);
const seq = (r: DynamoDBRecord) => r.dynamodb!.SequenceNumber!;

describe('stream handlers under duplicated, reordered and poisoned batches', () => {
  const lease = 'batch-job';
  const cands = () => t.client && coordinatorDeps(t.client, t.names).candidates;
  const leases = () => coordinatorDeps(t.client, t.names).leases;

  it('lease stream: a release, twice, after a poison record, before the older grant → one election, one Lease Released, the poison dead-lettered', async () => {
    const now = Date.now();
    // b and c stand, last renewed 10 minutes ago (so an election has to ping them); a holds and releases.
    for (const [name, age] of [['b', 3], ['c', 2]] as const) {
      await cands().write(await cands().read(lease, name), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: now - 10 * MIN, createdAt: now - age * 60 * MIN } });
    }
    await leases().write(await leases().read(lease), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' } });
    const held = await leases().read(lease);
    await leases().write(held, { set: { renewTime: Date.now(), lastHolderIdentity: 'a' }, remove: ['holderIdentity', 'holderInstance'] });

    const [granted, released] = (await streamRecords(t.client, t.names.leases)).filter((r) => JSON.stringify(r.dynamodb!.Keys).includes(lease));
    expect([granted!.eventName, released!.eventName]).toEqual(['INSERT', 'MODIFY']);
    const poison = poisoned(released!, 'fencingToken', '99999999999999999999');

    const { d, published, timers, dead, ids } = deps();
    const handler = leaseStream(d);
    const batch: DynamoDBStreamEvent = { Records: [released!, poison, released!, granted!] };
    expect(failures(await handler(batch, lambdaContext('leaseStream')))).toEqual([]);
    expect(dead).toEqual([expect.objectContaining({ function: 'leaseStream', eventID: poison.eventID, sequenceNumber: seq(poison), record: poison, issues: [expect.objectContaining({ field: 'fencingToken' })] })]);

    const after = (await leases().read(lease)).item!;
    expect(after.holderIdentity).toBeUndefined();
    expect(after.election).toBeDefined();
    // Its deadline timer: scheduled again by the duplicate (at least once, so a crash between the
    // election's write and the timer's send is repaired by the retry); a second firing is harmless.
    expect(new Set(timers.map((m) => m.electionId))).toEqual(new Set([after.election!.id]));
    const b = (await cands().read(lease, 'b')).item!;
    expect(b.pingTime).toBe(after.election!.startedAt);
    // A duplicate publishes nothing again on the instance that published it (elsewhere, the same ids:
    // a consumer dropping repeats sees each event once).
    expect([...ids()].sort()).toEqual([`${granted!.eventID}:leader-elected`, `${released!.eventID}:lease-released`].sort());
    expect(published.filter((e) => e.detailType === 'Lease Released')).toHaveLength(1);

    // The whole batch again (a redelivery): nothing is written, no new election, same ids.
    expect(failures(await handler(batch, lambdaContext('leaseStream')))).toEqual([]);
    expect((await leases().read(lease)).item).toEqual(after);
    expect(ids().size).toBe(2);
  });

  it('candidate stream: acks delivered twice and out of order, with a poison record → elected once, the poison dead-lettered', async () => {
    const before = (await leases().read(lease)).item!;
    const election = before.election!;
    // Both candidates answer the ping (what LeaseCandidate does: renew).
    for (const name of ['c', 'b']) {
      const r = await cands().read(lease, name);
      await cands().write(r, { set: { renewTime: Date.now() } });
    }
    const acks = (await streamRecords(t.client, t.names.candidates)).filter((r) => r.eventName === 'MODIFY' && JSON.stringify(r.dynamodb!.NewImage).includes(lease) && Number(r.dynamodb!.NewImage!['renewTime']!.N) >= election.startedAt);
    expect(acks).toHaveLength(2);
    const joins = (await streamRecords(t.client, t.names.candidates)).filter((r) => r.eventName === 'INSERT');
    const poison = poisoned(acks[0]!, 'renewTime', '88888888888888888888');

    const { d, ids, dead } = deps();
    const handler = candidateStream(d);
    const batch: DynamoDBStreamEvent = { Records: [acks[1]!, poison, acks[0]!, acks[1]!, ...joins.reverse()] };
    expect(failures(await handler(batch, lambdaContext('candidateStream')))).toEqual([]);
    expect(dead.map((p) => [p.function, p.eventID, p.issues.map((i) => i.field)])).toEqual([['candidateStream', poison.eventID, ['renewTime']]]);

    const after = (await leases().read(lease)).item!;
    expect(after.holderIdentity).toBe('b'); // the longest-standing of equal versions
    expect(after.election).toBeUndefined();
    expect(after.fencingToken).toBe(nextFencingToken(before.fencingToken, after.acquireTime!)); // raised once
    expect([...ids()].every((id) => id.endsWith(':candidate-joined'))).toBe(true);

    expect(failures(await handler(batch, lambdaContext('candidateStream')))).toEqual([]);
    expect((await leases().read(lease)).item).toEqual(after);
  });

  it('candidate stream: a row deleted unmarked within the second it turned stale is Candidate Expired (the record’s time is rounded down to the second)', async () => {
    const { d, ids } = deps();
    const second = Math.floor(Date.now() / 1000) * 1000;
    const staleAt = second + 500; // stale from here; deleted at second + 700, stamped `second`
    const l = 'stale-within-the-second';
    await cands().write(await cands().read(l, 'old'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: staleAt - d.coordinator.config.candidateStaleAfterMs, createdAt: staleAt - 2 * d.coordinator.config.candidateStaleAfterMs } });
    // no collectedAt: a collection by a coordinator that does not mark (an older release during an upgrade)
    await t.client.send(new DeleteItemCommand({ TableName: t.names.candidates, Key: marshall({ leaseName: l, name: 'old' }) }));
    const remove = (await streamRecords(t.client, t.names.candidates)).find((r) => r.eventName === 'REMOVE' && r.dynamodb!.Keys!['leaseName']!.S === l)!;
    remove.dynamodb!.ApproximateCreationDateTime = second / 1000; // as DynamoDB stamps a delete at second + 700
    expect(failures(await candidateStream(d)({ Records: [remove] }, lambdaContext('candidateStream')))).toEqual([]);
    // before the fix: nothing, judged stale at `second`, 500 ms before it was
    expect(ids()).toEqual(new Set([`${remove.eventID}:candidate-expired`]));
  });

  it('election timer: a message that is not JSON and one with a missing field fail alone; a duplicate timer changes nothing', async () => {
    const before = (await leases().read(lease)).item!;
    const good = JSON.stringify({ lease, electionId: 'old-election', deadline: Date.now() });
    const event: SQSEvent = { Records: [message('1', good), message('2', 'not json'), message('3', JSON.stringify({ lease })), message('4', good)] };
    const { d } = deps();
    expect(failures(await electionTimer(d)(event, lambdaContext('electionTimer')))).toEqual(['2', '3']);
    expect((await leases().read(lease)).item).toEqual(before);
  });

  it('coordinator: a scheduled event is checked; anything else is a typed error naming the field', async () => {
    const { d } = deps();
    const tick = coordinatorTick(d);
    const r = (await tick({ source: 'aws.events', 'detail-type': 'Scheduled Event', time: new Date().toISOString() } as never, lambdaContext('coordinator'))) as { leases: number };
    expect(r.leases).toBeGreaterThanOrEqual(1);
    await expect(tick({ source: 'aws.events', 'detail-type': 'Scheduled Event' } as never, lambdaContext('coordinator'))).rejects.toThrow(/time/);
  });

  it('every log line of a stream batch names its lease, and a dead-lettered record is logged with its error', async () => {
    const records = (await streamRecords(t.client, t.names.leases)).filter((r) => JSON.stringify(r.dynamodb!.Keys).includes(lease));
    const poison = poisoned(records[1]!, 'fencingToken', '77777777777777777777');
    const lines: string[] = [];
    const [out, err] = [process.stdout.write.bind(process.stdout), process.stderr.write.bind(process.stderr)];
    process.stdout.write = process.stderr.write = ((chunk: string | Uint8Array) => (lines.push(String(chunk)), true)) as typeof process.stdout.write;
    try {
      const { d } = deps();
      const verbose = { ...d, ...observability('test', 'DEBUG') };
      await leaseStream(verbose)({ Records: [...records, poison] }, lambdaContext('leaseStream'));
    } finally {
      process.stdout.write = out;
      process.stderr.write = err;
    }
    const logs = lines.flatMap((l) => l.split('\n')).filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.filter((l) => l['lease'] !== lease)).toEqual([]);
    const failed = logs.filter((l) => l['message'] === 'poison record: sent to the dead-letter destination with its content, reported processed');
    expect(failed).toHaveLength(1);
    expect(failed[0]!['record']).toBe(poison.eventID);
    expect(JSON.stringify(failed[0]!['error'])).toMatch(/fencingToken/);
  });
});

describe('a broken lease (its row does not match the schema)', () => {
  const leases = () => coordinatorDeps(t.client, t.names).leases;
  const cands = () => coordinatorDeps(t.client, t.names).candidates;
  const brick = (name: string) =>
    t.client.send(new PutItemCommand({ TableName: t.names.leases, Item: marshall({ name, holderIdentity: 'x', leaseDurationSeconds: 0, leaseTransitions: 0, fencingToken: 7, revision: 3 }) }));
  const stand = async (lease: string, name: string) => {
    const now = Date.now();
    await cands().write(await cands().read(lease, name), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: now, createdAt: now } });
  };

  it('the tick reconciles the other leases and publishes the broken_leases gauge; the broken row is left as it is', async () => {
    await stand('bricked-tick', 'x');
    await stand('fine-tick', 'y');
    await brick('bricked-tick');
    const { d } = deps();
    const added: [string, number][] = [];
    const add = d.metrics.addMetric.bind(d.metrics);
    d.metrics.addMetric = (name, unit, value) => (added.push([name, value]), add(name, unit, value));
    const r = (await coordinatorTick(d)({ source: 'aws.events', 'detail-type': 'Scheduled Event', time: new Date().toISOString() } as never, lambdaContext('coordinator'))) as { errors: unknown[]; broken: { lease: string; fields: string[] }[] };
    expect(r.errors).toEqual([]);
    expect(r.broken).toEqual([{ lease: 'bricked-tick', fields: ['leaseDurationSeconds'], error: expect.stringMatching(/leaseDurationSeconds/) }]);
    expect(added).toContainEqual([METRIC.brokenLeases, 1]);
    // no row: the tick created it with an election waiting for the lease stream, which then elects
    expect((await leases().read('fine-tick')).item?.election?.awaitsStream).toBe(true);
    const created = (await streamRecords(t.client, t.names.leases)).filter((x) => x.eventName === 'INSERT' && x.dynamodb!.Keys!['name']!.S === 'fine-tick');
    expect(failures(await leaseStream(d)({ Records: created }, lambdaContext('leaseStream')))).toEqual([]);
    expect((await leases().read('fine-tick')).item?.holderIdentity).toBe('y');
    const raw = await t.client.send(new GetItemCommand({ TableName: t.names.leases, Key: marshall({ name: 'bricked-tick' }) }));
    expect(raw.Item?.['revision']).toEqual({ N: '3' });
  });

  it('a repair (the broken row deleted, or rewritten valid) is no poison record: nothing is dead-lettered, the rewritten lease is reconciled', async () => {
    await stand('bricked-deleted', 'x');
    await stand('bricked-fixed', 'y');
    await brick('bricked-deleted');
    await brick('bricked-fixed');
    await t.client.send(new DeleteItemCommand({ TableName: t.names.leases, Key: marshall({ name: 'bricked-deleted' }) }));
    await t.client.send(new PutItemCommand({ TableName: t.names.leases, Item: marshall({ name: 'bricked-fixed', leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 7, revision: 4 }) }));
    const repairs = (await streamRecords(t.client, t.names.leases)).filter((r) => ['bricked-deleted', 'bricked-fixed'].includes(r.dynamodb!.Keys!['name']!.S!) && r.eventName !== 'INSERT');
    expect(repairs.map((r) => r.eventName).sort()).toEqual(['MODIFY', 'REMOVE']);
    const { d, dead, published } = deps();
    expect(failures(await leaseStream(d)({ Records: repairs }, lambdaContext('leaseStream')))).toEqual([]);
    expect(dead).toEqual([]);
    expect(published).toEqual([]); // what changed is unknown: the old image is unreadable
    const fixed = (await leases().read('bricked-fixed')).item!;
    expect(fixed.revision).toBeGreaterThan(4); // reconciled: y is pinged or elected
  });

  it('a timer message and a stream record for a broken lease are handled (logged), not failed: they would fail every retry', async () => {
    await stand('bricked-timer', 'x');
    await brick('bricked-timer');
    const { d } = deps();
    const timer = message('m1', JSON.stringify({ lease: 'bricked-timer', electionId: 'e', deadline: Date.now() }));
    expect(failures(await electionTimer(d)({ Records: [timer] }, lambdaContext('electionTimer')))).toEqual([]);
    // a candidate joining the broken lease: its record is sound, the lease it names is not
    const join = (await streamRecords(t.client, t.names.candidates)).filter((r) => r.eventName === 'INSERT' && r.dynamodb!.Keys!['leaseName']!.S === 'bricked-timer');
    expect(join).toHaveLength(1);
    expect(failures(await candidateStream(d)({ Records: join }, lambdaContext('candidateStream')))).toEqual([]);
  });
});

/** One scheduled tick, as Lambda calls it: what it warned of (it must fail nowhere). */
async function tickWarnings(): Promise<[string, Record<string, unknown>][]> {
  const { d } = deps();
  const warned: [string, Record<string, unknown>][] = [];
  const warn = d.logger.warn.bind(d.logger);
  d.logger.warn = ((message: string, extra: Record<string, unknown>) => (warned.push([message, extra]), warn(message, extra))) as typeof d.logger.warn;
  const r = (await coordinatorTick(d)({ source: 'aws.events', 'detail-type': 'Scheduled Event', time: new Date().toISOString() } as never, lambdaContext('coordinator'))) as { errors: unknown[] };
  expect(r.errors).toEqual([]);
  return warned;
}

describe('a candidate row the schema refuses (a foreign or older writer\'s)', () => {
  it('the tick reports it once, naming the row and the fix; collected once stale by its renewTime', async () => {
    const now = Date.now();
    const row = (name: string, renewTime: unknown) => ({ leaseName: 'refused-rows', name, binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], createdAt: now, priority: 'high', revision: 1, renewTime });
    await t.client.send(new PutItemCommand({ TableName: t.names.candidates, Item: marshall(row('fresh', now)) }));
    await t.client.send(new PutItemCommand({ TableName: t.names.candidates, Item: marshall(row('old', now - 31 * MIN)) }));
    await t.client.send(new PutItemCommand({ TableName: t.names.candidates, Item: marshall(row('unstamped', 'yesterday')) }));
    const warned = await tickWarnings();
    const about = (name: string) => warned.filter(([, extra]) => JSON.stringify(extra).includes(`"${name}"`) && JSON.stringify(extra).includes('refused-rows'));
    // before the fix: twice (the tick's report and the reconcile's), saying only "left alone"
    expect(about('fresh')).toEqual([
      ['candidate row does not match its schema: it takes no part in elections', {
        key: { leaseName: 'refused-rows', name: 'fresh' },
        error: expect.stringMatching(/priority/),
        fix: expect.stringMatching(/^rewrite it valid, or delete it \(aws dynamodb delete-item --table-name \S+ --key '\{"leaseName":\{"S":"refused-rows"\},"name":\{"S":"fresh"\}\}'\); left as it is, it is collected once its renewTime, and its session's if it names one, is older than candidateStaleAfterMs \(30 min\), read as epoch milliseconds \(one in seconds never is\)$/),
      }],
    ]);
    // (before: "… so it is never collected", every tick for ever; now timed by the tick: test/coordinator/reconcile.test.ts)
    expect(about('unstamped').map(([, extra]) => extra['fix'])).toEqual([expect.stringMatching(/: its renewTime or session does not parse, so it is not collected by them; left unchanged, the tick deletes it itself after \S+ \(1801 s after it first saw it so: candidateStaleAfterMs and clockSkewMs; it guards no term and takes no part in elections\)$/)]);
    expect(about('old')).toEqual([]); // stale: collected, not reported
    expect((await coordinatorDeps(t.client, t.names).candidates.list('refused-rows')).invalid.map((i) => i.key['name'])).toEqual(['fresh', 'unstamped']);
  });
  it("the tick's own refusedSeen on such a row is no poison record for the candidate stream: only the foreign writer's writes are dead-lettered, a change hidden behind a refusedSeen too", async () => {
    const own = await testTables('refused-seen');
    const clock = manualClock(Date.UTC(2026, 2, 1));
    const tick = coordinatorDeps(own.client, own.names, { clock });
    try {
      const key = { leaseName: 'stamped', name: 'foreign' };
      const row = { ...key, binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], createdAt: clock.now(), renewTime: 'yesterday', revision: 1 };
      const stored = async () => unmarshall((await own.client.send(new GetItemCommand({ TableName: own.names.candidates, Key: marshall(key), ConsistentRead: true }))).Item!);
      await own.client.send(new PutItemCommand({ TableName: own.names.candidates, Item: marshall(row) })); // foreign: poison
      expect((await reconcileAll(tick)).refusedCandidates).toEqual([expect.objectContaining({ key, deleted: false })]); // the tick's stamp
      await own.client.send(new PutItemCommand({ TableName: own.names.candidates, Item: marshall({ ...row, revision: 2 }) })); // foreign, the stamp gone: poison
      clock.advance(1);
      await reconcileAll(tick); // the tick's stamp again
      // a foreign writer's change with a refusedSeen of the row as it now is: a change all the same (poison)
      const hidden = { ...(await stored()), revision: 3 };
      await own.client.send(new PutItemCommand({ TableName: own.names.candidates, Item: marshall({ ...hidden, [REFUSED_SEEN]: { at: clock.now(), digest: rowDigest(hidden) } }) }));
      // a foreign writer's refusedSeen that is not the tick's (its digest is of another row): poison
      await own.client.send(new UpdateItemCommand({ TableName: own.names.candidates, Key: marshall(key), UpdateExpression: 'SET #s = :s', ExpressionAttributeNames: { '#s': REFUSED_SEEN }, ExpressionAttributeValues: marshall({ ':s': { at: 1, digest: '0'.repeat(64) } }) }));
      clock.advance(1);
      await reconcileAll(tick); // the tick's stamp again
      clock.advance(tick.config.candidateStaleAfterMs + tick.config.clockSkewMs + 1);
      expect((await reconcileAll(tick)).collectedCandidates).toEqual([key]); // the tick's delete
      const records = await streamRecords(own.client, own.names.candidates);
      expect(records.map((r) => r.eventName)).toEqual(['INSERT', 'MODIFY', 'MODIFY', 'MODIFY', 'MODIFY', 'MODIFY', 'MODIFY', 'REMOVE']);
      const { d, dead } = deps();
      d.coordinator = { ...d.coordinator, ...coordinatorDeps(own.client, own.names, { clock }) };
      const handled: [string, Record<string, unknown>][] = [];
      const info = d.logger.info.bind(d.logger);
      d.logger.info = ((message: string, extra: Record<string, unknown>) => (handled.push([message, extra]), info(message, extra))) as typeof d.logger.info;
      expect(failures(await candidateStream(d)({ Records: records }, lambdaContext('candidateStream')))).toEqual([]);
      // before the fix: the tick's three stamps were dead-lettered too (7 records: all but the delete)
      expect(dead.map((p) => p.eventID)).toEqual([0, 2, 4, 5].map((i) => records[i]!.eventID));
      expect(handled.filter(([m]) => m.startsWith("the coordinator's refusedSeen")).map(([, extra]) => extra['key'])).toEqual([key, key, key]);
    } finally {
      await own.drop();
    }
  });
});

describe("an identity row the schema refuses (a foreign or older writer's)", () => {
  it('the tick reports it once, naming the row and the fix; collected once expired by its stamp', async () => {
    const now = Date.now();
    const row = (name: string, renewTime: unknown) => ({ component: 'refused-identities', name, holderIdentity: `${name}_1`, hostname: 'h', acquireTime: 'then', leaseDurationSeconds: 60, revision: 1, renewTime });
    await t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall(row('fresh', now)) }));
    await t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall(row('old', now - 60 * MIN)) }));
    await t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall(row('unstamped', 'yesterday')) }));
    const warned = await tickWarnings();
    const about = (name: string) => warned.filter(([, extra]) => JSON.stringify(extra).includes(`"${name}"`) && JSON.stringify(extra).includes('refused-identities'));
    // before the fix: "left alone", with no fix, and the expired one too, every tick
    expect(about('fresh')).toEqual([
      ['identity row does not match its schema: a term held on it is judged by no one, and it vouches for no candidate', {
        key: { component: 'refused-identities', name: 'fresh' },
        error: expect.stringMatching(/acquireTime/),
        fix: expect.stringMatching(/^rewrite it valid, or delete it \(aws dynamodb delete-item --table-name \S+ --key '\{"component":\{"S":"refused-identities"\},"name":\{"S":"fresh"\}\}'\); left as it is, it is collected once expired by its renewTime and leaseDurationSeconds, plus identityGcGraceMs and the larger of clockSkewMs and a row stamp's own error \(1 s\), while no held lease or live candidate names it \(a renewTime in epoch seconds never is\)$/),
      }],
    ]);
    // (before: "… so it is never collected", every tick for ever; now timed: test/functions/broken-session.test.ts)
    expect(about('unstamped').map(([, extra]) => extra['fix'])).toEqual([expect.stringMatching(/: its renewTime or leaseDurationSeconds does not parse, so it is not collected by them; no held lease names it, so left unchanged, the tick deletes it itself after \S+Z \(by when anyone who renewed it has stopped\)$/)]);
    expect(about('old')).toEqual([]); // expired: collected, not reported
    expect((await coordinatorDeps(t.client, t.names).identities.query('refused-identities')).invalid.map((i) => i.key['name'])).toEqual(['fresh', 'unstamped']);
  });
});

describe('EventBridge failing: the election goes on, the events wait on the timer queue', () => {
  const sqsMessage = (id: string, body: unknown) => message(id, JSON.stringify(body));
  const unavailable = (events: ConclaveEvent[]) => new PublishError(events.map((event) => ({ event, errorCode: 'ServiceUnavailable', errorMessage: 'EventBridge is unavailable' })), 0);

  it('a candidate joins while PutEvents fails: its election opened, the record handled, Candidate Joined deferred with its id; republished later, deferred again, or left to the redrive after a day', async () => {
    const lease = 'during-outage';
    const now = Date.now();
    const c = coordinatorDeps(t.client, t.names).candidates;
    await c.write(await c.read(lease, 'solo'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: now, createdAt: now } });
    const join = (await streamRecords(t.client, t.names.candidates)).filter((r) => r.eventName === 'INSERT' && r.dynamodb!.Keys!['leaseName']!.S === lease);

    const { d, deferred, published } = deps();
    const clock = manualClock(now);
    d.coordinator = { ...d.coordinator, clock };
    const working = d.publish;
    d.publish = async (events) => {
      throw unavailable(events);
    };
    expect(failures(await candidateStream(d)({ Records: join }, lambdaContext('candidateStream')))).toEqual([]);
    // no row: created with an election that waits for the lease stream to see it
    expect((await coordinatorDeps(t.client, t.names).leases.read(lease)).item).toMatchObject({ election: { awaitsStream: true } });
    expect(deferred).toEqual([{ republish: [expect.objectContaining({ detailType: 'Candidate Joined', detail: expect.objectContaining({ id: `${join[0]!.eventID}:candidate-joined` }) })], since: now, attempt: 1 }]);
    const first = deferred[0]!;

    // still failing: back on the queue, attempt 2, the same event
    clock.advance(1_000);
    expect(failures(await electionTimer(d)({ Records: [sqsMessage('m1', first)] }, lambdaContext('electionTimer')))).toEqual([]);
    expect(deferred[1]).toEqual({ ...first, attempt: 2 });
    expect(republishDelayMs(2)).toBe(2_000);

    // EventBridge back: published with the id it was derived with
    d.publish = working;
    expect(failures(await electionTimer(d)({ Records: [sqsMessage('m2', deferred[1])] }, lambdaContext('electionTimer')))).toEqual([]);
    expect(published.map((e) => e.detail.id)).toEqual([`${join[0]!.eventID}:candidate-joined`]);
    expect(published[0]).toEqual(first.republish[0]);

    // failing for a whole day: the message fails, so SQS's redrive moves it to the dead-letter queue (with the events)
    d.publish = async (events) => {
      throw unavailable(events);
    };
    clock.advance(REPUBLISH_FOR_MS);
    await expect(electionTimer(d)({ Records: [sqsMessage('m3', first)] }, lambdaContext('electionTimer'))).rejects.toMatchObject({ name: 'FullBatchFailureError', recordErrors: [expect.objectContaining({ name: 'PublishError' })] });
    expect(deferred).toHaveLength(2);
  });

  it("an event deferred by a newer release, republished by an older one (a deploy or rollback between): a field it does not know is kept, not stripped under the same id", async () => {
    const { d, published } = deps();
    const detail = { id: 'y:leader-elected', lease: 'l', time: new Date().toISOString(), holder: 'a', fencingToken: 1, leaseTransitions: 0, holderZone: 'eu-west-1a' };
    const m = { republish: [{ detailType: 'Leader Elected', detail }], since: Date.now(), attempt: 1 };
    expect(failures(await electionTimer(d)({ Records: [sqsMessage('newer', m)] }, lambdaContext('electionTimer')))).toEqual([]);
    // before: holderZone dropped
    expect(published).toEqual([expect.objectContaining({ detailType: 'Leader Elected', detail })]);
  });

  it('a republish message with a bad event is refused naming the field (the queue redrives it)', async () => {
    const { d } = deps();
    const bad = { republish: [{ detailType: 'Leader Elected', detail: { id: 'x:leader-elected', lease: 'l', time: 'yesterday', holder: 'a', fencingToken: 1, leaseTransitions: 0 } }], since: Date.now(), attempt: 1 };
    await expect(electionTimer(d)({ Records: [sqsMessage('bad', bad)] }, lambdaContext('electionTimer'))).rejects.toMatchObject({
      name: 'FullBatchFailureError',
      recordErrors: [expect.objectContaining({ name: 'ValidationError', message: expect.stringMatching(/republish\[0\]\.detail\.time: /) })],
    });
  });
});
