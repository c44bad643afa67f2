/**
 * The past-expiry delay of a crash failover: how long after the dead leader's term ran out the
 * new leader acted. The term runs out at its last renewal's `renewTime` plus the row's
 * `leaseDurationSeconds`, as the lease row states it; the new leader acts at its
 * onStartedLeading (its `started` line), on the same machine clock.
 *
 * Which renewal was the last is read from the table's stream, not from polling the row: the
 * stream holds every write the table applied to the item, in order, including a renewal sent just
 * before the kill that landed after it, and the successor's takeover (whose old image is the row
 * as the dead term left it). So the last renewal is known exactly, whatever the timing of the
 * observer's reads; no renewal can slip between two reads. Both tables have streams with old and
 * new images (Conclave's by lib/tables.ts, the baseline's by bench/baseline/table.ts for this).
 */
import { DescribeStreamCommand, DynamoDBStreamsClient, GetRecordsCommand, GetShardIteratorCommand, type _Record } from '@aws-sdk/client-dynamodb-streams';
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';

/** An item image from a stream record (unmarshalled). */
export type Image = Record<string, unknown>;

/** A term on the lock: the lease, its holder, and the number that tells its terms apart. */
export interface TermKey {
  name: string;
  holder: string;
  /** Conclave: the term's fencingToken; the baseline: its leaseTransitions (what its `started` line prints). */
  token: number;
  /** Which attribute holds `token`. */
  tokenField: 'fencingToken' | 'leaseTransitions';
}

export interface LastRenewal {
  /** The holder's stamp on its last renewal that the table applied (ms). */
  renewTime: number;
  leaseDurationSeconds: number;
  /** renewTime + leaseDurationSeconds: when the term ran out, as the row said. */
  expiresAt: number;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/**
 * The last renewal of `term` among the images (old and new, in stream order): the greatest
 * renewTime of any image of that term. A write of that term that is not a renewal (a successor
 * named, a vacancy reported) carries the renewTime it found, so it changes nothing here.
 */
export function lastRenewal(images: readonly Image[], term: TermKey): LastRenewal | undefined {
  let best: LastRenewal | undefined;
  for (const i of images) {
    if (i['name'] !== term.name || i['holderIdentity'] !== term.holder || i[term.tokenField] !== term.token) continue;
    const renewTime = num(i['renewTime']);
    const leaseDurationSeconds = num(i['leaseDurationSeconds']);
    if (renewTime === undefined || leaseDurationSeconds === undefined) continue;
    if (!best || renewTime > best.renewTime) best = { renewTime, leaseDurationSeconds, expiresAt: renewTime + leaseDurationSeconds * 1000 };
  }
  return best;
}

/** The new leader's onStartedLeading minus the old term's expiry (ms): > 0 late, < 0 before the term ran out. */
export const pastExpiryMs = (last: Pick<LastRenewal, 'expiresAt'>, startedAt: number): number => startedAt - last.expiresAt;

/** Reads a table's stream from its oldest record: every image (old, then new) of every record, in order. */
export class StreamReader {
  private readonly arns = new Map<string, string>();

  constructor(
    private readonly db: DynamoDBClient,
    private readonly streams: DynamoDBStreamsClient,
  ) {}

  private async arn(table: string): Promise<string> {
    let arn = this.arns.get(table);
    if (!arn) {
      arn = (await this.db.send(new DescribeTableCommand({ TableName: table }))).Table?.LatestStreamArn;
      if (!arn) throw new Error(`table ${table} has no stream`);
      this.arns.set(table, arn);
    }
    return arn;
  }

  /** Every image of the items named `name` (all when undefined) on `table`'s stream so far. */
  async images(table: string, name?: string): Promise<Image[]> {
    const streamArn = await this.arn(table);
    const records: _Record[] = [];
    let start: string | undefined;
    for (;;) {
      const d = await this.streams.send(new DescribeStreamCommand({ StreamArn: streamArn, ...(start ? { ExclusiveStartShardId: start } : {}) }));
      for (const shard of d.StreamDescription?.Shards ?? []) {
        let iterator = (await this.streams.send(new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: shard.ShardId!, ShardIteratorType: 'TRIM_HORIZON' }))).ShardIterator;
        while (iterator) {
          const r = await this.streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: 1000 }));
          records.push(...(r.Records ?? []));
          // an open shard hands out iterators forever: an empty page means caught up (DynamoDB Local has no gaps)
          iterator = r.Records?.length ? r.NextShardIterator : undefined;
        }
      }
      start = d.StreamDescription?.LastEvaluatedShardId;
      if (!start) break;
    }
    const out: Image[] = [];
    for (const r of records) {
      for (const raw of [r.dynamodb?.OldImage, r.dynamodb?.NewImage]) {
        if (!raw) continue;
        const image = unmarshall(raw as Parameters<typeof unmarshall>[0]);
        if (name === undefined || image['name'] === name) out.push(image);
      }
    }
    return out;
  }

  destroy(): void {
    this.streams.destroy();
  }
}
