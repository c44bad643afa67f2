import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { TableNames } from '../schemas/config.js';
import { createTable, declaredShape, deleteTable, foundShapeDifferences, TableShapeError } from '../stores/table-admin.js';
import { TABLES } from '../tables.js';

/**
 * The declared tables (lib/tables.ts) made on a DynamoDB endpoint, each by createTable
 * (lib/stores/table-admin.ts): local mode, tests, benchmarks and chaos runs. In AWS the construct
 * (infra/tables.ts) makes them from the same declaration.
 */

export interface CreateTablesOptions {
  /** TTL on `expiresAt`. @default true */
  readonly ttl?: boolean;
  /**
   * Tables of these names already at `endpoint` (a DynamoDB Local kept across runs: local mode
   * started again on it) are reused, rows and streams as they are, if they have the declared
   * shape; any of another shape is one TableShapeError naming each, what differs and the fix, and
   * then no table is made. Without
   * it, a table already there is DynamoDB's ResourceInUseException.
   */
  readonly reuseAt?: { readonly endpoint: string };
}

/**
 * What each table is, in a TableShapeError: its role and the shape declared for it, spelled out
 * (a user of the package has the error, not this repository's declaration to look it up in).
 */
const what = (role: keyof TableNames, ttl: boolean) => `Conclave's ${role} table (declared: ${declaredShape(TABLES[role], { ttl })})`;

/** What to do about tables of another shape at `endpoint`: another prefix, or delete them (made again as declared on the next start). */
const fixFor = (tables: readonly string[], endpoint: string) =>
  `choose another table prefix (conclave-local: --table-prefix; startLocalConclave: tablePrefix), or delete ${tables.length === 1 ? 'the table if nothing else needs it, its rows with it' : 'these tables if nothing else needs them, their rows with them'} ` +
  `(${tables.map((t) => `aws dynamodb delete-table --table-name ${t} --endpoint-url ${endpoint}`).join('; ')}), and the next start creates ${tables.length === 1 ? 'it' : 'them'} as declared`;

/**
 * Creates the tables (on-demand, streams as declared, TTL on unless `ttl: false`) and waits until
 * they are active. With `reuseAt`, every table already there is looked at before any is made: if
 * one or more have another shape, one TableShapeError names each and its differences, and no table
 * is made (a prefix left with some tables of Conclave's and one of someone else's would be of use
 * to nobody).
 */
export async function createTables(client: DynamoDBClient, names: TableNames, opts: CreateTablesOptions = {}): Promise<void> {
  const reuse = opts.reuseAt;
  const roles = Object.keys(TABLES) as (keyof TableNames)[];
  const ttl = opts.ttl ?? true;
  if (reuse) {
    const found = await Promise.all(roles.map(async (role) => ({ table: names[role], what: what(role, ttl), differences: await foundShapeDifferences(client, names[role], TABLES[role], { ttl }) })));
    const wrong = found.filter((f) => f.differences.length);
    if (wrong.length) throw new TableShapeError(wrong, fixFor(wrong.map((w) => w.table), reuse.endpoint));
  }
  await Promise.all(
    roles.map((role) =>
      createTable(client, names[role], TABLES[role], {
        ttl,
        // (a table made meanwhile by someone else is still looked at by createTable)
        ...(reuse && { ifExists: 'reuse' as const, describedAs: { what: what(role, ttl), fix: fixFor([names[role]], reuse.endpoint) } }),
      }),
    ),
  );
}

export async function deleteTables(client: DynamoDBClient, names: TableNames): Promise<void> {
  await Promise.all(Object.values(names).map((name) => deleteTable(client, name)));
}
