/**
 * The coordinator's gauges when a round spans invocations (a review, 2026-12-06): LeaderlessLeases
 * and ReconcileFailures alarm on the Minimum of every tick for two periods, so an invocation whose
 * slice of the round holds none of the leaderless or failing leases must not publish 0 for them.
 * Before, each invocation published its own slice's counts: one leaderless lease in a round of two
 * invocations gave 1, 0, 1, 0, and neither alarm ever fired. On DynamoDB Local, through the real
 * tick handler (onTick with Lambda's remaining time); one lease's writes refused by a client
 * middleware as IAM would refuse them, each reconcile costing a second of the coordinator's clock.
 */
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { onTick, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { METRIC } from '../../lib/functions/metrics.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { testTables, type TestTables } from '../support.js';

const T0 = Date.UTC(2026, 11, 6);
const OEV = 'OldestEmulationVersion';
const WRITES = ['UpdateItemCommand', 'PutItemCommand', 'DeleteItemCommand', 'TransactWriteItemsCommand', 'BatchWriteItemCommand'];
/** Lambda's remaining time at each invocation: 15 s of reconciles after the tick's 30 s margin. */
const REMAINING_MS = 45_000;
const RECONCILE_MS = 1_000;
const TICK_EVERY_MS = 60_000;

let t: TestTables;
let client: DynamoDBClient;
let denying = true;
const clock = manualClock(T0);

beforeAll(async () => {
  t = await testTables('round-gauges');
  client = localClient(inject('ddbEndpoint'));
  client.middlewareStack.add(
    (next, c) => async (args) => {
      if (denying && WRITES.includes(c.commandName ?? '') && JSON.stringify(args.input).includes('"lease-000"'))
        throw Object.assign(new Error(`User: arn:aws:sts::123456789012:assumed-role/coordinator is not authorized to perform: dynamodb:${c.commandName!.replace(/Command$/, '')}`), { name: 'AccessDeniedException', $fault: 'client' });
      return next(args);
    },
    { step: 'initialize', name: 'deny-lease-000' },
  );
});
afterAll(async () => {
  client.destroy();
  await t.drop();
});

it('a leaderless lease whose reconcile fails, in a round of two invocations: every tick publishes it in both gauges until a round has seen it mended', async () => {
  const setup = coordinatorDeps(t.client, t.names, { clock });
  const names = Array.from({ length: 30 }, (_, i) => `lease-${String(i).padStart(3, '0')}`);
  for (const leaseName of names) {
    await setup.candidates.write(await setup.candidates.read(leaseName, 'a'), { set: { emulationVersion: '1.30.0', binaryVersion: '1.30.0', preferredStrategies: [OEV], renewTime: T0, createdAt: T0, identity: 'a-1' } });
    // every lease but the first held by its one candidate for an hour; the first vacant
    if (leaseName !== 'lease-000') await setup.leases.write(await setup.leases.read(leaseName), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 3600, acquireTime: T0, renewTime: T0, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' } });
  }

  const gauges: [string, number][] = [];
  const o = observability('coordinator', 'SILENT');
  const add = o.metrics.addMetric.bind(o.metrics);
  o.metrics.addMetric = (name, unit, value) => (gauges.push([name, value]), add(name, unit, value));
  // each reconcile the tick goes through costs a second of its clock (told where the function logs it)
  for (const level of ['debug', 'info'] as const) {
    const log = o.logger[level].bind(o.logger);
    o.logger[level] = ((message: string, ...rest: unknown[]) => {
      if (message === 'reconciled') clock.advance(RECONCILE_MS);
      return log(message, ...(rest as []));
    }) as (typeof o.logger)[typeof level];
  }
  const d: FunctionDeps = { coordinator: coordinatorDeps(client, t.names, { clock, config: { concurrency: 1 } }), timer: { schedule: async () => undefined }, publish: async () => undefined, deadLetter: async () => undefined, ...o };
  const invoke = async () => {
    const at = clock.now();
    gauges.length = 0;
    const r = await onTick(d, REMAINING_MS);
    clock.set(at + TICK_EVERY_MS);
    const gauge = (name: string) => gauges.filter(([n]) => n === name).map(([, v]) => v);
    return { r, leaderless: gauge(METRIC.leaderless), failures: gauge(METRIC.reconcileFailures) };
  };

  const seen = [];
  for (let i = 0; i < 6; i++) seen.push(await invoke());
  expect(seen.map((s) => s.r.round?.done), 'each round takes two invocations').toEqual([false, true, false, true, false, true]);
  expect(seen.map((s) => s.r.leaderless.length), "lease-000 is in each round's first invocation's slice").toEqual([1, 0, 1, 0, 1, 0]);
  // before the fix: [1, 0, 1, 0, 1, 0] each (the Minimum over a period 0: no alarm ever)
  expect(seen.map((s) => s.leaderless)).toEqual([[1], [1], [1], [1], [1], [1]]);
  expect(seen.map((s) => s.failures)).toEqual([[1], [1], [1], [1], [1], [1]]);

  // mended: the writes allowed again, and lease-000 held
  denying = false;
  await setup.leases.write(await setup.leases.read('lease-000'), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 3600, acquireTime: clock.now(), renewTime: clock.now(), leaseTransitions: 1, fencingToken: 2, electedBy: 'coordinator' }, remove: ['election'] });
  const after = [];
  for (let i = 0; i < 4; i++) after.push(await invoke());
  expect(after.map((s) => s.r.leaderless.length)).toEqual([0, 0, 0, 0]);
  // mid-round, the last whole round's count stands until this round has seen every lease
  expect(after.map((s) => s.leaderless)).toEqual([[1], [0], [0], [0]]);
  expect(after.map((s) => s.failures)).toEqual([[1], [0], [0], [0]]);
});
