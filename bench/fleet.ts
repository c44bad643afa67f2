/**
 * What the scenarios share: one DynamoDB Local, a local runtime per timing mode (created on first
 * use), and groups of worker processes standing for one lease — Conclave's lib/local/demo/worker.ts or
 * the baseline's bench/baseline/worker.ts — watched through their JSON lines. The bench reads
 * tables through its own client (`observer`), never through the runtime's, so its reads are not
 * counted as the coordinator's. Conclave's workers take the push path (issue 17): each connects to
 * its runtime's push broker (CONCLAVE_PUSH_URL = `runtime.pushEndpoint`), unless the run is
 * `--no-push` (then the runtimes start without a broker and the workers only poll). The baseline
 * never does: it is a client-go lock.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GetItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { reconcileLease, TooManyConflictsError } from '../lib/coordinator/reconcile.js';
import { pickBest } from '../lib/election/ordering.js';
import { DEMO_ELECTION, DEMO_TIMING } from '../lib/local/demo/stories.js';
import { localClient, startDynamoDBLocal, type DynamoDBLocal } from '../lib/local/dynamodb-local.js';
import { startEcsWorker } from '../lib/local/ecs-worker.js';
import { startLocalRuntime, type LocalRuntime } from '../lib/local/runtime.js';
import { deleteTables } from '../lib/local/tables.js';
import { WorkerProcess, type WorkerEvent, type WorkerSpec } from '../lib/local/worker-process.js';
import { electionConfig, type ElectionConfigInput } from '../lib/schemas/config.js';
import type { Lease } from '../lib/schemas/lease.js';
import { CandidateStore } from '../lib/stores/candidate-store.js';
import { ConflictError } from '../lib/stores/errors.js';
import { LeaseStore } from '../lib/stores/lease-store.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../lib/stores/client.js';
import { baselineTableName, createBaselineTable, deleteBaselineTable } from './baseline/table.js';
import type { Start } from './burst.js';
import { renewCycleMs } from './sweep.js';
import { lastRenewal, StreamReader, type LastRenewal } from './expiry.js';
import { checkHistory, formatVerdict } from '../lib/history/checker.js';
import { historyFromWorkerEvents } from '../lib/history/worker-events.js';

export type System = 'conclave' | 'baseline';

export interface Timing {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/** `default`: client-go's 15 s / 10 s / 2 s with the coordinator's defaults; `short`: the demo's terms. */
export const MODES = {
  default: { timing: { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }, election: {} as ElectionConfigInput },
  short: { timing: DEMO_TIMING as Timing, election: DEMO_ELECTION as ElectionConfigInput },
} as const;
export type Mode = keyof typeof MODES;

export const describeMode = (mode: Mode): string => {
  const t = MODES[mode].timing;
  const s = (ms: number) => `${ms / 1000} s`;
  return `lease ${s(t.leaseDurationMs)} / renew deadline ${s(t.renewDeadlineMs)} / retry ${s(t.retryPeriodMs)}`;
};

export const ackWindowMs = (mode: Mode): number => electionConfig(MODES[mode].election).ackWindowMs;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

export async function waitFor<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs: number, everyMs = 20): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${(timeoutMs / 1000).toFixed(0)} s waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Stops a runtime and deletes its tables, the baseline's included. */
export async function dropRuntime(observer: DynamoDBClient, rt: LocalRuntime): Promise<void> {
  await rt.stop();
  await deleteTables(observer, rt.tables);
  await deleteBaselineTable(observer, baselineTableName(rt.tables.leases.replace(/-leases$/, '')));
}

const BASELINE_WORKER = fileURLToPath(new URL('./baseline/worker.ts', import.meta.url));
/** lib/local/demo/worker.ts with its requests counted (COUNT_REQUESTS_EVERY_MS): the demo's worker itself knows nothing of bench/. */
const COUNTING_WORKER = fileURLToPath(new URL('./counting-worker.ts', import.meta.url));
/** lib/local/demo/worker.ts with the hand-off's path traced (TRACE_HANDOFF, bench/tracing-worker.ts). */
const TRACING_WORKER = fileURLToPath(new URL('./tracing-worker.ts', import.meta.url));

/** One benchmark run's shared infrastructure. */
export class BenchContext {
  readonly observer: DynamoDBClient;
  /** Reads the tables' streams (a crashed term's last renewal), on the observer's own clients. */
  readonly streams: StreamReader;
  private readonly runtimes = new Map<string, Promise<LocalRuntime>>();
  /** When the platform function finished handling a task's STOPPED event, by task ARN (the term it ended is over by then). */
  readonly platformHandled = new Map<string, number>();
  /** Every group's history, checked as it closes (lib/history/checker.ts): terms seen and violations, by system. */
  readonly checked: Record<System, { groups: number; terms: number; violations: number }> = { conclave: { groups: 0, terms: 0, violations: 0 }, baseline: { groups: 0, terms: 0, violations: 0 } };
  readonly dir = mkdtempSync(join(tmpdir(), 'conclave-bench-'));
  private counter = 0;

  /**
   * `push`: every runtime has a push broker and Conclave's workers connect to it (false: `--no-push`);
   * `pushBroker`: where it runs (the runtime's process by default; `--broker-process`: one of its own).
   */
  private constructor(
    readonly endpoint: string,
    private readonly ddb: DynamoDBLocal,
    readonly log: (line: string) => void,
    readonly push: boolean,
    readonly pushBroker: 'in-process' | 'own-process' = 'in-process',
  ) {
    this.observer = localClient(endpoint);
    this.streams = new StreamReader(this.observer, new DynamoDBStreamsClient({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS }));
  }

  static async start(log: (line: string) => void, opts: { push: boolean; pushBroker?: 'in-process' | 'own-process' } = { push: true }): Promise<BenchContext> {
    const ddb = await startDynamoDBLocal({ quickStart: false });
    return new BenchContext(ddb.endpoint, ddb, log, opts.push, opts.pushBroker);
  }

  /** A name unique within this run, e.g. `crash-default-3`. */
  unique(stem: string): string {
    return `${stem}-${++this.counter}`;
  }

  /**
   * The local runtime for a timing mode, started on first use within a scenario: Conclave's tables
   * `bench-<mode>-<n>-*` and the baseline's table beside them. With `succession: false` the
   * coordinator designates no successors, so every vacancy goes through an election (as in
   * Kubernetes): the election-latency scenario times that path.
   */
  runtime(mode: Mode, variant: { succession?: boolean } = {}): Promise<LocalRuntime> {
    const succession = variant.succession ?? true;
    const key = `${mode}${succession ? '' : ':no-succession'}`;
    let rt = this.runtimes.get(key);
    if (!rt) {
      rt = (async () => {
        const r = await startLocalRuntime({
          endpoint: this.endpoint,
          prefix: this.unique(`bench-${mode}`),
          dir: join(this.dir, key.replace(':', '-')),
          config: { ...MODES[mode].election, ...(succession ? {} : { succession: false }) },
          logLevel: 'SILENT',
          push: this.push,
          pushBroker: this.pushBroker,
          // Passes every trigger through unchanged; notes when the platform function has handled a task's STOPPED event.
          intercept: async (name, event, invoke) => {
            const out = await invoke(event);
            const task = name === 'platform' ? (event as { detail?: { taskArn?: unknown } }).detail?.taskArn : undefined;
            if (typeof task === 'string' && !this.platformHandled.has(task)) this.platformHandled.set(task, Date.now());
            return out;
          },
        });
        await createBaselineTable(this.observer, baselineTableName(r.tables.leases.replace(/-leases$/, '')));
        return r;
      })();
      this.runtimes.set(key, rt);
    }
    return rt;
  }

  /**
   * Stops the scenario's runtimes and drops their tables. DynamoDB Local keeps every stream record
   * of a table (24 h) and slows down under a growing backlog and idle stream polling, so no
   * scenario inherits another's.
   */
  async endScenario(): Promise<void> {
    const all = [...this.runtimes.values()];
    this.runtimes.clear();
    for (const p of all) await dropRuntime(this.observer, await p);
  }

  async stop(): Promise<void> {
    await this.endScenario();
    this.streams.destroy();
    this.observer.destroy();
    await this.ddb.stop();
  }
}

export interface Versions {
  emulationVersion: string;
  binaryVersion: string;
}
const V130: Versions = { emulationVersion: '1.30.0', binaryVersion: '1.30.0' };

/** How the term a worker started leading began, as the lease and the events record it. Conclave only. */
export interface TermRecord {
  /** `coordinator` (elected), `successor` (the designated successor took the vacant lease), `self` (the fallback race). */
  electedBy: string | undefined;
  /** When the lease was written naming the new holder (the writer's clock: this machine's). */
  acquireTime: number | undefined;
  /** Coordinator only: when it opened the election (the moment it saw the vacancy) and why the lease was vacant. */
  election?: { startedAt: number; vacancy: string | undefined };
}

export interface GroupOptions {
  /**
   * Extra environment for the worker processes. COUNT_REQUESTS_EVERY_MS: each worker prints its
   * request counts (Conclave's run as bench/counting-worker.ts, the baseline's count themselves).
   * TRACE_HANDOFF: Conclave's workers print their hand-off's steps (bench/tracing-worker.ts).
   */
  env?: Record<string, string>;
  /** Conclave only: a runtime whose coordinator designates no successors (every vacancy is an election). @default true */
  succession?: boolean;
  /**
   * Conclave only: each worker runs as a local ECS task (its own task metadata endpoint, so the
   * SDK records the task on its candidate row and on the lease it holds), and its exit is reported
   * to the platform function as ECS's "Task State Change" STOPPED event, `delayMs` later.
   */
  platformSignal?: { delayMs: number };
}

/** Worker processes of one system standing for one lease. */
export class Group {
  readonly workers: WorkerProcess[] = [];
  /** Table prefix of the runtime: Conclave's tables and the baseline's `<prefix>-baseline-locks`. */
  readonly prefix: string;
  /** The ECS task ARN of each worker started as a task. */
  private readonly tasks = new Map<WorkerProcess, string>();
  private readonly leases: LeaseStore | undefined;
  private readonly candidates: CandidateStore | undefined;

  constructor(
    readonly ctx: BenchContext,
    readonly system: System,
    readonly mode: Mode,
    readonly lease: string,
    readonly rt: LocalRuntime,
    private readonly opts: GroupOptions = {},
  ) {
    this.prefix = rt.tables.leases.replace(/-leases$/, '');
    if (system === 'conclave') {
      this.leases = new LeaseStore(ctx.observer, rt.tables.leases);
      this.candidates = new CandidateStore(ctx.observer, rt.tables.candidates);
    }
  }

  static async create(ctx: BenchContext, system: System, mode: Mode, stem: string, opts: GroupOptions = {}): Promise<Group> {
    return new Group(ctx, system, mode, ctx.unique(`${stem}-${system}`), await ctx.runtime(mode, { succession: opts.succession ?? true }), opts);
  }

  get timing(): Timing {
    return MODES[this.mode].timing;
  }

  /** The push broker Conclave's workers connect to (CONCLAVE_PUSH_URL): the runtime's, unless `--no-push`; none for the baseline. */
  get pushUrl(): string | undefined {
    return this.system === 'conclave' && this.ctx.push ? this.rt.pushEndpoint : undefined;
  }

  async add(identity: string, versions: Versions = V130): Promise<WorkerProcess> {
    const script = this.system === 'baseline' ? BASELINE_WORKER : this.opts.env?.['COUNT_REQUESTS_EVERY_MS'] ? COUNTING_WORKER : this.opts.env?.['TRACE_HANDOFF'] ? TRACING_WORKER : undefined;
    const spec: WorkerSpec = { identity, lease: this.lease, ...versions, timing: this.timing, ...(script ? { script } : {}) };
    const signal = this.system === 'conclave' ? this.opts.platformSignal : undefined;
    let w: WorkerProcess;
    if (signal) {
      // connected to the runtime's push broker as a task given the stack output PushEndpoint would be (none with --no-push)
      const ecs = await startEcsWorker(this.rt, spec, { platformSignal: true, signalDelayMs: signal.delayMs, push: this.ctx.push });
      this.tasks.set(ecs, ecs.task.platform.id);
      w = ecs;
    } else {
      // Conclave's workers stamp renewals with this machine's clock, which is DynamoDB Local's: the
      // terms' ends the past-expiry figure is measured from are then exact. (With the default
      // clockSync 'server' the stamps estimate DynamoDB's clock from its 1-s Date headers, and run
      // about 100 ms behind here; nothing but the stamps differs.)
      const extra = { ...(this.system === 'conclave' ? { CLOCK_SYNC: 'none' } : {}), ...(this.opts.env ?? {}) };
      w = new WorkerProcess(spec, { endpoint: this.ctx.endpoint, tablePrefix: this.prefix, pushUrl: this.pushUrl, extra });
    }
    this.workers.push(w);
    return w;
  }

  /** Starts `n` workers w1…wn at the same versions. */
  async addMany(n: number, versions: Versions = V130): Promise<this> {
    for (let i = 1; i <= n; i++) await this.add(`w${i}`, versions);
    return this;
  }

  leading(): WorkerProcess[] {
    return this.workers.filter((w) => w.leading);
  }

  static lastStart(w: WorkerProcess): WorkerEvent | undefined {
    return w.events.filter((e) => e.event === 'started').at(-1);
  }

  /**
   * Until one worker leads, has led for a few retry periods (its followers have seen it), and —
   * for Conclave — the lease is quiet: no election, no preferredHolder, no candidate renewed within
   * the ack window (the steady state a failure meets in production, where candidates renew every
   * few minutes), and the coordinator has nothing left to write on it (one reconcile, as any
   * trigger would run, writes nothing: whatever it keeps on a healthy lease, such as a designated
   * successor, is in place), and — with the push path — every worker is connected to the broker.
   * Returns the leader.
   */
  async settle(timeoutMs = 120_000): Promise<WorkerProcess> {
    const quietFor = ackWindowMs(this.mode) + 500;
    return waitFor(
      `a settled leader on ${this.lease} (${this.system})`,
      async () => {
        const all = this.workers.filter((w) => w.alive);
        if (!all.every((w) => w.events.some((e) => e.event === 'ready'))) return undefined;
        const leaders = this.leading();
        if (leaders.length !== 1) return undefined;
        const leader = leaders[0]!;
        // Settled: Conclave's leader has renewed a few times, so its successor reads in step with its
        // renewals (a term younger than that is read every 250 ms: that is the burst start, below)
        const settledAfter = this.system === 'conclave' ? 3 * renewCycleMs('conclave', this.timing) + 1_000 : 2.5 * this.timing.retryPeriodMs;
        if (Date.now() - Group.lastStart(leader)!.at < settledAfter) return undefined;
        if (this.system === 'baseline') return leader;
        // With the push path, every worker's channel is up (the broker holds at least one connection each): wakes reach them all
        const broker = this.pushUrl === undefined ? undefined : this.rt.pushBroker;
        if (broker && broker.stats().connections < all.length) return undefined;
        const lease = (await this.leases!.read(this.lease)).item;
        if (lease?.holderIdentity !== leader.identity || lease.election || lease.preferredHolder) return undefined;
        const { candidates } = await this.candidates!.list(this.lease);
        const names = new Set(candidates.map((c) => c.name));
        if (!all.every((w) => names.has(w.identity))) return undefined;
        if (Math.max(...candidates.map((c) => c.renewTime)) > Date.now() - quietFor) return undefined;
        try {
          const outcome = await reconcileLease(this.rt.deps.coordinator, this.lease);
          if (outcome.after !== undefined) return undefined; // it just wrote something: look again
        } catch (e) {
          if (e instanceof TooManyConflictsError) return undefined; // the workers kept writing: not settled yet
          throw e;
        }
        return leader;
      },
      timeoutMs,
      100,
    );
  }

  /**
   * Conclave only: the follower the coordinator ranks first after `leader` — the one it would
   * elect if the leader left, i.e. its designated successor once it names one.
   */
  async nextInLine(leader: WorkerProcess): Promise<WorkerProcess> {
    const { candidates } = await this.candidates!.list(this.lease);
    const best = pickBest(candidates.filter((c) => c.name !== leader.identity), Date.now());
    const w = this.workers.find((x) => x.identity === best?.candidate.name && x.alive);
    if (!w) throw new Error(`no live candidate ranks after ${leader.identity} on ${this.lease}`);
    return w;
  }

  /** Conclave only: the lease row as it stands now (a consistent read by the observer). */
  async leaseRow(): Promise<Lease | undefined> {
    return (await this.leases!.read(this.lease)).item;
  }

  /** The renewTime on the lock as the holder last wrote it (the holder's clock when it sent the renewal). */
  async renewTime(): Promise<number | undefined> {
    if (this.system === 'conclave') return (await this.leases!.read(this.lease)).item?.renewTime;
    const r = await this.ctx.observer.send(new GetItemCommand({ TableName: baselineTableName(this.prefix), Key: { name: { S: this.lease } }, ConsistentRead: true }));
    return r.Item ? (unmarshall(r.Item)['renewTime'] as number) : undefined;
  }

  /**
   * Waits for the leader's next renewal, then SIGKILLs it `phaseMs` after that renewal was sent.
   * Returns when it was killed, the phase actually hit (the renewal is seen a few ms late), and
   * `seenLagMs`: when the observer saw that renewal on the row minus its renewTime stamp — a few
   * ms (a round trip and the 5 ms polling) if the stamp is this machine's clock at the send;
   * Conclave's SDK stamps DynamoDB's clock as it estimates it (clockSync 'server'), so this also
   * shows that estimate's error against the machine clock.
   */
  async killAtPhase(leader: WorkerProcess, phaseMs: number): Promise<{ killAt: number; phaseMs: number; seenLagMs: number }> {
    const before = await this.renewTime();
    const renewed = await waitFor(`a renewal by ${leader.identity}`, async () => {
      const t = await this.renewTime();
      return t !== undefined && t !== before ? { t, seenAt: Date.now() } : undefined;
    }, 3 * this.timing.retryPeriodMs + 5_000, 5);
    await sleep(renewed.t + phaseMs - Date.now());
    const killAt = Date.now();
    await leader.kill();
    return { killAt, phaseMs: killAt - renewed.t, seenLagMs: renewed.seenAt - renewed.t };
  }

  /**
   * The last renewal the table applied of the term `holder` began with `token` (its `started`
   * line's fencingToken: Conclave's fencing token, the baseline's leaseTransitions), from the
   * table's stream (bench/expiry.ts): exact, however the kill fell against the renewals.
   */
  async lastRenewal(holder: string, token: number): Promise<LastRenewal | undefined> {
    const table = this.system === 'conclave' ? this.rt.tables.leases : baselineTableName(this.prefix);
    const images = await this.ctx.streams.images(table, this.lease);
    return lastRenewal(images, { name: this.lease, holder, token, tokenField: this.system === 'conclave' ? 'fencingToken' : 'leaseTransitions' });
  }

  /** When the platform function had handled the STOPPED event of `w`'s task (undefined: not a task, or not yet). */
  platformHandledAt(w: WorkerProcess): number | undefined {
    const task = this.tasks.get(w);
    return task === undefined ? undefined : this.ctx.platformHandled.get(task);
  }

  /** When a candidate first registered (its row's createdAt, the worker's clock). Conclave only. */
  async joinedAt(name: string): Promise<number | undefined> {
    return (await this.candidates!.read(this.lease, name)).item?.createdAt;
  }

  /** The first `started` line at or after `after` from any worker but `except`. */
  async nextLeader(after: number, except: WorkerProcess | undefined, timeoutMs: number): Promise<{ worker: WorkerProcess; started: WorkerEvent }> {
    return waitFor(
      `a new leader on ${this.lease} (${this.system})`,
      () => {
        for (const w of this.workers) {
          if (w === except) continue;
          const started = w.events.find((e) => e.event === 'started' && e.at >= after);
          if (started) return { worker: w, started };
        }
        return undefined;
      },
      timeoutMs,
    );
  }

  /**
   * Conclave only: how the term with `fencingToken` began — who wrote it (`electedBy`) and when
   * (`acquireTime`); for an election, when the coordinator opened it (the election's startedAt, from
   * its Election Started event, found through the Leader Elected event's electionId) and why the
   * lease was vacant. Undefined when the lease has moved on to another term.
   */
  async termOf(fencingToken: number, timeoutMs = 5_000): Promise<TermRecord | undefined> {
    const lease = (await this.leases!.read(this.lease)).item;
    if (!lease || lease.fencingToken !== fencingToken) return undefined;
    const term: TermRecord = { electedBy: lease.electedBy, acquireTime: lease.acquireTime };
    if (lease.electedBy !== 'coordinator') return term;
    const detail = (e: { detail: unknown }) => e.detail as Record<string, unknown>;
    const elected = await waitFor('its Leader Elected event', () => this.rt.events.find((e) => e.detailType === 'Leader Elected' && detail(e)['lease'] === this.lease && detail(e)['fencingToken'] === fencingToken), timeoutMs).catch(() => undefined);
    const id = elected && detail(elected)['electionId'];
    const opened = typeof id === 'string' ? this.rt.events.find((e) => e.detailType === 'Election Started' && detail(e)['electionId'] === id) : undefined;
    if (!opened) return term;
    const d = detail(opened);
    return { ...term, election: { startedAt: Date.parse(d['startedAt'] as string), vacancy: d['vacancy'] as string | undefined } };
  }

  /** Stops every worker (SIGTERM: they release and withdraw) and removes the rows of dead ones, so old leases cost the coordinator nothing. */
  async close(): Promise<void> {
    if (this.candidates) {
      const { candidates } = await this.candidates.list(this.lease);
      const dead = new Set(this.workers.filter((w) => !w.alive).map((w) => w.identity));
      for (const c of candidates) {
        if (!dead.has(c.name)) continue;
        try {
          await this.candidates.delete(CandidateStore.readOf(c));
        } catch (e) {
          if (!(e instanceof ConflictError)) throw e; // changed since listed: the coordinator collects it later
        }
      }
    }
    await Promise.all(this.workers.map((w) => w.stop()));
    this.checkHistory();
  }

  /**
   * The history checker on every run (issue 17: safety unchanged): at most one leader at a time,
   * tokens increasing, from the workers' own started/stopped lines. A violation fails the run.
   */
  private checkHistory(): void {
    if (!this.workers.every((w) => w.spec.lease === this.lease)) return; // a multi-lease worker prints no per-lease lines
    const history = historyFromWorkerEvents(this.lease, this.workers);
    const v = checkHistory({ history, end: { mono: (BigInt(Date.now()) * 1_000_000n).toString() } });
    const tally = this.ctx.checked[this.system];
    tally.groups++;
    tally.terms += v.terms.length;
    tally.violations += v.violations.length;
    if (v.violations.length) throw new Error(`history checker: ${formatVerdict(v).join('; ')}`);
  }
}

/** The options every scenario gets (from the command line). */
export interface BenchOptions {
  /** A smoke run: fewer runs, shorter windows, fewer leases. */
  quick: boolean;
  /** Runs per latency scenario; default per scenario. */
  runs?: number;
  /** Timing modes for crash failover and hand-off; the other latency scenarios use the first. */
  modes: Mode[];
  /** Leases for the coordinator-scale scenario. */
  leases?: number;
  /** Leases each process stands for in the many-leases steady state. @default 100 (--quick: 10) */
  multiLeases?: number;
  /** Steady-state measurement window. */
  windowMs?: number;
  /** Crash failover with the platform signal: how long after the process exits ECS's STOPPED event arrives. @default 0 */
  signalDelayMs?: number;
  /**
   * Which starts each failure scenario runs in, per timing mode (bench/burst.ts): `settled` (the
   * group settles before the failure) and `burst` (the measured failure comes 1–3 s into the term
   * of the leader a first failure made). `signalBurst`: crash failover with the platform signal in burst mode.
   */
  starts: { settled: Mode[]; burst: Mode[]; signalBurst: Mode[] };
  /** Seed of the burst delays. */
  seed: number;
  /**
   * Conclave's workers take the push path: each runtime runs a push broker (IoT Core's stand-in)
   * and every Conclave worker process connects to it (CONCLAVE_PUSH_URL). false (`--no-push`):
   * no broker, the workers only poll — the "before" of a before/after within one run.
   */
  push: boolean;
  /** Where each runtime's push broker runs: in the runtime's process, or `own-process` (`--broker-process`, as IoT Core is a service of its own). @default 'in-process' */
  pushBroker?: 'in-process' | 'own-process';
  /**
   * The many-leases steady state runs one Session per worker process, shared by its electors
   * (lib/sdk/session.ts). false (`--no-session`): none, each leader renews its own leases — the
   * "before" of a before/after on the same commit. The single-lease scenarios run no sessions either way.
   */
  session: boolean;
}

/** The (start, mode) pairs a scenario runs, settled first. */
export const startsOf = (o: BenchOptions, burst: Mode[] = o.starts.burst): { start: Start; mode: Mode }[] => [
  ...o.starts.settled.map((mode) => ({ start: 'settled' as const, mode })),
  ...burst.map((mode) => ({ start: 'burst' as const, mode })),
];
