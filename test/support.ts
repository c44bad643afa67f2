import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { inject } from 'vitest';
import { localClient } from '../lib/local/dynamodb-local.js';
import type { TableNames } from '../lib/schemas/config.js';
import { createTables, deleteTables, defaultTableNames } from '../lib/tables.js';

export interface TestTables {
  client: DynamoDBClient;
  names: TableNames;
  drop(): Promise<void>;
}

/** Fresh, uniquely named tables on the run's DynamoDB Local. */
export async function testTables(label: string): Promise<TestTables> {
  const client = localClient(inject('ddbEndpoint'));
  const names = defaultTableNames(`t-${label}-${randomUUID().slice(0, 8)}`);
  await createTables(client, names);
  return {
    client,
    names,
    async drop() {
      await deleteTables(client, names);
      client.destroy();
    },
  };
}

export { manualClock } from '../lib/clock.js';
