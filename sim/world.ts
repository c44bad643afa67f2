/**
 * One simulated Conclave: N worker processes running the real SDK (LeaderElector with its
 * candidacy; in about half the worlds one Session per process, holding its electors' terms), the
 * real coordinator and the real stream, timer and platform handlers (the same modules Lambda
 * runs), over the in-memory DynamoDB model, all on one simulated clock. Every latency and fault
 * comes from the schedule, which comes from the seed: a seed replays exactly.
 *
 * The history (who led, with which token, when — on the simulated monotonic clock) and the ledger
 * of fenced writes go to the same checker as the chaos runs (lib/history/checker.ts).
 */
import { DeleteItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Context, DynamoDBRecord } from 'aws-lambda';
import { drainMicrotasks, every, seededRandom, simulatedClock, sleepOn, type Clock, type SimulatedClock, type Timer, type TimerOptions } from '../lib/clock.js';
import { coordinatorDeps } from '../lib/coordinator/reconcile.js';
import type { ConclaveEvent } from '../lib/events/schemas.js';
import type { FunctionDeps } from '../lib/functions/core.js';
import { observability } from '../lib/functions/env.js';
import { checkHistory, type Verdict } from '../lib/history/checker.js';
import { createLedgerTable, ledgerWrite, readLedger } from '../lib/history/ledger.js';
import type { FaultWindow, HistoryRecord } from '../lib/history/schema.js';
import { DelayQueue } from '../lib/local/delay-queue.js';
import { instanceStoppedEvent, LOCAL_DEPLOYMENT, taskStoppedEvent } from '../lib/local/ecs-task.js';
import { matchesFilter } from '../lib/local/event-filter.js';
import { handlerModules, type HandlerModule } from '../lib/local/handlers.js';
import { lambdaContext } from '../lib/local/runtime.js';
import { createTables } from '../lib/local/tables.js';
import { ElectionConfigSchema, type TableNames } from '../lib/schemas/config.js';
import type { Platform } from '../lib/schemas/platform.js';
import { FencingError } from '../lib/sdk/fencing.js';
import { LeaderElector } from '../lib/sdk/elector.js';
import { Session, type SessionOptions } from '../lib/sdk/session.js';
import { LeaseLostError, tryWithLease } from '../lib/sdk/with-lease.js';
import { DynamoDBModel, faults as ddbFaults, type ModelRequest } from '../lib/sim/dynamodb-model/index.js';
import { defaultTableNames } from '../lib/tables.js';
import { wiring, type FunctionName, type StreamTrigger } from '../lib/wiring.js';
import { blindToSessions, plant, type PlantedBug } from './bugs.js';
import { SimBroker } from './push.js';
import type { Schedule, ProcessFault, SessionConfig } from './schedule.js';

/** What one schedule produced. */
export interface SimResult {
  readonly seed: number;
  readonly verdict: Verdict;
  /** Every line of the timeline (printed with --seed). */
  readonly timeline: readonly string[];
  /** Counters: requests, faults applied, events, dead letters. */
  readonly counts: Readonly<Record<string, number>>;
}

const T0 = 1_800_000_000_000;
const SIM_CLUSTER = `arn:aws:ecs:${LOCAL_DEPLOYMENT.region}:${LOCAL_DEPLOYMENT.account}:cluster/sim`;
const ns = (ms: number): string => BigInt(Math.round(ms * 1e6)).toString();

/**
 * A worker machine's view of the simulated clock: its wall clock off by `skewMs` (which steps can
 * move), its timers held while the process is frozen and dropped once it is dead. With a drift
 * (`rate`, 1e-6 per ppm) its oscillator runs 1 + rate times as fast as true time: its monotonic
 * clock counts that much more from the process's start, its timers fire that much sooner, and its
 * wall clock gains as much (on top of its skew and steps).
 */
class ProcessClock implements Clock {
  skewMs = 0;
  /** The oscillator's rate error (0.0001 = 100 ppm fast; negative: slow). */
  rate = 0;
  /** True monotonic time at the process's start: what the drift is counted from. */
  private readonly origin: number;
  paused = false;
  /** Until when (simulated epoch ms) its requests reach nobody: a network partition. */
  partitionedUntil = 0;
  /** An aimed pause: begins when the process's next request has landed, before it reads the answer. */
  pauseAtNextAnswer: (() => void) | undefined;
  dead = false;
  private held: (() => void)[] = [];
  constructor(private readonly base: SimulatedClock) {
    this.origin = base.monotonic();
  }
  // Without drift, exactly the base's readings (not origin + elapsed, which can differ in the last
  // bit): a world without drift replays as it did before drift was simulated.
  now(): number {
    return this.base.now() + this.skewMs + (this.rate ? Math.round((this.base.monotonic() - this.origin) * this.rate) : 0);
  }
  monotonic(): number {
    return this.rate ? this.origin + (this.base.monotonic() - this.origin) * (1 + this.rate) : this.base.monotonic();
  }
  setTimer(ms: number, fn: () => void, opts?: TimerOptions): Timer {
    return this.base.setTimer(this.rate ? ms / (1 + this.rate) : ms, () => this.gate(fn), opts);
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }
  random(): number {
    return this.base.random();
  }
  /** Runs `fn` now, or when the process wakes, or never (dead). */
  gate(fn: () => void): void {
    if (this.dead) return;
    if (this.paused) this.held.push(fn);
    else fn();
  }
  /** Resolves when the process runs again (never, once dead). */
  running(): Promise<void> {
    return new Promise((resolve) => this.gate(resolve));
  }
  resume(): void {
    this.paused = false;
    const held = this.held;
    this.held = [];
    for (const fn of held) fn();
  }
}

/** Settings of a simulated world: the SDK's timings and the system's size. */
export interface WorldSettings {
  readonly workers: number;
  readonly leases: number;
  readonly durationMs: number;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  /** A leader's fenced write to the ledger, this often. */
  readonly writeEveryMs: number;
  readonly tickEveryMs: number;
  /**
   * Each worker process also invokes a scheduled job this often (0: never): withLease on the
   * lease `cron-0`, first come first served, run once per window of this length.
   */
  readonly cronEveryMs: number;
  /** How long a scheduled job's run works (fenced ledger writes) before it completes its window. */
  readonly cronWorkMs: number;
}

export const DEFAULT_SETTINGS: WorldSettings = {
  workers: 3,
  leases: 2,
  durationMs: 10 * 60_000,
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
  writeEveryMs: 5_000,
  tickEveryMs: 60_000,
  cronEveryMs: 45_000,
  cronWorkMs: 20_000,
};

/**
 * A world's Session timings, scaled to its electors': ended 1.25 retry periods before their renew
 * deadline (room for an elector to renew its leases itself once the session ends: a try and a
 * retry, as the elector's validation demands), renewed every `renewShare` of the room that leaves
 * (a renewal and a retry fit in it), and its row living as long as their leases.
 */
export function sessionTimings(settings: WorldSettings, c: SessionConfig): Pick<SessionOptions, 'renewIntervalMs' | 'retryPeriodMs' | 'renewDeadlineMs' | 'maxLeaseDurationMs'> {
  const deadline = settings.renewDeadlineMs - Math.round(1.25 * settings.retryPeriodMs);
  const room = deadline - settings.retryPeriodMs;
  return {
    renewIntervalMs: Math.min(room - 1, Math.max(1, Math.round(c.renewShare * room))),
    retryPeriodMs: settings.retryPeriodMs,
    renewDeadlineMs: deadline,
    maxLeaseDurationMs: settings.leaseDurationMs,
  };
}

/** The lease the scheduled jobs run under (withLease): held only while a run runs. */
export const CRON_LEASE = 'cron-0';

/**
 * The functions' logger and metrics, silent: a simulation publishes no metrics (Powertools would
 * print an EMF line to stdout for every one, thousands per schedule).
 */
function quietObservability(): ReturnType<typeof observability> {
  const before = process.env['POWERTOOLS_METRICS_DISABLED'];
  process.env['POWERTOOLS_METRICS_DISABLED'] = 'true';
  try {
    return observability('sim', 'SILENT');
  } finally {
    if (before === undefined) delete process.env['POWERTOOLS_METRICS_DISABLED'];
    else process.env['POWERTOOLS_METRICS_DISABLED'] = before;
  }
}

let modules: Promise<Record<FunctionName, HandlerModule>> | undefined;
/** The handler modules Lambda runs, imported once per process; each world builds its handlers from them. */
function handlerModulesLoaded(): Promise<Record<FunctionName, HandlerModule>> {
  modules ??= (async () => {
    const out = {} as Record<FunctionName, HandlerModule>;
    for (const name of Object.keys(handlerModules) as FunctionName[]) out[name] = await handlerModules[name]();
    return out;
  })();
  return modules;
}

export async function runWorld(schedule: Schedule, settings: WorldSettings = DEFAULT_SETTINGS, opts: { trace?: boolean; plant?: PlantedBug } = {}): Promise<SimResult> {
  const wallClocks = new Map<string, () => number>();
  const unplant = opts.plant ? plant(opts.plant, (identity) => (wallClocks.get(identity) ?? (() => NaN))()) : undefined;
  try {
    return await runPlanted(schedule, settings, opts, wallClocks);
  } finally {
    unplant?.();
  }
}

async function runPlanted(schedule: Schedule, settings: WorldSettings, opts: { trace?: boolean; plant?: PlantedBug }, wallClocks: Map<string, () => number>): Promise<SimResult> {
  const clock = simulatedClock({ start: T0, seed: schedule.seed, settle: drainMicrotasks() });
  // the schedule's own stream of numbers, apart from the system's, so that a fault's draws do not shift the system's
  const faultRandom = seededRandom(schedule.seed ^ 0x5bd1e995);
  const timeline: string[] = [];
  const counts: Record<string, number> = {};
  const count = (k: string, n = 1) => (counts[k] = (counts[k] ?? 0) + n);
  const at = () => `${((clock.now() - T0) / 1000).toFixed(3).padStart(8)}s`;
  const log = (line: string) => {
    if (opts.trace) timeline.push(`${at()}  ${line}`);
  };

  const model = new DynamoDBModel({ now: () => clock.now(), random: faultRandom, staleReadMaxLagMs: schedule.staleReadLagMs });
  const names: TableNames = defaultTableNames('sim');
  const ledgerTable = 'sim-ledger';
  const setup = model.client({ name: 'setup' });
  await createTables(setup, names);
  await createLedgerTable(setup, ledgerTable);

  /** The network and DynamoDB between a process and the model: latency, loss, throttling, duplicates, lost answers. */
  const network = (who: string, pc?: ProcessClock) => async (req: ModelRequest, apply: () => unknown) => {
    count('requests');
    const f = schedule.requestFaults;
    if (pc?.dead) return new Promise<never>(() => undefined);
    // a frozen process sends nothing until it runs again
    if (pc?.paused) await pc.running();
    if (pc && clock.now() < pc.partitionedUntil) {
      // cut off: the request dies on the way, or its answer does, after the socket timeout
      const applied = faultRandom() < 0.5;
      if (applied) apply();
      await clock.sleep(1_000);
      count(applied ? 'fault:partitionLostAnswer' : 'fault:partitionLostRequest');
      throw ddbFaults.timeout();
    }
    await clock.sleep(f.latencyMs[0] + faultRandom() * (f.latencyMs[1] - f.latencyMs[0]));
    const inFault = schedule.ddbFaults.some((w) => w.from <= clock.now() - T0 && clock.now() - T0 < w.to);
    const p = faultRandom();
    let out: unknown;
    if (inFault && p < f.throttle) {
      count('fault:throttle');
      throw ddbFaults.provisionedThroughputExceeded();
    } else if (inFault && p < f.throttle + f.lost) {
      count('fault:lostRequest');
      throw ddbFaults.timeout();
    } else if (inFault && p < f.throttle + f.lost + f.lostAnswer) {
      apply();
      count('fault:lostAnswer');
      throw ddbFaults.timeout();
    } else if (inFault && p < f.throttle + f.lost + f.lostAnswer + f.late) {
      // stuck on the way: the client gives up after its timeout; the request lands much later
      count('fault:lateLanding');
      const sentAt = clock.now();
      clock.setTimer(5_000 + faultRandom() * 25_000, () => {
        log(`late landing: ${who}'s ${req.operation} sent ${((clock.now() - sentAt) / 1000).toFixed(1)} s ago`);
        try {
          apply();
        } catch {
          // a condition that no longer holds: what the condition is for
        }
      });
      await clock.sleep(1_000);
      throw ddbFaults.timeout();
    } else if (inFault && p < f.throttle + f.lost + f.lostAnswer + f.late + f.duplicate && req.operation !== 'GetItem') {
      count('fault:duplicate');
      try {
        apply();
      } catch {
        // the first copy's answer is lost; the second's is what comes back
      }
      out = apply();
    } else out = apply();
    if (pc?.pauseAtNextAnswer) {
      const pause = pc.pauseAtNextAnswer;
      pc.pauseAtNextAnswer = undefined;
      pause();
    }
    await clock.sleep(f.latencyMs[0] + faultRandom() * (f.latencyMs[1] - f.latencyMs[0]));
    if (pc?.paused) await pc.running();
    if (pc?.dead) return new Promise<never>(() => undefined);
    void who;
    return out;
  };

  // ---- the functions
  const fnClient = model.client({ name: 'functions', intercept: network('functions') });
  const events: ConclaveEvent[] = [];
  const deadLetters: unknown[] = [];
  const outage = () => schedule.coordinatorDown.find((w) => w.from <= clock.now() - T0 && clock.now() - T0 < w.to);
  const coordinatorDown = () => outage() !== undefined;
  const config = ElectionConfigSchema.parse({});
  const loaded = await handlerModulesLoaded();
  const handlers = {} as Record<FunctionName, (event: unknown) => Promise<unknown>>;
  const broker = schedule.push ? new SimBroker(clock, schedule.push, faultRandom, count) : undefined;
  const timer = new DelayQueue({
    trigger: wiring.electionTimer.trigger,
    functionName: 'electionTimer',
    clock,
    invoke: async (e) => {
      // the function is down: SQS keeps the message until it runs again
      for (let w = outage(); w; w = outage()) await clock.sleep(T0 + w.to - clock.now());
      return handlers.electionTimer(e) as Promise<void>;
    },
    deadLetter: (d) => {
      count('deadLetters:electionTimer');
      deadLetters.push(d);
    },
  });
  const deps: FunctionDeps = {
    coordinator: opts.plant === 'coordinatorIgnoresSession' ? blindToSessions(coordinatorDeps(fnClient, names, { clock, config })) : coordinatorDeps(fnClient, names, { clock, config }),
    timer,
    publish: async (list) => {
      events.push(...list);
      count('events', list.length);
      for (const e of list) log(`event ${e.detailType} ${JSON.stringify({ lease: (e.detail as { lease?: string }).lease, holder: (e.detail as { holder?: string }).holder })}`);
    },
    deadLetter: async (p) => {
      count(`deadLetters:${p.function}`);
      log(`dead letter (${p.function}): ${p.reason}`);
      deadLetters.push(p);
    },
    ...(broker ? { wake: async (lease: string, revision: number | undefined) => broker.publish({ lease, by: 'stream', ...(revision !== undefined ? { revision } : {}) }) } : {}),
    ...quietObservability(),
  };
  /**
   * Lambda's context on simulated time, without `getRemainingTimeInMillis`. middy times each
   * invocation out on a real timer (node:timers) set from it: on simulated time that timer means
   * nothing, and one still pending when the world ends — an invocation the end cut short — kept
   * the whole world in memory for the function's timeout (a megabyte a schedule: 2 GB per thread
   * after five minutes of `npm run sim`, and slower and slower collections). Without the method
   * middy sets no timer; none of Conclave's functions reads it.
   */
  const simulatedContext = (name: FunctionName): Context => {
    const { getRemainingTimeInMillis: _real, ...context } = lambdaContext(name, clock);
    return context as Context;
  };
  for (const name of Object.keys(wiring) as FunctionName[]) {
    const h = loaded[name].makeHandler(deps) as (event: unknown, context: Context) => Promise<unknown>;
    handlers[name] = (event) => h(event, simulatedContext(name));
  }

  // ---- streams: per table, delivered in order per shard, batches possibly late or twice
  const pumps: Timer[] = [];
  for (const name of Object.keys(wiring) as FunctionName[]) {
    const trigger = wiring[name].trigger;
    if (trigger.kind !== 'stream') continue;
    const t = trigger as StreamTrigger;
    const stream = model.stream(names[t.table]);
    const after = new Map<string, string | undefined>();
    let busy = false;
    const pump = async () => {
      if (busy || coordinatorDown()) return;
      busy = true;
      try {
        for (const shard of stream.shardIds()) {
          const records: DynamoDBRecord[] = stream.read(shard, { ...(after.get(shard) ? { after: after.get(shard)! } : {}), limit: t.batchSize });
          if (!records.length) continue;
          const lag = schedule.streamLagMs[0] + faultRandom() * (schedule.streamLagMs[1] - schedule.streamLagMs[0]);
          await clock.sleep(lag);
          const passed = t.filters ? records.filter((r) => t.filters!.some((f) => matchesFilter(f, r))) : records;
          count(`stream:${name}`, passed.length);
          if (passed.length) {
            try {
              const res = (await handlers[name]({ Records: passed })) as { batchItemFailures?: unknown[] } | undefined;
              if (res?.batchItemFailures?.length) {
                count(`stream:${name}:retried`);
                continue; // at least once: the same records again at the next pump
              }
              if (faultRandom() < schedule.streamRedelivery) {
                count(`fault:streamRedelivery`);
                await handlers[name]({ Records: passed });
              }
            } catch {
              count(`stream:${name}:threw`);
              continue;
            }
          }
          after.set(shard, records.at(-1)!.dynamodb!.SequenceNumber!);
        }
      } finally {
        busy = false;
      }
    };
    pumps.push(every(clock, 250, () => void pump()));
  }

  // ---- the platform: "stopped" events for the task or instance a worker ran on, via EventBridge
  // (Lambda's asynchronous invocation: a function that is down gets the event when it is back)
  const platformEvent = (stopped: Record<string, unknown>, afterMs: number) =>
    clock.setTimer(afterMs, () => {
      void (async () => {
        for (let w = outage(); w; w = outage()) await clock.sleep(T0 + w.to - clock.now());
        let event = stopped;
        if (opts.plant === 'platformEventByArrival') event = { ...event, time: new Date(clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z') };
        log(`platform event ${(event['detail'] as Record<string, string>)['taskArn'] ?? (event['detail'] as Record<string, string>)['instance-id']} stopped at ${String(event['time'])}`);
        try {
          const r = (await handlers.platform(event)) as { outcomes?: { outcome: string }[] } | undefined;
          for (const o of r?.outcomes ?? []) count(`platform:${o.outcome}`);
        } catch {
          count('platform:threw');
        }
      })();
    });
  let platformEvents = 0;
  /** The platform tells that `platform` stopped now: after EventBridge's delay, maybe twice, maybe minutes late. */
  const platformStopped = (platform: Platform) => {
    const pe = schedule.platformEvents;
    const id = `sim-${schedule.seed}-${++platformEvents}`;
    const event = platform.kind === 'ecs' ? taskStoppedEvent(platform, { code: 137, signal: null }, new Date(clock.now()), id) : instanceStoppedEvent(platform.id, clock.now(), id);
    const delay = () => pe.delayMs[0] + faultRandom() * (pe.delayMs[1] - pe.delayMs[0]);
    platformEvent(event, delay());
    if (faultRandom() < pe.duplicate) platformEvent(event, delay() + 1_000);
    if (faultRandom() < pe.late) {
      count('fault:platformLate');
      platformEvent(event, 60_000 + faultRandom() * 240_000);
    }
  };

  // ---- the tick
  let ticking = false;
  pumps.push(
    every(clock, settings.tickEveryMs, () => {
      if (ticking || coordinatorDown()) return;
      ticking = true;
      void (handlers.coordinator({ 'detail-type': 'Scheduled Event', source: 'aws.events', time: new Date(clock.now()).toISOString() }) as Promise<unknown>)
        .catch(() => count('tick:threw'))
        .finally(() => (ticking = false));
    }),
  );
  pumps.push(every(clock, 60_000, () => void model.sweepTtl()));

  // ---- workers
  const history: HistoryRecord[] = [];
  const faultWindows: FaultWindow[] = [];
  const leaseNames = Array.from({ length: settings.leases }, (_, i) => `job-${i}`);
  interface Proc {
    identity: string;
    platform: Platform;
    runs: Promise<void>[];
    /** After a SIGTERM: starts the next process once this one has exited. */
    restart: () => void;
    pc: ProcessClock;
    electors: LeaderElector[];
    leading: Map<string, number>;
    stop: AbortController;
    /** Scheduled-job runs (withLease) under way in this process, by run instance: their tokens once they lead. */
    cronRuns: Map<string, number | undefined>;
    /** The scheduled-job invocations under way: a stopping process exits once they have ended. */
    jobs: Set<Promise<void>>;
  }
  const procs: Proc[] = [];
  /** Every process's Session (sessions worlds): their counts go into the world's. */
  const sessions: Session[] = [];
  const starts: number[] = [];
  const start = (i: number): Proc => {
    const identity = `w${i}`;
    starts[i] = (starts[i] ?? 0) + 1;
    // an ECS task has a new ARN each start; an EC2 instance keeps its id across a stop and a start
    const platform: Platform =
      schedule.platforms[i] === 'ecs'
        ? { kind: 'ecs', id: `arn:aws:ecs:${LOCAL_DEPLOYMENT.region}:${LOCAL_DEPLOYMENT.account}:task/sim/w${i}-${starts[i]}`, cluster: SIM_CLUSTER }
        : { kind: 'ec2', id: `i-${(0x51a00000 + i).toString(16)}` };
    const pc = new ProcessClock(clock);
    pc.skewMs = schedule.skewMs[i] ?? 0;
    pc.rate = (schedule.driftPpm?.[i] ?? 0) * 1e-6;
    wallClocks.set(identity, () => pc.now());
    const client: DynamoDBClient = model.client({ name: identity, intercept: network(identity, pc), backoff: (attempt) => clock.sleep(25 * 2 ** attempt) });
    const proc: Proc = { identity, platform, runs: [], restart: () => undefined, pc, electors: [], leading: new Map(), stop: new AbortController(), cronRuns: new Map(), jobs: new Set() };
    let writes = 0;
    const push = broker?.connect({ setTimer: (ms, fn) => pc.setTimer(ms, fn), get dead() { return pc.dead; }, cutOff: () => clock.now() < pc.partitionedUntil });
    // One Session per process, on its machine's clock and client (so every fault of the process is
    // its fault too), started before the electors and run until they have all finished: a SIGTERMed
    // process exits once it has deleted its row; a killed one's row is simply no longer renewed.
    const session = schedule.session
      ? new Session({
          client,
          tables: names,
          clock: pc,
          prefix: identity,
          ...sessionTimings(settings, schedule.session),
          onError: (e) => {
            count('session:errors');
            if (e.message.startsWith('Session ')) log(`${identity}: ${e.message.replace(/;.*/, '')}`);
          },
        })
      : undefined;
    if (session) {
      sessions.push(session);
      proc.runs.push(session.run(proc.stop.signal).catch(() => void count('session:startFailed')));
      void session.ready.then(
        () => log(`${identity} session ${session.name ?? '(already ended)'} started`),
        () => log(`${identity} session failed to start: its electors renew their leases themselves`),
      );
    }
    for (const leaseName of leaseNames) {
      const elector: LeaderElector = new LeaderElector({
        leaseName,
        identity,
        tables: names,
        client,
        clock: pc,
        platform,
        leaseDurationMs: settings.leaseDurationMs,
        renewDeadlineMs: settings.renewDeadlineMs,
        retryPeriodMs: settings.retryPeriodMs,
        candidacy: { emulationVersion: schedule.versions[i] ?? '1.30.0', binaryVersion: schedule.versions[i] ?? '1.30.0' },
        ...(push ? { push } : {}),
        ...(session ? { session } : {}),
        callbacks: {
          onStartedLeading: async (signal, { fencingToken }) => {
            proc.leading.set(leaseName, fencingToken);
            history.push({ event: 'started', lease: leaseName, identity, instance: elector.instance, fencingToken, mono: ns(clock.monotonic()), wall: Math.max(0, Math.round(pc.now())) });
            log(`${identity} leads ${leaseName} (token ${fencingToken})`);
            while (!signal.aborted && !pc.dead) {
              const entry = { lease: leaseName, id: `${elector.instance}#${++writes}`, identity, instance: elector.instance, fencingToken, sentMono: ns(clock.monotonic()), zombie: false };
              try {
                await elector.fencedWrite(ledgerWrite(ledgerTable, entry));
                count('fenced:accepted');
              } catch (e) {
                count(e instanceof FencingError ? 'fenced:refused' : 'fenced:error');
              }
              await pc.sleep(settings.writeEveryMs);
            }
          },
          onStoppedLeading: ({ reason, fencingToken }) => {
            if (pc.dead) return;
            proc.leading.delete(leaseName);
            history.push({ event: 'stopped', lease: leaseName, identity, instance: elector.instance, fencingToken, mono: ns(clock.monotonic()), wall: Math.max(0, Math.round(pc.now())), reason });
            log(`${identity} stops leading ${leaseName} (${reason})`);
          },
        },
        onError: (e) => {
          count('workerErrors');
          log(`${identity} ${leaseName}: ${e.message}`);
        },
      });
      proc.electors.push(elector);
      proc.runs.push(elector.run(proc.stop.signal).catch(() => void count('runRejected')));
    }
    if (settings.cronEveryMs > 0) scheduleJobs(proc, i, client);
    log(`start ${identity}`);
    return proc;
  };

  /**
   * The scheduled job, as a Lambda function on a schedule would run it from this process: an
   * invocation every cronEveryMs (each worker at its own phase), each one withLease on CRON_LEASE
   * with a run-once window per period; a run writes to the ledger, fenced, while it works, then
   * completes its window with one more ledger entry in the marker's transaction.
   */
  let invocations = 0;
  const scheduleJobs = (proc: Proc, i: number, client: DynamoDBClient) => {
    const { pc } = proc;
    const invoke = () => {
      if (pc.dead || proc.stop.signal.aborted) return;
      const n = ++invocations;
      const identity = `${proc.identity}-r${n}`; // a Lambda request id: one per invocation
      const instance = `${identity}_run`;
      const window = `period-${Math.floor((clock.now() - T0) / settings.cronEveryMs)}`;
      proc.cronRuns.set(instance, undefined);
      let writes = 0;
      const stopped = (token: number, reason: string) => {
        if (pc.dead || !proc.cronRuns.has(instance)) return;
        proc.cronRuns.delete(instance);
        history.push({ event: 'stopped', lease: CRON_LEASE, identity, instance, fencingToken: token, mono: ns(clock.monotonic()), wall: Math.max(0, Math.round(pc.now())), reason });
        log(`${identity} stops running ${CRON_LEASE} (${reason})`);
      };
      const job = tryWithLease(
        CRON_LEASE,
        async (signal, term) => {
          const token = term.fencingToken;
          proc.cronRuns.set(instance, token);
          history.push({ event: 'started', lease: CRON_LEASE, identity, instance, fencingToken: token, mono: ns(clock.monotonic()), wall: Math.max(0, Math.round(pc.now())) });
          log(`${identity} runs ${CRON_LEASE} for ${window} (token ${token})`);
          const entry = (id: string, extra: { window?: string } = {}) => ({ lease: CRON_LEASE, id: `${instance}#${id}`, identity, instance, fencingToken: token, sentMono: ns(clock.monotonic()), zombie: false, ...extra });
          try {
            const until = clock.monotonic() + settings.cronWorkMs;
            while (!signal.aborted && clock.monotonic() < until) {
              try {
                await term.fencedWrite(ledgerWrite(ledgerTable, entry(String(++writes))));
                count('cron:fenced:accepted');
              } catch (e) {
                count(e instanceof FencingError ? 'cron:fenced:refused' : 'cron:fenced:error');
              }
              await pc.sleep(settings.writeEveryMs, signal);
            }
            signal.throwIfAborted();
            await term.complete(ledgerWrite(ledgerTable, entry('done', { window })).TransactItems!);
          } finally {
            stopped(token, signal.aborted ? String(signal.reason instanceof LeaseLostError ? signal.reason.reason : 'aborted') : 'returned');
          }
        },
        {
          client,
          clock: pc,
          tables: names,
          identity,
          mode: 'NoCoordination',
          runOnce: { window },
          // a SIGTERM ends the run too: the process gives the lease up before it exits
          signal: proc.stop.signal,
          waitMs: settings.leaseDurationMs,
          leaseDurationMs: settings.leaseDurationMs,
          renewDeadlineMs: settings.renewDeadlineMs,
          retryPeriodMs: settings.retryPeriodMs,
          onError: () => count('workerErrors'),
        },
      ).then(
        (r) => void count(`cron:${r.status}`),
        (e: unknown) => void count(`cron:${(e as Error).name ?? 'error'}`),
      ).finally(() => proc.cronRuns.delete(instance));
      proc.jobs.add(job);
      void job.finally(() => proc.jobs.delete(job));
    };
    const phase = ((i + 1) * settings.cronEveryMs) / (settings.workers + 1);
    const first = pc.setTimer(phase, () => {
      invoke();
      timers.push(every(pc, settings.cronEveryMs, invoke));
    });
    timers.push(first);
  };
  const timers: Timer[] = [];
  for (let i = 0; i < settings.workers; i++) procs.push(start(i));

  // ---- process faults, from the schedule
  const apply = (f: ProcessFault) => {
    const from = clock.monotonic();
    if (f.kind === 'deleteLease') {
      // an operator's delete: unconditional, whoever holds the lease
      log(`delete lease job-${f.lease}`);
      count('fault:deleteLease');
      model.client({ name: 'operator' }).send(new DeleteItemCommand({ TableName: names.leases, Key: { name: { S: `job-${f.lease}` } } })).catch(() => count('fault:deleteLeaseFailed'));
      faultWindows.push({ kind: 'leaseDelete', lease: `job-${f.lease}`, from: ns(from), to: ns(from) });
      return;
    }
    const proc = procs[f.worker]!;
    // one worker, one process: the next starts only when this one is gone (and only once)
    let restarted = false;
    const restart = (afterMs: number, kind: string) => {
      if (restarted) return;
      restarted = true;
      clock.setTimer(afterMs, () => {
        procs[f.worker] = start(f.worker);
        faultWindows.push({ kind, from: ns(from), to: ns(clock.monotonic()), ...(kind === 'kill' ? { instances: proc.electors.map((e) => e.instance) } : {}) });
      });
    };
    if (proc.pc.dead || (proc.stop.signal.aborted && f.kind === 'stop')) {
      count(`skipped:${f.kind}`); // already gone, or already stopping
      return;
    }
    if (f.kind === 'kill') {
      log(`kill ${proc.identity}`);
      proc.pc.dead = true;
      for (const [lease, token] of proc.leading) {
        const e = proc.electors.find((x) => x.options.leaseName === lease)!;
        history.push({ event: 'stopped', lease, identity: proc.identity, instance: e.instance, fencingToken: token, mono: ns(clock.monotonic()), wall: Math.round(clock.now()), reason: 'killed' });
      }
      proc.leading.clear();
      for (const [instance, token] of proc.cronRuns) {
        if (token !== undefined) history.push({ event: 'stopped', lease: CRON_LEASE, identity: instance.replace(/_run$/, ''), instance, fencingToken: token, mono: ns(clock.monotonic()), wall: Math.round(clock.now()), reason: 'killed' });
      }
      proc.cronRuns.clear();
      platformStopped(proc.platform);
      proc.restart = () => undefined; // a stop under way restarts nothing now
      restart(f.forMs, 'kill');
    } else if (f.kind === 'pause') {
      const pause = () => {
        const from = clock.monotonic();
        log(`pause ${proc.identity} for ${f.forMs} ms${f.aimed ? ' (between a request landing and its answer)' : ''}`);
        proc.pc.paused = true;
        const runs = [...proc.cronRuns.keys()];
        clock.setTimer(f.forMs, () => {
          log(`resume ${proc.identity}`);
          faultWindows.push({ kind: 'pause', from: ns(from), to: ns(clock.monotonic()), instances: [...new Set([...proc.electors.map((e) => e.instance), ...runs, ...proc.cronRuns.keys()])] });
          proc.pc.resume();
        });
      };
      if (f.aimed) proc.pc.pauseAtNextAnswer = pause;
      else pause();
    } else if (f.kind === 'partition') {
      log(`partition ${proc.identity} for ${f.forMs} ms`);
      proc.pc.partitionedUntil = clock.now() + f.forMs;
      clock.setTimer(f.forMs, () => faultWindows.push({ kind: 'partition', from: ns(from), to: ns(clock.monotonic()) }));
    } else if (f.kind === 'clockStep') {
      log(`step ${proc.identity}'s wall clock by ${f.stepMs} ms`);
      proc.pc.skewMs += f.stepMs;
    } else if (f.kind === 'stop') {
      log(`stop ${proc.identity} (SIGTERM)`);
      // a frozen process handles the signal when it runs again
      proc.pc.gate(() => proc.stop.abort());
      // the process exits once its electors have handed off; then its task or instance stops
      proc.restart = () => restart(f.forMs, 'handoff');
      void Promise.all([...proc.runs, ...proc.jobs]).then(() => {
        if (proc.pc.dead) return; // killed meanwhile: the kill restarts it
        // exited: a fault that comes for it before its successor starts finds nothing to hit (seed
        // 251652818 killed the exited process and so started a second one beside the first's successor)
        proc.pc.dead = true;
        platformStopped(proc.platform);
        proc.restart();
      });
    }
  };
  for (const f of schedule.processFaults) clock.setTimer(f.at, () => apply(f));
  for (const w of [...schedule.ddbFaults, ...schedule.coordinatorDown]) {
    clock.setTimer(w.to, () => faultWindows.push({ kind: schedule.ddbFaults.includes(w) ? 'dynamodb' : 'coordinatorDown', from: ns(T0 + w.from), to: ns(T0 + w.to) }));
  }

  await clock.run(settings.durationMs);
  const end = clock.monotonic();
  for (const p of pumps) p.cancel();
  const ledger = await readLedger(model.client({ name: 'checker' }), ledgerTable);
  const lastHeal = Math.max(0, ...faultWindows.map((w) => Number(BigInt(w.to) / 1_000_000n)));
  const verdict = checkHistory(
    { history, ledger, faults: faultWindows, end: { mono: ns(end) } },
    {
      healMs: schedule.healMs,
      episodicLeases: [CRON_LEASE],
      ...(lastHeal ? { healedAt: ns(Math.max(lastHeal, T0)) } : {}),
      // One rule for every world (issue 27): a holder on a session learns of an operator's delete
      // as any holder does, within its renew deadline — from the mark the lease stream's function
      // leaves on its session row, read in the answer to its next session renewal.
    },
  );
  count('terms', verdict.figures.terms);
  if (schedule.push) count('worlds:push');
  if (schedule.session) count('worlds:session');
  for (const s of sessions) for (const [k, v] of Object.entries(s.stats)) count(`session:${k}`, v);
  // stop what is left: nothing more runs once the clock is no longer run
  for (const p of procs) p.pc.dead = true;
  return { seed: schedule.seed, verdict, timeline, counts };
}
