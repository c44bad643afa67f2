/**
 * One Ctrl-C is one, however many times it arrives: a launcher passes the terminal's signal on while
 * the terminal's own reaches the process too (npm and npx pass it on at once; tsx's CLI sends it
 * again when it has not heard within 30 ms that its child got it), so `npm start` and conclave-local
 * could get SIGINT twice, took the second for a person's second Ctrl-C and exited at once: no
 * orderly stop, no "stopped (SIGINT)", an --endpoint's lock item left (a review, 2026-12-07: 3 runs
 * of 4). Here the signal is sent twice, as such an echo comes. And `npm start`'s events folder error
 * names its own flag, --dir.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { RUNTIME_LOCK_TABLE } from '../../lib/local/runtime-lock.js';
import { deleteTables } from '../../lib/local/tables.js';
import { localClient } from '../../lib/stores/client.js';
import { defaultTableNames } from '../../lib/tables.js';
import { WAIT_GUARD_MS } from '../guards.js';
import { waitFor } from '../sdk/harness.js';

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const BIN = fileURLToPath(new URL('../../lib/testing/bin.ts', import.meta.url));
const START = fileURLToPath(new URL('../../lib/local/start.ts', import.meta.url));

const admin = localClient(inject('ddbEndpoint'));
const prefixes: string[] = [];
afterAll(async () => {
  for (const p of prefixes) await deleteTables(admin, defaultTableNames(p));
  admin.destroy();
});

/** `script` run with `args` as its launcher runs it (node, tsx's loader): its output as it comes, and how it exited. */
function running(script: string, args: string[]) {
  const child = spawn(process.execPath, ['--import', TSX, script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (d: Buffer) => void (out.stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => void (out.stderr += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, out, exited };
}

/** SIGINT, and the same again `afterMs` later, as a launcher's echo of one Ctrl-C comes (this process waits, nothing runs between the two). */
function ctrlCEchoed(pid: number, afterMs: number): void {
  process.kill(pid, 'SIGINT');
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, afterMs);
  process.kill(pid, 'SIGINT');
}

describe('one Ctrl-C, echoed', () => {
  it('conclave-local --endpoint, the echo 2 ms later (npx passing it on): stops in order, says "stopped (SIGINT)", exits 0 and deletes its lock item (before: exit 130 at once, the lock left)', async () => {
    const prefix = `echo-${randomUUID().slice(0, 8)}`;
    prefixes.push(prefix);
    const local = running(BIN, ['--endpoint', inject('ddbEndpoint'), '--table-prefix', prefix, '--no-push', '--tick', '600s', '--events-dir', mkdtempSync(join(tmpdir(), 'conclave-echo-'))]);
    try {
      await waitFor('ready', () => /^ready$/m.test(local.out.stdout) || local.child.exitCode !== null);
      expect(local.out.stdout, local.out.stderr).toMatch(/^ready$/m);
      ctrlCEchoed(local.child.pid!, 2);
      expect(await local.exited, `${local.out.stdout}\n${local.out.stderr}`).toEqual({ code: 0, signal: null });
      expect(local.out.stdout).toMatch(/\nstopped \(SIGINT\)\n$/);
      const lock = await admin.send(new GetItemCommand({ TableName: RUNTIME_LOCK_TABLE, Key: { prefix: { S: prefix } }, ConsistentRead: true }));
      expect(lock.Item).toBeUndefined();
    } finally {
      local.child.kill('SIGKILL');
    }
  });

  it('npm start -- --serve, the echo 30 ms later (tsx\'s CLI sending it again): stops in order, says "stopped (SIGINT)" and exits 0 (before: exit 130 at once)', async () => {
    const serve = running(START, ['--serve', '--dir', mkdtempSync(join(tmpdir(), 'conclave-echo-serve-'))]);
    try {
      await waitFor('the system up', () => serve.out.stdout.includes('Ctrl-C stops it.') || serve.child.exitCode !== null);
      expect(serve.out.stdout, serve.out.stderr).toContain('Ctrl-C stops it.');
      ctrlCEchoed(serve.child.pid!, 30);
      expect(await serve.exited, `${serve.out.stdout}\n${serve.out.stderr}`).toEqual({ code: 0, signal: null });
      expect(serve.out.stdout).toMatch(/\nstopped \(SIGINT\)\n$/);
    } finally {
      serve.child.kill('SIGKILL');
    }
  });
});

describe('npm start with an events folder it cannot use', () => {
  it('names its own flag, --dir (it named conclave-local\'s --events-dir and startLocalConclave\'s eventsDir)', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'conclave-echo-nodir-')), 'a-file');
    writeFileSync(file, '');
    // fails before DynamoDB Local starts; the timeout is a hang guard, not a budget
    const r = spawnSync(process.execPath, ['--import', TSX, START, '--serve', '--dir', join(file, 'events')], { encoding: 'utf8', timeout: WAIT_GUARD_MS });
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^npm start: cannot use ${join(file, 'events')} as the events folder, --dir: .* - name a folder it can write to \\(made if missing\\), such as \\.local$`, 'm'));
  });
});
