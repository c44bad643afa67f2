/**
 * The checkpoints file's writes on a full disk (lib/local/stream-checkpoints.ts, lib/local/lock-file.ts):
 * a temp file whose write fails is removed, never left at every try (a new-user trial, 2026-12-06,
 * found a zero-byte `stream-checkpoints.json.lock.<pid>.<n>.tmp` per try, 12 a minute, for good); the
 * ones processes now gone left are removed at the next start; and the failure is told as a
 * checkpoint not saved, naming the file and the fix, not as a "stream read failed" with a stack.
 *
 * A full disk without root: `writeFileSync` of the chosen temp files makes the file (empty), as
 * open(2) does on a full tmpfs, then fails with ENOSPC, as write(2) does there.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, inject, it, vi } from 'vitest';
import { waitFor } from '../sdk/harness.js';

/** The temp files whose write fails now (by what their path ends with, before `.<pid>.<n>.tmp`); none: the disk has room. What the writes refused would have written, and how many writes of the checkpoints file were tried. */
const full = { ending: undefined as string | undefined, refused: [] as string[], fileWrites: 0 };

vi.mock('node:fs', async (original) => {
  const real = await original<typeof import('node:fs')>();
  const writeFileSync: typeof real.writeFileSync = (path, data, options) => {
    const ending = full.ending;
    if (typeof path === 'string' && /stream-checkpoints\.json\.\d+\.\d+\.tmp$/.test(path)) full.fileWrites++;
    if (ending !== undefined && typeof path === 'string' && new RegExp(`${ending.replace(/\./g, '\\.')}\\.\\d+\\.\\d+\\.tmp$`).test(path)) {
      real.writeFileSync(path, ''); // made, nothing written
      full.refused.push(String(data));
      throw Object.assign(new Error(`ENOSPC: no space left on device, write`), { code: 'ENOSPC', errno: -28, syscall: 'write' });
    }
    real.writeFileSync(path, data, options);
  };
  return { ...real, writeFileSync, default: { ...real, writeFileSync } };
});

const { CHECKPOINTS_FILE, CheckpointsNotSaved, loadCheckpoints } = await import('../../lib/local/stream-checkpoints.js');
const { CHECKPOINTS_SOURCE, runtimeFaults, startLocalRuntime } = await import('../../lib/local/runtime.js');
const { deleteTables } = await import('../../lib/local/tables.js');
const { defaultTableNames } = await import('../../lib/tables.js');
const { localClient } = await import('../../lib/stores/client.js');

const ARN = 'arn:aws:dynamodb:ddblocal:000000000000:table/p-leases/stream/2026-12-01T00:00:00.000';
const SEQ = '000000000000000000001';
const ENDPOINT = 'http://127.0.0.1:8000';

const folder = () => fs.mkdtempSync(join(tmpdir(), 'conclave-full-disk-'));
const temps = (dir: string) => fs.readdirSync(dir).filter((n) => n.endsWith('.tmp'));
const quiet = () => undefined;

afterEach(() => {
  full.ending = undefined;
  full.refused = [];
});

/** Each function's shards in `file` (or in what a refused write would have written), for stream `arn` (any, without). */
const shardsIn = (text: string, arn?: string) =>
  Object.fromEntries(
    (JSON.parse(text) as { streams: { function: string; streamArn: string; shards: Record<string, string> }[] }).streams
      .filter((e) => arn === undefined || e.streamArn === arn)
      .map((e) => [e.function, e.shards]),
  );

describe('the checkpoints file on a full disk', () => {
  it("a lock try whose temp file cannot be written leaves none behind (each try left a zero-byte stream-checkpoints.json.lock.<pid>.<n>.tmp), and the next save, with room again, is made", async () => {
    const dir = folder();
    const file = join(dir, CHECKPOINTS_FILE);
    const kept = loadCheckpoints(file, ENDPOINT, quiet);
    full.ending = `${CHECKPOINTS_FILE}.lock`;
    for (let i = 0; i < 3; i++) await expect(kept.of('leaseStream').set(ARN, 'shard-1', SEQ)).rejects.toBeInstanceOf(CheckpointsNotSaved);
    expect(temps(dir)).toEqual([]);
    expect(fs.existsSync(`${file}.lock`)).toBe(false);
    full.ending = undefined;
    await kept.of('leaseStream').set(ARN, 'shard-1', SEQ);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toMatchObject({ streams: [{ function: 'leaseStream', streamArn: ARN, shards: { 'shard-1': SEQ } }] });
    expect(fs.readdirSync(dir).sort()).toEqual([CHECKPOINTS_FILE]);
  });

  it('a save whose new file cannot be written leaves no temp file, the file as it was, and the lock let go', async () => {
    const dir = folder();
    const file = join(dir, CHECKPOINTS_FILE);
    const kept = loadCheckpoints(file, ENDPOINT, quiet);
    await kept.of('leaseStream').set(ARN, 'shard-1', SEQ);
    const before = fs.readFileSync(file, 'utf8');
    full.ending = CHECKPOINTS_FILE;
    await expect(kept.of('leaseStream').set(ARN, 'shard-1', '000000000000000000002')).rejects.toThrow(`stream checkpoints could not be saved to ${file} (ENOSPC: no space left on device, write)`);
    expect(temps(dir)).toEqual([]);
    expect(fs.readFileSync(file, 'utf8')).toBe(before);
    expect(fs.existsSync(`${file}.lock`)).toBe(false);
  });

  it("at the load, the temp files processes now gone left are removed: only names of exactly that form, never a live process's", () => {
    const dir = folder();
    const file = join(dir, CHECKPOINTS_FILE);
    const gone = spawnSync(process.execPath, ['-e', '']).pid; // ran and exited
    const live = process.ppid;
    const left = [`${CHECKPOINTS_FILE}.lock.${gone}.3.tmp`, `${CHECKPOINTS_FILE}.${gone}.7.tmp`, `${CHECKPOINTS_FILE}.lock.${gone}.2.stale`];
    const others = [
      `${CHECKPOINTS_FILE}.lock.${live}.1.tmp`, // a live process's lock try
      `${CHECKPOINTS_FILE}.${process.pid}.9.tmp`, // this process's own
      `${CHECKPOINTS_FILE}.lock.${gone}.tmp`, // not of the form
      `${CHECKPOINTS_FILE}.lock.${gone}.3.tmp.keep`,
      `other.json.${gone}.1.tmp`,
      'events.jsonl',
    ];
    for (const n of [...left, ...others]) fs.writeFileSync(join(dir, n), '');
    loadCheckpoints(file, ENDPOINT, quiet);
    expect(fs.readdirSync(dir).sort()).toEqual([...others].sort());
  });

  it('a save that fails is told as a checkpoint not saved to the file, its code, what is handled again and the fix (it was "stream read failed" with a stack), once while it lasts', async () => {
    const dir = folder();
    const file = join(dir, CHECKPOINTS_FILE);
    const kept = loadCheckpoints(file, ENDPOINT, quiet);
    const lines: { level: string; message: string; extra: Record<string, unknown> }[] = [];
    const log = { error: (message: string, extra: Record<string, unknown>) => void lines.push({ level: 'error', message, extra }), warn: (message: string, extra: Record<string, unknown>) => void lines.push({ level: 'warn', message, extra }) };
    let now = 0;
    const faults = runtimeFaults(log, ENDPOINT, { monotonic: () => now });
    full.ending = `${CHECKPOINTS_FILE}.lock`;
    for (let i = 0; i < 13; i++) {
      now += 5_000;
      const e = await Promise.resolve(kept.of(i % 2 ? 'leaseStream' : 'candidateStream').set(ARN, 'shard-1', SEQ)).then(() => undefined, (x: unknown) => x);
      faults.failed(CHECKPOINTS_SOURCE, e);
    }
    full.ending = undefined;
    await kept.of('leaseStream').set(ARN, 'shard-1', SEQ);
    faults.succeeded(CHECKPOINTS_SOURCE);
    expect(lines.map((l) => `${l.level}: ${l.message}`)).toEqual([
      `error: the stream checkpoints could not be saved to ${file} (ENOSPC): the records handled since the last save are handled again at the next start; free space on its disk (each function goes on reading its streams; repeats are counted once a minute, and the first save that succeeds is told)`,
      `error: stream checkpoints still cannot be saved to ${file} (ENOSPC; free space on its disk): 12 more failures in 60 s (told once a minute); the last, of the stream checkpoints: stream checkpoints could not be saved to ${file} (ENOSPC: no space left on device, write)`,
      `warn: stream checkpoints are saved to ${file} again (the stream checkpoints): 13 failures in 60 s before`,
    ]);
    expect(lines[0]!.extra).toMatchObject({ file, code: 'ENOSPC' });
    expect(temps(dir)).toEqual([]);
  });
});

describe('a checkpoint a full disk kept from the file (a review, 2026-12-07: never written again)', () => {
  const SEQ2 = '000000000000000000002';
  const SEQ3 = '000000000000000000003';
  const SEQ4 = '000000000000000000004';

  it('is kept and written again: by retry() once there is room, or with the next save, a later position of the same shard in its place; retry() with nothing unsaved writes nothing and says so', async () => {
    const dir = folder();
    const file = join(dir, CHECKPOINTS_FILE);
    const kept = loadCheckpoints(file, ENDPOINT, quiet);
    const lease = kept.of('leaseStream');
    await lease.set(ARN, 'shard-1', SEQ);
    full.ending = CHECKPOINTS_FILE;
    await expect(lease.set(ARN, 'shard-1', SEQ2)).rejects.toBeInstanceOf(CheckpointsNotSaved);
    await expect(Promise.resolve(lease.retry?.())).rejects.toBeInstanceOf(CheckpointsNotSaved); // still full
    full.ending = undefined;
    // before: nothing kept, so nothing to write again; the file said SEQ until the shard's next batch
    expect(await lease.retry?.()).toBe(true);
    expect(shardsIn(fs.readFileSync(file, 'utf8'))).toEqual({ leaseStream: { 'shard-1': SEQ2 } });
    // nothing unsaved: nothing written, and no save to tell (the poller asks at every round)
    const writes = full.fileWrites;
    expect(await kept.retry()).toBe(false);
    expect(full.fileWrites).toBe(writes);

    full.ending = CHECKPOINTS_FILE;
    await expect(lease.set(ARN, 'shard-1', SEQ3)).rejects.toBeInstanceOf(CheckpointsNotSaved);
    await expect(kept.of('candidateStream').set(ARN, 'shard-2', SEQ)).rejects.toBeInstanceOf(CheckpointsNotSaved);
    await expect(lease.set(ARN, 'shard-1', SEQ4)).rejects.toBeInstanceOf(CheckpointsNotSaved);
    full.ending = undefined;
    await lease.set(ARN, 'shard-3', SEQ);
    expect(shardsIn(fs.readFileSync(file, 'utf8'))).toEqual({ leaseStream: { 'shard-1': SEQ4, 'shard-3': SEQ }, candidateStream: { 'shard-2': SEQ } });
    expect(temps(dir)).toEqual([]);
  });

  describe('in a local runtime on DynamoDB Local', () => {
    const admin = localClient(inject('ddbEndpoint'));
    const prefixes: string[] = [];
    afterAll(async () => {
      for (const p of prefixes) await deleteTables(admin, defaultTableNames(p));
      admin.destroy();
    });

    /** A runtime on the shared DynamoDB Local whose candidate stream function has saved a position, then had one refused (the disk full): the position refused, and the stream. */
    const refusedOnce = async () => {
      const prefix = `full-disk-${randomUUID().slice(0, 8)}`;
      prefixes.push(prefix);
      const dir = folder();
      const file = join(dir, CHECKPOINTS_FILE);
      const rt = await startLocalRuntime({ endpoint: inject('ddbEndpoint'), prefix, dir, push: false, tickEveryMs: 600_000, logLevel: 'SILENT' });
      const put = (name: string) => rt.client.send(new PutItemCommand({ TableName: rt.tables.candidates, Item: { leaseName: { S: 'job' }, name: { S: name } } }));
      const candidates = () => (fs.existsSync(file) ? (shardsIn(fs.readFileSync(file, 'utf8'))['candidateStream'] ?? {}) : {});
      await put('c1');
      const first = await waitFor('c1 saved', () => Object.values(candidates())[0]);
      full.ending = CHECKPOINTS_FILE;
      await put('c2');
      const refused = await waitFor('c2 refused', () => full.refused.map((t) => Object.values(shardsIn(t)['candidateStream'] ?? {})[0]).find((seq) => seq !== undefined && seq !== first));
      expect(BigInt(refused)).toBeGreaterThan(BigInt(first));
      expect(Object.values(candidates())).toEqual([first]);
      return { rt, refused, candidates };
    };

    it('running: saved at a round of the stream poller once there is room, no record read since', async () => {
      const { rt, refused, candidates } = await refusedOnce();
      try {
        full.ending = undefined;
        // before: the file kept c1's position until another candidate row was written
        await waitFor('c2 saved', () => Object.values(candidates())[0] === refused);
      } finally {
        await rt.stop();
      }
    });

    it('stopped: saved by the stop at the latest', async () => {
      const { rt, refused, candidates } = await refusedOnce();
      full.ending = undefined;
      await rt.stop();
      // before: c1's position, and the next start handled c2 again
      expect(Object.values(candidates())).toEqual([refused]);
    });
  });
});
