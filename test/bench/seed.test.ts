/**
 * The coordinator-scale scenario's premises, on DynamoDB Local: the seeded rows are valid, a
 * table of healthy held leases really is "nothing to change" for a tick once a first tick has
 * settled it (no write at all, reads by scan only), and a table of vacant leases with candidates
 * that are not fresh really makes the tick ping every candidate and open an election per lease.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { leaseNames, seedLeases } from '../../bench/seed.js';
import { diffTallies, RequestCounter } from '../../bench/requests.js';
import { coordinatorDeps, reconcileAll } from '../../lib/coordinator/reconcile.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { testTables, type TestTables } from '../support.js';

const N = 30;
const CANDIDATES = 3;
let t: TestTables;

beforeAll(async () => {
  t = await testTables('bench-seed');
});
afterAll(() => t.drop());

describe('seeded leases for the coordinator-scale scenario', () => {
  it('held and healthy: after one settling tick, a tick reads by scan only and writes nothing; vacant: every lease opens an election', async () => {
    await seedLeases(t.client, t.names, { stem: 'lease', count: N, candidatesPerLease: CANDIDATES, state: 'held' });
    const client = localClient(inject('ddbEndpoint'));
    const counter = new RequestCounter().attach(client, () => 'coordinator');
    const deps = coordinatorDeps(client, t.names);
    try {
      const all = await reconcileAll(deps); // settling: whatever a healthy lease lacks is written once
      expect(all.invalid).toEqual([]);
      expect(all.errors).toEqual([]);
      expect(all.leases).toBe(N);
      expect(new Set(all.outcomes.map((o) => o.before?.holderIdentity))).toEqual(new Set(['c0']));

      const before = counter.snapshot();
      const steady = await reconcileAll(deps);
      const tick = diffTallies(counter.snapshot(), before)['coordinator']!;
      expect(steady.errors).toEqual([]);
      expect(steady.outcomes.map((o) => o.decision.kind)).toEqual(Array(N).fill('leaveAlone'));
      expect(steady.outcomes.every((o) => o.after === undefined)).toBe(true);
      expect(Object.keys(tick.commands)).toEqual(['Scan']);
      expect(tick.wru).toBe(0);
      expect(steady.leaderless).toEqual([]);

      await seedLeases(t.client, t.names, { stem: 'lease', count: N, candidatesPerLease: CANDIDATES, state: 'vacant', leasesOnly: true });
      const vacant = await reconcileAll(deps);
      expect(vacant.errors).toEqual([]);
      expect(vacant.outcomes.map((o) => o.decision.kind)).toEqual(Array(N).fill('openElection'));
      expect(vacant.outcomes.every((o) => o.pinged.length === CANDIDATES && o.after?.election !== undefined)).toBe(true);
      expect(vacant.outcomes.map((o) => o.lease).sort()).toEqual(leaseNames({ stem: 'lease', count: N }).sort());
    } finally {
      client.destroy();
    }
  });
});
