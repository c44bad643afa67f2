/**
 * The chaos harness's watch of the leases table (chaos/verdict.ts Feed.watch): what it records of
 * each term is what a run's figures are drawn from. A term given back keeps its fencing token (the
 * release takes the holder off the row), so a watch that recorded token changes alone counted the
 * released row as still naming its last holder until the next term (chaos-B1's "phantom terms":
 * 11.8 s in 19-0, 12.3 s in loaded-11-0, each a term its taker released unled). On DynamoDB Local;
 * waits on conditions, never on a time budget.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Feed } from '../../chaos/verdict.js';
import { waitFor } from '../sdk/harness.js';
import { acquisition } from '../../lib/sdk/lock.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { testTables, type TestTables } from '../support.js';

const NOW = 1_800_000_000_000;

describe('Feed.watch', () => {
  let t: TestTables;
  let leases: LeaseStore;
  beforeAll(async () => {
    t = await testTables('chaos-watch');
    leases = new LeaseStore(t.client, t.names.leases);
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('records a term released (its token kept, no holder) and each renewal, with the row’s renewTime and revision', async () => {
    const feed = new Feed();
    const taken = await leases.write(await leases.read('alpha'), acquisition(undefined, { identity: 'w1', instance: 'w1-1', now: NOW, leaseDurationSeconds: 3, electedBy: 'successor' }));
    const stop = feed.watch(leases, ['alpha'], () => undefined);
    await waitFor('the term seen', () => feed.observations.length >= 1);
    const term = { holderIdentity: 'w1', fencingToken: taken.fencingToken };
    const renewed = await leases.renewTerm('alpha', term, NOW + 600, 3);
    await waitFor('the renewal seen', () => feed.observations.some((o) => o.revision === renewed!.revision));
    const released = await leases.releaseTerm('alpha', term, NOW + 1_000);
    await waitFor('the release seen', () => feed.observations.some((o) => o.holder === undefined && o.fencingToken === taken.fencingToken));
    await stop();
    expect(feed.observations.map(({ lease, fencingToken, holder, renewTime, revision }) => ({ lease, fencingToken, holder, renewTime, revision }))).toEqual([
      { lease: 'alpha', fencingToken: taken.fencingToken, holder: 'w1', renewTime: NOW, revision: taken.revision },
      { lease: 'alpha', fencingToken: taken.fencingToken, holder: 'w1', renewTime: NOW + 600, revision: renewed!.revision },
      { lease: 'alpha', fencingToken: taken.fencingToken, holder: undefined, renewTime: released!.renewTime, revision: released!.revision },
    ]);
  });
});
