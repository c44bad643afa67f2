import { QueryCommand, UpdateItemCommand, paginateScan, type DynamoDBClient, type QueryCommandOutput } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { CandidateItem, MAX_CANDIDATE_ROW_BYTES, type Candidate } from '../schemas/candidate.js';
import { RESERVED_FROM, isReservedName } from '../schemas/run-once.js';
import { ConflictError, isConditionFailed, isReplicatedWriteConflict, retryOnConflict } from './errors.js';
import { ItemStore, type InvalidItem, type Patch, type Read, type ScanOptions, type Scanned, rowOf } from './item-store.js';

export type CandidateRead = Read<Candidate>;
export type CandidatePatch = Patch<Candidate>;

export interface CandidateList {
  candidates: Candidate[];
  /** Rows that do not match the schema: they never take part in an election. */
  invalid: InvalidItem[];
}

/**
 * The candidate rows the coordinator holds for one lease. A worker of a lease may write any number
 * of valid rows in its partition (IAM limits keys and attributes, not counts): past this, the
 * coordinator leaves that lease alone and says so (TooManyCandidatesError) rather than read, hold
 * and ping them all. 1,000 is the busy lease docs/benchmarks.md measures, at its edge.
 */
export const MAX_CANDIDATES_PER_LEASE = 1_000;

/**
 * Requests about one lease's candidates in flight at once (pings, withdrawals of pings, reads of
 * the sessions they name): an election of a thousand candidates sent all at once held a thousand
 * requests and their answers in a stream function's 256 MB, and queued most of them in the SDK
 * anyway (its sockets are 50).
 */
export const PER_LEASE_IN_FLIGHT = 25;

/** A lease with more candidate rows than the coordinator holds (MAX_CANDIDATES_PER_LEASE): left alone, no election opened or closed on it. */
export class TooManyCandidatesError extends Error {
  override readonly name = 'TooManyCandidatesError';
  constructor(
    lease: string,
    /** Rows seen: at least this many (reading stopped past the cap). */
    readonly rows: number,
  ) {
    super(`lease "${lease}": ${rows}+ candidate rows, over ${MAX_CANDIDATES_PER_LEASE}: left alone until its workers write fewer`);
  }
}

/**
 * Lease candidates, key `leaseName` + `name`. The table also holds withLease's run-once rows, under
 * reserved names (lib/schemas/run-once.ts): they are never listed or scanned as candidates, so no
 * election, garbage collection or view ever sees them.
 */
export class CandidateStore extends ItemStore<typeof CandidateItem> {
  constructor(
    client: DynamoDBClient,
    table: string,
    /** Every read strongly consistent, whatever a caller asks (multi-Region strongly consistent tables). */
    private readonly strongReadsOnly = false,
    /** list() reads no more than this many rows and one, then throws TooManyCandidatesError (the coordinator's). @default none */
    private readonly maxPerLease?: number,
  ) {
    super({ client, table, keys: ['leaseName', 'name'], schema: CandidateItem, kind: 'candidate', maxRowBytes: MAX_CANDIDATE_ROW_BYTES });
  }

  /** The row, strongly consistent unless `consistent` is false (half the read units) and the store is not strongReadsOnly; `signal` abandons it. */
  read(leaseName: string, name: string, consistent = true, signal?: AbortSignal): Promise<CandidateRead> {
    return this.get({ leaseName, name }, consistent || this.strongReadsOnly, signal);
  }

  static readOf(c: Candidate): CandidateRead {
    return { key: { leaseName: c.leaseName, name: c.name }, item: c, revision: c.revision };
  }

  /**
   * The lease's candidates: its partition below the reserved names, so its run-once rows are not
   * even read. With `maxPerLease`, no more than that many rows and one are read: more is a
   * TooManyCandidatesError. With `first`, only up to the first candidate (a row its schema takes,
   * stale or not), a row then 25 a page: whether there is one (withLease's `auto`), not every row.
   */
  async list(leaseName: string, first = false): Promise<CandidateList> {
    const max = this.maxPerLease ?? Infinity;
    const out: CandidateList = { candidates: [], invalid: [] };
    let seen = 0;
    let r: QueryCommandOutput | undefined;
    do {
      r = await this.client.send(
        new QueryCommand({ TableName: this.table, KeyConditionExpression: 'leaseName = :pk AND #n < :below', ExpressionAttributeNames: { '#n': 'name' }, ExpressionAttributeValues: marshall({ ':pk': leaseName, ':below': RESERVED_FROM }), ConsistentRead: true, Limit: first ? (r ? 25 : 1) : this.maxPerLease && max + 1 - seen, ExclusiveStartKey: r?.LastEvaluatedKey }),
      );
      for (const raw of r.Items ?? []) {
        const p = this.tryParse(rowOf(raw));
        if (p.ok) out.candidates.push(p.item);
        else out.invalid.push(p.invalid);
        if (++seen > max) throw new TooManyCandidatesError(leaseName, seen);
        if (first && p.ok) return out;
      }
    } while (r.LastEvaluatedKey);
    return out;
  }

  /** Every candidate row, one parsed page at a time; run-once rows are left out (unparsed), and those `opts.skip` picks. */
  override async *scan(opts: ScanOptions = {}): AsyncGenerator<Scanned<Candidate>[]> {
    for await (const page of super.scan({ ...opts, skip: (raw) => isReservedName(raw['name']) || !!opts.skip?.(raw) })) yield page;
  }

  /**
   * The sessions candidate rows name (`session`), for the whole table, a page at a time: a consistent
   * scan that returns only that field (the read units are the whole rows'). The coordinator keeps
   * those session rows (lib/coordinator/reconcile.ts collectIdentities): gone, they would no longer
   * vouch for their candidates.
   */
  async *scanSessions(): AsyncGenerator<string[]> {
    const pages = paginateScan(
      { client: this.client },
      { TableName: this.table, ConsistentRead: true, ProjectionExpression: '#s', FilterExpression: 'attribute_exists(#s)', ExpressionAttributeNames: { '#s': 'session' } },
    );
    for await (const r of pages) yield (r.Items ?? []).flatMap((row) => ((s) => (typeof s === 'string' ? [s] : []))(rowOf(row)['session']));
  }

  /**
   * Asks a candidate to acknowledge an election: stamps `pingTime`. Depends on nothing read, so
   * it is conditioned on the candidate still existing and not yet being pinged for this election
   * (a concurrent ack or renewal must not make it fail). False when the candidate is gone or
   * already pinged. Its answer is only that: no row (a reconcile's pings are up to PER_LEASE_IN_FLIGHT
   * of a lease's at once, each row up to MAX_CANDIDATE_ROW_BYTES, which were sent back whole and
   * parsed, for nobody to read).
   */
  async ping(leaseName: string, name: string, pingTime: number): Promise<boolean> {
    this.checkSet({ leaseName, name }, { pingTime });
    // removes the renewal mark: the renewal that answers this ping goes from no mark to 1, which
    // the candidate stream's filter delivers (lib/wiring.ts CANDIDATE_STREAM_FILTERS)
    return this.landed({ leaseName, name }, 'SET #ping = :ping REMOVE #mark', 'attribute_not_exists(#ping) OR #ping < :ping', { '#ping': 'pingTime', '#mark': 'renewalMark' }, { ':ping': pingTime });
  }

  /**
   * `update` and a raise of the revision by one, if the row exists and `condition` holds: whether it
   * landed, and nothing more. DynamoDB sends back no row, landed or refused (no ReturnValues, no
   * ReturnValuesOnConditionCheckFailure), so none is parsed or kept.
   */
  private landed(key: { leaseName: string; name: string }, update: string, condition: string, names: Record<string, string>, values: Record<string, unknown>): Promise<boolean> {
    const write = new UpdateItemCommand({
      TableName: this.table,
      Key: marshall(key),
      UpdateExpression: `${update} ADD #rev :one`,
      ConditionExpression: `attribute_exists(#pk) AND (${condition})`,
      ExpressionAttributeNames: { '#pk': 'leaseName', '#rev': 'revision', ...names },
      ExpressionAttributeValues: marshall({ ':one': 1, ...values }),
    });
    return this.client.send(write).then(
      () => true,
      (e: unknown) => {
        if (isConditionFailed(e)) return false;
        throw e;
      },
    );
  }

  /**
   * Collects a stale row (the coordinator's garbage collection) or a stopped task's (the platform
   * function's, lib/platform/vacate.ts): stamps `collectedAt`, so that its
   * removal reads as Candidate Expired (lib/events/derive.ts) however old or new its own renewTime,
   * then deletes it. Each write is conditioned on the revision before it: a row renewed since it was
   * read is a ConflictError, and lives on. On a multi-Region table, a write refused because another
   * Region wrote the row at that moment (ReplicatedWriteConflictException, thrown) is met the same
   * way: the row lives on, without the mark.
   */
  async collect(read: CandidateRead, at: number): Promise<void> {
    // the mark flips renewalMark as a renewal does, so the candidate stream's filter drops this
    // record (nothing to decide on: the removal follows); a row without the mark (pinged) passes
    const mark = read.item?.renewalMark;
    let marked: Candidate;
    try {
      marked = await this.write(read, { set: { collectedAt: at, ...(mark === undefined ? {} : { renewalMark: mark === 1 ? 2 : 1 }) } });
    } catch (e) {
      // refused by another Region's write, yet an earlier try of the AWS SDK's may have landed
      // unanswered: the mark, if there, taken back
      if (isReplicatedWriteConflict(e)) await this.unmark(read.key, at);
      throw e;
    }
    try {
      await this.delete({ key: read.key, item: marked, revision: marked.revision });
    } catch (e) {
      // renewed between the mark and the delete (a worker back from a long pause; on a multi-Region
      // table, from another Region at that moment): it lives on, and must not keep the mark, or its
      // own withdrawal later would read as Candidate Expired
      if (e instanceof ConflictError || isReplicatedWriteConflict(e)) await this.unmark(read.key, at);
      throw e;
    }
  }

  /** Takes back collect's mark `at` from a row that lives on (each try on the row read anew; a row without it, or gone, is left as it is). */
  private unmark(key: Record<string, string>, at: number): Promise<void> {
    return retryOnConflict(async () => {
      const now = await this.get(key, true);
      if (now.item?.collectedAt === at) await this.write(now, { remove: ['collectedAt'] });
    });
  }

  /**
   * Deletes a row the schema refuses (the coordinator's collection of one stale by its stamp), if
   * it still carries the `renewTime` and `revision` (as stored, whatever their type) scanned: a row
   * renewed or rewritten since stays. No `collectedAt` first: the row cannot be written as a
   * candidate, and its removal is no Candidate Expired (lib/events/derive.ts reads no such image).
   * False when it changed or is gone.
   */
  collectInvalid(key: { leaseName: string; name: string }, row: Record<string, unknown>): Promise<boolean> {
    return this.deleteAsScanned(key, row, ['renewTime', 'revision']);
  }

  /** Takes back a ping whose election closed before it could be answered (decide.ts `pingsToWithdraw`): only that ping, if still unanswered. */
  async withdrawPing(leaseName: string, name: string, pingTime: number): Promise<boolean> {
    return this.landed({ leaseName, name }, 'REMOVE #ping', '#ping = :ping AND (attribute_not_exists(#acked) OR #acked < :ping)', { '#ping': 'pingTime', '#acked': 'ackedPingTime' }, { ':ping': pingTime });
  }

  /**
   * Renews (and so acknowledges) a candidate: sets `renewTime`, and copies the row's own `pingTime`
   * into `ackedPingTime` (0 when never pinged). DynamoDB copies it, so an acknowledgement is judged
   * by the coordinator's stamp, whatever the worker's clock says. Conditioned on the row existing
   * (a collected candidate is never resurrected as a partial row) and on renewTime moving forwards
   * — except for the answer to a ping not yet answered, which is never refused because the
   * worker's clock went back. With `identity`, also on the row being that start-up's (another
   * start-up's row of the same name is never renewed). False when the condition did not hold.
   *
   * Flips `renewalMark` (absent → 1 → 2 → 1; DynamoDB computes it, as a lease renewal's): a renewal
   * that follows a renewal, with no ping between (a ping removes the mark), acknowledges nothing new
   * and changes nothing the coordinator decides on, and the candidate stream's filter drops it
   * before it invokes the function (issue 38, cheaper at rest).
   */
  async renew(leaseName: string, name: string, renewTime: number, expiresAt?: number, session?: string | null, identity?: string): Promise<boolean> {
    this.checkSet({ leaseName, name }, { renewTime, ...(expiresAt === undefined ? {} : { expiresAt }), ...(typeof session === 'string' ? { session } : {}) });
    // `session`: the session row the candidate now stands on (null: none any more; undefined: as it was)
    const sets = [...(expiresAt === undefined ? [] : [', #exp = :exp']), ...(typeof session === 'string' ? [', #sess = :sess'] : [])].join('');
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: marshall({ leaseName, name }),
          UpdateExpression: `SET #renew = :renew, #acked = if_not_exists(#ping, :none), #mark = :three - if_not_exists(#mark, :two)${sets}${session === null ? ' REMOVE #sess' : ''} ADD #rev :one`,
          ConditionExpression: `attribute_exists(#pk) AND (attribute_not_exists(#renew) OR #renew < :renew OR (attribute_exists(#ping) AND (attribute_not_exists(#acked) OR #acked < #ping)))${identity === undefined ? '' : ' AND #id = :me'}`,
          ExpressionAttributeNames: {
            ...{ '#pk': 'leaseName', '#renew': 'renewTime', '#ping': 'pingTime', '#acked': 'ackedPingTime', '#mark': 'renewalMark', '#rev': 'revision' },
            ...(expiresAt === undefined ? {} : { '#exp': 'expiresAt' }),
            ...(session === undefined ? {} : { '#sess': 'session' }),
            ...(identity === undefined ? {} : { '#id': 'identity' }),
          },
          ExpressionAttributeValues: marshall({ ':renew': renewTime, ':none': 0, ':one': 1, ':two': 2, ':three': 3, ...(expiresAt === undefined ? {} : { ':exp': expiresAt }), ...(typeof session === 'string' ? { ':sess': session } : {}), ...(identity === undefined ? {} : { ':me': identity }) }),
        }),
      );
      return true;
    } catch (e) {
      if (isConditionFailed(e)) return false;
      throw e;
    }
  }
}

/**
 * A LeaseCandidate's store: CandidateStore, and the writes only a worker's candidacy makes beyond
 * those, kept off the coordinator's class so its functions' bundles do not carry them.
 */
export class CandidacyStore extends CandidateStore {
  /**
   * Marks start-up `identity`'s row as standing down until `until` (`standsDownUntil`), or, with
   * undefined, takes the mark off. No renewal: renewTime and renewalMark stay as they were (the
   * candidate stream sees the write and reconciles the lease: candidateChangeMatters). A mark given
   * `on.renewedAt` lands only while the row's renewTime is still that: not after a renewal that
   * landed since (LeaseCandidate's timer turn, which takes the mark off). A take-off given
   * `on.marked` takes off only one of those marks: not a later stand-down's, set while the turn's
   * take-off was on its way. False when the row is gone or another start-up's, or (marking) renewed
   * since `renewedAt`, or (taking off) carries no mark, or none of `marked`. `signal` abandons it.
   */
  async markStandsDown(leaseName: string, name: string, identity: string, until: number | undefined, on: { readonly renewedAt?: number; readonly marked?: readonly number[] } = {}, signal?: AbortSignal): Promise<boolean> {
    const { renewedAt, marked } = on;
    const off = until === undefined;
    const renewed = !off && renewedAt !== undefined;
    const only = off && marked !== undefined ? [...new Set(marked)] : undefined;
    if (only?.length === 0) return false; // no mark named: none taken off
    this.checkSet({ leaseName, name }, off ? {} : { standsDownUntil: until });
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: marshall({ leaseName, name }),
          UpdateExpression: `${off ? 'REMOVE #down' : 'SET #down = :until'} ADD #rev :one`,
          ConditionExpression: `attribute_exists(#pk) AND #id = :me${off ? (only ? ` AND #down IN (${only.map((_, i) => `:marked${i}`).join(', ')})` : ' AND attribute_exists(#down)') : ''}${renewed ? ' AND #renew = :renewed' : ''}`,
          ExpressionAttributeNames: { '#pk': 'leaseName', '#id': 'identity', '#down': 'standsDownUntil', '#rev': 'revision', ...(renewed ? { '#renew': 'renewTime' } : {}) },
          ExpressionAttributeValues: marshall({ ':me': identity, ':one': 1, ...(off ? {} : { ':until': until }), ...(renewed ? { ':renewed': renewedAt } : {}), ...Object.fromEntries((only ?? []).map((m, i) => [`:marked${i}`, m])) }),
        }),
        { abortSignal: signal },
      );
      return true;
    } catch (e) {
      if (isConditionFailed(e)) return false;
      throw e;
    }
  }
}
