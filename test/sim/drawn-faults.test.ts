/**
 * Three faults the simulator's schedules (sim/schedule.ts) never drew before 2026-12-08: a freeze of
 * a leader past its renew deadline (10 s) and within its lease (15 s) — the drawn freezes were
 * 16–40 s (Schedule.shortPauses); DynamoDB lost to the whole fleet, every worker and the functions,
 * for minutes (Schedule.dynamoOutage); and IoT Core slower than the functions' 1.5 s publish
 * timeout, its publishes landing, or not, after the waker gave them up (Schedule.slowBroker); and
 * the table's capacity throttling a share of every worker's requests, the rest passing (a review,
 * 2026-12-08, sixteenth: Schedule.partialThrottle; the DynamoDB fault windows throttle all of one
 * worker's requests, or one request at a time, never part of the fleet's together). Each
 * from a stream of its own: every other draw of a seed is what it was before them. The checker's
 * rules are the same for them as for every fault; their windows are the faults.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { formatVerdict, healingFaults } from '../../lib/history/checker.js';
import { WAKE_TIMEOUT_MS } from '../../lib/functions/wake.js';
import { T0 } from '../../sim/feed.js';
import { generateSchedule, type Schedule } from '../../sim/schedule.js';
import { DEFAULT_SETTINGS, runWorld } from '../../sim/world.js';

process.env['POWERTOOLS_METRICS_DISABLED'] ??= 'true';
const opts = { workers: DEFAULT_SETTINGS.workers, durationMs: DEFAULT_SETTINGS.durationMs };
const faultEnd = Math.floor(opts.durationMs * 0.7);
const ms = (ns: string) => Number(BigInt(ns) / 1_000_000n);
/** When a line of the traced timeline was told, in ms from the start. */
const at = (line: string) => Math.round(Number.parseFloat(line) * 1000);

/** A world with no fault but `add`. */
const quiet = (seed: number, add: Partial<Schedule>): Schedule => ({ ...generateSchedule(seed, { ...opts, faults: false }), ...add });

describe('faults the simulator never drew', () => {
  it('are drawn only in worlds with faults (the slow broker only where the push path runs), in their shares, within their bounds, over before the last 30 % of the run', () => {
    const seeds = Array.from({ length: 3_000 }, (_, i) => 13_100_000 + i);
    const schedules = seeds.map((seed) => generateSchedule(seed, opts));
    const share = (n: number, of = seeds.length) => n / of;
    // a third, a tenth, a fifth of the push worlds
    const paused = schedules.filter((s) => s.shortPauses);
    expect(share(paused.length)).toBeGreaterThan(0.29);
    expect(share(paused.length)).toBeLessThan(0.37);
    for (const f of paused.flatMap((s) => s.shortPauses!)) {
      // past the renew deadline, within the lease
      expect(f.forMs).toBeGreaterThan(DEFAULT_SETTINGS.renewDeadlineMs);
      expect(f.forMs).toBeLessThan(DEFAULT_SETTINGS.leaseDurationMs);
      expect(f.at).toBeGreaterThanOrEqual(20_000);
      expect(f.at).toBeLessThanOrEqual(faultEnd);
    }
    expect(new Set(paused.map((s) => s.shortPauses!.length))).toEqual(new Set([1, 2]));
    expect(new Set(paused.flatMap((s) => s.shortPauses!.map((f) => f.aimed)))).toEqual(new Set([true, false]));
    const outages = schedules.filter((s) => s.dynamoOutage).map((s) => s.dynamoOutage!);
    expect(share(outages.length)).toBeGreaterThan(0.08);
    expect(share(outages.length)).toBeLessThan(0.12);
    for (const f of outages) {
      expect(f.forMs).toBeGreaterThanOrEqual(60_000);
      expect(f.forMs).toBeLessThanOrEqual(300_000);
      expect(f.at).toBeGreaterThanOrEqual(20_000);
      expect(f.at + f.forMs).toBeLessThanOrEqual(faultEnd);
    }
    expect(new Set(outages.map((f) => f.answers))).toEqual(new Set(['errors', 'silent', 'mixed']));
    const push = schedules.filter((s) => s.push);
    expect(schedules.filter((s) => s.slowBroker && !s.push)).toEqual([]);
    const slow = push.filter((s) => s.slowBroker).map((s) => s.slowBroker!);
    expect(share(slow.length, push.length)).toBeGreaterThan(0.16);
    expect(share(slow.length, push.length)).toBeLessThan(0.24);
    for (const f of slow) {
      // every publish past the functions' publish timeout
      expect(f.delayMs[0]).toBeGreaterThan(WAKE_TIMEOUT_MS);
      expect(f.delayMs[0]).toBeGreaterThanOrEqual(2_000);
      expect(f.delayMs[1]).toBeLessThanOrEqual(10_000);
      expect(f.delayMs[0]).toBeLessThanOrEqual(f.delayMs[1]);
      expect(f.forMs).toBeGreaterThanOrEqual(10_000);
      expect(f.at + f.forMs).toBeLessThanOrEqual(faultEnd);
    }
    const throttles = schedules.filter((s) => s.partialThrottle).map((s) => s.partialThrottle!);
    expect(share(throttles.length)).toBeGreaterThan(0.08);
    expect(share(throttles.length)).toBeLessThan(0.12);
    for (const f of throttles) {
      expect(f.forMs).toBeGreaterThanOrEqual(20_000);
      expect(f.forMs).toBeLessThanOrEqual(120_000);
      expect(f.share).toBeGreaterThanOrEqual(0.5);
      expect(f.share).toBeLessThanOrEqual(0.95);
      expect(f.at).toBeGreaterThanOrEqual(20_000);
      expect(f.at + f.forMs).toBeLessThanOrEqual(faultEnd);
    }
    expect(new Set(throttles.map((f) => f.error))).toEqual(new Set(['throttling', 'provisionedThroughput']));
    for (const seed of seeds.slice(0, 300)) {
      const s = generateSchedule(seed, { ...opts, faults: false });
      expect([s.shortPauses, s.dynamoOutage, s.slowBroker, s.partialThrottle]).toEqual([undefined, undefined, undefined, undefined]);
    }
  });

  it('from streams of their own: --mixed and --kept leave them as they are, and every other draw of a seed is what it was before them', () => {
    for (let seed = 13_100_000; seed < 13_100_300; seed++) {
      const plain = generateSchedule(seed, opts);
      for (const extra of [{ mixed: true }, { kept: 'some' as const }]) {
        const other = generateSchedule(seed, { ...opts, ...extra });
        expect([other.shortPauses, other.dynamoOutage, other.slowBroker, other.partialThrottle]).toEqual([plain.shortPauses, plain.dynamoOutage, plain.slowBroker, plain.partialThrottle]);
      }
    }
    // the digest test/sim/slow-dynamo-streams-down.test.ts pins (the schedules of seeds 1–2,000 as drawn at c33bbe92), these four left out too
    const h = createHash('sha256');
    for (let seed = 1; seed <= 2_000; seed++)
      for (const extra of [{}, { mixed: true }, { kept: 'some' as const }, { faults: false }]) {
        const { slowDynamo: _a, streamsDown: _b, shortPauses: _c, dynamoOutage: _d, slowBroker: _e, partialThrottle: _f, ...rest } = generateSchedule(seed, { ...opts, ...extra });
        h.update(JSON.stringify(rest));
      }
    expect(h.digest('hex')).toBe('86cf12d08b69301f277dd39e9fb2a60105a5dea1cd194e7e576084139627b4e0');
  });

  it("a short freeze freezes the lease's leader past its renew deadline and within its lease: it wakes, stops, and its window is the freeze", { timeout: 120_000 }, async () => {
    const shortPauses = [{ lease: 0, worker: 2, at: 60_000, forMs: 12_500, aimed: false }];
    const r = await runWorld(quiet(9_111, { shortPauses }), DEFAULT_SETTINGS, { trace: true });
    expect(r.verdict.violations, formatVerdict(r.verdict).join('\n')).toEqual([]);
    expect(r.counts['fault:shortPause:leader']).toBe(1);
    // who led job-0 then is who froze
    const led = r.timeline.filter((l) => at(l) < 60_000 && / leads job-0 /.test(l)).at(-1)!;
    const who = /(w\d)/.exec(led)![1]!;
    const frozen = r.timeline.find((l) => at(l) === 60_000 && / pause w\d for /.test(l));
    expect(frozen).toContain(`pause ${who} for 12500 ms`);
    const windows = healingFaults(r.faults);
    expect(windows.map((w) => [w.kind, ms(w.from) - T0, ms(w.to) - T0])).toEqual([['pause', 60_000, 72_500]]);
    // it woke past its renew deadline: it stopped leading, and did not lead on
    expect(r.timeline.some((l) => at(l) === 72_500 && new RegExp(`${who} job-0: .*stopped leading .* past its renew deadline`).test(l))).toBe(true);
  });

  it('a DynamoDB outage fails every request of the fleet for its span (500s, or no answer), elects nobody then, heals, and its window is the outage', { timeout: 180_000 }, async () => {
    for (const answers of ['errors', 'silent'] as const) {
      const dynamoOutage = { at: 60_000, forMs: 120_000, answers };
      const r = await runWorld(quiet(9_112, { dynamoOutage }), DEFAULT_SETTINGS, { trace: true });
      expect(r.verdict.violations, `${answers}\n${formatVerdict(r.verdict).join('\n')}`).toEqual([]);
      expect(r.counts['fault:dynamoOutage']).toBe(1);
      expect(r.counts[answers === 'errors' ? 'fault:outageError' : 'fault:outageSilent']).toBeGreaterThan(50);
      expect(r.counts[answers === 'errors' ? 'fault:outageSilent' : 'fault:outageError']).toBeUndefined();
      const windows = healingFaults(r.faults);
      expect(windows.map((w) => [w.kind, ms(w.from) - T0, ms(w.to) - T0])).toEqual([['dynamoOutage', 60_000, 180_000]]);
      // nothing lands meanwhile: no term begins, no fenced write is accepted, and the leaders stop
      const inside = r.timeline.filter((l) => at(l) > 60_000 + 1_000 && at(l) < 180_000);
      expect(inside.filter((l) => / leads job-\d /.test(l))).toEqual([]);
      for (const lease of ['job-0', 'job-1']) expect(inside.some((l) => new RegExp(`stops leading ${lease} \\(renewDeadline\\)`).test(l))).toBe(true);
      // and both leases are led again after it
      for (const lease of ['job-0', 'job-1']) expect(r.timeline.some((l) => at(l) >= 180_000 && new RegExp(` leads ${lease} `).test(l))).toBe(true);
    }
  });

  it("a broker slower than the publish timeout: the functions' real waker gives each publish up at 1.5 s, some land later, and the window lasts until the last may land", { timeout: 120_000 }, async () => {
    const slowBroker = { at: 60_000, forMs: 60_000, delayMs: [3_000, 8_000] as const, lands: 0.5 };
    // the leader of job-0 killed in the window: its leases' changes are what the functions wake the workers for
    const kill = { kind: 'kill' as const, worker: 0, at: 70_000, forMs: 5_000 };
    const push = { delayMs: [1, 50] as [number, number], loss: 0, duplicate: 0, outages: [] };
    const r = await runWorld(quiet(9_113, { push, slowBroker, processFaults: [kill] }), DEFAULT_SETTINGS, { trace: true });
    expect(r.verdict.violations, formatVerdict(r.verdict).join('\n')).toEqual([]);
    expect(r.counts['fault:slowBroker']).toBe(1);
    const slow = r.counts['fault:slowPublish'] ?? 0;
    expect(slow).toBeGreaterThan(5);
    // every one given up at the waker's timeout (each over it), some delivered after, the rest lost
    expect(r.counts['fault:slowPublishLanded']).toBeGreaterThan(0);
    expect(r.counts['fault:slowPublishLost']).toBeGreaterThan(0);
    expect((r.counts['fault:slowPublishLanded'] ?? 0) + (r.counts['fault:slowPublishLost'] ?? 0)).toBe(slow);
    const windows = healingFaults(r.faults).filter((w) => w.kind === 'slowBroker');
    expect(windows.map((w) => [ms(w.from) - T0, ms(w.to) - T0])).toEqual([[60_000, 128_000]]);
    // the same world without it publishes on time
    const { slowBroker: _gone, ...without } = quiet(9_113, { push, slowBroker, processFaults: [kill] });
    const fine = await runWorld(without, DEFAULT_SETTINGS);
    expect(fine.counts['fault:slowPublish']).toBeUndefined();
    expect(fine.counts['push:stream']).toBeGreaterThan(0);
  });

  it("throttling the fleet shares: part of every worker's requests throttled for its span, the rest passing; its window is the throttling", { timeout: 180_000 }, async () => {
    const partialThrottle = { at: 60_000, forMs: 90_000, share: 0.8, error: 'provisionedThroughput' as const };
    const r = await runWorld(quiet(9_114, { partialThrottle }), DEFAULT_SETTINGS, { trace: true });
    expect(r.verdict.violations, formatVerdict(r.verdict).join('\n')).toEqual([]);
    expect(r.counts['fault:partialThrottle']).toBe(1);
    // drawn per request: about its share throttled, the rest landing
    const throttled = r.counts['fault:partialThrottled'] ?? 0;
    const passed = r.counts['fault:partialThrottlePassed'] ?? 0;
    expect(throttled).toBeGreaterThan(100);
    expect(passed).toBeGreaterThan(20);
    expect(throttled / (throttled + passed)).toBeGreaterThan(0.7);
    expect(throttled / (throttled + passed)).toBeLessThan(0.9);
    // every worker was told of it
    for (const w of ['w0', 'w1', 'w2']) expect(r.timeline.some((l) => at(l) >= 60_000 && at(l) < 150_000 && new RegExp(`${w} job-\\d: .*ProvisionedThroughputExceeded`).test(l))).toBe(true);
    expect(r.timeline.some((l) => (at(l) < 60_000 || at(l) > 160_000) && /ProvisionedThroughputExceeded/.test(l))).toBe(false);
    const windows = healingFaults(r.faults);
    expect(windows.map((w) => [w.kind, ms(w.from) - T0, ms(w.to) - T0])).toEqual([['partialThrottle', 60_000, 150_000]]);
  });
});
