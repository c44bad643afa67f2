/**
 * The fault windows a world records for the checker are exactly the faults: the leaderless-after-heal,
 * stuck-lease and leaderless-after-loss rules start their clocks where the last window ends, so a
 * window that outlasts its fault's effect lets a world go leaderless for longer than the rules allow.
 */
import { describe, expect, it } from 'vitest';
import { formatVerdict } from '../../lib/history/checker.js';
import { ns, T0 } from '../../sim/feed.js';
import { REGION_SETTINGS } from '../../sim/regions-run.js';
import { generateSchedule, type Schedule } from '../../sim/schedule.js';
import { DEFAULT_SETTINGS, runWorld } from '../../sim/world.js';

process.env['POWERTOOLS_METRICS_DISABLED'] ??= 'true';

/** A world written out rather than drawn: three workers on time, no drawn faults; `w` says the rest. */
const written = (w: Partial<Schedule>, workers = 3): Schedule => ({
  ...generateSchedule(1, { workers, durationMs: DEFAULT_SETTINGS.durationMs, faults: false }),
  skewMs: Array.from({ length: workers }, () => 0),
  driftPpm: undefined,
  userFaults: [],
  peerFaults: [],
  ...w,
});

/** When a line of the traced timeline was told, in ms from the start. */
const whenTold = (timeline: readonly string[], pattern: RegExp): number => {
  const line = timeline.find((l) => pattern.test(l));
  expect(line, `no line matches ${pattern}`).toBeDefined();
  return Math.round(Number(/^\s*([\d.]+)s/.exec(line!)![1]) * 1000);
};

describe('fault windows as the checker is given them', () => {
  it('a malformed-row fault: its window ends at the repair, not a second forMs after it (seed 99103 --regions: repaired at 366.6 s, the window ran to 418.4 s)', { timeout: 120_000 }, async () => {
    const at = 60_000;
    const forMs = 20_000;
    const r = await runWorld(written({ userFaults: [{ kind: 'malformedRow', lease: 0, at, forMs }] }), DEFAULT_SETTINGS, { trace: true });
    expect(r.verdict.violations, formatVerdict(r.verdict).join('\n')).toEqual([]);
    const malformed = whenTold(r.timeline, /operator writes job-0 malformed/);
    const repaired = whenTold(r.timeline, /operator repairs job-0/);
    expect([malformed, repaired]).toEqual([at, at + forMs]);
    const windows = r.faults.filter((w) => w.kind === 'malformedRow');
    expect(windows).toEqual([{ kind: 'malformedRow', lease: 'job-0', from: ns(T0 + malformed), to: ns(T0 + repaired) }]);
  });

  // A fault on a process ends when the process does: its successor is a new process on a new
  // machine, neither frozen nor cut off, and a process killed with its Region is simply gone.
  it.each([
    { fault: 'pause' as const, processFault: { kind: 'pause' as const, worker: 0, at: 60_000, forMs: 30_000, aimed: false } },
    { fault: 'partition' as const, processFault: { kind: 'partition' as const, worker: 0, at: 60_000, forMs: 30_000 } },
  ])('a $fault of a process killed 10 s into it: its window ends at the kill, not 20 s later when the fault would have ended', { timeout: 120_000 }, async ({ fault, processFault }) => {
    const r = await runWorld(written({ processFaults: [processFault, { kind: 'kill', worker: 0, at: 70_000, forMs: 5_000 }] }), DEFAULT_SETTINGS, { trace: true });
    expect(r.verdict.violations, formatVerdict(r.verdict).join('\n')).toEqual([]);
    expect(whenTold(r.timeline, /kill w0$/)).toBe(70_000);
    expect(r.faults.filter((w) => w.kind === fault).map((w) => [w.from, w.to])).toEqual([[ns(T0 + 60_000), ns(T0 + 70_000)]]);
    expect(r.faults.filter((w) => w.kind === 'kill').map((w) => [w.from, w.to])).toEqual([[ns(T0 + 70_000), ns(T0 + 75_000)]]);
  });

  it('a second process under a worker’s identity killed with its Region: its window ends at the loss, not when it would have been stopped', { timeout: 120_000 }, async () => {
    const settings = REGION_SETTINGS;
    // w0 (us-east-1) killed for long: the twin started under its identity takes its name over, and dies with us-east-1 at 100 s
    const schedule = written({ processFaults: [{ kind: 'kill', worker: 0, at: 40_000, forMs: 200_000 }], peerFaults: [{ kind: 'twin', worker: 0, at: 60_000, forMs: 60_000 }] }, settings.workers);
    const plan = { replicas: ['us-east-1', 'us-east-2', 'us-west-2'], witness: undefined, events: [{ kind: 'lose' as const, region: 'us-east-1', at: 100_000 }], crossRegionMs: [10, 40] as const, catchUpMs: 5_000 };
    const r = await runWorld(schedule, settings, { trace: true, regions: plan });
    expect(r.verdict.violations, formatVerdict(r.verdict).join('\n')).toEqual([]);
    // the twin led something before the loss: it ran, and the loss ended it
    expect(r.timeline.some((l) => /start a second process under w0/.test(l))).toBe(true);
    expect(r.timeline.some((l) => /stop the second process under w0/.test(l))).toBe(false);
    expect(r.faults.filter((w) => w.kind === 'twin').map((w) => [w.from, w.to])).toEqual([[ns(T0 + 60_000), ns(T0 + 100_000)]]);
  });
});
