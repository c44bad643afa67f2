/**
 * The coordinator's side: the real stream, timer, tick and platform handlers (the same modules
 * Lambda runs, wired from lib/wiring.ts) on simulated time — stream batches late, out of the
 * function while it is down (with the rest, or the stream functions alone), sometimes twice; the
 * election timer's messages held while it is down; the tick; the platform's "stopped" events late, twice, or minutes later. A world (sim/world.ts)
 * draws all of that from its schedule; the SDK tests' harness (sim/harness.ts) runs the same
 * functions with fixed delays and an outage of its own choosing.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Context, DynamoDBRecord } from 'aws-lambda';
import { every, type SimulatedClock, type Timer } from '../lib/clock.js';
import { coordinatorDeps, type CoordinatorDeps } from '../lib/coordinator/reconcile.js';
import type { ConclaveEvent } from '../lib/events/schemas.js';
import type { IoTDataPlaneClient, PublishCommand } from '@aws-sdk/client-iot-data-plane';
import type { FunctionDeps } from '../lib/functions/core.js';
import { iotWaker, type Waker } from '../lib/functions/wake.js';
import { isProcessTopic, pushRoot } from '../lib/schemas/push.js';
import { observability } from '../lib/functions/env.js';
import { DelayQueue } from '../lib/local/delay-queue.js';
import { instanceStoppedEvent, taskStoppedEvent } from '../lib/local/ecs-task.js';
import { matchesFilter } from '../lib/local/event-filter.js';
import { handlerModules, type HandlerModule } from '../lib/local/handlers.js';
import { lambdaContext } from '../lib/local/runtime.js';
import type { ModelStream } from './dynamodb-model/index.js';
import { ElectionConfigSchema } from '../lib/schemas/config.js';
import type { Feed } from './feed.js';
import type { Platform } from '../lib/schemas/platform.js';
import type { Wake } from '../lib/sdk/push.js';
import { wiring, type FunctionName, type StreamTrigger } from '../lib/wiring.js';
import { plantedDeps, type PlantedBug } from './bugs.js';
import { T0 } from './feed.js';
import { hostState } from './network.js';
import type { SimBroker, SlowPublish } from './push.js';
import type { Schedule, UserFault } from './schedule.js';
import type { WorldContext } from './settings.js';
import type { SimWorld } from './machines.js';

type Handlers = Record<FunctionName, (event: unknown) => Promise<unknown>>;

/** The coordinator's side of a running world. */
export interface Functions {
  /** The platform tells that `platform` stopped now: after EventBridge's delay, maybe twice, maybe minutes late. */
  platformStopped(platform: Platform): void;
  /** Stops the stream pollers, the tick and the TTL sweep (the world's end). */
  stop(): void;
}

/**
 * The functions' logger and metrics, silent: a simulation publishes no metrics (Powertools would
 * print an EMF line to stdout for every one, thousands per schedule).
 */
function quietObservability(onError?: (message: string, extra: unknown[]) => void, log?: (line: string) => void): ReturnType<typeof observability> {
  const before = process.env['POWERTOOLS_METRICS_DISABLED'];
  process.env['POWERTOOLS_METRICS_DISABLED'] = 'true';
  try {
    const o = observability('sim', 'SILENT');
    // the per-lease metrics' instance reads the switch when it is made: made now, while it is off
    const single = o.metrics.singleMetric();
    o.metrics.singleMetric = () => single;
    // an Error anywhere in an extra (`{ error: e }`) as its name and message: JSON.stringify writes one as {}
    const shown = (_key: string, v: unknown) => (v instanceof Error ? `${v.name}: ${v.message}` : v);
    const text = (message: unknown, extra: unknown[]) => [message, ...extra].map((m) => (typeof m === 'string' ? m : m instanceof Error ? `${m.name}: ${m.message}` : JSON.stringify(m, shown))).join(' ');
    if (onError || log)
      o.logger.error = (message, ...extra) => {
        log?.(`error: ${text(message, extra)}`);
        onError?.(typeof message === 'string' ? message : JSON.stringify(message), extra);
      };
    if (log) o.logger.warn = (message, ...extra) => log(`warn: ${text(message, extra)}`);
    return o;
  } finally {
    if (before === undefined) delete process.env['POWERTOOLS_METRICS_DISABLED'];
    else process.env['POWERTOOLS_METRICS_DISABLED'] = before;
  }
}

let modules: Promise<Record<FunctionName, HandlerModule>> | undefined;
/** The handler modules Lambda runs, imported once per process; each world builds its handlers from them (await it before simulated time runs: an import takes real time). */
export function handlerModulesLoaded(): Promise<Record<FunctionName, HandlerModule>> {
  modules ??= (async () => {
    const out = {} as Record<FunctionName, HandlerModule>;
    for (const name of Object.keys(handlerModules) as FunctionName[]) out[name] = await handlerModules[name]();
    return out;
  })();
  return modules;
}

/** What the functions run in and on: a world's (functionsOf), or the SDK tests' harness's. */
export interface FunctionsContext {
  readonly world: SimWorld;
  /** The client of the machine the functions run on (Lambda's). */
  readonly client: DynamoDBClient;
  /** The coordinator's stores on that client (a planted bug wraps them: sim/bugs.ts plantedDeps). */
  readonly coordinator: CoordinatorDeps;
  /** The stream of numbers the functions' faults are drawn from (stream lag, redelivery, platform events). */
  readonly random: () => number;
  /** Where the functions count and log what they did. */
  readonly feed: Pick<Feed, 'count' | 'log'>;
  readonly plant: PlantedBug | undefined;
  /** The coordinator's tick (EventBridge's schedule), this often. */
  readonly tickEveryMs: number;
  /** Lambda's pollers look at the streams' shards this often. */
  readonly pollEveryMs: number;
  /** A stream batch reaches its function this long after it was read, drawn in [min, max] ms. */
  readonly streamLagMs: readonly [number, number];
  /** The chance a delivered batch is delivered again. */
  readonly streamRedelivery: number;
  /** When (true epoch ms) the streams are re-read from `backMs` back, if they are (Schedule streamReplay). */
  readonly streamReplay?: { readonly at: number; readonly backMs: number } | undefined;
  readonly platformEvents: Schedule['platformEvents'];
  /** What the platform events' ids begin with. */
  readonly eventIds: string;
  /** DynamoDB's TTL sweep runs (none on multi-Region strongly consistent tables: the tick collects). */
  readonly ttl: boolean;
  /** The end (true epoch ms) of the outage the functions are in now; undefined while they run. */
  outageEnd(): number | undefined;
  /** Whether stream function `name` alone is down now (Schedule.streamsDown: its records wait in their shards while the tick runs). Absent: never. */
  streamDown?(name: FunctionName): boolean;
  /** How late IoT Core answers a wake published now (a slow push), if it is slow. */
  slowWakeMs(): number | undefined;
  /** IoT Core (their own Region's), where the functions publish their wakes (the push path), if the world has one. */
  readonly broker: Pick<SimBroker, 'publish'> | undefined;
  /**
   * How the functions publish a wake, when not as wakeThrough does: a world with a slow IoT Core
   * (Schedule.slowBroker) publishes through the real waker (iotWaker: its publish timeout and its
   * stall) on a stand-in of IoT Core's data plane (simIotData).
   */
  readonly waker?: Waker;
  /** Called with every error the functions log (a world's are silent). */
  readonly onError?: (message: string, extra: unknown[]) => void;
  /** Every error and warning the functions log, as a line (a world's with `--rows`). */
  readonly log?: (line: string) => void;
}

/** How often Lambda's pollers look at the streams' shards (in the simulator's worlds). */
const PUMP_EVERY_MS = 250;

/** A world's functions: on a machine named `name`, every delay and fault drawn from its schedule. */
function functionsOf(c: WorldContext, o: { name?: string; ttl?: boolean }): FunctionsContext {
  const { world, schedule } = c;
  const clock = world.clock;
  const client = world.machine(o.name ?? 'functions', c.network, hostState(), { backoff: false }).client; // Lambda's machines: no fault hits them
  // IoT Core is per Region: a Region's functions publish to their own Region's (sim/push.ts)
  const broker = world.brokerOf(c.regionOf?.(o.name ?? 'functions'));
  const slowWakeMs = () => {
    const at = clock.now() - T0;
    return schedule.userFaults.find((f): f is Extract<UserFault, { kind: 'slowPush' }> => f.kind === 'slowPush' && f.at <= at && at < f.at + f.forMs)?.delayMs;
  };
  return {
    world,
    client,
    coordinator: coordinatorDeps(client, world.names, { clock, config: ElectionConfigSchema.parse({}) }),
    random: c.random,
    feed: c.feed,
    plant: c.plant,
    tickEveryMs: c.settings.tickEveryMs,
    pollEveryMs: PUMP_EVERY_MS,
    streamLagMs: schedule.streamLagMs,
    streamRedelivery: schedule.streamRedelivery,
    streamReplay: schedule.streamReplay && { at: T0 + schedule.streamReplay.at, backMs: schedule.streamReplay.backMs },
    platformEvents: schedule.platformEvents,
    eventIds: `sim-${schedule.seed}`,
    ttl: o.ttl ?? true,
    ...(c.functionsLog ? { log: (line: string) => c.functionsLog!(`${o.name ?? 'functions'} ${line}`) } : {}),
    broker,
    // a slow IoT Core: the real waker, its timeout and stall on simulated time, on a stand-in data plane
    ...(broker && c.slowPublish ? { waker: iotWaker(simIotData(clock, broker, world.names.leases, c.slowPublish, slowWakeMs, c.feed), world.names.leases, { clock }) } : {}),
    outageEnd: () => {
      // the coordinatorDown window the world is in now, if any
      const now = clock.now();
      const w = schedule.coordinatorDown.find((x) => x.from <= now - T0 && now - T0 < x.to);
      return w && T0 + w.to;
    },
    streamDown: (name) => {
      const f = schedule.streamsDown;
      const at = clock.now() - T0;
      return f !== undefined && (f.functions as readonly string[]).includes(name) && f.at <= at && at < f.at + f.forMs;
    },
    slowWakeMs,
  };
}

/**
 * IoT Core's data plane for the real waker (iotWaker), in a world with a slow IoT Core: each
 * PublishCommand goes to `broker` on its topic (a lease's, or a process's). In the slow window
 * (`slow`) its answer comes `delayMs` late, and the waker's abort at its timeout fails it at once: a
 * publish given up is still delivered at its delay if it `lands`, else lost. Outside it, answered at
 * once, or `slowWakeMs()` late (a `slowPush`: under the timeout), as wakeThrough.
 */
function simIotData(clock: SimulatedClock, broker: Pick<SimBroker, 'publish'>, leasesTable: string, slow: () => SlowPublish | undefined, slowWakeMs: () => number | undefined, feed: Pick<Feed, 'count'>): IoTDataPlaneClient {
  const processes = `${pushRoot(leasesTable)}/process/`;
  const send = async (command: PublishCommand, options?: { abortSignal?: AbortSignal }): Promise<object> => {
    const { topic = '', payload } = command.input;
    const wake = JSON.parse(new TextDecoder().decode(payload as Uint8Array)) as Wake;
    const to = isProcessTopic(leasesTable, topic) ? [decodeURIComponent(topic.slice(processes.length))] : undefined;
    const publish = () => broker.publish(wake, undefined, to);
    const s = slow();
    if (!s) {
      const late = slowWakeMs();
      if (late !== undefined) {
        feed.count('fault:slowWake');
        await clock.sleep(late);
      }
      publish();
      return {};
    }
    feed.count('fault:slowPublish');
    return new Promise((resolve, reject) => {
      const answer = clock.setTimer(s.delayMs, () => {
        publish();
        resolve({});
      });
      options?.abortSignal?.addEventListener(
        'abort',
        () => {
          // given up at the waker's timeout: the broker had it (delivered at its delay), or not
          feed.count(s.lands ? 'fault:slowPublishLanded' : 'fault:slowPublishLost');
          if (!s.lands) answer.cancel();
          reject(options.abortSignal!.reason);
        },
        { once: true },
      );
    });
  };
  return { send } as unknown as IoTDataPlaneClient;
}

/** Starts a world's functions (on a machine named `o.name`): their handlers, the stream pollers, the tick and, unless `o.ttl` is false, DynamoDB's TTL sweep. */
export function startFunctions(c: WorldContext, o: { name?: string; ttl?: boolean } = {}): Promise<Functions> {
  return runFunctions(functionsOf(c, o));
}

/** Starts the functions of `c`: their handlers, the stream pollers, the tick and, with `c.ttl`, DynamoDB's TTL sweep. */
export async function runFunctions(c: FunctionsContext): Promise<Functions> {
  const { world, feed } = c;
  const clock = world.clock;
  const loaded = await handlerModulesLoaded();
  const handlers = {} as Handlers;
  const deps = functionDeps(c, handlers);
  /**
   * Lambda's context on simulated time, without `getRemainingTimeInMillis`. middy times each
   * invocation out on a real timer (node:timers) set from it: on simulated time that timer means
   * nothing, and one still pending when the world ends — an invocation the end cut short — kept
   * the whole world in memory for the function's timeout (a megabyte a schedule: 2 GB per thread
   * after five minutes of `npm run sim`, and slower and slower collections). Without the method
   * middy sets no timer; none of Conclave's functions reads it.
   */
  for (const name of Object.keys(wiring) as FunctionName[]) {
    const h = loaded[name].makeHandler(deps) as (event: unknown, context: Context) => Promise<unknown>;
    handlers[name] = (event) => h(event, lambdaContext(name, clock, false));
  }
  const down = () => c.outageEnd() !== undefined;
  const pumps: Timer[] = [];
  const streams = (Object.keys(wiring) as FunctionName[]).filter((name) => wiring[name].trigger.kind === 'stream');
  // a stream function is down with the coordinator's functions, or alone (its records wait in their shards while the tick runs)
  const streamDown = (name: FunctionName) => () => {
    if (down()) return true;
    if (!c.streamDown?.(name)) return false;
    feed.count(`streamsDown:held:${name}`); // a look that found records for it and left them
    return true;
  };
  pumps.push(pollersOf(clock, c.pollEveryMs).add(streams.map((name) => streamPump(c, name, wiring[name].trigger as StreamTrigger, handlers, streamDown(name)))));
  let ticking = false;
  pumps.push(
    every(clock, c.tickEveryMs, () => {
      if (ticking || down()) return;
      ticking = true;
      void (handlers.coordinator({ 'detail-type': 'Scheduled Event', source: 'aws.events', time: new Date(clock.now()).toISOString() }) as Promise<unknown>)
        .catch(() => feed.count('tick:threw'))
        .finally(() => (ticking = false));
    }),
  );
  if (c.ttl) pumps.push(every(clock, 60_000, () => void world.model.sweepTtl()));
  return { platformStopped: platformEvents(c, handlers), stop: () => pumps.forEach((p) => p.cancel()) };
}

/** The functions' dependencies: the coordinator's stores, the election timer (SQS), EventBridge, dead letters, the broker. */
function functionDeps(c: FunctionsContext, handlers: Handlers): FunctionDeps {
  const { world, feed } = c;
  const clock = world.clock;
  const events: ConclaveEvent[] = [];
  const deadLetters: unknown[] = [];
  const broker = c.broker;
  const timer = new DelayQueue({
    trigger: wiring.electionTimer.trigger,
    functionName: 'electionTimer',
    clock,
    invoke: async (e) => {
      // the function is down: SQS keeps the message until it runs again
      for (let end = c.outageEnd(); end !== undefined; end = c.outageEnd()) await clock.sleep(end - clock.now());
      return handlers.electionTimer(e) as Promise<void>;
    },
    deadLetter: (d) => {
      feed.count('deadLetters:electionTimer');
      deadLetters.push(d);
    },
  });
  return {
    coordinator: plantedDeps(c.plant, c.coordinator),
    timer,
    publish: async (list) => {
      events.push(...list);
      feed.count('events', list.length);
      for (const e of list) feed.log(`event ${e.detailType} ${JSON.stringify({ lease: (e.detail as { lease?: string }).lease, holder: (e.detail as { holder?: string }).holder })}`);
    },
    deadLetter: async (p) => {
      feed.count(`deadLetters:${p.function}`);
      feed.log(`dead letter (${p.function}): ${p.reason}`);
      deadLetters.push(p);
    },
    ...(broker ? { wake: c.waker ?? ((lease: string, revision: number | undefined, processes?: readonly string[]) => wakeThrough(c, broker, { lease, by: 'stream', ...(revision !== undefined ? { revision } : {}) }, processes)) } : {}),
    ...quietObservability(c.onError, c.log),
  };
}

/**
 * A wake through IoT Core: published at once, or, while the schedule has it slow (a `slowPush`
 * window), answered and delivered `delayMs` late — slow, not hung: under the publish's timeout.
 */
async function wakeThrough(c: FunctionsContext, broker: Pick<SimBroker, 'publish'>, wake: Wake, processes?: readonly string[]): Promise<void> {
  const slowMs = c.slowWakeMs();
  if (slowMs !== undefined) {
    c.feed.count('fault:slowWake');
    await c.world.clock.sleep(slowMs);
  }
  broker.publish(wake, undefined, processes);
}

/** One stream's poller: whether it has something to read, and a pump that reads and delivers it. */
interface StreamPump {
  readonly stream: ModelStream;
  /** Records after what it has delivered, in some shard. */
  pending(): boolean;
  /** Delivers them (a no-op while the functions are down). */
  pump(): Promise<void>;
  busy: boolean;
}

/** One stream's poller: per shard, in order, batches possibly late or twice; a failed batch comes again (at least once). */
function streamPump(c: FunctionsContext, name: FunctionName, t: StreamTrigger, handlers: Handlers, down: () => boolean): StreamPump {
  const { world, feed, random } = c;
  const stream = world.model.stream(world.names[t.table]);
  const shards = stream.shardIds();
  const after = new Map<string, string | undefined>();
  const filters = t.filters;
  const keep = filters ? (r: DynamoDBRecord) => filters.some((f) => matchesFilter(f, r)) : undefined;
  let replayed = false;
  /** The stream re-read from an older point (Schedule streamReplay), at the first look from its time: each shard's position moved back. */
  const replay = () => {
    const r = c.streamReplay;
    const now = world.clock.now();
    if (!r || replayed || now < r.at) return;
    replayed = true;
    feed.count(`fault:streamReplay:${name}`);
    feed.log(`${name} re-read from ${(r.backMs / 1000).toFixed(1)}s back`);
    for (const shard of shards) {
      const was = after.get(shard);
      if (was === undefined) continue; // nothing delivered yet
      const back = stream.positionBefore(shard, now - r.backMs);
      // sequence numbers are of one width: they sort as strings
      if (back === undefined) after.delete(shard);
      else if (back < was) after.set(shard, back);
    }
  };
  const self: StreamPump = {
    stream,
    busy: false,
    pending: () => shards.some((shard) => stream.hasRecordsAfter(shard, after.get(shard))),
    pump: async () => {
      if (self.busy || down()) return;
      self.busy = true;
      try {
        replay();
        for (const shard of shards) {
          // read now, filtered as Lambda filters (only the records that pass are copied out)
          const batch = stream.readWhere(shard, { ...(after.get(shard) ? { after: after.get(shard)! } : {}), limit: t.batchSize }, keep);
          if (!batch.read) continue;
          const lag = c.streamLagMs[0] + random() * (c.streamLagMs[1] - c.streamLagMs[0]);
          await world.clock.sleep(lag);
          const passed = batch.kept;
          feed.count(`stream:${name}`, passed.length);
          if (passed.length) {
            // a batch that failed in part: Lambda resumes from the earliest failure (the lowest
            // sequence number reported), the records before it done; an identifier not in the batch, the whole batch
            const failedFrom = (res: { batchItemFailures?: { itemIdentifier?: unknown }[] } | undefined): boolean => {
              const failed = new Set(res?.batchItemFailures?.map((f) => f.itemIdentifier));
              if (!failed.size) return false;
              feed.count(`stream:${name}:retried`);
              const at = passed.findIndex((r) => failed.has(r.dynamodb?.SequenceNumber));
              if (at > 0) after.set(shard, passed[at - 1]!.dynamodb!.SequenceNumber!);
              return true;
            };
            try {
              type Answer = { batchItemFailures?: { itemIdentifier?: unknown }[] } | undefined;
              if (failedFrom((await handlers[name]({ Records: passed })) as Answer)) continue; // at least once: from the failure again at the next pump
              if (random() < c.streamRedelivery) {
                // delivered twice, as Lambda does when it did not record the first's success: the
                // second's failure is retried as any (from it again at the next pump)
                feed.count(`fault:streamRedelivery`);
                if (failedFrom((await handlers[name]({ Records: passed })) as Answer)) continue;
              }
            } catch {
              feed.count(`stream:${name}:threw`);
              continue;
            }
          }
          after.set(shard, batch.last!);
        }
      } finally {
        self.busy = false;
      }
    },
  };
  return self;
}

/**
 * The stream pollers' looks, every `everyMs` from the start (the grid: start + k × 250 ms in a world, as
 * repeated additions, as `every` makes them), each poller in turn in the order they were added: a
 * pump where there is something to read and none runs. A look is a timer only when some poller has
 * something to read — armed when a record is appended, or when a pump ends with records left — not
 * one per poller four times a simulated second that mostly finds nothing (they were about 40 % of
 * a schedule's timers). What each look finds, draws and delivers is what it was when every look was
 * a timer. One per world: every Region's functions poll on the one grid, in the order they started.
 */
class StreamPollers {
  private readonly pollers: StreamPump[] = [];
  private grid: number;
  private lastLook: number;
  private armed: Timer | undefined;

  constructor(
    private readonly clock: SimulatedClock,
    private readonly everyMs: number,
  ) {
    this.grid = clock.monotonic();
    this.lastLook = this.grid; // the first look is a period after the start
  }

  /** Polls `pollers` from now on, after those already here; cancel() stops them. */
  add(pollers: readonly StreamPump[]): Timer {
    this.pollers.push(...pollers);
    const unsubscribe = pollers.map((p) => p.stream.onAppend(() => this.arm()));
    this.arm();
    return {
      cancel: () => {
        for (const u of unsubscribe) u();
        for (const p of pollers) this.pollers.splice(this.pollers.indexOf(p), 1);
        if (this.pollers.length === 0) this.armed?.cancel();
      },
    };
  }

  /** A look at the next grid instant (this one, if it is on the grid and not looked at yet), if some poller waits. */
  private arm(): void {
    if (this.armed || !this.pollers.some((p) => !p.busy && p.pending())) return;
    const now = this.clock.monotonic();
    while (this.grid < now) this.grid += this.everyMs;
    if (this.grid === now && this.lastLook === now) this.grid += this.everyMs; // this instant's look is done
    this.armed = this.clock.setTimer(this.grid - now, () => this.look());
  }

  private look(): void {
    this.armed = undefined;
    this.lastLook = this.clock.monotonic();
    for (const p of [...this.pollers]) if (!p.busy && p.pending()) void p.pump().finally(() => this.arm());
    this.arm();
  }
}

const streamPollers = new WeakMap<SimulatedClock, Map<string, StreamPollers>>();

/** The world's stream pollers on the grid of `everyMs` that starts now (every Region's functions start at the world's start: one grid). */
function pollersOf(clock: SimulatedClock, everyMs: number): StreamPollers {
  let byStart = streamPollers.get(clock);
  if (!byStart) {
    byStart = new Map();
    streamPollers.set(clock, byStart);
  }
  const key = `${clock.monotonic()}/${everyMs}`;
  let p = byStart.get(key);
  if (!p) {
    p = new StreamPollers(clock, everyMs);
    byStart.set(key, p);
  }
  return p;
}

/**
 * The platform: "stopped" events for the task or instance a worker ran on, via EventBridge
 * (Lambda's asynchronous invocation: a function that is down gets the event when it is back).
 */
function platformEvents(c: FunctionsContext, handlers: Handlers): (platform: Platform) => void {
  const { world, feed, random } = c;
  const clock = world.clock;
  const deliver = (stopped: Record<string, unknown>, afterMs: number) =>
    clock.setTimer(afterMs, () => {
      void (async () => {
        // the function is down: EventBridge retries until it runs again
        for (let end = c.outageEnd(); end !== undefined; end = c.outageEnd()) await clock.sleep(end - clock.now());
        let event = stopped;
        if (c.plant === 'platformEventByArrival') event = { ...event, time: new Date(clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z') };
        feed.log(`platform event ${(event['detail'] as Record<string, string>)['taskArn'] ?? (event['detail'] as Record<string, string>)['instance-id']} stopped at ${String(event['time'])}`);
        try {
          const r = (await handlers.platform(event)) as { outcomes?: { outcome: string }[] } | undefined;
          for (const o of r?.outcomes ?? []) feed.count(`platform:${o.outcome}`);
        } catch {
          feed.count('platform:threw');
        }
      })();
    });
  let n = 0;
  return (platform) => {
    const pe = c.platformEvents;
    const id = `${c.eventIds}-${++n}`;
    const event = platform.kind === 'ecs' ? taskStoppedEvent(platform, { code: 137, signal: null }, new Date(clock.now()), id) : instanceStoppedEvent(platform.id, clock.now(), id);
    const delay = () => pe.delayMs[0] + random() * (pe.delayMs[1] - pe.delayMs[0]);
    deliver(event, delay());
    if (random() < pe.duplicate) deliver(event, delay() + 1_000);
    if (random() < pe.late) {
      feed.count('fault:platformLate');
      deliver(event, 60_000 + random() * 240_000);
    }
  };
}
