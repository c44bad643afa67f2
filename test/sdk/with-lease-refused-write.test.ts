/**
 * withLease's term handle after DynamoDB refuses one of its writes, on simulated time
 * (sim/harness.ts): the refusal reaches the run's elector as a LeaderElector's own fenced write's
 * does (it reads its lease at once), and a function that catches it and returns did not run in its
 * term. And a fenced transaction whose fence met a write of the lease row in progress
 * (TransactionConflict at the fence: the leader's own renewal), sent again by the term's writes.
 */
import { GetItemCommand, PutItemCommand, type TransactWriteItemsCommandInput } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { keyedWindowRow } from '../../lib/schemas/run-once.js';
import { LeaderElector } from '../../lib/sdk/elector.js';
import { FENCE_CONFLICT_TRIES, FencingError } from '../../lib/sdk/fencing.js';
import { LeaseLostError, withLease, type LeaseTerm, type WithLeaseOptions } from '../../lib/sdk/with-lease.js';
import { RunOnceStore } from '../../lib/stores/run-once-store.js';
import { transactionCanceled } from '../../sim/dynamodb-model/errors.js';
import { LATENCY_MS, Sim, type Machine } from '../../sim/harness.js';
import { FAST } from './harness.js';

const L = 'nightly';
const RTT_MS = 2 * LATENCY_MS;
// client-go's timings: the first renewal is 6 s after the take, so a refusal heard only there shows
const DEFAULTS = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const opts = (sim: Sim, m: Machine, identity: string, extra: Partial<WithLeaseOptions> = {}): WithLeaseOptions => ({ client: m.client, clock: m.clock, tables: sim.names, identity, mode: 'NoCoordination', platform: 'none', ...DEFAULTS, onError: () => undefined, ...extra });
const output = (sim: Sim, name: string, by: string) => ({ Put: { TableName: sim.names.candidates, Item: marshall({ leaseName: 'job-output', name, by }) } });
const written = async (sim: Sim, name: string) => {
  const r = await sim.client.send(new GetItemCommand({ TableName: sim.names.candidates, Key: marshall({ leaseName: 'job-output', name }), ConsistentRead: true }));
  return r.Item && unmarshall(r.Item);
};

/** An operator's write moves the lease row on under the run (another holder, a higher token): `release --force` and a take, a deleted row taken again. */
async function moveOn(sim: Sim, holder: string): Promise<number> {
  const r = await sim.client.send(new GetItemCommand({ TableName: sim.names.leases, Key: marshall({ name: L }), ConsistentRead: true }));
  const row = unmarshall(r.Item!);
  row['holderIdentity'] = holder;
  row['fencingToken'] = (row['fencingToken'] as number) + 1;
  row['termToken'] = row['fencingToken'];
  delete row['holderInstance'];
  await sim.client.send(new PutItemCommand({ TableName: sim.names.leases, Item: marshall(row, { removeUndefinedValues: true }) }));
  return row['fencingToken'] as number;
}

/** Each write of the term DynamoDB can refuse, once the lease moved on. */
const refusedWrites: Record<string, (sim: Sim, term: LeaseTerm, newer: number) => Promise<unknown>> = {
  fencedWrite: (sim, term) => term.fencedWrite({ TransactItems: [output(sim, 'x', 'a')] }),
  // the new term wrote this item: its fence refuses the older term
  fencedItemWrite: async (sim, term, newer) => {
    await sim.client.send(new PutItemCommand({ TableName: sim.names.candidates, Item: marshall({ leaseName: 'job-output', name: 'x', by: 'intruder', fence: newer }) }));
    return term.fencedItemWrite({ put: { TableName: sim.names.candidates, Item: marshall({ leaseName: 'job-output', name: 'x', by: 'a' }) } });
  },
  'complete(items)': (sim, term) => term.complete([output(sim, 'x', 'a')]),
};

describe('a write of the term DynamoDB refuses, the lease having moved on under the run', () => {
  it.each(Object.keys(refusedWrites))('%s: the elector reads its lease at once: the signal aborts and held() turns false a read later (it was at the next renewal, ~6 s on), and a write to an item the new term has not written is refused', async (how) => {
    const sim = await Sim.create();
    const a = sim.machine();
    const seen: Record<string, unknown> = {};
    const p = withLease(L, async (signal, term) => {
      const newer = await moveOn(sim, 'intruder');
      seen['refusal'] = await refusedWrites[how]!(sim, term, newer).then(() => 'landed', (e: unknown) => e);
      const refusedAt = sim.elapsed;
      while (!signal.aborted) await a.clock.sleep(1);
      seen['abortedAfterMs'] = sim.elapsed - refusedAt;
      seen['held'] = term.held();
      seen['reason'] = signal.reason;
      // a job trusting held() would write on here: refused, the item the new term has not written untouched
      seen['fresh'] = await term.fencedItemWrite({ put: { TableName: sim.names.candidates, Item: marshall({ leaseName: 'job-output', name: 'fresh', by: 'a' }) } }).then(() => 'landed', (e: unknown) => e);
      return 'done';
    }, opts(sim, a, 'a', how === 'complete(items)' ? { runOnce: { window: 'w' } } : {}));
    const r = await sim.settle(p, 'run', 60_000).catch((e: unknown) => e);
    expect(seen['refusal']).toBeInstanceOf(FencingError);
    // one consistent read of the lease after the refusal (and the elector's stop): before, 5,866 ms
    expect(seen['abortedAfterMs']).toBeLessThanOrEqual(4 * RTT_MS);
    expect(seen['held']).toBe(false);
    expect(seen['reason']).toMatchObject({ name: 'LeaseLostError', reason: 'deposed' });
    expect(seen['fresh']).toBeInstanceOf(FencingError);
    expect(await written(sim, 'fresh')).toBeUndefined();
    expect(r).toBeInstanceOf(LeaseLostError);
    expect((await sim.leases.read(L)).item?.holderIdentity).toBe('intruder');
  });

  it.each(Object.keys(refusedWrites))("%s: a function that catches the refusal and returns at once rejects with LeaseLostError (deposed), not 'ran'; run-once, its window stays open", async (how) => {
    const sim = await Sim.create();
    const a = sim.machine();
    let held: boolean | undefined;
    const p = withLease(L, async (_signal, term) => {
      const newer = await moveOn(sim, 'intruder');
      const e = await refusedWrites[how]!(sim, term, newer).catch((x: unknown) => x);
      // the elector has not read the lease yet: the refusal alone tells
      held = term.held();
      return `caught ${(e as Error).name}`;
    }, opts(sim, a, 'a', { runOnce: { window: 'w' } }));
    const r = await sim.settle(p, 'run', 60_000).catch((e: unknown) => e);
    expect(held).toBe(true);
    expect(r).toBeInstanceOf(LeaseLostError);
    expect(r).toMatchObject({ reason: 'deposed' });
    expect((await new RunOnceStore(sim.client, sim.names.candidates).read(L, keyedWindowRow('w'))).runs).toEqual([]);
  });
});

/** A fenced transaction's cancellation because its fence (the last item) met a write of the lease row in progress. */
const conflictAtFence = (req: { input: unknown }) => {
  const n = ((req.input as TransactWriteItemsCommandInput).TransactItems ?? []).length;
  return transactionCanceled([...Array.from({ length: n - 1 }, () => ({ Code: 'None' })), { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }]);
};
const transactions = (m: Machine) => m.sent.filter((r) => r.operation === 'TransactWriteItems');

describe("a fenced transaction whose fence meets a write of the lease row in progress (the leader's own renewal): sent again a moment later", () => {
  it("complete(items): once met, it is sent again and lands: the run ran, its items written and its window marked (the run rejected with DynamoDB's error, the window open)", async () => {
    const sim = await Sim.create();
    const a = sim.machine();
    let conflicts = 1;
    a.fault = (req) => (req.operation === 'TransactWriteItems' && conflicts-- > 0 ? conflictAtFence(req) : undefined);
    const r = await sim.settle(withLease(L, async (_s, term) => (await term.complete([output(sim, 'r', 'a')]), 'ok'), opts(sim, a, 'a', { ...FAST, runOnce: { window: 'w' } })), 'run', 60_000);
    expect(r).toMatchObject({ status: 'ran', value: 'ok', window: 'w' });
    expect(transactions(a)).toHaveLength(2);
    // after a pause on the injected clock, as the renewal it met tries again (contendedRetryMs: 20 ms, jittered ±50%)
    expect(transactions(a)[1]!.at - transactions(a)[0]!.at).toBeGreaterThanOrEqual(10);
    expect(await written(sim, 'r')).toMatchObject({ by: 'a' });
    expect((await new RunOnceStore(sim.client, sim.names.candidates).read(L, keyedWindowRow('w'))).runs).toHaveLength(1);
  });

  it(`fencedWrite: met every time, it is sent ${FENCE_CONFLICT_TRIES} times, then rejects with DynamoDB's error saying to send it again (nothing written)`, async () => {
    const sim = await Sim.create();
    const a = sim.machine();
    a.fault = (req) => (req.operation === 'TransactWriteItems' ? conflictAtFence(req) : undefined);
    let e: unknown;
    const r = await sim.settle(withLease(L, async (_s, term) => {
      e = await term.fencedWrite({ TransactItems: [output(sim, 'f', 'a')] }).catch((x: unknown) => x);
      return term.held();
    }, opts(sim, a, 'a', FAST)), 'run', 60_000);
    expect(r).toMatchObject({ status: 'ran', value: true });
    expect(transactions(a)).toHaveLength(FENCE_CONFLICT_TRIES);
    expect(e).toMatchObject({ name: 'TransactionCanceledException', message: expect.stringMatching(/the fence \(TransactItems\[1\].*met a write of the lease row in progress.*nothing was written; send it again/) as unknown });
    expect(await written(sim, 'f')).toBeUndefined();
  });

  it("LeaderElector's fencedWrite (the same code): once met, sent again and lands", async () => {
    const sim = await Sim.create();
    const a = sim.machine();
    let conflicts = 2;
    a.fault = (req) => (req.operation === 'TransactWriteItems' && conflicts-- > 0 ? conflictAtFence(req) : undefined);
    let done!: (v: unknown) => void;
    const wrote = new Promise<unknown>((resolve) => (done = resolve));
    const stop = new AbortController();
    const elector = new LeaderElector({ leaseName: L, identity: 'a', client: a.client, clock: a.clock, tables: sim.names, mode: 'NoCoordination', platform: 'none', ...FAST, onError: () => undefined, callbacks: {
      async onStartedLeading(_signal, term) {
        done(await term.fencedWrite({ TransactItems: [output(sim, 'e', 'a')] }).then(() => 'landed', (x: unknown) => x));
      },
    } });
    const running = elector.run(stop.signal);
    expect(await sim.settle(wrote, 'the write', 60_000)).toBe('landed');
    stop.abort();
    await sim.settle(running, 'stop', 60_000);
    expect(transactions(a)).toHaveLength(3);
    expect(await written(sim, 'e')).toMatchObject({ by: 'a' });
  });
});
