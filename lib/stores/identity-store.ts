import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { IdentityLeaseItem, type IdentityLease } from '../schemas/identity.js';
import { ItemStore, type Patch, type Read } from './item-store.js';

export type IdentityRead = Read<IdentityLease>;
export type IdentityPatch = Patch<IdentityLease>;

/** Identity leases (KEP-1965), key `component` + `name`: listing one component is a Query. */
export class IdentityStore extends ItemStore<typeof IdentityLeaseItem> {
  constructor(client: DynamoDBClient, table: string) {
    super({ client, table, keys: ['component', 'name'], schema: IdentityLeaseItem, kind: 'identity lease' });
  }

  /** The row of `component` named `name` (consistent read), with the revision to write against. */
  read(component: string, name: string): Promise<IdentityRead> {
    return this.get({ component, name });
  }

  /** A row already in hand (from a listing) as a read to write against. */
  static readOf(i: IdentityLease): IdentityRead {
    return { key: { component: i.component, name: i.name }, item: i, revision: i.revision };
  }
}
