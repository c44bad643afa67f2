/**
 * The simulation the SDK's tests run on (sim/harness.ts): a seed replays exactly, a run ends at
 * the step an outcome holds, the machines' faults do what they say, and the functions Lambda runs
 * see every write, an operator's included.
 */
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import type { Wake } from '../../lib/sdk/push.js';
import { FAST, LATENCY_MS, Sim, T0 } from '../../sim/harness.js';

/** Three coordinated electors; the leader crashes; a new one takes over. */
async function story(seed: number) {
  const sim = await Sim.create({ seed, config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } });
  sim.coordinator();
  const es = ['a', 'b', 'c'].map((id) => sim.elector(id, { leaseName: 'job', releaseOnCancel: false }));
  const first = await sim.until('a leader', () => es.find((e) => e.elector.isLeader()));
  await sim.run(FAST.leaseDurationMs);
  first.machine.kill();
  await sim.until('another leader', () => es.find((e) => e !== first && e.elector.isLeader()));
  await sim.run(FAST.leaseDurationMs);
  // (instance ids aside: they are unique per start-up, not part of the schedule)
  return {
    entries: sim.log.entries.map((e) => ({ ...e })),
    writes: sim.leaseWrites.map((w) => ({ at: w.at, by: w.by, holder: w.item?.['holderIdentity'], renewTime: w.item?.['renewTime'], fencingToken: w.item?.['fencingToken'], successor: w.item?.['successor'] })),
  };
}

describe('Sim', () => {
  it('the same seed replays the same run, to the write and the microsecond; another seed another run', async () => {
    const [one, again, other] = [await story(7), await story(7), await story(8)];
    expect(again).toEqual(one);
    expect(other).not.toEqual(one);
  });

  it('until() ends the run at the step the outcome holds; past its bound it throws, naming what it waited for', async () => {
    const sim = await Sim.create();
    let fired = 0;
    for (const ms of [100, 250, 400]) sim.clock.setTimer(ms, () => fired++);
    await sim.until('two timers', () => fired === 2);
    expect(sim.elapsed).toBe(250);
    await expect(sim.until('a fourth timer', () => fired === 4, 1_000)).rejects.toThrow(/not within 1000 simulated ms .*: a fourth timer/);
    expect(sim.elapsed).toBe(1_250);
  });

  it('during() checks its invariant after every step and fails at the first step it breaks', async () => {
    const sim = await Sim.create();
    let n = 0;
    sim.clock.setTimer(300, () => n++);
    await expect(sim.during(1_000, 'n stays 0', () => n === 0)).rejects.toThrow(/n stays 0: broken 300 ms into the simulation/);
    await sim.during(1_000, 'n stays 1', () => n === 1);
  });

  it('a machine’s requests take the latency each way; a fault answers instead of the model; a killed machine is never answered', async () => {
    const sim = await Sim.create();
    const m = sim.machine();
    const read = () => sim.leases.read('x'); // the operator: no latency
    await read();
    expect(sim.elapsed).toBe(0);
    const { LeaseStore } = await import('../../lib/stores/lease-store.js');
    const store = new LeaseStore(m.client, sim.names.leases);
    await sim.settle(store.read('x'));
    expect(sim.elapsed).toBe(2 * LATENCY_MS);
    expect(m.sent.map((r) => [r.operation, r.at])).toEqual([['GetItem', T0]]);
    m.fault = () => Object.assign(new Error('injected'), { name: 'Injected' });
    await expect(sim.settle(store.read('x'))).rejects.toThrow('injected');
    m.fault = undefined;
    m.kill();
    let answered = false;
    void store.read('x').finally(() => (answered = true));
    await sim.run(60_000);
    expect(answered).toBe(false);
  });

  it('a paused machine’s timers wait for it to resume', async () => {
    const sim = await Sim.create();
    const m = sim.machine();
    const at: number[] = [];
    m.clock.setTimer(100, () => at.push(sim.elapsed));
    m.clock.pause();
    await sim.run(1_000);
    expect(at).toEqual([]);
    m.clock.resume();
    expect(at).toEqual([1_000]);
  });

  it('a machine whose timers count down on its monotonic clock (monotonicTimers): a suspend it did not count (lostMs) puts off every timer by as much, those due meanwhile and those due after', async () => {
    const sim = await Sim.create();
    const m = sim.machine();
    m.clock.monotonicTimers = true;
    const at: [string, number][] = [];
    m.clock.setTimer(100, () => at.push(['due asleep', sim.elapsed]));
    m.clock.setTimer(3_000, () => at.push(['due after', sim.elapsed]));
    const cancelled = m.clock.setTimer(200, () => at.push(['cancelled', sim.elapsed]));
    await sim.run(50);
    m.clock.pause();
    await sim.run(1_000);
    m.clock.lostMs += 1_000;
    cancelled.cancel();
    m.clock.resume();
    expect(at).toEqual([]);
    await sim.run(5_000);
    expect(at).toEqual([['due asleep', 1_100], ['due after', 4_000]]);
  });

  it('a timer cancelled while its machine is paused never runs, though it came due meanwhile: cancelled by the test, or by a timer that ran before it at the resume', async () => {
    const sim = await Sim.create();
    const m = sim.machine();
    const at: [string, number][] = [];
    const cancelled = m.clock.setTimer(100, () => at.push(['cancelled', sim.elapsed]));
    const deadline = m.clock.setTimer(300, () => at.push(['deadline', sim.elapsed]));
    m.clock.setTimer(200, () => {
      at.push(['renew', sim.elapsed]);
      deadline.cancel(); // as the elector's stop cancels its renew deadline
    });
    m.clock.pause();
    await sim.run(1_000);
    cancelled.cancel();
    m.clock.resume();
    await sim.run(1_000);
    expect(at).toEqual([['renew', 1_000]]);
  });

  it('a sleep aborted while its machine is paused ends once, at the abort; its timer, due meanwhile, does nothing at the resume', async () => {
    const sim = await Sim.create();
    const m = sim.machine();
    const at: [string, number][] = [];
    const abort = new AbortController();
    void m.clock.sleep(100, abort.signal).then(() => at.push(['slept', sim.elapsed]));
    m.clock.pause();
    await sim.run(500);
    abort.abort();
    await sim.run(500);
    m.clock.resume();
    await sim.run(1_000);
    expect(at).toEqual([['slept', 500]]);
    expect(sim.clock.pending()).toBe(0);
  });

  it('an operator’s write, sent outside every machine’s network, reaches the lease stream’s function: its wake is published', async () => {
    const sim = await Sim.create();
    sim.pushBroker({ delayMs: 50, deliveryMs: 5 });
    sim.coordinator({ tickEveryMs: 60_000 }); // EventBridge's schedule: no tick writes in this run
    const watcher = sim.machine();
    const wakes: { at: number; wake: Wake }[] = [];
    sim.pushFor(watcher).watch('job', (w) => void (w && wakes.push({ at: sim.elapsed, wake: w })));
    // the operator's client: no machine sent it, no network saw it
    await sim.client.send(new PutItemCommand({ TableName: sim.names.leases, Item: marshall({ name: 'job', leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 4, revision: 7 }) }));
    const heard = await sim.until('the lease stream’s wake', () => wakes[0], 5_000);
    expect(heard.wake).toEqual({ lease: 'job', by: 'stream', revision: 7 });
    // the stream's hop (a poll and its delay) and the broker's delivery after the write, nothing sooner
    expect(heard.at).toBeGreaterThanOrEqual(50 + 5);
    expect(heard.at).toBeLessThanOrEqual(10 + 50 + 5 + 2 * LATENCY_MS);
    expect(sim.leaseWrites).toEqual([]); // no machine wrote the lease
    expect(sim.functionCounts['stream:leaseStream']).toBe(1);
  });
});
