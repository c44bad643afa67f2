import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createTable, deleteTable } from '../../lib/stores/table-admin.js';

/**
 * The baseline's own table beside Conclave's. Nothing reacts to its stream: the bench reads it
 * afterwards to learn a crashed holder's last renewal exactly (bench/expiry.ts), as it reads
 * Conclave's lease stream. Streams cost the lock nothing: no request of the workers changes.
 */
export const baselineTableName = (prefix: string): string => `${prefix}-baseline-locks`;

export function createBaselineTable(client: DynamoDBClient, table: string): Promise<void> {
  return createTable(client, table, { partitionKey: 'name', stream: true, indexes: [] });
}

export function deleteBaselineTable(client: DynamoDBClient, table: string): Promise<void> {
  return deleteTable(client, table);
}
