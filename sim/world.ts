/**
 * One simulated Conclave: N worker processes running the real SDK (LeaderElector with its
 * candidacy; in about half the worlds one Session per process, holding its electors' terms), the
 * real coordinator and the real stream, timer and platform handlers (the same modules Lambda
 * runs), over the in-memory DynamoDB model, all on one simulated clock. Every latency and fault
 * comes from the schedule, which comes from the seed: a seed replays exactly.
 *
 * The parts: the world's machines and clocks, model and broker (sim/machines.ts, shared with the
 * SDK tests' sim/harness.ts); the faults (sim/network.ts between the processes and
 * DynamoDB, sim/faults.ts on processes and rows); the workloads (sim/workers.ts: electors and
 * sessions; sim/jobs.ts: the scheduled job; sim/functions.ts: the coordinator's functions); and
 * the checker's feed (sim/feed.ts: history, fault windows and the ledger of fenced writes, judged
 * by the same checker as the chaos runs, lib/history/checker.ts).
 */
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { drainMicrotasks, seededRandom } from '../lib/clock.js';
import type { Verdict } from '../lib/history/checker.js';
import type { FaultWindow } from '../lib/history/schema.js';
import { createTables } from '../lib/local/tables.js';
import { requestBound } from '../lib/history/request-bound.js';
import type { PlantedBug } from './bugs.js';
import { scheduleFaults } from './faults.js';
import { Feed, T0 } from './feed.js';
import { startFunctions } from './functions.js';
import { SimWorld } from './machines.js';
import { scheduleNetwork } from './network.js';
import { slowPublishes } from './push.js';
import type { Schedule } from './schedule.js';
import { CRON_LEASE, DEFAULT_SETTINGS, type WorldContext, type WorldSettings } from './settings.js';
import { Workers } from './workers.js';
import { WorldRegions, regionOf, type RegionFigure, type RegionPlan } from './regions.js';
import type { Functions } from './functions.js';
import { TABLES, type TableSpec } from '../lib/tables.js';

/** The key attributes of the world's tables, by name (the Region layer tells items apart by them). */
function keysOf(world: SimWorld, feed: Feed): (table: string) => readonly string[] {
  const keys = new Map<string, readonly string[]>([[feed.ledgerTable, ['lease', 'id']]]);
  for (const [role, spec] of Object.entries(TABLES) as [keyof typeof TABLES, TableSpec][]) keys.set(world.names[role], [spec.partitionKey, ...(spec.sortKey ? [spec.sortKey] : [])]);
  return (t) => keys.get(t) ?? [];
}

/** The functions of every Region as one: a platform event reaches each Region's function; stop stops them all. */
function allOf(byRegion: Map<string, Functions>): Functions {
  return {
    platformStopped: (p) => byRegion.forEach((f) => f.platformStopped(p)),
    stop: () => byRegion.forEach((f) => f.stop()),
  };
}

/** The attempts the model's clients make of each request: the AWS SDK's default (sim/dynamodb-model/client.ts). */
const MODEL_MAX_ATTEMPTS = 3;

export { CRON_LEASE, DEFAULT_SETTINGS, sessionTimings, type WorldSettings } from './settings.js';

/** What one schedule produced. */
export interface SimResult {
  readonly seed: number;
  readonly verdict: Verdict;
  /** Every line of the timeline (printed with --seed). */
  readonly timeline: readonly string[];
  /** Counters: requests, faults applied, events, dead letters. */
  readonly counts: Readonly<Record<string, number>>;
  /** Multi-Region worlds: what each Region event did to the leases led there. */
  readonly regions?: readonly RegionFigure[];
  /** The fault windows the checker judged the world with (simulated monotonic ns, as the history's). */
  readonly faults: readonly FaultWindow[];
}

/** How one world is run: its timeline kept, a planted bug, and (multi-Region worlds) its Region plan. */
export interface RunOptions {
  readonly trace?: boolean;
  readonly plant?: PlantedBug | undefined;
  readonly regions?: RegionPlan | undefined;
  /** Every worker's and job's `onError` throws (WorldContext.brokenAlarms). */
  readonly brokenAlarms?: boolean;
  /**
   * From `fromMs` to `toMs` of the world (simulated): every change of a lease, candidate or
   * identity row (looked at every ROWS_EVERY_MS) and every error or warning the functions log,
   * into the timeline (with `trace`; `npm run sim -- --seed N --rows FROM-TO`).
   */
  readonly rows?: { readonly fromMs: number; readonly toMs: number };
}

/** How often `rows` looks at the tables: as often as Lambda's pollers look at the streams. */
const ROWS_EVERY_MS = 250;

/** Logs each row of the lease, candidate and identity tables that changed since the last look, from `fromMs` to `toMs` of the world. */
function traceRows(world: SimWorld, feed: Feed, keys: (table: string) => readonly string[], window: NonNullable<RunOptions['rows']>): void {
  const last = new Map<string, string>();
  const tables = (['leases', 'candidates', 'identities'] as const).map((role) => [role, world.names[role]] as const);
  const look = () => {
    const seen = new Set<string>();
    for (const [role, table] of tables)
      for (const item of world.model.items(table)) {
        const row = unmarshall(item);
        const id = `${role} ${keys(table)
          .map((k) => String(row[k]))
          .join('/')}`;
        const text = JSON.stringify(row);
        seen.add(id);
        if (last.get(id) !== text) feed.log(`row ${id}: ${text}`);
        last.set(id, text);
      }
    for (const id of last.keys())
      if (!seen.has(id)) {
        feed.log(`row ${id}: deleted`);
        last.delete(id);
      }
    if (world.clock.now() - T0 + ROWS_EVERY_MS <= window.toMs) world.clock.setTimer(ROWS_EVERY_MS, look);
  };
  world.clock.setTimer(Math.max(0, window.fromMs), look);
}

/**
 * The longest leaderless spells by kind of fault (ms, whole), for the run's summary (npm run sim):
 * which faults leave leases leaderless longest (the checker judges them). Of a spell of a lease the
 * leaderless rules judge (not `cron-0`): `worstSpellMs:<kind>`, its whole length, for each kind
 * whose window, or the `healMs` after it, it overlaps (`start` for the start-up's, `none` for one no
 * fault explains); `worstAfterHealMs:<kind>`, what of it came after the last window it overlaps
 * ended, for that window's kind (`none`: the whole of one no window overlaps).
 */
function worstSpellsByFault(verdict: Verdict, faults: readonly FaultWindow[], settings: WorldSettings, healMs: number): Map<string, number> {
  const ms = (ns: bigint) => Number(ns / 1_000_000n);
  const start = BigInt(T0) * 1_000_000n;
  const end = start + BigInt(settings.durationMs) * 1_000_000n;
  const heal = BigInt(healMs) * 1_000_000n;
  const windows = faults.map((f) => ({ kind: f.kind, from: BigInt(f.from), to: BigInt(f.to) + heal }));
  const worst = new Map<string, number>();
  for (let i = 0; i < settings.leases; i++) {
    const terms = verdict.terms.filter((t) => t.lease === `job-${i}` && t.stop > t.start).sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
    const spells: [bigint, bigint][] = [];
    let cur = start;
    for (const t of terms) {
      if (t.start > cur) spells.push([cur, t.start]);
      if (t.stop > cur) cur = t.stop;
    }
    if (cur < end) spells.push([cur, end]);
    for (const [a, b] of spells) {
      const near = windows.filter((w) => w.from <= b && w.to >= a);
      const kinds = new Set(near.map((w) => w.kind));
      if (a === start) kinds.add('start');
      if (kinds.size === 0) kinds.add('none');
      const most = (k: string, v: number) => worst.set(k, Math.max(worst.get(k) ?? 0, v));
      for (const k of kinds) most(`worstSpellMs:${k}`, ms(b - a));
      // the window it overlaps that ended last (its heal, without the `healMs` after it)
      const last = near.map((w) => ({ kind: w.kind, to: w.to - heal })).reduce<{ kind: string; to: bigint } | undefined>((x, w) => (x === undefined || w.to > x.to ? w : x), undefined);
      if (last === undefined) most(a === start ? 'worstAfterHealMs:start' : 'worstAfterHealMs:none', ms(b - a));
      else if (b > last.to) most(`worstAfterHealMs:${last.kind}`, ms(b - (last.to > a ? last.to : a)));
    }
  }
  return worst;
}

/** Runs `schedule`'s world (a planted bug goes into what the world builds: sim/bugs.ts). */
export async function runWorld(schedule: Schedule, settings: WorldSettings = DEFAULT_SETTINGS, opts: RunOptions = {}): Promise<SimResult> {
  // the schedule's own stream of numbers, apart from the system's, so that a fault's draws do not shift the system's
  const random = seededRandom(schedule.seed ^ 0x5bd1e995);
  const world = new SimWorld({ start: T0, seed: schedule.seed, settle: drainMicrotasks(), model: { random, staleReadMaxLagMs: schedule.staleReadLagMs } });
  const feed = new Feed(world.clock, opts.trace ?? false);
  const setup = world.model.client({ name: 'setup' });
  await createTables(setup, world.names);
  await feed.createLedger(setup);
  const network = scheduleNetwork(world.clock, schedule, random, feed, world.names);
  const regions = opts.regions ? new WorldRegions(opts.regions, { world, random }, keysOf(world, feed)) : undefined;
  const w = opts.rows;
  const functionsLog = w && ((line: string) => (world.clock.now() - T0 >= w.fromMs && world.clock.now() - T0 <= w.toMs ? feed.log(line) : undefined));
  // a slow IoT Core: one stream of delays for every broker and function of the world
  const slowPublish = schedule.push && schedule.slowBroker ? slowPublishes(schedule.slowBroker, schedule.seed, world.clock) : undefined;
  const c: WorldContext = regions
    ? { world, schedule, settings, random, feed, network: regions.network(network), plant: opts.plant, multiRegion: true, gone: (m) => regions.gone(m), regionOf: (name) => regionOf(regions.plan, name), brokenAlarms: opts.brokenAlarms, functionsLog, ...(slowPublish ? { slowPublish } : {}) }
    : { world, schedule, settings, random, feed, network, plant: opts.plant, brokenAlarms: opts.brokenAlarms, functionsLog, ...(slowPublish ? { slowPublish } : {}) };
  if (w) traceRows(world, feed, keysOf(world, feed), w);
  // IoT Core is per Region: across Regions, a broker in each replica Region, down in the schedule's outages alike (and slow alike)
  if (schedule.push) for (const r of regions ? regions.plan.replicas : [undefined]) world.startBroker(schedule.push, random, (k) => feed.count(k), r).slowPublish = slowPublish;
  // one coordinator (the functions) per replica Region; no TTL on multi-Region tables
  const byRegion = new Map<string, Functions>();
  for (const r of regions?.plan.replicas ?? []) byRegion.set(r, await startFunctions(c, { name: `functions@${r}`, ttl: false }));
  const fns = regions ? allOf(byRegion) : await startFunctions(c);
  const workers = new Workers(c);
  for (let i = 0; i < settings.workers; i++) workers.start(i);
  scheduleFaults(c, workers, fns);
  regions?.schedule(c, workers, byRegion);

  await world.clock.run(settings.durationMs);
  fns.stop();
  if (regions) feed.count('worlds:regions');
  const verdict = await feed.verdict(world.model.client({ name: 'checker' }), {
    healMs: schedule.healMs,
    episodicLeases: [CRON_LEASE],
    requestBound: requestBound({ ...settings, maxAttempts: MODEL_MAX_ATTEMPTS }),
  });
  if (verdict.figures.worstRequestsPerWindow !== undefined) feed.count('requests:worstPerWindow', verdict.figures.worstRequestsPerWindow);
  for (const [key, worst] of worstSpellsByFault(verdict, feed.faults, settings, schedule.healMs)) feed.count(`leaderless:${key}`, worst);
  feed.count('terms', verdict.figures.terms);
  if (schedule.push) feed.count('worlds:push');
  if (schedule.session) feed.count('worlds:session');
  for (const s of workers.sessions) for (const [k, v] of Object.entries(s.stats)) feed.count(`session:${k}`, v);
  // stop what is left: nothing more runs once the clock is no longer run
  for (const p of [...workers.procs, ...workers.twins]) p.machine.kill();
  const figures = regions?.figures(feed.history, Array.from({ length: settings.leases }, (_, i) => `job-${i}`), feed.faults);
  return { seed: schedule.seed, verdict, timeline: feed.timeline, counts: feed.counts, faults: feed.faults, ...(figures ? { regions: figures } : {}) };
}
