/**
 * The whole system on one machine: DynamoDB Local with the tables, the same handlers as in AWS
 * wired from the same declaration (lib/wiring.ts) — streams polled through the real Streams API
 * with Lambda's batch semantics, the election timer as an in-memory delay queue, the tick on a
 * timer — EventBridge as a loopback endpoint the real EventBridgeClient publishes to, and IoT Core
 * (the push path) as a loopback MQTT broker the real IoTDataPlaneClient publishes wakes to.
 */
import { randomUUID } from 'node:crypto';
import { closeSync, fstatSync, ftruncateSync, openSync, readFileSync, readSync, writeFileSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { IoTDataPlaneClient } from '@aws-sdk/client-iot-data-plane';
import type { Context } from 'aws-lambda';
import { every, systemClock, type Clock } from '../clock.js';
import { coordinatorDeps } from '../coordinator/reconcile.js';
import { publishOrThrow } from '../events/publisher.js';
import { parseEvent, type ConclaveEvent } from '../events/schemas.js';
import type { FunctionDeps } from '../functions/core.js';
import { observability } from '../functions/env.js';
import { iotWaker } from '../functions/wake.js';
import type { ElectionConfigInput, TableNames } from '../schemas/config.js';
import { boundedClient, requestBoundMs } from '../sdk/bounded-client.js';
import { callBack, faultKind, STILL_FAILING_EVERY_MS } from '../sdk/faults.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION, localClient } from '../stores/client.js';
import { defaultTableNames } from '../tables.js';
import { makeFolder } from '../util/folder.js';
import { rulePattern, wiring, type FunctionName, type FunctionWiring } from '../wiring.js';
import { DelayQueue } from './delay-queue.js';
import { startDynamoDBLocal, type DynamoDBLocal } from './dynamodb-local.js';
import { LOCAL_DEPLOYMENT, startEcsTask, type LocalEcsTask } from './ecs-task.js';
import { startLocalEventBus } from './event-bus.js';
import { matchesPattern } from './event-filter.js';
import { environments } from './environments.js';
import { loadHandler } from './handlers.js';
import { startPushBroker, type PushBroker } from './push-broker.js';
import { startPushBrokerProcess } from './push-broker-process.js';
import { CHECKPOINTS_FILE, CheckpointsNotSaved, loadCheckpoints, olderStreamsToRead, pruneCheckpoints, streamNow, streamsAfter, tableOfStream, type ShardCheckpoints } from './stream-checkpoints.js';
import { StreamPoller, tableStreams, type DeadLetter } from './stream-poller.js';
import { conflictsShowTheItem, lockRuntime, type RuntimeLockLoss } from './runtime-lock.js';
import { createTables } from './tables.js';

/** `fn` with at most `limit` calls running at once; the others wait their turn (Lambda's reserved concurrency). */
export function atMost<A, R>(limit: number, fn: (a: A) => Promise<R>): (a: A) => Promise<R> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (a) => {
    // a waiter is handed the slot of the call that ends, so nobody can slip in between
    if (running >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    else running++;
    try {
      return await fn(a);
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}

export interface LocalRuntimeOptions {
  /** Table name prefix. @default 'conclave-local' */
  prefix?: string;
  /**
   * Where events.jsonl and dead-letters.jsonl go, and, with `endpoint`, stream-checkpoints.json
   * (where the stream functions left each shard, to resume there on the next start). @default .local
   */
  dir?: string;
  /**
   * How the caller's user names `dir`, in the error of a folder that cannot be used: `npm start`'s
   * `--dir`. @default `eventsDir (conclave-local: --events-dir)`, as startLocalConclave and conclave-local name it
   */
  dirNamed?: string;
  /** An already running DynamoDB Local (tests share one); default: start one. */
  endpoint?: string;
  /** Starting one: its 127.0.0.1 port (DynamoDB Local's StartOptions.port). @default a free port */
  port?: number;
  /** Starting one: whether to install Java if it is missing (DynamoDB Local's StartOptions.installJava). @default CONCLAVE_INSTALL_JAVA=1 */
  installJava?: { askedBy: string } | boolean;
  /** The coordinator tick. @default the wiring's schedule (60 s) */
  tickEveryMs?: number;
  config?: ElectionConfigInput;
  clock?: Clock;
  /** Handler log level. @default 'WARN' */
  logLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';
  /** Called for every event published (after it is appended to the events file). */
  onEvent?: (e: LocalEvent) => void;
  /** Called for every batch or message sent to the dead-letter file. */
  onDeadLetter?: (d: DeadLetter) => void;
  /**
   * Wraps the functions' dependencies (fault injection: lost responses, failing publishes). Their
   * `logger` and `metrics` are each execution environment's own, as in Lambda, not the ones given here.
   */
  decorate?: (deps: FunctionDeps) => FunctionDeps;
  /**
   * Stands between every trigger and its function: stream batches, timer messages and ticks pass
   * through `intercept(name, event, invoke)`, which may delay, repeat, reorder or withhold them
   * (fault injection: chaos/). Withholding a tick skips it; holding a batch holds its shard.
   */
  intercept?: (name: FunctionName, event: unknown, invoke: (event: unknown) => Promise<unknown>) => Promise<unknown>;
  /**
   * The push path: a local broker standing in for IoT Core (lib/local/push-broker.ts), to which the
   * lease stream's function publishes a wake for each lease change (and a function whose reconcile
   * wrote a lease, one as it lands). Without it, workers only poll.
   * @default true
   */
  push?: boolean;
  /**
   * Where the push broker runs: in this process, or in a process of its own, as IoT Core is a
   * service of its own (lib/local/push-broker-process.ts): a wake between workers then never waits
   * behind this process's functions, which the same lease write has just set running. Its counts
   * and connection time are on the system clock. @default 'in-process'
   */
  pushBroker?: 'in-process' | 'own-process';
  /**
   * Called once if this runtime's lock is taken over (another runtime judged it not renewed for
   * RUNTIME_LOCK_STALE_MS and runs on this DynamoDB Local and prefix now), with the line saying so,
   * once its functions are stopped: no stream is polled, no timer message, tick or platform event
   * handled from then on (tick() and platformEvent() reject). Stop it then (`stop()`): a process
   * exits non-zero (conclave-local, `npm start`). `loss` says what became of the lock (taken over by
   * whom, or deleted): tell them apart by it, not by the line. What it throws (or rejects with) is a
   * process warning naming it. @default the line on stderr
   */
  onLost?: (line: string, loss: RuntimeLockLoss) => void;
}

/** Beside events.jsonl: the port the push broker last listened on (its CONCLAVE_PUSH_URL). */
export const PUSH_PORT_FILE = 'push-port';

/**
 * The push broker, on the port it had at the last start in `dir` when that port is free: a worker
 * kept running across a restart finds its CONCLAVE_PUSH_URL again, and its wakes come back (on a
 * new port it only polled until restarted). Taken by something else, or never written: a free port.
 */
async function pushBrokerOnLastPort(dir: string, clock: Clock): Promise<PushBroker> {
  const file = join(dir, PUSH_PORT_FILE);
  let last: number | undefined;
  try {
    const n = Number(readFileSync(file, 'utf8').trim());
    if (Number.isInteger(n) && n > 0 && n < 65_536) last = n;
  } catch {
    // none written yet (a first start in this folder): any free port
  }
  const broker = last === undefined ? await startPushBroker({ clock }) : await startPushBroker({ clock, port: last }).catch(() => startPushBroker({ clock }));
  try {
    writeFileSync(file, `${new URL(broker.wsEndpoint).port}\n`);
  } catch {
    // a folder it cannot write to: the events file fails first, and says so
  }
  return broker;
}

/** One event as the local bus received it. */
export interface LocalEvent {
  /** When the bus received it (ISO 8601), as EventBridge's `time`. */
  time: string;
  /** The event's `source`: `conclave`. */
  source: string;
  /** The event's `detail-type`, e.g. `Leader Elected`. */
  detailType: ConclaveEvent['detailType'];
  /** The event's `detail`, parsed with its schema. */
  detail: ConclaveEvent['detail'];
  /** `detailType` and `detail` together, narrowed by `detailType` (`switch (e.event.detailType)`). */
  event: ConclaveEvent;
  /** The event's `resources`: the leases table's ARN, as on AWS (a rule on a shared bus matches it). */
  resources: string[];
}

export interface LocalRuntime {
  endpoint: string;
  /** Java's pid, for a DynamoDB Local of its own (none on an `endpoint` given). */
  dynamoDBLocalPid: number | undefined;
  tables: TableNames;
  eventsFile: string;
  deadLetterFile: string;
  eventBusEndpoint: string;
  /** The push broker's MQTT-over-WebSocket endpoint, `ws://127.0.0.1:<port>/mqtt` (a worker's CONCLAVE_PUSH_URL); none with `push: false`. */
  pushEndpoint: string | undefined;
  /** The push broker: what it carried (`stats()`, IoT Core's billed units) and `outage()`; none with `push: false`. */
  pushBroker: PushBroker | undefined;
  client: DynamoDBClient;
  deps: FunctionDeps;
  events: LocalEvent[];
  deadLetters: DeadLetter[];
  /** Runs the coordinator tick now (as the schedule would); rejects once the runtime's lock is lost (`onLost`). */
  tick(): Promise<unknown>;
  /**
   * An ECS task for a local worker process: its own task metadata endpoint (pass `env` to the
   * process, then `attach` it). When the process exits, ECS's "Task State Change" STOPPED event
   * goes to the platform function, unless `signal` is false (a platform that says nothing). Its
   * metadata names `zone` as its Availability Zone (default LOCAL_ZONE).
   */
  ecsTask(opts?: { signal?: boolean; delayMs?: number; zone?: string }): Promise<LocalEcsTask>;
  /** Puts an event on the default bus: the functions whose rules match it get it, with Lambda's asynchronous retries; rejects once the runtime's lock is lost (`onLost`). */
  platformEvent(event: unknown): Promise<void>;
  /**
   * Stops every part, the last started first. The triggers stop first and the invocations under way
   * finish; requests DynamoDB Local leaves unanswered STOP_GRACE_MS in are abandoned.
   */
  stop(): Promise<void>;
}

const EVENT_BUS = 'conclave-local';

/**
 * How long a request of the runtime's own to DynamoDB Local (the stream pollers' reads, the
 * functions' reads and writes, the tables made at the start) is given, on the runtime's clock,
 * before it is abandoned as a TimeoutError. The SDK sets no request timeout, and nothing here plays
 * Lambda's function timeout: on a DynamoDB Local that accepts a connection and never answers, a
 * poller's read (and so its shard) or a function (and the batch, tick or timer message it runs
 * for) would wait for good, and the stop behind it. Abandoned, it is a fault like an unreachable
 * DynamoDB Local's: a read is told and retried at the poller's backoff, a function fails and its
 * trigger retries it. The lock bounds its own requests (RUNTIME_LOCK_REQUEST_MS).
 */
export const RUNTIME_REQUEST_MS = requestBoundMs(0);

/**
 * How long stop() lets the functions' invocations under way finish (a local invocation takes
 * milliseconds) before it abandons their requests: a DynamoDB Local that answers nothing does not
 * hold up the stop until the requests' bound.
 */
export const STOP_GRACE_MS = 2_500;

/**
 * The Lambda context a local invocation gets (timeout and memory from the wiring). `remainingTime`
 * false: without `getRemainingTimeInMillis` (the simulator's: see sim/functions.ts).
 */
export function lambdaContext(name: FunctionName, clock: Clock = systemClock, remainingTime = true): Context {
  const w = wiring[name];
  const context: Omit<Context, 'getRemainingTimeInMillis'> & Partial<Pick<Context, 'getRemainingTimeInMillis'>> = {
    functionName: `conclave-${name}`,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${LOCAL_DEPLOYMENT.region}:${LOCAL_DEPLOYMENT.account}:function:conclave-${name}`,
    memoryLimitInMB: String(w.memoryMb),
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/conclave-${name}`,
    logStreamName: 'local',
    callbackWaitsForEmptyEventLoop: true,
    // (methods, not arrow properties: tsx names each arrow property at every invocation)
    done() {},
    fail() {},
    succeed() {},
  };
  if (remainingTime) {
    const started = clock.monotonic();
    context.getRemainingTimeInMillis = () => w.timeoutSeconds * 1000 - (clock.monotonic() - started);
  }
  return context as Context;
}

/** `table` as its stream poller follows it: its status and latest stream; undefined when there is no such table. */
async function describeTable(client: DynamoDBClient, table: string): Promise<{ status: string | undefined; latestStreamArn: string | undefined } | undefined> {
  try {
    const d = await client.send(new DescribeTableCommand({ TableName: table }));
    return { status: d.Table?.TableStatus, latestStreamArn: d.Table?.LatestStreamArn };
  } catch (e) {
    if (e instanceof Error && e.name === 'ResourceNotFoundException') return undefined;
    throw e;
  }
}

async function streamArn(client: DynamoDBClient, table: string): Promise<string> {
  const arn = (await describeTable(client, table))?.latestStreamArn;
  if (!arn) throw new Error(`table ${table} has no stream, and Conclave's functions read its changes from one: turn it on (aws dynamodb update-table --table-name ${table} --stream-specification StreamEnabled=true,StreamViewType=NEW_AND_OLD_IMAGES), or delete the table and start local mode again, which creates it as declared`);
  return arn;
}

/** Why a function was not run (the runtime stopped, or stopping, before its lock was confirmed), or why its request was abandoned (the stop). */
class RuntimeStopped extends Error {
  constructor() {
    super('the local runtime is stopped');
  }
}

/** A part of the runtime that is running, and how to stop it. */
interface Part {
  name: string;
  stop: () => Promise<unknown> | void;
}

/** Stops `parts`, the last started first, every one even if one fails; the failures, by part. */
async function stopParts(parts: Part[]): Promise<{ part: string; error: unknown }[]> {
  const failures: { part: string; error: unknown }[] = [];
  for (const p of [...parts].reverse()) {
    try {
      await p.stop();
    } catch (error) {
      failures.push({ part: p.name, error });
    }
  }
  return failures;
}

/** Writes all of `data` at the end of the file open as `fd` (opened to append); throws at the first write that fails, part of `data` perhaps written. */
export type WriteAll = (fd: number, data: Buffer) => void;

const writeAll: WriteAll = (fd, data) => {
  for (let at = 0; at < data.length; ) at += writeSync(fd, data, at);
};

/** What to do about a file that cannot be written, by the error's code. */
const fixFor = (code: string | undefined): string =>
  code === 'ENOSPC' || code === 'EDQUOT' ? 'free space on its disk' : code === 'EROFS' || code === 'EACCES' || code === 'EPERM' ? 'make it writable' : 'free space on its disk, or make it writable';

/**
 * An appender of `entry` to `file` as a JSON line (events.jsonl, dead-letters.jsonl), each line
 * whole or not there. A write cut off part-way (the disk filling under it: ENOSPC) is truncated
 * back to where it began; a file that ends mid-line all the same (the truncation failed too, or
 * another process sharing the folder was cut off) has the next line start on a fresh one: before,
 * the next line was glued onto the torn one, and `conclave events` skipped both.
 *
 * A write that fails (the disk full, the folder read-only) is a process warning naming the file and
 * holding the line, and the runtime goes on: the entry is kept in the runtime's own list (`events`,
 * `deadLetters`) and given to its callback. The first of a run of failures says why and the fix;
 * each later one counts, and the first write that succeeds again says how many lines were not
 * written. Thrown, a failure crashed the process from a timer (a dead letter: an unhandled
 * rejection), or had the event bus publish the event again, appending it once more each time
 * (`events` held it twice), and report it as not published to EventBridge.
 */
export function jsonLines(
  file: string,
  what: { one: string; many: string },
  o: { write?: WriteAll; warn?: (message: string, cause?: unknown) => void } = {},
): (entry: unknown) => void {
  const write = o.write ?? writeAll;
  const warn = o.warn ?? ((message, cause) => process.emitWarning(new Error(message, { cause })));
  /** The run of failures under way: the first one's code, and the lines not written since. */
  let failing: { code: string; lines: number } | undefined;
  return (entry) => {
    const line = JSON.stringify(entry);
    let fd: number | undefined;
    let size = 0;
    try {
      fd = openSync(file, 'a+');
      size = fstatSync(fd).size;
      const last = Buffer.alloc(1);
      const torn = size > 0 && readSync(fd, last, 0, 1, size - 1) === 1 && last[0] !== 0x0a;
      write(fd, Buffer.from(`${torn ? '\n' : ''}${line}\n`));
    } catch (e) {
      if (fd !== undefined) {
        try {
          // the file as it was: no torn line for the next one to be glued onto
          if (fstatSync(fd).size > size) ftruncateSync(fd, size);
        } catch {
          // left torn: the next line starts on a fresh one
        }
      }
      const err = e as NodeJS.ErrnoException;
      const code = err.code ?? err.name;
      if (failing === undefined) {
        failing = { code, lines: 1 };
        warn(
          `local mode could not write ${what.one} to ${file} (${err.message}; the file is left as it was: ${fixFor(err.code)}, and the ${what.many} after that are written to it again; until then each is told here, in memory only); the line it would have written: ${line}`,
          e,
        );
      } else {
        failing.lines++;
        warn(`local mode could not write ${what.one} to ${file} (${code}, ${failing.lines} lines in a row now; the first told why and the fix); the line it would have written: ${line}`, e);
      }
      return;
    } finally {
      try {
        if (fd !== undefined) closeSync(fd);
      } catch {
        // closed all the same
      }
    }
    if (failing !== undefined) {
      warn(`local mode writes ${what.many} to ${file} again: the ${failing.lines} line${failing.lines === 1 ? '' : 's'} before (${failing.code}) ${failing.lines === 1 ? 'was' : 'were'} not written, each told in a warning of its own`);
      failing = undefined;
    }
  };
}

/** The tick as its failures are told. */
const TICK_SOURCE = 'the coordinator tick';

/** `checkpoints` whose saves that succeed end a run of failed ones told through `faults`. */
function saved(checkpoints: ShardCheckpoints, faults: RuntimeFaults): ShardCheckpoints {
  const told = (p: Promise<void> | void): Promise<void> | void => (p === undefined ? p : p.then(() => faults.succeeded(CHECKPOINTS_SOURCE)));
  return {
    get: (streamArn, shardId) => checkpoints.get(streamArn, shardId),
    set: (streamArn, shardId, sequenceNumber) => told(checkpoints.set(streamArn, shardId, sequenceNumber)),
    drop: (streamArn, shardId) => told(checkpoints.drop(streamArn, shardId)),
    open: (streamArn) => told(checkpoints.open(streamArn)),
    // a save only when it wrote something: one with nothing to write says nothing of the file (nor ends an outage of DynamoDB Local)
    retry: async () => {
      const wrote = (await checkpoints.retry?.()) ?? false;
      if (wrote) faults.succeeded(CHECKPOINTS_SOURCE);
      return wrote;
    },
  };
}

/** A logger as the runtime's faults are told with (the functions' Powertools logger). */
interface FaultLog {
  error(message: string, extra: Record<string, unknown>): void;
  warn(message: string, extra: Record<string, unknown>): void;
}

/** What ends a run of failures: a success of `source`, or (DynamoDB Local unreachable) of any source. */
const ANY_SOURCE = '';

/** Where the runtime's checkpoint saves count as one source, whichever function's they are. */
export const CHECKPOINTS_SOURCE = 'the stream checkpoints';

/** The runtime's own failures, each told once as it starts and once as it ends (runtimeFaults). */
export interface RuntimeFaults {
  /** `source` (`the leaseStream function's stream reads`, `the coordinator tick`, CHECKPOINTS_SOURCE) failed with `e`. */
  failed(source: string, e: unknown): void;
  /** `source` succeeded: the runs of its failures are over, and an outage of DynamoDB Local. */
  succeeded(source: string): void;
}

/** The system's code of `e` or an error under it (its cause, an AggregateError's errors): `ECONNREFUSED`, `timed out`; else the error's name. */
function codeOf(e: unknown, depth = 0): string | undefined {
  if (!(e instanceof Error) || depth > 4) return undefined;
  if (e.name === 'TimeoutError') return 'timed out';
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  for (const x of [...((e as { errors?: unknown[] }).errors ?? []), e.cause]) {
    const c = codeOf(x, depth + 1);
    if (c !== undefined) return c;
  }
  return undefined;
}

/** Whether `e`, or an error under it (its cause), is a DynamoDB Local that does not answer. */
function unreachable(e: unknown, depth = 0): boolean {
  return faultKind(e) === 'unreachable' || (e instanceof Error && depth < 4 && e.cause !== undefined && unreachable(e.cause, depth + 1));
}

/**
 * The runtime's repeated failures told once each, as the SDK quiets its own (quietWarnings): a
 * stream read or a tick failing against a DynamoDB Local gone a few seconds logged an ERROR line
 * with the stack at each try, 20 in a 15 s outage. Now a run of the same failure is one line as it
 * starts (the first occurrence's error, with its stack), one "still failing" line a minute (on
 * `clock`) counting the failures since, and one line as it ends. DynamoDB Local unreachable (refused,
 * timed out) is one run whichever source failed, ended by any success; a checkpoint that cannot be
 * saved (CheckpointsNotSaved) is one run for the file, ended by a save; any other failure one per
 * source and error name, ended by that source's success.
 */
export function runtimeFaults(log: FaultLog, endpoint: string, clock: Pick<Clock, 'monotonic'>): RuntimeFaults {
  const runs = new Map<string, { endsOn: string; since: number; toldAt: number; count: number; more: number; still: string; ended: string }>();
  const seconds = (ms: number) => Math.round(ms / 1000);
  return {
    failed(source, e) {
      const now = clock.monotonic();
      const err = e instanceof Error ? e : new Error(String(e));
      let key: string;
      let run: { endsOn: string; first: string; extra: Record<string, unknown>; still: string; ended: string };
      if (err instanceof CheckpointsNotSaved) {
        key = `checkpoints ${err.file} ${err.code}`;
        run = {
          endsOn: CHECKPOINTS_SOURCE,
          first: `${source} could not be saved to ${err.file} (${err.code}): the records handled since the last save are handled again at the next start; ${fixFor(err.code)} (each function goes on reading its streams; repeats are counted once a minute, and the first save that succeeds is told)`,
          extra: { file: err.file, code: err.code, detail: err.message },
          still: `stream checkpoints still cannot be saved to ${err.file} (${err.code}; ${fixFor(err.code)})`,
          ended: `stream checkpoints are saved to ${err.file} again`,
        };
      } else if (unreachable(err)) {
        const code = codeOf(err) ?? err.name;
        key = `unreachable ${code}`;
        run = {
          endsOn: ANY_SOURCE,
          first: `DynamoDB Local at ${endpoint} is unreachable (${code}): ${source} failed, and so do the stream reads and ticks until it answers, each tried again at its backoff; the failures are counted once a minute while it lasts, and its recovery told - if it lasts, see that DynamoDB Local runs there`,
          extra: { endpoint, code, error: err },
          still: `DynamoDB Local at ${endpoint} is still unreachable (${code})`,
          ended: `DynamoDB Local at ${endpoint} answers again`,
        };
      } else {
        key = `${source} ${err.name}`;
        run = {
          endsOn: source,
          first: `${source} failed (${err.name}: ${err.message}); tried again at its backoff, the failures counted once a minute while it lasts, and its recovery told`,
          extra: { endpoint, error: err },
          still: `${source} still failing (${err.name})`,
          ended: `${source} succeed again`,
        };
      }
      const r = runs.get(key);
      if (!r) {
        runs.set(key, { endsOn: run.endsOn, since: now, toldAt: now, count: 1, more: 0, still: run.still, ended: run.ended });
        return log.error(run.first, { source, ...run.extra });
      }
      r.count++;
      r.more++;
      if (now - r.toldAt < STILL_FAILING_EVERY_MS) return;
      log.error(`${r.still}: ${r.more} more failure${r.more === 1 ? '' : 's'} in ${seconds(now - r.toldAt)} s (told once a minute); the last, of ${source}: ${err.message}`, { source });
      r.toldAt = now;
      r.more = 0;
    },
    succeeded(source) {
      if (runs.size === 0) return;
      const now = clock.monotonic();
      for (const [key, r] of runs) {
        if (r.endsOn !== ANY_SOURCE && r.endsOn !== source) continue;
        runs.delete(key);
        log.warn(`${r.ended} (${source}): ${r.count} failure${r.count === 1 ? '' : 's'} in ${seconds(now - r.since)} s before`, { source });
      }
    },
  };
}

/**
 * Starts the runtime. A start that fails part-way stops every part it had started, the last
 * first, and throws the original error: nothing is left holding a port or keeping the caller's
 * process alive (the bus's and the broker's servers, the broker's process, DynamoDB Local).
 */
export async function startLocalRuntime(opts: LocalRuntimeOptions = {}): Promise<LocalRuntime> {
  const parts: Part[] = [];
  try {
    return await start(opts, parts);
  } catch (e) {
    // the original error is the one that matters; a part that also fails to stop is only told
    for (const f of await stopParts(parts)) process.stderr.write(`conclave: local runtime: stopping ${f.part} after a failed start failed too: ${String(f.error)}\n`);
    throw e;
  }
}

/** The start, each part added to `parts` as it starts (stopped by `stop()`, or by the caller if a later one fails). */
async function start(opts: LocalRuntimeOptions, parts: Part[]): Promise<LocalRuntime> {
  const clock = opts.clock ?? systemClock;
  const prefix = opts.prefix ?? 'conclave-local';
  const dir = resolve(opts.dir ?? '.local');
  const eventsFile = join(dir, 'events.jsonl');
  const deadLetterFile = join(dir, 'dead-letters.jsonl');
  try {
    makeFolder(dir);
    // there from the start: `conclave events` finds no events yet, not a missing file
    closeSync(openSync(eventsFile, 'a'));
  } catch (e) {
    // a folder that cannot be made, or is there and cannot be written (read-only: EROFS, EACCES), is named with its option
    throw new Error(`cannot use ${dir} as the events folder, ${opts.dirNamed ?? 'eventsDir (conclave-local: --events-dir)'}: ${(e as Error).message} - name a folder it can write to (made if missing), such as .local`, { cause: e });
  }
  let endpoint = opts.endpoint;
  let ddb: DynamoDBLocal | undefined;
  if (endpoint === undefined) {
    const own = (ddb = await startDynamoDBLocal({ ...(opts.installJava === undefined ? {} : { installJava: opts.installJava }), ...(opts.port === undefined ? {} : { port: opts.port }) }));
    parts.push({ name: 'DynamoDB Local', stop: () => own.stop() });
    endpoint = own.endpoint;
  }
  const client = localClient(endpoint);
  parts.push({ name: 'the DynamoDB client', stop: () => client.destroy() });
  // aborted STOP_GRACE_MS into stop() (with a RuntimeStopped), or once its functions have stopped:
  // a function waiting for its lock to be confirmed (DynamoDB Local unreachable) gives up, and every
  // request of the runtime's own under way is abandoned, rather than hold up the stop until DynamoDB
  // Local answers or the request's bound
  const stopping = new AbortController();
  // the runtime's own requests (the caller's through `client` are the caller's; the lock bounds its
  // own, and its release at the stop is not abandoned so). One abandoned at the stop is a request
  // whose outcome is unknown, as at its bound: a conditional write landed whole or not at all, and
  // nothing more is sent after it (every later request of the invocation fails at once)
  const requests = boundedClient(client, clock, RUNTIME_REQUEST_MS, stopping.signal);
  const tables = defaultTableNames(prefix);
  // a DynamoDB Local the caller named is not there: say where, and the two ways on
  const reached = <T>(p: Promise<T>): Promise<T> =>
    p.catch((e: unknown) => {
      if (opts.endpoint === undefined || faultKind(e) !== 'unreachable') throw e;
      throw new Error(
        `cannot reach DynamoDB Local at ${endpoint}, the endpoint given (conclave-local: --endpoint): ${(e as Error).message} - ` +
          'start DynamoDB Local there, or leave the endpoint out and one of its own is started (Java 17 or later)',
        { cause: e },
      );
    });
  // what the lock's loss stops (set as they start): every trigger of a function, so that this runtime
  // and the one that took its lock over never both handle a record, a timer message, a tick or a platform event
  const lost = { line: undefined as string | undefined, pollers: [] as StreamPoller[], tick: undefined as { cancel(): void } | undefined, timer: undefined as DelayQueue | undefined };
  const lostError = () => new Error(`${lost.line!}: this runtime's functions are stopped; stop it`);
  // before a table is touched: a second runtime on this DynamoDB Local and prefix is refused, naming
  // the first. One on a DynamoDB Local of its own locks too: it prints that endpoint for workers and
  // the CLI, and a `conclave-local --endpoint` given it would otherwise read every stream from its
  // start and publish every event again. The lock is an item in that DynamoDB Local, so it holds
  // whatever each runtime's temp folder or user.
  const lock = await reached(
    lockRuntime(client, endpoint, prefix, {
      clock,
      onLost: (line, loss) => {
        // judged gone and taken over: another runtime runs the functions now, so this one runs none
        // (each stop takes no new work at once; what is under way finishes)
        if (lost.line !== undefined) return;
        lost.line = line;
        lost.tick?.cancel();
        for (const p of lost.pollers) void p.stop();
        void lost.timer?.stop();
        const told = `${line}: this runtime's functions are stopped (its stream pollers, timer queue, tick and platform events): stop it`;
        if (!opts.onLost) return void process.stderr.write(`conclave: local runtime: ${told}\n`);
        // what the caller's callback throws (or rejects with) is a process warning naming it, never lost in the renewal that told it
        callBack(
          () => opts.onLost!(told, loss),
          (thrown) => process.emitWarning(new Error(`startLocalRuntime: onLost threw while told "${told}": ${thrown instanceof Error ? thrown.message : String(thrown)}`, { cause: thrown })),
        );
      },
    }),
  );
  parts.push({ name: 'the runtime lock', stop: () => lock.release() });
  // a DynamoDB Local the caller named may be older than Conclave's stores allow (its own is not)
  if (opts.endpoint !== undefined && !(await reached(conflictsShowTheItem(requests, prefix))))
    throw new Error(
      `the DynamoDB Local at ${endpoint}, the endpoint given (conclave-local: --endpoint), is older than 2.2.0 (December 2023): a write its condition refuses comes back without the item (it ignores ReturnValuesOnConditionCheckFailure), which Conclave relies on to tell whose write a row holds - ` +
        'run DynamoDB Local 2.2.0 or later there (the Docker image amazon/dynamodb-local:latest, or DynamoDBLocal.jar from AWS), or leave the endpoint out and one of its own is started (Java 17 or later)',
    );
  // its own DynamoDB Local killed (the OOM killer, a stray kill) or crashed: its in-memory tables,
  // and the lock in them, are gone for good; the functions would only fail on every poll and tick
  // against a port nobody serves, so they stop as at the lock's loss, and the process is told to stop
  const own = ddb;
  // started again on a free port, it would strand the workers still running at this endpoint: the port is named to start it on
  own?.onExit((how) =>
    lock.lostWithStore(
      `the lock of local mode on table prefix ${prefix} was lost with its DynamoDB Local (Java, pid ${own.pid}), which exited ${how}: its tables were in memory and are gone; ` +
        `start local mode again on the same port (--port ${own.port}, or startLocalConclave({ port: ${own.port} })), so that the workers still running reach it at ${own.endpoint} again`,
    ),
  );
  // a DynamoDB Local the caller named may have these tables from an earlier run (-sharedDb -dbPath,
  // a restart, a crash): reused as they are, rows and streams; one of another shape is refused
  await reached(createTables(requests, tables, opts.endpoint === undefined ? {} : { reuseAt: { endpoint } }));

  const events: LocalEvent[] = [];
  const deadLetters: DeadLetter[] = [];
  const appendEvent = jsonLines(eventsFile, { one: 'an event', many: 'events' });
  const systemEndpoint = endpoint;
  const appendDeadLetter = jsonLines(deadLetterFile, { one: 'a dead letter', many: 'dead letters' });
  const bus = await startLocalEventBus({
    onEvent(entry) {
      const event = parseEvent(entry.detailType, entry.detail);
      const e: LocalEvent = { time: entry.time, source: entry.source, detailType: event.detailType, detail: event.detail, event, resources: entry.resources };
      events.push(e);
      // tagged with the system that wrote it: runtimes of other prefixes, endpoints or earlier runs append to the same file, and `conclave events` shows one system's lines
      appendEvent({ time: e.time, source: e.source, detailType: e.detailType, detail: e.detail, resources: e.resources, tablePrefix: prefix, endpoint: systemEndpoint });
      opts.onEvent?.(e);
    },
  });
  parts.push({ name: 'the event bus', stop: () => bus.stop() });
  const deadLetter = (d: DeadLetter) => {
    deadLetters.push(d);
    appendDeadLetter(d);
    opts.onDeadLetter?.(d);
  };

  // Metrics go to stdout in embedded metric format in Lambda; locally they would drown the story.
  process.env['POWERTOOLS_METRICS_DISABLED'] ??= 'true';
  const eventBridge = new EventBridgeClient({ endpoint: bus.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  parts.push({ name: 'the EventBridge client', stop: () => eventBridge.destroy() });
  const pushBroker = opts.push === false ? undefined : opts.pushBroker === 'own-process' ? await startPushBrokerProcess() : await pushBrokerOnLastPort(dir, clock);
  if (pushBroker) parts.push({ name: 'the push broker', stop: () => pushBroker.stop() });
  // the functions publish wakes through IoT Core's data-plane API, here the broker's
  const iotData = pushBroker && new IoTDataPlaneClient({ endpoint: pushBroker.httpEndpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  if (iotData) parts.push({ name: 'the IoT data-plane client', stop: () => iotData.destroy() });
  const invokers = {} as Record<FunctionName, (event: unknown) => Promise<unknown>>;
  const timer = new DelayQueue({
    trigger: wiring.electionTimer.trigger,
    functionName: 'electionTimer',
    invoke: (e) => invokers.electionTimer(e) as Promise<void>,
    deadLetter,
    clock, // the runtime's, as the tick's, the pollers' and the functions' contexts: a simulated clock decides when a timer message arrives
  });
  parts.push({ name: 'the timer queue', stop: () => timer.stop() });
  lost.timer = timer;
  if (lost.line !== undefined) void timer.stop();
  const logLevel = opts.logLevel ?? 'WARN';
  const leasesTableArn = (await reached(requests.send(new DescribeTableCommand({ TableName: tables.leases })))).Table!.TableArn!;
  const plain: FunctionDeps = {
    coordinator: coordinatorDeps(requests, tables, { ...(opts.clock ? { clock: opts.clock } : {}), ...(opts.config ? { config: opts.config } : {}) }),
    timer,
    // each entry's `resources` names the leases table, as the functions' do on AWS (rules on a shared bus match it)
    publish: async (list) => {
      await publishOrThrow(eventBridge, EVENT_BUS, list, { resources: [leasesTableArn] });
    },
    // the dead-letter file stands in for the function's SQS dead-letter queue
    deadLetter: async (p) => deadLetter({ function: p.function, reason: p.reason, records: [{ eventID: p.eventID, sequenceNumber: p.sequenceNumber, record: p.record }], at: p.at }),
    // its metrics name the deployment as on AWS: the leases table's name
    ...observability('local', logLevel, tables.leases),
    ...(iotData ? { wake: iotWaker(iotData, tables.leases, { clock }) } : {}),
  };
  const deps = opts.decorate ? opts.decorate(plain) : plain;

  // The same handler modules Lambda runs, built with local dependencies, one handler per execution
  // environment, each with a Powertools Logger and Metrics of its own: two invocations at once (a
  // stream's shards, the timer queue's messages) run in two environments, as in Lambda, so neither
  // logs with the other's context (its request id, the keys its record appended)
  for (const name of Object.keys(wiring) as FunctionName[]) {
    const envs = await environments(() => loadHandler(name, { ...deps, ...observability('local', logLevel, tables.leases) }));
    const invoke = (event: unknown) => envs.run((handler) => handler(event, lambdaContext(name, clock)));
    const intercept = opts.intercept;
    const limit = (wiring[name] as FunctionWiring).reservedConcurrency;
    const intercepted = intercept ? (event: unknown) => intercept(name, event, invoke) : invoke;
    // only while the lock is surely this runtime's: past RUNTIME_LOCK_SURE_MS since its last renewal
    // (this process paused, its renewals failing) it is confirmed first, so that a runtime whose lock
    // was taken over meanwhile runs nothing more beside the taker (the confirmation finds it lost and
    // stops every trigger); while it is sure, no I/O
    const invoker = async (event: unknown) => {
      if (!(await lock.held(stopping.signal))) throw lost.line === undefined ? new RuntimeStopped() : lostError();
      return intercepted(event);
    };
    invokers[name] = limit === undefined ? invoker : atMost(limit, invoker);
  }

  // Functions on rules of the default bus (the platform function): an event that matches a
  // pattern is delivered asynchronously — on an error Lambda retries `retryAttempts` times, then
  // the event goes to the dead-letter file. An event no rule matches goes nowhere.
  const pendingAsync = new Set<Promise<void>>();
  const deliverPlatformEvent = async (event: unknown): Promise<void> => {
    if (lost.line !== undefined) return;
    const runs = (Object.keys(wiring) as FunctionName[]).flatMap((name) => {
      const t: FunctionWiring['trigger'] = wiring[name].trigger;
      if (t.kind !== 'events' || !t.patterns.some((p) => matchesPattern(rulePattern(p, LOCAL_DEPLOYMENT), event))) return [];
      const run = (async () => {
        let last: Error | undefined;
        for (let attempt = 0; attempt <= t.retryAttempts; attempt++) {
          if (lost.line !== undefined) return; // the lock lost meanwhile: no retry
          try {
            await invokers[name](event);
            return;
          } catch (e) {
            // not run, or its requests abandoned by the stop: no failure of the function's (no retry, no dead letter)
            if (e instanceof RuntimeStopped || stopping.signal.aborted) return;
            last = e as Error;
            await clock.sleep(200 * (attempt + 1));
          }
        }
        const id = (event as { id?: unknown } | undefined)?.id;
        deadLetter({ function: name, reason: `handler threw: ${last?.message}`, records: [{ eventID: typeof id === 'string' ? id : '(no id)' }], at: new Date(clock.now()).toISOString() });
      })();
      pendingAsync.add(run);
      void run.finally(() => pendingAsync.delete(run));
      return [run];
    });
    await Promise.all(runs);
  };
  const platformEvent = async (event: unknown): Promise<void> => {
    if (lost.line !== undefined) throw lostError();
    await deliverPlatformEvent(event);
  };
  const tasks = new Set<LocalEcsTask>();
  const ecsTask = async (o: { signal?: boolean; delayMs?: number; zone?: string } = {}) => {
    const task: LocalEcsTask = await startEcsTask((event) => {
      tasks.delete(task);
      if (!task.signal) return;
      clock.setTimer(o.delayMs ?? 0, () => void deliverPlatformEvent(event));
    }, o.zone, clock);
    task.signal = o.signal ?? true;
    tasks.add(task);
    return task;
  };

  // On a DynamoDB Local the caller named, the tables and streams outlive this run: each shard is
  // resumed where the last run finished, as an event source mapping does, not read again from
  // TRIM_HORIZON (the earlier runs' events published again). One this runtime started is in memory,
  // its streams new: nothing is kept, and a file left by an endpoint run is not read.
  // the stream reads', the checkpoint saves' and the tick's failures: a run of one told as it starts and ends, not at each try
  const faults = runtimeFaults(plain.logger, endpoint, clock);
  const checkpoints = opts.endpoint === undefined ? undefined : loadCheckpoints(join(dir, CHECKPOINTS_FILE), opts.endpoint, (message, extra) => plain.logger.warn(message, extra), clock);
  const streamsClient = new DynamoDBStreamsClient({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  parts.push({ name: 'the DynamoDB Streams client', stop: () => streamsClient.destroy() });
  const streams = boundedClient(streamsClient, clock, RUNTIME_REQUEST_MS, stopping.signal);
  const pollers = lost.pollers;
  parts.push({
    name: 'the stream pollers',
    stop: async () => {
      await Promise.all(pollers.map((p) => p.stop()));
      // checkpoints a full disk kept from the file, tried once more with the pollers stopped: each one
      // saved is a batch the next start does not handle again (before: never tried again)
      await checkpoints?.retry().catch((e: unknown) =>
        plain.logger.error(`${(e as Error).message} at the stop: the records handled since the last save are handled again at the next start`, e instanceof CheckpointsNotSaved ? { file: e.file, code: e.code } : {}),
      );
    },
  });
  const streamed = (Object.keys(wiring) as FunctionName[]).flatMap((name) => {
    const trigger = wiring[name].trigger;
    return trigger.kind === 'stream' ? [{ name, trigger }] : [];
  });
  const arns = new Map<string, string>();
  for (const { trigger } of streamed) arns.set(trigger.table, await streamArn(requests, tables[trigger.table]));
  // each function's streams as the checkpoints had them before pruning: the newest of a table's is where
  // its changes were read up to, whether or not pruning keeps it (one read to its end is dropped)
  let had: ReturnType<NonNullable<typeof checkpoints>['streams']> = [];
  if (checkpoints) {
    // a file of before each function's positions were kept apart: the one position of a stream of this
    // prefix's tables becomes each of its functions', so each resumes where it was
    await checkpoints.adopt((arn) => streamed.filter(({ trigger }) => tables[trigger.table] === tableOfStream(arn)).map(({ name }) => name));
    had = checkpoints.streams();
    // before any poller writes: the entries no one will read again (streams gone, or done and not
    // read by this run: a table made again, a prefix used once), so the file does not grow for ever
    await pruneCheckpoints(checkpoints, new Set(arns.values()), (arn, shards) => streamNow(streams, arn, shards), (message, extra) => plain.logger.warn(message, extra));
  }
  for (const { name, trigger } of streamed) {
    const latest = arns.get(trigger.table)!;
    const table = tables[trigger.table];
    // the table made again while local mode was down: its older streams' changes after their
    // checkpoints (the entries pruning kept: still listed, not read to their end) come first, and
    // so do those of every stream it had since the newest checkpointed one (made again more than
    // once: each one in between, without a checkpoint, read from TRIM_HORIZON), oldest first
    const read = checkpoints ? olderStreamsToRead(checkpoints.streams().filter((s) => s.function === name).map((s) => s.streamArn), latest) : [];
    const since = olderStreamsToRead(had.filter((s) => s.function === name).map((s) => s.streamArn), latest).at(-1);
    let between: string[] = [];
    if (since !== undefined) {
      try {
        between = streamsAfter(await tableStreams(streams, table), since);
      } catch (e) {
        plain.logger.error(
          `table ${table}'s streams could not be listed (${String(e)}): the ${name} function does not read the changes of any stream the table had between ${since} (its checkpoint) and ${latest} (made again more than once while local mode was down)`,
          { function: name, table, stream: since, newStream: latest },
        );
      }
    }
    const older = olderStreamsToRead([...read, ...between], latest);
    if (older.length) {
      plain.logger.warn(
        `table ${table} was made again since the last run: the ${name} function reads the rest of its older stream${older.length > 1 ? 's' : ''} (from the checkpoints${between.some((s) => !read.includes(s) && s !== latest) ? '; one made since, without one, from TRIM_HORIZON' : ''}) before its newest`,
        { function: name, table, olderStreams: older, stream: latest },
      );
    }
    const poller = new StreamPoller({
      client: streams,
      streamArn: older[0] ?? latest,
      ...(older.length ? { then: [...older.slice(1), latest] } : {}),
      // a table deleted and created again while local mode runs: its new stream is followed (told once)
      table: { name: table, describe: () => describeTable(requests, table) },
      // a table gone with the lock's (DynamoDB Local started again empty): the lock's loss, found by
      // this renewal, stops the pollers before one tells of a later look for its table (a failed
      // renewal is the heartbeat's to tell)
      confirmRunning: () => lock.renew(),
      log: { warn: (message, extra) => plain.logger.warn(message, extra), error: (message, extra) => plain.logger.error(message, extra) },
      // its own positions, as each event source mapping has: another function on the stream moves on at its own pace
      ...(checkpoints ? { checkpoints: saved(checkpoints.of(name), faults) } : {}),
      trigger,
      functionName: name,
      invoke: (e) => invokers[name](e) as Promise<void>,
      deadLetter,
      // as Lambda's poller's failures show in the function's metrics, not nowhere; a checkpoint that
      // cannot be saved (the disk full) fails the read it ends, and is told as what it is
      onError: (e) => faults.failed(e instanceof CheckpointsNotSaved ? CHECKPOINTS_SOURCE : `the ${name} function's stream reads`, e),
      onRead: () => faults.succeeded(`the ${name} function's stream reads`),
    });
    pollers.push(poller);
    if (lost.line === undefined) poller.start();
  }
  parts.push({
    name: 'the ECS tasks and platform events',
    stop: async () => {
      await Promise.all([...tasks].map((t) => t.close()));
      await Promise.all(pendingAsync);
    },
  });

  const tickEveryMs = opts.tickEveryMs ?? wiring.coordinator.trigger.everySeconds * 1000;
  const tick = () => invokers.coordinator({ 'detail-type': 'Scheduled Event', source: 'aws.events', time: new Date(clock.now()).toISOString() });
  let ticking: Promise<unknown> = Promise.resolve();
  let inFlight = false;
  const tickTimer = every(clock, tickEveryMs, () => {
    // a tick still running: this one would be throttled and age out (maxEventAge is one tick)
    if (inFlight) return;
    inFlight = true;
    ticking = tick()
      .then(
        () => faults.succeeded(TICK_SOURCE),
        // the lock lost (its functions stopped, the process told to stop): told once as that, not as a tick to retry
        (e: unknown) => void (e instanceof RuntimeStopped || stopping.signal.aborted || lost.line !== undefined || faults.failed(TICK_SOURCE, e)),
      )
      .finally(() => (inFlight = false));
  });
  lost.tick = tickTimer;
  if (lost.line !== undefined) tickTimer.cancel();
  parts.push({
    name: 'the tick',
    stop: async () => {
      tickTimer.cancel();
      await ticking;
    },
  });

  return {
    endpoint,
    dynamoDBLocalPid: ddb?.pid,
    tables,
    eventsFile,
    deadLetterFile,
    eventBusEndpoint: bus.endpoint,
    pushEndpoint: pushBroker?.wsEndpoint,
    pushBroker,
    client,
    deps,
    events,
    deadLetters,
    tick: async () => {
      if (lost.line !== undefined) throw lostError();
      return tick();
    },
    ecsTask,
    platformEvent,
    // the parts, the last started first: the tick, the ECS tasks and platform events, the
    // pollers, the timer queue, the broker, the bus, DynamoDB Local; a part that fails to stop
    // does not keep the others running
    async stop() {
      // the triggers stop first and what the functions are running is let finish (a record half done
      // would be told failed and read again at the next start); what DynamoDB Local leaves unanswered
      // past the grace is abandoned
      const grace = clock.setTimer(STOP_GRACE_MS, () => stopping.abort(new RuntimeStopped()));
      const failures = await stopParts(parts);
      grace.cancel();
      stopping.abort(new RuntimeStopped());
      if (failures.length) throw new Error(`stopping the local runtime: ${failures.map((f) => `${f.part}: ${String(f.error)}`).join('; ')}`, { cause: failures[0]!.error });
    },
  };
}
