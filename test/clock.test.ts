import { describe, expect, it } from 'vitest';
import { drainMicrotasks, every, manualClock, seededRandom, simulatedClock, skewedClock, systemClock } from '../lib/clock.js';

describe('simulatedClock', () => {
  it('fires timers in time order (ties in the order set), moving time to each, and nothing before run', async () => {
    const c = simulatedClock({ start: 1_000 });
    const fired: string[] = [];
    c.setTimer(30, () => fired.push(`b@${c.now()}`));
    c.setTimer(10, () => fired.push(`a@${c.now()}`));
    c.setTimer(30, () => fired.push(`c@${c.now()}`));
    const x = c.setTimer(20, () => fired.push('cancelled'));
    x.cancel();
    expect(fired).toEqual([]);
    expect(c.pending()).toBe(3);
    await c.run(25);
    expect(fired).toEqual(['a@1010']);
    expect(c.now()).toBe(1_025);
    await c.run(100);
    expect(fired).toEqual(['a@1010', 'b@1030', 'c@1030']);
    expect(c.now()).toBe(1_125);
    expect(c.pending()).toBe(0);
  });

  it('lets promise chains run between timers: a loop of sleeps advances as simulated time passes', async () => {
    const c = simulatedClock({ start: 0 });
    const woke: number[] = [];
    const loop = (async () => {
      for (let i = 0; i < 5; i++) {
        await c.sleep(1_000);
        await Promise.resolve(); // more promise hops after each wake
        woke.push(c.now());
      }
    })();
    await c.run(3_500);
    expect(woke).toEqual([1_000, 2_000, 3_000]);
    await c.run(10_000);
    await loop;
    expect(woke).toEqual([1_000, 2_000, 3_000, 4_000, 5_000]);
  });

  it('a sleep ends when its signal aborts, and its timer is gone', async () => {
    const c = simulatedClock({ start: 0 });
    const ac = new AbortController();
    let done = false;
    void c.sleep(60_000, ac.signal).then(() => (done = true));
    await c.run(1);
    ac.abort();
    await c.run(0);
    expect(done).toBe(true);
    expect(c.pending()).toBe(0);
  });

  it('every() repeats on the clock until cancelled', async () => {
    const c = simulatedClock({ start: 0 });
    const at: number[] = [];
    const t = every(c, 250, () => at.push(c.now()));
    await c.run(1_000);
    t.cancel();
    await c.run(1_000);
    expect(at).toEqual([250, 500, 750, 1_000]);
  });

  /** A timer at 10 starts a chain of `hops` promise hops; which runs first, its end or the timer at 11? */
  async function chainAgainstNextTimer(settle: (() => Promise<void>) | undefined, hops: number): Promise<string[]> {
    const c = simulatedClock({ start: 0, ...(settle ? { settle } : {}) });
    const order: string[] = [];
    const chain = async (n: number): Promise<void> => {
      if (n === 0) return void order.push(`chain@${c.now()}`);
      await Promise.resolve();
      return chain(n - 1);
    };
    c.setTimer(10, () => void chain(hops));
    c.setTimer(11, () => order.push(`timer@${c.now()}`));
    await c.run(20);
    return order;
  }

  it('drainMicrotasks: every promise chain a timer starts runs to its end before the next timer, as with a turn of the event loop (and a settle that does not drain fails it)', async () => {
    expect(await chainAgainstNextTimer(drainMicrotasks(), 500)).toEqual(['chain@10', 'timer@11']);
    expect(await chainAgainstNextTimer(undefined, 500)).toEqual(['chain@10', 'timer@11']);
    // a settle of one microtask lets the next timer in (and the run end) while the chain is still running
    expect(await chainAgainstNextTimer(() => Promise.resolve(), 500)).toEqual(['timer@11']);
  });

  it('drainMicrotasks: a real macrotask gets its turn every realTurnEvery settles, and not otherwise', async () => {
    const realTurnDuringRun = async (every: number) => {
      const c = simulatedClock({ start: 0, settle: drainMicrotasks(every) });
      for (let i = 1; i <= 20; i++) c.setTimer(i, () => undefined);
      let ran = false;
      setImmediate(() => (ran = true));
      await c.run(30);
      return ran;
    };
    expect(await realTurnDuringRun(5)).toBe(true);
    expect(await realTurnDuringRun(1_000)).toBe(false);
  });

  it('draws the same numbers for the same seed, others for another', () => {
    const a = simulatedClock({ seed: 7 });
    const b = simulatedClock({ seed: 7 });
    const x = Array.from({ length: 5 }, () => a.random());
    expect(Array.from({ length: 5 }, () => b.random())).toEqual(x);
    expect(Array.from({ length: 5 }, seededRandom(8))).not.toEqual(x);
    expect(x.every((v) => v >= 0 && v < 1)).toBe(true);
  });
});

describe('views of a clock', () => {
  it('skewedClock moves the wall clock only; timers and randomness stay the base’s', async () => {
    const base = simulatedClock({ start: 10_000, seed: 3 });
    let off = 30_000;
    const s = skewedClock(() => off, base);
    expect(s.now()).toBe(40_000);
    off = -5_000; // an NTP step
    expect(s.now()).toBe(5_000);
    expect(s.monotonic()).toBe(base.monotonic());
    let fired = false;
    s.setTimer(100, () => (fired = true));
    await base.run(100);
    expect(fired).toBe(true);
    expect(s.random()).toBe(seededRandom(3)());
  });

  it('manualClock moves wall and monotonic time together by hand', () => {
    const m = manualClock(5_000, simulatedClock());
    m.advance(250);
    expect([m.now(), m.monotonic()]).toEqual([5_250, 5_250]);
    m.set(9_000);
    expect(m.now()).toBe(9_000);
  });

  it('systemClock has every member a Clock needs', () => {
    for (const k of ['now', 'monotonic', 'setTimer', 'sleep', 'random'] as const) expect(typeof systemClock[k]).toBe('function');
    systemClock.setTimer(1_000, () => undefined, { background: true }).cancel();
  });
});
