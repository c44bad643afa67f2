/**
 * The coordinator's gauge of leases leaderless past their bound (`conclave_leases_leaderless_past_bound`,
 * which the LeaderlessLeases alarm watches): of the leases the tick counts leaderless (live
 * candidates, no live holder after it), those whose row shows them vacant for longer than a minute
 * and three lease durations. A review (2026-12-07, fifteenth): the alarm watched the leaderless
 * gauge itself, which counts every lease caught between a term and the next (an election under way,
 * a vacancy just fallen), so at scale different leases at successive ticks kept it up with none
 * stuck; and it fired only 10–15 minutes in. On DynamoDB Local, on a driven clock.
 */
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simulatedClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { leaderlessPastBound, onTick, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { LEADERLESS_PAST_BOUND, METRIC } from '../../lib/functions/metrics.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { metricDocs, testTables, type TestTables } from '../support.js';

const T0 = Date.UTC(2026, 11, 7, 12);
const MIN = 60_000;

let t: TestTables;
beforeAll(async () => void (t = await testTables('past-bound')));
afterAll(() => t.drop());

describe('leases leaderless past their bound, at each tick', () => {
  it('counts a lease vacant for 10 minutes whose only candidate stands down; not one vacant 5 s, nor one whose election the tick just opened (each counted leaderless)', async () => {
    const clock = simulatedClock({ start: T0 });
    const o = observability('coordinator', 'SILENT', 'orders-leases');
    const d: FunctionDeps = { coordinator: coordinatorDeps(t.client, t.names, { clock }), timer: { schedule: async () => undefined }, publish: async () => undefined, deadLetter: async () => undefined, ...o };
    const c = d.coordinator.candidates;
    const candidate = async (lease: string, name: string, extra: Record<string, number> = {}) =>
      c.write(await c.read(lease, name), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: T0 - MIN, createdAt: T0 - 60 * MIN, identity: `${name}-1`, ...extra } });
    const row = (item: Record<string, unknown>) => t.client.send(new PutItemCommand({ TableName: t.names.leases, Item: marshall({ leaseDurationSeconds: 15, leaseTransitions: 1, fencingToken: 5, revision: 3, ...item }) }));
    // its holder released it 10 minutes ago (the release's stamp); its one candidate's work failed at two starts: it stands down
    await row({ name: 'stuck', renewTime: T0 - 10 * MIN, lastHolderIdentity: 'w' });
    await candidate('stuck', 'w', { standsDownUntil: T0 + 10 * MIN });
    // the same, released 5 s ago: a vacancy just fallen
    await row({ name: 'recent', renewTime: T0 - 5_000, lastHolderIdentity: 'w' });
    await candidate('recent', 'w', { standsDownUntil: T0 + 10 * MIN });
    // a holder silent for 10 minutes (the functions down, say): the tick opens its election now
    await row({ name: 'electing', holderIdentity: 'gone', renewTime: T0 - 10 * MIN, acquireTime: T0 - 20 * MIN });
    await candidate('electing', 'x');

    const { docs, out: r } = await metricDocs(async () => {
      const r = await onTick(d, 10 * MIN);
      d.metrics.publishStoredMetrics();
      return r;
    });
    expect(r.outcomes.find((x) => x.lease === 'electing')?.decision.kind).toBe('openElection');
    expect([...r.leaderless].sort()).toEqual(['electing', 'recent', 'stuck']);
    expect(leaderlessPastBound(r, T0, d.coordinator.config.clockSkewMs)).toEqual(['stuck']);
    const doc = docs.find((x) => LEADERLESS_PAST_BOUND in x);
    // before: no such metric (the alarm watched the leaderless gauge, 3 here)
    expect(doc).toMatchObject({ service: 'conclave', function: 'coordinator', deployment: 'orders-leases', [LEADERLESS_PAST_BOUND]: 1, [METRIC.leaderless]: 3 });
    const declared = (doc!['_aws'] as { CloudWatchMetrics: { Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[] }).CloudWatchMetrics;
    expect(declared.flatMap((m) => m.Metrics)).toContainEqual({ Name: LEADERLESS_PAST_BOUND, Unit: 'Count' });
    expect(declared.flatMap((m) => m.Dimensions)).toEqual([expect.arrayContaining(['service', 'function', 'deployment'])]);

    // a minute on, the election under way still counts from its start; the lease vacant 5 s, now 65 s,
    // is past a minute and three lease durations (45 s) and clockSkewMs
    await clock.run(MIN);
    const again = await metricDocs(async () => {
      const r = await onTick(d, 10 * MIN);
      d.metrics.publishStoredMetrics();
      return r;
    });
    expect(again.docs.find((x) => LEADERLESS_PAST_BOUND in x)).toMatchObject({ [LEADERLESS_PAST_BOUND]: 2 });
    expect(leaderlessPastBound(again.out, clock.now(), d.coordinator.config.clockSkewMs).sort()).toEqual(['recent', 'stuck']);
  });
});
