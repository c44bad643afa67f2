import {
  CreateTableCommand,
  DeleteTableCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { TableNames } from './schemas/config.js';

/**
 * The three tables, declared once: local mode creates them from this, the CDK construct too.
 * All keys are strings; streams carry old and new images; `expiresAt` is the TTL attribute
 * (a backstop behind active garbage collection).
 */
export const TABLES = {
  leases: { partitionKey: 'name', stream: true, indexes: [{ name: 'byHolderPlatform', partitionKey: 'holderPlatformId' }] },
  candidates: { partitionKey: 'leaseName', sortKey: 'name', stream: true, indexes: [] },
  identities: { partitionKey: 'component', sortKey: 'name', stream: false, indexes: [] },
} as const satisfies Record<keyof TableNames, TableSpec>;

/**
 * A global secondary index: string keys, keys-only projection (whoever queries it reads the
 * item itself, consistently, before writing). Sparse: only items with the key attribute are in it.
 */
export interface IndexSpec {
  readonly name: string;
  readonly partitionKey: string;
}

export interface TableSpec {
  readonly partitionKey: string;
  readonly sortKey?: string;
  readonly stream: boolean;
  readonly indexes: readonly IndexSpec[];
}

/** The leases held by one ECS task or EC2 instance (the platform handler's lookup: a query, not a scan). */
export const HOLDER_PLATFORM_INDEX = TABLES.leases.indexes[0];

export const TTL_ATTRIBUTE = 'expiresAt';

export const defaultTableNames = (prefix = 'conclave'): TableNames => ({
  leases: `${prefix}-leases`,
  candidates: `${prefix}-candidates`,
  identities: `${prefix}-identities`,
});

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
