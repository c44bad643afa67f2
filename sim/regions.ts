/**
 * Regions, in two parts.
 *
 * **The MRSC layer** (RegionSet): DynamoDB's multi-Region strong consistency, as a layer in front of
 * the one model: three Regions in one Region set (three replicas, or two replicas and a witness),
 * and what each Region's endpoint does with a request (DynamoDB Developer Guide, "How DynamoDB
 * global tables work", consistency modes; docs/deploy.md):
 *
 * - **One truth.** Every write and every strongly consistent read is linearizable across the
 *   Regions: the model is that one copy. A write or strong read pays a round trip to the nearest
 *   other member of the set (replica or witness) before it is applied.
 * - **Quorum.** A Region serves writes and strong reads only while it reaches another member (a
 *   replica or the witness). Cut off from both, it answers them with a 500 (the SDK retries, then
 *   gives up); eventually consistent reads it still serves, from its own copy (here: the model,
 *   which a cut-off Region's copy is never newer than, so such a read may only be older in AWS).
 * - **Catching up.** A Region that rejoins answers every request with a 500 until it has caught up.
 * - **Replicated write conflicts.** A write to an item that a write from another Region is still
 *   changing fails with ReplicatedWriteConflictException and is not applied (the SDK retries it).
 * - **No transactions, no TTL** on MRSC tables: a TransactWriteItems is a ValidationException.
 * - **A lost Region** answers nothing; its streams stop. A cut-off Region's stream sees nothing new.
 *
 * The witness serves no request and holds no data: it only gives the quorum.
 *
 * **Worlds across three Regions** (WorldRegions, on the layer above): the
 * workers spread over the replica Regions, a coordinator (the functions) and IoT Core (the push
 * path's broker, sim/push.ts: a wake never crosses Regions) in each, every table MRSC
 * (no transactions, no TTL: the workers and jobs run with `multiRegion`, the ledger is appended to
 * with fencedItemWrite), and the plan's Region events: a Region cut off from the others for a while
 * (it rejoins and catches up), or lost for good (its processes and functions die with it). Judged
 * by the same checker as every world.
 */
import { ReplicatedWriteConflictException } from '@aws-sdk/client-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { faults, validationError } from './dynamodb-model/errors.js';
import type { Apply, ModelRequest } from './dynamodb-model/index.js';
import { seededRandom } from '../lib/clock.js';
import type { Functions } from './functions.js';
import type { Machine, Network } from './machines.js';
import type { Host } from './network.js';
import type { WorldContext } from './settings.js';
import { killProc } from './faults.js';
import { ns } from './feed.js';
import type { Workers } from './workers.js';
import type { FaultWindow, HistoryRecord } from '../lib/history/schema.js';
import { ValidationError } from '../lib/schemas/validation.js';
import { LeaseStore } from '../lib/stores/lease-store.js';

/** The Region set: exactly three Regions, three replicas or two and a witness. */
export interface RegionSetOptions {
  readonly replicas: readonly string[];
  readonly witness?: string | undefined;
  /** One-way latency between two Regions, drawn per request in [min, max] ms. */
  readonly crossRegionMs: readonly [number, number];
  /** How long a Region that rejoins answers errors before it has caught up. */
  readonly catchUpMs: number;
  /** The key attributes of a table, to tell which item a request changes. */
  readonly keysOf: (table: string) => readonly string[];
}

/** What a Region's endpoint does now. */
export type RegionStatus = 'serving' | 'no-quorum' | 'catching-up' | 'lost';

/** The clock and the random numbers the layer waits and draws on (the world's). */
export interface RegionClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem']);
const READS = new Set(['GetItem', 'Query', 'Scan', 'BatchGetItem']);
const STREAMS = new Set(['GetRecords', 'GetShardIterator', 'DescribeStream', 'ListStreams']);

const hang = () => new Promise<never>(() => undefined);

export class RegionSet {
  readonly members: readonly string[];
  private readonly cut = new Set<string>();
  private readonly lost = new Set<string>();
  private readonly caughtUpAt = new Map<string, number>();
  /** Item → the Region whose write is changing it, until when. */
  private readonly changing = new Map<string, { region: string; until: number }>();

  constructor(
    private readonly clock: RegionClock,
    private readonly random: () => number,
    private readonly o: RegionSetOptions,
  ) {
    const members = [...o.replicas, ...(o.witness !== undefined ? [o.witness] : [])];
    if (members.length !== 3 || new Set(members).size !== 3)
      throw new RangeError(`an MRSC Region set is exactly three distinct Regions (three replicas, or two and a witness); got ${JSON.stringify(members)}`);
    if (o.witness !== undefined && o.replicas.length !== 2) throw new RangeError('a witness goes with exactly two replicas');
    this.members = members;
  }

  /** Whether `region` holds a replica (the witness serves nothing). */
  isReplica(region: string): boolean {
    return this.o.replicas.includes(region);
  }

  /** The Region loses its links to every other member until rejoin(). */
  cutOff(region: string): void {
    this.member(region);
    this.cut.add(region);
  }

  /** The links come back: the Region answers errors while it catches up, then serves. */
  rejoin(region: string): void {
    this.member(region);
    if (!this.cut.delete(region)) return;
    this.caughtUpAt.set(region, this.clock.now() + this.o.catchUpMs);
  }

  /** The Region is gone for good: it answers nothing, gives nobody a quorum. */
  lose(region: string): void {
    this.member(region);
    this.lost.add(region);
  }

  status(region: string): RegionStatus {
    if (this.lost.has(region)) return 'lost';
    if (!this.reaches(region)) return 'no-quorum';
    if ((this.caughtUpAt.get(region) ?? 0) > this.clock.now()) return 'catching-up';
    return 'serving';
  }

  /**
   * One attempt of one request sent to `region`'s endpoint, `apply` doing it on the model: waits,
   * refuses or applies as MRSC would. (The network between the process and its Region's endpoint
   * is the caller's.)
   */
  async serve(region: string, req: ModelRequest, apply: Apply): Promise<unknown> {
    const status = this.status(region);
    if (status === 'lost') return hang();
    if (req.operation === 'TransactWriteItems') throw validationError('Transactions are not supported on tables with multi-Region strong consistency');
    if (status === 'catching-up') throw faults.internalServerError();
    if (STREAMS.has(req.operation)) {
      // a cut-off Region's stream gets no records from elsewhere: its readers wait until it rejoins
      if (status !== 'serving') throw faults.internalServerError();
      return apply();
    }
    const strong = WRITES.has(req.operation) || (READS.has(req.operation) && (req.input as { ConsistentRead?: boolean }).ConsistentRead === true);
    if (!strong) return apply();
    if (status === 'no-quorum') throw faults.internalServerError();
    const rtt = 2 * this.nearest(region);
    if (!WRITES.has(req.operation)) {
      await this.clock.sleep(rtt);
      return apply();
    }
    const keys = this.itemsOf(req);
    const now = this.clock.now();
    for (const k of keys) {
      const c = this.changing.get(k);
      if (c && c.region !== region && c.until > now) {
        throw new ReplicatedWriteConflictException({ message: 'One or more items in this request are being modified by a request in another Region', $metadata: { httpStatusCode: 400 } });
      }
    }
    const mine = { region, until: now + rtt };
    for (const k of keys) this.changing.set(k, mine);
    try {
      await this.clock.sleep(rtt);
      // the quorum may have gone while the write was on its way: it is not applied
      if (this.status(region) !== 'serving') throw faults.internalServerError();
      return apply();
    } finally {
      for (const k of keys) if (this.changing.get(k) === mine) this.changing.delete(k);
    }
  }

  private member(region: string): void {
    if (!this.members.includes(region)) throw new RangeError(`"${region}" is not in the Region set ${JSON.stringify(this.members)}`);
  }

  /** Whether `region` has a link to a live member other than itself. */
  private reaches(region: string): boolean {
    if (this.cut.has(region) || this.lost.has(region)) return false;
    return this.members.some((m) => m !== region && !this.cut.has(m) && !this.lost.has(m));
  }

  /** One-way latency to the nearest live member, drawn. */
  private nearest(region: string): number {
    const [lo, hi] = this.o.crossRegionMs;
    let best = Infinity;
    for (const m of this.members) if (m !== region && !this.cut.has(m) && !this.lost.has(m)) best = Math.min(best, lo + this.random() * (hi - lo));
    return best;
  }

  /** The items a write changes, as `table/key`. */
  private itemsOf(req: ModelRequest): string[] {
    const input = req.input as { TableName?: string; Key?: Record<string, AttributeValue>; Item?: Record<string, AttributeValue>; RequestItems?: Record<string, { PutRequest?: { Item: Record<string, AttributeValue> }; DeleteRequest?: { Key: Record<string, AttributeValue> } }[]> };
    const key = (table: string, item: Record<string, AttributeValue> | undefined) => `${table}/${this.o.keysOf(table).map((k) => JSON.stringify(item?.[k] ?? null)).join('/')}`;
    if (input.RequestItems) return Object.entries(input.RequestItems).flatMap(([t, rs]) => rs.map((r) => key(t, r.PutRequest?.Item ?? r.DeleteRequest?.Key)));
    const table = input.TableName ?? '';
    return [key(table, input.Key ?? input.Item)];
  }
}

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
  /**
   * From the event to the old leader's own stop (a cut-off Region's leader: by its renew deadline);
   * undefined when it died with its Region, or was frozen (paused) between the event and its stop:
   * its stop is recorded when it thaws, long after `isLeader()` judged its deadline passed.
   */
  readonly leaderStoppedAfterMs: number | undefined;
  /** The old leader was frozen between the event and its stop (leaderStoppedAfterMs is then undefined). */
  readonly leaderFrozen?: true;
  /** From the event to the next term's start, whoever leads it (undefined: none before the world ended). */
  readonly newLeaderAfterMs: number | undefined;
  /** The Region the next leader ran in. */
  readonly newLeaderRegion: string | undefined;
  /**
   * A lost Region: from the loss until a surviving replica served strong reads and writes again (0:
   * at once; undefined: not before the world ended). Without quorum nobody can be elected, so the
   * elector's own share of the wait is newLeaderAfterMs less this.
   */
  readonly quorumBackAfterMs?: number | undefined;
  /**
   * A Region cut off, with a next leader: how long, between the cut and that leader, no replica
   * served (another Region lost meanwhile left the third without quorum). The elector's share of
   * the wait is newLeaderAfterMs less this.
   */
  readonly quorumlessMs?: number;
}

/** The Regions of one world: the set, and each request's way through its machine's Region to the model. */
export class WorldRegions {
  readonly set: RegionSet;
  /** The plan's events as they happened (simulated monotonic ms). */
  private readonly happened: { kind: RegionEvent['kind']; region: string; mono: number; quorumBack?: number; window?: FaultWindow }[] = [];
  /** Each span of simulated monotonic ms in which no replica served strong reads and writes (`to` undefined: to the world's end). */
  private readonly quorumless: QuorumlessSpan[] = [];
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
        const happened: (typeof this.happened)[number] = { kind: e.kind, region: e.region, mono: from };
        this.happened.push(happened);
        if (e.kind === 'cutOff') {
          feed.log(`region ${e.region} cut off from the other two`);
          feed.count('region:cutOff');
          this.set.cutOff(e.region);
          this.noteQuorum(from);
          clock.setTimer(e.forMs, () => {
            feed.log(`region ${e.region} rejoins; it answers errors while it catches up (${(this.plan.catchUpMs / 1000).toFixed(1)} s)`);
            this.set.rejoin(e.region);
            this.noteQuorum(clock.monotonic());
            clock.setTimer(this.plan.catchUpMs, () => {
              feed.log(`region ${e.region} caught up`);
              feed.window('regionCutOff', from, clock.monotonic());
              this.noteQuorum(clock.monotonic());
            });
          });
        } else {
          feed.log(`region ${e.region} lost: its processes and functions are gone`);
          feed.count('region:lost');
          this.set.lose(e.region);
          // every process there, a second process under a worker's identity (a twin) included
          for (const p of [...workers.procs, ...workers.twins]) if (regionOf(this.plan, p.machine.name) === e.region && !p.machine.clock.dead) killProc(c, p);
          fns.get(e.region)?.stop();
          world.brokerOf(e.region)?.lose(); // its IoT Core too
          // a loss never heals: its window is the moment, and tells the checker when the survivors served again (noteQuorum)
          happened.window = feed.window('regionLoss', from, from, { detail: e.region });
          this.noteQuorum(from);
        }
      });
    }
  }

  /** After a Region's status changed: opens or closes a quorumless span, and marks each Region loss still waiting for a surviving replica to serve, if one does now. */
  private noteQuorum(mono: number): void {
    const serving = this.plan.replicas.some((r) => this.set.status(r) === 'serving');
    const open = this.quorumless.at(-1)?.to === undefined ? this.quorumless.at(-1) : undefined;
    if (!serving && !open) this.quorumless.push({ from: mono, to: undefined });
    if (serving && open) open.to = mono;
    if (!serving) return;
    for (const h of this.happened) {
      if (h.kind !== 'lose' || h.quorumBack !== undefined) continue;
      h.quorumBack = mono;
      if (h.window) h.window.servingAgainAt = ns(mono);
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
    // a row an operator broke (the malformed-row fault) is told as such: the story's read must not end the world
    const line = (name: string) =>
      leases.read(name).then(
        ({ item: l }) => l && `region ${e.region}: ${l.name} held by ${where(l.holderIdentity)}, successor ${where(l.successor)}, second successor ${where(l.secondSuccessor)}`,
        (err: unknown) => `region ${e.region}: ${name} unreadable (${err instanceof ValidationError ? 'a malformed row' : String(err)})`,
      );
    void Promise.all(Array.from({ length: c.settings.leases }, (_, i) => line(`job-${i}`))).then((lines) => {
      for (const l of lines) if (l) c.feed.log(l);
    });
  }

  /**
   * For each event, each lease whose leader ran in the Region hit: when that leader stopped, and
   * when the next term started, where (from the history the checker judges): regionFigures.
   */
  figures(history: readonly HistoryRecord[], leases: readonly string[], faults: readonly FaultWindow[] = []): RegionFigure[] {
    return regionFigures(this.plan, this.happened, history, leases, faults, this.quorumless);
  }
}

/** A span of simulated monotonic ms in which no replica served strong reads and writes (`to` undefined: to the world's end). */
export interface QuorumlessSpan {
  readonly from: number;
  to: number | undefined;
}

/** A Region event as it happened (simulated monotonic ms), and when a surviving replica served again after a loss. */
export interface RegionEventSeen {
  readonly kind: RegionEvent['kind'];
  readonly region: string;
  readonly mono: number;
  readonly quorumBack?: number | undefined;
}

/**
 * For each event, each lease whose leader ran in the Region hit: when that leader stopped, and when
 * the next term started (whoever leads it), where, from the history the checker judges.
 */
export function regionFigures(plan: RegionPlan, happened: readonly RegionEventSeen[], history: readonly HistoryRecord[], leases: readonly string[], faults: readonly FaultWindow[] = [], quorumless: readonly QuorumlessSpan[] = []): RegionFigure[] {
  const out: RegionFigure[] = [];
  const ms = (r: HistoryRecord) => Number(BigInt(r.mono) / 1_000n) / 1_000;
  for (const e of happened) {
    // compared in the history's own nanoseconds: in milliseconds, a record made at the event's
    // very moment (a lost Region's processes killed) could round to before it, and a lease whose
    // leader died with its Region went uncounted
    const at = BigInt(ns(e.mono));
    for (const lease of leases) {
      // what the event itself did (a lost Region's processes killed) comes after it
      const before = history.filter((r) => r.lease === lease && BigInt(r.mono) < at);
      const last = before.filter((r) => r.event === 'started').at(-1);
      if (!last || before.some((r) => r.event === 'stopped' && r.instance === last.instance && r.fencingToken === last.fencingToken)) continue;
      if (regionOf(plan, last.identity) !== e.region) continue;
      const after = history.filter((r) => r.lease === lease && BigInt(r.mono) >= at);
      const stop = after.find((r) => r.event === 'stopped' && r.instance === last.instance && r.fencingToken === last.fencingToken);
      // the next term, whoever leads it: a cut-off Region's leader that leads again once its Region
      // rejoined ends the wait as well as a leader elsewhere does (seed 17052: skipping it ran on
      // to a later leader, 275.7 s reported over a 70.9 s gap)
      // (a term stopped is never led again: its holder leads once more only in a new term, a higher token)
      const next = after.find((r) => r.event === 'started' && !(r.instance === last.instance && r.fencingToken === last.fencingToken));
      // a leader paused (SIGSTOP) between the event and its stop records the stop when it thaws (seed 17132: 25.5 s)
      const frozen = stop !== undefined && faults.some((w) => w.kind === 'pause' && w.instances?.includes(last.instance) && BigInt(w.from) < BigInt(stop.mono) && BigInt(w.to) > at);
      out.push({
        kind: e.kind,
        region: e.region,
        lease,
        leaderStoppedAfterMs: stop && stop.reason !== 'killed' && !frozen ? ms(stop) - e.mono : undefined,
        ...(frozen ? { leaderFrozen: true as const } : {}),
        newLeaderAfterMs: next ? ms(next) - e.mono : undefined,
        newLeaderRegion: next ? regionOf(plan, next.identity) : undefined,
        ...(e.kind === 'lose' ? { quorumBackAfterMs: e.quorumBack === undefined ? undefined : e.quorumBack - e.mono } : {}),
        ...(e.kind === 'cutOff' && next ? { quorumlessMs: overlapMs(quorumless, e.mono, ms(next)) } : {}),
      });
    }
  }
  return out;
}

/** How much of [from, to) the spans cover. */
function overlapMs(spans: readonly QuorumlessSpan[], from: number, to: number): number {
  let sum = 0;
  for (const sp of spans) sum += Math.max(0, Math.min(to, sp.to ?? Infinity) - Math.max(from, sp.from));
  return sum;
}
