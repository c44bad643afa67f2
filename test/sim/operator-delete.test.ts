/**
 * An operator deletes a held lease row (docs/safety.md, open items: seeds 1448349301 and
 * 1368225001). The checker forgives the deleted term's holder within `revokedGraceMs` of the
 * delete and counts such an overlap apart (`revokedOverlaps`); the product promises one acting
 * leader, so these seeds must show none at all: the next leader is elected no earlier than the
 * deleted term could still be acted on (Election.notBefore, lib/functions/core.ts).
 */
import { describe, expect, it } from 'vitest';
import { formatVerdict } from '../../lib/history/checker.js';
import { generateSchedule } from '../../sim/schedule.js';
import { DEFAULT_SETTINGS, runWorld } from '../../sim/world.js';

process.env['POWERTOOLS_METRICS_DISABLED'] ??= 'true';

/** Seeds whose operator's delete once let two leaders act (before the held election). */
const SEEDS: { seed: number; found: string }[] = [
  { seed: 3000437, found: "the lease stream elected the next leader at once after an operator's delete: 246 ms before the deleted term's holder heard of it (revokedOverlaps)" },
  { seed: 5068, found: "an operator wrote the held row malformed, then deleted it: the lease stream took the broken row's delete for nothing to do, and the tick elected the next leader 37 s later, 5.5 s before the session-held holder read the row gone (overlap)" },
];

describe("an operator's delete of a held row in the simulator", () => {
  it.each(SEEDS)('seed $seed: no overlap after the delete ($found)', { timeout: 120_000 }, async ({ seed }) => {
    const schedule = generateSchedule(seed, { workers: DEFAULT_SETTINGS.workers, durationMs: DEFAULT_SETTINGS.durationMs });
    expect(schedule.processFaults.some((f) => f.kind === 'deleteLease')).toBe(true);
    const r = await runWorld(schedule, DEFAULT_SETTINGS);
    expect(r.counts['fault:deleteLease']).toBeGreaterThan(0);
    expect(r.verdict.violations, formatVerdict(r.verdict).join('\n')).toEqual([]);
    expect(r.verdict.figures.revokedOverlaps, formatVerdict(r.verdict).join('\n')).toBe(0);
  });
});
