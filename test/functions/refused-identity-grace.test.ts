/**
 * What the tick tells an operator of an identity row the schema refuses: when it is collected. The
 * fix named renewTime + leaseDurationSeconds + identityGcGraceMs + clockSkewMs, while the collection
 * allows the larger of clockSkewMs and a row stamp's own error (1 s, lib/coordinator/reconcile.ts
 * identityGraceMs): with clockSkewMs set under 1 s, the message named a time the row outlived (a
 * review, 2026-12-07). On DynamoDB Local, on the coordinator's clock.
 */
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makeHandler as coordinatorTick } from '../../functions/coordinator.js';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps, reconcileAll } from '../../lib/coordinator/reconcile.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('refused-grace')));
afterAll(async () => t.drop());

it('the fix names the grace the collection allows: identityGcGraceMs and the larger of clockSkewMs and 1 s', async () => {
  const now = Date.now();
  const clock = manualClock(now);
  // clockSkewMs under a stamp's own error: the collection allows 2 s + 1 s
  const coordinator = coordinatorDeps(t.client, t.names, { clock, config: { clockSkewMs: 0, identityGcGraceMs: 2_000 } });
  const d: FunctionDeps = { coordinator, timer: { schedule: async () => undefined }, publish: async () => undefined, deadLetter: async () => undefined, ...observability('coordinator', 'SILENT') };
  const warned: Record<string, unknown>[] = [];
  const warn = d.logger.warn.bind(d.logger);
  d.logger.warn = ((message: string, extra: Record<string, unknown>) => (warned.push(extra), warn(message, extra))) as typeof d.logger.warn;
  const key = { component: 'refused-grace', name: 'r' };
  await t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall({ ...key, holderIdentity: 'r_1', hostname: 'h', acquireTime: 'then', leaseDurationSeconds: 60, revision: 1, renewTime: now }) }));
  await coordinatorTick(d)({ source: 'aws.events', 'detail-type': 'Scheduled Event', time: new Date(now).toISOString() } as never, lambdaContext('coordinator', clock));
  const fix = warned.find((w) => JSON.stringify(w['key']) === JSON.stringify(key))?.['fix'];
  // before the fix: "… plus identityGcGraceMs and clockSkewMs (2 s), …"
  expect(fix).toMatch(/, plus identityGcGraceMs and the larger of clockSkewMs and a row stamp's own error \(3 s\), while no held lease/);
  // the collection, by that time: kept 2.5 s past its term, collected 3.5 s past it
  clock.set(now + 60_000 + 2_500);
  expect((await reconcileAll(coordinator)).collectedIdentities).toEqual([]);
  clock.set(now + 60_000 + 3_500);
  expect((await reconcileAll(coordinator)).collectedIdentities).toEqual([key]);
});
