/**
 * DynamoDB Streams, modeled: each table created with a StreamSpecification keeps an ordered log
 * of change records. A record goes to one of the stream's shards by a hash of its partition key
 * (`streamShards`, default 1: one shard per table, as DynamoDB Local has), so records of one item
 * are in one shard, in the order the writes were applied — the only order DynamoDB promises.
 * A write that changes nothing (the same values set again, a delete of a missing item) makes no
 * record, as in DynamoDB. Records are kept for `streamRetentionMs` (24 h), by the model's clock.
 *
 * Readers take records from a position (a sequence number) and may read them again: the
 * simulator decides when (late) and how often (at least once) they are delivered.
 */
import type { AttributeValue as StreamsAttributeValue, _Record } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord } from 'aws-lambda';
import { exportItem, itemSize, type AV, type Item } from './values.js';

/** What a stream record carries besides the keys. */
export type StreamViewType = 'KEYS_ONLY' | 'NEW_IMAGE' | 'OLD_IMAGE' | 'NEW_AND_OLD_IMAGES';

/** One change as the model keeps it (never handed out: records are copied out). */
export interface ChangeRecord {
  /** Increases across the whole model: a total order of every change (the sequence number). */
  readonly seq: number;
  readonly eventName: 'INSERT' | 'MODIFY' | 'REMOVE';
  readonly keys: Item;
  readonly newImage: Item | undefined;
  readonly oldImage: Item | undefined;
  /** Epoch ms of the change, on the model's clock. */
  readonly at: number;
  /** Deleted by TTL: the record carries DynamoDB's service identity. */
  readonly byTtl: boolean;
}

/** The record's size as DynamoDB counts it: keys and images. */
const sizeOf = (r: ChangeRecord): number => itemSize(r.keys) + (r.newImage ? itemSize(r.newImage) : 0) + (r.oldImage ? itemSize(r.oldImage) : 0);

/** Sequence numbers are decimal strings of one width, so they also sort as strings. */
export const sequenceNumber = (seq: number): string => String(seq).padStart(21, '0');

/** An event id: unique, 32 hex digits like DynamoDB's, and the same on every run. */
const eventID = (seq: number): string => seq.toString(16).padStart(32, '0');

/** The identity on TTL deletions (Lambda's event shape; the Streams API capitalizes the keys). */
export const TTL_IDENTITY = { type: 'Service', principalId: 'dynamodb.amazonaws.com' } as const;

class Shard {
  /** Records from `start` on are retained. */
  records: ChangeRecord[] = [];
  start = 0;
  constructor(readonly shardId: string) {}

  retained(): ChangeRecord[] {
    if (this.start > 1024 && this.start * 2 > this.records.length) {
      this.records = this.records.slice(this.start);
      this.start = 0;
    }
    return this.start ? this.records.slice(this.start) : this.records;
  }

  /** Drops the records up to and including `seq`. */
  trim(seq: number): void {
    this.start = Math.max(this.start, this.indexAfter(seq));
    this.retained(); // compacts when much is dropped
  }

  /** Index of the first retained record with seq > after. */
  indexAfter(after: number): number {
    let lo = this.start;
    let hi = this.records.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.records[mid]!.seq <= after) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/** Reading position options: after a sequence number (exclusive), at most `limit` records. */
export interface ReadOptions {
  /** Records after this sequence number; from the oldest retained record when absent. */
  after?: string;
  /** At most this many. @default all */
  limit?: number;
}

function lambdaValue(v: AV): unknown {
  if (v.B !== undefined) return { B: Buffer.from(v.B).toString('base64') };
  if (v.BS !== undefined) return { BS: v.BS.map((b) => Buffer.from(b).toString('base64')) };
  if (v.M !== undefined) return { M: lambdaImage(v.M) };
  if (v.L !== undefined) return { L: v.L.map(lambdaValue) };
  return exportItem({ v }).v;
}

/** Whether an image's values are all scalars (no binary, map or list): Lambda's JSON of it is the model's own. */
function flat(item: Item): boolean {
  for (const k in item) {
    const v = item[k]!;
    if (v.B !== undefined || v.BS !== undefined || v.M !== undefined || v.L !== undefined) return false;
  }
  return true;
}

/** An image as a filter reads it: the model's own when flat (Lambda's JSON of it is the same), else a copy. */
const viewImage = (item: Item): unknown => (flat(item) ? item : lambdaImage(item));

/** What both shapes of a record share; `image` copies an image out, `created` is the record's time in its shape. */
function shape<V, T>(r: ChangeRecord, region: string, viewType: StreamViewType, image: (i: Item) => V, created: T) {
  return {
    eventID: eventID(r.seq),
    eventName: r.eventName,
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: region,
    dynamodb: {
      ApproximateCreationDateTime: created,
      Keys: image(r.keys),
      ...(r.newImage ? { NewImage: image(r.newImage) } : {}),
      ...(r.oldImage ? { OldImage: image(r.oldImage) } : {}),
      SequenceNumber: sequenceNumber(r.seq),
      SizeBytes: sizeOf(r),
      StreamViewType: viewType,
    },
  };
}

/** A record as Lambda hands it to a function (a copy). */
function lambdaRecord(r: ChangeRecord, region: string, arn: string, viewType: StreamViewType): DynamoDBRecord {
  const record: DynamoDBRecord = shape(r, region, viewType, lambdaImage as (i: Item) => never, Math.floor(r.at / 1000));
  record.eventSourceARN = arn;
  if (r.byTtl) record.userIdentity = { ...TTL_IDENTITY };
  return record;
}

/**
 * toLambda's record as Lambda's event filtering reads it (ModelStream.readWhere): the images shared
 * when flat, and each part made only when a filter reads it — most records are judged by their
 * name and images alone, never by their size, id or sequence number. Read-only.
 */
class FilterView {
  readonly eventVersion = '1.1';
  readonly eventSource = 'aws:dynamodb';
  readonly dynamodb: FilterViewBody;
  constructor(
    private readonly r: ChangeRecord,
    readonly awsRegion: string,
    readonly eventSourceARN: string,
    viewType: StreamViewType,
  ) {
    this.dynamodb = new FilterViewBody(r, viewType);
  }
  get eventID(): string {
    return eventID(this.r.seq);
  }
  get eventName(): ChangeRecord['eventName'] {
    return this.r.eventName;
  }
  get userIdentity(): { type: string; principalId: string } | undefined {
    return this.r.byTtl ? { ...TTL_IDENTITY } : undefined;
  }
  /** The record itself, as serialized (what it reads as). */
  toJSON(): DynamoDBRecord {
    return lambdaRecord(this.r, this.awsRegion, this.eventSourceARN, this.dynamodb.StreamViewType);
  }
}

/** A FilterView's `dynamodb`: each image made once, when first read. */
class FilterViewBody {
  private keys: unknown;
  private newImage: unknown;
  private oldImage: unknown;
  constructor(
    private readonly r: ChangeRecord,
    readonly StreamViewType: StreamViewType,
  ) {}
  get ApproximateCreationDateTime(): number {
    return Math.floor(this.r.at / 1000);
  }
  get Keys(): unknown {
    return (this.keys ??= viewImage(this.r.keys));
  }
  get NewImage(): unknown {
    return this.r.newImage && (this.newImage ??= viewImage(this.r.newImage));
  }
  get OldImage(): unknown {
    return this.r.oldImage && (this.oldImage ??= viewImage(this.r.oldImage));
  }
  get SequenceNumber(): string {
    return sequenceNumber(this.r.seq);
  }
  get SizeBytes(): number {
    return sizeOf(this.r);
  }
}

/** Lambda's event JSON: binary values as base64 strings. */
function lambdaImage(item: Item): Record<string, unknown> {
  let binary = false;
  for (const k in item) {
    const v = item[k]!;
    if (v.B !== undefined || v.BS !== undefined || v.M !== undefined || v.L !== undefined) binary = true;
  }
  if (!binary) return exportItem(item);
  const out: Record<string, unknown> = {};
  for (const k in item) out[k] = lambdaValue(item[k]!);
  return out;
}

/** FNV-1a: a stable hash of a partition key (shard choice, scan order). */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A table's stream: its shards and records. Read with `read` (Lambda's shape) or the Streams API stand-in. */
export class ModelStream {
  /** False once the table is deleted: the records stay readable until they age out. */
  enabled = true;
  private readonly shardList: Shard[];

  constructor(
    /** The stream's ARN (DescribeTable's LatestStreamArn). */
    readonly arn: string,
    /** The stream's label (the end of the ARN). */
    readonly label: string,
    /** The table's name. */
    readonly table: string,
    readonly viewType: StreamViewType,
    /** Epoch ms the stream was created. */
    readonly createdAt: number,
    /** The table's key attribute names, partition key first. */
    readonly keyNames: readonly string[],
    readonly region: string,
    shards: number,
    private readonly retentionMs: number,
  ) {
    this.shardList = Array.from({ length: shards }, (_, i) => new Shard(`shardId-${String(createdAt).padStart(20, '0')}-${String(i).padStart(8, '0')}`));
  }

  /** The shards' ids, in a fixed order. */
  shardIds(): string[] {
    return this.shardList.map((s) => s.shardId);
  }

  /** Called after every record appended (a poller that only looks when there is something to read). */
  private readonly appendListeners = new Set<() => void>();

  /** Calls `listener` after each record is appended, until the returned function is called. */
  onAppend(listener: () => void): () => void {
    this.appendListeners.add(listener);
    return () => void this.appendListeners.delete(listener);
  }

  /** @internal The model appends every change here. */
  append(pk: string, r: ChangeRecord): void {
    this.appended(pk, r);
    for (const l of this.appendListeners) l();
  }

  private appended(pk: string, r: ChangeRecord): void {
    const shard = this.shardList.length === 1 ? this.shardList[0]! : this.shardList[fnv1a(pk) % this.shardList.length]!;
    const v = this.viewType;
    shard.records.push(
      v === 'NEW_AND_OLD_IMAGES' ? r : { ...r, newImage: v === 'NEW_IMAGE' ? r.newImage : undefined, oldImage: v === 'OLD_IMAGE' ? r.oldImage : undefined },
    );
    const horizon = r.at - this.retentionMs;
    while (shard.start < shard.records.length && shard.records[shard.start]!.at < horizon) shard.start++;
  }

  private shard(shardId: string): Shard {
    const s = this.shardList.find((x) => x.shardId === shardId);
    if (!s) throw new RangeError(`stream ${this.arn} has no shard ${shardId}; its shards are ${this.shardIds().join(', ')}`);
    return s;
  }

  /** @internal Raw records of a shard after `after` (a seq), at most `limit`. */
  entries(shardId: string, after: number, limit = Infinity): { records: ChangeRecord[]; trimmed: boolean } {
    const s = this.shard(shardId);
    const from = s.indexAfter(after);
    const trimmed = s.start > 0 && after < s.records[s.start - 1]!.seq;
    return { records: s.records.slice(from, Number.isFinite(limit) ? from + limit : undefined), trimmed };
  }

  /** @internal The first and last retained sequence numbers of a shard (for DescribeStream and LATEST). */
  bounds(shardId: string): { first: number | undefined; last: number | undefined } {
    const s = this.shard(shardId);
    const r = s.retained();
    return { first: r[0]?.seq, last: r.at(-1)?.seq };
  }

  /**
   * Forgets every record up to and including sequence number `through`, in every shard: a
   * simulator that has delivered them (and will not deliver them again) keeps memory flat.
   * Retention does the same by age.
   */
  trim(through: string): void {
    for (const s of this.shardList) s.trim(Number(through));
  }

  /**
   * The sequence number of a shard's last retained record of a change before `atMs` (the model's
   * clock), or undefined when none is: where a stream re-read from an older point reads on from.
   */
  positionBefore(shardId: string, atMs: number): string | undefined {
    let last: ChangeRecord | undefined;
    for (const r of this.shard(shardId).retained()) {
      if (r.at >= atMs) break;
      last = r;
    }
    return last && sequenceNumber(last.seq);
  }

  /**
   * Whether `read(shardId, { after })` would return any record: a poller's look before it reads,
   * without copying anything out (most looks find nothing new).
   */
  hasRecordsAfter(shardId: string, after?: string): boolean {
    const s = this.shard(shardId);
    const last = s.records[s.records.length - 1];
    return last !== undefined && s.records.length > s.start && last.seq > (after === undefined ? -1 : Number(after));
  }

  /** A shard's records after a position, as Lambda hands them to a function (copies). */
  read(shardId: string, opts: ReadOptions = {}): DynamoDBRecord[] {
    return this.entries(shardId, opts.after === undefined ? -1 : Number(opts.after), opts.limit).records.map((r) => this.toLambda(r));
  }

  /**
   * `read`, keeping only the records `keep` accepts (Lambda's event filtering), and where the poller
   * is now: how many records it read and the last one's sequence number. `keep` judges a view of
   * each record that shares the model's flat images (`keep` must only read it); only the records
   * kept are copied out — a lease stream is mostly renewals that the filters drop.
   */
  readWhere(shardId: string, opts: ReadOptions, keep: ((r: DynamoDBRecord) => boolean) | undefined): { kept: DynamoDBRecord[]; read: number; last: string | undefined } {
    const records = this.entries(shardId, opts.after === undefined ? -1 : Number(opts.after), opts.limit).records;
    const kept: DynamoDBRecord[] = [];
    for (const r of records) if (!keep || keep(new FilterView(r, this.region, this.arn, this.viewType) as unknown as DynamoDBRecord)) kept.push(this.toLambda(r));
    const last = records.at(-1);
    return { kept, read: records.length, last: last && sequenceNumber(last.seq) };
  }

  /** Every retained record of every shard, in the order the changes were applied (tests, checkers). */
  records(): DynamoDBRecord[] {
    return this.shardList
      .flatMap((s) => s.retained())
      .sort((a, b) => a.seq - b.seq)
      .map((r) => this.toLambda(r));
  }

  /** Lambda's record: ApproximateCreationDateTime in epoch seconds (rounded down, as DynamoDB does). */
  toLambda(r: ChangeRecord): DynamoDBRecord {
    return lambdaRecord(r, this.region, this.arn, this.viewType);
  }

  /** The Streams API's record (GetRecords): a Date, and the identity's keys capitalized. */
  toStreamsApi(r: ChangeRecord): _Record {
    const record: _Record = shape(r, this.region, this.viewType, (i) => exportItem(i) as Record<string, StreamsAttributeValue>, new Date(Math.floor(r.at / 1000) * 1000));
    if (r.byTtl) record.userIdentity = { Type: TTL_IDENTITY.type, PrincipalId: TTL_IDENTITY.principalId };
    return record;
  }
}
