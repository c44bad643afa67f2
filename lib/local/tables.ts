import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { TableNames } from '../schemas/config.js';
import { createTable, deleteTable } from '../stores/table-admin.js';
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
   * shape; one of another shape is a TableShapeError naming it, what differs and the fix. Without
   * it, a table already there is DynamoDB's ResourceInUseException.
   */
  readonly reuseAt?: { readonly endpoint: string };
}

/** Creates the tables (on-demand, streams as declared, TTL on unless `ttl: false`) and waits until they are active. */
export async function createTables(client: DynamoDBClient, names: TableNames, opts: CreateTablesOptions = {}): Promise<void> {
  const reuse = opts.reuseAt;
  await Promise.all(
    (Object.keys(TABLES) as (keyof TableNames)[]).map((role) =>
      createTable(client, names[role], TABLES[role], {
        ttl: opts.ttl ?? true,
        ...(reuse && {
          ifExists: 'reuse' as const,
          describedAs: {
            what: `Conclave's ${role} table (lib/tables.ts)`,
            fix:
              'choose another table prefix (conclave-local: --table-prefix; startLocalConclave: tablePrefix), or delete the table if nothing else needs it, its rows with it ' +
              `(aws dynamodb delete-table --table-name ${names[role]} --endpoint-url ${reuse.endpoint})`,
          },
        }),
      }),
    ),
  );
}

export async function deleteTables(client: DynamoDBClient, names: TableNames): Promise<void> {
  await Promise.all(Object.values(names).map((name) => deleteTable(client, name)));
}
