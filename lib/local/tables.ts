import {
  CreateTableCommand,
  DeleteTableCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { TableNames } from '../schemas/config.js';
import { TABLES, TTL_ATTRIBUTE, type TableSpec } from '../tables.js';

/**
 * The declared tables (lib/tables.ts) made on a DynamoDB endpoint: local mode, tests, benchmarks
 * and chaos runs. In AWS the construct (infra/tables.ts) makes them from the same declaration.
 */

/** Creates the tables (on-demand, streams as declared) and waits until they are active. */
export async function createTables(client: DynamoDBClient, names: TableNames): Promise<void> {
  await Promise.all((Object.keys(TABLES) as (keyof TableNames)[]).map((role) => createTable(client, names[role], TABLES[role], { ttl: true })));
}

/**
 * Creates one table as `t` declares it (on-demand, string keys, keys-only indexes, a stream with
 * both images when declared), waits until it is active, and enables TTL on `expiresAt` if asked.
 * Conclave's tables, the history's ledger and the bench's baseline table are all made by it.
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

export async function deleteTables(client: DynamoDBClient, names: TableNames): Promise<void> {
  await Promise.all(Object.values(names).map((name) => deleteTable(client, name)));
}

/** Deletes a table; one already gone is fine. */
export async function deleteTable(client: DynamoDBClient, name: string): Promise<void> {
  try {
    await client.send(new DeleteTableCommand({ TableName: name }));
  } catch (e) {
    if (!(e instanceof Error && e.name === 'ResourceNotFoundException')) throw e; // already gone is fine
  }
}
