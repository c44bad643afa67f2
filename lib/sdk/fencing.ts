import {
  TransactWriteItemsCommand,
  type DynamoDBClient,
  type TransactWriteItemsCommandInput,
  type TransactWriteItemsCommandOutput,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { termCondition, type Term } from '../stores/lease-store.js';

/** DynamoDB's limit on items in one transaction; the fence takes one of them. */
const MAX_TRANSACTION_ITEMS = 100;

/**
 * A fenced write was refused: the lease is no longer in the writer's term (another holder, a
 * newer fencing token, or no holder). Nothing of the transaction was written.
 */
export class FencingError extends Error {
  /** Always `FencingError`. */
  override readonly name = 'FencingError';
  constructor(
    /** The lease the write was fenced by. */
    readonly leaseName: string,
    /** The writer's term's fencing token (undefined: the writer was not leading). */
    readonly fencingToken: number | undefined,
    reason = 'the lease is no longer in this term',
  ) {
    super(`fenced write on lease "${leaseName}"${fencingToken === undefined ? '' : ` with fencing token ${fencingToken}`} refused: ${reason}; nothing was written`);
  }
}

/**
 * Runs `input` as one DynamoDB transaction with an extra ConditionCheck: the lease's holder and
 * fencing token are still `term`'s (the "sequence number" of the old HA proposal). A deposed or
 * paused leader's write fails with FencingError and writes nothing; any other cancellation is
 * rethrown as DynamoDB reported it.
 */
export async function fencedTransactWrite(
  client: DynamoDBClient,
  fence: { table: string; leaseName: string; term: Term },
  input: TransactWriteItemsCommandInput,
): Promise<TransactWriteItemsCommandOutput> {
  const items = input.TransactItems ?? [];
  if (items.length === 0) throw new RangeError('fencedTransactWrite: TransactItems is empty; give at least one write');
  if (items.length >= MAX_TRANSACTION_ITEMS)
    throw new RangeError(`fencedTransactWrite: ${items.length} items leave no room for the fence (DynamoDB allows ${MAX_TRANSACTION_ITEMS} per transaction); split the write`);
  const c = termCondition(fence.term);
  const check = {
    ConditionCheck: {
      TableName: fence.table,
      Key: marshall({ name: fence.leaseName }),
      ConditionExpression: c.expression,
      ExpressionAttributeNames: c.names,
      ExpressionAttributeValues: marshall(c.values),
    },
  };
  try {
    return await client.send(new TransactWriteItemsCommand({ ...input, TransactItems: [...items, check] }));
  } catch (e) {
    const reasons = (e as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
    if (e instanceof Error && e.name === 'TransactionCanceledException' && reasons?.[items.length]?.Code === 'ConditionalCheckFailed') {
      throw new FencingError(fence.leaseName, fence.term.fencingToken);
    }
    throw e;
  }
}
