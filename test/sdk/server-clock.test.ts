import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../lib/clock.js';
import { CONFIRMATIONS, DATE_RESOLUTION_MS, JUMP_MS, MAX_SAMPLE_AGE_MS, MAX_SAMPLES, OffsetEstimate, ServerClock, type TimeSample } from '../../lib/sdk/server-clock.js';
import { CLOCK_RESAMPLE_MS } from '../../lib/sdk/step.js';

/**
 * A server whose clock is `offset` ms ahead of this machine's monotonic clock: a request sent at
 * `sent` takes `rtt` ms and is stamped `at` (0–1) of the way through; the Date header truncates.
 */
const sample = (offset: number, sent: number, rtt: number, at = 0.5): TimeSample => {
  const stamped = sent + rtt * at;
  return { date: Math.floor((stamped + offset) / DATE_RESOLUTION_MS) * DATE_RESOLUTION_MS, sent, received: sent + rtt };
};
const T = 1_800_000_000_000; // server epoch ms at monotonic 0

describe('OffsetEstimate (serverTime − monotonic from Date headers)', () => {
  it('knows nothing before the first sample', () => {
    expect(new OffsetEstimate().check(0, 500)).toEqual({ ok: false, reason: 'noSamples' });
  });

  it('one sample bounds the offset to a second and the round trip: too wide for the default 500 ms bound', () => {
    const e = new OffsetEstimate();
    e.add(sample(T, 10_000, 20));
    const i = e.interval(10_020)!;
    expect(i.hi - i.lo).toBe(DATE_RESOLUTION_MS + 20);
    expect(i.lo).toBeLessThanOrEqual(T);
    expect(i.hi).toBeGreaterThanOrEqual(T);
    expect(e.check(10_020, 500)).toEqual({ ok: false, reason: 'uncertain', errorMs: 510 });
    expect(e.check(10_020, 750)).toEqual({ ok: true, errorMs: 510 });
  });

  it('a second sample half a second later in the server’s second halves the interval', () => {
    const e = new OffsetEstimate();
    e.add(sample(T + 123, 10_000, 10));
    e.add(sample(T + 123, 10_500, 10));
    const i = e.interval(10_510)!;
    expect(i.hi - i.lo).toBeLessThanOrEqual(520);
    expect(e.check(10_510, 520).ok).toBe(true);
  });

  it('keeps the offset it stamps with while the evidence allows, so consecutive stamps agree', () => {
    const e = new OffsetEstimate();
    e.add(sample(T + 400, 10_000, 10));
    e.add(sample(T + 400, 10_300, 10)); // narrowed below a second: its middle, kept from here on
    const first = e.offset()!;
    e.add(sample(T + 400, 10_450, 10)); // narrows the interval, which still holds the choice
    expect(e.offset()).toBe(first);
    for (let k = 1; k <= 20; k++) e.add(sample(T + 400, 10_300 + 137 * k, 10));
    const i = e.interval(13_000)!;
    expect(e.offset()).toBeGreaterThanOrEqual(i.lo); // forced inside, by no more than needed
    expect(e.offset()).toBeLessThanOrEqual(i.hi);
  });

  it('always contains the true offset, and converges to about the round trip (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -60_000, max: 60_000 }),
        fc.array(fc.record({ gap: fc.integer({ min: 1, max: 3_000 }), rtt: fc.integer({ min: 0, max: 300 }), at: fc.double({ min: 0, max: 1, noNaN: true }) }), { minLength: 1, maxLength: 40 }),
        (skew, reqs) => {
          const e = new OffsetEstimate();
          let sent = 5_000;
          for (const r of reqs) {
            sent += r.gap;
            expect(e.add(sample(T + skew, sent, r.rtt, r.at))).toBe(0);
            const i = e.interval(sent + r.rtt)!;
            expect(i.lo).toBeLessThanOrEqual(T + skew + 1e-6);
            expect(i.hi).toBeGreaterThanOrEqual(T + skew - 1e-6);
            // the stamp's error is within what check() reports
            const c = e.check(sent + r.rtt, Infinity);
            expect(c.ok && Math.abs(e.offset()! - (T + skew))).toBeLessThanOrEqual(c.ok ? c.errorMs + 1e-6 : 0);
          }
        },
      ),
    );
  });

  it('a jump (a suspended machine: the monotonic clock stood still) is reported, and trusted only once confirmed', () => {
    const e = new OffsetEstimate();
    for (let k = 0; k < 5; k++) e.add(sample(T, 1_000 + 700 * k, 5));
    expect(e.check(5_000, 500).ok).toBe(true);
    // suspended for 20 s: monotonic time did not move, the server's clock did
    expect(e.add(sample(T + 20_000, 5_000, 5))).toBeGreaterThan(19_000 - DATE_RESOLUTION_MS);
    expect(e.jumps).toBe(1);
    expect(e.check(5_005, 10_000)).toMatchObject({ ok: false, reason: 'jumped' });
    for (let k = 1; k < CONFIRMATIONS; k++) expect(e.add(sample(T + 20_000, 5_000 + 500 * k, 5))).toBe(0);
    expect(e.check(5_000 + 500 * CONFIRMATIONS, 1_000).ok).toBe(true);
    expect(e.size).toBe(CONFIRMATIONS); // the history before the jump is gone
  });

  describe('started (a first sample) or started again (a jump, a sleep): one rule', () => {
    /**
     * The estimate (re)started on a sample sent at monotonic 5 000 (5 ms round trip) of DynamoDB's time at offset T +
     * `stepMs`; `history`: five samples at offset T before it (awake: `asleep` 0); `asleep`: what the samples since show.
     */
    const rows = [
      ['start-up: its first sample', false, 0, 3_000],
      ['a jump: the server’s clock stepped 3 s, the machine awake', true, 0, 3_000],
      ['a jump: a 3 s suspend nothing on the machine counted (no clock since boot)', true, undefined, 3_000],
      ['a 3 s sleep its clock since boot counted', true, 3_000, 3_000],
      ['its clock since boot stepped 30 s with the wall clock (os.uptime() on macOS), the offset unmoved', true, 30_000, 0],
    ] as const;
    const started = (history: boolean, asleep: number | undefined, stepMs: number) => {
      const e = new OffsetEstimate();
      if (history) for (let k = 0; k < 5; k++) e.add({ ...sample(T, 1_000 + 700 * k, 5), asleep: asleep === undefined ? undefined : 0 });
      e.add({ ...sample(T + stepMs, 5_000, 5), asleep });
      return e;
    };

    it.each(rows.flatMap(([what, history, asleep, stepMs]) => [5, 20, 200].map((d) => [what, d, history, asleep, stepMs] as const)))(
      '%s; a second sample %i ms after the first, in the same server second: trusted at the default 500 ms bound (the middle of what the two allow)',
      (_what, d, history, asleep, stepMs) => {
        const e = started(history, asleep, stepMs);
        const first = e.offset()!;
        expect(e.check(5_005, 500)).toMatchObject({ ok: false }); // one sample: ±(500 + half its round trip), or a jump not yet confirmed
        e.add({ ...sample(T + stepMs, 5_005 + d, 5, 0), asleep }); // stamped at its start: the server's second is the first one's
        const i = e.interval(5_010 + d)!;
        expect(i.hi - i.lo).toBeLessThan(DATE_RESOLUTION_MS);
        // before (start-up, jumps): kept at the first sample's middle, 'uncertain' at ±502.5 ms however the second narrowed it
        const c = e.check(5_010 + d, 500);
        expect(c).toMatchObject({ ok: true });
        expect(e.offset()).not.toBe(first);
        expect(Math.abs(e.offset()! - (T + stepMs))).toBeLessThanOrEqual(c.ok ? c.errorMs : 0); // the error it reports is the true bound
        // narrower than a second, it is kept as before: a third sample that narrows it moves it only as far as it must
        const kept = e.offset()!;
        e.add({ ...sample(T + stepMs, 5_300 + d, 5, 0), asleep });
        expect(e.offset()).toBe(kept);
      },
    );

    it('a fresh process polling at the clock’s resample pace (300–700 ms) trusts it at its second response, wherever in the server’s second it starts', () => {
      const waited: number[] = []; // from its first answer to the one that lets it vouch for its stamps
      let never = 0;
      for (let phase = 0; phase < DATE_RESOLUTION_MS; phase += 10) {
        for (const pace of [0.6, 0.8, 1, 1.2, 1.4]) {
          const e = new OffsetEstimate();
          let sent = 10_000;
          e.add(sample(T + phase, sent, 4));
          for (let n = 1; !e.check(sent + 4, 500).ok; n++) {
            if (n === 20) {
              never++;
              break;
            }
            e.add(sample(T + phase, (sent += CLOCK_RESAMPLE_MS * pace), 4));
          }
          if (e.check(sent + 4, 500).ok) waited.push(sent - 10_000);
        }
      }
      const mean = Math.round(waited.reduce((a, b) => a + b, 0) / waited.length);
      // over 500 starts: one poll (500 ms on average, at most 700); before: 825 ms on average and up to 1 400 ms, and never
      // at a pace of exactly 500 ms (100 starts: each response at one of two points of the server's second, the first
      // one's middle never forced off)
      expect({ mean, max: Math.max(...waited), never }).toEqual({ mean: CLOCK_RESAMPLE_MS, max: 1.4 * CLOCK_RESAMPLE_MS, never: 0 });
    });
  });

  describe('a suspend its clock since boot shows (TimeSample.asleep: grows by the time slept)', () => {
    /** Five samples at `T`, the machine awake (asleep 0); then one `sleepMs` later on the server's clock, the monotonic clock 5 ms on, showing `shownMs` asleep. */
    const woken = (sleepMs: number, shownMs: number | undefined, stepMs = 0) => {
      const e = new OffsetEstimate();
      for (let k = 0; k < 5; k++) e.add({ ...sample(T, 1_000 + 700 * k, 5), asleep: shownMs === undefined ? undefined : 0 });
      const jump = e.add({ ...sample(T + sleepMs + stepMs, 5_000, 5), asleep: shownMs });
      return { e, jump };
    };

    it.each([1_000, 3_000, 20_000])('asleep %i ms: no jump; the estimate starts again from the new sample, trusted as a first one is', (ms) => {
      const { e, jump } = woken(ms, ms);
      expect(jump).toBe(0);
      expect(e.jumps).toBe(0);
      expect(e.sleeps).toBe(1);
      expect(e.sleptMs).toBe(ms);
      expect(e.size).toBe(1); // the samples before the sleep are on monotonic time that lost it
      expect(e.check(5_005, 750)).toMatchObject({ ok: true }); // no 'jumped' to confirm
      const i = e.interval(5_005)!;
      expect(i.lo).toBeLessThanOrEqual(T + ms);
      expect(i.hi).toBeGreaterThanOrEqual(T + ms);
    });

    it('shown in whole seconds (2 s for a 2.6 s sleep): still no jump', () => {
      expect(woken(2_600, 2_000).jump).toBe(0);
      expect(woken(2_600, 3_000).jump).toBe(0);
    });

    it('its clock since boot moved 30 s, the offset did not (os.uptime() on macOS, read off a wall clock that stepped): neither a sleep nor a jump', () => {
      const { e, jump } = woken(0, 30_000);
      expect(jump).toBe(0);
      expect(e.jumps).toBe(0);
      expect(e.sleeps).toBe(0);
    });

    it.each([
      ['no clock since boot', 20_000, undefined, 0],
      ['shown asleep less than its resolution', 3_000, 600, 0],
      ['the server’s clock stepped 5 s beyond a 3 s sleep', 3_000, 3_000, 5_000],
      ['the server’s clock stepped back 5 s during a 3 s sleep', 3_000, 3_000, -5_000],
      ['the server’s clock stepped 20 s, the machine awake', 0, 0, 20_000],
    ] as const)('%s: a jump, as without the clock since boot', (_what, sleepMs, shownMs, stepMs) => {
      const { e, jump } = woken(sleepMs, shownMs, stepMs);
      expect(Math.abs(jump)).toBeGreaterThan(JUMP_MS);
      expect(e.jumps).toBe(1);
      expect(e.check(5_005, 10_000)).toMatchObject({ ok: false, reason: 'jumped' });
    });

    it('asleep since the newest sample, none since: no stamp is trusted until one comes (the estimate lost the sleep)', () => {
      const e = new OffsetEstimate();
      for (let k = 0; k < 5; k++) e.add({ ...sample(T, 1_000 + 700 * k, 5), asleep: 0 });
      expect(e.check(4_000, 1_000, 999)).toMatchObject({ ok: true });
      // before: trusted, so a leader that kept its term across the sleep renewed with stamps that much in the past
      expect(e.check(4_000, 1_000, 7_000)).toEqual({ ok: false, reason: 'noSamples' });
      e.add({ ...sample(T + 7_000, 4_000, 5), asleep: 7_000 });
      expect(e.check(4_005, 10_000, 7_000)).toMatchObject({ ok: true });
    });
  });

  it('a monotonic clock drifting at 80 ppm for ten minutes: never a jump, the truth always inside', () => {
    const e = new OffsetEstimate();
    for (let sent = 1_000; sent < 600_000; sent += 1_937) {
      const offset = T - sent * 80e-6; // the monotonic clock runs fast: the offset shrinks
      expect(e.add(sample(offset, sent, 3, 0.3))).toBe(0);
      const i = e.interval(sent + 3)!;
      expect(i.lo).toBeLessThanOrEqual(offset + 1e-6);
      expect(i.hi).toBeGreaterThanOrEqual(offset - 1e-6);
    }
    expect(e.jumps).toBe(0);
    expect(e.check(600_000, 100).ok).toBe(true);
  });

  it('a small step of the server’s clock (under the jump threshold) is no jump', () => {
    const e = new OffsetEstimate();
    for (let k = 0; k < 10; k++) e.add(sample(T, 1_000 + 730 * k, 2));
    for (let k = 0; k < 20; k++) expect(e.add(sample(T + JUMP_MS / 2, 9_000 + 730 * k, 2))).toBe(0);
    expect(e.jumps).toBe(0);
  });

  it('many responses inside one server second do not forget the narrowing the samples across its boundary gave (a busy client: 50 a second)', () => {
    const e = new OffsetEstimate();
    const offset = T + 640; // the server's second turns over at monotonic 360, 1 360, …
    for (let sent = 1_000; sent < 3_000; sent += 20) e.add(sample(offset, sent, 5)); // across two boundaries: narrowed to the round trip
    const narrowed = e.check(3_000, 500);
    expect(narrowed).toMatchObject({ ok: true });
    // then 2 × MAX_SAMPLES more, all inside the server second from monotonic 3 360 to 4 360
    for (let k = 0; k < 2 * MAX_SAMPLES; k++) e.add(sample(offset, 3_400 + 14 * k, 5));
    const i = e.interval(4_300)!;
    expect(i.lo).toBeLessThanOrEqual(offset + 1e-6);
    expect(i.hi).toBeGreaterThanOrEqual(offset - 1e-6);
    expect(i.hi - i.lo).toBeLessThan(50);
    expect(e.check(4_300, 500)).toMatchObject({ ok: true });
    expect(e.size).toBeLessThanOrEqual(MAX_SAMPLES);
  });

  it('a DynamoDB that answers slowly for 40 minutes after a quick start: the quick answers keep the estimate within the bound (a review, 2026-12-07, twelfth)', () => {
    const e = new OffsetEstimate();
    const offset = T + 640;
    // 5 minutes of answers in 6–16 ms, then answers 1.5–3 s late (the server's time half way): together they narrow it only to ±750 ms or more
    for (let sent = 1_000; sent < 300_000; sent += 1_100) e.add(sample(offset, sent, 6 + (sent % 11)));
    for (let sent = 300_000; sent < 2_700_000; sent += 2_300) {
      expect(e.add(sample(offset, sent, 1_500 + (sent % 1_500)))).toBe(0);
      const i = e.interval(sent)!;
      expect(i.lo).toBeLessThanOrEqual(offset + 1e-6);
      expect(i.hi).toBeGreaterThanOrEqual(offset - 1e-6);
      // before: 'uncertain' (errorMs about 1,600–1,900) from about 9 minutes on, every lease leaderless while the slowness lasted
      expect(e.check(sent, 500)).toMatchObject({ ok: true });
    }
    // past the age limit they are dropped (drift has widened them by about as much as the bound): then the slow answers' own, truthfully
    for (let sent = 2_700_000; sent < 300_000 + MAX_SAMPLE_AGE_MS + 60_000; sent += 2_300) e.add(sample(offset, sent, 1_500 + (sent % 1_500)));
    expect(e.check(300_000 + MAX_SAMPLE_AGE_MS + 60_000, 500)).toMatchObject({ ok: false, reason: 'uncertain' });
  });

  it('forgets samples older than the age limit', () => {
    const e = new OffsetEstimate();
    e.add(sample(T, 0, 5));
    e.add(sample(T, MAX_SAMPLE_AGE_MS + 1_000, 5));
    expect(e.size).toBe(1);
  });

  it('ignores a sample without a date, or timed backwards', () => {
    const e = new OffsetEstimate();
    expect(e.add({ date: NaN, sent: 0, received: 1 })).toBe(0);
    expect(e.add({ date: T, sent: 5, received: 1 })).toBe(0);
    expect(e.size).toBe(0);
  });
});

describe('ServerClock', () => {
  it('stamps with the server’s time whatever the wall clock says, and tells the wall clock’s offset', () => {
    let mono = 50_000;
    const base = { ...systemClock, now: () => T + mono - 30_000, monotonic: () => mono }; // the wall clock 30 s slow
    const c = new ServerClock(base);
    expect(c.now()).toBe(base.now()); // nothing known: the wall clock
    expect(c.wallOffsetMs()).toBeUndefined();
    for (const gap of [0, 300, 350, 200, 300]) { // responses at 0, 300, 650, 850 and 150 ms into the server's second
      mono += gap;
      c.record(sample(T, mono, 4, 0.5));
    }
    mono += 1_000;
    const check = c.check(500);
    expect(check.ok).toBe(true);
    const err = check.ok ? check.errorMs : 0;
    expect(Math.abs(c.now() - (T + mono))).toBeLessThanOrEqual(err + 1);
    expect(Math.abs(c.wallOffsetMs()! - 30_000)).toBeLessThanOrEqual(err + 1);
  });

  it('tells its listeners of a jump', () => {
    let mono = 0;
    const c = new ServerClock({ ...systemClock, now: () => 0, monotonic: () => mono });
    const heard: number[] = [];
    const off = c.onJump((j) => heard.push(j));
    c.record(sample(T, mono, 2));
    mono = 3_000;
    c.record(sample(T - 30_000, mono, 2)); // the server's clock stepped back 30 s
    expect(heard).toHaveLength(1);
    expect(heard[0]).toBeLessThan(-29_000 + DATE_RESOLUTION_MS);
    off();
    mono = 6_000;
    c.record(sample(T, mono, 2));
    expect(heard).toHaveLength(1);
  });

  it('tells its sleep listeners, not its jump listeners, of a sleep its clock since boot shows; counts it among its jumps (a term won across it is given back)', () => {
    let mono = 0;
    const c = new ServerClock({ ...systemClock, now: () => 0, monotonic: () => mono });
    const jumps: number[] = [];
    const sleeps: number[] = [];
    c.onJump((j) => jumps.push(j));
    c.onSleep((ms) => sleeps.push(ms));
    c.record({ ...sample(T, mono, 2), asleep: 0 });
    mono = 1_000;
    c.record({ ...sample(T, mono, 2), asleep: 0 });
    mono = 1_100; // asleep 4 s: the monotonic clock moved 100 ms, the server's 4.1 s
    c.record({ ...sample(T + 4_000, mono, 2), asleep: 4_000 });
    expect(jumps).toEqual([]);
    expect(sleeps).toEqual([4_000]);
    expect(c.jumps).toBe(1);
  });
});
