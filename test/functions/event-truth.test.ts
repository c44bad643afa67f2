/**
 * Events that tell the truth after the coordinator's own races (a review of the functions,
 * 2026-12-05): a candidate renewed between the collection's mark and its delete withdraws later
 * without a Candidate Expired; a held lease deleted by an operator and elected again tells the
 * leader's change (Leader Changed), as a release does.
 */
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as candidateStream } from '../../functions/candidate-stream.js';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { onTick, onTimer, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import type { ConclaveEvent } from '../../lib/events/schemas.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { NOW } from '../fixtures.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => {
  t = await testTables('event-truth');
});
afterAll(async () => {
  await t.drop();
});

function setup(start: number) {
  const clock = manualClock(start);
  const events: ConclaveEvent[] = [];
  const d: FunctionDeps = {
    coordinator: coordinatorDeps(t.client, t.names, { clock, config: { ackWindowMs: 5_000 } }),
    timer: { schedule: async () => undefined },
    publish: async (list) => void events.push(...list),
    deadLetter: async () => undefined,
    ...observability('test', 'SILENT'),
  };
  return { clock, d, events };
}

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
// still names none: leader discovery's sweep clears that holder's name.
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
