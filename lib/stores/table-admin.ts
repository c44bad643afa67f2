/**
 * One declared table (lib/tables.ts' TableSpec) made on, or deleted from, a DynamoDB endpoint:
 * Conclave's tables in local mode (lib/local/tables.ts), the history's ledger (lib/history/ledger.ts)
 * and the bench's baseline table. Here, under both, so the history needs nothing of local mode.
 */
import {
  CreateTableCommand,
  DeleteTableCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { TTL_ATTRIBUTE, type TableSpec } from '../tables.js';

/**
 * Creates one table as `t` declares it (on-demand, string keys, keys-only indexes, a stream with
 * both images when declared), waits until it is active, and enables TTL on `expiresAt` if asked.
 */
export async function createTable(client: DynamoDBClient, name: string, t: TableSpec, opts: { ttl?: boolean } = {}): Promise<void> {
  const keys = [t.partitionKey, ...(t.sortKey ? [t.sortKey] : [])];
  const attributes = [...new Set([...keys, ...t.indexes.map((i) => i.partitionKey)])];
  await client.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: attributes.map((k) => ({ AttributeName: k, AttributeType: 'S' })),
      KeySchema: keys.map((k, i) => ({ AttributeName: k, KeyType: i === 0 ? 'HASH' : 'RANGE' })),
      ...(t.indexes.length
        ? { GlobalSecondaryIndexes: t.indexes.map((i) => ({ IndexName: i.name, KeySchema: [{ AttributeName: i.partitionKey, KeyType: 'HASH' as const }], Projection: { ProjectionType: 'KEYS_ONLY' as const } })) }
        : {}),
      ...(t.stream ? { StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' } } : {}),
    }),
  );
  await waitUntilTableExists({ client, maxWaitTime: 60, minDelay: 1, maxDelay: 2 }, { TableName: name });
  if (opts.ttl) await client.send(new UpdateTimeToLiveCommand({ TableName: name, TimeToLiveSpecification: { Enabled: true, AttributeName: TTL_ATTRIBUTE } }));
}

/** Deletes a table; one already gone is fine. */
export async function deleteTable(client: DynamoDBClient, name: string): Promise<void> {
  try {
    await client.send(new DeleteTableCommand({ TableName: name }));
  } catch (e) {
    if (!(e instanceof Error && e.name === 'ResourceNotFoundException')) throw e; // already gone is fine
  }
}
