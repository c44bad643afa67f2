/**
 * An operator deletes a lease row while it is held (docs/safety.md, "A deleted row"; found by seeds
 * 1448349301 and 1368225001: CHANGELOG.md, "Seeds 1448349301 and 1368225001"). The holder hears of it only at its next renewal — the session mark the lease
 * stream writes, or its lease renewal finding the row gone — up to its renew deadline away, so the
 * election that follows closes no earlier than the deleted term's lease duration after the stream
 * saw the delete (Election.notBefore): the candidates' acks, the tick and an early timer elect
 * nobody before that, the election timer does at it. On real stream records of DynamoDB Local,
 * through the lease stream's handler; time is a manual clock.
 */
import { DeleteItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { unmarkedHoldMs } from '../../lib/election/decide.js';
import { effectiveLease } from '../../lib/election/vacancy.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { onCandidateChange, onMarkEnded, onTick, onTimer, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { parseTimerQueueMessage, timerQueueBody, type MarkEndedMessage, type TimerMessage, type TimerQueueMessage } from '../../lib/functions/timer.js';
import { EndedTermsFullError } from '../../lib/stores/errors.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { sessionKey } from '../../lib/schemas/identity.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => {
  t = await testTables('operator-delete');
});
afterAll(async () => {
  await t.drop();
});

const DURATION_S = 15;

function setup(start: number) {
  const clock = manualClock(start);
  const timers: TimerMessage[] = [];
  const d: FunctionDeps = {
    coordinator: coordinatorDeps(t.client, t.names, { clock, config: { ackWindowMs: 5_000 } }),
    timer: { schedule: async (m) => void ('electionId' in m ? timers.push(m) : undefined) },
    publish: async () => undefined,
    deadLetter: async () => undefined,
    ...observability('test', 'SILENT'),
  };
  return { clock, d, timers };
}

/**
 * Candidates `names` renewed at `at`; the lease held by the first, its term on the session
 * `a-session` (an older SDK's row, naming no process: it holds the term). The session row's
 * duration outlasts each test, as a process renewing it on would: a row collected once expired
 * would leave the term on no session, judged by its own stamp (deleteHoldMs).
 */
async function stand(d: FunctionDeps, lease: string, names: string[], at: number) {
  const c = d.coordinator;
  for (const name of names) {
    await c.candidates.write(await c.candidates.read(lease, name), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: at, createdAt: at - 60_000, identity: `${name}-1` } });
  }
  const key = sessionKey('a-session');
  // a fresh row for each test, without the marks an earlier one left
  const was = await c.identities.read(key.component, key.name);
  if (was.item) await c.identities.delete(was);
  await c.identities.write(await c.identities.read(key.component, key.name), { set: { holderIdentity: 'a-session', hostname: 'h', leaseDurationSeconds: 3_600, acquireTime: at, renewTime: at } });
  const held = await c.leases.write(await c.leases.read(lease), {
    set: { holderIdentity: names[0]!, holderInstance: `${names[0]}-1`, leaseDurationSeconds: DURATION_S, acquireTime: at, renewTime: at, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator', session: 'a-session' },
  });
  return { key, held };
}

/** The lease's REMOVE record, as the lease stream delivers it. */
async function removal(lease: string): Promise<DynamoDBRecord> {
  return recordOf(lease, 'REMOVE');
}

/** The lease's one stream record of kind `eventName` so far. */
async function recordOf(lease: string, eventName: 'INSERT' | 'REMOVE'): Promise<DynamoDBRecord> {
  const r = (await streamRecords(t.client, t.names.leases)).filter((x) => x.dynamodb!.Keys!['name']!.S === lease && x.eventName === eventName);
  expect(r).toHaveLength(eventName === 'INSERT' ? 2 : 1); // INSERT: the row stood for, then the one the tick created
  return r.at(-1)!;
}

/**
 * The lease stream reaches the INSERT of the row the delete's handling created (its next record of
 * the lease): that row's election waited for it (awaitsStream), as any row created on a missing one,
 * since the handled delete may not be the latest (a later delete the stream has not reached).
 */
async function seeCreatedRow(d: FunctionDeps, lease: string): Promise<void> {
  expect((await d.coordinator.leases.read(lease)).item!.election!.awaitsStream).toBe(true);
  const created = (await streamRecords(t.client, t.names.leases)).filter((x) => x.dynamodb!.Keys!['name']!.S === lease && x.eventName === 'INSERT').at(-1)!;
  expect(await leaseStream(d)({ Records: [created] } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });
  expect((await d.coordinator.leases.read(lease)).item!.election!.awaitsStream).toBeUndefined();
}

const deleteRow = (lease: string) => t.client.send(new DeleteItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }) }));

describe("an operator's delete of a held lease row", () => {
  it('marks the term ended, and elects the next leader no earlier than the deleted term could still be acted on: not at the acks, the tick or an early timer; at the election timer', async () => {
    const start = Date.now();
    const { clock, d, timers } = setup(start);
    const lease = 'deleted-held';
    const { key } = await stand(d, lease, ['a', 'b'], start);
    await deleteRow(lease);
    const record = await removal(lease);

    clock.set(start + 49_000); // the functions were down: the record is processed late
    const seenAt = clock.now();
    expect(await leaseStream(d)({ Records: [record] } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });
    expect((await d.coordinator.identities.read(key.component, key.name)).item?.endedTerms).toEqual({ [lease]: 1 });
    const opened = (await d.coordinator.leases.read(lease)).item!;
    expect(opened.holderIdentity).toBeUndefined();
    expect(opened.election).toMatchObject({ startedAt: seenAt, notBefore: seenAt + DURATION_S * 1000, deadline: seenAt + DURATION_S * 1000, departed: 'a' });
    // the hold written before the mark (long enough without it), then cut to a lease duration once the mark is written: its timer too
    expect(timers.map((m) => m.deadline)).toEqual([seenAt + unmarkedHoldMs(DURATION_S), seenAt + DURATION_S * 1000]);
    // both were last renewed 49 s ago: pinged
    for (const name of ['a', 'b']) expect((await d.coordinator.candidates.read(lease, name)).item!.pingTime).toBe(seenAt);
    // the stream's next record: the created row's, which it waited for
    await seeCreatedRow(d, lease);

    // both answer at once: the candidate stream's reconcile elects nobody yet
    clock.advance(200);
    for (const name of ['b', 'a']) {
      const r = await d.coordinator.candidates.read(lease, name);
      const old = r.item!;
      const neu = await d.coordinator.candidates.write(r, { set: { renewTime: clock.now(), ackedPingTime: old.pingTime! } });
      expect((await onCandidateChange(d, { eventID: `ack-${name}`, eventName: 'MODIFY', at: clock.now(), old, new: neu }))?.decision.kind).toBe('awaitAcks');
    }
    // nor the tick, nor a timer early (a redelivered or early message)
    clock.set(seenAt + DURATION_S * 1000 - 1);
    expect((await onTick(d)).outcomes.find((o) => o.lease === lease)?.decision.kind).toBe('awaitAcks');
    expect((await onTimer(d, { lease, electionId: opened.election!.id, deadline: opened.election!.deadline }))?.decision.kind).toBe('awaitAcks');
    expect((await d.coordinator.leases.read(lease)).item!.holderIdentity).toBeUndefined();

    // the same record delivered again: nothing new is opened
    const again = (await d.coordinator.leases.read(lease)).item!;
    expect(await leaseStream(d)({ Records: [record] } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });
    expect((await d.coordinator.leases.read(lease)).item).toEqual(again);

    // the timer, at the deadline: elected
    clock.set(seenAt + DURATION_S * 1000);
    const done = await onTimer(d, { lease, electionId: opened.election!.id, deadline: opened.election!.deadline });
    expect(done?.decision).toMatchObject({ kind: 'elect', acked: ['a', 'b'] });
    expect((await d.coordinator.leases.read(lease)).item).toMatchObject({ holderIdentity: expect.any(String), fencingToken: expect.any(Number) });
    expect((await d.coordinator.leases.read(lease)).item!.election).toBeUndefined();
  });

  it('the mark on the session fails (the record retried): the next election is already held, long enough without the mark, so the tick elects nobody meanwhile; the retry marks and cuts the hold (seed 4301967)', async () => {
    const start = Date.now();
    const { clock, d } = setup(start);
    const lease = 'deleted-unmarked';
    const { key } = await stand(d, lease, ['a', 'b'], start);
    await deleteRow(lease);
    const record = await removal(lease);

    clock.set(start + 20_000);
    const seenAt = clock.now();
    const identities = d.coordinator.identities;
    const mark = identities.markTermEnded.bind(identities);
    // the mark's write times out (in the seed it landed 7.4 s later; the function's try had failed)
    identities.markTermEnded = async () => {
      throw Object.assign(new Error('socket timed out'), { name: 'TimeoutError' });
    };
    const first = await leaseStream(d)({ Records: [record] } as DynamoDBStreamEvent, lambdaContext('leaseStream')).catch((e: unknown) => e);
    expect(first).toMatchObject({ name: 'FullBatchFailureError' }); // the record fails: Lambda retries it
    expect((await identities.read(key.component, key.name)).item?.endedTerms).toBeUndefined();
    const held = (await d.coordinator.leases.read(lease)).item!;
    expect(held.holderIdentity).toBeUndefined();
    expect(held.election).toMatchObject({ startedAt: seenAt, notBefore: seenAt + unmarkedHoldMs(DURATION_S), departed: 'a' });
    // a lease duration and more after the delete was seen, the holder's session renewing on, the tick (which elected at once before) elects nobody
    clock.set(seenAt + 2 * DURATION_S * 1000);
    await identities.write(await identities.read(key.component, key.name), { set: { renewTime: clock.now() } });
    expect((await onTick(d)).outcomes.find((o) => o.lease === lease)?.decision.kind).toBe('awaitAcks');
    expect((await d.coordinator.leases.read(lease)).item!.holderIdentity).toBeUndefined();

    // the record retried: marked now, and the hold cut to a lease duration from the mark
    identities.markTermEnded = mark;
    const retriedAt = clock.now();
    expect(await leaseStream(d)({ Records: [record] } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });
    expect((await identities.read(key.component, key.name)).item?.endedTerms).toEqual({ [lease]: 1 });
    const cut = (await d.coordinator.leases.read(lease)).item!.election!;
    expect(cut).toMatchObject({ notBefore: retriedAt + DURATION_S * 1000, deadline: retriedAt + DURATION_S * 1000 });
    await seeCreatedRow(d, lease);
    clock.set(retriedAt + DURATION_S * 1000);
    expect((await onTimer(d, { lease, electionId: cut.id, deadline: cut.deadline }))?.decision.kind).not.toBe('awaitAcks');
    await identities.delete(await identities.read(key.component, key.name)); // the session row the next test stands on starts without marks
  });

  it('a held row an operator wrote malformed, then deleted: its term is still marked ended and the next election held for its lease duration (seed 5068)', async () => {
    const start = Date.now();
    const { clock, d, timers } = setup(start);
    const lease = 'deleted-broken';
    const { key } = await stand(d, lease, ['a', 'b'], start);
    // the schema refuses the row from here on (as the simulator's malformed-row fault writes it)
    await t.client.send(new UpdateItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }), UpdateExpression: 'SET leaseTransitions = :bad', ExpressionAttributeValues: marshall({ ':bad': '0 transitions' }) }));
    await deleteRow(lease);
    const record = await removal(lease);

    clock.set(start + 5_000);
    const seenAt = clock.now();
    expect(await leaseStream(d)({ Records: [record] } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });
    expect((await d.coordinator.identities.read(key.component, key.name)).item?.endedTerms).toEqual({ [lease]: 1 });
    const opened = (await d.coordinator.leases.read(lease)).item!;
    expect(opened.holderIdentity).toBeUndefined();
    expect(opened.election).toMatchObject({ notBefore: seenAt + DURATION_S * 1000, departed: 'a' });
    // the hold written before the mark (long enough without it), then cut to a lease duration once the mark is written: its timer too
    expect(timers.map((m) => m.deadline)).toEqual([seenAt + unmarkedHoldMs(DURATION_S), seenAt + DURATION_S * 1000]);
    // the tick before then elects nobody
    clock.set(seenAt + DURATION_S * 1000 - 1);
    expect((await onTick(d)).outcomes.find((o) => o.lease === lease)?.decision.kind).toBe('awaitAcks');
  });

  it('with every candidate fresh, nobody is pinged, and still nobody is elected before the lease duration (seed 1368225001: the functions up)', async () => {
    const start = Date.now();
    const { clock, d } = setup(start);
    const lease = 'deleted-fresh';
    await stand(d, lease, ['a', 'b'], start);
    await deleteRow(lease);
    const record = await removal(lease);
    clock.advance(300);
    const seenAt = clock.now();
    await leaseStream(d)({ Records: [record] } as DynamoDBStreamEvent, lambdaContext('leaseStream'));
    const opened = (await d.coordinator.leases.read(lease)).item!;
    expect(opened.holderIdentity).toBeUndefined();
    expect(opened.election).toMatchObject({ notBefore: seenAt + DURATION_S * 1000 });
    for (const name of ['a', 'b']) expect((await d.coordinator.candidates.read(lease, name)).item!.pingTime).toBeUndefined();
    await seeCreatedRow(d, lease);
    clock.set(seenAt + 5_000); // an ack window later: everyone counts as acked, the hold still stands
    expect((await onTimer(d, { lease, electionId: opened.election!.id, deadline: seenAt + 5_000 }))?.decision.kind).toBe('awaitAcks');
    clock.set(seenAt + DURATION_S * 1000);
    expect((await onTimer(d, { lease, electionId: opened.election!.id, deadline: opened.election!.deadline }))?.decision.kind).toBe('elect');
  });

  it("the timer of an election that was open when the row was deleted creates nothing (seed 1368225001): the stream's record opens the held election", async () => {
    const start = Date.now();
    const { clock, d } = setup(start);
    const lease = 'deleted-in-reelection';
    const { held } = await stand(d, lease, ['a', 'b'], start);
    // a re-election open on the held row (a liveness check), its timer queued
    const election = { id: `${lease}#9`, startedAt: start, deadline: start + 5_000, strategy: OLDEST_EMULATION_VERSION, holder: 'a' };
    await d.coordinator.leases.write(await d.coordinator.leases.read(lease), { set: { election } });
    expect(held.holderIdentity).toBe('a');
    await deleteRow(lease);
    clock.set(start + 5_000); // the timer fires before the stream has seen the delete
    expect(await onTimer(d, { lease, electionId: election.id, deadline: election.deadline })).toBeUndefined();
    expect((await d.coordinator.leases.read(lease)).item).toBeUndefined();
    clock.advance(100);
    await leaseStream(d)({ Records: [await removal(lease)] } as DynamoDBStreamEvent, lambdaContext('leaseStream'));
    expect((await d.coordinator.leases.read(lease)).item).toMatchObject({ election: { notBefore: clock.now() + DURATION_S * 1000 } });
  });

  it('the tick reached the missing row first (after an outage) and opened an election: the REMOVE, seen later, holds it for the deleted term', async () => {
    const start = Date.now();
    const { clock, d, timers } = setup(start);
    const lease = 'deleted-tick-first';
    await stand(d, lease, ['a', 'b'], start);
    await deleteRow(lease);
    clock.set(start + 60_000); // both last renewed a minute ago: the tick pings them and opens an election
    expect((await onTick(d)).outcomes.find((o) => o.lease === lease)?.decision.kind).toBe('openElection');
    const opened = (await d.coordinator.leases.read(lease)).item!.election!;
    expect(opened.notBefore).toBeUndefined();
    clock.advance(1_000);
    await leaseStream(d)({ Records: [await removal(lease)] } as DynamoDBStreamEvent, lambdaContext('leaseStream'));
    const held = (await d.coordinator.leases.read(lease)).item!;
    expect(held.holderIdentity).toBeUndefined();
    // the deleted term's holder named departed: the hold is for its term (a later delete's, reached before the row's INSERT, pushes it out)
    expect(held.election).toEqual({ ...opened, notBefore: clock.now() + DURATION_S * 1000, deadline: clock.now() + DURATION_S * 1000, departed: 'a' });
    expect(timers.at(-1)).toEqual({ lease, electionId: opened.id, deadline: clock.now() + DURATION_S * 1000 });
    // both answer at its old deadline: still nobody
    clock.set(opened.deadline);
    for (const name of ['a', 'b']) {
      const r = await d.coordinator.candidates.read(lease, name);
      await d.coordinator.candidates.write(r, { set: { renewTime: clock.now(), ackedPingTime: r.item!.pingTime! } });
    }
    expect((await onTimer(d, { lease, electionId: opened.id, deadline: opened.deadline }))?.decision.kind).toBe('awaitAcks');
    clock.set(held.election!.deadline);
    // the tick's row waits for the lease stream to see it (after the REMOVE, in the stream's order)
    expect(opened.awaitsStream).toBe(true);
    expect((await onTimer(d, { lease, electionId: opened.id, deadline: held.election!.deadline }))?.decision.kind).toBe('awaitAcks');
    expect((await leaseStream(d)({ Records: [await recordOf(lease, 'INSERT')] } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).batchItemFailures).toEqual([]);
    expect((await d.coordinator.leases.read(lease)).item!.holderIdentity).toBe('a');
  });

  it('the tick created the missing row and every candidate answered before the lease stream reached the REMOVE (an outage): nobody is elected before the stream has seen the delete (seed 5105826: 469 ms of two leaders)', async () => {
    const start = Date.now();
    const { clock, d } = setup(start);
    const lease = 'deleted-stream-behind';
    await stand(d, lease, ['a', 'b'], start);
    await deleteRow(lease);
    clock.set(start + 60_000);
    expect((await onTick(d)).outcomes.find((o) => o.lease === lease)?.decision.kind).toBe('openElection');
    const opened = (await d.coordinator.leases.read(lease)).item!.election!;
    expect(opened.awaitsStream).toBe(true);
    for (const name of ['a', 'b']) {
      const r = await d.coordinator.candidates.read(lease, name);
      await d.coordinator.candidates.write(r, { set: { renewTime: clock.now(), ackedPingTime: r.item!.pingTime! } });
    }
    // the timer, the tick and the candidate stream: each would have elected at once (before the fix: the deleted term's holder led on)
    clock.set(opened.deadline);
    expect((await onTimer(d, { lease, electionId: opened.id, deadline: opened.deadline }))?.decision.kind).toBe('awaitAcks');
    expect((await onTick(d)).outcomes.find((o) => o.lease === lease)?.decision.kind).toBe('awaitAcks');
    expect((await d.coordinator.leases.read(lease)).item!.holderIdentity).toBeUndefined();
    // the stream, in order: the REMOVE (the term marked ended, the election held for it), then the tick's INSERT
    await leaseStream(d)({ Records: [await removal(lease), await recordOf(lease, 'INSERT')] } as DynamoDBStreamEvent, lambdaContext('leaseStream'));
    const held = (await d.coordinator.leases.read(lease)).item!;
    expect(held.holderIdentity).toBeUndefined();
    expect(held.election).toMatchObject({ id: opened.id, notBefore: clock.now() + DURATION_S * 1000 });
    expect(held.election!.awaitsStream).toBeUndefined();
    clock.set(held.election!.notBefore!);
    expect((await onTimer(d, { lease, electionId: opened.id, deadline: held.election!.deadline }))?.decision.kind).toBe('elect');
  });

  it("the lease stream handles a record written before the delete (the holder's own take) after the row is gone: it opens an election that waits for the stream, not one that elects at once; the REMOVE then holds it (seed 5704226: 1.8 s of two leaders, forgiven as an operator's)", async () => {
    const start = Date.now();
    const { clock, d } = setup(start);
    const lease = 'deleted-record-before';
    const { held: stood } = await stand(d, lease, ['a', 'b'], start); // every candidate fresh: an election on the missing row would close at once
    // b takes the lease itself (as a successor does), on a's session row for the test's sake: a record the stream reconciles on
    await d.coordinator.leases.write(LeaseStore.readOf(lease, stood), { set: { holderIdentity: 'b', holderInstance: 'b-1', fencingToken: 2, electedBy: 'successor' } });
    await deleteRow(lease);
    const records = (await streamRecords(t.client, t.names.leases)).filter((x) => x.dynamodb!.Keys!['name']!.S === lease);
    expect(records.map((r) => r.eventName)).toEqual(['INSERT', 'MODIFY', 'REMOVE']);
    clock.set(start + 1_000);
    // the take's record, reached after the delete landed: the row it reconciles is already gone
    await leaseStream(d)({ Records: [records[1]!] } as DynamoDBStreamEvent, lambdaContext('leaseStream'));
    const opened = (await d.coordinator.leases.read(lease)).item!;
    expect(opened.holderIdentity).toBeUndefined();
    expect(opened.election?.awaitsStream).toBe(true);
    // then the REMOVE: the term marked ended, the election held for it
    await leaseStream(d)({ Records: [records[2]!] } as DynamoDBStreamEvent, lambdaContext('leaseStream'));
    const held = (await d.coordinator.leases.read(lease)).item!;
    expect(held.holderIdentity).toBeUndefined();
    expect(held.election).toMatchObject({ id: opened.election!.id, notBefore: clock.now() + DURATION_S * 1000 });
    expect((await d.coordinator.identities.read(sessionKey('a-session').component, 'a-session')).item?.endedTerms).toEqual({ [lease]: 2 });
  });

  it('a lease deleted vacant is left to the tick, as before (nothing to hold)', async () => {
    const start = Date.now();
    const { d } = setup(start);
    const lease = 'deleted-vacant';
    const c = d.coordinator;
    await c.candidates.write(await c.candidates.read(lease, 'b'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: start, createdAt: start - 60_000 } });
    await c.leases.write(await c.leases.read(lease), { set: { leaseDurationSeconds: DURATION_S, leaseTransitions: 0, fencingToken: 1 } });
    await deleteRow(lease);
    await leaseStream(d)({ Records: [await removal(lease)] } as DynamoDBStreamEvent, lambdaContext('leaseStream'));
    expect((await c.leases.read(lease)).item).toBeUndefined();
  });
});

describe("an operator's delete of a held row whose term only its own stamp keeps (sessionStanding 'none': issue 38, seed 97467's coordinator)", () => {
  const SKEW_MS = 1_000; // the config's clockSkewMs default

  /** Candidates `names`, the lease held by the first (instance `${name}-1`, on no session), renewed at `renewTime`, its row naming `session` (a peer's redirect) or none. */
  async function standOff(d: FunctionDeps, lease: string, names: string[], at: number, renewTime: number, session?: string) {
    const c = d.coordinator;
    for (const name of names) {
      await c.candidates.write(await c.candidates.read(lease, name), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: at, createdAt: at - 60_000, identity: `${name}-1` } });
    }
    await c.leases.write(await c.leases.read(lease), {
      set: { holderIdentity: names[0]!, holderInstance: `${names[0]}-1`, leaseDurationSeconds: DURATION_S, acquireTime: renewTime - 6_000, renewTime, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator', ...(session !== undefined ? { session } : {}) },
    });
  }

  /** The REMOVE record handled at `seenAt`: the election the coordinator opened on the missing row. */
  async function handledAt(d: FunctionDeps, clock: ReturnType<typeof manualClock>, lease: string, seenAt: number) {
    await deleteRow(lease);
    const record = await removal(lease);
    clock.set(seenAt);
    expect(await leaseStream(d)({ Records: [record] } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });
    const opened = (await d.coordinator.leases.read(lease)).item!;
    expect(opened.holderIdentity).toBeUndefined();
    // the created row's own record, next: its election waited for it
    await seeCreatedRow(d, lease);
    return opened.election!;
  }

  it.each([
    { named: 'a row naming no session', lease: 'deleted-off-none', session: undefined, row: undefined },
    { named: 'a row naming a session row that does not exist', lease: 'deleted-off-missing', session: 'job-no-such-session', row: undefined },
    { named: "a row naming another process's session row", lease: 'deleted-off-other', session: 'pz-session', row: 'pz' },
  ])('$named: the next election is held only until the term runs out by its own stamp (renewTime + lease duration + clockSkewMs), not a lease duration from when the delete was handled', async ({ lease, session, row }) => {
    const start = Date.now();
    const { clock, d, timers } = setup(start);
    if (row !== undefined) {
      const key = sessionKey(session!);
      await d.coordinator.identities.write(await d.coordinator.identities.read(key.component, key.name), { set: { holderIdentity: session!, hostname: 'h', leaseDurationSeconds: 15, acquireTime: start, renewTime: start, process: row } });
    }
    await standOff(d, lease, ['a', 'b'], start, start);
    const seenAt = start + 4_000; // handled 4 s after the holder's last renewal
    const e = await handledAt(d, clock, lease, seenAt);
    const overAt = start + DURATION_S * 1000 + SKEW_MS + 1;
    expect(e).toMatchObject({ notBefore: overAt, departed: 'a' });
    expect(e.notBefore).toBeLessThan(seenAt + DURATION_S * 1000);
    expect(timers.at(-1)?.deadline).toBe(e.deadline);
    // both answer; the timer at the term's end by its stamp elects
    for (const name of ['a', 'b']) {
      const r = await d.coordinator.candidates.read(lease, name);
      if (r.item!.pingTime !== undefined) await d.coordinator.candidates.write(r, { set: { renewTime: clock.now(), ackedPingTime: r.item!.pingTime } });
    }
    clock.set(overAt - 1);
    expect((await onTimer(d, { lease, electionId: e.id, deadline: e.deadline }))?.decision.kind).toBe('awaitAcks');
    clock.set(Math.max(overAt, e.deadline));
    expect((await onTimer(d, { lease, electionId: e.id, deadline: e.deadline }))?.decision.kind).toBe('elect');
  });

  it('the functions down past the term’s end by its stamp: the election opened when the delete is handled is held no longer (none elected while the acks are out, as any vacancy)', async () => {
    const start = Date.now();
    const { clock, d } = setup(start);
    const lease = 'deleted-off-late';
    await standOff(d, lease, ['a', 'b'], start, start, 'job-gone-session');
    const seenAt = start + 57_000;
    const e = await handledAt(d, clock, lease, seenAt);
    expect(e.notBefore).toBe(seenAt);
    expect(e.deadline).toBe(seenAt + 5_000); // the ack window: both last renewed 57 s ago, pinged
  });

  it('the named session row cannot be read (the identities table failing): the election is still held before the record fails, the whole unmarked hold', async () => {
    const start = Date.now();
    const { clock, d } = setup(start);
    const lease = 'deleted-off-unread';
    await standOff(d, lease, ['a', 'b'], start, start, 'job-unread-session');
    await deleteRow(lease);
    const record = await removal(lease);
    const identities = d.coordinator.identities;
    const readRow = identities.read.bind(identities);
    identities.read = async () => {
      throw Object.assign(new Error('socket timed out'), { name: 'TimeoutError' });
    };
    clock.set(start + 4_000);
    const failed = await leaseStream(d)({ Records: [record] } as DynamoDBStreamEvent, lambdaContext('leaseStream')).catch((e: unknown) => e);
    identities.read = readRow;
    expect(failed).toMatchObject({ name: 'FullBatchFailureError' }); // the mark's read failed too: the record is retried
    expect((await d.coordinator.leases.read(lease)).item?.election).toMatchObject({ notBefore: start + 4_000 + unmarkedHoldMs(DURATION_S) });
  });

  it("a row naming a session row that exists and names no process (an older SDK's, which may hold the term): held a lease duration from when the delete was handled, as before", async () => {
    const start = Date.now();
    const { clock, d } = setup(start);
    const lease = 'deleted-on-older';
    const session = `${lease}-session`;
    const key = sessionKey(session);
    await d.coordinator.identities.write(await d.coordinator.identities.read(key.component, key.name), { set: { holderIdentity: session, hostname: 'h', leaseDurationSeconds: 15, acquireTime: start, renewTime: start } });
    await standOff(d, lease, ['a', 'b'], start, start, session);
    const seenAt = start + 4_000;
    const e = await handledAt(d, clock, lease, seenAt);
    expect(e.notBefore).toBe(seenAt + DURATION_S * 1000);
  });

  it('a holder whose instance names a process, the named row gone and no session row of its process left (judgingRow: the lease\u2019s own stamp decides, as the tick judges the standing row): held until renewTime + lease duration + clockSkewMs', async () => {
    const start = Date.now();
    const { clock, d } = setup(start);
    const lease = 'deleted-on-process';
    await standOff(d, lease, ['a', 'b'], start, start, `${lease}-session`);
    await d.coordinator.leases.write(await d.coordinator.leases.read(lease), { set: { holderInstance: 'a-1@pgone' } });
    const e = await handledAt(d, clock, lease, start + 4_000);
    expect(e.notBefore).toBe(start + DURATION_S * 1000 + SKEW_MS + 1);
  });
});

describe("an operator's delete of a held row whose holder names a process: judged by that process's session rows, read after the delete (as judgingRow judges the standing row)", () => {
  const SKEW_MS = 1_000; // the config's clockSkewMs default
  const SPAN = DURATION_S * 1000 + SKEW_MS + 1;

  /** A session row of process `process`, named `name` (its grant's partition: `<scope>:…`), stamped `renewTime`. */
  async function sessionRowOf(d: FunctionDeps, name: string, process: string, renewTime: number, extra: Record<string, unknown> = {}) {
    const key = sessionKey(name);
    await d.coordinator.identities.write(await d.coordinator.identities.read(key.component, key.name), { set: { holderIdentity: name, hostname: 'h', leaseDurationSeconds: 15, acquireTime: renewTime - 60_000, renewTime, process, ...extra } });
  }

  /** Candidates a and b; the lease held by a on `process` (instance `a-1@<process>`), its row naming `session`, its own stamp `renewTime`. */
  async function standOn(d: FunctionDeps, lease: string, process: string, session: string, at: number, renewTime: number) {
    const c = d.coordinator;
    for (const name of ['a', 'b']) {
      await c.candidates.write(await c.candidates.read(lease, name), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: at, createdAt: at - 60_000, identity: `${name}-1@${name === 'a' ? process : 'pb'}` } });
    }
    await c.leases.write(await c.leases.read(lease), {
      set: { holderIdentity: 'a', holderInstance: `a-1@${process}`, leaseDurationSeconds: DURATION_S, acquireTime: renewTime - 6_000, renewTime, leaseTransitions: 0, fencingToken: 1, termToken: 1, electedBy: 'coordinator', session },
    });
  }

  /** The REMOVE record handled at `seenAt`: the election the coordinator opened on the missing row. */
  async function handledAt(d: FunctionDeps, clock: ReturnType<typeof manualClock>, lease: string, seenAt: number) {
    await deleteRow(lease);
    const record = await removal(lease);
    clock.set(seenAt);
    expect(await leaseStream(d)({ Records: [record] } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });
    const opened = (await d.coordinator.leases.read(lease)).item!;
    expect(opened.holderIdentity).toBeUndefined();
    // the created row's own record, next: its election waited for it
    await seeCreatedRow(d, lease);
    return opened.election!;
  }

  it('its process died (its session row, its own, last renewed 3 s before): once the mark is on that row, held until the session stamp runs out (+ lease duration + clockSkewMs), not a lease duration from the handling; the timer then elects', async () => {
    const start = Date.now();
    const { clock, d } = setup(start);
    const lease = 'deleted-proc-dead';
    const session = 'delproc-dead:pdead-s1';
    await sessionRowOf(d, session, 'pdead', start - 3_000);
    await standOn(d, lease, 'pdead', session, start, start - 20_000);
    const seenAt = start + 7_000;
    const e = await handledAt(d, clock, lease, seenAt);
    const key = sessionKey(session);
    expect((await d.coordinator.identities.read(key.component, key.name)).item?.endedTerms).toEqual({ [lease]: 1 });
    const overAt = start - 3_000 + SPAN;
    expect(e.notBefore).toBe(overAt);
    expect(overAt).toBeLessThan(seenAt + DURATION_S * 1000);
    for (const name of ['a', 'b']) {
      const r = await d.coordinator.candidates.read(lease, name);
      if (r.item!.pingTime !== undefined) await d.coordinator.candidates.write(r, { set: { renewTime: clock.now(), ackedPingTime: r.item!.pingTime } });
    }
    clock.set(overAt - 1);
    expect((await onTimer(d, { lease, electionId: e.id, deadline: e.deadline }))?.decision.kind).toBe('awaitAcks');
    clock.set(Math.max(overAt, e.deadline));
    expect((await onTimer(d, { lease, electionId: e.id, deadline: e.deadline }))?.decision.kind).toBe('elect');
  });

  it('its row named no session (its holder renewing the lease itself, its Session down): held until its own stamp runs out (renewTime + lease duration + clockSkewMs), as the tick judges the standing row, not a lease duration from the handling', async () => {
    const start = Date.now();
    const { clock, d } = setup(start);
    const lease = 'deleted-proc-nosession';
    await standOn(d, lease, 'pnone', 'delproc-nosession:pnone-s1', start, start - 5_000);
    const c = d.coordinator;
    await c.leases.write(await c.leases.read(lease), { remove: ['session'] });
    // the standing row, as the tick judges it: by its own stamp (sessionStanding 'none')
    const standing = (await c.leases.read(lease)).item!;
    expect(effectiveLease(standing, undefined, start)).toBe(standing);
    const seenAt = start + 4_000;
    const e = await handledAt(d, clock, lease, seenAt);
    const overAt = start - 5_000 + SPAN;
    expect(e.notBefore).toBe(overAt);
    expect(e.notBefore).toBeLessThan(seenAt + DURATION_S * 1000);
  });

  it('its mark refused for now (the row\u2019s map full) and deferred to the timer queue: the hold the deferred mark re-applies ends where the record\u2019s marked pass would (the old image\u2019s stamp and its process\u2019s session rows), not a lease duration from the mark', async () => {
    const start = Date.now();
    const { clock, d } = setup(start);
    const queued: TimerQueueMessage[] = [];
    d.timer = { schedule: async (m) => void queued.push(m) };
    const lease = 'deleted-proc-deferred';
    const session = 'delproc-deferred:pdefer-s1';
    await sessionRowOf(d, session, 'pdefer', start - 3_000);
    await standOn(d, lease, 'pdefer', session, start, start - 20_000);
    const identities = d.coordinator.identities;
    const mark = identities.markTermEnded.bind(identities);
    identities.markTermEnded = async () => {
      throw new EndedTermsFullError(session, lease);
    };
    const seenAt = start + 7_000;
    const unmarked = await handledAt(d, clock, lease, seenAt);
    identities.markTermEnded = mark;
    expect(unmarked.notBefore).toBe(seenAt + unmarkedHoldMs(DURATION_S));
    const deferred = queued.filter((m) => 'markEnded' in m);
    expect(deferred).toHaveLength(1);
    // through the queue as SQS carries it
    const m = parseTimerQueueMessage(timerQueueBody(deferred[0]!), 'timer message');
    expect(m.kind).toBe('markEnded');
    clock.set(seenAt + 1_000);
    await onMarkEnded(d, m.message as MarkEndedMessage);
    const key = sessionKey(session);
    expect((await identities.read(key.component, key.name)).item?.endedTerms).toEqual({ [lease]: 1 });
    // as the record's own marked pass judges it (its process dead, the end marked on its own row): the session stamp + 16 s
    const e = (await d.coordinator.leases.read(lease)).item!.election!;
    expect(e.notBefore).toBe(start - 3_000 + SPAN);
    expect(e.notBefore).toBeLessThan(seenAt + 1_000 + DURATION_S * 1000);
  });

  it("its row named another process's session row, its holder's own row stale past its term when read: held no longer (the ack window)", async () => {
    const start = Date.now();
    const { clock, d } = setup(start);
    const lease = 'deleted-proc-off-stale';
    await sessionRowOf(d, 'delproc-offstale:pz-s1', 'pz', start + 6_000);
    await sessionRowOf(d, 'delproc-offstale:pown-s1', 'pown', start - 30_000);
    await standOn(d, lease, 'pown', 'delproc-offstale:pz-s1', start, start - 20_000);
    const seenAt = start + 7_000;
    const e = await handledAt(d, clock, lease, seenAt);
    expect(e.notBefore).toBe(seenAt);
  });

  it("a row the schema refuses in its process's partition that names another process (not its own session, as a readable one so would not be): no bar, judged as without it: its own row stale past its term, held no longer", async () => {
    const start = Date.now();
    const { clock, d } = setup(start);
    const lease = 'deleted-proc-off-refused-other';
    await sessionRowOf(d, 'delproc-offrefother:pz-s1', 'pz', start + 6_000);
    await sessionRowOf(d, 'delproc-offrefother:pro-s1', 'pro', start - 30_000);
    const key = sessionKey('delproc-offrefother:broken-s1');
    await t.client.send(new UpdateItemCommand({ TableName: t.names.identities, Key: marshall(key), UpdateExpression: 'SET renewTime = :r, #p = :p', ExpressionAttributeNames: { '#p': 'process' }, ExpressionAttributeValues: marshall({ ':r': 'soon', ':p': 'pz9' }) }));
    await standOn(d, lease, 'pro', 'delproc-offrefother:pz-s1', start, start - 20_000);
    const seenAt = start + 7_000;
    const e = await handledAt(d, clock, lease, seenAt);
    // before: seenAt + a lease duration (any refused row in the partition kept the whole hold)
    expect(e.notBefore).toBe(seenAt);
  });

  it("its row named another process's session row, its holder's own row naming the term as left (leftTerms): held until the left stamp runs out, however fresh the row", async () => {
    const start = Date.now();
    const { clock, d } = setup(start);
    const lease = 'deleted-proc-off-left';
    await sessionRowOf(d, 'delproc-offleft:pz-s1', 'pz', start + 6_000);
    await sessionRowOf(d, 'delproc-offleft:pleft-s1', 'pleft', start + 6_500, { leftTerms: { [lease]: { token: 1, instance: 'a-1@pleft', stamp: start - 2_000 } } });
    await standOn(d, lease, 'pleft', 'delproc-offleft:pz-s1', start, start - 20_000);
    const seenAt = start + 7_000;
    const e = await handledAt(d, clock, lease, seenAt);
    expect(e.notBefore).toBe(start - 2_000 + SPAN);
  });

  it.each([
    { name: 'its own session row renewed just before the read (its process may renew it on): a lease duration from the handling', lease: 'deleted-proc-live', own: 6_500, left: undefined, refused: false },
    { name: "its row named another process's session row, its holder's own row fresh (no mark reaches it there): a lease duration", lease: 'deleted-proc-off-live', own: 6_500, left: undefined, refused: false, off: true },
    { name: "a left term naming another instance (not this term): a lease duration", lease: 'deleted-proc-left-other', own: 6_500, left: 'a-2@pother', refused: false, off: true },
    { name: 'a row the schema refuses among its process\u2019s partition: a lease duration (never shortened on what cannot be read)', lease: 'deleted-proc-refused', own: -30_000, left: undefined, refused: true, off: true },
  ])('$name', async ({ lease, own, left, refused, off }) => {
    const start = Date.now();
    const { clock, d } = setup(start);
    const scope = `delproc-${lease.slice('deleted-proc-'.length)}`;
    const process = `p${lease.length}${lease.slice(-4)}`;
    const mine = `${scope}:${process}-s1`;
    if (off) await sessionRowOf(d, `${scope}:pz-s1`, 'pz', start + 6_000);
    await sessionRowOf(d, mine, process, start + own, left ? { leftTerms: { [lease]: { token: 1, instance: left, stamp: start - 2_000 } } } : {});
    if (refused) {
      const key = sessionKey(`${scope}:broken-s1`);
      await t.client.send(new UpdateItemCommand({ TableName: t.names.identities, Key: marshall(key), UpdateExpression: 'SET renewTime = :r, process = :p', ExpressionAttributeValues: marshall({ ':r': 'soon', ':p': process }) }));
    }
    await standOn(d, lease, process, off ? `${scope}:pz-s1` : mine, start, start - 20_000);
    const seenAt = start + 7_000;
    const e = await handledAt(d, clock, lease, seenAt);
    expect(e.notBefore).toBe(seenAt + DURATION_S * 1000);
  });
});
