/**
 * One identity, one process, before the lease has a row (no coordinator yet, a new lease, a row an
 * operator deleted). A review found the second start-up under a live worker's identity took the
 * first one's candidate row at once, unrefused, and the first was told nothing until its next
 * candidacy renewal: with no lease row the newcomer put no claim. It now claims on the candidate
 * row (a write of its revision alone), which the live candidacy reads while its elector finds no
 * lease row. On DynamoDB Local (the claim's revision-only UpdateItem as DynamoDB runs it), real
 * processes' timings (STEADY), no coordinator, waiting on outcomes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { Log, STEADY, startElector, waitFor } from './harness.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('dup-norow')));
afterAll(async () => t.drop());

// no fallback writes a lease row while the test runs
const OPTIONS = { leaseName: 'norow', ...STEADY, fallbackAfterMs: 3_600_000 };

describe('a second start-up under a live worker’s identity, the lease without a row', () => {
  it('is refused (DuplicateIdentityError from run()); the first keeps its row, stays healthy, and is told', async () => {
    const log = new Log();
    const aErrors: Error[] = [];
    const a = startElector(t, log, 'w', OPTIONS, { errors: aErrors });
    await a.elector.ready;
    const b = startElector(t, log, 'w', OPTIONS);
    let ended: string | undefined;
    void b.done.then(() => (ended = 'resolved'), (e: Error) => (ended = e.name));
    const outcome = await waitFor('b refused or standing', () => ended ?? (b.elector.candidate!.healthy() && 'stands'));
    // before the fix: b stood on a's row (its run() pending), a healthy and told nothing
    expect(outcome).toBe('DuplicateIdentityError');
    expect((await new LeaseStore(t.client, t.names.leases).read('norow')).item).toBeUndefined();
    expect((await new CandidateStore(t.client, t.names.candidates).read('norow', 'w')).item?.identity).toBe(a.elector.instance);
    expect(a.elector.candidate!.healthy()).toBe(true);
    await waitFor('a told', () => aErrors.length > 0);
    expect(aErrors.map((e) => e.name)).toEqual(['DuplicateIdentityError']);
    await a.stop();
  });

  it('a renewal of its own whose answer was lost (it landed) is answered, not told as a second start-up (the diff review)', async () => {
    const log = new Log();
    const errors: Error[] = [];
    const a = startElector(t, log, 'w2', OPTIONS, { errors });
    await a.elector.ready;
    const store = new CandidateStore(t.client, t.names.candidates);
    const row = (await store.read('norow', 'w2')).item!;
    // what a renewal of a's candidacy leaves on the row when it lands and its answer never comes: the revision up, renewTime moved
    expect(await store.renew('norow', 'w2', row.renewTime + 1, undefined, undefined, a.elector.instance)).toBe(true);
    // a's candidacy reads its row while its elector finds no lease row, and answers with a renewal of its own
    await waitFor('a renews after it', async () => ((await store.read('norow', 'w2')).item?.renewTime ?? 0) > row.renewTime + 1);
    expect(errors.filter((e) => e.name === 'DuplicateIdentityError')).toEqual([]);
    expect(a.elector.candidate!.healthy()).toBe(true);
    await a.stop();
  });
});
