/**
 * withLease's run-once window on a multi-Region strongly consistent table: its claim and its mark,
 * each refused by a ReplicatedWriteConflictException (another Region wrote the window's row at that
 * moment; its last try was not applied, an earlier try of the AWS SDK's may have been, its answer
 * lost), as the AWS SDK hands it over after its own retries. Met as
 * the elector's own writes meet it (docs/deploy.md, MRSC): told to onError, named, and the row
 * written again, conditioned as before; a run that still cannot write it rejects naming the lease,
 * the window and what stands. Before: one on the claim rejected the call with the SDK's bare
 * message, the function never run; one on the mark rejected it raw after the function ran, the
 * window left open (the next run ran it again).
 * DynamoDB Local has no MRSC: the exception is injected by a client middleware. Every run takes a
 * vacant lease at its first step, and nothing waits for time to pass.
 */
import { ReplicatedWriteConflictException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { keyedWindowRow } from '../../lib/schemas/run-once.js';
import { withLease, type WithLeaseOptions } from '../../lib/sdk/with-lease.js';
import { CONFLICT_ATTEMPTS } from '../../lib/stores/errors.js';
import { RunOnceStore } from '../../lib/stores/run-once-store.js';
import { STEADY } from './harness.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('wl-rwce')));
afterAll(async () => t.drop());

/** The window's claim (run-once-store.ts claim) and its mark (complete), told apart by their conditions. */
const CLAIM = /^attribute_not_exists\(#fence\) OR #fence <= :token$/;
const MARK = /^#fence = :token AND /;

/** A client whose next `n` writes to the candidates table whose condition `which` matches are refused by a replicated write conflict. */
function conflicting(which: RegExp, n: number): { client: DynamoDBClient; injected: () => number } {
  const client = localClient(inject('ddbEndpoint'));
  let injected = 0;
  client.middlewareStack.add(
    (next) => async (args) => {
      const input = args.input as { TableName?: string; ConditionExpression?: string };
      if (injected < n && input.TableName === t.names.candidates && which.test(input.ConditionExpression ?? '')) {
        injected++;
        throw new ReplicatedWriteConflictException({ message: 'The request was rejected because one or more items in the request are being modified by a request in another Region.', $metadata: { httpStatusCode: 400, attempts: 3 } });
      }
      return next(args);
    },
    { step: 'initialize', name: 'replicatedWriteConflict' },
  );
  return { client, injected: () => injected };
}

const opts = (client: DynamoDBClient, identity: string, window: string, errors: Error[] = []): WithLeaseOptions => ({
  client,
  tables: t.names,
  identity,
  platform: 'none',
  mode: 'NoCoordination',
  multiRegion: true,
  runOnce: { window },
  // STEADY: the run's term outlives a busy machine's stall (on FAST's 1.5 s renew deadline, on the
  // machine's clock, a stall ended it while the window was claimed or marked: LeaseLostError)
  ...STEADY,
  onError: (e) => void errors.push(e),
});
const runsOf = async (lease: string, window: string) => (await new RunOnceStore(t.client, t.names.candidates).read(lease, keyedWindowRow(window))).runs;

describe("withLease's run-once window, a write of it refused by a replicated write conflict", () => {
  it('on the claim: told to onError naming the lease and the window, claimed again, and the function run once (before: rejected with the SDK\'s bare message, never run)', async () => {
    const { client, injected } = conflicting(CLAIM, 1);
    const errors: Error[] = [];
    let ran = 0;
    const r = await withLease('rwce-claim', async () => ++ran, opts(client, 'a', 'w1', errors));
    expect(r).toMatchObject({ status: 'ran', value: 1, window: 'w1' });
    expect(injected()).toBe(1);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.name).toBe('ReplicatedWriteConflictException');
    expect(errors[0]!.message).toMatch(/lease "rwce-claim".*run-once window "w1".*another Region wrote the same item at the same moment \(ReplicatedWriteConflictException\).*its last try was not applied, but the AWS SDK sent it 3 times, and an earlier try may have landed.*the same claim in this term.*claiming it again/);
    expect(errors[0]!.message).not.toMatch(/this write was not applied/); // before: so, while a try of it may have landed
    expect(await runsOf('rwce-claim', 'w1')).toMatchObject([{ window: 'w1', holder: 'a' }]);
    client.destroy();
  });

  it('on every try of the claim: bounded; rejects naming the lease, the window and that the function was not run and the window not marked', async () => {
    const { client, injected } = conflicting(CLAIM, Infinity);
    const errors: Error[] = [];
    let ran = 0;
    const e = (await withLease('rwce-claim-all', async () => ++ran, opts(client, 'a', 'w1', errors)).catch((x: unknown) => x)) as Error;
    expect(injected()).toBe(CONFLICT_ATTEMPTS);
    expect(ran).toBe(0);
    expect(e.name).toBe('ReplicatedWriteConflictException');
    expect(e.message).toMatch(/lease "rwce-claim-all".*run-once window "w1".*ReplicatedWriteConflictException.*the function was not run.*not marked/);
    expect(e.cause).toBeInstanceOf(ReplicatedWriteConflictException);
    expect(errors).toHaveLength(CONFLICT_ATTEMPTS - 1); // each try told but the last: that is the call's rejection
    // the lease was given up: the next run takes it, and runs the window
    expect(await withLease('rwce-claim-all', async () => ++ran, opts(t.client, 'b', 'w1'))).toMatchObject({ status: 'ran', value: 1 });
    client.destroy();
  });

  it('on the mark after the function ran: told to onError, marked again, and the next run skips the window (before: rejected raw, the window left open and run again)', async () => {
    const { client, injected } = conflicting(MARK, 1);
    const errors: Error[] = [];
    let ran = 0;
    const r = await withLease('rwce-mark', async () => ++ran, opts(client, 'a', 'w1', errors));
    expect(r).toMatchObject({ status: 'ran', value: 1, window: 'w1' });
    expect(injected()).toBe(1);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.name).toBe('ReplicatedWriteConflictException');
    expect(errors[0]!.message).toMatch(/lease "rwce-mark".*run-once window "w1".*another Region wrote the same item at the same moment \(ReplicatedWriteConflictException\).*an earlier try may have landed.*marking it again/);
    expect(errors[0]!.message).not.toMatch(/this write was not applied/);
    expect(await runsOf('rwce-mark', 'w1')).toMatchObject([{ window: 'w1', holder: 'a' }]);
    expect(await withLease('rwce-mark', async () => ++ran, opts(t.client, 'b', 'w1'))).toMatchObject({ status: 'skipped', window: 'w1' });
    expect(ran).toBe(1);
    client.destroy();
  });

  it("on a complete() of the function: marked again, complete() resolves, and withLease's own mark is not sent", async () => {
    const { client, injected } = conflicting(MARK, 1);
    const errors: Error[] = [];
    const r = await withLease('rwce-complete', async (_s, term) => {
      await term.complete();
      return 'done';
    }, opts(client, 'a', 'w1', errors));
    expect(r).toMatchObject({ status: 'ran', value: 'done' });
    expect(injected()).toBe(1);
    expect(errors).toHaveLength(1);
    expect(await runsOf('rwce-complete', 'w1')).toMatchObject([{ window: 'w1', holder: 'a' }]);
    client.destroy();
  });

  it('on every try of the mark: bounded; rejects naming the lease, the window, that the function ran and that the window stays open', async () => {
    const { client, injected } = conflicting(MARK, Infinity);
    const errors: Error[] = [];
    let ran = 0;
    const e = (await withLease('rwce-mark-all', async () => ++ran, opts(client, 'a', 'w1', errors)).catch((x: unknown) => x)) as Error;
    expect(injected()).toBe(CONFLICT_ATTEMPTS);
    expect(ran).toBe(1);
    expect(e.name).toBe('ReplicatedWriteConflictException');
    expect(e.message).toMatch(/lease "rwce-mark-all".*run-once window "w1".*ReplicatedWriteConflictException.*the function ran.*not marked.*open.*next run runs it again/);
    expect(errors).toHaveLength(CONFLICT_ATTEMPTS - 1);
    expect(await runsOf('rwce-mark-all', 'w1')).toEqual([]);
    client.destroy();
  });
});
