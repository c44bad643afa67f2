/**
 * Stand-ins for DynamoDBClient and DynamoDBStreamsClient: `send(new XCommand(input))` dispatches
 * on the command's class straight to the model — no serialization, no signing, no HTTP. They are
 * instances of the real client classes (`instanceof DynamoDBClient` holds, so the SDK's paginators
 * accept them) whose `send` never touches the real machinery.
 *
 * What the network and the SDK add in between is the simulator's: `intercept` sees every
 * attempt and decides when (and whether) it reaches the model, and the client retries what the
 * SDK's standard retry mode retries. Middleware added with `middlewareStack.add` (the SDK's
 * server clock reads each response's `Date` header) runs around every attempt that got a
 * response, with a `Date` header from the model's clock.
 */
import {
  BatchGetItemCommand,
  BatchWriteItemCommand,
  CreateTableCommand,
  DeleteItemCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  GetItemCommand,
  ListTablesCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  ListStreamsCommand,
  ResourceNotFoundException as StreamResourceNotFoundException,
  TrimmedDataAccessException,
  type GetShardIteratorCommandInput,
} from '@aws-sdk/client-dynamodb-streams';
import { batchGetItem, batchWriteItem } from './batches.js';
import { createTable, deleteTable, describeTable, listTables } from './control-plane.js';
import type { Engine } from './engine.js';
import { UnsupportedByModelError, isRetryable, validationError } from './errors.js';
import { deleteItem, getItem, putItem, updateItem } from './items.js';
import { query } from './query.js';
import { scan } from './scan.js';
import { sequenceNumber } from './streams.js';
import { transactWriteItems } from './transactions.js';
import { describeTimeToLive, updateTimeToLive } from './ttl.js';

/** One attempt of one request, as `intercept` sees it. */
export interface ModelRequest {
  /** The operation: `GetItem`, `UpdateItem`, `TransactWriteItems`, `GetRecords`… */
  readonly operation: string;
  /** The command's input, as sent (do not change it). */
  readonly input: unknown;
  /** The client's name (ModelClientOptions.name). */
  readonly client: string;
  /** 1 for the first attempt; the client's own retries count up. */
  readonly attempt: number;
  /** The request's abort signal (send's `abortSignal` option), as the SDK hands it to its request handler: it aborts when the caller abandons the request. */
  readonly abortSignal?: AbortSignal;
}

/**
 * Runs the operation on the model, now: returns its output or throws DynamoDB's error. Each call
 * applies it again (a duplicated request).
 */
export type Apply = () => unknown;

/**
 * Between an attempt and the model. The default applies at once and answers. A simulator can
 * wait on its simulated clock before `apply()` (latency, reordering), throw instead of applying
 * (a lost request, `faults.provisionedThroughputExceeded()`), apply and then throw
 * (`faults.timeout()`: applied, answer lost), or apply twice (a duplicate).
 */
export type Intercept = (request: ModelRequest, apply: Apply) => Promise<unknown>;

/** How one client of the model behaves: its name, its network (intercept) and the SDK's retries. */
export interface ModelClientOptions {
  /** Names the client in `intercept`'s requests and in request ids. @default 'client' */
  readonly name?: string;
  /** Stands between each attempt and the model. @default apply at once */
  readonly intercept?: Intercept;
  /** Attempts per request: errors the SDK's standard mode retries are retried. @default 3 (the SDK's default) */
  readonly maxAttempts?: number;
  /** Waits between attempts (on simulated time: the SDK backs off). @default no wait */
  readonly backoff?: (attempt: number, error: unknown) => Promise<void>;
}

type Middleware = (next: (args: unknown) => Promise<unknown>, context: unknown) => (args: unknown) => Promise<unknown>;

type Operation = readonly [name: string, run: (engine: Engine, input: never) => unknown];

/**
 * What `intercept` calls to run one request on the model. Made here rather than as a named closure
 * in `send`, as are the middleware's handler (`terminal`): under tsx every named closure costs a
 * `__name` call (esbuild's keepNames), and these are made for every request the simulator sends.
 */
const applier = (engine: Engine, run: Operation[1], input: unknown): Apply => () => run(engine, input as never);

/** Where an attempt's own part travels in the middleware's arguments. */
const EXCHANGE = Symbol('exchange');
interface Exchange {
  readonly request: ModelRequest;
  readonly apply: Apply;
  readonly outcome: Outcome;
}
/** What came of an attempt that went through the middleware. */
interface Outcome {
  result?: { ok: true; value: unknown } | { ok: false; error: unknown };
}

const OPERATIONS = new Map<unknown, Operation>([
  [GetItemCommand, ['GetItem', getItem]],
  [PutItemCommand, ['PutItem', putItem]],
  [UpdateItemCommand, ['UpdateItem', updateItem]],
  [DeleteItemCommand, ['DeleteItem', deleteItem]],
  [QueryCommand, ['Query', query]],
  [ScanCommand, ['Scan', scan]],
  [BatchGetItemCommand, ['BatchGetItem', batchGetItem]],
  [BatchWriteItemCommand, ['BatchWriteItem', batchWriteItem]],
  [TransactWriteItemsCommand, ['TransactWriteItems', transactWriteItems]],
  [CreateTableCommand, ['CreateTable', createTable]],
  [DescribeTableCommand, ['DescribeTable', describeTable]],
  [DeleteTableCommand, ['DeleteTable', deleteTable]],
  [ListTablesCommand, ['ListTables', listTables]],
  [UpdateTimeToLiveCommand, ['UpdateTimeToLive', updateTimeToLive]],
  [DescribeTimeToLiveCommand, ['DescribeTimeToLive', describeTimeToLive]],
]);

let dateSecond = NaN;
let dateText = '';
/** Date headers by epoch second: a simulator's worlds all start at one time, so they share their seconds. */
const dateTexts = new Map<number, string>();
/** Bounded: a day of distinct seconds. */
const MAX_DATE_TEXTS = 86_400;
/** A response's `Date` header (whole seconds): made once per second of the model's clock, not once per response. */
function httpDate(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== dateSecond) {
    let text = dateTexts.get(second);
    if (text === undefined) {
      text = new Date(second * 1000).toUTCString();
      if (dateTexts.size >= MAX_DATE_TEXTS) dateTexts.clear();
      dateTexts.set(second, text);
    }
    dateSecond = second;
    dateText = text;
  }
  return dateText;
}

/** An error that came with an HTTP response (DynamoDB answered), as opposed to a lost answer. */
const answered = (e: unknown): boolean => e instanceof Error && (e as { $metadata?: unknown }).$metadata !== undefined && (e as { $fault?: unknown }).$fault !== undefined;

/** The parts of a client both stand-ins share: attempts, retries, middleware, metadata. */
class Sender {
  private readonly middlewares: Middleware[] = [];
  private requests = 0;
  readonly name: string;
  readonly maxAttempts: number;

  constructor(
    private readonly engine: Engine,
    private readonly operations: ReadonlyMap<unknown, Operation>,
    private readonly o: ModelClientOptions,
    private readonly kind: string,
  ) {
    this.name = o.name ?? 'client';
    this.maxAttempts = Math.max(1, o.maxAttempts ?? 3);
  }

  /** The minimal middleware stack: `add` is what the SDK's server clock uses. */
  readonly middlewareStack = {
    add: (mw: Middleware) => {
      this.middlewares.push(mw);
      this.stackVersion++;
    },
    addRelativeTo: (mw: Middleware) => {
      this.middlewares.push(mw);
      this.stackVersion++;
    },
    remove: (mw: unknown) => {
      const i = this.middlewares.indexOf(mw as Middleware);
      if (i < 0) return false;
      this.middlewares.splice(i, 1);
      this.stackVersion++;
      return true;
    },
    use: (plugin: { applyToStack: (stack: unknown) => void }) => plugin.applyToStack(this.middlewareStack),
  };

  send(command: { input: unknown; constructor: unknown }, options?: { abortSignal?: AbortSignal }): Promise<unknown> {
    const op = this.operations.get(command.constructor);
    if (!op) return Promise.reject(new UnsupportedByModelError(`${(command.constructor as { name?: string }).name ?? 'this command'} on a ${this.kind}`));
    const [operation, run] = op;
    let input = command.input as Record<string, unknown>;
    this.requests++;
    // The SDK fills in a transaction's idempotency token once per request: its retries reuse it.
    if (operation === 'TransactWriteItems' && input['ClientRequestToken'] === undefined) input = { ...input, ClientRequestToken: this.engine.newClientToken() };
    if (!this.o.intercept && this.middlewares.length === 0) {
      // fast path: no network to simulate
      try {
        return Promise.resolve(this.ok(run(this.engine, input as never), 1));
      } catch (e) {
        return Promise.reject(this.failed(e, 1)); // the model's own errors are never retried
      }
    }
    return this.attempts(operation, input, applier(this.engine, run, input), 1, options?.abortSignal);
  }

  private ok(out: unknown, attempts: number): unknown {
    (out as { $metadata: unknown }).$metadata = { httpStatusCode: 200, requestId: `${this.name}-${this.requests}`, attempts, totalRetryDelay: 0 };
    return out;
  }

  private failed(e: unknown, attempts: number): unknown {
    const m = (e as { $metadata?: Record<string, unknown> }).$metadata;
    if (m) Object.assign(m, { attempts, requestId: `${this.name}-${this.requests}` });
    return e;
  }

  /** The request's attempts: the first one's chain without an async function (most succeed), retries as the SDK makes them. */
  private attempts(operation: string, input: unknown, apply: Apply, attempt: number, signal: AbortSignal | undefined): Promise<unknown> {
    let answer: Promise<unknown>;
    try {
      answer = this.attempt(operation, input, apply, attempt, signal);
    } catch (e) {
      answer = Promise.reject(e);
    }
    return answer.then(
      (value) => this.ok(value, attempt),
      (e: unknown) => this.retry(e, operation, input, apply, attempt, signal),
    );
  }

  /** One attempt: the exchange over the network (`intercept`), inside the middleware when there is some. */
  private attempt(operation: string, input: unknown, apply: Apply, attempt: number, signal: AbortSignal | undefined): Promise<unknown> {
    const request: ModelRequest = signal ? { operation, input, client: this.name, attempt, abortSignal: signal } : { operation, input, client: this.name, attempt };
    if (this.middlewares.length === 0) return this.exchange(request, apply);
    const outcome: Outcome = {};
    return this.chain(operation)({ input: request.input, request: {}, [EXCHANGE]: { request, apply, outcome } }).then(() => {
      const result = outcome.result;
      if (!result) throw new Error('a middleware did not call next()');
      if (!result.ok) throw result.error;
      return result.value;
    });
  }

  private async retry(e: unknown, operation: string, input: unknown, apply: Apply, attempt: number, signal: AbortSignal | undefined): Promise<unknown> {
    if (attempt >= this.maxAttempts || !isRetryable(e)) throw this.failed(e, attempt);
    await this.o.backoff?.(attempt, e);
    return this.attempts(operation, input, apply, attempt + 1, signal);
  }

  private exchange(request: ModelRequest, apply: Apply): Promise<unknown> {
    return this.o.intercept ? this.o.intercept(request, apply) : Promise.resolve().then(apply);
  }

  /**
   * The middleware around the exchange for one operation, composed once (again when the middleware
   * changes), with its command's context as the SDK gives it: the attempt's own part — request,
   * apply, outcome — travels in the handler's arguments (under EXCHANGE), which every middleware
   * passes on, so no handler is made per request.
   */
  private chain(operation: string): (args: unknown) => Promise<unknown> {
    if (this.composedAt !== this.stackVersion) {
      this.composed.clear();
      this.composedAt = this.stackVersion;
    }
    let handler = this.composed.get(operation);
    if (!handler) {
      const context = { clientName: 'DynamoDBClient', commandName: `${operation}Command` };
      let h = (args: unknown) => this.terminal((args as { [EXCHANGE]: Exchange })[EXCHANGE]);
      for (let i = this.middlewares.length - 1; i >= 0; i--) h = this.middlewares[i]!(h, context);
      handler = h;
      this.composed.set(operation, handler);
    }
    return handler;
  }
  private readonly composed = new Map<string, (args: unknown) => Promise<unknown>>();
  private composedAt = -1;
  /** Bumped by every change to the middleware. */
  private stackVersion = 0;

  /** The middleware's innermost handler: the exchange as an HTTP response, its `Date` from the model's clock; what came of it goes into `outcome`. */
  private terminal({ request, apply, outcome }: Exchange): Promise<unknown> {
    // (a reaction, not an async function: one promise fewer per request, the same turns)
    let exchanged: Promise<unknown>;
    try {
      exchanged = this.exchange(request, apply);
    } catch (e) {
      exchanged = Promise.reject(e);
    }
    return exchanged.then(
      (value: unknown) => this.answer(outcome, { ok: true, value }),
      (e: unknown) => {
        if (!answered(e)) throw e; // no response: nothing for the middleware to read
        return this.answer(outcome, { ok: false, error: e });
      },
    );
  }

  /** What came of an exchange, into `outcome`, as the HTTP response the middleware reads. */
  private answer(outcome: Outcome, r: NonNullable<Outcome['result']>): unknown {
    outcome.result = r;
    return { output: r.ok ? r.value : undefined, response: { statusCode: r.ok ? 200 : 400, headers: { date: httpDate(this.engine.o.now()) } } };
  }
}

/** Makes `sender` look like an instance of `Client` without running its constructor. */
function standIn<C extends object>(Client: { prototype: C }, sender: Sender, region: string): C {
  const c = Object.create(Client.prototype) as Record<string, unknown>;
  c['send'] = (command: { input: unknown; constructor: unknown }, options?: { abortSignal?: AbortSignal }) => sender.send(command, options);
  c['destroy'] = () => undefined;
  c['middlewareStack'] = sender.middlewareStack;
  // an endpoint of its own, so a fault names the model, not the Region's endpoint (whose advice, for region 'local', is local mode's)
  const endpoint = { protocol: 'model:', hostname: 'dynamodb-model', path: '/' };
  c['config'] = { region: () => Promise.resolve(region), endpoint: () => Promise.resolve(endpoint), maxAttempts: () => Promise.resolve(sender.maxAttempts) };
  return c as C;
}

/** A DynamoDBClient whose requests go to the model's engine. */
export function modelClient(engine: Engine, opts: ModelClientOptions = {}): DynamoDBClient {
  return standIn(DynamoDBClient, new Sender(engine, OPERATIONS, opts, 'DynamoDBClient (the DynamoDB model)'), engine.o.region);
}

// ---- DynamoDB Streams ----

const streamNotFound = (what: string) => new StreamResourceNotFoundException({ message: `Requested resource not found: ${what}`, $metadata: { httpStatusCode: 400 } });

interface Iterator {
  arn: string;
  shardId: string;
  after: number;
}

const encodeIterator = (i: Iterator) => `${i.arn}|${i.shardId}|${i.after}`;

function decodeIterator(s: string | undefined): Iterator {
  const parts = (s ?? '').split('|');
  const after = Number(parts.at(-1));
  if (parts.length < 3 || !Number.isInteger(after)) throw validationError('Invalid ShardIterator');
  return { arn: parts.slice(0, -2).join('|'), shardId: parts.at(-2)!, after };
}

function streamOf(engine: Engine, arn: string | undefined) {
  const s = arn === undefined ? undefined : engine.streams.get(arn);
  if (!s) throw streamNotFound(`Stream: ${arn}`);
  return s;
}

function shardOf(engine: Engine, arn: string | undefined, shardId: string | undefined) {
  const s = streamOf(engine, arn);
  if (!shardId || !s.shardIds().includes(shardId)) throw streamNotFound(`Shard: ${shardId} in stream ${arn}`);
  return s;
}

const STREAM_OPERATIONS = new Map<unknown, Operation>([
  [
    DescribeStreamCommand,
    [
      'DescribeStream',
      (e, i: { StreamArn?: string }) => {
        const s = streamOf(e, i.StreamArn);
        return {
          StreamDescription: {
            StreamArn: s.arn,
            StreamLabel: s.label,
            StreamStatus: s.enabled ? 'ENABLED' : 'DISABLED',
            StreamViewType: s.viewType,
            CreationRequestDateTime: new Date(s.createdAt),
            TableName: s.table,
            KeySchema: s.keyNames.map((k, n) => ({ AttributeName: k, KeyType: n === 0 ? 'HASH' : 'RANGE' })),
            Shards: s.shardIds().map((ShardId) => ({ ShardId, SequenceNumberRange: { StartingSequenceNumber: sequenceNumber(s.bounds(ShardId).first ?? 0) } })),
          },
          $metadata: {},
        };
      },
    ],
  ],
  [
    GetShardIteratorCommand,
    [
      'GetShardIterator',
      (e, i: GetShardIteratorCommandInput) => {
        const s = shardOf(e, i.StreamArn, i.ShardId);
        const seq = i.SequenceNumber === undefined ? undefined : Number(i.SequenceNumber);
        let after: number;
        if (i.ShardIteratorType === 'TRIM_HORIZON') after = -1;
        else if (i.ShardIteratorType === 'LATEST') after = e.lastSequence;
        else if ((i.ShardIteratorType === 'AT_SEQUENCE_NUMBER' || i.ShardIteratorType === 'AFTER_SEQUENCE_NUMBER') && seq !== undefined && Number.isInteger(seq))
          after = i.ShardIteratorType === 'AT_SEQUENCE_NUMBER' ? seq - 1 : seq;
        else throw validationError('Invalid ShardIteratorType, or SequenceNumber missing');
        return { ShardIterator: encodeIterator({ arn: s.arn, shardId: i.ShardId!, after }), $metadata: {} };
      },
    ],
  ],
  [
    GetRecordsCommand,
    [
      'GetRecords',
      (e, i: { ShardIterator?: string; Limit?: number }) => {
        const it = decodeIterator(i.ShardIterator);
        const s = shardOf(e, it.arn, it.shardId);
        const limit = i.Limit ?? 1000;
        if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw validationError('Limit must be between 1 and 1000');
        const { records, trimmed } = s.entries(it.shardId, it.after, limit);
        if (trimmed) throw new TrimmedDataAccessException({ message: 'The operation attempted to read past the oldest stream record in a shard.', $metadata: { httpStatusCode: 400 } });
        const after = records.at(-1)?.seq ?? it.after;
        const open = s.enabled || s.entries(it.shardId, after, 1).records.length > 0;
        return { Records: records.map((r) => s.toStreamsApi(r)), ...(open ? { NextShardIterator: encodeIterator({ ...it, after }) } : {}), $metadata: {} };
      },
    ],
  ],
  [
    ListStreamsCommand,
    [
      'ListStreams',
      (e, i: { TableName?: string }) => ({
        Streams: [...e.streams.values()].filter((s) => s.enabled && (i.TableName === undefined || s.table === i.TableName)).map((s) => ({ StreamArn: s.arn, TableName: s.table, StreamLabel: s.label })),
        $metadata: {},
      }),
    ],
  ],
]);

/** A DynamoDBStreamsClient reading the model's streams (so lib/local/stream-poller.ts runs on the model). */
export function modelStreamsClient(engine: Engine, opts: ModelClientOptions = {}): DynamoDBStreamsClient {
  return standIn(DynamoDBStreamsClient, new Sender(engine, STREAM_OPERATIONS, opts, 'DynamoDBStreamsClient (the DynamoDB model)'), engine.o.region);
}
