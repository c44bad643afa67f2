import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LeaseItem, type Lease } from '../schemas/lease.js';
import { ItemStore, type Patch, type Read } from './item-store.js';

export type LeaseRead = Read<Lease>;
export type LeasePatch = Patch<Lease>;

/** Leases, key `name`. */
export class LeaseStore extends ItemStore<typeof LeaseItem> {
  constructor(client: DynamoDBClient, table: string) {
    super({ client, table, keys: ['name'], schema: LeaseItem, kind: 'lease' });
  }

  read(name: string): Promise<LeaseRead> {
    return this.get({ name });
  }

  /** The read to write against when the lease is known to be absent, or known from a bulk read. */
  static readOf(name: string, lease: Lease | undefined): LeaseRead {
    return { key: { name }, item: lease, revision: lease?.revision ?? 0 };
  }
}
