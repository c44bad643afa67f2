/**
 * Worlds across three Regions (DynamoDB multi-Region strong consistency, lib/sim/regions.ts): the
 * workers spread over the replica Regions, a coordinator (the functions) in each, every table MRSC
 * (no transactions, no TTL: the workers and jobs run with `multiRegion`, the ledger is appended to
 * with fencedItemWrite), and the plan's Region events: a Region cut off from the others for a while
 * (it rejoins and catches up), or lost for good (its processes and functions die with it). Judged
 * by the same checker as every world.
 */
import { seededRandom } from '../lib/clock.js';
import type { Functions } from './functions.js';
import type { Machine, Network } from './machines.js';
import type { Host } from './network.js';
import { RegionSet } from '../lib/sim/regions.js';
import type { WorldContext } from './settings.js';
import { killProc } from './faults.js';
import { ns } from './feed.js';
import type { Workers } from './workers.js';
import type { HistoryRecord } from '../lib/history/schema.js';
import { LeaseStore } from '../lib/stores/lease-store.js';

export type RegionEvent = { kind: 'cutOff'; region: string; at: number; forMs: number } | { kind: 'lose'; region: string; at: number };

/** Where a world runs: its Region set and what happens to its Regions (times in ms from the start). */
export interface RegionPlan {
  readonly replicas: readonly string[];
  readonly witness: string | undefined;
  readonly events: readonly RegionEvent[];
  /** One-way latency between Regions, ms. */
  readonly crossRegionMs: readonly [number, number];
  readonly catchUpMs: number;
}

const REGIONS = ['us-east-1', 'us-east-2', 'us-west-2'];

/** A seed's Region plan: three replicas or two and a witness; a Region cut off, or lost, or one of each. */
export function generateRegionPlan(seed: number, durationMs: number): RegionPlan {
  const r = seededRandom(seed ^ 0x2e91a3);
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  const withWitness = r() < 0.5;
  const replicas = withWitness ? REGIONS.slice(0, 2) : REGIONS;
  const witness = withWitness ? REGIONS[2] : undefined;
  const faultEnd = Math.floor(durationMs * 0.6);
  const pick = () => REGIONS[int(0, 2)]!;
  const events: RegionEvent[] = [];
  const kind = int(0, 2); // 0: cut off, 1: lost, 2: cut off and later another lost
  const first = pick();
  if (kind !== 1) events.push({ kind: 'cutOff', region: first, at: int(30_000, faultEnd / 2), forMs: int(20_000, 90_000) });
  if (kind !== 0) {
    const lost = kind === 1 ? first : REGIONS.filter((x) => x !== first)[int(0, 1)]!;
    events.push({ kind: 'lose', region: lost, at: int(faultEnd / 2, faultEnd) });
  }
  return { replicas, witness, events: events.sort((a, b) => a.at - b.at), crossRegionMs: [int(10, 30), int(40, 120)], catchUpMs: int(2_000, 20_000) };
}

export function describeRegionPlan(p: RegionPlan): string[] {
  return [
    `regions: replicas ${p.replicas.join(', ')}${p.witness ? `, witness ${p.witness}` : ''}; one way between Regions ${p.crossRegionMs[0]}–${p.crossRegionMs[1]} ms; a rejoining Region catches up in ${(p.catchUpMs / 1000).toFixed(1)} s`,
    ...p.events.map((e) => (e.kind === 'cutOff' ? `  at ${(e.at / 1000).toFixed(1)} s: ${e.region} cut off for ${(e.forMs / 1000).toFixed(1)} s` : `  at ${(e.at / 1000).toFixed(1)} s: ${e.region} lost`)),
  ];
}

/** The Region a machine runs in: worker `wN` in the replica Regions in turn, `functions@<region>` in its own. */
export function regionOf(plan: RegionPlan, machine: string): string {
  const at = machine.indexOf('@');
  if (at >= 0) return machine.slice(at + 1);
  const n = Number(/\d+/.exec(machine)?.[0] ?? 0);
  return plan.replicas[n % plan.replicas.length]!;
}

/** What a Region event did to the leases whose leader ran in that Region (simulated ms). */
export interface RegionFigure {
  readonly kind: RegionEvent['kind'];
  readonly region: string;
  readonly lease: string;
  /** From the event to the old leader's own stop (a cut-off Region's leader: by its renew deadline); undefined when it died with its Region. */
  readonly leaderStoppedAfterMs: number | undefined;
  /** From the event to the next leader's start (undefined: none before the world ended). */
  readonly newLeaderAfterMs: number | undefined;
  /** The Region the next leader ran in. */
  readonly newLeaderRegion: string | undefined;
}

/** The Regions of one world: the set, and each request's way through its machine's Region to the model. */
export class WorldRegions {
  readonly set: RegionSet;
  /** The plan's events as they happened (simulated monotonic ms). */
  private readonly happened: { kind: RegionEvent['kind']; region: string; mono: number }[] = [];
  constructor(
    readonly plan: RegionPlan,
    c: Pick<WorldContext, 'world' | 'random'>,
    keysOf: (table: string) => readonly string[],
  ) {
    this.set = new RegionSet(c.world.clock, c.random, { replicas: plan.replicas, witness: plan.witness, crossRegionMs: plan.crossRegionMs, catchUpMs: plan.catchUpMs, keysOf });
  }

  /** `base` (the process's own network) behind its Region's endpoint. */
  network(base: Network<Host>): Network<Host> {
    return (m, req, apply) => this.set.serve(regionOf(this.plan, m.name), req, () => base(m, req, apply));
  }

  /** Whether a machine's Region is gone. */
  gone(m: Pick<Machine, 'name'>): boolean {
    return this.set.status(regionOf(this.plan, m.name)) === 'lost';
  }

  /** Sets a timer for each of the plan's events, each recorded as a fault window. */
  schedule(c: WorldContext, workers: Workers, fns: Map<string, Functions>): void {
    const { world, feed } = c;
    const clock = world.clock;
    for (const e of this.plan.events) {
      clock.setTimer(e.at, () => {
        const from = clock.monotonic();
        this.tellSuccession(c, e);
        this.happened.push({ kind: e.kind, region: e.region, mono: from });
        if (e.kind === 'cutOff') {
          feed.log(`region ${e.region} cut off from the other two`);
          feed.count('region:cutOff');
          this.set.cutOff(e.region);
          clock.setTimer(e.forMs, () => {
            feed.log(`region ${e.region} rejoins; it answers errors while it catches up (${(this.plan.catchUpMs / 1000).toFixed(1)} s)`);
            this.set.rejoin(e.region);
            clock.setTimer(this.plan.catchUpMs, () => {
              feed.log(`region ${e.region} caught up`);
              feed.window('regionCutOff', from, clock.monotonic());
            });
          });
        } else {
          feed.log(`region ${e.region} lost: its processes and functions are gone`);
          feed.count('region:lost');
          this.set.lose(e.region);
          for (const p of workers.procs) if (regionOf(this.plan, p.machine.name) === e.region && !p.machine.clock.dead) killProc(c, p);
          fns.get(e.region)?.stop();
          feed.window('regionLoss', from, from);
        }
      });
    }
  }

  /**
   * The story's line for each lease at a Region event: who holds it and whom the coordinator named
   * to take it over, each with its Region (read straight from the model, outside every Region).
   */
  private tellSuccession(c: WorldContext, e: RegionEvent): void {
    if (!c.feed.tracing) return;
    const leases = new LeaseStore(c.world.model.client({ name: 'regions' }), c.world.names.leases);
    const where = (name: string | undefined) => (name === undefined ? 'nobody' : `${name} (${regionOf(this.plan, name)})`);
    void Promise.all(Array.from({ length: c.settings.leases }, (_, i) => leases.read(`job-${i}`))).then((reads) => {
      for (const r of reads) {
        const l = r.item;
        if (l) c.feed.log(`region ${e.region}: ${l.name} held by ${where(l.holderIdentity)}, successor ${where(l.successor)}, second successor ${where(l.secondSuccessor)}`);
      }
    });
  }

  /**
   * For each event, each lease whose leader ran in the Region hit: when that leader stopped, and
   * when the next one started, where (from the history the checker judges).
   */
  figures(history: readonly HistoryRecord[], leases: readonly string[]): RegionFigure[] {
    const out: RegionFigure[] = [];
    const ms = (r: HistoryRecord) => Number(BigInt(r.mono) / 1_000n) / 1_000;
    for (const e of this.happened) {
      // compared in the history's own nanoseconds: in milliseconds, a record made at the event's
      // very moment (a lost Region's processes killed) could round to before it, and a lease whose
      // leader died with its Region went uncounted
      const at = BigInt(ns(e.mono));
      for (const lease of leases) {
        // what the event itself did (a lost Region's processes killed) comes after it
        const before = history.filter((r) => r.lease === lease && BigInt(r.mono) < at);
        const last = before.filter((r) => r.event === 'started').at(-1);
        if (!last || before.some((r) => r.event === 'stopped' && r.instance === last.instance && r.fencingToken === last.fencingToken)) continue;
        if (regionOf(this.plan, last.identity) !== e.region) continue;
        const after = history.filter((r) => r.lease === lease && BigInt(r.mono) >= at);
        const stop = after.find((r) => r.event === 'stopped' && r.instance === last.instance && r.fencingToken === last.fencingToken);
        const next = after.find((r) => r.event === 'started' && r.instance !== last.instance);
        out.push({
          kind: e.kind,
          region: e.region,
          lease,
          leaderStoppedAfterMs: stop && (stop as { reason?: string }).reason !== 'killed' ? ms(stop) - e.mono : undefined,
          newLeaderAfterMs: next ? ms(next) - e.mono : undefined,
          newLeaderRegion: next ? regionOf(this.plan, next.identity) : undefined,
        });
      }
    }
    return out;
  }
}
