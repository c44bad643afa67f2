/**
 * Local mode started again on a DynamoDB Local that already has its prefix's tables: the user's
 * own DynamoDB Local (`-sharedDb -dbPath`, kept across runs) given as `endpoint` / `--endpoint`,
 * and conclave-local restarted, or started again after a crash. The tables are reused as they are
 * (their rows, their current streams), a table of another shape is refused naming it, what differs
 * and the fix, and the restarted system elects as the first did.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateTableCommand, DescribeTableCommand, DescribeTimeToLiveCommand, PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { startLocalRuntime, type LocalEvent, type LocalRuntime } from '../../lib/local/runtime.js';
import { CHECKPOINTS_FILE, CheckpointsFile } from '../../lib/local/stream-checkpoints.js';
import { deleteTables } from '../../lib/local/tables.js';
import { localClient } from '../../lib/stores/client.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { createTable, deleteTable, TableShapeError } from '../../lib/stores/table-admin.js';
import { defaultTableNames, TABLES } from '../../lib/tables.js';
import { leaderNow, Log, STEADY, startElector, waitFor, type RunningElector } from '../sdk/harness.js';
import type { TestTables } from '../support.js';

const LEASE = 'nightly';
const admin: DynamoDBClient = localClient(inject('ddbEndpoint'));
const prefixes: string[] = [];

afterAll(async () => {
  for (const p of prefixes) await deleteTables(admin, defaultTableNames(p));
  admin.destroy();
});

const newPrefix = (label: string) => {
  const p = `${label}-${randomUUID().slice(0, 8)}`;
  prefixes.push(p);
  return p;
};

/** The runtime on the run's DynamoDB Local, as `conclave-local --endpoint` starts it; no tick: only the streams and the timer elect. */
const start = (prefix: string, dir: string) => startLocalRuntime({ endpoint: inject('ddbEndpoint'), prefix, dir, tickEveryMs: 600_000, logLevel: 'SILENT' });

const latestStreams = async (rt: LocalRuntime) => {
  const arn = async (table: string) => (await admin.send(new DescribeTableCommand({ TableName: table }))).Table!.LatestStreamArn!;
  return { leases: await arn(rt.tables.leases), candidates: await arn(rt.tables.candidates) };
};

const detail = (e: LocalEvent) => e.detail as Record<string, unknown>;

/** Which of `tables` exist at the run's DynamoDB Local. */
const existing = async (tables: string[]) => {
  const there: string[] = [];
  for (const table of tables) {
    const found = await admin.send(new DescribeTableCommand({ TableName: table })).then(
      () => true,
      (e: unknown) => {
        if ((e as Error).name === 'ResourceNotFoundException') return false;
        throw e;
      },
    );
    if (found) there.push(table);
  }
  return there;
};

describe('local mode started again on the same endpoint and prefix', () => {
  it('reuses the tables, their rows and current streams: a new worker leads on a higher token, and the functions read the tables’ streams', async () => {
    const prefix = newPrefix('restart');
    const dir = mkdtempSync(join(tmpdir(), 'conclave-restart-'));
    const log = new Log();

    // the first run: a leads, then its process is gone (no release: its term is left to run out)
    const rt1 = await start(prefix, dir);
    let first: { token: number; streams: Awaited<ReturnType<typeof latestStreams>> };
    {
      const t: TestTables = { client: rt1.client, names: rt1.tables, drop: async () => undefined };
      const a: RunningElector = startElector(t, log, 'a', { leaseName: LEASE, ...STEADY, releaseOnCancel: false });
      try {
        const { token } = await leaderNow([a], async () => (await rt1.deps.coordinator.leases.read(LEASE)).item);
        first = { token, streams: await latestStreams(rt1) };
        await waitFor('a joined, told by the candidate stream', () => rt1.events.some((e) => e.detailType === 'Candidate Joined' && detail(e)['candidate'] === 'a'));
      } finally {
        await a.stop();
        await rt1.stop();
      }
    }

    // the second run, same endpoint and prefix: before the fix, "Cannot create preexisting table"
    const rt2 = await start(prefix, dir);
    const t: TestTables = { client: rt2.client, names: rt2.tables, drop: async () => undefined };
    const b = startElector(t, log, 'b', { leaseName: LEASE, ...STEADY });
    try {
      // the same tables, not made again: the same streams, and a's lease row still there
      expect(await latestStreams(rt2)).toEqual(first.streams);
      const kept = (await rt2.deps.coordinator.leases.read(LEASE)).item;
      expect(kept?.fencingToken).toBeGreaterThanOrEqual(first.token);

      // a's term runs out; b is elected on a higher token (tokens only grow across the restart)
      const { token } = await leaderNow([b], async () => (await rt2.deps.coordinator.leases.read(LEASE)).item);
      expect(token).toBeGreaterThan(first.token);
      // both streams are read: b's joining (candidate stream) and b's election (lease stream) are published
      await waitFor('b joined, told by the candidate stream', () => rt2.events.some((e) => e.detailType === 'Candidate Joined' && detail(e)['candidate'] === 'b'));
      await waitFor('b elected, told by the lease stream', () => rt2.events.some((e) => e.detailType === 'Leader Elected' && detail(e)['holder'] === 'b' && detail(e)['fencingToken'] === token));
      // the first run's changes in the streams were handled then: each shard is resumed after the
      // last record the first run finished (stream-checkpoints.json), so none is published again
      const joinedA = rt1.events.find((e) => e.detailType === 'Candidate Joined' && detail(e)['candidate'] === 'a')!;
      expect(rt2.events.filter((e) => detail(e)['id'] === detail(joinedA)['id'])).toEqual([]);
      expect(rt2.deadLetters).toEqual([]);
    } finally {
      await b.stop();
      await rt2.stop();
    }
  });

  it('started again: the first run’s events are not published again (each once in the events file and on the bus), and a lease change made while it was stopped is handled', async () => {
    const prefix = newPrefix('resume');
    const dir = mkdtempSync(join(tmpdir(), 'conclave-resume-'));
    const log = new Log();

    // the first run: a joins and leads; its events are published
    const rt1 = await start(prefix, dir);
    let token: number;
    {
      const t: TestTables = { client: rt1.client, names: rt1.tables, drop: async () => undefined };
      const a = startElector(t, log, 'a', { leaseName: LEASE, ...STEADY, releaseOnCancel: false });
      try {
        ({ token } = await leaderNow([a], async () => (await rt1.deps.coordinator.leases.read(LEASE)).item));
        await waitFor('a joined and elected, told by both streams', () =>
          rt1.events.some((e) => e.detailType === 'Candidate Joined' && detail(e)['candidate'] === 'a') &&
          rt1.events.some((e) => e.detailType === 'Leader Elected' && detail(e)['holder'] === 'a' && detail(e)['fencingToken'] === token));
      } finally {
        await a.stop();
        await rt1.stop();
      }
    }
    const firstIds = new Set(rt1.events.map((e) => detail(e)['id'] as string));

    // while local mode is down, an operator releases a's term: a direct write to the leases table
    const released = await new LeaseStore(admin, defaultTableNames(prefix).leases).releaseTerm(LEASE, { holderIdentity: 'a', fencingToken: token }, Date.now());
    expect(released?.holderIdentity).toBeUndefined();

    const rt2 = await start(prefix, dir);
    const t: TestTables = { client: rt2.client, names: rt2.tables, drop: async () => undefined };
    const b = startElector(t, log, 'b', { leaseName: LEASE, ...STEADY });
    try {
      // the change made while stopped reaches the lease stream's function
      await waitFor('the release made while stopped, told by the lease stream', () =>
        rt2.events.some((e) => e.detailType === 'Lease Released' && detail(e)['previousHolder'] === 'a' && detail(e)['fencingToken'] === token));
      // records after the first run's in each stream: once these are handled, the first run's would have been too
      const { token: bToken } = await leaderNow([b], async () => (await rt2.deps.coordinator.leases.read(LEASE)).item);
      await waitFor('b joined and elected', () =>
        rt2.events.some((e) => e.detailType === 'Candidate Joined' && detail(e)['candidate'] === 'b') &&
        rt2.events.some((e) => e.detailType === 'Leader Elected' && detail(e)['holder'] === 'b' && detail(e)['fencingToken'] === bToken));
    } finally {
      await b.stop();
      await rt2.stop();
    }
    // on the bus: none of the first run's events again
    expect(rt2.events.filter((e) => firstIds.has(detail(e)['id'] as string)).map((e) => e.detailType)).toEqual([]);
    // in the events file (both runs'): every id once
    const ids = readFileSync(join(dir, 'events.jsonl'), 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { detail: { id: string } }).detail.id);
    const repeated = ids.filter((id, i) => ids.indexOf(id) !== i);
    expect({ lines: ids.length, repeated }).toEqual({ lines: new Set(ids).size, repeated: [] });
    for (const id of firstIds) expect(ids.filter((x) => x === id)).toHaveLength(1);
    expect(rt2.deadLetters).toEqual([]);
  });

  it('a table of the prefix with another shape is refused, naming the table, what differs and the fix; that table is left as it was, and the prefix’s other tables are not created', async () => {
    const prefix = newPrefix('shape');
    const names = defaultTableNames(prefix);
    // someone else's table under Conclave's name: another key, no stream
    await admin.send(
      new CreateTableCommand({
        TableName: names.candidates,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      }),
    );
    const failed = await start(prefix, mkdtempSync(join(tmpdir(), 'conclave-shape-'))).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(TableShapeError);
    const message = (failed as Error).message;
    // what the user can act on: the shape declared, spelled out (before: "(lib/tables.ts)", a file of this repository a user of the package does not have)
    expect(message).not.toContain('lib/tables.ts');
    expect(message).toContain(
      `table ${names.candidates} exists with another shape than Conclave's candidates table (declared: key schema leaseName (HASH), name (RANGE); attribute definitions leaseName (S), name (S); indexes none; stream NEW_AND_OLD_IMAGES; time to live on expiresAt): `,
    );
    expect(message.startsWith(`table ${names.candidates} `)).toBe(true);
    expect(message).toContain('key schema: leaseName (HASH), name (RANGE) declared, id (HASH) found');
    expect(message).toContain('stream: NEW_AND_OLD_IMAGES declared, none found');
    expect(message).toMatch(/choose another table prefix \(conclave-local: --table-prefix; startLocalConclave: tablePrefix\), or delete the table .*aws dynamodb delete-table --table-name .*\), and the next start creates it as declared$/);
    // the table is left as it was
    const d = (await admin.send(new DescribeTableCommand({ TableName: names.candidates }))).Table!;
    expect(d.KeySchema).toEqual([{ AttributeName: 'id', KeyType: 'HASH' }]);
    // every table looked at before any is made: before the fix, the leases and identities tables were created
    expect(await existing([names.leases, names.identities])).toEqual([]);
  });

  it('two tables of the prefix with another shape: one error lists each table and its differences, and the fix for both; no table is created', async () => {
    const prefix = newPrefix('shapes');
    const names = defaultTableNames(prefix);
    // someone else's tables under two of Conclave's names: another key, no stream
    for (const table of [names.leases, names.candidates]) {
      await admin.send(
        new CreateTableCommand({ TableName: table, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }] }),
      );
    }
    const failed = await start(prefix, mkdtempSync(join(tmpdir(), 'conclave-shapes-'))).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(TableShapeError);
    // before the fix: the first table's error alone (the other told only once that one was fixed), and the identities table created
    const message = (failed as Error).message;
    expect(message).toMatch(/^2 tables exist with another shape than declared:\n/);
    for (const table of [names.leases, names.candidates]) {
      expect(message).toMatch(new RegExp(`\n- table ${table}, Conclave's \\w+ table[^\n]*: key schema: [^\n]* declared, id \\(HASH\\) found; [^\n]*stream: NEW_AND_OLD_IMAGES declared, none found`));
      expect(message).toContain(`aws dynamodb delete-table --table-name ${table} --endpoint-url ${inject('ddbEndpoint')}`);
    }
    expect(message).toContain('choose another table prefix (conclave-local: --table-prefix; startLocalConclave: tablePrefix), or delete these tables if nothing else needs them');
    expect(message).not.toContain('lib/tables.ts');
    expect((failed as TableShapeError).tables.map((t) => t.table)).toEqual([names.leases, names.candidates]);
    expect(await existing([names.identities])).toEqual([]);
  });
});

describe('local mode on a DynamoDB Local of its own (no endpoint)', () => {
  it('neither reads nor writes stream-checkpoints.json: its tables and streams are new each run, so a file left by an endpoint run never applies', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-own-'));
    // left by a run on an endpoint whose address this run's DynamoDB Local may well have (a port used again)
    const left = JSON.stringify({ version: 1, streams: [{ endpoint: 'http://127.0.0.1:8000', streamArn: 'arn:aws:dynamodb:ddblocal:000000000000:table/conclave-local-candidates/stream/x', shards: { s: '000000000000000000009' } }] });
    writeFileSync(join(dir, CHECKPOINTS_FILE), left);
    const rt = await startLocalRuntime({ dir, tickEveryMs: 600_000, logLevel: 'SILENT' });
    const t: TestTables = { client: rt.client, names: rt.tables, drop: async () => undefined };
    const a = startElector(t, new Log(), 'a', { leaseName: LEASE, ...STEADY });
    try {
      await leaderNow([a], async () => (await rt.deps.coordinator.leases.read(LEASE)).item);
      await waitFor('a joined, told by the candidate stream', () => rt.events.some((e) => e.detailType === 'Candidate Joined' && detail(e)['candidate'] === 'a'));
    } finally {
      await a.stop();
      await rt.stop();
    }
    expect(readFileSync(join(dir, CHECKPOINTS_FILE), 'utf8')).toBe(left);
  });
});

describe('createTable on a table that exists', () => {
  it('asked to reuse: one of the declared shape is reused (TTL turned on if asked); without it, DynamoDB’s error as before', async () => {
    const table = `${newPrefix('reuse')}-leases`;
    await createTable(admin, table, TABLES.leases, { ttl: false });
    await expect(createTable(admin, table, TABLES.leases)).rejects.toMatchObject({ name: 'ResourceInUseException' });
    await createTable(admin, table, TABLES.leases, { ttl: true, ifExists: 'reuse' });
    const ttl = (await admin.send(new DescribeTimeToLiveCommand({ TableName: table }))).TimeToLiveDescription;
    expect(ttl).toMatchObject({ TimeToLiveStatus: 'ENABLED', AttributeName: 'expiresAt' });
    // and again, TTL already on
    await createTable(admin, table, TABLES.leases, { ttl: true, ifExists: 'reuse' });
  });

  it('asked to reuse: an index or stream view that differs is refused, each difference named', async () => {
    const table = `${newPrefix('differs')}-leases`;
    await admin.send(
      new CreateTableCommand({
        TableName: table,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'name', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'name', KeyType: 'HASH' }],
        StreamSpecification: { StreamEnabled: true, StreamViewType: 'KEYS_ONLY' },
      }),
    );
    const e = await createTable(admin, table, TABLES.leases, { ifExists: 'reuse' }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(TableShapeError);
    expect((e as TableShapeError).differences).toEqual([
      'attribute definitions: holderPlatformId (S), name (S) declared, name (S) found',
      'indexes: byHolderPlatform (holderPlatformId HASH, KEYS_ONLY) declared, none found',
      'stream: NEW_AND_OLD_IMAGES declared, KEYS_ONLY found',
    ]);
  });
});

/**
 * A local runtime on its own prefix and events folder, started anew by `startSeeing()`, whose lease
 * stream's records (lease name, stream) are collected in `seen`; `put` writes a lease row. With
 * `failAfter`, the lease stream's function fails each batch once that promise settles.
 */
function seeingLeaseStream(label: string) {
  const prefix = newPrefix(label);
  const dir = mkdtempSync(join(tmpdir(), `conclave-${label}-`));
  const seen: { name: string; stream: string | undefined }[] = [];
  /** The lease names of batches the function finished. */
  const handled: string[] = [];
  const startSeeing = (failAfter?: Promise<void>) =>
    startLocalRuntime({
      endpoint: inject('ddbEndpoint'),
      prefix,
      dir,
      tickEveryMs: 600_000,
      logLevel: 'SILENT',
      push: false,
      intercept: async (name, event, invoke) => {
        if (name === 'leaseStream') seen.push(...(event as DynamoDBStreamEvent).Records.map((r) => ({ name: r.dynamodb!.Keys!['name']!.S!, stream: r.eventSourceARN })));
        if (name === 'leaseStream' && failAfter) {
          await failAfter;
          throw new Error('the function failed');
        }
        const result = await invoke(event);
        if (name === 'leaseStream') handled.push(...(event as DynamoDBStreamEvent).Records.map((r) => r.dynamodb!.Keys!['name']!.S!));
        return result;
      },
    });
  const leases = defaultTableNames(prefix).leases;
  const put = (name: string) => admin.send(new PutItemCommand({ TableName: leases, Item: { name: { S: name }, leaseTransitions: { N: '0' }, leaseDurationSeconds: { N: '15' }, fencingToken: { N: '1' }, revision: { N: '1' } } }));
  /**
   * While local mode is down: `downPuts` written, the table deleted and made again, and `new-1`
   * written to it; then local mode started again until it handled `new-1`. The newer stream's ARN.
   */
  const remadeWhileDown = async (downPuts: string[]): Promise<string> => {
    for (const name of downPuts) await put(name);
    await deleteTable(admin, leases);
    await createTable(admin, leases, TABLES.leases);
    const newer = (await admin.send(new DescribeTableCommand({ TableName: leases }))).Table!.LatestStreamArn!;
    await put('new-1');
    seen.length = 0;
    const rt2 = await startSeeing();
    try {
      await waitFor('the record written to the table made again handled', () => handled.includes('new-1'));
    } finally {
      await rt2.stop();
    }
    expect(rt2.deadLetters).toEqual([]);
    return newer;
  };
  return { dir, seen, handled, startSeeing, leases, put, remadeWhileDown };
}

describe('local mode started again after a table was made again while it was down', () => {
  it('reads the older stream’s remainder, from its checkpoint, before the newest stream: every change written while down reaches the function, in order', async () => {
    const { dir, seen, handled, startSeeing, leases, put, remadeWhileDown } = seeingLeaseStream('older');

    const rt1 = await startSeeing();
    const older = (await admin.send(new DescribeTableCommand({ TableName: leases }))).Table!.LatestStreamArn!;
    try {
      await put('before');
      // its batch finished, so checkpointed (a stop during it would leave it to be read again: at least once)
      await waitFor('the record before the stop handled', () => handled.includes('before'));
    } finally {
      await rt1.stop();
    }
    // while local mode is down: two changes to the table, which is then deleted and made again, and a change to the new one
    const newer = await remadeWhileDown(['down-1', 'down-2']);
    expect(newer).not.toBe(older);
    // before the fix: [new-1] alone, down-1 and down-2 (after the older stream's checkpoint) never delivered
    expect(seen).toEqual([
      { name: 'down-1', stream: older },
      { name: 'down-2', stream: older },
      { name: 'new-1', stream: newer },
    ]);
    // the older stream read to its end: its entry gives way to the newer's
    const kept = CheckpointsFile.parse(JSON.parse(readFileSync(join(dir, CHECKPOINTS_FILE), 'utf8'))).streams.map((s) => s.streamArn);
    expect(kept).toContain(newer);
    expect(kept).not.toContain(older);
  });
});

describe('local mode stopped before a stream’s first batch finished, its table made again while it was down', () => {
  it('reads that stream again from TRIM_HORIZON, before the newest: the unfinished batch and every change written while down reach the function, in order', async () => {
    const { dir, seen, startSeeing, leases, put, remadeWhileDown } = seeingLeaseStream('unfinished');
    let stopBegun!: () => void;
    const rt1 = await startSeeing(new Promise<void>((r) => (stopBegun = r)));
    const older = (await admin.send(new DescribeTableCommand({ TableName: leases }))).Table!.LatestStreamArn!;
    await put('before');
    await waitFor('the first batch given to the function', () => seen.some((s) => s.name === 'before'));
    // the stop begins with the batch's invocation under way; it fails once the stop is under way (the
    // pollers told to stop: a failed batch is then left unfinished, not retried or dead-lettered)
    const stopped = rt1.stop();
    await new Promise((r) => setImmediate(r));
    stopBegun();
    await stopped;
    expect(rt1.deadLetters).toEqual([]);
    const newer = await remadeWhileDown(['down-1']);
    // before the fix: [new-1] alone (no checkpoint of the older stream, so it was never read again)
    expect(seen).toEqual([
      { name: 'before', stream: older },
      { name: 'down-1', stream: older },
      { name: 'new-1', stream: newer },
    ]);
    expect(CheckpointsFile.parse(JSON.parse(readFileSync(join(dir, CHECKPOINTS_FILE), 'utf8'))).streams.map((s) => s.streamArn)).not.toContain(older);
  });
});

describe('local mode started again after a table was made again twice while it was down', () => {
  it('reads the oldest stream’s remainder, then the middle stream (no checkpoint: from TRIM_HORIZON), then the newest: no stream in between skipped', async () => {
    const { dir, seen, handled, startSeeing, leases, put } = seeingLeaseStream('twice');
    const latest = async () => (await admin.send(new DescribeTableCommand({ TableName: leases }))).Table!.LatestStreamArn!;

    const rt1 = await startSeeing();
    const oldest = await latest();
    try {
      await put('before');
      await waitFor('the record before the stop handled', () => handled.includes('before'));
    } finally {
      await rt1.stop();
    }
    // while local mode is down: a change, the table made again, a change, made again, a change
    await put('down-1');
    await deleteTable(admin, leases);
    await createTable(admin, leases, TABLES.leases);
    const middle = await latest();
    await put('mid-1');
    await deleteTable(admin, leases);
    await createTable(admin, leases, TABLES.leases);
    const newest = await latest();
    await put('new-1');

    seen.length = 0;
    const rt2 = await startSeeing();
    try {
      await waitFor('the record written to the table made again the second time handled', () => handled.includes('new-1'));
    } finally {
      await rt2.stop();
    }
    // before the fix: [down-1, new-1], the middle stream's mid-1 never delivered
    expect(seen).toEqual([
      { name: 'down-1', stream: oldest },
      { name: 'mid-1', stream: middle },
      { name: 'new-1', stream: newest },
    ]);
    expect(rt2.deadLetters).toEqual([]);
  });
});

describe('local mode started again on a stream-checkpoints.json of version 1 (one position per stream)', () => {
  it('adopts it: each stream function resumes where the stream’s one position was, nothing read again, the change made while down handled; the file is written as version 2, per function', async () => {
    const prefix = newPrefix('adopt');
    const dir = mkdtempSync(join(tmpdir(), 'conclave-adopt-'));
    const seen: string[] = [];
    /** The lease names of batches the function finished. */
    const handled: string[] = [];
    const startSeeing = () =>
      startLocalRuntime({
        endpoint: inject('ddbEndpoint'),
        prefix,
        dir,
        tickEveryMs: 600_000,
        logLevel: 'SILENT',
        push: false,
        intercept: async (name, event, invoke) => {
          const names = (event as DynamoDBStreamEvent).Records?.map((r) => r.dynamodb!.Keys!['name']!.S!) ?? [];
          if (name === 'leaseStream') seen.push(...names);
          const result = await invoke(event);
          if (name === 'leaseStream') handled.push(...names);
          return result;
        },
      });
    const leases = defaultTableNames(prefix).leases;
    const put = (name: string) => admin.send(new PutItemCommand({ TableName: leases, Item: { name: { S: name }, leaseTransitions: { N: '0' }, leaseDurationSeconds: { N: '15' }, fencingToken: { N: '1' }, revision: { N: '1' } } }));

    const rt1 = await startSeeing();
    try {
      await put('before');
      // its batch finished, so checkpointed (a stop during it would leave it to be read again: at least once)
      await waitFor('the record before the stop handled', () => handled.includes('before'));
    } finally {
      await rt1.stop();
    }
    // the file as a release before this one wrote it: one entry per stream, no function
    const file = join(dir, CHECKPOINTS_FILE);
    const v2 = CheckpointsFile.parse(JSON.parse(readFileSync(file, 'utf8')));
    writeFileSync(file, JSON.stringify({ version: 1, streams: v2.streams.map(({ function: _fn, ...e }) => e) }));
    await put('down');

    seen.length = 0;
    const rt2 = await startSeeing();
    try {
      await waitFor('the record written while down handled', () => handled.includes('down'));
    } finally {
      await rt2.stop();
    }
    expect(seen).toEqual(['down']); // 'before' not handled again
    const now = CheckpointsFile.parse(JSON.parse(readFileSync(file, 'utf8')));
    expect(now.version).toBe(2);
    expect(now.streams.filter((e) => e.streamArn.includes(`/${leases}/`)).map((e) => e.function)).toEqual(['leaseStream']);
    expect(now.streams.every((e) => e.function !== undefined)).toBe(true);
  });
});

describe('the push broker across restarts in one folder', () => {
  it("listens on the port it had at the last start, so a running worker's CONCLAVE_PUSH_URL still reaches it (before: a new port at each start, the worker polling until restarted); that port taken, a free one", async () => {
    const prefix = newPrefix('push-port');
    const dir = mkdtempSync(join(tmpdir(), 'conclave-push-port-'));
    const first = await start(prefix, dir);
    const url = first.pushEndpoint!;
    await first.stop();
    const again = await start(prefix, dir);
    try {
      expect(again.pushEndpoint).toBe(url);
    } finally {
      await again.stop();
    }
    // the port held by something else meanwhile: another one, and no error
    const { createServer } = await import('node:net');
    const squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(Number(new URL(url).port), '127.0.0.1', () => resolve()));
    try {
      const third = await start(prefix, dir);
      try {
        expect(third.pushEndpoint).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/mqtt$/);
        expect(third.pushEndpoint).not.toBe(url);
      } finally {
        await third.stop();
      }
    } finally {
      await new Promise<void>((resolve) => squatter.close(() => resolve()));
    }
  });
});
