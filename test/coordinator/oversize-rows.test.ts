/**
 * Rows a worker of a lease may write that no writer of Conclave's would, as the tick reads them
 * (review, 2026-12-07, fourteenth; confirmed on DynamoDB Local): a lease or candidate row over its
 * kind's size bound (valid field by field, its nested objects carrying keys the schema drops) is
 * refused as a row of a bad field is, and a candidate whose renewTime is in the year 9999 (valid:
 * before the year 10000) counts stale, not live for ever.
 */
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps, reconcileAll } from '../../lib/coordinator/reconcile.js';
import { isCandidateStale } from '../../lib/election/vacancy.js';
import { MAX_MILLIS } from '../../lib/schemas/common.js';
import { testTables, type TestTables } from '../support.js';

const T0 = Date.UTC(2026, 11, 7);
const MIN = 60_000;
const DAY = 86_400_000;
const OEV = 'OldestEmulationVersion';

let t: TestTables;
beforeEach(async () => void (t = await testTables('oversize')));
afterEach(() => t.drop());

const candidate = (name: string, more: Record<string, unknown> = {}) => ({ leaseName: 'job', name, binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OEV], createdAt: T0 - MIN, renewTime: T0, revision: 1, ...more });
const put = (table: string, item: Record<string, unknown>) => t.client.send(new PutItemCommand({ TableName: table, Item: marshall(item) }));
const exists = async (key: Record<string, string>) => (await t.client.send(new GetItemCommand({ TableName: t.names.candidates, Key: marshall(key), ConsistentRead: true }))).Item !== undefined;
/** 200 KB of keys the schema drops. */
const extra = Object.fromEntries(Array.from({ length: 20 }, (_, k) => [`x${k}`, 'y'.repeat(10_000)]));

describe('a row over its kind’s size bound', () => {
  it('a lease row is broken (left alone, told), as one of a bad field', async () => {
    const clock = manualClock(T0);
    const deps = coordinatorDeps(t.client, t.names, { clock });
    await put(t.names.leases, { name: 'job', leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 1, revision: 1, election: { id: 'e1', startedAt: T0, deadline: T0 + 3_000, strategy: OEV, ...extra } });
    await put(t.names.candidates, candidate('a'));
    const r = await reconcileAll(deps);
    expect(r.broken.map((b) => b.lease)).toEqual(['job']);
    expect(r.broken[0]!.error.message).toMatch(/\(root\): is 200\d{3} bytes: a valid lease row is at most 196608$/);
    expect(r.outcomes).toEqual([]);
  });

  it('a candidate row takes no part in elections, and is collected once stale by its stamp', async () => {
    const clock = manualClock(T0);
    const deps = coordinatorDeps(t.client, t.names, { clock });
    await put(t.names.candidates, candidate('big', { location: { zone: 'us-east-1a', ...extra } }));
    await put(t.names.candidates, candidate('a'));
    const r1 = await reconcileAll(deps);
    expect(r1.invalid.map((i) => i.key)).toEqual([{ leaseName: 'job', name: 'big' }]);
    expect(r1.outcomes.map((o) => o.decision.kind)).toEqual(['openElection']); // of 'a' alone (fresh: not pinged)
    expect(r1.outcomes.flatMap((o) => o.pinged)).toEqual([]);
    clock.advance(31 * MIN);
    const r2 = await reconcileAll(deps);
    expect(r2.collectedCandidates).toContainEqual({ leaseName: 'job', name: 'big' });
    expect(await exists({ leaseName: 'job', name: 'big' })).toBe(false);
  });
});

describe('a candidate renewTime over a day ahead', () => {
  it('is stale: no clock is a day off, and left to read live, it never went stale', () => {
    expect(isCandidateStale({ renewTime: MAX_MILLIS }, T0, 30 * MIN)).toBe(true);
    expect(isCandidateStale({ renewTime: T0 + DAY + 1 }, T0, 30 * MIN)).toBe(true);
    // a clock ahead, within a day: fresh as ever (isFresh judges what it proves)
    expect(isCandidateStale({ renewTime: T0 + DAY }, T0, 30 * MIN)).toBe(false);
    expect(isCandidateStale({ renewTime: T0 + 5_000 }, T0, 30 * MIN)).toBe(false);
  });

  it('a valid row of one takes no part in elections and is collected by the next pass; a refused row of one too', async () => {
    const clock = manualClock(T0);
    const deps = coordinatorDeps(t.client, t.names, { clock });
    await put(t.names.candidates, candidate('future', { renewTime: MAX_MILLIS }));
    await put(t.names.candidates, candidate('refused', { renewTime: MAX_MILLIS, binaryVersion: 5 }));
    await put(t.names.candidates, candidate('a'));
    const r = await reconcileAll(deps);
    // before: 'future' pinged for ever (its stamp proves nothing: isFresh), never collected; 'a' is fresh
    expect(r.outcomes.map((o) => o.decision.kind)).toEqual(['openElection']);
    expect(r.outcomes.flatMap((o) => o.pinged)).toEqual([]);
    expect(r.collectedCandidates).toEqual(expect.arrayContaining([{ leaseName: 'job', name: 'future' }, { leaseName: 'job', name: 'refused' }]));
    expect(await exists({ leaseName: 'job', name: 'future' })).toBe(false);
    expect(await exists({ leaseName: 'job', name: 'refused' })).toBe(false);
    expect(await exists({ leaseName: 'job', name: 'a' })).toBe(true);
  });
});
