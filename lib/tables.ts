import type { TableNames } from './schemas/config.js';

/**
 * The three tables, declared once: local mode creates them from this (lib/local/tables.ts), the
 * CDK construct too (infra/tables.ts). Pure data: the construct must not load the DynamoDB client.
 * All keys are strings; streams carry old and new images; `expiresAt` is the TTL attribute
 * (a backstop behind active garbage collection).
 */
export const TABLES = {
  leases: { partitionKey: 'name', stream: true, indexes: [{ name: 'byHolderPlatform', partitionKey: 'holderPlatformId' }] },
  candidates: { partitionKey: 'leaseName', sortKey: 'name', stream: true, indexes: [] },
  identities: { partitionKey: 'component', sortKey: 'name', stream: false, indexes: [] },
} as const satisfies Record<keyof TableNames, TableSpec>;

/**
 * A global secondary index: string keys, keys-only projection (whoever queries it reads the
 * item itself, consistently, before writing). Sparse: only items with the key attribute are in it.
 */
export interface IndexSpec {
  readonly name: string;
  readonly partitionKey: string;
}

export interface TableSpec {
  readonly partitionKey: string;
  readonly sortKey?: string;
  readonly stream: boolean;
  readonly indexes: readonly IndexSpec[];
}

/** The leases held by one ECS task or EC2 instance (the platform handler's lookup: a query, not a scan). */
export const HOLDER_PLATFORM_INDEX = TABLES.leases.indexes[0];

export const TTL_ATTRIBUTE = 'expiresAt';

export const defaultTableNames = (prefix = 'conclave'): TableNames => ({
  leases: `${prefix}-leases`,
  candidates: `${prefix}-candidates`,
  identities: `${prefix}-identities`,
});
