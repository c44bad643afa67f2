/**
 * Where local mode's stream pollers are in each shard, kept across runs on a DynamoDB Local the
 * caller named (`--endpoint`): what Lambda's event source mapping keeps per shard. Without it, a
 * restart reads each kept stream from TRIM_HORIZON again, and every earlier run's change still in
 * it (24 h) is handled and its events published again.
 */
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { DescribeStreamCommand, GetRecordsCommand, GetShardIteratorCommand, type DynamoDBStreamsClient, type Shard } from '@aws-sdk/client-dynamodb-streams';
import * as z from 'zod';
import { systemClock, type Clock } from '../clock.js';
import { parse } from '../schemas/validation.js';
import { Backoff } from './backoff.js';
import { breakStale, removeLeftTemps, tryLock, unlock } from './lock-file.js';

/** The checkpoints file, beside events.jsonl. */
export const CHECKPOINTS_FILE = 'stream-checkpoints.json';

/** A DynamoDB Streams sequence number: 21 to 40 decimal digits (GetShardIterator refuses others). */
const SequenceNumber = z.string().regex(/^\d{21,40}$/, 'must be a stream sequence number (21 to 40 decimal digits)');

/** The version written: 2 keeps each function's positions apart (`function`); a file of version 1 (none) is read and adopted. */
export const CHECKPOINTS_VERSION = 2;

/**
 * The file: for each endpoint, function and stream, the last sequence number per shard whose batch
 * that function finished (handled or dead-lettered), as Lambda keeps a position per event source
 * mapping: two functions reading one stream each move on at their own pace.
 */
export const CheckpointsFile = z.strictObject({
  version: z.union([z.literal(1), z.literal(CHECKPOINTS_VERSION)]),
  streams: z.array(
    z.strictObject({
      /** The DynamoDB Local the stream is in (`--endpoint`), by its endpointKey: a stream ARN is only known within it. */
      endpoint: z.string().min(1),
      /**
       * The function whose positions these are (its name in the wiring). None: an entry written before
       * functions were kept apart (version 1), one position for every function reading the stream,
       * until a start reading it copies it to each of them (adopt).
       */
      function: z.string().min(1).optional(),
      streamArn: z.string().min(1),
      /** Shard id → the last sequence number finished in it. */
      shards: z.record(z.string().min(1), SequenceNumber),
    }),
  ),
});
export type CheckpointsFile = z.infer<typeof CheckpointsFile>;

/** One poller's view: its function's checkpoints on its endpoint, by stream ARN and shard. */
export interface ShardCheckpoints {
  /** The last sequence number finished in `shardId` of `streamArn`; undefined for a shard or stream not seen. */
  get(streamArn: string, shardId: string): string | undefined;
  /** `sequenceNumber`'s batch is finished: kept, the file written again (merged under its lock, atomically); resolves once written. */
  set(streamArn: string, shardId: string, sequenceNumber: string): Promise<void> | void;
  /** The checkpoint of `shardId` was of no use (its records trimmed): forgotten; resolves once written. */
  drop(streamArn: string, shardId: string): Promise<void> | void;
  /**
   * `streamArn` is about to be read: its entry is made, with no shard's position yet, unless there
   * is one. Written before the first batch is handed to the function, so a stop before any batch
   * of it finished (a failing batch, a stop mid-invocation) still leaves the stream named: a start
   * that finds its table made again meanwhile reads it (olderStreamsToRead) from TRIM_HORIZON.
   * Resolves once written.
   */
  open(streamArn: string): Promise<void> | void;
  /**
   * Writes again what could not be saved (the disk full: a set, drop or open that rejected, of any
   * function of this process): resolves once written, with true, or at once with false when nothing
   * is unsaved; rejects as they do. The poller asks at each round, and the runtime once at its stop.
   */
  retry?(): Promise<boolean>;
}

/** One entry of an endpoint's checkpoints: a function's (none: a version 1 entry not yet adopted) in one stream. */
export interface StreamEntry {
  streamArn: string;
  function: string | undefined;
  shards: Readonly<Record<string, string>>;
}

/** The checkpoints file's view for one endpoint, as loadCheckpoints gives it: each function's ShardCheckpoints, and what a start needs. */
export interface KeptCheckpoints {
  /** Function `functionName`'s checkpoints: its poller's. */
  of(functionName: string): ShardCheckpoints;
  /** This endpoint's entries in the file, each with its shards' checkpoints (as of the last load or write). */
  streams(): StreamEntry[];
  /** Forgets the entry of `functionName` (undefined: the version 1 entry) in `streamArn`: its shards `shardIds` (the entry too once it has none left), or all of it without them; resolves once written. */
  forget(streamArn: string, functionName: string | undefined, shardIds?: readonly string[]): Promise<void>;
  /**
   * Copies each version 1 entry (one position per stream) of a stream `readers` names functions for
   * to an entry of each of them, in its place, the one entry gone: every function resumes where the
   * stream's one position was, nothing read again or skipped. A function with an entry of its own
   * there keeps it. Entries of streams no reader is named for (another prefix's) are left as they
   * are, for their own start. Resolves once written, with the number of entries adopted.
   */
  adopt(readers: (streamArn: string) => readonly string[]): Promise<number>;
  /** ShardCheckpoints.retry: writes again what this process could not save (true), at once when nothing is unsaved (false). */
  retry(): Promise<boolean>;
}

/** The loopback host names a DynamoDB Local on this machine is reached by: one server (it listens on every interface), one key. */
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * The key an endpoint's checkpoints are kept under: the same DynamoDB Local whichever way its
 * address is spelled, `http://localhost:8000/`, `http://127.0.0.1:8000` or `http://[::1]:8000` —
 * a loopback host is written 127.0.0.1, the default port (80, 443) and a trailing slash left out,
 * the scheme and host in lower case. No name is looked up (DNS): other hosts are kept as spelled.
 * A string that is no URL is its own key.
 */
export function endpointKey(endpoint: string): string {
  let u: URL;
  try {
    u = new URL(endpoint);
  } catch {
    return endpoint;
  }
  // (URL has already lower-cased the scheme and host and dropped a default port)
  const host = LOOPBACK.has(u.hostname) ? `127.0.0.1${u.port ? `:${u.port}` : ''}` : u.host;
  return `${u.protocol}//${host}${u.pathname.replace(/\/+$/, '')}`;
}

/** The table a stream ARN is of (`arn:…:table/NAME/stream/LABEL`): NAME. */
export const tableOfStream = (streamArn: string): string => {
  const from = streamArn.indexOf(':table/') + ':table/'.length;
  return streamArn.slice(from, streamArn.lastIndexOf('/stream/'));
};
/** The part of a stream ARN that names its table (`arn:…:table/NAME/`): a newer stream of the same table replaces the older's checkpoints. */
const tableOf = (streamArn: string) => streamArn.slice(0, streamArn.lastIndexOf('/stream/') + 1);
/** A stream ARN's label, the time its stream was made (`…/stream/2026-12-01T00:00:00.000`, fixed width): a later label, a newer stream of the table. */
const labelOf = (streamArn: string) => streamArn.slice(streamArn.lastIndexOf('/stream/') + '/stream/'.length);
/** `other` is an older stream of `streamArn`'s table than `streamArn`. */
const olderStreamOf = (other: string, streamArn: string) => other !== streamArn && tableOf(other) === tableOf(streamArn) && labelOf(other) < labelOf(streamArn);

/**
 * The streams of `latest`'s table among `kept` (the checkpoints' streams, after pruning: each still
 * listed and not read to its end) that are older than `latest`, oldest first: the table was made
 * again while local mode was down, and each holds changes after its checkpoints that no function
 * has had. Read before `latest`, each to its end, as Lambda's mapping would have read them had it run.
 */
export const olderStreamsToRead = (kept: readonly string[], latest: string): string[] =>
  [...new Set(kept.filter((arn) => olderStreamOf(arn, latest)))].sort(byLabel);

/** Oldest stream first (labels are fixed-width times). */
const byLabel = (a: string, b: string) => (labelOf(a) < labelOf(b) ? -1 : labelOf(a) > labelOf(b) ? 1 : 0);

/**
 * The streams among `listed` (ListStreams of the table) of `after`'s table that are newer than
 * `after`, oldest first: one per time the table was made again since `after`'s, the newest last.
 * A table made again twice between two looks has a stream in between, which holds the changes
 * written to it while it lived: read, in order, not skipped for the newest.
 */
export const streamsAfter = (listed: readonly string[], after: string): string[] => [...new Set(listed.filter((arn) => olderStreamOf(after, arn)))].sort(byLabel);

/**
 * `f` with each entry under its endpoint's key (endpointKey), one entry per endpoint, function and
 * stream: a file written before the keys were (`http://localhost:8000` beside
 * `http://127.0.0.1:8000`, the same DynamoDB Local) keeps, for each shard, the later of the two positions.
 */
function keyedByEndpoint(f: CheckpointsFile): CheckpointsFile {
  const streams: CheckpointsFile['streams'] = [];
  for (const s of f.streams) {
    const endpoint = endpointKey(s.endpoint);
    const same = streams.find((x) => x.endpoint === endpoint && x.function === s.function && x.streamArn === s.streamArn);
    if (!same) {
      streams.push({ ...s, endpoint, shards: { ...s.shards } });
      continue;
    }
    for (const [shard, seq] of Object.entries(s.shards)) {
      const had = same.shards[shard];
      if (had === undefined || BigInt(seq) > BigInt(had)) same.shards[shard] = seq;
    }
  }
  return { ...f, streams };
}

/** A unique temp name per write in this process: two processes on one folder never share one either. */
let writes = 0;

/**
 * A write of the checkpoints file that failed (the disk full: ENOSPC; the folder read-only): the
 * file is left as it was, its checkpoints older than the function's position, and the records
 * handled since are handled again at the next start. Its `code` is the file system's (ENOSPC), or
 * the error's name.
 */
export class CheckpointsNotSaved extends Error {
  override readonly name = 'CheckpointsNotSaved';
  readonly code: string;

  constructor(
    readonly file: string,
    cause: unknown,
  ) {
    const code = (cause as NodeJS.ErrnoException | undefined)?.code ?? (cause as Error | undefined)?.name ?? 'Error';
    super(`stream checkpoints could not be saved to ${file} (${cause instanceof Error ? cause.message : String(cause)})`, { cause });
    this.code = code;
  }
}

/** The first wait before looking again at a lock another live process holds; each later one twice as long, up to LOCK_RETRY_MAX_MS. It holds it for one read and one write of a small file. */
export const LOCK_RETRY_FIRST_MS = 5;
/** The longest wait between looks at a lock another live process holds. */
export const LOCK_RETRY_MAX_MS = 200;
/** Looks at a lock held by the same live process before that is told (once a write): a process stopped while it holds it (SIGSTOP, a debugger). */
export const LOCK_TELL_AFTER = 25;

/** The file's checkpoints, keyed; undefined for a file that is missing. Throws for one that cannot be read or does not parse. */
function readCheckpoints(file: string): CheckpointsFile | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`cannot be read (${(e as Error).message})`, { cause: e });
  }
  try {
    return keyedByEndpoint(parse(CheckpointsFile, JSON.parse(text), `stream checkpoints file ${file}`));
  } catch (e) {
    throw new Error(`is corrupt (${(e as Error).message})`, { cause: e });
  }
}

/**
 * The checkpoints in `file` for `endpoint`. A file that is missing starts empty; one that does
 * not parse (not JSON, or not CheckpointsFile) is told once through `warn`, naming it, and
 * ignored: every shard is read from TRIM_HORIZON, and the next write replaces it. One found so by
 * a write later (the run under way) is told so, once, and written anew from the checkpoints this
 * process holds: nothing is read again. Other endpoints' entries are kept as they are.
 *
 * Several local-mode processes may share one events folder, so one file (two table prefixes on one
 * DynamoDB Local, or two DynamoDB Locals): each write is a merge, under a lock file beside it
 * (`stream-checkpoints.json.lock`, holding the writer's pid), of this process's one change into the
 * file as it is now, every other entry kept as the other processes left it; written whole, a temp
 * file renamed over it. A lock a live process holds is waited for on `clock` (LOCK_RETRY_FIRST_MS,
 * doubling up to LOCK_RETRY_MAX_MS; told at the LOCK_TELL_AFTER-th look); one left by a process
 * that is gone (killed while it held it) is taken away.
 */
export function loadCheckpoints(file: string, endpoint: string, warn: (message: string, extra: Record<string, unknown>) => void, clock: Clock = systemClock): KeptCheckpoints {
  const ignored = (why: string) =>
    warn(`stream checkpoints file ${file} ${why}: ignored, the streams are read from TRIM_HORIZON (earlier changes handled again); it is written anew as batches finish, or delete it`, { file });
  /** A file that does not parse is told once, at the load or the first write that finds it so, not at each write. */
  let toldCorrupt = false;
  let state: CheckpointsFile = { version: CHECKPOINTS_VERSION, streams: [] };
  try {
    state = readCheckpoints(file) ?? state;
  } catch (e) {
    ignored((e as Error).message);
    toldCorrupt = true;
  }
  const key = endpointKey(endpoint);
  // what processes gone left beside it (killed mid-write; a failed write's temp file, once left at
  // every try on a full disk): their writes will never finish
  removeLeftTemps(file);
  removeLeftTemps(`${file}.lock`);
  const entryIn = (f: CheckpointsFile, fn: string | undefined, streamArn: string) => f.streams.find((s) => s.endpoint === key && s.function === fn && s.streamArn === streamArn);
  const lock = `${file}.lock`;

  /** `change` made to the file as it is now, under the lock, and written whole if it changed anything; what this process sees from then on. */
  const merged = (change: (f: CheckpointsFile) => boolean) => {
    let now: CheckpointsFile = { version: CHECKPOINTS_VERSION, streams: [] };
    try {
      now = readCheckpoints(file) ?? now;
    } catch (e) {
      // found so while running: the pollers read on from their positions (nothing is read again), and
      // the file is written anew from what this process last read of it and has moved since, not from
      // nothing (which would drop every other function's and process's entries)
      now = structuredClone(state);
      if (!toldCorrupt)
        warn(
          `stream checkpoints file ${file} ${(e as Error).message}, found at a write while local mode runs: written anew from the checkpoints this process holds (the streams are read on from where they are, nothing is read again); ` +
            'another process sharing the folder puts back what it wrote there since at its own next write',
          { file },
        );
      toldCorrupt = true;
    }
    if (change(now)) {
      now.version = CHECKPOINTS_VERSION; // a version 1 file's entries are read as they are: no function, until adopted
      // whole or not at all: a crash mid-write leaves the old file, never half of the new one
      const tmp = `${file}.${process.pid}.${++writes}.tmp`;
      try {
        writeFileSync(tmp, `${JSON.stringify(now, null, 2)}\n`);
        renameSync(tmp, file);
      } catch (e) {
        // (a write cut off by a full disk made the temp file all the same: removed, not left at every try)
        rmSync(tmp, { force: true });
        throw e;
      }
    }
    state = now;
  };
  /** `got`, or what made it fail as CheckpointsNotSaved, naming the file: the caller tells the file and the fix, not a bare ENOSPC. */
  const saving = <T>(got: () => T): T => {
    try {
      return got();
    } catch (e) {
      throw e instanceof CheckpointsNotSaved ? e : new CheckpointsNotSaved(file, e);
    }
  };
  const locked = async (change: (f: CheckpointsFile) => boolean): Promise<void> => {
    const waits = new Backoff(LOCK_RETRY_FIRST_MS, LOCK_RETRY_MAX_MS);
    for (let looks = 1; ; looks++) {
      // a lock naming this process is an earlier process's that had its pid: a write here never yields while it holds it
      const got = saving(() => tryLock(lock, () => false));
      if (got.held) {
        // nothing awaited while held: another writer in this process waits its turn in `queue`
        try {
          saving(() => merged(change));
        } finally {
          unlock(lock, got.token);
        }
        return;
      }
      if (got.stale && got.holder !== undefined) saving(() => breakStale(lock, got.holder!));
      if (got.stale || got.holder === undefined) continue;
      if (looks === LOCK_TELL_AFTER) warn(`stream checkpoints file ${file} is locked by process ${got.holder.split('.')[0]} (${lock}) for ${LOCK_TELL_AFTER} looks in a row: waiting; if that process is no local mode of this folder, delete the lock file`, { file, lock });
      await clock.sleep(waits.failed().waitMs);
    }
  };
  /**
   * The changes whose write failed (the disk full), by what each sets (a shard's position, a stream's
   * entry): made again, in order, before the next change of a write, so the first write that succeeds
   * saves them too (before: a shard that read nothing more kept its unsaved position until the stop,
   * and the next start handled its records again). A later change of the same thing replaces one.
   */
  const unsaved = new Map<string, (f: CheckpointsFile) => boolean>();
  /** This process's writes, one at a time, in order. */
  let queue: Promise<boolean> = Promise.resolve(true);
  /** Writes `change` (about `key`) with every unsaved one before it; none: only the unsaved ones, and nothing at all (false) when there are none. */
  const write = (key?: string, change?: (f: CheckpointsFile) => boolean): Promise<boolean> => {
    const run = async () => {
      if (key !== undefined) unsaved.delete(key);
      const pending = [...unsaved.entries()];
      if (change === undefined && pending.length === 0) return false;
      try {
        await locked((f) => {
          let changed = false;
          for (const [, c] of pending) changed = c(f) || changed;
          return (change?.(f) ?? false) || changed;
        });
      } catch (e) {
        if (key !== undefined && change !== undefined) unsaved.set(key, change);
        throw e;
      }
      for (const [k, c] of pending) if (unsaved.get(k) === c) unsaved.delete(k);
      return true;
    };
    queue = queue.then(run, run);
    return queue;
  };
  /** write(), resolving with nothing: a change's own write. */
  const save = (key: string, change: (f: CheckpointsFile) => boolean): Promise<void> => write(key, change).then(() => undefined);
  const shardKey = (fn: string, streamArn: string, shardId: string) => JSON.stringify(['shard', fn, streamArn, shardId]);

  const of = (fn: string): ShardCheckpoints => ({
    get: (streamArn, shardId) => entryIn(state, fn, streamArn)?.shards[shardId],
    set: (streamArn, shardId, sequenceNumber) =>
      save(shardKey(fn, streamArn, shardId), (f) => {
        // the function's entries of the table's older streams (deleted and created again) will not be read
        // again: it reads them to their end before the newer. Never a newer one: a process still reading an
        // older stream (draining it before it follows the newer, as another process sharing the folder reads
        // the newer) would drop the newer's checkpoints. Nor another function's: it moves on at its own pace
        f.streams = f.streams.filter((s) => !(s.endpoint === key && (s.function === fn || s.function === undefined) && olderStreamOf(s.streamArn, streamArn)));
        let e = entryIn(f, fn, streamArn);
        if (!e) {
          e = { endpoint: key, function: fn, streamArn, shards: {} };
          f.streams.push(e);
        }
        e.shards[shardId] = sequenceNumber;
        return true;
      }),
    open: (streamArn) =>
      entryIn(state, fn, streamArn)
        ? undefined
        : save(JSON.stringify(['open', fn, streamArn]), (f) => {
            if (entryIn(f, fn, streamArn)) return false;
            f.streams.push({ endpoint: key, function: fn, streamArn, shards: {} });
            return true;
          }),
    drop: (streamArn, shardId) =>
      save(shardKey(fn, streamArn, shardId), (f) => {
        const e = entryIn(f, fn, streamArn);
        if (!e || e.shards[shardId] === undefined) return false;
        delete e.shards[shardId];
        return true;
      }),
    retry: () => write(),
  });

  return {
    of,
    retry: () => write(),
    streams: () => state.streams.filter((s) => s.endpoint === key).map((s) => ({ streamArn: s.streamArn, function: s.function, shards: { ...s.shards } })),
    forget: (streamArn, fn, shardIds) =>
      save(JSON.stringify(['forget', streamArn, fn ?? null, shardIds ?? null]), (f) => {
        const e = entryIn(f, fn, streamArn);
        if (!e) return false;
        if (shardIds === undefined) {
          f.streams = f.streams.filter((x) => x !== e);
          return true;
        }
        const gone = shardIds.filter((id) => e.shards[id] !== undefined);
        for (const id of gone) delete e.shards[id];
        // an entry left without shards says nothing: gone too
        if (Object.keys(e.shards).length === 0) f.streams = f.streams.filter((x) => x !== e);
        return gone.length > 0;
      }),
    adopt: async (readers) => {
      let adopted = 0;
      await save(JSON.stringify(['adopt']), (f) => {
        adopted = 0;
        f.streams = f.streams.flatMap((e) => {
          const fns = e.endpoint === key && e.function === undefined ? readers(e.streamArn) : [];
          if (!fns.length) return [e];
          adopted++;
          // the stream's one position stood for each of them: each resumes there
          return fns.filter((fn) => !entryIn(f, fn, e.streamArn)).map((fn) => ({ endpoint: key, function: fn, streamArn: e.streamArn, shards: { ...e.shards } }));
        });
        return adopted > 0;
      });
      return adopted;
    },
  };
}

/** A stream of the file as the Streams API tells it now. */
export type StreamNow =
  /** No such stream (ResourceNotFoundException): its table deleted long ago, or its DynamoDB Local started anew. */
  | { readonly gone: true }
  | {
      readonly gone: false;
      /** The shards it lists now: a shard no longer listed is trimmed (24 h), never read again. */
      readonly shards: ReadonlySet<string>;
      /** No record will come (DISABLED: its table deleted, or its stream turned off), every shard is closed, and none holds a record after its checkpoint. */
      readonly done: boolean;
    };

/**
 * What of one stream's entry to forget (decided apart from the looking): a stream gone, all of it; a
 * stream this process does not poll that is done (closed and read to its end), all of it; else the
 * checkpoints of shards the stream no longer lists. A stream that is not done keeps its entry: the
 * process reading it (this one, or another sharing the folder) still moves it on.
 */
export function stalePart(shards: Readonly<Record<string, string>>, now: StreamNow, polled: boolean): { stream: true } | { stream: false; shards: string[] } {
  if (now.gone || (!polled && now.done)) return { stream: true };
  return { stream: false, shards: Object.keys(shards).filter((id) => !now.shards.has(id)) };
}

/**
 * How `streamArn` is now on `client`'s DynamoDB Local: its shards, and whether it is done, each
 * closed shard read after its checkpoint in `shards` (or from TRIM_HORIZON without one) and found to
 * hold nothing more (one GetRecords, Limit 1). Faults (DynamoDB Local unreachable) are thrown.
 */
export async function streamNow(client: DynamoDBStreamsClient, streamArn: string, shards: Readonly<Record<string, string>>): Promise<StreamNow> {
  const listed: Shard[] = [];
  let status: string | undefined;
  try {
    let from: string | undefined;
    do {
      const d = (await client.send(new DescribeStreamCommand({ StreamArn: streamArn, ...(from ? { ExclusiveStartShardId: from } : {}) }))).StreamDescription;
      status = d?.StreamStatus;
      listed.push(...(d?.Shards ?? []));
      from = d?.LastEvaluatedShardId;
    } while (from);
  } catch (e) {
    if ((e as Error).name === 'ResourceNotFoundException') return { gone: true };
    throw e;
  }
  const ids = new Set(listed.map((x) => x.ShardId!));
  if (status !== 'DISABLED' || listed.some((x) => x.SequenceNumberRange?.EndingSequenceNumber === undefined)) return { gone: false, shards: ids, done: false };
  for (const shard of listed) {
    const after = shards[shard.ShardId!];
    try {
      const it = await client.send(
        new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: shard.ShardId!, ...(after ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: after } : { ShardIteratorType: 'TRIM_HORIZON' }) }),
      );
      const r = it.ShardIterator ? await client.send(new GetRecordsCommand({ ShardIterator: it.ShardIterator, Limit: 1 })) : undefined;
      if (r && (r.Records?.length || r.NextShardIterator)) return { gone: false, shards: ids, done: false };
    } catch (e) {
      // a checkpoint the shard refuses, or records trimmed under it: not known to be read to its end, kept
      if (['ValidationException', 'TrimmedDataAccessException', 'InternalFailure'].includes((e as Error).name)) return { gone: false, shards: ids, done: false };
      throw e;
    }
  }
  return { gone: false, shards: ids, done: true };
}

/**
 * Forgets the checkpoints of `checkpoints`' endpoint that will never be read again, so the file does
 * not grow with every table made again or table prefix used once: the entries of streams gone, of
 * streams not in `polled` that are done (their table deleted, their shards closed and read to their
 * end), and of shards their stream no longer lists. A stream that cannot be looked at (a fault) is
 * kept, told through `warn`; other endpoints' entries are left alone (unreachable is not gone).
 * Returns what was forgotten.
 */
export async function pruneCheckpoints(
  checkpoints: KeptCheckpoints,
  polled: ReadonlySet<string>,
  look: (streamArn: string, shards: Readonly<Record<string, string>>) => Promise<StreamNow>,
  warn: (message: string, extra: Record<string, unknown>) => void,
): Promise<{ streams: string[]; shards: number }> {
  const forgotten = { streams: [] as string[], shards: 0 };
  // each function's entry on its own: one function's may be read to its end while another's is not
  for (const { streamArn, function: fn, shards } of checkpoints.streams()) {
    let now: StreamNow;
    try {
      now = await look(streamArn, shards);
    } catch (e) {
      warn(`stream ${streamArn} cannot be looked at (${(e as Error).message}): its checkpoints are kept`, { stream: streamArn });
      continue;
    }
    const stale = stalePart(shards, now, polled.has(streamArn));
    if (stale.stream) {
      await checkpoints.forget(streamArn, fn);
      if (!forgotten.streams.includes(streamArn)) forgotten.streams.push(streamArn);
    } else if (stale.shards.length) {
      await checkpoints.forget(streamArn, fn, stale.shards);
      forgotten.shards += stale.shards.length;
    }
  }
  return forgotten;
}
