import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { modelClient, modelStreamsClient, type ModelClientOptions } from './client.js';
import { Engine } from './engine.js';
import { tableNotFound } from './errors.js';
import type { ModelStream } from './streams.js';
import { sweepTtl } from './ttl.js';
import { exportItem } from './values.js';

/** How the model behaves; time and randomness come from the caller. */
export interface DynamoDBModelOptions {
  /**
   * DynamoDB's clock, epoch ms: TTL expiry, stream record times, stale-read windows, the `Date`
   * header the SDK's server clock reads. Never the machine's clock unless the caller passes it.
   */
  readonly now: () => number;
  /**
   * [0, 1): which version an eventually consistent read returns. Required when
   * `staleReadMaxLagMs` > 0, so runs repeat; unused otherwise.
   */
  readonly random?: () => number;
  /**
   * How old a version an eventually consistent read (GetItem, Query, Scan, BatchGetItem without
   * ConsistentRead; every GSI query) may return: a read at `now` sees the item as it was at
   * `now − random() × lag`. @default 0 (every read sees the newest version)
   */
  readonly staleReadMaxLagMs?: number;
  /**
   * Shards per stream; a record's shard is a hash of its partition key, so one item's records
   * stay in order in one shard. @default 1 (one shard per table, as DynamoDB Local)
   */
  readonly streamShards?: number;
  /** How long stream records are kept, by `now`. @default 24 hours (DynamoDB Streams' retention) */
  readonly streamRetentionMs?: number;
  /** The region in ARNs and stream records. @default 'local' */
  readonly region?: string;
  /** Refuse items over 400 KB, as DynamoDB does. @default true */
  readonly checkItemSize?: boolean;
}

/** An item TTL deleted. */
export interface TtlDeletion {
  readonly table: string;
  readonly key: Record<string, AttributeValue>;
}

/**
 * An in-memory DynamoDB, limited to the operations Conclave uses and with their semantics:
 * conditional writes and transactions, expressions, eventually consistent reads, a GSI, streams
 * and TTL. Code under test talks to it through `client()`, a stand-in for DynamoDBClient, so the
 * real stores, SDK and handlers run on it unchanged, on simulated time, at in-memory speed.
 * test/sim/contract.test.ts runs the same cases on it and on DynamoDB Local.
 *
 * Operations: GetItem, PutItem, UpdateItem, DeleteItem, Query (table and global secondary
 * indexes), Scan (pages, Limit, segments), BatchGetItem, BatchWriteItem, TransactWriteItems
 * (ConditionCheck, Put, Update, Delete; client tokens), CreateTable, DescribeTable, DeleteTable,
 * ListTables, UpdateTimeToLive, DescribeTimeToLive; and on `streamsClient()`: DescribeStream,
 * GetShardIterator, GetRecords, ListStreams. Anything else throws UnsupportedByModelError.
 *
 * @example
 * ```ts
 * const model = new DynamoDBModel({ now: () => clock.now(), random: seededRandom(7), staleReadMaxLagMs: 500 });
 * const client = model.client({ intercept: async (req, apply) => { await clock.sleep(3); return apply(); } });
 * await createTables(client, names); // lib/local/tables.ts
 * const leases = new LeaseStore(client, names.leases);
 * ```
 */
export class DynamoDBModel {
  private readonly engine: Engine;

  constructor(opts: DynamoDBModelOptions) {
    const lag = opts.staleReadMaxLagMs ?? 0;
    if (!(lag >= 0)) throw new RangeError(`staleReadMaxLagMs must be 0 or more; got ${lag}`);
    if (lag > 0 && !opts.random) throw new RangeError('staleReadMaxLagMs > 0 needs a random source (opts.random), so that runs repeat');
    const shards = opts.streamShards ?? 1;
    if (!Number.isInteger(shards) || shards < 1) throw new RangeError(`streamShards must be a whole number of at least 1; got ${shards}`);
    this.engine = new Engine({
      now: opts.now,
      random: opts.random ?? (() => 0),
      staleReadMaxLagMs: lag,
      streamShards: shards,
      streamRetentionMs: opts.streamRetentionMs ?? 24 * 3_600_000,
      region: opts.region ?? 'local',
      checkItemSize: opts.checkItemSize ?? true,
    });
  }

  /**
   * A client for the model, cast-compatible with code that holds a DynamoDBClient (it is an
   * instance of the class). Give each simulated process its own, with its own `intercept`.
   */
  client(opts: ModelClientOptions = {}): DynamoDBClient {
    return modelClient(this.engine, opts);
  }

  /** A DynamoDB Streams client over the model's streams (DescribeStream, GetShardIterator, GetRecords, ListStreams). */
  streamsClient(opts: ModelClientOptions = {}): DynamoDBStreamsClient {
    return modelStreamsClient(this.engine, opts);
  }

  /** The stream of a table (by table name or stream ARN); read its shards with `read()`. */
  stream(tableOrArn: string): ModelStream {
    const s = this.engine.streams.get(tableOrArn) ?? this.engine.tables.get(tableOrArn)?.stream;
    if (!s) throw new RangeError(`no stream for ${tableOrArn}: no table of that name has a StreamSpecification, and no stream has that ARN`);
    return s;
  }

  /**
   * Runs TTL now: deletes every item whose TTL attribute (set by UpdateTimeToLive; a number of
   * epoch seconds) is before `now()`, except those expired more than five years ago, which
   * DynamoDB ignores. Each deletion makes a REMOVE record with userIdentity
   * `{ type: 'Service', principalId: 'dynamodb.amazonaws.com' }`. DynamoDB deletes within days of
   * expiry, not at once: the simulator chooses when to call this. `tables` limits it to some.
   */
  sweepTtl(opts: { tables?: readonly string[] } = {}): TtlDeletion[] {
    return sweepTtl(this.engine, opts.tables);
  }

  /** The tables' names, sorted. */
  tableNames(): string[] {
    return [...this.engine.tables.keys()].sort();
  }

  /** Every item of a table as it is now, in scan order (copies): for checkers and tests. */
  items(table: string): Record<string, AttributeValue>[] {
    const t = this.engine.tables.get(table);
    if (!t) throw tableNotFound(table);
    return t
      .scanOrder()
      .filter((e) => e.item !== undefined)
      .map((e) => exportItem(e.item!));
  }
}
