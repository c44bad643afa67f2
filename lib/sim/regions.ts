/**
 * DynamoDB's multi-Region strong consistency (MRSC), as a layer in front of the one model: three
 * Regions in one Region set (three replicas, or two replicas and a witness), and what each Region's
 * endpoint does with a request (DynamoDB Developer Guide, "How DynamoDB global tables work",
 * consistency modes; docs/deploy.md):
 *
 * - **One truth.** Every write and every strongly consistent read is linearizable across the
 *   Regions: the model is that one copy. A write or strong read pays a round trip to the nearest
 *   other member of the set (replica or witness) before it is applied.
 * - **Quorum.** A Region serves writes and strong reads only while it reaches another member (a
 *   replica or the witness). Cut off from both, it answers them with a 500 (the SDK retries, then
 *   gives up); eventually consistent reads it still serves, from its own copy (here: the model,
 *   which a cut-off Region's copy is never newer than, so such a read may only be older in AWS).
 * - **Catching up.** A Region that rejoins answers every request with a 500 until it has caught up.
 * - **Replicated write conflicts.** A write to an item that a write from another Region is still
 *   changing fails with ReplicatedWriteConflictException and is not applied (the SDK retries it).
 * - **No transactions, no TTL** on MRSC tables: a TransactWriteItems is a ValidationException.
 * - **A lost Region** answers nothing; its streams stop. A cut-off Region's stream sees nothing new.
 *
 * The witness serves no request and holds no data: it only gives the quorum.
 */
import { ReplicatedWriteConflictException } from '@aws-sdk/client-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { faults, validationError } from './dynamodb-model/errors.js';
import type { Apply, ModelRequest } from './dynamodb-model/index.js';

/** The Region set: exactly three Regions, three replicas or two and a witness. */
export interface RegionSetOptions {
  readonly replicas: readonly string[];
  readonly witness?: string | undefined;
  /** One-way latency between two Regions, drawn per request in [min, max] ms. */
  readonly crossRegionMs: readonly [number, number];
  /** How long a Region that rejoins answers errors before it has caught up. */
  readonly catchUpMs: number;
  /** The key attributes of a table, to tell which item a request changes. */
  readonly keysOf: (table: string) => readonly string[];
}

/** What a Region's endpoint does now. */
export type RegionStatus = 'serving' | 'no-quorum' | 'catching-up' | 'lost';

/** The clock and the random numbers the layer waits and draws on (the world's). */
export interface RegionClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem']);
const READS = new Set(['GetItem', 'Query', 'Scan', 'BatchGetItem']);
const STREAMS = new Set(['GetRecords', 'GetShardIterator', 'DescribeStream', 'ListStreams']);

const hang = () => new Promise<never>(() => undefined);

export class RegionSet {
  readonly members: readonly string[];
  private readonly cut = new Set<string>();
  private readonly lost = new Set<string>();
  private readonly caughtUpAt = new Map<string, number>();
  /** Item → the Region whose write is changing it, until when. */
  private readonly changing = new Map<string, { region: string; until: number }>();

  constructor(
    private readonly clock: RegionClock,
    private readonly random: () => number,
    private readonly o: RegionSetOptions,
  ) {
    const members = [...o.replicas, ...(o.witness !== undefined ? [o.witness] : [])];
    if (members.length !== 3 || new Set(members).size !== 3)
      throw new RangeError(`an MRSC Region set is exactly three distinct Regions (three replicas, or two and a witness); got ${JSON.stringify(members)}`);
    if (o.witness !== undefined && o.replicas.length !== 2) throw new RangeError('a witness goes with exactly two replicas');
    this.members = members;
  }

  /** Whether `region` holds a replica (the witness serves nothing). */
  isReplica(region: string): boolean {
    return this.o.replicas.includes(region);
  }

  /** The Region loses its links to every other member until rejoin(). */
  cutOff(region: string): void {
    this.member(region);
    this.cut.add(region);
  }

  /** The links come back: the Region answers errors while it catches up, then serves. */
  rejoin(region: string): void {
    this.member(region);
    if (!this.cut.delete(region)) return;
    this.caughtUpAt.set(region, this.clock.now() + this.o.catchUpMs);
  }

  /** The Region is gone for good: it answers nothing, gives nobody a quorum. */
  lose(region: string): void {
    this.member(region);
    this.lost.add(region);
  }

  status(region: string): RegionStatus {
    if (this.lost.has(region)) return 'lost';
    if (!this.reaches(region)) return 'no-quorum';
    if ((this.caughtUpAt.get(region) ?? 0) > this.clock.now()) return 'catching-up';
    return 'serving';
  }

  /**
   * One attempt of one request sent to `region`'s endpoint, `apply` doing it on the model: waits,
   * refuses or applies as MRSC would. (The network between the process and its Region's endpoint
   * is the caller's.)
   */
  async serve(region: string, req: ModelRequest, apply: Apply): Promise<unknown> {
    const status = this.status(region);
    if (status === 'lost') return hang();
    if (req.operation === 'TransactWriteItems') throw validationError('Transactions are not supported on tables with multi-Region strong consistency');
    if (status === 'catching-up') throw faults.internalServerError();
    if (STREAMS.has(req.operation)) {
      // a cut-off Region's stream gets no records from elsewhere: its readers wait until it rejoins
      if (status !== 'serving') throw faults.internalServerError();
      return apply();
    }
    const strong = WRITES.has(req.operation) || (READS.has(req.operation) && (req.input as { ConsistentRead?: boolean }).ConsistentRead === true);
    if (!strong) return apply();
    if (status === 'no-quorum') throw faults.internalServerError();
    const rtt = 2 * this.nearest(region);
    if (!WRITES.has(req.operation)) {
      await this.clock.sleep(rtt);
      return apply();
    }
    const keys = this.itemsOf(req);
    const now = this.clock.now();
    for (const k of keys) {
      const c = this.changing.get(k);
      if (c && c.region !== region && c.until > now) {
        throw new ReplicatedWriteConflictException({ message: 'One or more items in this request are being modified by a request in another Region', $metadata: { httpStatusCode: 400 } });
      }
    }
    const mine = { region, until: now + rtt };
    for (const k of keys) this.changing.set(k, mine);
    try {
      await this.clock.sleep(rtt);
      // the quorum may have gone while the write was on its way: it is not applied
      if (this.status(region) !== 'serving') throw faults.internalServerError();
      return apply();
    } finally {
      for (const k of keys) if (this.changing.get(k) === mine) this.changing.delete(k);
    }
  }

  private member(region: string): void {
    if (!this.members.includes(region)) throw new RangeError(`"${region}" is not in the Region set ${JSON.stringify(this.members)}`);
  }

  /** Whether `region` has a link to a live member other than itself. */
  private reaches(region: string): boolean {
    if (this.cut.has(region) || this.lost.has(region)) return false;
    return this.members.some((m) => m !== region && !this.cut.has(m) && !this.lost.has(m));
  }

  /** One-way latency to the nearest live member, drawn. */
  private nearest(region: string): number {
    const [lo, hi] = this.o.crossRegionMs;
    let best = Infinity;
    for (const m of this.members) if (m !== region && !this.cut.has(m) && !this.lost.has(m)) best = Math.min(best, lo + this.random() * (hi - lo));
    return best;
  }

  /** The items a write changes, as `table/key`. */
  private itemsOf(req: ModelRequest): string[] {
    const input = req.input as { TableName?: string; Key?: Record<string, AttributeValue>; Item?: Record<string, AttributeValue>; RequestItems?: Record<string, { PutRequest?: { Item: Record<string, AttributeValue> }; DeleteRequest?: { Key: Record<string, AttributeValue> } }[]> };
    const key = (table: string, item: Record<string, AttributeValue> | undefined) => `${table}/${this.o.keysOf(table).map((k) => JSON.stringify(item?.[k] ?? null)).join('/')}`;
    if (input.RequestItems) return Object.entries(input.RequestItems).flatMap(([t, rs]) => rs.map((r) => key(t, r.PutRequest?.Item ?? r.DeleteRequest?.Key)));
    const table = input.TableName ?? '';
    return [key(table, input.Key ?? input.Item)];
  }
}
