import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CandidateItem, type Candidate } from '../schemas/candidate.js';
import { ItemStore, type InvalidItem, type Patch, type Read } from './item-store.js';

export type CandidateRead = Read<Candidate>;
export type CandidatePatch = Patch<Candidate>;

export interface CandidateList {
  candidates: Candidate[];
  /** Rows that do not match the schema: they never take part in an election. */
  invalid: InvalidItem[];
}

/** Lease candidates, key `leaseName` + `name`. */
export class CandidateStore extends ItemStore<typeof CandidateItem> {
  constructor(client: DynamoDBClient, table: string) {
    super({ client, table, keys: ['leaseName', 'name'], schema: CandidateItem, kind: 'candidate' });
  }

  read(leaseName: string, name: string): Promise<CandidateRead> {
    return this.get({ leaseName, name });
  }

  static readOf(c: Candidate): CandidateRead {
    return { key: { leaseName: c.leaseName, name: c.name }, item: c, revision: c.revision };
  }

  async list(leaseName: string): Promise<CandidateList> {
    const { items, invalid } = await this.query(leaseName);
    return { candidates: items, invalid };
  }

  /**
   * Asks a candidate to acknowledge an election: stamps `pingTime`. Depends on nothing read, so
   * it is conditioned on the candidate still existing and not yet being pinged for this election
   * (a concurrent ack or renewal must not make it fail). False when the candidate is gone or
   * already pinged.
   */
  ping(leaseName: string, name: string, pingTime: number): Promise<boolean> {
    return this.touch({ leaseName, name }, { pingTime }, {
      expression: 'attribute_not_exists(#ping) OR #ping < :ping',
      names: { '#ping': 'pingTime' },
      values: { ':ping': pingTime },
    });
  }

  /**
   * Renews (and so acknowledges) a candidate: sets `renewTime`. Conditioned on it existing, so a
   * collected candidate is never resurrected as a partial row.
   */
  renew(leaseName: string, name: string, renewTime: number, expiresAt?: number): Promise<boolean> {
    return this.touch({ leaseName, name }, expiresAt === undefined ? { renewTime } : { renewTime, expiresAt }, {
      expression: 'attribute_not_exists(#renew) OR #renew < :renew',
      names: { '#renew': 'renewTime' },
      values: { ':renew': renewTime },
    });
  }
}
