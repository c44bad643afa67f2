import { CreateTableCommand, DeleteTableCommand, waitUntilTableExists, type DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** The baseline's own table beside Conclave's (no stream: nothing reacts to it). */
export const baselineTableName = (prefix: string): string => `${prefix}-baseline-locks`;

export async function createBaselineTable(client: DynamoDBClient, table: string): Promise<void> {
  await client.send(
    new CreateTableCommand({
      TableName: table,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'name', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'name', KeyType: 'HASH' }],
    }),
  );
  await waitUntilTableExists({ client, maxWaitTime: 60, minDelay: 1, maxDelay: 2 }, { TableName: table });
}

export async function deleteBaselineTable(client: DynamoDBClient, table: string): Promise<void> {
  try {
    await client.send(new DeleteTableCommand({ TableName: table }));
  } catch (e) {
    if (!(e instanceof Error && e.name === 'ResourceNotFoundException')) throw e; // already gone is fine
  }
}
