/**
 * Two processes under one identity in NoCoordination mode (client-go's plain race): there are no
 * candidate rows, so nobody answers an identity claim and the second start-up is not refused
 * (DuplicateIdentityError is the coordinated mode's). client-go's twins would both lead: it tells
 * its own term by holder identity alone. Here a term is its holder's instance (each start-up's
 * own), so the twin follows the term as another's and takes the lease only once it is free. On
 * DynamoDB Local, real processes' timings (STEADY), waiting on outcomes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaderElector } from '../../lib/sdk/index.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { STEADY, waitFor } from './harness.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('twin-nocoord')));
afterAll(async () => t.drop());

describe('two start-ups under one identity, NoCoordination', () => {
  it('the second is not refused: it follows the first one\'s term as another\'s, never leading beside it, and leads once it is released', async () => {
    const leases = new LeaseStore(t.client, t.names.leases);
    let leading = 0;
    let most = 0;
    const led: string[] = [];
    const errors: Error[] = [];
    const elector = (tag: string, newLeader: string[]) =>
      new LeaderElector({
        client: t.client,
        tables: t.names,
        leaseName: 'twin',
        identity: 'report-host-1',
        mode: 'NoCoordination',
        ...STEADY,
        onError: (e) => void errors.push(e),
        callbacks: {
          onStartedLeading: () => {
            led.push(tag);
            most = Math.max(most, ++leading);
          },
          onStoppedLeading: () => void leading--,
          onNewLeader: (who) => void newLeader.push(who),
        },
      });
    const seenByA: string[] = [];
    const seenByB: string[] = [];
    const a = elector('a', seenByA);
    const b = elector('b', seenByB);
    const stopA = new AbortController();
    const stopB = new AbortController();
    const runA = a.run(stopA.signal);
    await waitFor('a leads', () => a.isLeader());
    const runB = b.run(stopB.signal);
    await waitFor('b follows the term, its holder named as its own identity', () => seenByB.includes('report-host-1'));
    // three renewals of a's term land while b follows it
    const first = (await leases.get({ name: 'twin' })).item!;
    const seen = new Set([first.renewTime]);
    await waitFor('three renewals of its term', async () => seen.add((await leases.get({ name: 'twin' })).item!.renewTime).size > 3);
    expect(b.isLeader()).toBe(false);
    expect((await leases.get({ name: 'twin' })).item).toMatchObject({ holderIdentity: 'report-host-1', holderInstance: first.holderInstance, fencingToken: first.fencingToken });
    // a releases as it stops: b takes the lease, a new term with a higher token
    stopA.abort();
    await runA;
    await waitFor('b leads', () => b.isLeader());
    const taken = (await leases.get({ name: 'twin' })).item!;
    expect(taken.holderInstance).not.toBe(first.holderInstance);
    expect(taken.fencingToken).toBeGreaterThan(first.fencingToken);
    expect(led).toEqual(['a', 'b']);
    expect(most).toBe(1);
    stopB.abort();
    await runB;
    expect(errors.filter((e) => e.name === 'DuplicateIdentityError')).toEqual([]);
  });
});
