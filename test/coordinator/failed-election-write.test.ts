/**
 * An election's pings land before the lease write that opens it. When that write fails (refused,
 * lost to another writer, unanswered) or never comes (a ping failed), the pings stood (a review,
 * 2026-12-07): candidates that never saw an election counted, an ack window later, as having
 * ignored their last ping, and on a vacant lease the best of them, not fresh, was set aside and a
 * worse fresh candidate elected at once (preempted about a minute later for the one set aside).
 * Now they are taken back, unless the lease carries an open election they count for. On DynamoDB
 * Local, the failures brought by a client middleware.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps, reconcileLease } from '../../lib/coordinator/reconcile.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
let client: DynamoDBClient;
/** What the next UpdateItem on `table` meets (once): refused before it is sent, answered with an error after it landed, or another write first. */
let next: { table: 'leases' | 'candidates'; fault: 'refused' | 'lost' | (() => Promise<void>) } | undefined;

beforeAll(async () => {
  t = await testTables('failed-election');
  client = localClient(inject('ddbEndpoint'));
  client.middlewareStack.add(
    (pass, c) => async (args) => {
      const f = next;
      if (c.commandName !== 'UpdateItemCommand' || !f || (args.input as { TableName?: string }).TableName !== t.names[f.table]) return pass(args);
      next = undefined;
      if (f.fault === 'refused') throw Object.assign(new Error('Throughput exceeds the current capacity of your table or index.'), { name: 'ThrottlingException', $fault: 'client' });
      if (f.fault === 'lost') {
        await pass(args);
        throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError' });
      }
      await f.fault();
      return pass(args);
    },
    { step: 'initialize', name: 'election-write-faults' },
  );
});
afterAll(async () => {
  client.destroy();
  await t.drop();
});

const setup = () => coordinatorDeps(t.client, t.names);

/**
 * A vacant lease `lease` with two candidates: `best` (the older emulation version, which
 * OldestEmulationVersion elects), last renewed a minute before `now` (a candidate renews every 10
 * minutes on its own), and `fresh`, worse, renewed at `now`.
 */
async function vacant(lease: string, now: number) {
  const s = setup();
  const cand = async (name: string, emulationVersion: string, renewTime: number) =>
    s.candidates.write(await s.candidates.read(lease, name), { set: { binaryVersion: '1.31.0', emulationVersion, preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime, createdAt: now - 600_000, identity: `${name}-1` } });
  await cand('best', '1.30.0', now - 60_000);
  await cand('fresh', '1.31.0', now);
  await s.leases.write(await s.leases.read(lease), { set: { leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 1 } });
  return { renewFresh: async (at: number) => void (await s.candidates.write(await s.candidates.read(lease, 'fresh'), { set: { renewTime: at } })) };
}

const pingOf = async (lease: string, name: string) => (await setup().candidates.read(lease, name)).item?.pingTime;

it("the lease write refused after the pings: taken back, and the next reconcile asks the best again rather than electing the worse fresh one", async () => {
  const now = Date.now();
  const clock = manualClock(now);
  const { renewFresh } = await vacant('refused', now);
  const d = coordinatorDeps(client, t.names, { clock });
  next = { table: 'leases', fault: 'refused' };
  await expect(reconcileLease(d, 'refused')).rejects.toMatchObject({ name: 'ThrottlingException' });
  // before the fix: `now`, a ping of an election nobody opened
  expect(await pingOf('refused', 'best')).toBeUndefined();
  // an ack window later, `fresh` renewed on its own; `best` never saw an election
  clock.advance(6_000);
  await renewFresh(clock.now());
  const o = await reconcileLease(d, 'refused');
  // before the fix: elect `fresh`, `best` set aside as having ignored its last ping
  expect(o.decision).toMatchObject({ kind: 'openElection', ping: ['best'] });
});

it('a ping that failed (landed, its answer lost): the election is not opened, and the ping is taken back', async () => {
  const now = Date.now();
  await vacant('lost-ping', now);
  const d = coordinatorDeps(client, t.names, { clock: manualClock(now) });
  next = { table: 'candidates', fault: 'lost' };
  await expect(reconcileLease(d, 'lost-ping')).rejects.toMatchObject({ name: 'TimeoutError' });
  expect((await setup().leases.read('lost-ping')).item).not.toHaveProperty('election');
  // before the fix: `now`
  expect(await pingOf('lost-ping', 'best')).toBeUndefined();
});

it('the lease write landed, its answer lost: the election stands with its pings', async () => {
  const now = Date.now();
  await vacant('lost-write', now);
  const d = coordinatorDeps(client, t.names, { clock: manualClock(now) });
  next = { table: 'leases', fault: 'lost' };
  await expect(reconcileLease(d, 'lost-write')).rejects.toMatchObject({ name: 'TimeoutError' });
  expect((await setup().leases.read('lost-write')).item?.election).toMatchObject({ startedAt: now });
  expect(await pingOf('lost-write', 'best')).toBe(now);
  // the election waits for `best`
  expect((await reconcileLease(d, 'lost-write')).decision).toMatchObject({ kind: 'awaitAcks', pending: ['best'] });
});

it("the lease write lost to another writer's election, opened just before: the pings count for it and stand", async () => {
  const now = Date.now();
  await vacant('raced', now);
  const d = coordinatorDeps(client, t.names, { clock: manualClock(now) });
  const other = { id: 'raced#other', startedAt: now - 1, deadline: now + 5_000, strategy: OLDEST_EMULATION_VERSION };
  next = { table: 'leases', fault: async () => void (await setup().leases.write(await setup().leases.read('raced'), { set: { election: other } })) };
  // the lost race read again: that election waits for `best`, pinged at `now`
  const o = await reconcileLease(d, 'raced');
  expect(o).toMatchObject({ attempts: 2, decision: { kind: 'awaitAcks', election: { id: 'raced#other' }, pending: ['best'] } });
  // taken back, its election would elect `fresh` as soon as it is read
  expect(await pingOf('raced', 'best')).toBe(now);
});
