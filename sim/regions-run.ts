/**
 * `npm run sim -- --regions`: worlds across three Regions, for people. With `--seed N`, the seed's
 * two worlds' stories (its Region events alone, then among its other faults, as a batch runs them):
 * its Region plan, then what the workers, the coordinators and the Regions did, as a timeline (at
 * each Region event, who held each lease and whom the coordinator had named to take it over), and
 * the verdict. Otherwise K seeds (`--schedules`, default 20), each as those two worlds, in turn and what Region
 * events cost: the time from a Region's loss (or its cutting off) to a new leader in another
 * Region, against the lease duration, and when a cut-off leader stopped, against its renew deadline;
 * each seed with its Region events alone, and among its schedule's other faults.
 */
import { formatVerdict } from '../lib/history/checker.js';
import { systemClock } from '../lib/clock.js';
import { describeRegionPlan, generateRegionPlan, regionOf, type RegionFigure } from './regions.js';
import { describeSchedule, generateSchedule, type KeptMode } from './schedule.js';
import { DEFAULT_SETTINGS, runWorld, type RunOptions, type WorldSettings } from './world.js';

/** A Region event's figure, and the seed of its world (to replay it). */
type SeededFigure = RegionFigure & { readonly seed: number };

/** Four workers, so that one replica Region runs two of them. */
export const REGION_SETTINGS: WorldSettings = { ...DEFAULT_SETTINGS, workers: 4 };

/** What a line of the timeline must say to be part of the story. */
/** `--rows`' lines: a row changed, a function's error or warning. */
const ROWS = /^\s*\S+\s+(row |functions\S* (error|warn): )/;
const STORY = /region|leads|stops leading|^\s*\S+\s+(start|kill|stop|pause|partition) w|delete lease|rewrites \S+'s session/;

export async function runRegions(o: { seed?: number; schedules?: number; budget?: number; first?: number; mixed?: boolean; kept?: KeptMode | undefined; rows?: RunOptions['rows'] }): Promise<number> {
  const settings = REGION_SETTINGS;
  const mixed = o.mixed === true;
  const kept = o.kept ? { kept: o.kept } : {};
  if (o.seed !== undefined && o.schedules === undefined && o.budget === undefined) return tell(o.seed, settings, mixed, kept, o.rows);
  const first = o.first ?? Math.floor(systemClock.random() * 2 ** 31);
  // --schedules seeds, or as many as --budget's seconds of wall-clock time begin (20 seeds without either)
  const n = o.schedules ?? (o.budget === undefined ? 20 : Infinity);
  const began = systemClock.monotonic();
  const until = o.budget === undefined ? Infinity : began + o.budget * 1000;
  console.log(`sim --regions: ${n === Infinity ? `worlds for ${o.budget} s` : `${n} seed${n === 1 ? '' : 's'} (${2 * n} worlds: its Region events alone, then among its other faults)`} from seed ${first} (${settings.workers} workers over the replica Regions, ${settings.leases} leases, ${settings.durationMs / 60_000} simulated min each; lease ${settings.leaseDurationMs / 1000} s, renew deadline ${settings.renewDeadlineMs / 1000} s); replay one with: npm run sim -- --regions --seed <seed>${mixed ? ' --mixed' : ''}${o.kept ? ` --kept ${o.kept}` : ''}`);
  // each seed twice: its Region events alone, then with the schedule's other faults too
  const figures = { alone: [] as SeededFigure[], faults: [] as SeededFigure[] };
  // per world whose Region loss the checker judged (leaderlessAfterLoss): its longest wait for a leader, from the rule's start
  const afterLoss = { alone: [] as { seed: number; ms: number }[], faults: [] as { seed: number; ms: number }[] };
  const failed: string[] = [];
  let seeds = 0;
  for (let seed = first; seed < first + n && systemClock.monotonic() < until; seed++, seeds++) {
    for (const kind of ['alone', 'faults'] as const) {
      const schedule = generateSchedule(seed, { workers: settings.workers, durationMs: settings.durationMs, faults: kind === 'faults', mixed, ...kept });
      const r = await runWorld(schedule, settings, { regions: generateRegionPlan(seed, settings.durationMs) });
      figures[kind].push(...(r.regions ?? []).map((f) => ({ ...f, seed })));
      if (r.verdict.figures.lossesJudged) afterLoss[kind].push({ seed, ms: r.verdict.figures.worstLeaderlessAfterLossMs ?? 0 });
      if (!r.verdict.ok) {
        failed.push(`${seed}${kind === 'alone' ? ' (Region events alone)' : ''}`);
        console.log(`seed ${seed}${kind === 'alone' ? ', Region events alone' : ''}: VIOLATION`);
        for (const l of formatVerdict(r.verdict)) console.log(`  ${l}`);
      }
    }
  }
  console.log(`\n${2 * seeds} worlds${seeds ? ` (seeds ${first}–${first + seeds - 1})` : ''} in ${((systemClock.monotonic() - began) / 1000).toFixed(1)} s; violations: ${failed.length}${failed.length ? ` (seeds ${failed.join(', ')})` : ''}`);
  console.log('\nRegion events alone (no other fault in the world):');
  summarize(figures.alone, settings);
  judgedAfterLoss(afterLoss.alone);
  console.log('\nRegion events among the schedule\'s other faults (kills, pauses, partitions, DynamoDB faults, coordinator outages, clock steps):');
  summarize(figures.faults, settings);
  judgedAfterLoss(afterLoss.faults);
  return failed.length ? 1 : 0;
}

/** One seed's two worlds, as the batch runs them: its Region events alone, then among its schedule's other faults. */
async function tell(seed: number, settings: WorldSettings, mixed: boolean, kept: { kept?: KeptMode }, rows?: RunOptions['rows']): Promise<number> {
  const plan = generateRegionPlan(seed, settings.durationMs);
  console.log(`seed ${seed}: ${settings.workers} workers, each in a replica Region: ${Array.from({ length: settings.workers }, (_, i) => `w${i} ${regionOf(plan, `w${i}`)}`).join(', ')}; a coordinator in each replica Region`);
  for (const l of describeRegionPlan(plan)) console.log(l);
  let failed = 0;
  for (const faults of [false, true]) {
    console.log(`\n${faults ? "Among the schedule's other faults" : 'Region events alone'}:`);
    const schedule = generateSchedule(seed, { workers: settings.workers, durationMs: settings.durationMs, faults, mixed, ...kept });
    // the schedule's own faults first (coordinator outages and DynamoDB fault windows show nowhere else): a slow Region figure may be theirs
    if (faults) for (const l of describeSchedule(schedule)) console.log(l);
    const r = await runWorld(schedule, settings, { trace: true, regions: plan, ...(rows ? { rows } : {}) });
    for (const l of r.timeline) if (STORY.test(l) || ROWS.test(l)) console.log(l);
    console.log('');
    for (const f of r.regions ?? []) console.log(`  ${describeFigure(f)}`);
    for (const l of formatVerdict(r.verdict)) console.log(l);
    if (!r.verdict.ok) failed++;
  }
  return failed ? 1 : 0;
}

/** The checker's leaderlessAfterLoss figure over the worlds it judged a loss in: each world's longest wait for a leader, from the rule's start. */
function judgedAfterLoss(worlds: readonly { seed: number; ms: number }[]): void {
  if (worlds.length === 0) return;
  const sorted = [...worlds].sort((a, b) => a.ms - b.ms);
  const q = (p: number) => (sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!.ms / 1000).toFixed(1);
  const worst = sorted.at(-1)!;
  console.log(`  checked (leaderlessAfterLoss: a leader within the heal bound of the survivors serving and the faults then under way healing): ${worlds.length} worlds, the longest wait in each: median ${q(0.5)} s, p90 ${q(0.9)} s, max ${q(1)} s (seed ${worst.seed})`);
}

function describeFigure(f: RegionFigure): string {
  const s = (ms: number | undefined) => (ms === undefined ? 'never' : `${(ms / 1000).toFixed(1)} s`);
  const what = f.kind === 'lose' ? `${f.region} lost` : `${f.region} cut off`;
  const stopped = f.leaderFrozen ? 'its leader was frozen (paused) before it stopped' : f.leaderStoppedAfterMs === undefined ? (f.kind === 'lose' ? 'its leader died with it' : 'its leader did not stop') : `its leader stopped on its own after ${s(f.leaderStoppedAfterMs)}`;
  return `${what}: ${f.lease}: ${stopped}; next leader after ${s(f.newLeaderAfterMs)}${f.newLeaderRegion ? ` in ${f.newLeaderRegion}` : ''}`;
}

function summarize(figures: readonly SeededFigure[], settings: WorldSettings): void {
  const stat = (xs: number[]) => {
    if (xs.length === 0) return 'none';
    const sorted = [...xs].sort((a, b) => a - b);
    const q = (p: number) => (sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]! / 1000).toFixed(1);
    return `${xs.length} leases: median ${q(0.5)} s, p90 ${q(0.9)} s, max ${q(1)} s`;
  };
  const of = (kind: RegionFigure['kind']) => figures.filter((f) => f.kind === kind);
  const defined = (xs: (number | undefined)[]) => xs.filter((x): x is number => x !== undefined);
  console.log(`  Region lost, its leader's lease → a new leader elsewhere: ${stat(defined(of('lose').map((f) => f.newLeaderAfterMs)))} (lease duration ${settings.leaseDurationMs / 1000} s); without one by the world's end: ${of('lose').filter((f) => f.newLeaderAfterMs === undefined).length}`);
  // the elector's share: nobody can be elected while no surviving replica has quorum, so a loss is
  // also counted from when one served again; the worlds where none did at once are named apart
  const lost = of('lose').filter((f) => f.newLeaderAfterMs !== undefined && f.quorumBackAfterMs !== undefined);
  const blocked = lost.filter((f) => f.quorumBackAfterMs! > 0);
  console.log(`  Region lost → a new leader, from when a surviving replica served again (the elector's share): ${stat(lost.map((f) => Math.max(0, f.newLeaderAfterMs! - f.quorumBackAfterMs!)))}`);
  if (blocked.length) console.log(`    lost while no surviving replica had quorum: ${blocked.map((f) => `seed ${f.seed} ${f.lease} (no quorum ${(f.quorumBackAfterMs! / 1000).toFixed(1)} s, new leader ${(f.newLeaderAfterMs! / 1000).toFixed(1)} s)`).join(', ')}`);
  console.log(`  Region cut off, its leader's lease → the next leader (elsewhere, or the same process once its Region rejoined): ${stat(defined(of('cutOff').map((f) => f.newLeaderAfterMs)))}`);
  // as for a loss: a Region lost while another is cut off leaves the third without quorum, and nobody can be elected meanwhile
  const cut = of('cutOff').filter((f) => f.newLeaderAfterMs !== undefined);
  const stalled = cut.filter((f) => (f.quorumlessMs ?? 0) > 0);
  console.log(`  Region cut off → the next leader, less the time no replica had quorum (the elector's share): ${stat(cut.map((f) => f.newLeaderAfterMs! - (f.quorumlessMs ?? 0)))}`);
  if (stalled.length) console.log(`    cut off, then no replica had quorum for a while: ${stalled.map((f) => `seed ${f.seed} ${f.lease} (no quorum ${(f.quorumlessMs! / 1000).toFixed(1)} s, next leader ${(f.newLeaderAfterMs! / 1000).toFixed(1)} s)`).join(', ')}`);
  const frozen = of('cutOff').filter((f) => f.leaderFrozen).length;
  console.log(`  Region cut off → its leader stops on its own: ${stat(defined(of('cutOff').map((f) => f.leaderStoppedAfterMs)))} (renew deadline ${settings.renewDeadlineMs / 1000} s)${frozen ? `; ${frozen} frozen (paused) before their stop, not counted: a frozen leader's stop is recorded when it thaws` : ''}`);
  // the tail, to replay: each Region lost or cut off whose new leader came more than a lease duration after it
  const slow = figures.filter((f) => (f.newLeaderAfterMs ?? Infinity) > settings.leaseDurationMs).sort((a, b) => (b.newLeaderAfterMs ?? Infinity) - (a.newLeaderAfterMs ?? Infinity));
  if (slow.length) console.log(`  slowest (new leader after more than a lease duration): ${slow.slice(0, 8).map((f) => `seed ${f.seed} ${f.lease} ${f.kind === 'lose' ? 'lost' : 'cut off'} ${f.newLeaderAfterMs === undefined ? 'never' : `${(f.newLeaderAfterMs / 1000).toFixed(1)} s`}`).join(', ')}${slow.length > 8 ? `, and ${slow.length - 8} more` : ''}`);
}
