import { GetItemCommand, type DynamoDBClient, type TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type { CompletedRun } from '../schemas/lease.js';
import { RunOnceRow } from '../schemas/run-once.js';
import { parse } from '../schemas/validation.js';

/** A run-once row as read: the runs it records (none when it does not exist) and its revision (0 then). */
export interface RunOnceRead {
  readonly runs: readonly CompletedRun[];
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

  /** The row `name` of the lease, strongly consistent. A malformed row is a ValidationError: a run that cannot tell what ran does not run. */
  async read(leaseName: string, name: string): Promise<RunOnceRead> {
    const r = await this.client.send(new GetItemCommand({ TableName: this.table, Key: marshall({ leaseName, name }), ConsistentRead: true }));
    if (!r.Item) return { runs: [], revision: 0 };
    const row = parse(RunOnceRow, unmarshall(r.Item), `run-once row "${name}" of lease "${leaseName}" in table ${this.table}`);
    return { runs: row.runs, revision: row.revision };
  }

  /**
   * The transaction item that makes `runs` the row's list, if the row is still at `read`'s
   * revision (0: it must not exist yet). An UpdateItem naming only the key, `runs` and `revision`
   * (what the worker policy lets it name: infra/access.ts).
   */
  writeItem(leaseName: string, name: string, runs: readonly CompletedRun[], read: RunOnceRead): TransactWriteItem {
    const row = parse(RunOnceRow, { leaseName, name, runs, revision: read.revision + 1 }, `run-once row "${name}" of lease "${leaseName}"`);
    return {
      Update: {
        TableName: this.table,
        Key: marshall({ leaseName, name }),
        UpdateExpression: 'SET #runs = :runs, #rev = :next',
        ConditionExpression: read.revision === 0 ? 'attribute_not_exists(#runs)' : '#rev = :rev',
        ExpressionAttributeNames: { '#runs': 'runs', '#rev': 'revision' },
        ExpressionAttributeValues: marshall({ ':runs': row.runs, ':next': row.revision, ...(read.revision === 0 ? {} : { ':rev': read.revision }) }),
      },
    };
  }
}
