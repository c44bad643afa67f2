/**
 * Old stream records delivered again long after they happened: local mode re-reading a stream from
 * its start (its checkpoints file missing or corrupt, or `startLocalConclave({ endpoint })` without
 * `eventsDir`), an older release ignoring a newer checkpoints file, an event source mapping
 * recreated at TRIM_HORIZON. Each handler judges such a record against the row as it is now and does
 * nothing the record does not justify. On real stream records of DynamoDB Local, through the lease
 * stream's handler; time is a manual clock.
 */
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { unmarkedHoldMs } from '../../lib/election/decide.js';
import { onTick, onTimer, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { sessionKey } from '../../lib/schemas/identity.js';
import { EndedTermsFullError } from '../../lib/stores/errors.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => {
  t = await testTables('stream-replay');
});
afterAll(async () => {
  await t.drop();
});

const DURATION_S = 15;

function setup(start: number) {
  const clock = manualClock(start);
  const d: FunctionDeps = {
    coordinator: coordinatorDeps(t.client, t.names, { clock, config: { ackWindowMs: 5_000 } }),
    timer: { schedule: async () => undefined },
    publish: async () => undefined,
    deadLetter: async () => undefined,
    ...observability('test', 'SILENT'),
  };
  return { clock, d };
}

/** Candidates `names` renewed at `at`; the lease held by the first, its term on the session `a-session` (naming no process: it holds the term). */
async function stand(d: FunctionDeps, lease: string, names: string[], at: number) {
  const c = d.coordinator;
  for (const name of names) {
    await c.candidates.write(await c.candidates.read(lease, name), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: at, createdAt: at - 60_000, identity: `${name}-1` } });
  }
  const key = sessionKey('a-session');
  const was = await c.identities.read(key.component, key.name);
  if (was.item) await c.identities.delete(was);
  await c.identities.write(await c.identities.read(key.component, key.name), { set: { holderIdentity: 'a-session', hostname: 'h', leaseDurationSeconds: 3_600, acquireTime: at, renewTime: at } });
  await c.leases.write(await c.leases.read(lease), {
    set: { holderIdentity: names[0]!, holderInstance: `${names[0]}-1`, leaseDurationSeconds: DURATION_S, acquireTime: at, renewTime: at, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator', session: 'a-session' },
  });
}

/** The lease's stream records of kind `eventName` so far, oldest first. */
const recordsOf = async (lease: string, eventName: 'INSERT' | 'MODIFY' | 'REMOVE'): Promise<DynamoDBRecord[]> =>
  (await streamRecords(t.client, t.names.leases)).filter((x) => x.dynamodb!.Keys!['name']!.S === lease && x.eventName === eventName);

const deliver = async (d: FunctionDeps, record: DynamoDBRecord) => expect(await leaseStream(d)({ Records: [record] } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });

/** Every candidate of `lease` answers its ping (if it has one) at the clock's now. */
async function answer(d: FunctionDeps, lease: string, names: string[]) {
  for (const name of names) {
    const r = await d.coordinator.candidates.read(lease, name);
    await d.coordinator.candidates.write(r, { set: { renewTime: d.coordinator.clock.now(), ...(r.item!.pingTime !== undefined ? { ackedPingTime: r.item!.pingTime } : {}) } });
  }
}

/**
 * A held row deleted (its REMOVE record handled, then the INSERT of the row its handling created,
 * whose election waited for it), then the next leader elected at the held election's timer: where
 * each test replays that REMOVE from.
 */
async function deletedAndElected(lease: string) {
  const start = Date.now();
  const { clock, d } = setup(start);
  await stand(d, lease, ['a', 'b'], start);
  await t.client.send(new DeleteItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }) }));
  const [removal] = await recordsOf(lease, 'REMOVE');
  clock.set(start + 1_000);
  await deliver(d, removal!);
  const opened = (await d.coordinator.leases.read(lease)).item!;
  expect(opened.election!.awaitsStream).toBe(true);
  await deliver(d, (await recordsOf(lease, 'INSERT')).at(-1)!);
  clock.set(opened.election!.deadline);
  await answer(d, lease, ['a', 'b']);
  await onTimer(d, { lease, electionId: opened.election!.id, deadline: opened.election!.deadline });
  const elected = (await d.coordinator.leases.read(lease)).item!;
  expect(elected.holderIdentity).toBeDefined();
  return { start, clock, d, removal: removal!, elected };
}

/** The lease vacant now, its next election on the hold an unmarked end of its term gets (holdUnmarked); that election. */
async function heldUnmarked(d: FunctionDeps, lease: string, departed?: string) {
  const now = d.coordinator.clock.now();
  const notBefore = now + unmarkedHoldMs(DURATION_S);
  const written = await d.coordinator.leases.write(await d.coordinator.leases.read(lease), {
    set: { election: { id: `${lease}#9`, startedAt: now, deadline: notBefore, strategy: OLDEST_EMULATION_VERSION, notBefore, ...(departed ? { departed } : {}) } },
    remove: ['holderIdentity', 'holderInstance'] as never,
  });
  return written.election;
}

describe('an old stream record delivered again long after (a stream re-read from an older point)', () => {
  it("an old REMOVE of a held row, replayed while the lease is vacant with an ordinary open election opened after it: the election is not held for the long-gone term; the tick elects once everyone answered, as without the replay", async () => {
    const lease = 'replayed-delete';
    const { start, clock, d, removal } = await deletedAndElected(lease);
    // a minute later the holder releases; the tick opens an ordinary election
    clock.set(start + 60_000);
    await d.coordinator.leases.write(await d.coordinator.leases.read(lease), { set: { renewTime: clock.now() }, remove: ['holderIdentity', 'holderInstance', 'session'] as never });
    await onTick(d);
    const vacant = (await d.coordinator.leases.read(lease)).item!;
    expect(vacant.election).toBeDefined();
    expect(vacant.election!.notBefore).toBeUndefined();
    // the old REMOVE, read again from an older point of the stream
    clock.advance(100);
    await deliver(d, removal);
    const after = (await d.coordinator.leases.read(lease)).item!;
    expect(after.election).toEqual(vacant.election);
    // everyone answers: the tick elects now, not a lease duration later
    await answer(d, lease, ['a', 'b']);
    await onTick(d);
    expect((await d.coordinator.leases.read(lease)).item!.holderIdentity).toBeDefined();
  });

  it("an old record of a term's end (the holder's term taken over), replayed while the lease's next election is on the long hold of a later term whose end is not yet marked: the hold stands (it was cut to a lease duration)", async () => {
    const start = Date.now();
    const { clock, d } = setup(start);
    const lease = 'replayed-term-end';
    await stand(d, lease, ['a', 'b'], start);
    // a's term ends: b takes it (token 2, on no session); the record marks a's term ended
    clock.set(start + 1_000);
    await d.coordinator.leases.write(await d.coordinator.leases.read(lease), { set: { holderIdentity: 'b', holderInstance: 'b-1', fencingToken: 2, renewTime: clock.now(), acquireTime: clock.now(), leaseTransitions: 1 }, remove: ['session'] as never });
    const record = (await recordsOf(lease, 'MODIFY')).at(-1)!;
    await deliver(d, record);
    // two minutes later: b's term over, the next election on the hold an unmarked end of it gets (holdUnmarked)
    clock.set(start + 120_000);
    const before = await heldUnmarked(d, lease);
    // a's term's end, read again from an older point of the stream: it holds for term 1, not 2
    clock.advance(100);
    await deliver(d, record);
    expect((await d.coordinator.leases.read(lease)).item!.election).toEqual(before);
  });

  it("an old REMOVE of a held row, replayed while the lease's next election is on the long hold of a later term whose end is not yet marked: the hold stands (it was cut to the deleted term's)", async () => {
    const lease = 'replayed-delete-held';
    const { start, clock, d, removal, elected } = await deletedAndElected(lease);
    // two minutes later: that term over, the next election on the hold an unmarked end of it gets (holdUnmarked)
    clock.set(start + 120_000);
    const before = await heldUnmarked(d, lease, elected.holderIdentity);
    clock.advance(100);
    await deliver(d, removal);
    expect((await d.coordinator.leases.read(lease)).item!.election).toEqual(before);
  });

  it("an old REMOVE of a held row, replayed while the row is missing again by a later delete of a held row that the stream has not reached: nobody is elected before the stream has seen that delete, which then holds the election for its own term", async () => {
    const lease = 'replayed-delete-missing';
    const { start, clock, d, removal } = await deletedAndElected(lease);
    // minutes later: a's session is gone (its process ended), b leads on its own session, and an operator deletes the row again
    clock.set(start + 240_000);
    const c = d.coordinator;
    const aKey = sessionKey('a-session');
    await c.identities.delete(await c.identities.read(aKey.component, aKey.name));
    const bKey = sessionKey('b-session');
    const was = await c.identities.read(bKey.component, bKey.name);
    if (was.item) await c.identities.delete(was);
    await c.identities.write(await c.identities.read(bKey.component, bKey.name), { set: { holderIdentity: 'b-session', hostname: 'h', leaseDurationSeconds: 3_600, acquireTime: clock.now(), renewTime: clock.now() } });
    const bTerm = await c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'b', holderInstance: 'b-1', session: 'b-session', renewTime: clock.now(), acquireTime: clock.now() }, remove: ['election'] as never });
    await t.client.send(new DeleteItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }) }));
    const later = (await recordsOf(lease, 'REMOVE')).at(-1)!;
    expect(later.eventID).not.toBe(removal.eventID);
    // the delete happened now by the function's clock (DynamoDB Local stamps its records by the wall clock, minutes behind this one)
    later.dynamodb!.ApproximateCreationDateTime = Math.floor(clock.now() / 1000);
    // the stream re-read from an older point: the first delete comes again before the second
    clock.advance(100);
    await deliver(d, removal);
    await answer(d, lease, ['a', 'b']);
    await onTick(d);
    expect((await d.coordinator.leases.read(lease)).item?.holderIdentity).toBeUndefined();
    // the stream reaches the second delete: its term's end is marked and the election held for it
    clock.advance(100);
    await deliver(d, later);
    const held = (await d.coordinator.leases.read(lease)).item!;
    expect(held.holderIdentity).toBeUndefined();
    expect(held.election!.notBefore).toBeGreaterThanOrEqual(clock.now() + bTerm.leaseDurationSeconds * 1000);
  });

  it("an old REMOVE of a held row, replayed less than its long-over horizon after it (deleteLongOver) while the row is missing again by a later delete of a held row that the stream has not reached: the row it creates waits for the stream, so nobody is elected before the stream has seen that delete, which then holds the election for its own term", async () => {
    const lease = 'replayed-delete-recent';
    const { start, clock, d, removal } = await deletedAndElected(lease);
    // seconds later, b leads on its own session, and an operator deletes the row again
    clock.set(start + 20_000);
    const c = d.coordinator;
    const bKey = sessionKey('b-session');
    const was = await c.identities.read(bKey.component, bKey.name);
    if (was.item) await c.identities.delete(was);
    await c.identities.write(await c.identities.read(bKey.component, bKey.name), { set: { holderIdentity: 'b-session', hostname: 'h', leaseDurationSeconds: 3_600, acquireTime: clock.now(), renewTime: clock.now() } });
    const bTerm = await c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'b', holderInstance: 'b-1', session: 'b-session', renewTime: clock.now(), acquireTime: clock.now() }, remove: ['election'] as never });
    await t.client.send(new DeleteItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }) }));
    const later = (await recordsOf(lease, 'REMOVE')).at(-1)!;
    expect(later.eventID).not.toBe(removal.eventID);
    later.dynamodb!.ApproximateCreationDateTime = Math.floor(clock.now() / 1000);
    // the first delete comes again, 20 s after it happened (the function's clock): a hold and a mark for its term, not long over
    const replayed = { ...removal, dynamodb: { ...removal.dynamodb!, ApproximateCreationDateTime: Math.floor(start / 1000) } };
    clock.advance(100);
    await deliver(d, replayed);
    const created = (await c.leases.read(lease)).item!;
    expect(created.holderIdentity).toBeUndefined();
    // past whatever that hold is, everyone answered: still nobody, the stream has not reached the later delete
    clock.set(Math.max(created.election!.notBefore ?? 0, created.election!.deadline) + 1);
    await answer(d, lease, ['a', 'b']);
    await onTick(d);
    expect((await c.leases.read(lease)).item?.holderIdentity).toBeUndefined();
    // the stream reaches the second delete: its term's end is marked and the election held for it
    clock.advance(100);
    await deliver(d, later);
    const held = (await c.leases.read(lease)).item!;
    expect(held.holderIdentity).toBeUndefined();
    expect(held.election!.notBefore).toBeGreaterThanOrEqual(clock.now() + bTerm.leaseDurationSeconds * 1000);
    // then the created row's own record, and the hold's end: the election closes
    await deliver(d, (await recordsOf(lease, 'INSERT')).at(-1)!);
    clock.set(held.election!.deadline);
    await answer(d, lease, ['a', 'b']);
    await onTick(d);
    expect((await c.leases.read(lease)).item!.holderIdentity).toBeDefined();
  });

  it("an old record of a term's end, replayed while its session's mark map is full (the mark refused, deferred) and the lease vacant with an ordinary open election of a later term: that election is not held for the long-gone term", async () => {
    const start = Date.now();
    const { clock, d } = setup(start);
    const lease = 'replayed-term-end-full';
    await stand(d, lease, ['a', 'b'], start);
    // a's term ends: b takes it (token 2, on no session); the record marks a's term ended
    clock.set(start + 1_000);
    await d.coordinator.leases.write(await d.coordinator.leases.read(lease), { set: { holderIdentity: 'b', holderInstance: 'b-1', fencingToken: 2, renewTime: clock.now(), acquireTime: clock.now(), leaseTransitions: 1 }, remove: ['session'] as never });
    const record = (await recordsOf(lease, 'MODIFY')).at(-1)!;
    await deliver(d, record);
    // a minute later b releases; the tick opens an ordinary election (at token 2)
    clock.set(start + 60_000);
    await d.coordinator.leases.write(await d.coordinator.leases.read(lease), { set: { renewTime: clock.now() }, remove: ['holderIdentity', 'holderInstance'] as never });
    await onTick(d);
    const vacant = (await d.coordinator.leases.read(lease)).item!;
    expect(vacant.election).toBeDefined();
    expect(vacant.election!.notBefore).toBeUndefined();
    // a's term's end comes again, its session's mark map full now: the mark is refused and deferred
    const identities = d.coordinator.identities;
    const mark = identities.markTermEnded.bind(identities);
    identities.markTermEnded = async (session: string, name: string) => {
      throw new EndedTermsFullError(session, name);
    };
    clock.advance(100);
    try {
      await deliver(d, record);
    } finally {
      identities.markTermEnded = mark;
    }
    expect((await d.coordinator.leases.read(lease)).item!.election).toEqual(vacant.election);
  });
});
