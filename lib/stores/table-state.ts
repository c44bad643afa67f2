/**
 * How DescribeTable shows a table, for whoever met a missing one (TableWait, lib/table-wait.ts: the
 * SDK's start-ups and calls, the CLI's commands): DynamoDB answers data-plane requests on a table
 * still CREATING as on one that is not there. Apart from lib/table-wait.ts, which the SDK's push
 * entry point loads, so that it keeps no DynamoDB client at run time.
 */
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { TableState } from '../table-wait.js';

/**
 * How DescribeTable shows table `name`: `missing` (ResourceNotFoundException), `creating`, `there`
 * (any other status), or `unknown` when it tells nothing (refused, as for a worker not granted
 * DescribeTable, or any other failure: the bounded wait decides then).
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
