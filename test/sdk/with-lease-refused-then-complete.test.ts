/**
 * withLease on DynamoDB Local: a function whose fenced write of its term DynamoDB refused (the lease
 * moved on: an operator's take, say), which catches the refusal and calls `complete()` before its
 * elector has read the lease. The refusal is the term over: `complete()` is refused too (a
 * FencingError, nothing sent), the window stays open for the next run, and the call rejects with
 * LeaseLostError (a review, 2026-12-07, thirteenth: the mark landed, the newer holder not having
 * claimed the window's row yet, and the call resolved `ran` with the deposed term's token).
 *
 * Nothing waits on time: the elector's requests to the leases table are held (a client middleware)
 * from the move until `complete()` has settled, so its read of the lease, which the refusal asks
 * for at once, comes after, however fast or slow the machine.
 */
import { GetItemCommand, PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { keyedWindowRow } from '../../lib/schemas/run-once.js';
import { FencingError } from '../../lib/sdk/fencing.js';
import { LeaseLostError, withLease, type LeaseTerm } from '../../lib/sdk/with-lease.js';
import { RunOnceStore } from '../../lib/stores/run-once-store.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => {
  t = await testTables('refused-complete');
});
afterAll(() => t?.drop());

/** The run's own client: its requests to the leases table held while `hold` is set, and what it sends recorded. */
function heldClient(): { client: DynamoDBClient; sent: { command: string; table: string | undefined }[]; hold(until: Promise<unknown>): void } {
  const client = localClient(inject('ddbEndpoint'));
  const sent: { command: string; table: string | undefined }[] = [];
  let held: Promise<unknown> | undefined;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const table = (args.input as { TableName?: string }).TableName;
      if (held && table === t.names.leases) await held.catch(() => undefined);
      sent.push({ command: context.commandName ?? '?', table });
      return next(args);
    },
    { step: 'initialize', name: 'held', priority: 'high' },
  );
  return { client, sent, hold: (until) => void (held = until) };
}

/** An operator's write moves the lease row on under the run: another holder, a higher token (`release --force` and a take). */
async function moveOn(lease: string, holder: string): Promise<number> {
  const r = await t.client.send(new GetItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }), ConsistentRead: true }));
  const row = unmarshall(r.Item!);
  row['holderIdentity'] = holder;
  row['fencingToken'] = (row['fencingToken'] as number) + 1;
  row['termToken'] = row['fencingToken'];
  delete row['holderInstance'];
  await t.client.send(new PutItemCommand({ TableName: t.names.leases, Item: marshall(row, { removeUndefinedValues: true }) }));
  return row['fencingToken'] as number;
}

const output = (name: string) => ({ Put: { TableName: t.names.candidates, Item: marshall({ leaseName: 'job-output', name, by: 'a' }) } });

/** Each write of the term the lease's fence refuses: a fenced transaction. */
const refusedWrites: Record<string, (term: LeaseTerm) => Promise<unknown>> = {
  fencedWrite: (term) => term.fencedWrite({ TransactItems: [output('x')] }),
  'complete(items)': (term) => term.complete([output('x')]),
};

describe('a write of the term refused by the lease fence, caught, then complete(): the term is over', () => {
  it.each(Object.keys(refusedWrites))("%s refused, then complete() without items: refused with FencingError, nothing sent; the call rejects with LeaseLostError (deposed), not 'ran', and the window stays open", async (how) => {
    const lease = `refused-${how.replace(/\W/g, '')}`;
    const run = heldClient();
    const seen: Record<string, unknown> = {};
    const p = withLease(lease, async (_signal, term) => {
      let done!: () => void;
      run.hold(new Promise<void>((resolve) => (done = resolve)));
      try {
        seen['newer'] = await moveOn(lease, 'intruder');
        seen['refusal'] = await refusedWrites[how]!(term).then(() => 'landed', (e: unknown) => e);
        // the elector has not read the lease yet (its read is held): only the refusal tells
        seen['held'] = term.held();
        const before = run.sent.length;
        seen['complete'] = await term.complete().then(() => 'marked', (e: unknown) => e);
        seen['sentByComplete'] = run.sent.slice(before).filter((r) => r.table !== t.names.leases);
      } finally {
        done();
      }
      return 'returned';
    }, { client: run.client, tables: t.names, identity: 'a', mode: 'NoCoordination', platform: 'none', runOnce: { window: 'w' }, onError: () => undefined });
    const r = await p.catch((e: unknown) => e);
    expect(seen['refusal']).toBeInstanceOf(FencingError);
    expect(seen['held']).toBe(true);
    // before the fix: 'marked' (the mark landed: the newer holder had not claimed the window's row), and the call resolved 'ran'
    expect(seen['complete']).toBeInstanceOf(FencingError);
    expect((seen['complete'] as Error).message).toMatch(/refused by the lease's fence/);
    expect(seen['sentByComplete']).toEqual([]);
    expect(r).toBeInstanceOf(LeaseLostError);
    expect(r).toMatchObject({ reason: 'deposed' });
    expect((await new RunOnceStore(t.client, t.names.candidates).read(lease, keyedWindowRow('w'))).runs).toEqual([]);
    const row = unmarshall((await t.client.send(new GetItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }), ConsistentRead: true }))).Item!);
    expect(row).toMatchObject({ holderIdentity: 'intruder', fencingToken: seen['newer'] });
    run.client.destroy();
  });
});
