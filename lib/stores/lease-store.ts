import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LeaseItem, type Lease } from '../schemas/lease.js';
import { ItemStore, type Patch, type Read } from './item-store.js';

export type LeaseRead = Read<Lease>;

/** A holder's term: its identity and the fencing token of its acquisition. */
export interface Term {
  holderIdentity: string;
  fencingToken: number;
}

/** The DynamoDB condition that the lease is still in `term` (also used by fenced writes). */
export function termCondition(term: Term) {
  return {
    expression: '#holder = :holder AND #token = :token',
    names: { '#holder': 'holderIdentity', '#token': 'fencingToken' },
    values: { ':holder': term.holderIdentity, ':token': term.fencingToken },
  };
}
export type LeasePatch = Patch<Lease>;

/** Leases, key `name`. */
export class LeaseStore extends ItemStore<typeof LeaseItem> {
  constructor(client: DynamoDBClient, table: string) {
    super({ client, table, keys: ['name'], schema: LeaseItem, kind: 'lease' });
  }

  read(name: string): Promise<LeaseRead> {
    return this.get({ name });
  }

  /**
   * The holder renews its term: guarded by holder and fencing token (its term), not by a read, so
   * a coordinator's concurrent write (an election note, a preferredHolder) never fails a renewal.
   * A renewal withdraws any vacancy report. Undefined when the term is no longer the holder's.
   */
  renewTerm(name: string, term: Term, renewTime: number, leaseDurationSeconds: number): Promise<Lease | undefined> {
    return this.updateIf({ name }, { set: { renewTime, leaseDurationSeconds }, remove: ['vacancyReport'] }, termCondition(term));
  }

  /** The holder gives its term up so the next election starts at once. Undefined when it was not its term any more. */
  releaseTerm(name: string, term: Term, now: number): Promise<Lease | undefined> {
    return this.updateIf({ name }, { set: { renewTime: now, lastHolderIdentity: term.holderIdentity }, remove: ['holderIdentity', 'holderInstance', 'preferredHolder', 'vacancyReport'] }, termCondition(term));
  }

  /** The read to write against when the lease is known to be absent, or known from a bulk read. */
  static readOf(name: string, lease: Lease | undefined): LeaseRead {
    return { key: { name }, item: lease, revision: lease?.revision ?? 0 };
  }
}
