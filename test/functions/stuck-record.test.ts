/**
 * A stream record that keeps failing on a fault, not its content: the lease stream's source
 * retries it without bound (lib/wiring.ts), so it holds up its lease's records behind it (the
 * batch's other leases' run: lib/functions/lambda.ts), and DynamoDB trims them all 24 h after their
 * change. Half that long after its change, its work is the tick's and the holder's backstop read's,
 * and its events went out at its first failure: it goes to the dead-letter destination with its
 * content, and the records behind it are handled before the trim. Real stream records of DynamoDB
 * Local; time is a manual clock.
 */
import type { DynamoDBRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { poisonMessage, STUCK_RECORD_MS, type PoisonRecord } from '../../lib/functions/dead-letter.js';
import { observability } from '../../lib/functions/env.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { sessionKey } from '../../lib/schemas/identity.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('stuck-record')));
afterAll(() => t.drop());

const throttled = () => Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });

/** Lease `lease` held on session `session`, then released by a write its holder did not make: the release's record, and its change time (ms). */
async function released(d: FunctionDeps, lease: string, session: string): Promise<{ record: DynamoDBRecord; at: number }> {
  const c = d.coordinator;
  const now = c.clock.now();
  const k = sessionKey(session);
  await c.identities.write(await c.identities.read(k.component, k.name), { set: { holderIdentity: session, hostname: 'h', leaseDurationSeconds: 15, acquireTime: now, renewTime: now } });
  await c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator', session } });
  await c.leases.write(await c.leases.read(lease), { set: { renewTime: now, lastHolderIdentity: 'a' }, remove: ['holderIdentity', 'holderInstance', 'session'] });
  const record = (await streamRecords(t.client, t.names.leases)).filter((x) => JSON.stringify(x.dynamodb!.Keys).includes(lease)).at(-1)!;
  expect(record.eventName).toBe('MODIFY');
  return { record, at: record.dynamodb!.ApproximateCreationDateTime! * 1000 };
}

describe('a lease stream record failing on a fault', () => {
  it('is retried while younger than STUCK_RECORD_MS, then dead-lettered with its content and reported processed, so the records behind it are handled', async () => {
    const clock = manualClock(Date.now());
    const dead: PoisonRecord[] = [];
    const published: string[] = [];
    const d: FunctionDeps = {
      coordinator: coordinatorDeps(t.client, t.names, { clock, config: { ackWindowMs: 5_000 } }),
      timer: { schedule: async () => undefined },
      publish: async (events) => void published.push(...events.map((e) => e.detail.id)),
      deadLetter: async (p) => void dead.push(p),
      ...observability('test', 'SILENT'),
    };
    const stuck = await released(d, 'stuck', 's-stuck');
    // its lease's next term, behind it
    const now = clock.now();
    await d.coordinator.leases.write(await d.coordinator.leases.read('stuck'), { set: { holderIdentity: 'b', holderInstance: 'b-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 1, fencingToken: 2, electedBy: 'coordinator' } });
    const take = (await streamRecords(t.client, t.names.leases)).filter((x) => JSON.stringify(x.dynamodb!.Keys).includes('stuck')).at(-1)!;
    const taken = `${take.eventID}:leader-elected`;
    const behind = await released(d, 'behind', 's-behind');
    const mark = d.coordinator.identities.markTermEnded.bind(d.coordinator.identities);
    d.coordinator.identities.markTermEnded = async (session, ...rest) => {
      if (session === 's-stuck') throw throttled();
      return mark(session, ...rest);
    };
    const handler = leaseStream(d);
    const deliver = () => handler({ Records: [stuck.record, take, behind.record] }, lambdaContext('leaseStream'));
    const failedIds = (r: unknown) => (r as { batchItemFailures: { itemIdentifier: string }[] }).batchItemFailures.map((f) => f.itemIdentifier);

    // a fault a few hours long: retried, its lease's record behind it not run (its events published:
    // held-back-events.test.ts); another lease's record runs
    clock.set(stuck.at + STUCK_RECORD_MS - 60_000);
    expect(failedIds(await deliver())).toEqual([stuck.record.dynamodb!.SequenceNumber, take.dynamodb!.SequenceNumber]); // Lambda retries from the first
    expect(dead).toEqual([]);
    expect(published).toContain(taken);
    const k = sessionKey('s-behind');
    expect((await d.coordinator.identities.read(k.component, k.name)).item!.endedTerms?.['behind']).toBe(1);

    // half the stream's retention after its change: given up with its content; the one behind is handled
    clock.set(stuck.at + STUCK_RECORD_MS);
    expect(failedIds(await deliver())).toEqual([]);
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ kind: 'stuckRecord', function: 'leaseStream', eventID: stuck.record.eventID, sequenceNumber: stuck.record.dynamodb!.SequenceNumber, record: stuck.record });
    expect(dead[0]!.reason).toMatch(/Rate exceeded/);
    expect(published.filter((id) => id === taken)).toHaveLength(1); // its run publishes it not again on this instance

    // the fault fixed, the message's record replayed as docs/deploy.md says: an event of that one record
    d.coordinator.identities.markTermEnded = mark;
    const letter = JSON.parse(poisonMessage(dead[0]!)) as PoisonRecord;
    expect(failedIds(await handler({ Records: [letter.record as DynamoDBRecord] }, lambdaContext('leaseStream')))).toEqual([]);
    const s = sessionKey('s-stuck');
    expect((await d.coordinator.identities.read(s.component, s.name)).item!.endedTerms?.['stuck']).toBe(1);
    expect(dead).toHaveLength(1);
  });
});
