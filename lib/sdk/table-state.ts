/**
 * How DescribeTable shows a table, for a start-up that met a missing one (StartUp.cannotStart,
 * lib/sdk/options.ts): DynamoDB answers data-plane requests on a table still CREATING as on one
 * that is not there. Apart from options.ts, which the push entry point imports, so that it keeps
 * no DynamoDB client at run time.
 */
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { TableState } from './options.js';

/**
 * How DescribeTable shows table `name`: `missing` (ResourceNotFoundException), `creating`, `there`
 * (any other status), or `unknown` when it tells nothing (refused, as for a worker not granted
 * DescribeTable, or any other failure: the start-up's bounded wait decides then).
 */
export const tableState =
  (client: DynamoDBClient) =>
  async (name: string): Promise<TableState> => {
    try {
      const t = (await client.send(new DescribeTableCommand({ TableName: name }))).Table;
      return t?.TableStatus === 'CREATING' ? 'creating' : 'there';
    } catch (e) {
      return (e as Error).name === 'ResourceNotFoundException' ? 'missing' : 'unknown';
    }
  };
