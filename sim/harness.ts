/**
 * The SDK's tests on simulated time: real LeaderElectors, LeaseCandidates and Sessions, and the
 * real functions — the stream, timer and tick handlers Lambda runs, wired from lib/wiring.ts
 * (sim/functions.ts, as in every world of `npm run sim`) — over the in-memory DynamoDB model
 * (sim/dynamodb-model, held to DynamoDB Local by test/sim/contract.test.ts), all on one seeded
 * simulated clock. Nothing waits for the machine: a test runs simulated time until an outcome
 * holds and reads durations off the simulated clock, so they are exact, the same on every run of a
 * seed, and as tight as the protocol allows.
 *
 * The world (the clock, the model, the machines and their clocks, the push broker) is the
 * simulator's (sim/machines.ts): each process ("machine") has its own DynamoDB client, so its own
 * server-clock samples, with a network of fixed latency in front of the model (below); its wall
 * clock can be off or stepped, its monotonic clock can lose time (a suspended machine), its
 * requests can fail, and it can crash. The functions read the tables' streams, so they see every
 * write: a machine's, and an operator's (`client`, outside every machine's network) alike.
 */
import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { seededRandom, type Clock, type SimulatedClock } from '../lib/clock.js';
import { coordinatorDeps, type CoordinatorDeps } from '../lib/coordinator/reconcile.js';
import { createTables } from '../lib/local/tables.js';
import type { ElectionConfigInput, TableNames } from '../lib/schemas/config.js';
import { ValidationError } from '../lib/schemas/validation.js';
import { electorWith, type AnyLeaderElectorOptions, type ElectorInternals, type LeaderElector, type StopReason } from '../lib/sdk/elector.js';
import { noteOnTheWay } from '../lib/sdk/faults.js';
import { CandidateStore } from '../lib/stores/candidate-store.js';
import type { IdentityStore } from '../lib/stores/identity-store.js';
import { LeaseStore } from '../lib/stores/lease-store.js';
import { defaultTableNames } from '../lib/tables.js';
import { DynamoDBModel, faults as ddbFaults, type DynamoDBModelOptions, type ModelRequest } from './dynamodb-model/index.js';
import { handlerModulesLoaded, runFunctions } from './functions.js';
import { SimWorld, type Machine as WorldMachine } from './machines.js';
import type { SimBroker, SimPush } from './push.js';

/** Tables to run on: a client and the tables' names (test/support.ts' testTables on DynamoDB Local, modelTables here). */
export interface Tables {
  client: DynamoDBClient;
  names: TableNames;
  drop(): Promise<void>;
}

/** Simulated epoch ms every simulation starts at (a whole second: Date headers truncate to seconds). */
export const T0 = Date.UTC(2027, 0, 1);
/** One way of a request's round trip to the model, simulated ms. */
export const LATENCY_MS = 2;

/** A machine's view of the simulated time (sim/machines.ts, the simulator's too). */
export { MachineClock } from './machines.js';

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
  /** Whether DynamoDB applies this request and its answer is lost on the way back (the client times out, not knowing it landed); undefined: none is. */
  loseAnswer: ((req: ModelRequest) => boolean) | undefined;
  /** Whether this request is swallowed: it never lands and no reply ever comes (a black-holed connection; only the caller's own bound ends its wait). */
  swallow: ((req: ModelRequest) => boolean) | undefined;
  /** How much longer this request's answer takes to come back, applied (a DynamoDB or a path that answers slowly); undefined: none. */
  slow: ((req: ModelRequest) => number) | undefined;
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
export async function modelTables(now: () => number = () => T0): Promise<Tables> {
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
  /** Eventually consistent reads answered from a copy up to `staleReadMaxLagMs` old, drawn by `random` (the model's options). @default none */
  readonly model?: Pick<DynamoDBModelOptions, 'staleReadMaxLagMs' | 'random'>;
}

/** The functions as coordinator() started them: stop() takes them down, as an outage would. */
export interface SimCoordinator {
  /** Every error the functions logged or threw (a reconcile that failed, a batch retried, a dead letter). */
  readonly errors: Error[];
  /** The functions go down (Lambda stops invoking them): streams wait, timers are held, no tick. */
  stop(): void;
}

/** How often the harness's stream pollers look at the shards: a record reaches its function within this and the stream's delay. */
const POLL_EVERY_MS = 10;

export class Sim {
  /** The clock, model, machines and broker (sim/machines.ts: the simulator's world too). */
  readonly world: SimWorld;
  readonly clock: SimulatedClock;
  readonly model: DynamoDBModel;
  readonly names: TableNames;
  /** An operator's client: no latency, no faults, and it reads nobody's Date headers. */
  readonly client: DynamoDBClient;
  /** The functions' stores, on simulated time (the coordinator machine's client, with latency). */
  readonly deps: CoordinatorDeps;
  /** An operator's view of the lease and candidate rows, read at once (no latency): what tests look at. */
  readonly leases: LeaseStore;
  readonly candidates: CandidateStore;
  /** Every elector's callbacks, stamped with simulated monotonic ms. */
  readonly log: Log;
  /** Every write to a lease row that a machine sent and DynamoDB applied, in order: the lease's history in true time (an operator's writes pass no network: they are not here, though the functions see them). */
  readonly leaseWrites: LeaseWrite[] = [];
  private stopWhen: (() => boolean | Promise<boolean>) | undefined;
  private machines = 0;
  /** The streams' hop: a record reaches its function (the lease stream's marks and wakes, the candidate stream's reconcile) this long after it landed, plus a poll. */
  streamDelayMs = 50;
  /** Whether the lease stream's function marks ended session-held terms (off: how the product was before issue 27). */
  markEndedTerms = true;
  /** Whether the lease stream's function's wakes are lost (the channel stays live: a half-open connection, QoS 0). */
  loseStreamWakes = false;
  /** Machines every wake to which is lost, their channel still live (a half-open MQTT connection). */
  readonly deafToWakes = new Set<Machine>();
  /** Errors of the lease stream's function (a batch it failed, a dead letter), once coordinator() started the functions. */
  readonly streamErrors: Error[] = [];
  /** What the functions did, counted (stream records, events, wakes, retried batches, dead letters …). */
  readonly functionCounts: Record<string, number> = {};
  /** Wakes published (by the lease stream's function, and by workers). */
  readonly pushCounts: Record<string, number> = {};
  /** The functions, once coordinator() started them, and whether they are down. */
  private functions: { down: boolean; errors: Error[] } | undefined;
  /** The machine the functions run on. */
  private readonly functionsMachine: Machine;
  private readonly seed: number;

  private constructor(opts: SimOptions) {
    this.seed = opts.seed ?? Number(process.env['SIM_SEED'] ?? 1);
    this.world = new SimWorld({
      start: T0,
      seed: this.seed,
      ...(opts.model ? { model: opts.model } : {}),
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
    this.functionsMachine = this.network('coordinator');
    this.deps = coordinatorDeps(this.functionsMachine.client, this.names, { clock: coordinatorClock, ...(opts.config ? { config: opts.config } : {}) });
    this.log = new Log(this.clock);
  }

  /** A simulation with the tables made. */
  static async create(opts: SimOptions = {}): Promise<Sim> {
    const sim = new Sim(opts);
    await createTables(sim.client, sim.names);
    // imported before simulated time runs, so that coordinator() starts the functions at once, on every run of a seed
    await handlerModulesLoaded();
    return sim;
  }

  /** The tables, on the operator's client: what startElector and test/support.ts' helpers take. */
  get tables(): Tables {
    return { client: this.client, names: this.names, drop: async () => undefined };
  }

  /** Simulated ms since the simulation began. */
  get elapsed(): number {
    return this.clock.monotonic() - T0;
  }

  /** A machine named `name` on the world, its requests through the network below. */
  private network(name: string): Machine {
    return this.world.machine<Pick<Machine, 'fault' | 'loseAnswer' | 'swallow' | 'slow' | 'sent'>>(name, (m, req, apply) => this.exchange(m, req, apply), { fault: undefined, loseAnswer: undefined, swallow: undefined, slow: undefined, sent: [] });
  }

  /** The network: LATENCY_MS each way, the machine's fault instead of the model's answer; a dead machine, or a swallowed request, is never answered; a paused one reads its answer when it runs again. */
  private async exchange(m: Machine, req: ModelRequest, apply: () => unknown): Promise<unknown> {
    const hang = () => new Promise<never>(() => undefined);
    if (m.clock.dead) return hang();
    const { abortSignal, ...sent } = req;
    const record: SentRequest = { ...sent, at: this.clock.monotonic(), ok: false };
    m.sent.push(record);
    // the network took it: a request abandoned from now on was sent on a connection made, noted as
    // the worker SDK notes a Node.js request it saw sent (lib/sdk/faults.ts noteOnTheWay)
    if (abortSignal && !abortSignal.aborted) {
      const abandoned = () => {
        const reason: unknown = abortSignal.reason;
        if (typeof reason === 'object' && reason !== null) noteOnTheWay(reason, { phase: 'sent' });
      };
      abortSignal.addEventListener('abort', abandoned, { once: true });
      try {
        return await this.carry(m, req, record, apply);
      } finally {
        abortSignal.removeEventListener('abort', abandoned);
      }
    }
    return this.carry(m, req, record, apply);
  }

  /** The exchange once the network took the request (exchange). */
  private async carry(m: Machine, req: ModelRequest, record: SentRequest, apply: () => unknown): Promise<unknown> {
    const hang = () => new Promise<never>(() => undefined);
    if (m.swallow?.(req)) return hang();
    await this.clock.sleep(LATENCY_MS);
    const fault = m.fault?.(req);
    if (fault) throw fault;
    if (m.clock.dead) return hang();
    const out = apply();
    record.ok = true;
    this.recordLeaseWrite(m.name, req);
    if (m.loseAnswer?.(req)) throw ddbFaults.timeout();
    await this.clock.sleep(LATENCY_MS + (m.slow?.(req) ?? 0));
    await m.clock.running(); // a frozen process reads the answer when it wakes; a dead one never
    return out;
  }

  /** A write to a lease row that a machine sent and DynamoDB applied: the row after it, as the lease's history in true time. */
  private recordLeaseWrite(by: string, req: ModelRequest): void {
    const input = req.input as { TableName?: string; Key?: Record<string, AttributeValue>; Item?: Record<string, AttributeValue> };
    if (input.TableName !== this.names.leases || !['PutItem', 'UpdateItem', 'DeleteItem'].includes(req.operation)) return;
    const name = (input.Key ?? input.Item)?.['name']?.S;
    if (name === undefined) return;
    const raw = this.model.items(this.names.leases).find((i) => i['name']?.S === name);
    this.leaseWrites.push({ at: this.clock.now(), by, name, item: raw && unmarshall(raw) });
  }

  /**
   * The push path (sim/push.ts' broker): from now on every lease write but a plain renewal reaches
   * the connected machines as the lease stream's wake, `delayMs` (the streams' hop, streamDelayMs;
   * set before coordinator()) and a poll after it landed, plus the broker's `deliveryMs`; `down()`
   * takes the broker down, `up()` brings it back.
   */
  pushBroker(opts: { delayMs?: number; deliveryMs?: number } = {}): { broker: SimBroker; down(): void; up(): void } {
    const outages: { from: number; to: number }[] = [];
    const d = opts.deliveryMs ?? 5;
    const broker = this.world.startBroker({ delayMs: [d, d], loss: 0, duplicate: 0, outages }, () => 0.5, (k) => void (this.pushCounts[k] = (this.pushCounts[k] ?? 0) + 1));
    this.streamDelayMs = opts.delayMs ?? this.streamDelayMs;
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
   * Starts a LeaderElector (startElector, below: FAST timings, callbacks to the log) on its own
   * machine unless one is given; `platform: 'none'` (nothing to detect in a simulation).
   */
  elector(
    identity: string,
    opts: Partial<AnyLeaderElectorOptions> & { leaseName: string },
    extra: { machine?: Machine; versions?: [string, string]; priority?: number; errors?: Error[]; internals?: ElectorInternals } = {},
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
   * The functions Lambda runs (sim/functions.ts, wired from lib/wiring.ts), on the machine
   * `coordinator`: the candidate and lease streams' functions on every record (streamDelayMs and a
   * poll after it landed), the election timer, and the tick every `tickEveryMs` (EventBridge's is a
   * minute; a short one stands in for a busy coordinator). Started once; after stop(), calling it
   * again brings the same functions back up, their streams where they left off.
   */
  coordinator(opts: { tickEveryMs?: number } = {}): SimCoordinator {
    if (this.functions) {
      this.functions.down = false;
      return this.coordinatorOf(this.functions);
    }
    const errors: Error[] = [];
    const f = { down: false, errors };
    this.functions = f;
    const count = (k: string, n = 1) => {
      this.functionCounts[k] = (this.functionCounts[k] ?? 0) + n;
      // a batch the function failed comes again; its error is one all the same
      if (/^(stream:\w+:(retried|threw)|deadLetters:|tick:threw|platform:threw)/.test(k)) {
        const e = new Error(`functions: ${k}`);
        errors.push(e);
        if (k.startsWith('stream:leaseStream:') || k === 'deadLetters:leaseStream') this.streamErrors.push(e);
      }
    };
    const deps = this.deps;
    // marks off: the lease stream's function writes none (how the product was before issue 27)
    const identities = Object.create(deps.identities) as IdentityStore;
    identities.markTermEnded = (session, lease, token, judge) => (this.markEndedTerms ? deps.identities.markTermEnded(session, lease, token, judge) : Promise.resolve(false));
    // started at once: the handler modules were imported by create()
    void runFunctions({
      world: this.world,
      client: this.functionsMachine.client,
      coordinator: { ...deps, identities },
      // the functions' own stream of numbers: their draws do not shift the electors'
      random: seededRandom(this.seed ^ 0x2545f491),
      feed: { count, log: () => undefined },
      plant: undefined,
      tickEveryMs: opts.tickEveryMs ?? 100,
      pollEveryMs: POLL_EVERY_MS,
      streamLagMs: [this.streamDelayMs, this.streamDelayMs],
      streamRedelivery: 0,
      platformEvents: { delayMs: [0, 0], duplicate: 0, late: 0 },
      eventIds: `sim-harness-${this.seed}`,
      ttl: true,
      // down until coordinator() again: what waits for the functions looks again a poll later
      outageEnd: () => (f.down ? this.clock.now() + POLL_EVERY_MS : undefined),
      slowWakeMs: () => undefined,
      onError: (message, extra) => errors.push(Object.assign(new Error(message), { extra })),
      // IoT Core: the lease stream's wakes reach the broker once pushBroker() made one, unless they are lost (the channel stays live: a half-open connection, QoS 0)
      broker: { publish: (wake) => void (this.loseStreamWakes || this.world.broker?.publish(wake)) },
    }).catch((e: unknown) => errors.push(e as Error));
    return this.coordinatorOf(f);
  }

  private coordinatorOf(f: { down: boolean; errors: Error[] }): SimCoordinator {
    return { errors: f.errors, stop: () => void (f.down = true) };
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

export interface LogEntry {
  /** The clock's monotonic ms (simulated time), or without a clock the entry's place in the log. */
  at: number;
  who: string;
  what: 'started' | 'stopped' | 'newLeader';
  token?: number;
  reason?: StopReason;
  leader?: string;
}

/** One ordered log of every elector's callbacks in this process. */
export class Log {
  readonly entries: LogEntry[] = [];
  /** `clock`: stamps entries with its monotonic time (a simulated clock's); none: with their order. */
  constructor(private readonly clock?: Pick<Clock, 'monotonic'>) {}
  add(e: Omit<LogEntry, 'at'>) {
    this.entries.push({ at: this.clock ? this.clock.monotonic() : this.entries.length, ...e });
  }
  of(what: LogEntry['what'], who?: string) {
    return this.entries.filter((e) => e.what === what && (who === undefined || e.who === who));
  }
  /** The largest number of workers leading at once, replaying started/stopped in order. */
  maxConcurrentLeaders(): number {
    const leading = new Set<string>();
    let max = 0;
    for (const e of this.entries) {
      if (e.what === 'started') leading.add(e.who);
      if (e.what === 'stopped') leading.delete(e.who);
      max = Math.max(max, leading.size);
    }
    return max;
  }
}

export const FAST = { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 250 } as const;

export interface RunningElector {
  elector: LeaderElector;
  controller: AbortController;
  done: Promise<void>;
  signals: AbortSignal[];
  stop(): Promise<void>;
}

/**
 * Starts an elector that logs its callbacks; `signals` collects every term's AbortSignal. A
 * coordinated one stands with `versions`; with `priority`, an operator pins its candidate row as
 * soon as it stands (a worker cannot write its own priority). A NoCoordination one has no candidacy.
 */
export function startElector(
  t: Pick<Tables, 'client' | 'names'>,
  log: Log,
  identity: string,
  opts: Partial<AnyLeaderElectorOptions> & { leaseName: string },
  extra: { client?: DynamoDBClient; versions?: [string, string]; priority?: number; errors?: Error[]; internals?: ElectorInternals } = {},
): RunningElector {
  const signals: AbortSignal[] = [];
  const [emulationVersion, binaryVersion] = extra.versions ?? ['1.30.0', '1.30.0'];
  const candidacy = { emulationVersion, binaryVersion };
  const elector = electorWith(extra.internals ?? {}, {
    identity,
    tables: t.names,
    ...FAST,
    ...(opts.mode === 'NoCoordination' ? {} : { candidacy }),
    client: extra.client ?? t.client,
    callbacks: {
      onStartedLeading: (signal, { fencingToken }) => {
        signals.push(signal);
        log.add({ who: identity, what: 'started', token: fencingToken });
      },
      onStoppedLeading: ({ reason, fencingToken }) => log.add({ who: identity, what: 'stopped', reason, token: fencingToken }),
      onNewLeader: (leader) => log.add({ who: identity, what: 'newLeader', leader }),
    },
    onError: (e) => extra.errors?.push(e),
    ...opts,
  });
  if (extra.priority !== undefined && opts.mode !== 'NoCoordination') {
    const priority = extra.priority;
    const operator = new CandidateStore(t.client, t.names.candidates);
    void elector.ready.then(async () => operator.write(await operator.read(opts.leaseName, identity), { set: { priority } })).catch((e: unknown) => extra.errors?.push(e as Error));
  }
  const controller = new AbortController();
  const done = elector.run(controller.signal);
  return {
    elector,
    controller,
    done,
    signals,
    async stop() {
      controller.abort();
      await done;
    },
  };
}
