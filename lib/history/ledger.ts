/**
 * The ledger: a table that leaders append to through fenced writes (LeaderElector.fencedWrite), so
 * that the checker can see which writes the database accepted and under which term. Key `lease` +
 * `id`; no stream.
 */
import { paginateScan, type DynamoDBClient, type TransactWriteItemsCommandInput } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { FencedItemInput } from '../sdk/fencing.js';
import { createTable, deleteTable } from '../stores/table-admin.js';
import { parse } from '../schemas/validation.js';
import { LedgerEntry } from './schema.js';
import { rowOf } from '../stores/item-store.js';

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

/**
 * The item of a lease's ledger that takes its appends on tables without transactions (multi-Region
 * strongly consistent ones): one item per lease, the resource that checks the sequencer. Each
 * append is fenced by the token the item carries (`fencedItemWrite`), so once a newer term has
 * appended, no older term's append lands, as the transaction's ConditionCheck of the lease ensures
 * on single-Region tables.
 */
export const LEDGER_HEAD = '~head';

/** A head item's attribute holding one entry: named by the entry's id, so an append applied twice (a retry, a duplicate) is one entry. */
const ENTRY_PREFIX = 'e:';

/** The fenced append (`fencedItemWrite`'s input) that adds `entry` to its lease's head item, idempotently. */
export function ledgerAppend(table: string, entry: LedgerEntry): FencedItemInput {
  return {
    update: {
      TableName: table,
      Key: marshall({ lease: entry.lease, id: LEDGER_HEAD }),
      UpdateExpression: 'SET #entry = :entry',
      ExpressionAttributeNames: { '#entry': `${ENTRY_PREFIX}${entry.id}` },
      ExpressionAttributeValues: marshall({ ':entry': parse(LedgerEntry, entry, 'ledger entry') }, { removeUndefinedValues: true }),
    },
  };
}

/** Every accepted write (an item each, or appended to a lease's head item), strongly consistent; a malformed entry is a ValidationError naming it. */
export async function readLedger(client: DynamoDBClient, table: string): Promise<LedgerEntry[]> {
  const out: LedgerEntry[] = [];
  for await (const r of paginateScan({ client }, { TableName: table, ConsistentRead: true })) {
    for (const raw of r.Items ?? []) {
      const item = rowOf(raw);
      const entries: unknown[] = item['id'] === LEDGER_HEAD ? Object.entries(item).filter(([k]) => k.startsWith(ENTRY_PREFIX)).map(([, v]) => v) : [item];
      for (const e of entries) out.push(parse(LedgerEntry, e, `ledger entry ${JSON.stringify((e as { id?: unknown }).id)}`));
    }
  }
  return out;
}
