/**
 * A holder silent for half its term (issue 38; seed 21049 `--regions`): the coordinator schedules
 * the moment the term runs out by its own judgement on the timer queue, so a dead holder's lease is
 * judged again then, not at the next tick (a minute in AWS). On DynamoDB Local, time a manual clock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { onTick, onTimer, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { parseTimerQueueMessage, type TermEndMessage, type TimerMessage } from '../../lib/functions/timer.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => {
  t = await testTables('term-end');
});
afterAll(async () => {
  await t.drop();
});

const DURATION_MS = 15_000;

function setup(start: number) {
  const clock = manualClock(start);
  const termEnds: { message: TermEndMessage; delayMs: number }[] = [];
  const elections: TimerMessage[] = [];
  const d: FunctionDeps = {
    coordinator: coordinatorDeps(t.client, t.names, { clock, config: { ackWindowMs: 5_000 } }),
    timer: { schedule: async (m, delayMs) => void ('termEnd' in m ? termEnds.push({ message: m, delayMs }) : 'electionId' in m ? elections.push(m) : undefined) },
    publish: async () => undefined,
    deadLetter: async () => undefined,
    ...observability('test', 'SILENT'),
  };
  return { clock, d, termEnds, elections };
}

/** Candidates `names` renewed at `at`, the first the longest-standing; the lease held by it, renewed at `renewedAt` (its own row: no session). */
async function stand(d: FunctionDeps, lease: string, names: string[], at: number, renewedAt: number) {
  const c = d.coordinator;
  for (const [i, name] of names.entries()) {
    await c.candidates.write(await c.candidates.read(lease, name), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: at, createdAt: at - 60_000 * (10 - i), identity: `${name}-1` } });
  }
  await c.leases.write(await c.leases.read(lease), {
    set: { holderIdentity: names[0]!, holderInstance: `${names[0]}-1`, leaseDurationSeconds: DURATION_MS / 1000, acquireTime: renewedAt - 60_000, renewTime: renewedAt, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' },
  });
}

describe('a holder silent for half its term', () => {
  it('the tick schedules its term’s end; the timer then opens the election, not the next tick', async () => {
    const start = Date.now();
    const { clock, d, termEnds } = setup(start);
    const lease = 'silent-holder';
    await stand(d, lease, ['a', 'b', 'c'], start, start);
    const skew = d.coordinator.config.clockSkewMs;
    await onTick(d); // names a successor
    expect(termEnds).toEqual([]);

    clock.set(start + 9_000); // a's last renewal 9 s ago, more than half its 15 s term
    const o = (await onTick(d)).outcomes.find((x) => x.lease === lease)!;
    expect(o.decision).toMatchObject({ kind: 'leaveAlone', reason: 'leaderHealthy' });
    const due = start + DURATION_MS + skew + 1; // the first moment the coordinator judges it vacant
    expect(termEnds).toEqual([{ message: { lease, termEnd: due }, delayMs: due - (start + 9_000) }]);
    // what the queue carries is what the election timer's handler parses
    expect(parseTimerQueueMessage(JSON.stringify(termEnds[0]!.message), 'test')).toEqual({ kind: 'termEnd', message: { lease, termEnd: due } });

    // the message early (SQS rounds a delay up, a redelivery comes late, but a clock may be ahead): still a leader, judged again then
    clock.set(due - 2);
    expect((await onTimer(d, termEnds[0]!.message))?.decision).toMatchObject({ kind: 'leaveAlone', reason: 'leaderHealthy' });
    expect(termEnds.at(-1)).toEqual({ message: { lease, termEnd: due }, delayMs: 2 });

    // at it: the term has run out, and the next election opens (the candidates, renewed 17 s ago, are pinged)
    clock.set(due);
    const fired = await onTimer(d, termEnds.at(-1)!.message);
    expect(fired?.decision).toMatchObject({ kind: 'openElection', vacancy: 'expired' });
    expect((await d.coordinator.leases.read(lease)).item!.election).toBeDefined();
  });

  it('a holder renewing on time gets no timer, and one that renewed after its timer was set is left alone without another', async () => {
    const start = Date.now();
    const { clock, d, termEnds: all } = setup(start);
    const lease = 'renewing-holder';
    // the tick reconciles every lease in the table: this test's are the ones counted
    const termEnds = { get list() { return all.filter((x) => x.message.lease === lease); } };
    await stand(d, lease, ['a', 'b'], start, start);
    clock.set(start + 6_000); // renewed 6 s ago: inside half its term
    await onTick(d);
    expect(termEnds.list).toEqual([]);

    clock.set(start + 8_000);
    await onTick(d);
    expect(termEnds.list).toHaveLength(1);
    // a renews before the timer fires
    const c = d.coordinator;
    await c.leases.write(await c.leases.read(lease), { set: { renewTime: start + 10_000 } });
    clock.set(termEnds.list[0]!.message.termEnd);
    expect((await onTimer(d, termEnds.list[0]!.message))?.decision).toMatchObject({ kind: 'leaveAlone', reason: 'leaderHealthy' });
    expect(termEnds.list).toHaveLength(1);
  });
});
