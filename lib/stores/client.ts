import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';

/**
 * A DynamoDB client for an explicit endpoint (DynamoDB Local, another emulator), shared by the
 * CLI's `--endpoint` and the local runtime. No dependencies beyond the SDK client: the CLI must
 * not load the DynamoDB Local launcher (lib/local/dynamodb-local.ts) to talk to one.
 */

/** DynamoDB Local accepts any credentials; these keep the SDK from looking for real ones. */
export const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;
export const LOCAL_REGION = 'local';

/** A client for `endpoint` with dummy credentials; `region` only when the endpoint cares (default 'local'); `more`: the client's other settings. */
export function localClient(endpoint: string, region: string = LOCAL_REGION, more: Omit<DynamoDBClientConfig, 'endpoint' | 'region' | 'credentials'> = {}): DynamoDBClient {
  return new DynamoDBClient({ maxAttempts: 3, ...more, endpoint, region, credentials: LOCAL_CREDENTIALS });
}
