import { CreateTableCommand, DeleteTableCommand, waitUntilTableExists, type DynamoDBClient } from '@aws-sdk/client-dynamodb';

/**
 * The baseline's own table beside Conclave's. Nothing reacts to its stream: the bench reads it
 * afterwards to learn a crashed holder's last renewal exactly (bench/expiry.ts), as it reads
 * Conclave's lease stream. Streams cost the lock nothing: no request of the workers changes.
 */
export const baselineTableName = (prefix: string): string => `${prefix}-baseline-locks`;

export async function createBaselineTable(client: DynamoDBClient, table: string): Promise<void> {
  await client.send(
    new CreateTableCommand({
      TableName: table,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'name', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'name', KeyType: 'HASH' }],
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
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
