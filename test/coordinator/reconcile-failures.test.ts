/**
 * A tick whose reconciles fail lease by lease (a review, 2026-12-06: every write denied after a
 * deploy, an IAM mistake): the tick itself ends normally, so the leases it could not reconcile must
 * show in the gauges. A lease with no live holder in the row the tick read counts as leaderless; a
 * gauge counts the failures, every tick (0 included). On DynamoDB Local, its writes refused by a
 * client middleware as IAM would refuse them.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { makeHandler as coordinator } from '../../functions/coordinator.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { onTick, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { METRIC } from '../../lib/functions/metrics.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { testTables, type TestTables } from '../support.js';

const OEV = 'OldestEmulationVersion';
const WRITES = ['UpdateItemCommand', 'PutItemCommand', 'DeleteItemCommand', 'TransactWriteItemsCommand', 'BatchWriteItemCommand'];

let t: TestTables;
let denied: DynamoDBClient;
beforeAll(async () => {
  t = await testTables('rec-fail');
  denied = localClient(inject('ddbEndpoint'));
  denied.middlewareStack.add(
    (next, c) => async (args) => {
      if (WRITES.includes(c.commandName ?? '')) throw Object.assign(new Error(`User: arn:aws:sts::123456789012:assumed-role/coordinator is not authorized to perform: dynamodb:${c.commandName!.replace(/Command$/, '')} because no identity-based policy allows it`), { name: 'AccessDeniedException', $fault: 'client' });
      return next(args);
    },
    { step: 'initialize', name: 'deny-writes' },
  );
});
afterAll(async () => {
  denied.destroy();
  await t.drop();
});

/** The coordinator's deps on the client given, its gauges as added. */
function fdeps(client: DynamoDBClient) {
  const gauges: [string, number][] = [];
  const o = observability('coordinator', 'SILENT');
  const add = o.metrics.addMetric.bind(o.metrics);
  o.metrics.addMetric = (name, unit, value) => (gauges.push([name, value]), add(name, unit, value));
  const d: FunctionDeps = { coordinator: coordinatorDeps(client, t.names), timer: { schedule: async () => undefined }, publish: async () => undefined, deadLetter: async () => undefined, ...o };
  const gauge = (name: string) => gauges.filter(([n]) => n === name).map(([, v]) => v);
  return { d, gauge };
}

it('every write denied: the vacant lease and the one whose term expired count as leaderless, the held one does not; the failures are a gauge of their own', async () => {
  const now = Date.now();
  const setup = coordinatorDeps(t.client, t.names);
  const cand = async (lease: string, name: string, emulationVersion = '1.30.0') =>
    setup.candidates.write(await setup.candidates.read(lease, name), { set: { binaryVersion: '1.31.0', emulationVersion, preferredStrategies: [OEV], renewTime: now, createdAt: now - 60_000, identity: `${name}-1` } });
  // vacant: an election to open
  await cand('vacant', 'w');
  await setup.leases.write(await setup.leases.read('vacant'), { set: { leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 1 } });
  // a term that ended a minute ago (its holder stopped renewing): an election to open
  await cand('expired', 'w');
  await setup.leases.write(await setup.leases.read('expired'), { set: { holderIdentity: 'x', holderInstance: 'x-1', leaseDurationSeconds: 15, acquireTime: now - 120_000, renewTime: now - 60_000, leaseTransitions: 0, fencingToken: 2, electedBy: 'coordinator' } });
  // held and renewed, by a candidate of a newer emulation version than another's: the coordinator asks it to step down (a write)
  await cand('held', 'h', '1.31.0');
  await cand('held', 'w', '1.30.0');
  await setup.leases.write(await setup.leases.read('held'), { set: { holderIdentity: 'h', holderInstance: 'h-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 3, electedBy: 'coordinator' } });

  const { d, gauge } = fdeps(denied);
  const r = await onTick(d, 600_000);
  // and the tick's cursor, where the round's gauges are kept (lib/coordinator/tick.ts): its write is refused too, and told
  expect(r.errors.map((e) => [e.lease, e.error.name]).sort()).toEqual([
    ['(the tick cursor)', 'AccessDeniedException'],
    ['expired', 'AccessDeniedException'],
    ['held', 'AccessDeniedException'],
    ['vacant', 'AccessDeniedException'],
  ]);
  // before the fix: [] (only outcomes were judged), and the gauge 0
  expect([...r.leaderless].sort()).toEqual(['expired', 'vacant']);
  expect(gauge(METRIC.leaderless)).toEqual([2]);
  expect(gauge(METRIC.reconcileFailures)).toEqual([4]);
  expect((await setup.leases.read('vacant')).item).not.toHaveProperty('holderIdentity');

  // a tick with nothing failing publishes the failure gauge too: 0
  const ok = fdeps(t.client);
  const r2 = await onTick(ok.d, 600_000);
  expect(r2.errors).toEqual([]);
  expect(ok.gauge(METRIC.reconcileFailures)).toEqual([0]);
});

it("the coordinator's handler answers normally (its Errors alarm sees nothing), its gauges carry the vacant lease as leaderless and the failures", async () => {
  const now = Date.now();
  const setup = coordinatorDeps(t.client, t.names);
  // a lease of its own (the leases above are still vacant: their elections wait for acknowledgements)
  await setup.candidates.write(await setup.candidates.read('alone', 'w'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OEV], renewTime: now, createdAt: now, identity: 'w-1' } });
  await setup.leases.write(await setup.leases.read('alone'), { set: { leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 1 } });
  const { d, gauge } = fdeps(denied);
  const out = (await coordinator(d)({ source: 'aws.events', 'detail-type': 'Scheduled Event', time: new Date(now).toISOString() } as never, lambdaContext('coordinator'))) as { errors: { lease: string }[]; leaderless: number };
  expect(out.errors.map((e) => e.lease)).toContain('alone');
  expect(out.leaderless).toBeGreaterThanOrEqual(1);
  expect(gauge(METRIC.leaderless)).toEqual([out.leaderless]);
  expect(gauge(METRIC.reconcileFailures)).toEqual([out.errors.length]);
});

it("a vacant lease under NoCoordination whose stale successors the tick clears is not leaderless (not Conclave's to elect), as one with none is not", async () => {
  // a review of 646b22f9: clearing them (setSuccessor) counted the lease leaderless for that tick
  const now = Date.now();
  const setup = coordinatorDeps(t.client, t.names);
  for (const [lease, named] of [['nc-named', true], ['nc-none', false]] as const) {
    for (const n of ['a', 'b']) await setup.candidates.write(await setup.candidates.read(lease, n), { set: { emulationVersion: '1.30.0', binaryVersion: '1.30.0', preferredStrategies: [OEV], renewTime: now, createdAt: now, identity: `${n}-1` } });
    await setup.leases.write(await setup.leases.read(lease), { set: { strategy: 'NoCoordination', leaseDurationSeconds: 15, renewTime: now - 60_000, leaseTransitions: 3, fencingToken: 5, lastHolderIdentity: 'a', ...(named ? { successor: 'b', successorInstance: 'b-1' } : {}) } });
  }
  const { d } = fdeps(t.client);
  const r = await onTick(d, 600_000);
  expect(r.outcomes.filter((o) => o.lease.startsWith('nc-')).map((o) => [o.lease, o.decision.kind]).sort()).toEqual([
    ['nc-named', 'setSuccessor'],
    ['nc-none', 'leaveAlone'],
  ]);
  expect(r.leaderless.filter((n) => n.startsWith('nc-'))).toEqual([]);
  expect((await setup.leases.read('nc-named')).item).not.toHaveProperty('successor');
});
