import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { TableNames } from '../schemas/config.js';
import { createTable, deleteTable } from '../stores/table-admin.js';
import { TABLES } from '../tables.js';

/**
 * The declared tables (lib/tables.ts) made on a DynamoDB endpoint, each by createTable
 * (lib/stores/table-admin.ts): local mode, tests, benchmarks and chaos runs. In AWS the construct
 * (infra/tables.ts) makes them from the same declaration.
 */

/** Creates the tables (on-demand, streams as declared, TTL on unless `ttl: false`) and waits until they are active. */
export async function createTables(client: DynamoDBClient, names: TableNames, opts: { ttl?: boolean } = {}): Promise<void> {
  await Promise.all((Object.keys(TABLES) as (keyof TableNames)[]).map((role) => createTable(client, names[role], TABLES[role], { ttl: opts.ttl ?? true })));
}

export async function deleteTables(client: DynamoDBClient, names: TableNames): Promise<void> {
  await Promise.all(Object.values(names).map((name) => deleteTable(client, name)));
}
