/**
 * wakeBatch (lib/functions/wake.ts): the wakes of one invocation of the lease stream's function,
 * sent without waiting, at most `limit` at once, a queued wake of a lease giving way to a later one,
 * and waited for together at the end, for a bounded time. On simulated time, with a Waker that
 * answers after SLOW_MS.
 */
import { describe, expect, it } from 'vitest';
import { simulatedClock } from '../../lib/clock.js';
import { wakeBatch, type Waker } from '../../lib/functions/wake.js';

const SLOW_MS = 1_400;

function setUp(limit: number, fails: (lease: string) => boolean = () => false) {
  const clock = simulatedClock({ start: 0 });
  const sent: { lease: string; revision: number | undefined; at: number }[] = [];
  const failed: string[] = [];
  const waker: Waker = (lease, revision) => {
    sent.push({ lease, revision, at: clock.now() });
    return new Promise((resolve, reject) => clock.setTimer(SLOW_MS, () => (fails(lease) ? reject(new Error(`refused ${lease}`)) : resolve())));
  };
  const batch = wakeBatch(waker, clock, (lease, e) => void failed.push(`${lease}: ${e.message}`), limit);
  return { clock, sent, failed, batch };
}

describe('wakeBatch', () => {
  it('sends at once, at most `limit` at a time, the rest as those are answered, and settles when the last is', async () => {
    const { clock, sent, batch } = setUp(2);
    for (const lease of ['a', 'b', 'c', 'd', 'e']) batch.send(lease, 1);
    expect(sent.map((s) => s.lease)).toEqual(['a', 'b']); // sent before send() returned: nothing waits for a wake
    const settled = batch.settle(10_000);
    await clock.run(10_000);
    expect(await settled).toEqual({ dropped: [], unanswered: 0 });
    expect(sent.map((s) => `${s.lease}@${s.at}`)).toEqual(['a@0', 'b@0', `c@${SLOW_MS}`, `d@${SLOW_MS}`, `e@${2 * SLOW_MS}`]);
  });

  it('a queued wake of a lease gives way to a later one of the same lease; one in flight does not', async () => {
    const { clock, sent, batch } = setUp(1);
    batch.send('a', 1); // in flight
    batch.send('b', 1);
    batch.send('a', 2); // queued: a later revision of a
    batch.send('b', 2); // replaces b@1, keeping its place
    batch.send('a', 3); // replaces a@2
    const settled = batch.settle(10_000);
    await clock.run(10_000);
    await settled;
    expect(sent.map((s) => `${s.lease}@${s.revision}`)).toEqual(['a@1', 'b@2', 'a@3']);
  });

  it('a queued wake given way to a lower revision (a later record of a write a reconcile already passed, or a row created again) names none: a worker at that revision would skip it', async () => {
    const { clock, sent, batch } = setUp(1);
    batch.send('x', 1); // in flight
    batch.send('a', 5); // record at revision 5
    batch.send('a', 7); // its reconcile wrote 7
    batch.send('a', 6); // the batch's next record of a: revision 6, written before the invocation
    batch.send('b', 9); // a held row's last revision
    batch.send('b', 1); // created again after a delete: revisions start over
    const settled = batch.settle(10_000);
    await clock.run(10_000);
    await settled;
    // before the fix: a@6 and b@1, which a worker that had read 6 (or the new row's 1) took as nothing new (lib/sdk/step.ts 'wake')
    expect(sent.map((s) => `${s.lease}@${s.revision}`)).toEqual(['x@1', 'a@undefined', 'b@undefined']);
  });

  it('settles within its time: what is still queued is dropped and never sent, what is in flight is counted unanswered', async () => {
    const { clock, sent, batch } = setUp(2);
    for (const lease of ['a', 'b', 'c']) batch.send(lease, undefined);
    let result: unknown;
    const settled = batch.settle(SLOW_MS / 2).then((r) => (result = r));
    await clock.run(SLOW_MS / 2);
    await settled;
    expect(result).toEqual({ dropped: ['c'], unanswered: 2 });
    await clock.run(10_000);
    expect(sent.map((s) => s.lease)).toEqual(['a', 'b']);
    batch.send('d', 1); // after settle: nothing more goes out
    expect(sent).toHaveLength(2);
  });

  it('a wake that fails is handed to `failed` alone: the others go out and the batch settles', async () => {
    const { clock, sent, failed, batch } = setUp(2, (lease) => lease === 'b');
    for (const lease of ['a', 'b', 'c']) batch.send(lease, 1);
    const settled = batch.settle(10_000);
    await clock.run(10_000);
    expect(await settled).toEqual({ dropped: [], unanswered: 0 });
    expect(sent.map((s) => s.lease)).toEqual(['a', 'b', 'c']);
    expect(failed).toEqual(['b: refused b']);
  });

  it('settles at once with nothing out', async () => {
    const { batch } = setUp(2);
    expect(await batch.settle(10_000)).toEqual({ dropped: [], unanswered: 0 });
  });
});
