/**
 * A table deleted and created again while local mode runs (an operator's `delete-table`, a script
 * that resets the tables): its stream is a new one, and the old one ends (DynamoDB Local: DISABLED,
 * its shard closed). The poller follows the table's new stream from TRIM_HORIZON and says so once;
 * while the table is gone it says so once, naming the table and the fix, and looks for it again at
 * a backoff. The poller's sleeps are held by the test and let go at each look at the outcome, so
 * nothing spins and nothing waits on the machine's clock.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteTableCommand, DescribeTableCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../lib/local/dynamodb-local.js';
import { startLocalRuntime } from '../../lib/local/runtime.js';
import { DISCOVER_EVERY_MS, StreamPoller, TABLE_LOOK_FIRST_MS, TABLE_LOOK_MAX_MS } from '../../lib/local/stream-poller.js';
import { createTable } from '../../lib/stores/table-admin.js';
import { TABLES } from '../../lib/tables.js';
import { wiring } from '../../lib/wiring.js';
import { waitFor } from '../sdk/harness.js';
import { heldClock, testTables, type TestTables } from '../support.js';

let t: TestTables;
let streams: DynamoDBStreamsClient;

beforeAll(async () => {
  t = await testTables('recreated');
  streams = new DynamoDBStreamsClient({ endpoint: inject('ddbEndpoint'), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
});
afterAll(async () => {
  streams.destroy();
  await t.drop();
});

/** The poller's look at `table`, as the runtime's (lib/local/runtime.ts describeTable): undefined when there is none; `looked` counts each. */
const describeTable = (table: string, looked: () => void = () => undefined) => async () => {
  looked();
  try {
    const d = (await t.client.send(new DescribeTableCommand({ TableName: table }))).Table!;
    return { status: d.TableStatus, latestStreamArn: d.LatestStreamArn };
  } catch (e) {
    if ((e as Error).name === 'ResourceNotFoundException') return undefined;
    throw e;
  }
};

const latestStreamArn = async (table: string) => (await t.client.send(new DescribeTableCommand({ TableName: table }))).Table!.LatestStreamArn!;

/**
 * A candidates-stream poller of `table` from `streamArn` on a held clock, its records' (name,
 * stream) collected in `handled`, its warnings to `warn`; `look(probe)` lets its clock run, then probes;
 * `waiting()` is true while both its loops (the stream's description, the shard's reads at the default
 * idle wait) are held in their waits: nothing of it runs until the next look.
 */
function candidatePoller(table: string, streamArn: string, warn: (m: string, x: Record<string, unknown>) => void) {
  const { clock, release, unhold, holding } = heldClock();
  const handled: { name: string; arn: string | undefined }[] = [];
  const poller = new StreamPoller({
    client: streams,
    streamArn,
    trigger: wiring.candidateStream.trigger,
    functionName: 'candidateStream',
    clock,
    invoke: async (e) => void handled.push(...e.Records.map((r) => ({ name: r.dynamodb!.Keys!['name']!.S!, arn: r.eventSourceARN }))),
    deadLetter: () => undefined,
    table: { name: table, describe: describeTable(table) },
    log: { warn, error: () => undefined },
  });
  const look = <T>(probe: () => T) => () => (release(), probe());
  const waiting = () => holding(DISCOVER_EVERY_MS) && holding(100);
  return { poller, handled, look, waiting, unhold };
}

describe('StreamPoller on a table deleted and created again', () => {
  it('follows the new stream from TRIM_HORIZON and says so once; while the table is gone, says so once (the table and the fix) and looks again at a backoff, never in a loop', async () => {
    const table = t.names.leases;
    const put = (name: string) => t.client.send(new PutItemCommand({ TableName: table, Item: { name: { S: name } } }));
    const oldArn = await latestStreamArn(table);
    await put('before');

    const { clock, asked, release, unhold } = heldClock();
    const handled: { name: string; arn: string | undefined }[] = [];
    const warned: [string, Record<string, unknown>][] = [];
    const errors: [string, Record<string, unknown>][] = [];
    const faults: Error[] = [];
    let describes = 0;
    const poller = new StreamPoller({
      client: streams,
      streamArn: oldArn,
      trigger: wiring.leaseStream.trigger,
      functionName: 'leaseStream',
      clock,
      invoke: async (e) => void handled.push(...e.Records.map((r) => ({ name: r.dynamodb!.Keys!['name']!.S!, arn: r.eventSourceARN }))),
      deadLetter: () => undefined,
      onError: (e) => faults.push(e),
      table: { name: table, describe: describeTable(table, () => describes++) },
      // the waits asked for from the first look on (the table gone told then, before its wait): a healthy round's wait (DISCOVER_EVERY_MS, 2 s) is no look's
      log: { warn: (m, x) => void warned.push([m, x]), error: (m, x) => void (errors.push([m, x]), (looksFrom ??= asked.length)) },
    });
    let looksFrom: number | undefined;
    const look = <T>(probe: () => T) => () => (release(), probe());
    poller.start();
    try {
      await waitFor('the record before the delete', look(() => handled.some((h) => h.name === 'before')));

      await t.client.send(new DeleteTableCommand({ TableName: table }));
      // before the fix: nothing was ever told, and the poller read the old stream's closed shard for good
      await waitFor('the table gone, told', look(() => errors.length > 0));
      await waitFor('five more looks for the table', look(() => describes >= 6));
      expect(errors).toEqual([[expect.stringMatching(new RegExp(`^table ${table} is gone \\(deleted while local mode runs\\): the leaseStream function gets none of its changes; restart local mode on this endpoint, which creates a missing table as Conclave declares it \\(its stream NEW_AND_OLD_IMAGES\\), or without --endpoint .*; looked for again at a backoff \\(at most every ${TABLE_LOOK_MAX_MS / 1000} s\\)`)), { function: 'leaseStream', table, stream: oldArn }]]);
      // after each look (the last one's perhaps still under way), a wait twice as long as the one before, up to the bound: the table's absence is no hot loop
      const waits = asked.slice(looksFrom).filter((ms) => ms >= TABLE_LOOK_FIRST_MS);
      expect([describes - 1, describes]).toContain(waits.length);
      expect(waits).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 16_000].slice(0, waits.length));
      expect(faults).toEqual([]);

      await createTable(t.client, table, TABLES.leases);
      const newArn = await latestStreamArn(table);
      expect(newArn).not.toBe(oldArn);
      await put('after');
      await waitFor('the record written to the table created again', look(() => handled.some((h) => h.name === 'after')));
      expect(handled).toEqual([{ name: 'before', arn: oldArn }, { name: 'after', arn: newArn }]);
      expect(warned).toEqual([[`table ${table} has a new stream (deleted and created again?): the leaseStream function now reads it from TRIM_HORIZON`, { function: 'leaseStream', table, stream: oldArn, newStream: newArn }]]);
      expect(errors).toHaveLength(1);
    } finally {
      unhold();
      await poller.stop();
    }
  });
  it('a table deleted and created again between two looks: the records written to the new one reach the function (before the fix: never, the old stream read for good)', async () => {
    const table = t.names.candidates;
    const put = (name: string) => t.client.send(new PutItemCommand({ TableName: table, Item: { leaseName: { S: 'job' }, name: { S: name } } }));
    const oldArn = await latestStreamArn(table);
    await put('before');
    const warned: string[] = [];
    const { poller, handled, look, unhold } = candidatePoller(table, oldArn, (m) => void warned.push(m));
    poller.start();
    try {
      await waitFor('the record before the delete', look(() => handled.some((h) => h.name === 'before')));
      await t.client.send(new DeleteTableCommand({ TableName: table }));
      await createTable(t.client, table, TABLES.candidates);
      await put('after');
      await waitFor('the record written to the table created again', look(() => handled.some((h) => h.name === 'after')));
      expect(handled).toEqual([{ name: 'before', arn: oldArn }, { name: 'after', arn: await latestStreamArn(table) }]);
      expect(warned).toEqual([`table ${table} has a new stream (deleted and created again?): the candidateStream function now reads it from TRIM_HORIZON`]);
    } finally {
      unhold();
      await poller.stop();
    }
  });
  it("its table gone as its runtime stops (the runtime's lock gone with the tables: DynamoDB Local started again empty): tells nothing of a later look, which never comes", async () => {
    // before (a review, 2026-12-07): "table … is gone …; looked for again at a backoff …, and its new
    // stream followed once it is back", told just before the runtime said its functions were stopped
    const table = `${t.names.leases}-stopping`; // a table of its own, deleted here
    await createTable(t.client, table, TABLES.leases);
    const { clock, release, unhold } = heldClock();
    const errors: string[] = [];
    const faults: Error[] = [];
    let confirms = 0;
    let describes = 0;
    // the runtime's confirmRunning: its lock's renewal finds the lock's table gone, and its onLost stops every poller
    let stopped: Promise<void> | undefined;
    const poller: StreamPoller = new StreamPoller({
      client: streams,
      streamArn: await latestStreamArn(table),
      trigger: wiring.leaseStream.trigger,
      functionName: 'leaseStream',
      clock,
      invoke: async () => undefined,
      deadLetter: () => undefined,
      onError: (e) => faults.push(e),
      table: { name: table, describe: describeTable(table, () => describes++) },
      confirmRunning: async () => {
        confirms++;
        stopped = poller.stop();
      },
      log: { warn: () => undefined, error: (m) => void errors.push(m) },
    });
    poller.start();
    try {
      await t.client.send(new DeleteTableCommand({ TableName: table }));
      await waitFor('the table gone, seen', () => (release(), confirms > 0 || errors.length > 0));
      await stopped;
      expect(errors).toEqual([]);
      expect(confirms).toBe(1);
      expect(faults).toEqual([]);
      expect(describes).toBe(1); // looked for no more
    } finally {
      unhold();
      await poller.stop();
    }
  });
  it('a table made again twice between two looks: the middle stream is read too, in order (before the fix: skipped, its records never delivered)', async () => {
    const table = `${t.names.candidates}-twice`; // a table of its own: its first stream holds this test's records only
    const put = (name: string) => t.client.send(new PutItemCommand({ TableName: table, Item: { leaseName: { S: 'job' }, name: { S: name } } }));
    await createTable(t.client, table, TABLES.candidates);
    const firstArn = await latestStreamArn(table);
    await put('before');
    const warned: [string, Record<string, unknown>][] = [];
    const { poller, handled, look, waiting, unhold } = candidatePoller(table, firstArn, (m, x) => void warned.push([m, x]));
    poller.start();
    try {
      await waitFor('the record before the deletes', look(() => handled.some((h) => h.name === 'before')));
      // the poller held in its waits (a look let go just now may still be describing the stream: CI
      // once saw the first table made again that way), so both deletes and creates fall between two of its looks
      await waitFor('the poller held in both its waits', waiting);
      await t.client.send(new DeleteTableCommand({ TableName: table }));
      await createTable(t.client, table, TABLES.candidates);
      const middleArn = await latestStreamArn(table);
      await put('middle');
      await t.client.send(new DeleteTableCommand({ TableName: table }));
      await createTable(t.client, table, TABLES.candidates);
      const lastArn = await latestStreamArn(table);
      await put('after');
      await waitFor('the record written to the table made again the second time', look(() => handled.some((h) => h.name === 'after')));
      // before the fix: [before, after], the middle stream's record never delivered
      expect(handled).toEqual([
        { name: 'before', arn: firstArn },
        { name: 'middle', arn: middleArn },
        { name: 'after', arn: lastArn },
      ]);
      expect(warned).toEqual([
        [
          `table ${table} has new streams (deleted and created again?): the candidateStream function now reads each from TRIM_HORIZON, oldest first`,
          { function: 'candidateStream', table, stream: firstArn, newStreams: [middleArn, lastArn] },
        ],
      ]);
    } finally {
      unhold();
      await poller.stop();
      await t.client.send(new DeleteTableCommand({ TableName: table }));
    }
  });
  it('the local runtime: a leases table deleted and created again under it still feeds the lease stream function', async () => {
    const seen: string[] = [];
    const rt = await startLocalRuntime({
      endpoint: inject('ddbEndpoint'),
      prefix: `rc-${randomUUID().slice(0, 8)}`,
      dir: mkdtempSync(join(tmpdir(), 'conclave-recreated-')),
      tickEveryMs: 600_000,
      logLevel: 'SILENT',
      push: false,
      intercept: async (name, event, invoke) => {
        if (name === 'leaseStream') seen.push(...(event as DynamoDBStreamEvent).Records.map((r) => r.dynamodb!.Keys!['name']!.S!));
        return invoke(event);
      },
    });
    try {
      const put = (name: string) => rt.client.send(new PutItemCommand({ TableName: rt.tables.leases, Item: { name: { S: name }, leaseTransitions: { N: '0' }, leaseDurationSeconds: { N: '15' }, fencingToken: { N: '1' }, revision: { N: '1' } } }));
      await put('before');
      await waitFor('the lease stream function given the record before the delete', () => seen.includes('before'));
      await rt.client.send(new DeleteTableCommand({ TableName: rt.tables.leases }));
      await createTable(rt.client, rt.tables.leases, TABLES.leases);
      await put('after');
      // before the fix: never (the runtime's poller read the old stream's closed shard for good)
      await waitFor('the lease stream function given the record written to the table created again', () => seen.includes('after'));
    } finally {
      await rt.stop();
      for (const name of Object.values(rt.tables)) await t.client.send(new DeleteTableCommand({ TableName: name }));
    }
  });
});
