/**
 * One line per seed: its verdict, a hash of its timeline, counters and verdict, and its requests.
 * Run it on two trees (before and after a change) and diff the outputs: a change that leaves every
 * world as it was prints the same lines. This is how the simulator's speed-ups of issue 28 were
 * held to "the same seeds give the same worlds". Prints; asserts nothing.
 *
 *   npx tsx bench/sim-hashes.ts [--first 1000] [--count 60] [--regions]
 */
import { createHash } from 'node:crypto';
import { REGION_SETTINGS } from '../sim/regions-run.js';
import { generateRegionPlan } from '../sim/regions.js';
import { generateSchedule } from '../sim/schedule.js';
import { DEFAULT_SETTINGS, runWorld } from '../sim/world.js';

process.env['POWERTOOLS_METRICS_DISABLED'] ??= 'true';
const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(v) || v < 0) throw new Error(`--${name}: must be a whole number ≥ 0, got "${process.argv[i + 1]}"`);
  return v;
};
const first = arg('first', 1000);
const count = arg('count', 60);
const regions = process.argv.includes('--regions');
const settings = regions ? REGION_SETTINGS : DEFAULT_SETTINGS;

for (let seed = first; seed < first + count; seed++) {
  const schedule = generateSchedule(seed, { workers: settings.workers, durationMs: settings.durationMs });
  const r = await runWorld(schedule, settings, { trace: true, ...(regions ? { regions: generateRegionPlan(seed, settings.durationMs) } : {}) });
  const hash = createHash('sha1')
    .update(r.timeline.join('\n'))
    .update(JSON.stringify(r.counts))
    .update(JSON.stringify(r.verdict, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)))
    .digest('hex')
    .slice(0, 12);
  console.log(`${seed} ${r.verdict.ok ? 'ok' : 'VIOLATION'} ${hash} requests=${r.counts['requests'] ?? 0}`);
}
process.exit(0);
