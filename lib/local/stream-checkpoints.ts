/**
 * Where local mode's stream pollers are in each shard, kept across runs on a DynamoDB Local the
 * caller named (`--endpoint`): what Lambda's event source mapping keeps per shard. Without it, a
 * restart reads each kept stream from TRIM_HORIZON again, and every earlier run's change still in
 * it (24 h) is handled and its events published again.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import * as z from 'zod';
import { parse } from '../schemas/validation.js';

/** The checkpoints file, beside events.jsonl. */
export const CHECKPOINTS_FILE = 'stream-checkpoints.json';

/** A DynamoDB Streams sequence number: 21 to 40 decimal digits (GetShardIterator refuses others). */
const SequenceNumber = z.string().regex(/^\d{21,40}$/, 'must be a stream sequence number (21 to 40 decimal digits)');

/** The file: for each endpoint and stream, the last sequence number per shard whose batch was finished (handled or dead-lettered). */
export const CheckpointsFile = z.strictObject({
  version: z.literal(1),
  streams: z.array(
    z.strictObject({
      /** The DynamoDB Local the stream is in (`--endpoint`), by its endpointKey: a stream ARN is only known within it. */
      endpoint: z.string().min(1),
      streamArn: z.string().min(1),
      /** Shard id → the last sequence number finished in it. */
      shards: z.record(z.string().min(1), SequenceNumber),
    }),
  ),
});
export type CheckpointsFile = z.infer<typeof CheckpointsFile>;

/** One poller's view: its endpoint's checkpoints, by stream ARN and shard. */
export interface ShardCheckpoints {
  /** The last sequence number finished in `shardId` of `streamArn`; undefined for a shard or stream not seen. */
  get(streamArn: string, shardId: string): string | undefined;
  /** `sequenceNumber`'s batch is finished: kept, the file written again (atomically). */
  set(streamArn: string, shardId: string, sequenceNumber: string): void;
  /** The checkpoint of `shardId` was of no use (its records trimmed): forgotten. */
  drop(streamArn: string, shardId: string): void;
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

/** The part of a stream ARN that names its table (`arn:…:table/NAME/stream/`): a newer stream of the same table replaces the older's checkpoints. */
const tableOf = (streamArn: string) => streamArn.slice(0, streamArn.lastIndexOf('/stream/') + 1);

/**
 * `f` with each entry under its endpoint's key (endpointKey), one entry per endpoint and stream: a
 * file written before the keys were (`http://localhost:8000` beside `http://127.0.0.1:8000`, the
 * same DynamoDB Local) keeps, for each shard, the later of the two positions.
 */
function keyedByEndpoint(f: CheckpointsFile): CheckpointsFile {
  const streams: CheckpointsFile['streams'] = [];
  for (const s of f.streams) {
    const endpoint = endpointKey(s.endpoint);
    const same = streams.find((x) => x.endpoint === endpoint && x.streamArn === s.streamArn);
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
 * The checkpoints in `file` for `endpoint`. A file that is missing starts empty; one that does
 * not parse (not JSON, or not CheckpointsFile) is told once through `warn`, naming it, and
 * ignored: every shard is read from TRIM_HORIZON, and the next write replaces it. Other
 * endpoints' entries are kept as they are.
 */
export function loadCheckpoints(file: string, endpoint: string, warn: (message: string, extra: Record<string, unknown>) => void): ShardCheckpoints {
  let state: CheckpointsFile = { version: 1, streams: [] };
  let text: string | undefined;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') warn(`stream checkpoints file ${file} cannot be read (${(e as Error).message}): ignored, the streams are read from TRIM_HORIZON (earlier changes handled again)`, { file });
  }
  if (text !== undefined) {
    try {
      state = keyedByEndpoint(parse(CheckpointsFile, JSON.parse(text), `stream checkpoints file ${file}`));
    } catch (e) {
      warn(`stream checkpoints file ${file} is corrupt (${(e as Error).message}): ignored, the streams are read from TRIM_HORIZON (earlier changes handled again); it is written anew as batches finish, or delete it`, { file });
    }
  }
  const key = endpointKey(endpoint);
  const entry = (streamArn: string) => state.streams.find((s) => s.endpoint === key && s.streamArn === streamArn);
  const save = () => {
    // whole or not at all: a crash mid-write leaves the old file, never half of the new one
    const tmp = `${file}.${process.pid}.${++writes}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`);
    renameSync(tmp, file);
  };
  return {
    get: (streamArn, shardId) => entry(streamArn)?.shards[shardId],
    set(streamArn, shardId, sequenceNumber) {
      let e = entry(streamArn);
      if (!e) {
        // the table's older stream (deleted and created again) will not be read again
        state.streams = state.streams.filter((s) => !(s.endpoint === key && tableOf(s.streamArn) === tableOf(streamArn)));
        e = { endpoint: key, streamArn, shards: {} };
        state.streams.push(e);
      }
      e.shards[shardId] = sequenceNumber;
      save();
    },
    drop(streamArn, shardId) {
      const e = entry(streamArn);
      if (!e || e.shards[shardId] === undefined) return;
      delete e.shards[shardId];
      save();
    },
  };
}
