/**
 * The SDK on simulated time: real LeaderElectors, LeaseCandidates and heartbeats, the real
 * coordinator (reconcileLease, driven in-process as Lambda's streams and timer would), over the
 * in-memory DynamoDB model (lib/sim/dynamodb-model, held to DynamoDB Local by
 * test/sim/contract.test.ts), all on one seeded simulatedClock. Nothing waits for the machine:
 * a test runs simulated time until an outcome holds and reads durations off the simulated clock,
 * so they are exact, the same on every run of a seed, and as tight as the protocol allows.
 *
 * The world (the clock, the model, the machines and their clocks, the push broker) is the
 * simulator's (sim/machines.ts): each process ("machine") has its own DynamoDB client, so its own
 * server-clock samples, with a network of fixed latency in front of the model (below); its wall
 * clock can be off or stepped, its monotonic clock can lose time (a suspended machine), its
 * requests can fail, and it can crash. sim/world.ts wires the whole system on the same world for
 * `npm run sim`.
 */
import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Clock, SimulatedClock } from '../../lib/clock.js';
import { coordinatorDeps, reconcileLease, type CoordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { endedSessionTerm } from '../../lib/functions/core.js';
import { endTermPutBackOnItsSession, termMovedOntoSession } from '../../lib/functions/session-redirect.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { createTables } from '../../lib/local/tables.js';
import type { ElectionConfigInput, TableNames } from '../../lib/schemas/config.js';
import type { LeaderElectorOptions } from '../../lib/sdk/elector.js';
import { DynamoDBModel, type ModelRequest } from '../../lib/sim/dynamodb-model/index.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { defaultTableNames } from '../../lib/tables.js';
import type { TestTables } from '../support.js';
import { SimWorld, type Machine as WorldMachine } from '../../sim/machines.js';
import type { SimBroker, SimPush } from '../../sim/push.js';
import { Log, startElector, type RunningElector } from './harness.js';

/** Simulated epoch ms every simulation starts at (a whole second: Date headers truncate to seconds). */
export const T0 = Date.UTC(2027, 0, 1);
/** One way of a request's round trip to the model, simulated ms. */
export const LATENCY_MS = 2;

/** A machine's view of the simulated time (sim/machines.ts, the simulator's too). */
export { MachineClock } from '../../sim/machines.js';

/** A request as the network saw it: sent at simulated monotonic `at`. */
export interface SentRequest extends ModelRequest {
  readonly at: number;
  /** DynamoDB applied it and answered without an error (so far: set when it lands). */
  ok: boolean;
}

/** A write to a lease row that DynamoDB (the model) applied: when, in true simulated ms, and the row after it. */
export interface LeaseWrite {
  readonly at: number;
  /** The machine that sent it (`coordinator`, `machine-1`, …). */
  readonly by: string;
  readonly name: string;
  readonly item: Record<string, unknown> | undefined;
}

/**
 * One worker process (sim/machines.ts' Machine: its clock, its own DynamoDB client, and a crash
 * after which nothing it sends arrives or comes back and none of its timers fire), with the
 * network's fault to inject and what it sent.
 */
export interface Machine extends WorldMachine {
  /** An error to answer this request with instead of the model's (a fault the network or DynamoDB gives); undefined lets it through. */
  fault: ((req: ModelRequest) => Error | undefined) | undefined;
  /** Every request it sent (each attempt), in order. */
  readonly sent: SentRequest[];
}

/** A started elector on the simulation; stop() runs simulated time until it has stepped down and released. */
export interface SimElector extends RunningElector {
  readonly machine: Machine;
}

/**
 * Fresh tables on a DynamoDB model of their own, as test/support.ts' testTables makes them on
 * DynamoDB Local: for tests that call the SDK directly, on a clock they step by hand. The client
 * answers at once (no latency, no Date headers to sample).
 */
export async function modelTables(now: () => number = () => T0): Promise<TestTables> {
  const client = new DynamoDBModel({ now }).client({ name: 'test' });
  const names = defaultTableNames('model');
  await createTables(client, names);
  return { client, names, drop: async () => undefined };
}

/** Thrown from the clock's settle step to end a run the moment an outcome holds (never escapes `Sim`). */
class Reached extends Error {}

export interface SimOptions {
  /**
   * Seeds the clock's random source (the electors' jitter). @default the SIM_SEED environment
   * variable, else 1: `SIM_SEED=7 npx vitest run test/sdk` runs every SDK test on another schedule
   * (the bounds they assert are the protocol's, so they hold on any).
   */
  readonly seed?: number;
  /** The coordinator's configuration (short elections suit tests). */
  readonly config?: ElectionConfigInput;
}

export class Sim {
  /** The clock, model, machines and broker (sim/machines.ts: the simulator's world too). */
  readonly world: SimWorld;
  readonly clock: SimulatedClock;
  readonly model: DynamoDBModel;
  readonly names: TableNames;
  /** An operator's client: no latency, no faults, and it reads nobody's Date headers. */
  readonly client: DynamoDBClient;
  /** The coordinator's stores, on simulated time (its own client, with latency): for the coordinator only. */
  readonly deps: CoordinatorDeps;
  /** An operator's view of the lease and candidate rows, read at once (no latency): what tests look at. */
  readonly leases: LeaseStore;
  readonly candidates: CandidateStore;
  /** Every elector's callbacks, stamped with simulated monotonic ms. */
  readonly log: Log;
  /** Every write to a lease row that was applied, in order: the lease's history in true time. */
  readonly leaseWrites: LeaseWrite[] = [];
  private stopWhen: (() => boolean | Promise<boolean>) | undefined;
  private machines = 0;
  /** How long after a lease write its wake reaches the push broker (once pushBroker() made one). */
  private brokerDelayMs = 0;
  /** The lease stream's hop: a lease change reaches its function (marks, wakes) this long after it landed. */
  streamDelayMs = 50;
  /** Whether the lease stream's function marks ended session-held terms (off: how the product was before issue 27). */
  markEndedTerms = true;
  /** Whether the lease stream's function's wakes are lost (the channel stays live: a half-open connection, QoS 0). */
  loseStreamWakes = false;
  /** Machines every wake to which is lost, their channel still live (a half-open MQTT connection). */
  readonly deafToWakes = new Set<Machine>();
  /** Errors of the lease stream's function's marks. */
  readonly streamErrors: Error[] = [];
  /** Each lease row as last written (what a write is compared with to tell a renewal). */
  private readonly lastItems = new Map<string, Record<string, unknown> | undefined>();
  /** Wakes published (by the stand-in for the lease stream's function, and by workers). */
  readonly pushCounts: Record<string, number> = {};

  private constructor(opts: SimOptions) {
    this.world = new SimWorld({
      start: T0,
      seed: opts.seed ?? Number(process.env['SIM_SEED'] ?? 1),
      // One turn of the event loop lets every promise chain a timer started run (the clock's
      // default); then, if a run is waiting for an outcome, it ends the moment that holds.
      settle: async () => {
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (this.stopWhen && (await this.stopWhen())) throw new Reached();
      },
    });
    ({ clock: this.clock, model: this.model, names: this.names } = this.world);
    // DynamoDB's clock is the true (simulated) time, in whole ms as Date.now()
    const trueNow = () => Math.floor(this.clock.now());
    this.client = this.model.client({ name: 'operator' });
    this.leases = new LeaseStore(this.client, this.names.leases);
    this.candidates = new CandidateStore(this.client, this.names.candidates);
    const coordinatorClock: Clock = { ...this.clock, now: trueNow };
    this.deps = coordinatorDeps(this.network('coordinator').client, this.names, { clock: coordinatorClock, ...(opts.config ? { config: opts.config } : {}) });
    this.log = new Log(this.clock);
  }

  /** A simulation with the tables made. */
  static async create(opts: SimOptions = {}): Promise<Sim> {
    const sim = new Sim(opts);
    await createTables(sim.client, sim.names);
    return sim;
  }

  /** The tables as test/support.ts' TestTables (the operator's client): what harness.ts' helpers take. */
  get tables(): TestTables {
    return { client: this.client, names: this.names, drop: async () => undefined };
  }

  /** Simulated ms since the simulation began. */
  get elapsed(): number {
    return this.clock.monotonic() - T0;
  }

  /** A machine named `name` on the world, its requests through the network below. */
  private network(name: string): Machine {
    return this.world.machine<Pick<Machine, 'fault' | 'sent'>>(name, (m, req, apply) => this.exchange(m, req, apply), { fault: undefined, sent: [] });
  }

  /** The network: LATENCY_MS each way, the machine's fault instead of the model's answer; a dead machine is never answered, a paused one reads its answer when it runs again. */
  private async exchange(m: Machine, req: ModelRequest, apply: () => unknown): Promise<unknown> {
    const hang = () => new Promise<never>(() => undefined);
    if (m.clock.dead) return hang();
    const record: SentRequest = { ...req, at: this.clock.monotonic(), ok: false };
    m.sent.push(record);
    await this.clock.sleep(LATENCY_MS);
    const fault = m.fault?.(req);
    if (fault) throw fault;
    if (m.clock.dead) return hang();
    const out = apply();
    record.ok = true;
    this.recordLeaseWrite(m.name, req);
    await this.clock.sleep(LATENCY_MS);
    await m.clock.running(); // a frozen process reads the answer when it wakes; a dead one never
    return out;
  }

  private recordLeaseWrite(by: string, req: ModelRequest): void {
    const input = req.input as { TableName?: string; Key?: Record<string, AttributeValue>; Item?: Record<string, AttributeValue> };
    if (input.TableName !== this.names.leases || !['PutItem', 'UpdateItem', 'DeleteItem'].includes(req.operation)) return;
    const name = (input.Key ?? input.Item)?.['name']?.S;
    if (name === undefined) return;
    const raw = this.model.items(this.names.leases).find((i) => i['name']?.S === name);
    const item = raw && unmarshall(raw);
    this.leaseWrites.push({ at: this.clock.now(), by, name, item });
    const before = this.lastItems.get(name);
    this.lastItems.set(name, item);
    // the lease stream's function, on the records its filter lets through (lib/wiring.ts: not one
    // whose renewal mark flipped): it marks a session-held term someone else ended, or moved off its
    // session, on that session (lib/functions/core.ts endedSessionTerm), ends a term put back on a
    // session that carries that mark (lib/functions/session-redirect.ts), then wakes (every change but a renewal)
    const change = { old: before as Lease | undefined, new: item as Lease | undefined };
    const ended = endedSessionTerm(change);
    const filtered = before?.['renewalMark'] !== item?.['renewalMark'] && [1, 2].includes(item?.['renewalMark'] as number);
    // only where there is something to do: a test that ends with no timer pending is not kept waiting by a no-op
    if (this.markEndedTerms && !filtered && (ended || termMovedOntoSession(change))) {
      this.clock.setTimer(this.streamDelayMs, () => {
        const marked = ended ? this.deps.identities.markTermEnded(ended.session, ended.lease, ended.fencingToken) : Promise.resolve(false);
        void marked.then(() => endTermPutBackOnItsSession(this.deps, change)).catch((e: unknown) => this.streamErrors.push(e as Error));
      });
    }
    const broker = this.world.broker;
    if (broker && !this.loseStreamWakes && !isRenewal(before, item)) this.clock.setTimer(this.brokerDelayMs, () => broker.publish({ lease: name, by: 'stream', ...(typeof item?.['revision'] === 'number' ? { revision: item['revision'] } : {}) }));
  }

  /**
   * The push path (sim/push.ts' broker): from now on every lease write but a plain renewal reaches
   * the connected machines as a wake `delayMs` after it landed (the lease stream's hop) plus the
   * broker's `deliveryMs`; `down()` takes the broker down, `up()` brings it back.
   */
  pushBroker(opts: { delayMs?: number; deliveryMs?: number } = {}): { broker: SimBroker; down(): void; up(): void } {
    const outages: { from: number; to: number }[] = [];
    const d = opts.deliveryMs ?? 5;
    const broker = this.world.startBroker({ delayMs: [d, d], loss: 0, duplicate: 0, outages }, () => 0.5, (k) => void (this.pushCounts[k] = (this.pushCounts[k] ?? 0) + 1));
    this.brokerDelayMs = opts.delayMs ?? 50;
    return { broker, down: () => broker.setDown(true), up: () => broker.setDown(false) };
  }

  /** A machine's connection to the push broker (pushBroker() first). */
  pushFor(machine: Machine): SimPush {
    if (!this.world.broker) throw new Error('call pushBroker() first');
    const deaf = this.deafToWakes;
    return this.world.connect(machine, () => deaf.has(machine));
  }

  /**
   * True time `holder`'s term on `lease` was last renewed (or taken) before `before`: what the term
   * runs from for anyone watching (a change of holder, instance, renewTime, token or duration).
   */
  lastRenewal(lease: string, holder: string, before = Infinity): number {
    const key = (i: Record<string, unknown> | undefined) => (i ? ['holderIdentity', 'holderInstance', 'renewTime', 'fencingToken', 'leaseDurationSeconds'].map((k) => String(i[k])).join('|') : '');
    let at: number | undefined;
    let previous = '';
    for (const w of this.leaseWrites.filter((x) => x.name === lease && x.at < before)) {
      const k = key(w.item);
      if (w.item?.['holderIdentity'] === holder && k !== previous) at = w.at;
      previous = k;
    }
    if (at === undefined) throw new Error(`${holder} never held ${lease}`);
    return at;
  }

  /** True time `holder` was first written as the holder of `lease` after `after`. */
  tookOver(lease: string, holder: string, after = -Infinity): number {
    const w = this.leaseWrites.find((x) => x.name === lease && x.at > after && x.item?.['holderIdentity'] === holder);
    if (!w) throw new Error(`${holder} never took ${lease}`);
    return w.at;
  }

  /** A new worker process (machine) with its own clock view and client. */
  machine(opts: { offsetMs?: number } = {}): Machine {
    const m = this.network(`machine-${++this.machines}`);
    m.clock.offsetMs = opts.offsetMs ?? 0;
    return m;
  }

  /**
   * Starts a LeaderElector (harness.ts' startElector: FAST timings, callbacks to the log) on its own
   * machine unless one is given; `platform: 'none'` (nothing to detect in a simulation).
   */
  elector(
    identity: string,
    opts: Partial<LeaderElectorOptions> & { leaseName: string },
    extra: { machine?: Machine; versions?: [string, string]; priority?: number; errors?: Error[] } = {},
  ): SimElector {
    const machine = extra.machine ?? this.machine();
    const e = startElector(this.tables, this.log, identity, { platform: 'none', clock: machine.clock, ...opts }, { ...extra, client: machine.client });
    return {
      ...e,
      machine,
      stop: () => (machine.clock.dead ? Promise.resolve() : this.settle(e.stop(), `${identity} to stop`)),
    };
  }

  /**
   * The coordinator, in-process on simulated time: reconciles each lease every `everyMs`
   * (standing in for the streams and the election timer, as test/sdk/harness.ts' coordinatorLoop).
   */
  coordinator(leases: string | string[], everyMs = 100): { errors: Error[]; stop(): void } {
    const names = typeof leases === 'string' ? [leases] : leases;
    const errors: Error[] = [];
    const stop = new AbortController();
    void (async () => {
      while (!stop.signal.aborted) {
        for (const name of names) {
          try {
            await reconcileLease(this.deps, name);
          } catch (e) {
            errors.push(e as Error);
          }
        }
        await this.clock.sleep(everyMs, stop.signal);
      }
    })();
    return { errors, stop: () => stop.abort() };
  }

  /**
   * Runs simulated time until `outcome` holds (checked after every timer and the promise chains it
   * started), at most `withinMs`; returns the simulated ms it took. Throws if it never held.
   */
  async until<T>(what: string, outcome: () => T | undefined | false | Promise<T | undefined | false>, withinMs = 60_000): Promise<T> {
    const from = this.clock.monotonic();
    let value: T | undefined | false;
    const reached = await this.runWhile(withinMs, async () => {
      value = await outcome();
      return Boolean(value);
    });
    if (!reached) throw new Error(`not within ${withinMs} simulated ms (${this.clock.monotonic() - from} ms run): ${what}`);
    return value as T;
  }

  /** Runs `ms` of simulated time, checking `invariant` after every step; throws at the first step it fails. */
  async during(ms: number, what: string, invariant: () => boolean | Promise<boolean>): Promise<void> {
    const broke = await this.runWhile(ms, async () => !(await invariant()));
    if (broke) throw new Error(`${what}: broken ${this.clock.monotonic() - T0} ms into the simulation`);
  }

  /** Runs `ms` of simulated time. */
  run(ms: number): Promise<void> {
    return this.clock.run(ms);
  }

  /** Runs simulated time until `p` settles (at most `withinMs`); its value or its rejection. */
  async settle<T>(p: Promise<T>, what = 'a promise to settle', withinMs = 60_000): Promise<T> {
    let done = false;
    const watched = p.finally(() => (done = true));
    watched.catch(() => undefined); // rejections are the caller's, below
    await this.until(what, () => done, withinMs);
    return watched;
  }

  /** Whether `stop` held before `ms` ran out; time stops at the step where it did. */
  private async runWhile(ms: number, stop: () => Promise<boolean>): Promise<boolean> {
    if (this.stopWhen) throw new Error('one run at a time: await the run before starting another');
    this.stopWhen = stop;
    try {
      await this.clock.run(ms);
      return false;
    } catch (e) {
      if (e instanceof Reached) return true;
      throw e;
    } finally {
      this.stopWhen = undefined;
    }
  }
}

/** A write that only renews (what the lease stream's filter drops): renewTime, the renewal mark and the revision changed, nothing else. */
function isRenewal(before: Record<string, unknown> | undefined, after: Record<string, unknown> | undefined): boolean {
  if (!before || !after) return false;
  const rest = (i: Record<string, unknown>) => JSON.stringify(Object.entries(i).filter(([k]) => !['renewTime', 'renewalMark', 'revision'].includes(k)).sort(([a], [b]) => a.localeCompare(b)));
  return before['renewTime'] !== after['renewTime'] && rest(before) === rest(after);
}
