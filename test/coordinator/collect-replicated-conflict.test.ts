/**
 * The tick's collection of a stale candidate on a multi-Region strongly consistent table: its mark
 * (`collectedAt`) or its delete refused by a ReplicatedWriteConflictException (another Region wrote
 * the row at that moment; the write was not applied, unless an earlier try of the AWS SDK's landed
 * unanswered). Met as a lost race, as a ConflictError is: the row lives on without the mark, and
 * the tick counts no failure. Before: the mark stayed on the row (its worker's own withdrawal later
 * read as Candidate Expired, lib/events/derive.ts) and the tick counted the conflict as an error.
 * DynamoDB Local has no MRSC: the exception is injected by a client middleware.
 */
import { ReplicatedWriteConflictException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps, reconcileAll } from '../../lib/coordinator/reconcile.js';
import { eventsFromCandidateChange } from '../../lib/events/derive.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { testTables, type TestTables } from '../support.js';

const T0 = Date.UTC(2026, 2, 1);
const STALE_MS = 31 * 60_000; // past candidateStaleAfterMs (30 min)
let t: TestTables;
let rows: CandidateStore;
beforeAll(async () => {
  t = await testTables('collect-rwce');
  rows = new CandidateStore(t.client, t.names.candidates);
});
afterAll(() => t.drop());

const conflict = () => new ReplicatedWriteConflictException({ message: 'The request was rejected because one or more items in the request are being modified by a request in another Region.', $metadata: { httpStatusCode: 400, attempts: 3 } });

/**
 * This Region's client: the first write to the candidates table that `which` picks (its command, its
 * input) runs `meanwhile` (another Region's write, or the write itself landing unanswered), then is
 * refused by a replicated write conflict.
 */
function conflicting(which: (command: string, input: { UpdateExpression?: string }) => boolean, meanwhile: (next: () => Promise<unknown>) => Promise<unknown>): { client: DynamoDBClient; injected: () => number } {
  const client = localClient(inject('ddbEndpoint'));
  let injected = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { TableName?: string; UpdateExpression?: string };
      if (injected === 0 && input.TableName === t.names.candidates && which(context.commandName ?? '', input)) {
        injected++;
        await meanwhile(() => next(args));
        throw conflict();
      }
      return next(args);
    },
    { step: 'initialize', name: 'replicatedWriteConflict' },
  );
  return { client, injected: () => injected };
}

async function stand(lease: string, at: number) {
  await rows.write(await rows.read(lease, 'w'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: at, createdAt: at, identity: 'w-1' } });
}

describe("the tick's collection of a stale candidate, a write of it refused by a replicated write conflict", () => {
  it("the delete, the worker renewing from another Region at that moment: lives on without the mark, no failure counted, and its own withdrawal later is no Candidate Expired (before: the mark stayed, and the tick counted an error)", async () => {
    const lease = 'rwce-delete';
    await stand(lease, T0);
    const clock = manualClock(T0 + STALE_MS);
    const { client, injected } = conflicting((command) => command === 'DeleteItemCommand', async () => expect(await rows.renew(lease, 'w', clock.now(), undefined, undefined, 'w-1')).toBe(true));
    try {
      const r = await reconcileAll(coordinatorDeps(client, t.names, { clock }));
      expect(injected()).toBe(1);
      const live = (await rows.read(lease, 'w')).item!;
      expect(live).not.toHaveProperty('collectedAt');
      expect(r.collectedCandidates).toEqual([]);
      expect(r.errors).toEqual([]);
      expect(live.renewTime).toBe(clock.now());
      // a minute on, the worker stops and withdraws its own row: no Candidate Expired
      const events = eventsFromCandidateChange({ eventID: 'e', at: clock.now() + 60_000, oldCandidate: live, newCandidate: undefined, staleAfterMs: 30 * 60_000 });
      expect(events).toEqual([]);
    } finally {
      client.destroy();
    }
  });

  it('the mark, landed unanswered (an earlier try of the SDK\'s) before the refusal: taken back, no failure counted; the next tick collects the row', async () => {
    const lease = 'rwce-mark';
    await stand(lease, T0);
    const clock = manualClock(T0 + STALE_MS);
    const { client, injected } = conflicting((command, input) => command === 'UpdateItemCommand' && /collectedAt/.test(JSON.stringify(input)), (next) => next());
    try {
      const r = await reconcileAll(coordinatorDeps(client, t.names, { clock }));
      expect(injected()).toBe(1);
      expect((await rows.read(lease, 'w')).item).not.toHaveProperty('collectedAt');
      expect(r.collectedCandidates).toEqual([]);
      expect(r.errors).toEqual([]);
      // still stale: the next tick collects it
      const next = await reconcileAll(coordinatorDeps(t.client, t.names, { clock }));
      expect(next.collectedCandidates).toContainEqual({ leaseName: lease, name: 'w' });
      expect((await rows.read(lease, 'w')).item).toBeUndefined();
    } finally {
      client.destroy();
    }
  });
});
