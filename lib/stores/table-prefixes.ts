/**
 * The Conclave table prefixes at an endpoint, for whoever met a missing table there: the CLI (any
 * target) and the SDK (DynamoDB Local on this machine only: a worker's role in AWS may not list
 * tables, and needs not). Here, under both, so the SDK needs nothing of the CLI.
 */
import { ListTablesCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { editDistance } from '../schemas/validation.js';

/** Every table name at the client's endpoint, or undefined when they cannot be listed (refused, failed, or `signal` aborted). Best effort. */
export async function tablesThere(client: Pick<DynamoDBClient, 'send'>, signal?: AbortSignal): Promise<string[] | undefined> {
  try {
    const names: string[] = [];
    let start: string | undefined;
    do {
      const r = await client.send(new ListTablesCommand({ ExclusiveStartTableName: start }), signal ? { abortSignal: signal } : {});
      names.push(...(r.TableNames ?? []));
      start = r.LastEvaluatedTableName;
    } while (start);
    return names;
  } catch {
    return undefined; // the missing table being told is the news; a failing listing adds nothing
  }
}

/**
 * The Conclave table prefixes among `tables` (each leases table's name without `-leases`), closest
 * to `asked` first (fewest single-character edits: a mistyped prefix's own first), then by name.
 */
export function conclavePrefixes(tables: readonly string[], asked: string): string[] {
  const prefixes = tables.filter((n) => n.endsWith('-leases')).map((n) => n.slice(0, -'-leases'.length));
  const distance = new Map(prefixes.map((n) => [n, editDistance(n.toLowerCase(), asked.toLowerCase())]));
  return prefixes.sort((x, y) => distance.get(x)! - distance.get(y)! || x.localeCompare(y));
}
