import { isDeepStrictEqual } from 'node:util';
import { GetItemCommand, UpdateItemCommand, type AttributeValue, type DynamoDBClient, type TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { RunOnceRow, type WindowRun } from '../schemas/run-once.js';
import { parse } from '../schemas/validation.js';
import { ConflictError, isConditionFailed } from './errors.js';
import { rowOf } from './item-store.js';

/** A run-once row as read: the runs it records (none when it does not exist) and its revision (0 then). */
export interface RunOnceRead {
  readonly runs: readonly WindowRun[];
  readonly revision: number;
}

/**
 * withLease's run-once rows (lib/schemas/run-once.ts): in the candidates table, key `leaseName` +
 * a reserved `name`. Read in the run's term; written only as an item of its fenced transaction.
 */
export class RunOnceStore {
  constructor(
    private readonly client: DynamoDBClient,
    readonly table: string,
  ) {}

  /**
   * The row `name` of the lease, strongly consistent. A malformed row is a ValidationError: a run that cannot tell what ran does not run.
   * `signal` abandons the request when it aborts.
   */
  async read(leaseName: string, name: string, signal?: AbortSignal): Promise<RunOnceRead & { fence: number | undefined }> {
    const r = await this.client.send(new GetItemCommand({ TableName: this.table, Key: marshall({ leaseName, name }), ConsistentRead: true }), { abortSignal: signal });
    return this.parsed(leaseName, name, r.Item ? rowOf(r.Item) : undefined);
  }

  /**
   * Reads the row `name` in the term of `fencingToken`, and claims it for that term: the row's
   * `fence` becomes the token (one UpdateItem, conditioned on no newer term having claimed it), so
   * no older term's mark can land on it from now on. This is the HA proposal's sequence number,
   * checked by the row itself: no transaction, so it works on multi-Region tables too.
   * @returns `{ higherFence }` when the row carries a higher token than `fencingToken` (DynamoDB's
   * ALL_OLD: undefined when not told): a term with a higher token claimed it, a later holder's, or an
   * earlier one's when tokens went backwards after the lease row was deleted
   * `signal` abandons the request when it aborts.
   */
  async claim(leaseName: string, name: string, fencingToken: number, signal?: AbortSignal): Promise<RunOnceRead | { readonly higherFence: number | undefined }> {
    try {
      const r = await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: marshall({ leaseName, name }),
          UpdateExpression: 'SET #fence = :token',
          ConditionExpression: 'attribute_not_exists(#fence) OR #fence <= :token',
          ExpressionAttributeNames: { '#fence': 'fence' },
          ExpressionAttributeValues: marshall({ ':token': fencingToken }),
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
        { abortSignal: signal },
      );
      return this.parsed(leaseName, name, r.Attributes ? rowOf(r.Attributes) : undefined);
    } catch (e) {
      if (isConditionFailed(e)) {
        const fence = (e as { Item?: Record<string, AttributeValue> }).Item?.['fence']?.N;
        return { higherFence: fence === undefined ? undefined : Number(fence) };
      }
      throw e;
    }
  }

  /**
   * Makes `runs` the row's list, if the row is still at `read`'s revision and claimed by the term of
   * `fencingToken` (one conditional UpdateItem, no transaction).
   * @returns false when a newer term has claimed the row since
   * @throws ConflictError when the row's revision moved, which only a write from outside the term can do
   * `signal` abandons the request, and the read back after a refusal, when it aborts.
   */
  async complete(leaseName: string, name: string, runs: readonly WindowRun[], read: RunOnceRead, fencingToken: number, signal?: AbortSignal): Promise<boolean> {
    const { Update } = this.writeItem(leaseName, name, runs, read, fencingToken);
    try {
      await this.client.send(new UpdateItemCommand(Update!), { abortSignal: signal });
      return true;
    } catch (e) {
      if (!isConditionFailed(e)) throw e;
      // abandoned with the write: the caller's signal bounds the whole of it
      const now = await this.read(leaseName, name, signal);
      if (now.fence !== undefined && now.fence > fencingToken) return false;
      // its own write, landed with its answer lost (the AWS SDK sent it again, and the copy was
      // refused by it): the row is as this term wrote it
      if (this.wrote(now, leaseName, name, runs, read, fencingToken)) return true;
      throw new ConflictError(`run-once row "${name}" of lease "${leaseName}"`, read.revision, { revision: now.revision });
    }
  }

  /** Whether `now` is the row that the term of `fencingToken` left by writing `runs` over `read` (writeItem): that write landed. */
  wrote(now: RunOnceRead & { fence: number | undefined }, leaseName: string, name: string, runs: readonly WindowRun[], read: RunOnceRead, fencingToken: number): boolean {
    return now.fence === fencingToken && now.revision === read.revision + 1 && isDeepStrictEqual(now.runs, this.row(leaseName, name, runs, read).runs ?? []);
  }

  /**
   * The write (a transaction item) that makes `runs` the row's list, if the row is still at `read`'s
   * revision and claimed by the term of `fencingToken`. An UpdateItem naming only the key, `runs`,
   * `revision` and `fence` (what the worker policy lets it name: infra/access.ts).
   */
  writeItem(leaseName: string, name: string, runs: readonly WindowRun[], read: RunOnceRead, fencingToken: number): TransactWriteItem {
    const row = this.row(leaseName, name, runs, read);
    return {
      Update: {
        TableName: this.table,
        Key: marshall({ leaseName, name }),
        UpdateExpression: 'SET #runs = :runs, #rev = :next',
        ConditionExpression: `#fence = :token AND ${read.revision === 0 ? 'attribute_not_exists(#rev)' : '#rev = :rev'}`,
        ExpressionAttributeNames: { '#runs': 'runs', '#rev': 'revision', '#fence': 'fence' },
        ExpressionAttributeValues: marshall({ ':runs': row.runs, ':next': row.revision, ':token': fencingToken, ...(read.revision === 0 ? {} : { ':rev': read.revision }) }),
      },
    };
  }

  /** The row `writeItem` writes over `read`, validated. */
  private row(leaseName: string, name: string, runs: readonly WindowRun[], read: RunOnceRead): RunOnceRow {
    return parse(RunOnceRow, { leaseName, name, runs, revision: read.revision + 1 }, `run-once row "${name}" of lease "${leaseName}"`);
  }

  private parsed(leaseName: string, name: string, raw: Record<string, unknown> | undefined): RunOnceRead & { fence: number | undefined } {
    if (!raw) return { runs: [], revision: 0, fence: undefined };
    const row = parse(RunOnceRow, raw, `run-once row "${name}" of lease "${leaseName}" in table ${this.table}`);
    return { runs: row.runs ?? [], revision: row.revision ?? 0, fence: row.fence };
  }
}
