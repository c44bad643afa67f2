/**
 * Poison rows through the local runtime's stream pollers (Lambda's event source mapping: batches,
 * partial failures, bisect, bounded retries, the dead-letter file). For random interleavings of
 * good changes and rows no handler can read, on both tables:
 * - every poison record ends in the dead-letter file, with its content: the function sends it there
 *   at its first delivery and reports it processed (no retry could read it);
 * - every good record is handled (delivered in a batch that did not report it failed), the ones
 *   behind a poison record included: nothing is lost;
 * - retries are bounded: the pollers move on.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeTableCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient, GetRecordsCommand, GetShardIteratorCommand, type _Record } from '@aws-sdk/client-dynamodb-streams';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../lib/local/dynamodb-local.js';
import { startLocalRuntime, type LocalRuntime } from '../../lib/local/runtime.js';
import { CandidateItem } from '../../lib/schemas/candidate.js';
import { LeaseItem } from '../../lib/schemas/lease.js';
import { NO_COORDINATION } from '../../lib/schemas/strategy.js';
import { wiring } from '../../lib/wiring.js';
import { waitFor } from '../sdk/harness.js';
import { junk, mutate, mutations } from './support.js';

let rt: LocalRuntime;
let streams: DynamoDBStreamsClient;
/** eventID → handled (in a batch that did not report it failed) */
const handled = new Set<string>();
let invocations = 0;

beforeAll(async () => {
  rt = await startLocalRuntime({
    endpoint: inject('ddbEndpoint'),
    prefix: `fz-${randomUUID().slice(0, 8)}`,
    dir: mkdtempSync(join(tmpdir(), 'conclave-fuzz-poller-')),
    tickEveryMs: 600_000,
    logLevel: 'SILENT',
    intercept: async (name, event, invoke) => {
      if (name !== 'leaseStream' && name !== 'candidateStream') return invoke(event);
      invocations++;
      const records = (event as DynamoDBStreamEvent).Records;
      const res = (await invoke(event)) as { batchItemFailures?: { itemIdentifier: string }[] } | undefined; // a throw: nothing handled
      const failed = new Set((res?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
      for (const r of records) if (!failed.has(r.dynamodb!.SequenceNumber!)) handled.add(r.eventID!);
      return res;
    },
  });
  streams = new DynamoDBStreamsClient({ endpoint: rt.endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
});
afterAll(async () => {
  streams.destroy();
  await rt.stop();
});

/** Every record on a table's stream so far, with the key of its item. */
async function streamed(table: string): Promise<{ eventID: string; key: string }[]> {
  const arn = (await rt.client.send(new DescribeTableCommand({ TableName: table }))).Table!.LatestStreamArn!;
  const out: { eventID: string; key: string }[] = [];
  for (const s of (await streams.send(new DescribeStreamCommand({ StreamArn: arn }))).StreamDescription!.Shards!) {
    let it = (await streams.send(new GetShardIteratorCommand({ StreamArn: arn, ShardId: s.ShardId, ShardIteratorType: 'TRIM_HORIZON' }))).ShardIterator;
    for (let i = 0; it && i < 20; i++) {
      const r = await streams.send(new GetRecordsCommand({ ShardIterator: it }));
      out.push(...(r.Records ?? []).map((x: _Record) => ({ eventID: x.eventID!, key: JSON.stringify(x.dynamodb?.Keys) })));
      it = r.Records?.length ? r.NextShardIterator : undefined;
    }
  }
  return out;
}

const now = Date.now();
const lease = (name: string) => ({ name, holderIdentity: 'x', holderInstance: 'x_1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'self', strategy: NO_COORDINATION, revision: 1 });
const candidate = (leaseName: string, name: string) => ({ leaseName, name, binaryVersion: '1.31.0', emulationVersion: '1.30.0', preferredStrategies: [NO_COORDINATION], renewTime: now, createdAt: now, revision: 1 });

/** A row whose schema check fails (DynamoDB itself takes it). */
const poison = (base: Record<string, unknown>, keys: string[], schema: typeof LeaseItem | typeof CandidateItem) =>
  mutations(keys, junk)
    .map((ms) => mutate(base, ms))
    .filter((item) => {
      try {
        marshall(item, { removeUndefinedValues: true });
      } catch {
        return false;
      }
      return !schema.safeParse(item).success;
    });

type Op = { table: 'leases' | 'candidates'; good: boolean; item: Record<string, unknown> };
let run = 0;

describe('poison records through the local runtime’s pollers', () => {
  it('dead-lettered after bounded retries; every good record handled, the ones behind the poison included', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.constant<Op>({ table: 'leases', good: true, item: {} }),
            fc.constant<Op>({ table: 'candidates', good: true, item: {} }),
            poison(lease('p'), ['fencingToken', 'leaseDurationSeconds', 'revision', 'holderIdentity', 'election', 'renewTime'], LeaseItem).map((item): Op => ({ table: 'leases', good: false, item })),
            poison(candidate('p', 'c'), ['renewTime', 'binaryVersion', 'preferredStrategies', 'priority', 'revision'], CandidateItem).map((item): Op => ({ table: 'candidates', good: false, item })),
          ),
          { minLength: 2, maxLength: 8 },
        ),
        async (ops) => {
          const r = run++;
          const dlBefore = rt.deadLetters.flatMap((d) => d.records.map((x) => x.eventID!));
          const poisonKeys = new Set<string>();
          const keys = new Set<string>();
          for (const [i, op] of ops.entries()) {
            const id = `r${r}-${i}`;
            const item = op.table === 'leases' ? { ...(op.good ? lease(id) : op.item), name: id } : { ...(op.good ? candidate(`r${r}`, id) : op.item), leaseName: `r${r}`, name: id };
            try {
              await rt.client.send(new PutItemCommand({ TableName: rt.tables[op.table], Item: marshall(item, { removeUndefinedValues: true }) }));
            } catch (e) {
              if ((e as Error).name === 'ValidationException') continue; // DynamoDB itself refuses it (5e-324): never on a stream
              throw e;
            }
            const key = JSON.stringify(marshall(op.table === 'leases' ? { name: id } : { leaseName: `r${r}`, name: id }));
            keys.add(key);
            if (!op.good) poisonKeys.add(key);
          }
          const ours = async () => [...(await streamed(rt.tables.leases)), ...(await streamed(rt.tables.candidates))].filter((x) => keys.has(x.key));
          const dead = () => new Set(rt.deadLetters.flatMap((d) => d.records.map((x) => x.eventID!)).filter((id) => !dlBefore.includes(id)));
          await waitFor('every record handled or dead-lettered', async () => {
            const recs = await ours();
            return recs.length >= keys.size && recs.every((x) => handled.has(x.eventID) || dead().has(x.eventID));
          });
          for (const x of await ours()) {
            if (poisonKeys.has(x.key)) {
              expect(dead()).toContain(x.eventID);
              const letter = rt.deadLetters.flatMap((d) => d.records).find((d) => d.eventID === x.eventID)!;
              expect(letter.record, 'dead-lettered with its content').toMatchObject({ eventID: x.eventID, dynamodb: { Keys: JSON.parse(x.key) as unknown } });
            } else {
              expect(handled, `good record ${x.eventID} (${x.key}) was handled`).toContain(x.eventID);
              expect(dead()).not.toContain(x.eventID);
            }
          }
        },
      ),
      { numRuns: 6 },
    );
    // Bounded: no record here keeps failing (poison is dead-lettered by the function, never retried),
    // so each batch is retried at most the candidate stream's retryAttempts times per bisection
    // level (the lease stream's are without bound: -1)
    const records = (await streamed(rt.tables.leases)).length + (await streamed(rt.tables.candidates)).length;
    expect(invocations).toBeLessThanOrEqual(records * 2 * (wiring.candidateStream.trigger.retryAttempts + 1));
    // And the file holds what the runtime reported.
    const file = readFileSync(rt.deadLetterFile, 'utf8').trim().split('\n').filter(Boolean);
    expect(file).toHaveLength(rt.deadLetters.length);
  });
});
