/**
 * The ledger: a table that leaders append to through fenced writes (LeaderElector.fencedWrite), so
 * that the checker can see which writes the database accepted and under which term. Key `lease` +
 * `id`; no stream.
 */
import { paginateScan, type DynamoDBClient, type TransactWriteItemsCommandInput } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { createTable, deleteTable } from '../local/tables.js';
import { parse } from '../schemas/validation.js';
import { LedgerEntry } from './schema.js';

export const ledgerTableName = (prefix: string): string => `${prefix}-ledger`;

export function createLedgerTable(client: DynamoDBClient, table: string): Promise<void> {
  return createTable(client, table, { partitionKey: 'lease', sortKey: 'id', stream: false, indexes: [] });
}

export function deleteLedgerTable(client: DynamoDBClient, table: string): Promise<void> {
  return deleteTable(client, table);
}

/** The transaction a leader runs through fencedWrite to append `entry`. */
export function ledgerWrite(table: string, entry: LedgerEntry): TransactWriteItemsCommandInput {
  return { TransactItems: [{ Put: { TableName: table, Item: marshall(parse(LedgerEntry, entry, 'ledger entry')) } }] };
}

/** Every accepted write, strongly consistent; a malformed item is a ValidationError naming it. */
export async function readLedger(client: DynamoDBClient, table: string): Promise<LedgerEntry[]> {
  const out: LedgerEntry[] = [];
  for await (const r of paginateScan({ client }, { TableName: table, ConsistentRead: true })) {
    for (const raw of r.Items ?? []) {
      const item = unmarshall(raw);
      out.push(parse(LedgerEntry, item, `ledger entry ${JSON.stringify(item['id'])}`));
    }
  }
  return out;
}
