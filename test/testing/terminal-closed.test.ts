/**
 * `npx conclave-local` whose terminal is closed: SIGHUP. Before (a review, 2026-12-07) it handled
 * SIGINT and SIGTERM only, so SIGHUP ended it at once: no "stopped" line, and with --endpoint its
 * lock item stayed in the user's DynamoDB Local (the next start there waited for it to go stale,
 * or, on another host, was refused until then). Now it stops as at SIGTERM, and exits 0 as it does then.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
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
import { waitFor } from '../sdk/harness.js';

const BIN = fileURLToPath(new URL('../../lib/testing/bin.ts', import.meta.url));
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const admin = localClient(inject('ddbEndpoint'));
const prefix = `hup-${randomUUID().slice(0, 8)}`;
afterAll(async () => {
  await deleteTables(admin, defaultTableNames(prefix));
  admin.destroy();
});
const lockItem = async () => (await admin.send(new GetItemCommand({ TableName: RUNTIME_LOCK_TABLE, Key: { prefix: { S: prefix } }, ConsistentRead: true }))).Item;

describe('conclave-local --endpoint, its terminal closed (SIGHUP)', () => {
  it('stops in order as at SIGTERM: "stopped (SIGHUP)", exit 0, its lock item deleted from the DynamoDB Local it was given', async () => {
    const args = ['--import', TSX, BIN, '--endpoint', inject('ddbEndpoint'), '--table-prefix', prefix, '--events-dir', mkdtempSync(join(tmpdir(), 'conclave-hup-')), '--no-push', '--tick', '600s'];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = { stdout: '', stderr: '' };
    child.stdout.on('data', (d: Buffer) => void (out.stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => void (out.stderr += d.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    try {
      await waitFor('ready', () => /^ready$/m.test(out.stdout) || child.exitCode !== null);
      expect(await lockItem(), out.stderr).toBeDefined();
      child.kill('SIGHUP');
      // before: { code: null, signal: 'SIGHUP' }, no "stopped" line, the lock item left in place
      expect(await exited, out.stderr).toEqual({ code: 0, signal: null });
      expect(out.stdout).toMatch(/\nstopped \(SIGHUP\)\n$/);
      expect(await lockItem()).toBeUndefined();
    } finally {
      child.kill('SIGKILL');
    }
  });
});
