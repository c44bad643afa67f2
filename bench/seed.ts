/**
 * Fills the tables with many leases and their candidates (BatchWriteItem, 25 items a request),
 * every item checked against Conclave's zod schemas first, so the coordinator reads only valid rows.
 */
import { BatchWriteItemCommand, type BatchWriteItemCommandOutput, type DynamoDBClient, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { TableNames } from '../lib/schemas/config.js';
import { CandidateItem } from '../lib/schemas/candidate.js';
import { LeaseItem } from '../lib/schemas/lease.js';
import { OLDEST_EMULATION_VERSION } from '../lib/schemas/strategy.js';
import { parse } from '../lib/schemas/validation.js';
import { mapLimit } from '../lib/util/pool.js';

export interface SeedOptions {
  /** Lease names are `<stem>-<i>`. */
  stem: string;
  count: number;
  candidatesPerLease: number;
  /**
   * `held`: c0 (the oldest candidate, so the best) holds every lease with a one-hour term — a
   * healthy lease a tick leaves alone. `vacant`: released by c0, nobody holds it.
   */
  state: 'held' | 'vacant';
  /** Candidates last renewed this long ago: not fresh (the ack window), not stale (30 min). @default 60 s */
  candidateAgeMs?: number;
  /** Skip the candidates (re-seeding only the leases). */
  leasesOnly?: boolean;
  now?: number;
  /**
   * The candidates' TTL (epoch seconds). DynamoDB deletes a row past it on its own, by its clock,
   * not by `now`: DynamoDB Local by the machine's. A test seeding at a fixed `now` passes one that
   * clock never reaches. @default an hour after `now`
   */
  expiresAt?: number;
}

export const leaseNames = (o: Pick<SeedOptions, 'stem' | 'count'>): string[] => Array.from({ length: o.count }, (_, i) => `${o.stem}-${i}`);

function leaseItem(name: string, o: SeedOptions, now: number) {
  const common = { name, leaseDurationSeconds: 15, acquireTime: now - 3_600_000, renewTime: now, leaseTransitions: 1, fencingToken: 1 };
  return parse(
    LeaseItem,
    o.state === 'held'
      ? { ...common, holderIdentity: 'c0', holderInstance: 'c0_seed', leaseDurationSeconds: 3_600, electedBy: 'coordinator', electedStrategy: OLDEST_EMULATION_VERSION, revision: 1 }
      : { ...common, lastHolderIdentity: 'c0', revision: 2 },
    `seeded lease ${name}`,
  );
}

function candidateItem(leaseName: string, k: number, o: SeedOptions, now: number) {
  return parse(
    CandidateItem,
    {
      leaseName,
      name: `c${k}`,
      binaryVersion: '1.30.0',
      emulationVersion: '1.30.0',
      preferredStrategies: [OLDEST_EMULATION_VERSION],
      renewTime: now - (o.candidateAgeMs ?? 60_000),
      createdAt: now - 3_600_000 + k * 1_000,
      identity: `c${k}_seed`,
      revision: 1,
      expiresAt: o.expiresAt ?? Math.ceil((now + 3_600_000) / 1_000),
    },
    `seeded candidate ${leaseName}/c${k}`,
  );
}

async function batchPut(client: DynamoDBClient, table: string, items: Record<string, unknown>[]): Promise<void> {
  const batches: WriteRequest[][] = [];
  for (let i = 0; i < items.length; i += 25) batches.push(items.slice(i, i + 25).map((it) => ({ PutRequest: { Item: marshall(it, { removeUndefinedValues: true }) } })));
  await mapLimit(batches, 8, async (batch) => {
    let pending: WriteRequest[] | undefined = batch;
    for (let attempt = 1; pending?.length; attempt++) {
      if (attempt > 10) throw new Error(`BatchWriteItem on ${table}: items still unprocessed after 10 attempts`);
      const r: BatchWriteItemCommandOutput = await client.send(new BatchWriteItemCommand({ RequestItems: { [table]: pending } }));
      pending = r.UnprocessedItems?.[table];
      if (pending?.length) await new Promise((res) => setTimeout(res, 50 * attempt));
    }
  });
}

/** Seeds `count` leases and `candidatesPerLease` candidates each. */
export async function seedLeases(client: DynamoDBClient, tables: TableNames, o: SeedOptions): Promise<void> {
  const now = o.now ?? Date.now();
  const names = leaseNames(o);
  await batchPut(client, tables.leases, names.map((n) => leaseItem(n, o, now)));
  if (!o.leasesOnly) await batchPut(client, tables.candidates, names.flatMap((n) => Array.from({ length: o.candidatesPerLease }, (_, k) => candidateItem(n, k, o, now))));
}
