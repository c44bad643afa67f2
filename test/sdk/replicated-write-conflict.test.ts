/**
 * A ReplicatedWriteConflictException (a multi-Region strongly consistent table: another Region
 * wrote the item at that moment; the try refused was not applied), as the AWS SDK hands it over after
 * its own retries. Some try of it may have landed before the last was refused (an answer lost, then
 * the SDK's retry refused by another Region's write), so the elector takes it as a write in doubt:
 * it reads again, and onError is told so (namedFault, by mayHaveLanded). Before: told raw to onError,
 * with no lease or identity; then told "this write was not applied" while the elector took it in doubt.
 * DynamoDB Local has no MRSC: the exception is injected by a client middleware.
 */
import { ReplicatedWriteConflictException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { LeaderElector } from '../../lib/sdk/elector.js';
import { mayHaveLanded, namedFault } from '../../lib/sdk/faults.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { waitFor } from './harness.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('rwce')));
afterAll(async () => t.drop());

/** A client whose next `n` conditional writes to the leases table that `which` picks are refused by a replicated write conflict. */
function conflicting(which: (input: { ConditionExpression?: string }) => boolean, n: number): { client: DynamoDBClient; injected: () => number } {
  const client = localClient(inject('ddbEndpoint'));
  let injected = 0;
  client.middlewareStack.add(
    (next) => async (args) => {
      const input = args.input as { TableName?: string; ConditionExpression?: string };
      if (injected < n && input.TableName === t.names.leases && input.ConditionExpression && which(input)) {
        injected++;
        throw new ReplicatedWriteConflictException({ message: 'The request was rejected because one or more items in the request are being modified by a request in another Region.', $metadata: { httpStatusCode: 400, attempts: 3 } });
      }
      return next(args);
    },
    { step: 'initialize', name: 'replicatedWriteConflict' },
  );
  return { client, injected: () => injected };
}

describe('a replicated write conflict (multi-Region tables)', () => {
  const refused = (attempts: number) => new ReplicatedWriteConflictException({ message: 'The request was rejected because one or more items in the request are being modified by a request in another Region.', $metadata: { httpStatusCode: 400, attempts } });

  it("named after the AWS SDK sent it more than once: told as a write that may have landed (an earlier try's answer lost), as the worker takes it, not as one not applied (before: \"this write was not applied, nothing to fix\", while the worker took it in doubt)", () => {
    const e = refused(3);
    expect(mayHaveLanded(e)).toBe(true);
    const named = namedFault(e, 'LeaderElector "w1" of lease "jobs"', 'the DynamoDB endpoint of region eu-west-1');
    expect(named.name).toBe('ReplicatedWriteConflictException');
    expect(named.message).toMatch(/^LeaderElector "w1" of lease "jobs": another Region wrote the same item at the same moment \(ReplicatedWriteConflictException\)/);
    expect(named.message).not.toMatch(/this write was not applied/);
    expect(named.message).toMatch(/its last try was not applied, but the AWS SDK sent it 3 times, and an earlier try may have landed, its answer lost: taken as a write in doubt/);
  });

  it('named as the worker judges it (mayHaveLanded): "not applied" only where that says it did not land', () => {
    for (const attempts of [1, 2, 3]) {
      const e = refused(attempts);
      const named = namedFault(e, 'LeaderElector "w1" of lease "jobs"', 'the DynamoDB endpoint of region eu-west-1');
      expect(/this write was not applied/.test(named.message)).toBe(!mayHaveLanded(e));
      expect(/may have landed/.test(named.message)).toBe(mayHaveLanded(e));
    }
  });

  it("on the elector's take: told to onError naming the lease and what happened (before: the SDK's error, raw), the take in doubt (a try of it may have landed), read again and led", async () => {
    const { client, injected } = conflicting((i) => !/termToken = :token AND/.test(i.ConditionExpression ?? ''), 1);
    const errors: Error[] = [];
    const stop = new AbortController();
    let led = false;
    const e = new LeaderElector({ client, tables: t.names, leaseName: 'rwce-take', identity: 'w1', mode: 'NoCoordination', multiRegion: true, onError: (x) => void errors.push(x), callbacks: { onStartedLeading: () => void (led = true) } });
    const running = e.run(stop.signal);
    await waitFor('w1 to lead', () => led);
    expect(injected()).toBe(1);
    // before: the SDK's own error, raw: no lease, no identity
    expect(errors).toHaveLength(1);
    expect(errors[0]!.name).toBe('ReplicatedWriteConflictException');
    expect(errors[0]!.message).toMatch(/lease "rwce-take".*another Region wrote the same item at the same moment \(ReplicatedWriteConflictException\)/);
    stop.abort();
    await running;
    client.destroy();
  });

  it("on a leader's renewal: told to onError naming the lease and what happened (before: the SDK's error, raw), and the term renewed at the next try", async () => {
    const { client, injected } = conflicting((i) => /#term = :token AND #renew < :renew/.test(i.ConditionExpression ?? ''), 1);
    const errors: Error[] = [];
    const stop = new AbortController();
    const e = new LeaderElector({ client, tables: t.names, leaseName: 'rwce-renew', identity: 'w1', mode: 'NoCoordination', multiRegion: true, leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 1_000, onError: (x) => void errors.push(x), callbacks: { onStartedLeading: () => undefined } });
    const running = e.run(stop.signal);
    await waitFor('the renewal refused', () => injected() === 1 && errors.length > 0);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.name).toBe('ReplicatedWriteConflictException');
    expect(errors[0]!.message).toMatch(/lease "rwce-renew".*another Region wrote the same item at the same moment \(ReplicatedWriteConflictException\).*its last try was not applied, but .*an earlier try may have landed.*taken as a write in doubt/);
    const token = e.fencingToken;
    const renewed = (await new LeaseStore(client, t.names.leases).read('rwce-renew')).item!.renewTime!;
    await waitFor('a renewal after it', async () => ((await new LeaseStore(client, t.names.leases).read('rwce-renew')).item!.renewTime! > renewed ? true : undefined));
    expect(e.isLeader()).toBe(true);
    expect(e.fencingToken).toBe(token);
    stop.abort();
    await running;
    client.destroy();
  });
});
