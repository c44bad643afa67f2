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
  await Promise.all(
    (Object.keys(TABLES) as (keyof TableNames)[]).map(async (role) => {
      const t: TableSpec = TABLES[role];
      const keys = [t.partitionKey, ...(t.sortKey ? [t.sortKey] : [])];
      const attributes = [...new Set([...keys, ...t.indexes.map((i) => i.partitionKey)])];
      await client.send(
        new CreateTableCommand({
          TableName: names[role],
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: attributes.map((k) => ({ AttributeName: k, AttributeType: 'S' })),
          KeySchema: keys.map((k, i) => ({ AttributeName: k, KeyType: i === 0 ? 'HASH' : 'RANGE' })),
          ...(t.indexes.length
            ? { GlobalSecondaryIndexes: t.indexes.map((i) => ({ IndexName: i.name, KeySchema: [{ AttributeName: i.partitionKey, KeyType: 'HASH' as const }], Projection: { ProjectionType: 'KEYS_ONLY' as const } })) }
            : {}),
          ...(t.stream ? { StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' } } : {}),
        }),
      );
      await waitUntilTableExists({ client, maxWaitTime: 60, minDelay: 1, maxDelay: 2 }, { TableName: names[role] });
      await client.send(new UpdateTimeToLiveCommand({ TableName: names[role], TimeToLiveSpecification: { Enabled: true, AttributeName: TTL_ATTRIBUTE } }));
    }),
  );
}

export async function deleteTables(client: DynamoDBClient, names: TableNames): Promise<void> {
  await Promise.all(
    Object.values(names).map(async (TableName) => {
      try {
        await client.send(new DeleteTableCommand({ TableName }));
      } catch (e) {
        if (!(e instanceof Error && e.name === 'ResourceNotFoundException')) throw e; // already gone is fine
      }
    }),
  );
}
