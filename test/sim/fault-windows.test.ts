/**
 * The fault windows a world records for the checker are exactly the faults: the leaderless-after-heal,
 * stuck-lease and leaderless-after-loss rules start their clocks where the last window ends, so a
 * window that outlasts its fault's effect lets a world go leaderless for longer than the rules allow.
 */
import { describe, expect, it } from 'vitest';
import { formatVerdict } from '../../lib/history/checker.js';
import { ns, T0 } from '../../sim/feed.js';
import { generateSchedule, type Schedule } from '../../sim/schedule.js';
import { DEFAULT_SETTINGS, runWorld } from '../../sim/world.js';

process.env['POWERTOOLS_METRICS_DISABLED'] ??= 'true';

/** A world written out rather than drawn: three workers on time, no drawn faults; `w` says the rest. */
const written = (w: Partial<Schedule>): Schedule => ({
  ...generateSchedule(1, { workers: 3, durationMs: DEFAULT_SETTINGS.durationMs, faults: false }),
  skewMs: [0, 0, 0],
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
});
