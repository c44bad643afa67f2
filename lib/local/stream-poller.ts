import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  ListStreamsCommand,
  type _Record,
  type Shard,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { StreamTrigger } from '../wiring.js';
import { matchesFilter } from './event-filter.js';
import { systemClock, type Clock } from '../clock.js';
import { streamsAfter, type ShardCheckpoints } from './stream-checkpoints.js';
import { Backoff, backoffMs } from './backoff.js';

/** What a Lambda handler returns for a batch with ReportBatchItemFailures. */
export interface BatchResponse {
  batchItemFailures?: { itemIdentifier: string }[];
}

export interface DeadLetter {
  function: string;
  reason: string;
  /**
   * The records' positions; `record` is the record itself when the function dead-lettered it (a
   * poison record). What the event source gives up on after its retries has only the position, as
   * Lambda's on-failure destination does.
   */
  records: { eventID?: string; sequenceNumber?: string; record?: unknown }[];
  at: string;
}

export interface StreamPollerOptions {
  client: DynamoDBStreamsClient;
  streamArn: string;
  trigger: StreamTrigger;
  functionName: string;
  invoke: (event: DynamoDBStreamEvent) => Promise<BatchResponse | void>;
  deadLetter: (entry: DeadLetter) => void;
  /**
   * A failure reading the stream or describing it, retried (a read at a backoff: twice idleMs,
   * twice as long after each later failure in a row, up to RETRY_BACKOFF_MAX_MS); told at the 1st,
   * 2nd, 4th, 8th … failure in a row, not at each try.
   */
  onError?: (e: Error) => void;
  /** A read of the stream (or a look at its shards) that succeeded: what ends a run of failures told through onError. Called at each, failures before or not. */
  onRead?: () => void;
  /** How long to wait when a shard had nothing new (a wait stop() cuts short). @default 100 ms */
  idleMs?: number;
  /** Whose time records are aged by and the poller waits on. @default systemClock */
  clock?: Clock;
  /**
   * The table whose stream `streamArn` is. With it, a stream that ends under the poller (DISABLED:
   * the table deleted, or its stream turned off; or gone: ResourceNotFoundException) is followed to
   * the table's new stream, read from TRIM_HORIZON, once its own records are all delivered (made
   * again more than once: each newer stream ListStreams gives, oldest first, the newest last); a table
   * gone or without a stream is told once and looked for again at a backoff (up to
   * TABLE_LOOK_MAX_MS). Without it, the poller reads `streamArn` only.
   */
  table?: {
    name: string;
    /** The table as DescribeTable tells it now; undefined when there is no such table (ResourceNotFoundException). */
    describe: () => Promise<{ status: string | undefined; latestStreamArn: string | undefined } | undefined>;
  };
  /**
   * Streams of the same table to read after `streamArn`, oldest first, each to its end before the
   * next (then, with `table`, the table's newest): the table's older streams that still hold
   * records after their checkpoints, when it was made again while local mode was down
   * (olderStreamsToRead). A shard without a checkpoint in one is read from TRIM_HORIZON.
   */
  then?: readonly string[];
  /**
   * Where each shard was left, kept across runs (lib/local/stream-checkpoints.ts): a shard with a
   * checkpoint is read AFTER_SEQUENCE_NUMBER it, one without from the starting position, and each
   * batch finished (handled, filtered out or dead-lettered) moves it on; one that could not be saved
   * is written again at each round of the stream's discovery (`retry`). A checkpoint whose records
   * have been trimmed (TrimmedDataAccessException), or that the stream refuses (ValidationException,
   * or InternalFailure CHECKPOINT_REFUSALS times in a row), falls back to TRIM_HORIZON, told once, and
   * is dropped. Without it, every shard is read from the starting position.
   */
  checkpoints?: ShardCheckpoints;
  /**
   * Awaited before the poller tells its table gone or without a stream: the runtime's look at its
   * lock now (a renewal), which stops every poller at once when the lock went with the tables (a
   * DynamoDB Local started again without its data). A poller stopped by then tells nothing: no later
   * look comes, and the runtime has said why its functions stopped. What it rejects with is not told.
   */
  confirmRunning?: () => Promise<unknown>;
  /** What the poller tells of its stream beside faults: the new stream followed, or a checkpoint (or a position read again after an expired iterator) trimmed or refused (warn), the table gone or without a stream (error). */
  log?: {
    warn: (message: string, extra: Record<string, unknown>) => void;
    error: (message: string, extra: Record<string, unknown>) => void;
  };
}

/**
 * How long after its minute a record DynamoDB Local stamped with that minute may still be read
 * promptly, and how soon after a read that found its shard drained the next must come for its
 * records to be stamped with the time it was read: a poll's lag on a busy machine.
 */
const PROMPT_READ_MS = 5_000;

/**
 * When a record was created, in epoch seconds as Lambda gives it. AWS rounds down to the second;
 * DynamoDB Local rounds down to the minute, which would make every event of a minute look
 * simultaneous. A record read within that minute is stamped with the second it was read instead
 * (`readAt`, which the poller gives only for a read at most PROMPT_READ_MS after one that found the
 * shard drained: the record was written since, so the stamp is at most that late); one read just
 * after it (written in the minute's last moment, read a poll later) with the minute's last second,
 * not its first, 59 s early. A record read later than that (read again after a restart), or without
 * `readAt` (the first read of a shard, or one after a pause: the process stopped, a slow batch),
 * keeps the minute.
 */
export function creationSeconds(created: Date | undefined, readAt: number | undefined): number | undefined {
  if (!created) return undefined;
  const ms = new Date(created).getTime();
  const minuteRounded = ms % 60_000 === 0;
  if (readAt !== undefined && minuteRounded && readAt >= ms && readAt - ms < 60_000 + PROMPT_READ_MS) return Math.floor(Math.min(readAt, ms + 59_999) / 1000);
  return Math.floor(ms / 1000);
}

/** The Streams API's record, as Lambda hands it to a function. */
export function toLambdaRecord(r: _Record, streamArn: string, readAt?: number): DynamoDBRecord {
  const d = r.dynamodb ?? {};
  const created = creationSeconds(d.ApproximateCreationDateTime, readAt);
  return {
    eventID: r.eventID,
    eventName: r.eventName,
    eventVersion: r.eventVersion ?? '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: r.awsRegion ?? 'local',
    eventSourceARN: streamArn,
    dynamodb: {
      ...(created !== undefined ? { ApproximateCreationDateTime: created } : {}),
      Keys: d.Keys,
      NewImage: d.NewImage,
      OldImage: d.OldImage,
      SequenceNumber: d.SequenceNumber,
      SizeBytes: d.SizeBytes,
      StreamViewType: d.StreamViewType,
    },
  } as DynamoDBRecord;
}

/** Every stream `table` has had that the Streams API still lists (ListStreams: live and ended ones, up to 24 h), in no set order. */
export async function tableStreams(client: DynamoDBStreamsClient, table: string): Promise<string[]> {
  const arns: string[] = [];
  let from: string | undefined;
  do {
    const out = await client.send(new ListStreamsCommand({ TableName: table, ...(from ? { ExclusiveStartStreamArn: from } : {}) }));
    arns.push(...(out.Streams ?? []).flatMap((s) => (s.StreamArn ? [s.StreamArn] : [])));
    from = out.LastEvaluatedStreamArn;
  } while (from);
  return arns;
}

/** The longest wait before a failing batch's retry, or a failed read's: a fault that clears is followed within a second. */
export const RETRY_BACKOFF_MAX_MS = 1_000;

/**
 * How many InternalFailure answers in a row to the GetShardIterator of a kept checkpoint make it
 * refused, read from TRIM_HORIZON instead (DynamoDB Local answers one beyond the shard's records so,
 * every time): one alone may be passing. The backoff's waits between them (200, 400, 800, 1000 ms at
 * the default idleMs) put the 5th about 2.4 s after the first.
 */
export const CHECKPOINT_REFUSALS = 5;

/** How often the poller describes its stream (new shards; the stream ended): one sleep on the stop signal between rounds. */
export const DISCOVER_EVERY_MS = 2_000;
/** The first wait before looking again for a table gone or without a stream; each later one twice as long, up to TABLE_LOOK_MAX_MS. */
export const TABLE_LOOK_FIRST_MS = 1_000;
/** The longest wait between looks for a table gone or without a stream: one created again is followed within it. */
export const TABLE_LOOK_MAX_MS = 16_000;

/** Stream states after which no record comes: the table was deleted, or its stream turned off. */
const ENDED = new Set(['DISABLING', 'DISABLED']);

/**
 * Lambda's event source mapping for one DynamoDB stream, on the real Streams API: one reader per
 * shard, a child shard's only once its parent is read to its end, batches of `batchSize`, the trigger's event filters, and Lambda's failure semantics — with ReportBatchItemFailures
 * the batch is retried from the first failed record; a batch that keeps failing is split in two
 * (bisect) and each half retried, each retry after a longer wait (RETRY_BACKOFF_MAX_MS at most); after
 * `retryAttempts` (unless -1: until handled or the poller stops) the records go to the dead-letter
 * file and the shard moves on; records older than `maxRecordAgeSeconds` (unless -1) are
 * dead-lettered unprocessed.
 * The trigger's `parallelizationFactor` is not mirrored: a shard's batches run one at a time, the
 * order Lambda gives at factor 1 and one of those it may give above it (each item's records in
 * order), so local mode runs no two items' records side by side as AWS may.
 */
export class StreamPoller {
  private running = false;
  /** Aborted by stop(): a retry's wait ends at once. */
  private stopping = new AbortController();
  private readonly shards = new Map<string, Promise<void>>();
  private loop: Promise<void> | undefined;
  /** Batches delivered, for tests and the summary. */
  delivered = 0;
  /** Records dropped by the trigger's filters. */
  filtered = 0;

  private readonly clock: Clock;
  /** The stream read now: `streamArn`, or the table's newer one once followed (`table`). */
  private streamArn: string;
  /** Where a shard of the stream read now is read from: the trigger's position, TRIM_HORIZON on a stream followed (its records since the table's creation). */
  private startingPosition: StreamTrigger['startingPosition'];
  /** The looks for the table while it is gone or has no stream: each wait before the next twice as long as the last. */
  private readonly tableLooks = new Backoff(TABLE_LOOK_FIRST_MS, TABLE_LOOK_MAX_MS);
  /** The table's absence (or its stream's) has been told since the stream read now ended. */
  private told = false;
  /** The stream whose entry the checkpoints have (ShardCheckpoints.open). */
  private opened: string | undefined;
  /** The streams still to read after the one read now, before the table's newest (`then`). */
  private readonly pending: string[];

  constructor(private readonly o: StreamPollerOptions) {
    this.clock = o.clock ?? systemClock;
    this.streamArn = o.streamArn;
    this.startingPosition = o.trigger.startingPosition;
    this.pending = [...(o.then ?? [])];
  }

  start(): void {
    this.running = true;
    this.stopping = new AbortController();
    this.loop = this.discover();
  }

  /** Stops reading: a request under way is abandoned (a DynamoDB Local that never answers it holds no stop), a batch being handled is finished. */
  async stop(): Promise<void> {
    this.running = false;
    this.stopping.abort();
    await this.loop;
    await Promise.all(this.shards.values());
  }

  /**
   * Finds shards (new ones appear as old ones close) and reads each from its start, a child once
   * its parent is read to its end; with `table`, follows the table's new stream once this one ends
   * (followTable).
   */
  private async discover(): Promise<void> {
    // a stream that cannot be described (DynamoDB Local gone) is told ever more rarely, not every round
    const describes = new Backoff(DISCOVER_EVERY_MS, DISCOVER_EVERY_MS);
    const saves = new Backoff(DISCOVER_EVERY_MS, DISCOVER_EVERY_MS);
    while (this.running) {
      let ended = false;
      // checkpoints that could not be saved (the disk full) written again each round: a shard that reads
      // nothing more has its position saved once there is room (before: never, and its records were
      // handled again at the next start); told as a failed save is
      try {
        await this.o.checkpoints?.retry?.();
        saves.succeeded();
      } catch (e) {
        if (!this.running) break;
        if (saves.failed().tell) this.o.onError?.(e as Error);
      }
      try {
        // the stream named in the checkpoints before any of its records is handed over
        if (this.opened !== this.streamArn) {
          await this.o.checkpoints?.open(this.streamArn);
          this.opened = this.streamArn;
        }
        const d = await this.o.client.send(new DescribeStreamCommand({ StreamArn: this.streamArn }), { abortSignal: this.stopping.signal });
        const listed = new Map((d.StreamDescription?.Shards ?? []).map((s) => [s.ShardId!, s]));
        for (const id of listed.keys()) this.follow(id, listed, new Set());
        ended = ENDED.has(d.StreamDescription?.StreamStatus ?? '');
        describes.succeeded();
        this.o.onRead?.();
      } catch (e) {
        if (!this.running) break; // abandoned by stop(): no fault
        // tried again at the next round; a stream gone is an end
        if ((e as Error).name === 'ResourceNotFoundException' && (this.o.table || this.pending.length)) ended = true;
        else if (describes.failed().tell) this.o.onError?.(e as Error);
      }
      if (ended && this.pending.length) {
        // an older stream read to its end: the next one, whatever the table's newest is now
        await this.readNext(this.pending.shift()!);
        continue;
      }
      if (ended && this.o.table) {
        const waitMs = await this.followTable(this.o.table);
        if (waitMs > 0) await this.clock.sleep(waitMs, this.stopping.signal);
        continue;
      }
      // one wait a round, which stop() cuts short: no naps to look at `running` in between
      await this.clock.sleep(DISCOVER_EVERY_MS, this.stopping.signal);
    }
  }

  /**
   * The stream read has ended (its table deleted, or the stream turned off): reads the table now.
   * A newer stream is followed from TRIM_HORIZON (the new table's records from its start), once the
   * ended stream's shards are read to their end, so no record of the old table comes after one of
   * the new; the poller says so once. A table gone, or without a stream, is told once as an error
   * naming it and the fix (nothing, once the poller is stopped: confirmRunning). Returns the wait before the next look: none after following, else one
   * twice as long as the last (TABLE_LOOK_FIRST_MS to TABLE_LOOK_MAX_MS): no table to wait for is
   * looked for in a loop.
   */
  private async followTable(table: NonNullable<StreamPollerOptions['table']>): Promise<number> {
    const waitMs = this.tableLooks.failed().waitMs;
    let t: Awaited<ReturnType<typeof table.describe>>;
    try {
      t = await table.describe();
    } catch (e) {
      this.o.onError?.(e as Error);
      return waitMs;
    }
    const about = { function: this.o.functionName, table: table.name, stream: this.streamArn };
    if (t && t.status !== 'DELETING' && t.latestStreamArn !== undefined && t.latestStreamArn !== this.streamArn) {
      // the table made again more than once since this stream's: each stream in between holds the
      // changes written while it lived, read in turn before the newest, none skipped
      const newer = await this.newerStreams(table.name, t.latestStreamArn);
      if (!(await this.readNext(newer[0]!))) return 0;
      this.pending.push(...newer.slice(1));
      if (newer.length === 1) this.o.log?.warn(`table ${table.name} has a new stream (deleted and created again?): the ${this.o.functionName} function now reads it from TRIM_HORIZON`, { ...about, newStream: t.latestStreamArn });
      else this.o.log?.warn(`table ${table.name} has new streams (deleted and created again?): the ${this.o.functionName} function now reads each from TRIM_HORIZON, oldest first`, { ...about, newStreams: newer });
      this.tableLooks.succeeded();
      this.told = false;
      return 0;
    }
    if (!this.told) {
      // the runtime stopping (its lock gone with the tables, or its stop) first: then no look comes
      // again, and nothing is told of one (before, told "looked for again at a backoff" just before the
      // runtime said its functions were stopped)
      await this.o.confirmRunning?.().catch(() => undefined);
      if (!this.running) return waitMs;
      this.told = true;
      const create = `restart local mode on this endpoint, which creates a missing table as Conclave declares it (its stream NEW_AND_OLD_IMAGES), or without --endpoint (npm start, conclave-local: its own DynamoDB Local starts empty and gets every table)`;
      const why = !t || t.status === 'DELETING'
        ? `table ${table.name} is gone (deleted while local mode runs): the ${this.o.functionName} function gets none of its changes; ${create}`
        : `table ${table.name} has no live stream (its stream was turned off): the ${this.o.functionName} function gets none of its changes; turn it on (aws dynamodb update-table --table-name ${table.name} --stream-specification StreamEnabled=true,StreamViewType=NEW_AND_OLD_IMAGES), or ${create}`;
      this.o.log?.error(`${why}; looked for again at a backoff (at most every ${TABLE_LOOK_MAX_MS / 1000} s), and its new stream followed once it is back`, about);
    }
    return waitMs;
  }

  /**
   * The table's streams newer than the one read now, oldest first, `latest` (its newest as
   * described) among them. Streams that cannot be listed: `latest` alone, and an error naming the
   * table says which changes may be unread (those of a stream made and ended in between).
   */
  private async newerStreams(table: string, latest: string): Promise<string[]> {
    try {
      const newer = streamsAfter([...(await tableStreams(this.o.client, table)), latest], this.streamArn);
      if (newer.includes(latest)) return newer;
    } catch (e) {
      this.o.log?.error(
        `table ${table}'s streams could not be listed (${String(e)}): the ${this.o.functionName} function reads its newest stream ${latest} next, and the changes of any stream the table had between ${this.streamArn} and it (made again more than once) are not read`,
        { function: this.o.functionName, table, stream: this.streamArn, newStream: latest },
      );
    }
    return [latest];
  }

  /**
   * Reads `streamArn` next, once the stream read now is read to its end (its shards' readers end at
   * their shards' ends), so no record of an older stream comes after one of a newer; a shard of it
   * without a checkpoint from TRIM_HORIZON. False when stopped meanwhile.
   */
  private async readNext(streamArn: string): Promise<boolean> {
    await Promise.all(this.shards.values());
    if (!this.running) return false;
    this.streamArn = streamArn;
    this.startingPosition = 'TRIM_HORIZON';
    this.shards.clear();
    return true;
  }

  /**
   * Reads shard `id` unless it is read already: once its parent (if still listed or being read) is
   * read to its end. DynamoDB Streams' rule, kept by Lambda: a parent before its children, or one
   * item's records, written in the parent and then in a child, could be handled out of order. A
   * parent gone from the stream (trimmed after 24 h) holds nothing to wait for.
   */
  private follow(id: string, listed: ReadonlyMap<string, Shard>, seen: Set<string>): Promise<void> {
    const known = this.shards.get(id);
    if (known) return known;
    seen.add(id);
    const parentId = listed.get(id)?.ParentShardId;
    const parent = parentId !== undefined && !seen.has(parentId) && (this.shards.has(parentId) || listed.has(parentId)) ? this.follow(parentId, listed, seen) : undefined;
    const arn = this.streamArn;
    const reading = parent ? parent.then(() => this.readShard(arn, id)) : this.readShard(arn, id);
    this.shards.set(id, reading);
    return reading;
  }

  private async iterator(streamArn: string, shardId: string, after: string | undefined, from: StreamTrigger['startingPosition'] = this.startingPosition): Promise<string | undefined> {
    const it = await this.o.client.send(
      new GetShardIteratorCommand({
        StreamArn: streamArn,
        ShardId: shardId,
        ...(after ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: after } : { ShardIteratorType: from }),
      }),
      { abortSignal: this.stopping.signal },
    );
    return it.ShardIterator;
  }

  private async readShard(streamArn: string, shardId: string): Promise<void> {
    // where an earlier run (or this one, before the stream was followed) left this shard
    let last: string | undefined = this.o.checkpoints?.get(streamArn, shardId);
    /** `last` is the kept checkpoint, no record read after it yet. */
    let fromCheckpoint = last !== undefined;
    /** InternalFailure answers in a row to GetShardIterator after the kept checkpoint. */
    let refusals = 0;
    let iterator: string | undefined;
    let started = false;
    /** When the last read found the shard drained (fewer records than a batch); undefined before the first and after a full batch. */
    let drainedAt: number | undefined;
    const idleMs = this.o.idleMs ?? 100;
    // a read failing for a reason that lasts (DynamoDB Local gone, a request it refuses): no hot loop, no error per try
    const reads = new Backoff(2 * idleMs, RETRY_BACKOFF_MAX_MS);
    while (this.running && (iterator || !started)) {
      try {
        if (!started) {
          try {
            iterator = await this.iterator(streamArn, shardId, last);
          } catch (e) {
            const { name, message } = e as Error;
            // a position after a record whose records are trimmed: the kept checkpoint, or the last record
            // handled in this run, asked for again after its iterator expired (the machine asleep past the
            // stream's 24 h); it never comes back (before: asked for again for ever, the shard never read on)
            const trimmed = name === 'TrimmedDataAccessException' && last !== undefined;
            if (!fromCheckpoint && !trimmed) throw e;
            refusals = name === 'InternalFailure' ? refusals + 1 : 0;
            const about = { function: this.o.functionName, stream: streamArn, shard: shardId, sequenceNumber: last };
            const whose = fromCheckpoint
              ? `the ${this.o.functionName} function's checkpoint in shard ${shardId} (sequence number ${last})`
              : `the ${this.o.functionName} function's position in shard ${shardId} (after sequence number ${last}, the last record it handled, its iterator expired)`;
            if (trimmed) {
              // the position's records are older than the stream keeps (24 h): from the oldest kept
              this.o.log?.warn(`${whose} is older than the stream keeps: reading the shard from TRIM_HORIZON; the changes trimmed in between were never handled`, about);
            } else if (name === 'ValidationException' || refusals >= CHECKPOINT_REFUSALS) {
              // a checkpoint the stream will never take (DynamoDB Local: ValidationException for one it finds
              // invalid, InternalFailure each time for one beyond the shard's records): retried, the shard is never read again
              const why = name === 'ValidationException' ? `${name}: ${message}` : `${name}, ${refusals} times in a row`;
              this.o.log?.warn(`${whose} is refused by the stream (${why}): reading the shard from TRIM_HORIZON; records before the checkpoint may be handled again`, { ...about, error: name });
            } else throw e; // a single InternalFailure may be passing: retried at the backoff
            await this.o.checkpoints?.drop(streamArn, shardId);
            last = undefined;
            fromCheckpoint = false;
            iterator = await this.iterator(streamArn, shardId, undefined, 'TRIM_HORIZON');
          }
          started = true;
          continue;
        }
        const r = await this.o.client.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: this.o.trigger.batchSize }), { abortSignal: this.stopping.signal });
        iterator = r.NextShardIterator;
        reads.succeeded();
        this.o.onRead?.();
        const readAt = this.clock.now();
        // the read time stamps the records only soon after a read that drained the shard: they were
        // written since. After a pause (the process stopped 45 s, a slow batch, a failure's backoff)
        // they may be that much older, and keep their minute (before: stamped 45 s late)
        const prompt = drainedAt !== undefined && readAt >= drainedAt && readAt - drainedAt <= PROMPT_READ_MS;
        drainedAt = (r.Records?.length ?? 0) < this.o.trigger.batchSize ? readAt : undefined;
        const records = (r.Records ?? []).map((x) => toLambdaRecord(x, streamArn, prompt ? readAt : undefined));
        if (records.length) {
          // not finished (stopped first): neither kept nor moved past, so read again on the next start
          if (!(await this.deliver(records))) return;
          last = records.at(-1)!.dynamodb?.SequenceNumber;
          fromCheckpoint = false;
          if (last !== undefined) await this.o.checkpoints?.set(streamArn, shardId, last);
        } else await this.clock.sleep(idleMs, this.stopping.signal); // nothing new: a wait stop() cuts short
      } catch (e) {
        if (!this.running) return; // abandoned by stop(): no fault, nothing delivered or moved past
        const name = (e as Error).name;
        // a stream gone (its table deleted) has no more records: the shard is done, and discover() sees the stream end
        if (name === 'ResourceNotFoundException') return;
        // a new iterator, after the last record delivered, so nothing is skipped or repeated
        started = false;
        if (name === 'TrimmedDataAccessException' || name === 'ExpiredIteratorException') {
          // an expired or trimmed iterator (DynamoDB Local also trims the iterator of an empty new
          // shard): the normal case, neither told nor backed off
          await this.clock.sleep(idleMs, this.stopping.signal);
          continue;
        }
        const { waitMs, tell } = reads.failed();
        if (tell) this.o.onError?.(e as Error);
        await this.clock.sleep(waitMs, this.stopping.signal);
      }
    }
  }

  /** Delivers a batch read; whether it is finished (every record handled, filtered out or dead-lettered), not left by stop(). */
  private async deliver(all: DynamoDBRecord[]): Promise<boolean> {
    // Lambda's event filtering: a record no filter matches is dropped, as if handled.
    const filters = this.o.trigger.filters;
    const records = filters ? all.filter((r) => filters.some((f) => matchesFilter(f, r))) : all;
    this.filtered += all.length - records.length;
    if (!records.length) return true;
    const now = this.clock.now();
    const maxAgeMs = this.o.trigger.maxRecordAgeSeconds === -1 ? Infinity : this.o.trigger.maxRecordAgeSeconds * 1000;
    const fresh = records.filter((r) => now - (r.dynamodb?.ApproximateCreationDateTime ?? now / 1000) * 1000 <= maxAgeMs);
    if (fresh.length < records.length) this.deadLetter(records.filter((r) => !fresh.includes(r)), 'record older than maxRecordAgeSeconds');
    return fresh.length ? this.attempt(fresh, 0) : true;
  }

  /** Invokes the function on `batch` with Lambda's retries; whether it is finished (handled or dead-lettered), not left by stop(). */
  private async attempt(batch: DynamoDBRecord[], retries: number): Promise<boolean> {
    if (!this.running) return false; // stopped between a bisected batch's halves
    let failedAt: number | undefined;
    let reason = '';
    try {
      this.delivered++;
      const res = await this.o.invoke({ Records: batch });
      const failed = new Set((res?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
      if (failed.size) {
        failedAt = batch.findIndex((r) => failed.has(r.dynamodb?.SequenceNumber ?? ''));
        if (failedAt < 0) failedAt = 0; // an identifier not in the batch: Lambda retries the whole batch
        reason = `batchItemFailures from ${batch[failedAt]!.eventID}`;
      }
    } catch (e) {
      failedAt = 0;
      reason = `handler threw: ${(e as Error).message}`;
    }
    if (failedAt === undefined) return true;
    const rest = batch.slice(failedAt); // checkpoint: everything before the first failure is done
    const limit = this.o.trigger.retryAttempts === -1 ? Infinity : this.o.trigger.retryAttempts;
    if (retries >= limit) {
      this.deadLetter(rest, reason);
      return true;
    }
    // a failing record is not retried at once, over and over (Lambda backs off too)
    await this.clock.sleep(backoffMs(2 * (this.o.idleMs ?? 100), RETRY_BACKOFF_MAX_MS, retries + 1), this.stopping.signal);
    if (!this.running) return false; // stopped: not done, not dead-lettered
    if (this.o.trigger.bisectOnError && rest.length > 1) {
      const half = Math.ceil(rest.length / 2);
      const first = await this.attempt(rest.slice(0, half), retries + 1);
      return (await this.attempt(rest.slice(half), retries + 1)) && first;
    }
    return this.attempt(rest, retries + 1);
  }

  private deadLetter(records: DynamoDBRecord[], reason: string): void {
    this.o.deadLetter({ function: this.o.functionName, reason, records: records.map((r) => ({ eventID: r.eventID, sequenceNumber: r.dynamodb?.SequenceNumber })), at: new Date(this.clock.now()).toISOString() });
  }
}
