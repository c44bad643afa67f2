/**
 * Where the local event source mapping left each shard, kept across runs in stream-checkpoints.json
 * (lib/local/stream-checkpoints.ts): the file itself (per endpoint and stream, written whole, a
 * corrupt one ignored with a warning), and the poller resuming after it on a real DynamoDB Local
 * stream, falling back to TRIM_HORIZON for a trimmed checkpoint.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DescribeTableCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient, ExpiredIteratorException, TrimmedDataAccessException } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../lib/local/dynamodb-local.js';
import { CHECKPOINTS_FILE, CheckpointsFile, endpointKey, loadCheckpoints, LOCK_RETRY_FIRST_MS, olderStreamsToRead, tableOfStream } from '../../lib/local/stream-checkpoints.js';
import { StreamPoller } from '../../lib/local/stream-poller.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { wiring } from '../../lib/wiring.js';
import { waitFor } from '../sdk/harness.js';
import { heldClock, testTables, type TestTables } from '../support.js';

const ARN = 'arn:aws:dynamodb:ddblocal:000000000000:table/p-leases/stream/2026-12-01T00:00:00.000';
const NEWER = 'arn:aws:dynamodb:ddblocal:000000000000:table/p-leases/stream/2026-12-01T01:00:00.000';
const OTHER_TABLE = 'arn:aws:dynamodb:ddblocal:000000000000:table/p-candidates/stream/2026-12-01T00:00:00.000';

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
/** A local-mode process's checkpoint writes, alone. */
const WRITER = join(import.meta.dirname, 'checkpoint-writer.ts');

/** The function whose checkpoints the file tests keep (one of the file's: each function's are its own). */
const FN = 'candidateStream';
/** Function FN's checkpoints in `file` on `endpoint`. */
const load = (...args: Parameters<typeof loadCheckpoints>) => loadCheckpoints(...args).of(FN);

const folder = () => mkdtempSync(join(tmpdir(), 'conclave-checkpoints-'));
const warnings = () => {
  const told: { message: string; extra: Record<string, unknown> }[] = [];
  return { told, warn: (message: string, extra: Record<string, unknown>) => void told.push({ message, extra }) };
};

describe('the stream checkpoints file', () => {
  it('keeps the last sequence number per endpoint, stream and shard, written whole; another endpoint’s entries are neither read nor lost', async () => {
    const file = join(folder(), CHECKPOINTS_FILE);
    const w = warnings();
    const a = load(file, 'http://127.0.0.1:8000', w.warn);
    expect(a.get(ARN, 'shard-1')).toBeUndefined(); // no file yet: nothing, and no warning
    await a.set(ARN, 'shard-1', '000000000000000000005');
    await a.set(OTHER_TABLE, 'shard-1', '000000000000000000007');
    const b = load(file, 'http://127.0.0.1:9000', w.warn);
    expect(b.get(ARN, 'shard-1')).toBeUndefined(); // another DynamoDB Local: its stream ARNs are its own
    await b.set(ARN, 'shard-1', '000000000000000000002');

    const again = load(file, 'http://127.0.0.1:8000', w.warn);
    expect(again.get(ARN, 'shard-1')).toBe('000000000000000000005');
    expect(again.get(ARN, 'shard-2')).toBeUndefined();
    expect(again.get(NEWER, 'shard-1')).toBeUndefined(); // the table's newer stream: from TRIM_HORIZON
    // a newer stream of the same table replaces the older's entry; another table's stays
    await again.set(NEWER, 'shard-9', '000000000000000000003');
    const parsed = CheckpointsFile.parse(JSON.parse(readFileSync(file, 'utf8')));
    expect(parsed.streams).toEqual([
      { endpoint: 'http://127.0.0.1:8000', function: FN, streamArn: OTHER_TABLE, shards: { 'shard-1': '000000000000000000007' } },
      { endpoint: 'http://127.0.0.1:9000', function: FN, streamArn: ARN, shards: { 'shard-1': '000000000000000000002' } },
      { endpoint: 'http://127.0.0.1:8000', function: FN, streamArn: NEWER, shards: { 'shard-9': '000000000000000000003' } },
    ]);
    expect(readdirSync(join(file, '..'))).toEqual([CHECKPOINTS_FILE]); // no temp file left behind
    expect(w.told).toEqual([]);
  });

  it('olderStreamsToRead: the kept streams of the newest stream’s table older than it, oldest first; another table’s and newer ones are not', () => {
    const OLDEST = 'arn:aws:dynamodb:ddblocal:000000000000:table/p-leases/stream/2026-11-30T00:00:00.000';
    const NEWEST = 'arn:aws:dynamodb:ddblocal:000000000000:table/p-leases/stream/2026-12-01T02:00:00.000';
    expect(olderStreamsToRead([NEWER, OTHER_TABLE, OLDEST, NEWEST, ARN], NEWEST)).toEqual([OLDEST, ARN, NEWER]);
    expect(olderStreamsToRead([NEWER, OTHER_TABLE, OLDEST, NEWEST, ARN], ARN)).toEqual([OLDEST]);
    expect(olderStreamsToRead([OTHER_TABLE, NEWEST], NEWEST)).toEqual([]);
  });

  it.each([
    ['http://localhost:8000/', 'http://127.0.0.1:8000'],
    ['HTTP://LocalHost:8000', 'http://127.0.0.1:8000'],
    ['http://127.0.0.1:8000/', 'http://127.0.0.1:8000'],
    ['http://[::1]:8000', 'http://127.0.0.1:8000'],
    ['http://localhost:80/', 'http://127.0.0.1'],
    ['http://localhost', 'http://127.0.0.1'],
    ['https://localhost:443', 'https://127.0.0.1'],
    ['http://localhost:8001', 'http://127.0.0.1:8001'],
    ['http://ddb.example:8000/', 'http://ddb.example:8000'], // no DNS: another host is kept as spelled
    ['http://127.0.0.2:8000', 'http://127.0.0.2:8000'], // another address, not a spelling of 127.0.0.1
  ])('endpointKey(%s) is %s', (endpoint, key) => {
    expect(endpointKey(endpoint)).toBe(key);
  });

  it('one DynamoDB Local is one key however its loopback address is spelled: localhost, 127.0.0.1, a trailing slash; a file with both spellings keeps the later position of each shard, as one entry', async () => {
    const file = join(folder(), CHECKPOINTS_FILE);
    const w = warnings();
    await load(file, 'http://localhost:8000/', w.warn).set(ARN, 'shard-1', '000000000000000000005');
    // before the fix: undefined (another endpoint), the shard read from TRIM_HORIZON again
    expect(load(file, 'http://127.0.0.1:8000', w.warn).get(ARN, 'shard-1')).toBe('000000000000000000005');
    expect(CheckpointsFile.parse(JSON.parse(readFileSync(file, 'utf8'))).streams).toEqual([{ endpoint: 'http://127.0.0.1:8000', function: FN, streamArn: ARN, shards: { 'shard-1': '000000000000000000005' } }]);

    // written before the keys were (and before each function's were kept apart): one entry per spelling
    writeFileSync(
      file,
      JSON.stringify({
        version: 1,
        streams: [
          { endpoint: 'http://localhost:8000', streamArn: ARN, shards: { 'shard-1': '000000000000000000009', 'shard-2': '000000000000000000002' } },
          { endpoint: 'http://127.0.0.1:8000/', streamArn: ARN, shards: { 'shard-1': '000000000000000000007', 'shard-3': '000000000000000000003' } },
        ],
      }),
    );
    const kept = loadCheckpoints(file, 'http://127.0.0.1:8000', w.warn);
    expect(await kept.adopt(() => [FN])).toBe(1);
    const c = kept.of(FN);
    expect([c.get(ARN, 'shard-1'), c.get(ARN, 'shard-2'), c.get(ARN, 'shard-3')]).toEqual(['000000000000000000009', '000000000000000000002', '000000000000000000003']);
    await c.set(ARN, 'shard-2', '000000000000000000004');
    expect(CheckpointsFile.parse(JSON.parse(readFileSync(file, 'utf8'))).streams).toEqual([
      { endpoint: 'http://127.0.0.1:8000', function: FN, streamArn: ARN, shards: { 'shard-1': '000000000000000000009', 'shard-2': '000000000000000000004', 'shard-3': '000000000000000000003' } },
    ]);
    expect(w.told).toEqual([]);
  });

  it('a file of version 1 (one position per stream): adopt copies each entry of a stream it names readers for to each of them, in its place; another prefix’s entries are left for its own start; the file is written as version 2', async () => {
    const file = join(folder(), CHECKPOINTS_FILE);
    const w = warnings();
    writeFileSync(
      file,
      JSON.stringify({
        version: 1,
        streams: [
          { endpoint: 'http://127.0.0.1:8000', streamArn: ARN, shards: { 'shard-1': '000000000000000000005' } },
          { endpoint: 'http://127.0.0.1:8000', streamArn: 'arn:aws:dynamodb:ddblocal:000000000000:table/q-leases/stream/2026-12-01T00:00:00.000', shards: { 'shard-1': '000000000000000000001' } },
          { endpoint: 'http://127.0.0.1:9000', streamArn: ARN, shards: { 'shard-1': '000000000000000000002' } },
        ],
      }),
    );
    const kept = loadCheckpoints(file, 'http://127.0.0.1:8000', w.warn);
    expect(kept.of('ack').get(ARN, 'shard-1')).toBeUndefined(); // not adopted yet: no function's
    // this prefix's (p-) leases stream is read by two functions
    expect(await kept.adopt((arn) => (tableOfStream(arn) === 'p-leases' ? ['ack', 'events'] : []))).toBe(1);
    expect([kept.of('ack').get(ARN, 'shard-1'), kept.of('events').get(ARN, 'shard-1')]).toEqual(['000000000000000000005', '000000000000000000005']);
    const written = CheckpointsFile.parse(JSON.parse(readFileSync(file, 'utf8')));
    expect(written.version).toBe(2);
    expect(written.streams.map((e) => [e.endpoint, e.function, tableOfStream(e.streamArn)])).toEqual([
      ['http://127.0.0.1:8000', 'ack', 'p-leases'],
      ['http://127.0.0.1:8000', 'events', 'p-leases'],
      ['http://127.0.0.1:8000', undefined, 'q-leases'],
      ['http://127.0.0.1:9000', undefined, 'p-leases'],
    ]);
    // each moves on alone; adopted again, nothing changes
    await kept.of('ack').set(ARN, 'shard-1', '000000000000000000009');
    expect(await kept.adopt((arn) => (tableOfStream(arn) === 'p-leases' ? ['ack', 'events'] : []))).toBe(0);
    expect([kept.of('ack').get(ARN, 'shard-1'), kept.of('events').get(ARN, 'shard-1')]).toEqual(['000000000000000000009', '000000000000000000005']);
    expect(w.told).toEqual([]);
  });

  it('two processes sharing the folder (two table prefixes on one DynamoDB Local): each write merges its own change into the file as it is now, the other’s entries kept', async () => {
    const dir = folder();
    const file = join(dir, CHECKPOINTS_FILE);
    const w = warnings();
    // both loaded before either wrote, as two local-mode processes started together
    const a = load(file, 'http://127.0.0.1:8000', w.warn);
    const b = load(file, 'http://127.0.0.1:8000', w.warn);
    await a.set(ARN, 'shard-1', '000000000000000000005');
    await b.set(OTHER_TABLE, 'shard-1', '000000000000000000007');
    await a.set(ARN, 'shard-2', '000000000000000000006');
    await b.drop(OTHER_TABLE, 'shard-9'); // nothing to drop: the file is left as it is
    // before the fix: each write was the writer's own view, the other's entries lost (last writer wins)
    const again = load(file, 'http://127.0.0.1:8000', w.warn);
    expect([again.get(ARN, 'shard-1'), again.get(ARN, 'shard-2'), again.get(OTHER_TABLE, 'shard-1')]).toEqual(['000000000000000000005', '000000000000000000006', '000000000000000000007']);
    expect(b.get(ARN, 'shard-1')).toBe('000000000000000000005'); // what a writer sees after its write: the merged file
    expect(readdirSync(dir)).toEqual([CHECKPOINTS_FILE]); // no lock or temp file left behind
    expect(w.told).toEqual([]);
  });

  it('a process still reading a table’s older stream beside one reading its newer stream (the table deleted and created again): the older stream’s write keeps the newer’s entry', async () => {
    const file = join(folder(), CHECKPOINTS_FILE);
    const w = warnings();
    // A still reads ARN, the table's older stream (its readers drain it before following); B, started since, reads NEWER
    const a = load(file, 'http://127.0.0.1:8000', w.warn);
    const b = load(file, 'http://127.0.0.1:8000', w.warn);
    await a.set(ARN, 'shard-1', '000000000000000000005');
    await b.set(NEWER, 'shard-9', '000000000000000000003'); // the newer stream replaces the older's entry
    await a.set(ARN, 'shard-1', '000000000000000000006');
    // before the fix: A's write dropped NEWER's entry (undefined), so NEWER's shard was read from TRIM_HORIZON at B's next start
    const again = load(file, 'http://127.0.0.1:8000', w.warn);
    expect(again.get(NEWER, 'shard-9')).toBe('000000000000000000003');
    await b.set(NEWER, 'shard-9', '000000000000000000004');
    expect(CheckpointsFile.parse(JSON.parse(readFileSync(file, 'utf8'))).streams).toEqual([{ endpoint: 'http://127.0.0.1:8000', function: FN, streamArn: NEWER, shards: { 'shard-9': '000000000000000000004' } }]);
    expect(w.told).toEqual([]);
  });

  it('two real processes writing at once, each its own stream: every checkpoint of both is in the file, whole', async () => {
    const dir = folder();
    const file = join(dir, CHECKPOINTS_FILE);
    const COUNT = 300;
    const writers = [ARN, OTHER_TABLE].map((arn) =>
      spawn(process.execPath, ['--import', TSX, WRITER, file, 'http://localhost:8000/', arn, String(COUNT)], { stdio: ['pipe', 'pipe', 'pipe'] }),
    );
    const outputs = writers.map((c) => {
      const out = { stdout: '', stderr: '' };
      c.stdout.on('data', (d: Buffer) => void (out.stdout += d.toString()));
      c.stderr.on('data', (d: Buffer) => void (out.stderr += d.toString()));
      return out;
    });
    const exits = writers.map((c) => new Promise<number | null>((resolve) => c.on('exit', resolve)));
    // both loaded, then set going together
    await waitFor('both writers ready', () => outputs.every((o) => o.stdout.includes('ready')));
    for (const c of writers) c.stdin.write('go\n');
    expect(await Promise.all(exits)).toEqual([0, 0]);
    expect(outputs.map((o) => o.stderr)).toEqual(['', '']);
    // before the fix: whichever process wrote last, its view only (or a mix), the other's shards lost
    const kept = CheckpointsFile.parse(JSON.parse(readFileSync(file, 'utf8')));
    const shards = (arn: string) => Object.keys(kept.streams.find((e) => e.streamArn === arn)?.shards ?? {}).length;
    expect({ streams: kept.streams.length, [ARN]: shards(ARN), [OTHER_TABLE]: shards(OTHER_TABLE) }).toEqual({ streams: 2, [ARN]: COUNT, [OTHER_TABLE]: COUNT });
    expect(readdirSync(dir)).toEqual([CHECKPOINTS_FILE]);
  });

  it('a lock left by a process that is gone (killed while it held it) is taken away: the write goes through', async () => {
    const dir = folder();
    const file = join(dir, CHECKPOINTS_FILE);
    const gone = spawnSync(process.execPath, ['-e', '']).pid!; // ended: no such process now
    writeFileSync(`${file}.lock`, `${gone}.1\n`);
    const w = warnings();
    await load(file, 'http://127.0.0.1:8000', w.warn).set(ARN, 'shard-1', '000000000000000000005');
    expect(load(file, 'http://127.0.0.1:8000', w.warn).get(ARN, 'shard-1')).toBe('000000000000000000005');
    expect(readdirSync(dir)).toEqual([CHECKPOINTS_FILE]);
    expect(w.told).toEqual([]);
  });

  it('a lock a live process holds is waited for on the clock (LOCK_RETRY_FIRST_MS, then longer), and the write goes through once it is let go', async () => {
    const dir = folder();
    const file = join(dir, CHECKPOINTS_FILE);
    writeFileSync(`${file}.lock`, `${process.ppid}.1\n`); // another process, alive (the test runner's)
    const held = heldClock();
    const w = warnings();
    const c = load(file, 'http://127.0.0.1:8000', w.warn, held.clock);
    let written = false;
    const writing = Promise.resolve(c.set(ARN, 'shard-1', '000000000000000000005')).then(() => void (written = true));
    await waitFor('the write waiting for the lock', () => held.holding(LOCK_RETRY_FIRST_MS));
    held.release();
    await waitFor('the write waiting again, longer', () => held.holding(2 * LOCK_RETRY_FIRST_MS));
    expect(written).toBe(false);
    expect(readdirSync(dir)).toEqual([`${CHECKPOINTS_FILE}.lock`]);
    rmSync(`${file}.lock`); // let go
    held.unhold();
    await writing;
    expect(load(file, 'http://127.0.0.1:8000', w.warn).get(ARN, 'shard-1')).toBe('000000000000000000005');
    expect(w.told).toEqual([]);
  });

  it.each([
    ['not JSON', '{"version": 1, "streams": [{"endpo'],
    ['another shape', JSON.stringify({ version: 1, streams: [{ endpoint: 'http://127.0.0.1:8000', streamArn: ARN, shards: { 'shard-1': 5 } }] })],
    ['a sequence number GetShardIterator refuses', JSON.stringify({ version: 1, streams: [{ endpoint: 'http://127.0.0.1:8000', streamArn: ARN, shards: { 'shard-1': '5' } }] })],
  ])('a corrupt file (%s) is ignored with one warning naming it; the next write replaces it', async (_label, text) => {
    const file = join(folder(), CHECKPOINTS_FILE);
    writeFileSync(file, text);
    const w = warnings();
    const c = load(file, 'http://127.0.0.1:8000', w.warn);
    expect(c.get(ARN, 'shard-1')).toBeUndefined();
    expect(w.told).toHaveLength(1);
    expect(w.told[0]!.message).toContain(`stream checkpoints file ${file} is corrupt`);
    expect(w.told[0]!.message).toContain('read from TRIM_HORIZON');
    await c.set(ARN, 'shard-1', '000000000000000000004');
    expect(load(file, 'http://127.0.0.1:8000', w.warn).get(ARN, 'shard-1')).toBe('000000000000000000004');
    expect(w.told).toHaveLength(1);
  });
});

describe('the stream checkpoints file found corrupt mid-run', () => {
  it('is told as that (a review, 2026-12-07: the load-time text, "read from TRIM_HORIZON", which mid-run is untrue) and written anew from the checkpoints this process holds: another function\'s kept', async () => {
    const file = join(folder(), CHECKPOINTS_FILE);
    const w = warnings();
    const kept = loadCheckpoints(file, 'http://127.0.0.1:8000', w.warn);
    await kept.of(FN).set(ARN, 'shard-1', '000000000000000000005');
    await kept.of('leaseStream').set(OTHER_TABLE, 'shard-1', '000000000000000000007');
    writeFileSync(file, '{"version": 2, "streams": [{"endpo'); // torn (an edit by hand, a stray write)
    await kept.of(FN).set(ARN, 'shard-1', '000000000000000000006');
    expect(w.told).toHaveLength(1);
    expect(w.told[0]!.message).toMatch(new RegExp(`^stream checkpoints file ${file.replace(/[.]/g, '\\.')} is corrupt .*, found at a write while local mode runs: written anew from the checkpoints this process holds \\(the streams are read on from where they are, nothing is read again\\)`));
    expect(w.told[0]!.message).not.toContain('TRIM_HORIZON');
    const again = loadCheckpoints(file, 'http://127.0.0.1:8000', w.warn);
    expect(again.of(FN).get(ARN, 'shard-1')).toBe('000000000000000000006');
    // before: undefined, the file replaced by that one write: the lease stream read from TRIM_HORIZON at the next start
    expect(again.of('leaseStream').get(OTHER_TABLE, 'shard-1')).toBe('000000000000000000007');
    await kept.of(FN).set(ARN, 'shard-1', '000000000000000000008');
    expect(w.told).toHaveLength(1); // told once
  });
});

describe('StreamPoller with checkpoints, on DynamoDB Local', () => {
  let t: TestTables;
  let streams: DynamoDBStreamsClient;
  let arn: string;
  let store: CandidateStore;
  const endpoint = () => inject('ddbEndpoint');

  beforeAll(async () => {
    t = await testTables('checkpoints');
    streams = new DynamoDBStreamsClient({ endpoint: endpoint(), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    arn = (await t.client.send(new DescribeTableCommand({ TableName: t.names.candidates }))).Table!.LatestStreamArn!;
    store = new CandidateStore(t.client, t.names.candidates);
  });
  afterAll(async () => {
    streams.destroy();
    await t.drop();
  });

  const write = async (name: string) => {
    await store.write(await store.read('job', name), { set: { binaryVersion: '1.0.0', emulationVersion: '1.0.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: Date.now(), createdAt: Date.now() } });
  };
  const names = (e: DynamoDBStreamEvent) => e.Records.map((r) => r.dynamodb!.Keys!['name']!.S!);

  /** A poller of the candidates stream that records the names it is given, until `until` has been seen. */
  const run = async (file: string, until: string, o: { endpoint?: string; client?: DynamoDBStreamsClient; fail?: boolean; onError?: (e: Error) => void; giveUp?: () => boolean } = {}) => {
    const w = warnings();
    const seen: string[] = [];
    const poller = new StreamPoller({
      client: o.client ?? streams,
      streamArn: arn,
      trigger: wiring.candidateStream.trigger,
      functionName: 'candidateStream',
      checkpoints: load(file, o.endpoint ?? endpoint(), w.warn),
      log: { warn: w.warn, error: w.warn },
      invoke: async (e) => {
        seen.push(...names(e));
        if (o.fail) throw new Error('not now');
      },
      deadLetter: () => undefined,
      ...(o.onError ? { onError: o.onError } : {}),
    });
    poller.start();
    try {
      await waitFor(`${until} delivered`, () => seen.includes(until) || (o.giveUp?.() ?? false));
    } finally {
      await poller.stop();
    }
    return { seen, told: w.told };
  };

  it('resumes each shard after the last record finished, a batch left unfinished by stop() is read again; another endpoint’s file entry does not apply', async () => {
    const file = join(folder(), CHECKPOINTS_FILE);
    for (const n of ['c1', 'c2', 'c3']) await write(n);
    expect((await run(file, 'c3')).seen).toEqual(['c1', 'c2', 'c3']);

    // changes made while no poller runs: only they are delivered on the next start
    await write('c4');
    expect((await run(file, 'c4')).seen).toEqual(['c4']);

    // a batch that fails and is stopped mid-retry is not finished: not moved past
    await write('c5');
    expect((await run(file, 'c5', { fail: true })).seen[0]).toBe('c5');
    expect((await run(file, 'c5')).seen).toEqual(['c5']);

    // the same file, another endpoint (a new DynamoDB Local whose stream has the same ARN): from TRIM_HORIZON
    expect((await run(file, 'c5', { endpoint: 'http://127.0.0.1:1' })).seen).toEqual(['c1', 'c2', 'c3', 'c4', 'c5']);
  });

  it('a stream is named in the file before its first batch is handed over: stopped before any batch of it finished (its function failing), a start that finds its table made again reads it from TRIM_HORIZON', async () => {
    const file = join(folder(), CHECKPOINTS_FILE);
    await write('first-batch');
    /** The file's entries as the function was first given a batch. */
    let atFirstBatch: ReturnType<ReturnType<typeof loadCheckpoints>['streams']> | undefined;
    const seen: string[] = [];
    const poller = new StreamPoller({
      client: streams,
      streamArn: arn,
      trigger: wiring.candidateStream.trigger,
      functionName: FN,
      checkpoints: load(file, endpoint(), () => undefined),
      invoke: async (e) => {
        atFirstBatch ??= loadCheckpoints(file, endpoint(), () => undefined).streams();
        seen.push(...names(e));
        throw new Error('not now');
      },
      deadLetter: () => undefined,
    });
    poller.start();
    try {
      await waitFor('the batch given', () => seen.includes('first-batch'));
    } finally {
      await poller.stop();
    }
    const entry = { streamArn: arn, function: FN, shards: {} };
    // before the fix: [] (no entry until a batch finished), so the stream was forgotten
    expect(atFirstBatch).toEqual([entry]);
    const kept = loadCheckpoints(file, endpoint(), () => undefined).streams();
    expect(kept).toEqual([entry]);
    // its table made again: the stream is read before the new one, each shard from TRIM_HORIZON (no position)
    const newer = arn.replace(/\/stream\/.*$/, '/stream/9999-12-31T00:00:00.000');
    expect(olderStreamsToRead(kept.map((s) => s.streamArn), newer)).toEqual([arn]);
  });

  it('started again on the same DynamoDB Local spelled another way (localhost, a trailing slash): each shard resumes after its checkpoint, nothing read again', async () => {
    const file = join(folder(), CHECKPOINTS_FILE);
    await write('l1');
    expect((await run(file, 'l1')).seen).toContain('l1');
    await write('l2');
    const spelled = `${endpoint().replace('127.0.0.1', 'localhost')}/`;
    expect(spelled).not.toBe(endpoint());
    // before the fix: from TRIM_HORIZON, every earlier record delivered again
    expect((await run(file, 'l2', { endpoint: spelled })).seen).toEqual(['l2']);
  });

  it('a kept checkpoint the stream refuses as invalid (ValidationException, DynamoDB Local’s answer to 000000000000000000000): read from TRIM_HORIZON at once, told once, the checkpoint dropped; the shard’s records delivered', async () => {
    const file = join(folder(), CHECKPOINTS_FILE);
    await write('v1');
    const first = await run(file, 'v1');
    const kept = JSON.parse(readFileSync(file, 'utf8')) as CheckpointsFile;
    const [shard] = Object.keys(kept.streams[0]!.shards);
    // planted: of the file's form (21 to 40 digits), so loaded, but before the shard's first sequence number
    const bad = '000000000000000000000';
    kept.streams[0]!.shards[shard!] = bad;
    writeFileSync(file, JSON.stringify(kept));
    await write('v2');
    // before the fix: refused and retried for ever (stopped here after the 1st, 2nd and 4th failure were told), v2 never delivered
    const errors: Error[] = [];
    const again = await run(file, 'v2', { onError: (e) => void errors.push(e), giveUp: () => errors.length >= 3 });
    expect(again.seen.slice(0, first.seen.length)).toEqual(first.seen); // from the shard's oldest record
    expect(again.seen).toContain('v2');
    expect(errors).toEqual([]);
    expect(again.told).toHaveLength(1);
    expect(again.told[0]!.message).toContain(`the candidateStream function's checkpoint in shard ${shard} (sequence number ${bad}) is refused by the stream (ValidationException: Invalid SequenceNumber for the shard): reading the shard from TRIM_HORIZON; records before the checkpoint may be handled again`);
    expect(again.told[0]!.extra).toMatchObject({ function: 'candidateStream', stream: arn, shard, sequenceNumber: bad });
    // dropped, and moved on from there
    const now = load(file, endpoint(), () => undefined).get(arn, shard!);
    expect(now).toBeDefined();
    expect(now).not.toBe(bad);
  });

  it('a checkpoint whose records are trimmed: read from TRIM_HORIZON, told once', async () => {
    const file = join(folder(), CHECKPOINTS_FILE);
    await write('d1');
    const first = await run(file, 'd1');
    const kept = JSON.parse(readFileSync(file, 'utf8')) as CheckpointsFile;
    const [shard, seq] = Object.entries(kept.streams[0]!.shards)[0]!;
    // DynamoDB Local keeps records for good: the stream's answer for a checkpoint older than 24 h, at the client's edge
    const trimming = new DynamoDBStreamsClient({ endpoint: endpoint(), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    trimming.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as { ShardIteratorType?: string; SequenceNumber?: string };
        if (input.ShardIteratorType === 'AFTER_SEQUENCE_NUMBER' && input.SequenceNumber === seq) {
          throw new TrimmedDataAccessException({ message: 'trimmed', $metadata: {} });
        }
        return next(args);
      },
      { step: 'initialize', name: 'trimCheckpoint' },
    );
    try {
      await write('d2');
      const again = await run(file, 'd2', { client: trimming });
      expect(again.seen.slice(0, first.seen.length)).toEqual(first.seen); // from the shard's oldest record
      expect(again.seen).toContain('d2');
      expect(again.told).toHaveLength(1);
      expect(again.told[0]!.message).toMatch(new RegExp(`candidateStream function's checkpoint in shard ${shard} \\(sequence number ${seq}\\) is older than the stream keeps: reading the shard from TRIM_HORIZON`));
      // and the checkpoint moves on from there
      expect(load(file, endpoint(), () => undefined).get(arn, shard)).not.toBe(seq);
    } finally {
      trimming.destroy();
    }
  });
});

describe('a position trimmed while its iterator had expired, on DynamoDB Local (a review, 2026-12-07: asked for again every 100 ms for ever)', () => {
  let t: TestTables;
  let arn: string;
  const endpoint = () => inject('ddbEndpoint');
  beforeAll(async () => {
    t = await testTables('trimmed-position');
    arn = (await t.client.send(new DescribeTableCommand({ TableName: t.names.candidates }))).Table!.LatestStreamArn!;
  });
  afterAll(async () => {
    await t.drop();
  });
  const put = (name: string) => t.client.send(new PutItemCommand({ TableName: t.names.candidates, Item: { leaseName: { S: 'job' }, name: { S: name } } }));

  it('the last record handled in this run trimmed under an expired iterator (the machine asleep past 24 h): read from TRIM_HORIZON, told once; the shard’s later records delivered', async () => {
    // DynamoDB Local neither expires iterators nor trims: the stream's answers after such a sleep, at the
    // client's edge. Once x1 is read, the next read finds its iterator expired, and the position after
    // the last record of that batch is trimmed; the records themselves are DynamoDB Local's
    let after: string | undefined;
    let expired = false;
    let trimmedAsks = 0;
    const asleep = new DynamoDBStreamsClient({ endpoint: endpoint(), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    asleep.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as { ShardIterator?: string; ShardIteratorType?: string; SequenceNumber?: string };
        if (after !== undefined && input.ShardIteratorType === 'AFTER_SEQUENCE_NUMBER' && input.SequenceNumber === after) {
          trimmedAsks++;
          throw new TrimmedDataAccessException({ message: 'trimmed', $metadata: {} });
        }
        if (after !== undefined && !expired && input.ShardIterator !== undefined) {
          expired = true;
          throw new ExpiredIteratorException({ message: 'expired', $metadata: {} });
        }
        const out = await next(args);
        const records = (out.output as { Records?: { dynamodb?: { SequenceNumber?: string; Keys?: Record<string, { S?: string }> } }[] }).Records ?? [];
        if (after === undefined && records.some((r) => r.dynamodb?.Keys?.['name']?.S === 'x1')) after = records.at(-1)!.dynamodb!.SequenceNumber;
        return out;
      },
      { step: 'initialize', name: 'sleptPastTheStream' },
    );
    const w = warnings();
    const seen: string[] = [];
    const errors: Error[] = [];
    const poller = new StreamPoller({
      client: asleep,
      streamArn: arn,
      trigger: { ...wiring.candidateStream.trigger, filters: undefined },
      functionName: 'candidateStream',
      log: { warn: w.warn, error: w.warn },
      invoke: async (e) => void seen.push(...e.Records.map((r) => r.dynamodb!.Keys!['name']!.S!)),
      deadLetter: () => undefined,
      onError: (e) => void errors.push(e),
    });
    await put('x1');
    poller.start();
    try {
      await waitFor('x1 read', () => after);
      await put('x2');
      // before the fix: the trimmed position asked for again and again (stopped here at the 5th), x2 never delivered
      await waitFor('x2 delivered', () => seen.includes('x2') || trimmedAsks >= 5);
    } finally {
      await poller.stop();
      asleep.destroy();
    }
    expect(trimmedAsks).toBe(1);
    expect(seen).toContain('x2');
    expect(errors).toEqual([]);
    expect(w.told).toHaveLength(1);
    expect(w.told[0]!.message).toMatch(
      new RegExp(`^the candidateStream function's position in shard \\S+ \\(after sequence number ${after}, the last record it handled, its iterator expired\\) is older than the stream keeps: reading the shard from TRIM_HORIZON; the changes trimmed in between were never handled$`),
    );
    expect(w.told[0]!.extra).toMatchObject({ function: 'candidateStream', stream: arn, sequenceNumber: after });
  });
});

describe('two functions reading one stream, on DynamoDB Local', () => {
  let t: TestTables;
  let streams: DynamoDBStreamsClient;
  let arn: string;
  beforeAll(async () => {
    t = await testTables('fn-checkpoints');
    streams = new DynamoDBStreamsClient({ endpoint: inject('ddbEndpoint'), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    arn = (await t.client.send(new DescribeTableCommand({ TableName: t.names.candidates }))).Table!.LatestStreamArn!;
  });
  afterAll(async () => {
    streams.destroy();
    await t.drop();
  });
  const put = (name: string) => t.client.send(new PutItemCommand({ TableName: t.names.candidates, Item: { leaseName: { S: 'job' }, name: { S: name } } }));

  /** A poller of the candidates stream for function `fn` on `file`'s checkpoints, recording what it is given; failing every batch while `fail` says so. */
  const poller = (file: string, fn: string, seen: string[], fail: () => boolean) =>
    new StreamPoller({
      client: streams,
      streamArn: arn,
      trigger: { ...wiring.candidateStream.trigger, filters: undefined, retryAttempts: -1 },
      functionName: fn,
      checkpoints: loadCheckpoints(file, inject('ddbEndpoint'), () => undefined).of(fn),
      invoke: async (e) => {
        seen.push(...e.Records.map((r) => r.dynamodb!.Keys!['name']!.S!));
        if (fail()) throw new Error('not now');
      },
      deadLetter: () => undefined,
    });

  it('each function resumes from its own checkpoints: one whose batch failed (stopped mid-retry) gets it at the next start though the other finished it; the other gets nothing again', async () => {
    const file = join(folder(), CHECKPOINTS_FILE);
    await put('f1');
    const handled: string[] = [];
    const failing: string[] = [];
    const a = poller(file, 'handles', handled, () => false);
    const b = poller(file, 'fails', failing, () => true);
    a.start();
    b.start();
    try {
      await waitFor('f1 handled by one and failed by the other', () => handled.includes('f1') && failing.includes('f1'));
    } finally {
      await a.stop();
      await b.stop();
    }
    await put('f2');
    const again = { handled: [] as string[], failing: [] as string[] };
    const a2 = poller(file, 'handles', again.handled, () => false);
    const b2 = poller(file, 'fails', again.failing, () => false); // its fault cleared
    a2.start();
    b2.start();
    try {
      await waitFor('f2 given to both', () => again.handled.includes('f2') && again.failing.includes('f2'));
    } finally {
      await a2.stop();
      await b2.stop();
    }
    // before the fix: one position per stream and shard, the handling function's, so the failing one resumed after f1: [f2]
    expect(again).toEqual({ handled: ['f2'], failing: ['f1', 'f2'] });
  });
});
