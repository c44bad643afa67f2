/**
 * Events that tell the truth after the coordinator's own races (a review of the functions,
 * 2026-12-05): a candidate renewed between the collection's mark and its delete withdraws later
 * without a Candidate Expired; a held lease deleted by an operator and elected again tells the
 * leader's change (Leader Changed), as a release does. And (a review of the events, 2026-12-06): the
 * delete of a held row ends its term with a Lease Released (rowDeleted), whoever makes the row again;
 * a worker's direct acquisition names the lease's strategy, not the one an earlier term was elected
 * under; an electionId repeats across a row's delete, and a re-election its holder keeps closes with
 * no event, as docs/deploy.md's events section says.
 */
import { readFileSync } from 'node:fs';
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as candidateStream } from '../../functions/candidate-stream.js';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { onTick, onTimer, type FunctionDeps } from '../../lib/functions/core.js';
import { DETAIL_SCHEMAS, type ConclaveEvent } from '../../lib/events/schemas.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { acquisition } from '../../lib/sdk/lock.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { NOW } from '../fixtures.js';
import { publishingDeps } from '../events/publishing-deps.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => {
  t = await testTables('event-truth');
});
afterAll(async () => {
  await t.drop();
});

const setup = (start: number) => publishingDeps(t, start);

const kinds = (events: readonly ConclaveEvent[]) => events.map((e) => e.detailType);

describe('a candidate renewed between the collection\'s mark and its delete', () => {
  it('lives on without the mark, and its own withdrawal later publishes no Candidate Expired (it did: the mark stayed on the live row)', async () => {
    // (the stream's record times are the machine's: the rows are written 32 minutes before it, as the withdrawal is judged)
    const start = Date.now() - 32 * 60_000;
    const { clock, d, events } = setup(start);
    const c = d.coordinator.candidates;
    const lease = 'collect-race';
    await c.write(await c.read(lease, 'w'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: start, createdAt: start, identity: 'w-1' } });
    // 31 minutes on it is stale (candidateStaleAfterMs, 30 min); the worker, back from a long pause,
    // renews just as the tick collects it: between the mark (collectedAt) and the delete
    clock.set(start + 31 * 60_000);
    const del = c.delete.bind(c);
    c.delete = async (read) => {
      expect(await c.renew(lease, 'w', clock.now(), undefined, undefined, 'w-1')).toBe(true);
      return del(read);
    };
    const r = await onTick(d);
    c.delete = del;
    expect(r.collectedCandidates).toEqual([]); // it lives on
    expect((await c.read(lease, 'w')).item).not.toHaveProperty('collectedAt');
    // later the worker stops and withdraws its own live row
    clock.advance(60_000);
    await c.renew(lease, 'w', clock.now(), undefined, undefined, 'w-1');
    const before = (await streamRecords(t.client, t.names.candidates)).length;
    await c.delete(await c.read(lease, 'w'));
    const recs = (await streamRecords(t.client, t.names.candidates)).slice(before);
    expect(recs.map((x) => x.eventName)).toEqual(['REMOVE']);
    expect(await candidateStream(d)({ Records: recs } as DynamoDBStreamEvent, lambdaContext('candidateStream'))).toEqual({ batchItemFailures: [] });
    expect(kinds(events)).not.toContain('Candidate Expired');
  });
});

async function stand(d: FunctionDeps, lease: string, at: number) {
  const c = d.coordinator;
  await c.candidates.write(await c.candidates.read(lease, 'b'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: at, createdAt: at - 60_000, identity: 'b-1' } });
  await c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: at, renewTime: at, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' } });
}

const recordsOf = async (lease: string) => (await streamRecords(t.client, t.names.leases)).filter((x) => x.dynamodb!.Keys!['name']!.S === lease);
const feed = async (d: FunctionDeps, recs: Awaited<ReturnType<typeof recordsOf>>) =>
  expect(await leaseStream(d)({ Records: recs } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });

describe('a held lease deleted by an operator, then elected again', () => {
it("tells the leader's change, a to b, as a release does (Leader Elected came alone, no previous holder)", async () => {
  const start = NOW;
  const { clock, d, events } = setup(start);
  const lease = 'del-changed';
  await stand(d, lease, start);
  await t.client.send(new DeleteItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }) }));
  clock.set(start + 1_000);
  const seen = (await recordsOf(lease)).length;
  await feed(d, (await recordsOf(lease)).slice(seen - 1)); // the REMOVE
  await feed(d, (await recordsOf(lease)).slice(seen)); // the created row's INSERT (+ any later writes)
  const done = seen + ((await recordsOf(lease)).length - seen);
  const el = (await d.coordinator.leases.read(lease)).item!.election!;
  clock.set(el.deadline);
  const o = await onTimer(d, { lease, electionId: el.id, deadline: el.deadline });
  expect(o?.decision.kind).toBe('elect');
  await feed(d, (await recordsOf(lease)).slice(done));
  // the delete ended a's term (before: no event), and the row made again opened the next election naming a
  expect(kinds(events)).toEqual(['Lease Released', 'Election Started', 'Leader Elected', 'Leader Changed']);
  expect(events[0]!.detail).toMatchObject({ previousHolder: 'a', fencingToken: 1, rowDeleted: true });
  expect(events[1]!.detail).toMatchObject({ previousHolder: 'a', vacancy: 'noLease' });
  expect(events.find((e) => e.detailType === 'Leader Elected')).toBeDefined();
  const changed = events.find((e) => e.detailType === 'Leader Changed');
  expect(changed?.detail).toMatchObject({ previousHolder: 'a', holder: 'b' });
  expect(events.find((e) => e.detailType === 'Leader Elected')?.detail).toMatchObject({ previousHolder: 'a' });
});
});

// An operator's delete of a held row, the tick reaching the missing row before the lease stream reaches
// the REMOVE (the stream behind): the tick's row names no last holder, and the stream's hold of that
// election (holdOpenElection) did not either, so the next leader's Leader Elected had no previousHolder
// and no Leader Changed was published (a review, 2026-12-06). Election Started, from the tick's INSERT,
// still names none (its previousHolder's description says so): the REMOVE's Lease Released names a.
it('tick recreated the deleted held row before the stream saw the REMOVE: the next leader b after a', async () => {
  const start = Date.now();
  const { clock, d, events } = setup(start);
  const c = d.coordinator;
  const lease = 'del-tick-first';
  await c.candidates.write(await c.candidates.read(lease, 'b'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: start, createdAt: start - 60_000, identity: 'b-1' } });
  await c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: start, renewTime: start, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' } });
  await feed(d, await recordsOf(lease)); // the INSERT of a's term (as elected)
  events.length = 0;
  await t.client.send(new DeleteItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }) }));
  clock.set(start + 60_000);
  // the tick reaches the missing row first (the stream is behind)
  expect((await onTick(d)).outcomes.find((o) => o.lease === lease)?.decision.kind).toBe('openElection');
  clock.advance(1_000);
  await feed(d, (await recordsOf(lease)).slice(1)); // REMOVE, then the tick's INSERT, then the hold's MODIFY
  expect(kinds(events)).toEqual(['Lease Released', 'Election Started']);
  expect(events[0]!.detail).toMatchObject({ previousHolder: 'a', fencingToken: 1, rowDeleted: true });
  expect(events[1]!.detail).toMatchObject({ vacancy: 'noLease' });
  expect(events[1]!.detail).not.toHaveProperty('previousHolder');
  // b answers; the held election closes at its deadline
  const r = await c.candidates.read(lease, 'b');
  await c.candidates.write(r, { set: { renewTime: clock.now(), ackedPingTime: r.item!.pingTime! } });
  const el = (await c.leases.read(lease)).item!.election!;
  clock.set(el.deadline);
  const before = (await recordsOf(lease)).length;
  expect((await onTimer(d, { lease, electionId: el.id, deadline: el.deadline }))?.decision.kind).toBe('elect');
  await feed(d, (await recordsOf(lease)).slice(before));
  const row = (await c.leases.read(lease)).item!;
  expect(row.holderIdentity).toBe('b');
  // before: Leader Elected with no previousHolder, and no Leader Changed
  expect(events.find((e) => e.detailType === 'Leader Elected')?.detail).toMatchObject({ holder: 'b', previousHolder: 'a' });
  expect(events.find((e) => e.detailType === 'Leader Changed')?.detail).toMatchObject({ holder: 'b', previousHolder: 'a' });
});

const deployDoc = () => readFileSync(new URL('../../docs/deploy.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');

describe('a held row deleted, made again by a worker itself (NoCoordination)', () => {
  it("ends a's term with Lease Released (rowDeleted) at the delete: b's Leader Elected names no previous holder (before: no event told a's term had ended)", async () => {
    const start = Date.now();
    const { clock, d, events } = setup(start);
    const c = d.coordinator;
    const lease = 'del-nocoord';
    for (const n of ['a', 'b']) await c.candidates.write(await c.candidates.read(lease, n), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: ['NoCoordination'], renewTime: start, createdAt: start - 120_000, identity: `${n}-1` } });
    let read = await c.leases.read(lease);
    await c.leases.write(read, acquisition(read.item, { identity: 'a', instance: 'a-1', now: clock.now(), leaseDurationSeconds: 15, electedBy: 'self' }));
    const aToken = (await c.leases.read(lease)).item!.fencingToken;
    await feed(d, await recordsOf(lease));
    await t.client.send(new DeleteItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }) }));
    clock.advance(1_000);
    await feed(d, (await recordsOf(lease)).slice(1));
    expect((await c.leases.read(lease)).item).toBeUndefined(); // nobody to elect: the workers race for it
    clock.advance(1_000);
    read = await c.leases.read(lease);
    await c.leases.write(read, acquisition(read.item, { identity: 'b', instance: 'b-1', now: clock.now(), leaseDurationSeconds: 15, electedBy: 'self' }));
    await feed(d, (await recordsOf(lease)).slice(2));
    expect(kinds(events)).toEqual(['Leader Elected', 'Lease Released', 'Leader Elected']);
    expect(events[1]!.detail).toMatchObject({ lease, previousHolder: 'a', fencingToken: aToken, rowDeleted: true });
    expect(events[2]!.detail).toMatchObject({ holder: 'b', electedBy: 'self' });
    expect(events[2]!.detail).not.toHaveProperty('previousHolder');
    for (const e of events) DETAIL_SCHEMAS[e.detailType].parse(e.detail);
    expect(/A row a worker makes again itself \(a direct acquisition: `NoCoordination`, or the fallback\) starts from nothing: its \*Leader Elected\* has no `previousHolder`/.test(deployDoc()), 'docs/deploy.md, "Events and metrics", says so').toBe(true);
  });
});

it("a direct acquisition after an operator's set-strategy: Leader Elected and Changed carry the lease's strategy, not the one the earlier term was elected under (electedStrategy, which a worker may not remove)", async () => {
  const start = Date.now();
  const { clock, d, events } = setup(start);
  const c = d.coordinator;
  const lease = 'strategy-after-take';
  await c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: start, renewTime: start, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator', electedStrategy: OLDEST_EMULATION_VERSION } });
  await c.leases.write(await c.leases.read(lease), { set: { strategy: 'NoCoordination' } }); // conclave set-strategy
  clock.advance(60_000);
  const read = await c.leases.read(lease);
  await c.leases.write(read, acquisition(read.item, { identity: 'b', instance: 'b-1', now: clock.now(), leaseDurationSeconds: 15, electedBy: 'self' }));
  await feed(d, (await recordsOf(lease)).slice(2));
  expect(kinds(events)).toEqual(['Leader Elected', 'Leader Changed']);
  // before: OldestEmulationVersion, a's election's
  for (const e of events) expect(e.detail).toMatchObject({ holder: 'b', electedBy: 'self', strategy: 'NoCoordination' });
});

it('an electionId repeats across a held row\'s delete (the row counts its revisions from 1 again), as docs/deploy.md says; the events\' ids differ', async () => {
  const start = Date.now() - 10 * 60_000;
  const { clock, d, events } = setup(start);
  const c = d.coordinator;
  const lease = 'eid-repeats';
  // a live candidate, not fresh: the tick makes the row and pings it
  await c.candidates.write(await c.candidates.read(lease, 'a'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: start - 60_000, createdAt: start - 120_000, identity: 'a-1' } });
  let fed = 0;
  const feedNew = async () => {
    const all = await recordsOf(lease);
    await feed(d, all.slice(fed));
    fed = all.length;
  };
  await onTick(d);
  await feedNew();
  const first = (await c.leases.read(lease)).item!.election!;
  const r = await c.candidates.read(lease, 'a');
  await c.candidates.write(r, { set: { renewTime: clock.now(), ackedPingTime: r.item!.pingTime! } });
  clock.set(first.deadline);
  expect((await onTimer(d, { lease, electionId: first.id, deadline: first.deadline }))?.decision.kind).toBe('elect');
  await feedNew();
  await t.client.send(new DeleteItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }) }));
  clock.advance(1_000);
  await feedNew(); // the REMOVE: the lease stream makes the row again, with the next election
  await feedNew(); // its INSERT
  const started = events.filter((e) => e.detailType === 'Election Started');
  expect(started).toHaveLength(2);
  expect(started.map((e) => (e.detail as { electionId: string }).electionId)).toEqual([`${lease}#1`, `${lease}#1`]);
  expect(started[0]!.detail.id).not.toBe(started[1]!.detail.id);
  expect(/\*\*`electionId`\*\* is `<lease>#<n>`, n the row's revision when the election opened: unique among one row's elections, not across its deletion/.test(deployDoc()), 'docs/deploy.md, "Events and metrics", says so').toBe(true);
});

it('a re-election its holder keeps closes with no event of its own, as docs/deploy.md says (an alert takes the next Elected, Changed, Preemption Requested, Failed or Started as the close)', async () => {
  const start = Date.now();
  const { clock, d, events } = setup(start);
  const c = d.coordinator;
  const lease = 'reelection-kept';
  await c.candidates.write(await c.candidates.read(lease, 'a'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: start, createdAt: start - 120_000, identity: 'a-1' } });
  // b, worse and not known to be alive: the tick checks it (a liveness check, successor.ts)
  await c.candidates.write(await c.candidates.read(lease, 'b'), { set: { binaryVersion: '1.29.0', emulationVersion: '1.29.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: start - 120_000, createdAt: start - 120_000, identity: 'b-1' } });
  await c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 60, acquireTime: start, renewTime: start, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator', electedStrategy: OLDEST_EMULATION_VERSION } });
  expect((await onTick(d)).outcomes.find((o) => o.lease === lease)?.decision.kind).toBe('openElection');
  const el = (await c.leases.read(lease)).item!.election!;
  clock.set(el.deadline);
  await c.leases.write(await c.leases.read(lease), { set: { renewTime: clock.now() } });
  expect((await onTimer(d, { lease, electionId: el.id, deadline: el.deadline }))?.decision).toMatchObject({ kind: 'cancelElection', why: 'holderIsBest' });
  await feed(d, await recordsOf(lease));
  const row = (await c.leases.read(lease)).item!;
  expect(row.election).toBeUndefined();
  expect(row.holderIdentity).toBe('a');
  expect(kinds(events)).toEqual(['Leader Elected', 'Election Started']);
  expect(events[1]!.detail).toMatchObject({ electionId: el.id, reelection: true, holder: 'a' });
  expect(/when the holder keeps the lease \(the usual end\) in no event at all/.test(deployDoc()), 'docs/deploy.md, "Events and metrics", says so').toBe(true);
  expect(/An alert on an election open for N minutes must therefore take as its close the lease's next \*Leader Elected\*, \*Leader Changed\*, \*Leader Preemption Requested\*, \*Election Failed\* or \*Election Started\*/.test(deployDoc()), 'docs/deploy.md, "Events and metrics", says so').toBe(true);
});
