/**
 * Two faults users meet, in the simulator's schedules (sim/schedule.ts): one worker's DynamoDB
 * answering 1–4 s late for 10–120 s (Schedule.slowDynamo: a degraded path, a slow proxy, an
 * overloaded NAT; sim/network.ts slows the answers, the requests land on time), and the stream
 * functions down while the coordinator's tick runs on (Schedule.streamsDown: their Lambdas throttled
 * or failing; sim/functions.ts holds their records). Each in about a fifth of the worlds with
 * faults, each from a stream of its own: the rest of every seed's schedule is what it was before them.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { formatVerdict, healingFaults } from '../../lib/history/checker.js';
import { T0 } from '../../sim/feed.js';
import { generateSchedule, type Schedule } from '../../sim/schedule.js';
import { DEFAULT_SETTINGS, runWorld } from '../../sim/world.js';

process.env['POWERTOOLS_METRICS_DISABLED'] ??= 'true';
const opts = { workers: DEFAULT_SETTINGS.workers, durationMs: DEFAULT_SETTINGS.durationMs };
const faultEnd = Math.floor(opts.durationMs * 0.7);
const ms = (ns: string) => Number(BigInt(ns) / 1_000_000n);

describe("the simulator's slow DynamoDB and stream functions' outage", () => {
  it('are drawn only in worlds with faults, each in about a fifth of them, 10–120 s, over before the last 30 % of the run', () => {
    const seeds = Array.from({ length: 3_000 }, (_, i) => 12_996_000 + i);
    const schedules = seeds.map((seed) => generateSchedule(seed, opts));
    const slow = schedules.filter((s) => s.slowDynamo).map((s) => s.slowDynamo!);
    const down = schedules.filter((s) => s.streamsDown).map((s) => s.streamsDown!);
    // 3,000 worlds with faults: 20 % each (602 and 598 as drawn on 2026-12-05)
    for (const drawn of [slow, down]) {
      expect(drawn.length / seeds.length).toBeGreaterThan(0.17);
      expect(drawn.length / seeds.length).toBeLessThan(0.23);
      for (const f of drawn) {
        expect(f.forMs).toBeGreaterThanOrEqual(10_000);
        expect(f.forMs).toBeLessThanOrEqual(120_000);
        expect(f.at).toBeGreaterThanOrEqual(20_000);
        expect(f.at + f.forMs).toBeLessThanOrEqual(faultEnd);
      }
    }
    for (const f of slow) {
      expect(f.delayMs[0]).toBeGreaterThanOrEqual(1_000);
      expect(f.delayMs[1]).toBeLessThanOrEqual(4_000);
      expect(f.delayMs[0]).toBeLessThanOrEqual(f.delayMs[1]);
    }
    expect(new Set(slow.map((f) => f.worker))).toEqual(new Set([0, 1, 2]));
    expect(new Set(down.map((f) => f.functions.join('+')))).toEqual(new Set(['leaseStream+candidateStream', 'leaseStream', 'candidateStream']));
    // both in some worlds, as two independent draws give
    expect(schedules.some((s) => s.slowDynamo && s.streamsDown)).toBe(true);
    // without faults: none
    for (const seed of seeds.slice(0, 300)) {
      const s = generateSchedule(seed, { ...opts, faults: false });
      expect(s.slowDynamo).toBeUndefined();
      expect(s.streamsDown).toBeUndefined();
    }
  });

  it('from streams of their own: --mixed and --kept leave them as they are, and every other draw of a seed is what it was before them', () => {
    for (let seed = 12_996_000; seed < 12_996_300; seed++) {
      const plain = generateSchedule(seed, opts);
      for (const extra of [{ mixed: true }, { kept: 'some' as const }]) {
        const other = generateSchedule(seed, { ...opts, ...extra });
        expect(other.slowDynamo).toEqual(plain.slowDynamo);
        expect(other.streamsDown).toEqual(plain.streamsDown);
      }
    }
    // The schedules of seeds 1–2,000, plain, --mixed, --kept and without faults, less these two
    // faults, as they were drawn at c33bbe92 (before them): a change here moves every seed's world,
    // and with it the planted bugs' pins (test/sim/sim.test.ts)
    const h = createHash('sha256');
    for (let seed = 1; seed <= 2_000; seed++)
      for (const extra of [{}, { mixed: true }, { kept: 'some' as const }, { faults: false }]) {
        // (and the faults drawn since from streams of their own: test/sim/drawn-faults.test.ts)
        const { slowDynamo: _slow, streamsDown: _down, shortPauses: _short, dynamoOutage: _outage, slowBroker: _broker, partialThrottle: _throttle, ...rest } = generateSchedule(seed, { ...opts, ...extra });
        h.update(JSON.stringify(rest));
      }
    expect(h.digest('hex')).toBe('86cf12d08b69301f277dd39e9fb2a60105a5dea1cd194e7e576084139627b4e0');
  });

  /** A world with no fault but `add` (and `processFaults`). */
  const quiet = (seed: number, add: Partial<Schedule>): Schedule => ({ ...generateSchedule(seed, { ...opts, faults: false }), ...add });

  it("slows one worker's answers for its window (its requests landing on time), a fault until its last late answer is back: the checker's heal counts from there", { timeout: 120_000 }, async () => {
    const slowDynamo = { worker: 0, at: 60_000, forMs: 90_000, delayMs: [2_500, 4_000] as const };
    const r = await runWorld(quiet(9_101, { slowDynamo }), DEFAULT_SETTINGS, { trace: true });
    expect(r.verdict.violations, formatVerdict(r.verdict).join('\n')).toEqual([]);
    expect(r.counts['fault:slowDynamo']).toBe(1);
    expect(r.counts['fault:slowAnswer']).toBeGreaterThan(20);
    const windows = healingFaults(r.faults);
    expect(windows.map((w) => w.kind)).toEqual(['slowDynamo']);
    // from its start to its end and the latest a late answer comes back
    expect(ms(windows[0]!.from)).toBe(T0 + 60_000);
    const to = ms(windows[0]!.to) - T0;
    expect(to).toBeGreaterThanOrEqual(60_000 + 90_000 + 4_000);
    expect(to).toBeLessThanOrEqual(60_000 + 90_000 + 4_000 + 40);
    expect(r.timeline.some((l) => /w0's DynamoDB answers 2500–4000 ms late/.test(l))).toBe(true);
    // no other worker slowed: the same world with the window on another worker slows as many answers of its own
    const other = await runWorld(quiet(9_101, { slowDynamo: { ...slowDynamo, worker: 1 } }), DEFAULT_SETTINGS);
    expect(other.counts['fault:slowAnswer']).toBeGreaterThan(20);
    expect(other.verdict.violations, formatVerdict(other.verdict).join('\n')).toEqual([]);
  });

  it("holds the stream functions' records while the tick runs, delivers them after, and is a fault until then", { timeout: 120_000 }, async () => {
    const streamsDown = { at: 60_000, forMs: 100_000, functions: ['leaseStream', 'candidateStream'] as const };
    // a worker killed in the window: its leases' next leader is the tick's (or the timer's) to elect, the streams being down
    const kill = { kind: 'kill' as const, worker: 0, at: 80_000, forMs: 5_000 };
    const r = await runWorld(quiet(9_102, { streamsDown, processFaults: [kill] }), DEFAULT_SETTINGS, { trace: true });
    expect(r.verdict.violations, formatVerdict(r.verdict).join('\n')).toEqual([]);
    expect(r.counts['fault:streamsDown']).toBe(1);
    expect(r.counts['streamsDown:held:leaseStream']).toBeGreaterThan(0);
    expect(r.counts['streamsDown:held:candidateStream']).toBeGreaterThan(0);
    const down = healingFaults(r.faults).find((w) => w.kind === 'streamsDown')!;
    expect([ms(down.from) - T0, ms(down.to) - T0]).toEqual([60_000, 160_000]);
    expect(r.timeline.some((l) => /leaseStream and candidateStream down/.test(l))).toBe(true);
    const at = (l: string) => Number.parseFloat(l) * 1000;
    const inWindow = (l: string) => at(l) > 60_000 && at(l) < 160_000;
    // the lease stream's function publishes the events: none while it is down, its backlog at once after
    expect(r.timeline.filter((l) => inWindow(l) && /s  event /.test(l))).toEqual([]);
    expect(r.timeline.some((l) => at(l) >= 160_000 && at(l) < 161_000 && / event Leader Elected /.test(l))).toBe(true);
    // while the rest of the coordinator's functions run: the killed worker's lease has a new leader within the window
    // (the platform function's vacate and the election timer), as the same world with the streams up has
    const led = (lines: readonly string[]) => lines.filter((l) => inWindow(l) && at(l) > 80_000 && /w[12] leads job-/.test(l));
    expect(led(r.timeline).length).toBeGreaterThan(0);
    const free = await runWorld(quiet(9_102, { processFaults: [kill] }), DEFAULT_SETTINGS, { trace: true });
    expect(free.counts['streamsDown:held:leaseStream']).toBeUndefined();
    expect(led(free.timeline).length).toBeGreaterThan(0);
    expect(free.timeline.some((l) => inWindow(l) && /s  event /.test(l))).toBe(true);
  });
});
