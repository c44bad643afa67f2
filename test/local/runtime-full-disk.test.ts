/**
 * Local mode's own files and log when things go wrong around it (a new-user trial, 2026-12-06): an
 * event appended as the disk fills, an events folder that cannot be written, and DynamoDB Local
 * gone a few seconds (lib/local/runtime.ts).
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonLines, runtimeFaults, startLocalRuntime, type WriteAll } from '../../lib/local/runtime.js';

const folder = () => mkdtempSync(join(tmpdir(), 'conclave-runtime-files-'));
const enospc = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
const EVENT = { one: 'an event', many: 'events' };
/** The lines of `file`, and which of them are JSON (`conclave events` skips the others). */
const lines = (file: string) => readFileSync(file, 'utf8').split('\n').slice(0, -1);
const parses = (line: string) => {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
};

describe('the events file on a full disk', () => {
  it('an event cut off as the disk fills leaves the file as it was, and the next, once there is room, is a line of its own (it was glued onto the torn one, and both skipped)', () => {
    const file = join(folder(), 'events.jsonl');
    writeFileSync(file, '{"n":0}\n');
    const told: string[] = [];
    let room = Infinity;
    /** The disk: `room` bytes more, then ENOSPC, part of the line written. */
    const write: WriteAll = (fd, data) => {
      const fits = Math.min(room, data.length);
      if (fits > 0) writeSync(fd, data, 0, fits);
      room -= fits;
      if (fits < data.length) throw enospc();
    };
    const append = jsonLines(file, EVENT, { write, warn: (m) => void told.push(m) });
    room = 5; // the disk fills 5 bytes into the next line
    append({ n: 1, holder: 'worker-1' });
    append({ n: 2, holder: 'worker-2' }); // nothing fits
    expect(readFileSync(file, 'utf8')).toBe('{"n":0}\n');
    room = Infinity; // space freed
    append({ n: 3, holder: 'worker-3' });
    expect(lines(file)).toEqual(['{"n":0}', '{"n":3,"holder":"worker-3"}']);
    expect(told).toEqual([
      `local mode could not write an event to ${file} (ENOSPC: no space left on device, write; the file is left as it was: free space on its disk, and the events after that are written to it again; until then each is told here, in memory only); the line it would have written: {"n":1,"holder":"worker-1"}`,
      `local mode could not write an event to ${file} (ENOSPC, 2 lines in a row now; the first told why and the fix); the line it would have written: {"n":2,"holder":"worker-2"}`,
      `local mode writes events to ${file} again: the 2 lines before (ENOSPC) were not written, each told in a warning of its own`,
    ]);
  });

  it('a file that ends mid-line all the same (a process sharing the folder cut off) gets the next line on a fresh one: only the torn line is skipped', () => {
    const file = join(folder(), 'events.jsonl');
    writeFileSync(file, '{"n":0}\n{"n":1,"hol');
    const append = jsonLines(file, EVENT, { warn: () => undefined });
    append({ n: 2 });
    append({ n: 3 });
    expect(lines(file)).toEqual(['{"n":0}', '{"n":1,"hol', '{"n":2}', '{"n":3}']);
    expect(lines(file).filter(parses)).toHaveLength(3);
  });

  it.skipIf(!existsSync('/dev/full'))('a real ENOSPC (/dev/full): told once with the fix, the line in it', () => {
    const told: string[] = [];
    const append = jsonLines('/dev/full', EVENT, { warn: (m) => void told.push(m) });
    append({ n: 1 });
    expect(told).toHaveLength(1);
    expect(told[0]).toMatch(/^local mode could not write an event to \/dev\/full \(ENOSPC: .*free space on its disk.*\); the line it would have written: \{"n":1\}$/);
  });
});

describe('an events folder that is there and cannot be written', () => {
  const refused = (dir: string) =>
    startLocalRuntime({ dir, endpoint: 'http://127.0.0.1:9', push: false, logLevel: 'SILENT', tickEveryMs: 600_000 }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );

  it('events.jsonl unwritable there (a folder in its place: EISDIR): the error names the folder, the option and the fix (it was the bare open error), before anything starts', async () => {
    const dir = folder();
    mkdirSync(join(dir, 'events.jsonl'));
    const e = await refused(dir);
    expect(e?.message).toMatch(new RegExp(`^cannot use ${dir} as the events folder, eventsDir \\(conclave-local: --events-dir\\): EISDIR: .* - name a folder it can write to \\(made if missing\\), such as \\.local$`));
  });

  // (root writes to a read-only folder all the same)
  it.skipIf(process.getuid?.() === 0)('a read-only folder (EACCES): the same', async () => {
    const dir = folder();
    chmodSync(dir, 0o555);
    const e = await refused(dir);
    expect(e?.message).toMatch(new RegExp(`^cannot use ${dir} as the events folder, eventsDir \\(conclave-local: --events-dir\\): EACCES: .* - name a folder it can write to`));
  });
});

describe("the runtime's repeated failures", () => {
  /** `code` as Node's connection errors carry it. */
  const refusedAt = (port: number) => Object.assign(new Error(`connect ECONNREFUSED 127.0.0.1:${port}`), { code: 'ECONNREFUSED' });

  it('DynamoDB Local gone 15 s: one line as it starts, naming the endpoint and the kind, with the first error; none at each try; one as it answers again (it was 21 ERROR lines with stacks)', () => {
    const told: { level: string; message: string; extra: Record<string, unknown> }[] = [];
    const log = { error: (message: string, extra: Record<string, unknown>) => void told.push({ level: 'error', message, extra }), warn: (message: string, extra: Record<string, unknown>) => void told.push({ level: 'warn', message, extra }) };
    let now = 1_000;
    const faults = runtimeFaults(log, 'http://127.0.0.1:8100', { monotonic: () => now });
    const first = refusedAt(8100);
    // the trial's 15 s: 18 stream read failures of the two stream functions, 3 ticks
    for (let i = 0; i < 21; i++) {
      now += 700;
      const source = i % 7 === 6 ? 'the coordinator tick' : i % 2 ? "the leaseStream function's stream reads" : "the candidateStream function's stream reads";
      // (the tick's failures come wrapped: the code on the cause)
      const e = i === 0 ? first : source === 'the coordinator tick' ? new Error('the coordinator failed', { cause: refusedAt(8100) }) : refusedAt(8100);
      faults.failed(source, e);
    }
    now += 700; // a read answered
    faults.succeeded("the leaseStream function's stream reads");
    faults.succeeded("the candidateStream function's stream reads"); // nothing more: over already
    expect(told.map((l) => `${l.level}: ${l.message}`)).toEqual([
      "error: DynamoDB Local at http://127.0.0.1:8100 is unreachable (ECONNREFUSED): the candidateStream function's stream reads failed, and so do the stream reads and ticks until it answers, each tried again at its backoff; the failures are counted once a minute while it lasts, and its recovery told - if it lasts, see that DynamoDB Local runs there",
      "warn: DynamoDB Local at http://127.0.0.1:8100 answers again (the leaseStream function's stream reads): 21 failures in 15 s before",
    ]);
    expect(told[0]!.extra).toMatchObject({ endpoint: 'http://127.0.0.1:8100', code: 'ECONNREFUSED', error: first });
  });

  it('while it lasts, a count once a minute; another failure (not the endpoint gone) is told apart, and ends with its own source', () => {
    const told: string[] = [];
    const log = { error: (m: string) => void told.push(`error: ${m}`), warn: (m: string) => void told.push(`warn: ${m}`) };
    let now = 0;
    const faults = runtimeFaults(log, 'http://127.0.0.1:8100', { monotonic: () => now });
    for (let s = 0; s <= 130; s += 10) (now = s * 1000), faults.failed('the coordinator tick', Object.assign(new Error('DynamoDB gave no answer within 10000 ms'), { name: 'TimeoutError' }));
    const refused = Object.assign(new Error('Requested resource not found'), { name: 'ResourceNotFoundException' });
    faults.failed("the leaseStream function's stream reads", refused);
    faults.failed("the leaseStream function's stream reads", refused);
    now = 135_000;
    faults.succeeded('the coordinator tick');
    faults.succeeded("the leaseStream function's stream reads");
    expect(told).toEqual([
      expect.stringMatching(/^error: DynamoDB Local at http:\/\/127\.0\.0\.1:8100 is unreachable \(timed out\): the coordinator tick failed/),
      'error: DynamoDB Local at http://127.0.0.1:8100 is still unreachable (timed out): 6 more failures in 60 s (told once a minute); the last, of the coordinator tick: DynamoDB gave no answer within 10000 ms',
      'error: DynamoDB Local at http://127.0.0.1:8100 is still unreachable (timed out): 6 more failures in 60 s (told once a minute); the last, of the coordinator tick: DynamoDB gave no answer within 10000 ms',
      "error: the leaseStream function's stream reads failed (ResourceNotFoundException: Requested resource not found); tried again at its backoff, the failures counted once a minute while it lasts, and its recovery told",
      // the tick's timeouts ended by the tick's success; the stream's own failure by the stream's
      'warn: DynamoDB Local at http://127.0.0.1:8100 answers again (the coordinator tick): 14 failures in 135 s before',
      "warn: the leaseStream function's stream reads succeed again (the leaseStream function's stream reads): 2 failures in 5 s before",
    ]);
  });
});
