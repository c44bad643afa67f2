/**
 * One local runtime per DynamoDB Local and table prefix: a second (another `conclave-local
 * --endpoint` on the same prefix, or a `startLocalConclave({ endpoint, tablePrefix })` beside it)
 * would poll the same streams, so each record would be handled twice and each event published
 * twice, and the two would share the streams' checkpoints. It is refused at its start, naming the
 * running one's pid and the fix, through a lock file (lib/local/runtime-lock.ts); a lock left by a
 * process that is gone is taken over.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { startLocalRuntime } from '../../lib/local/runtime.js';
import { runtimeLockFile } from '../../lib/local/runtime-lock.js';
import { deleteTables } from '../../lib/local/tables.js';
import { localClient } from '../../lib/stores/client.js';
import { defaultTableNames } from '../../lib/tables.js';
import { waitFor } from '../sdk/harness.js';

const BIN = fileURLToPath(new URL('../../lib/testing/bin.ts', import.meta.url));
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const admin = localClient(inject('ddbEndpoint'));
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
const folder = () => mkdtempSync(join(tmpdir(), 'conclave-one-runtime-'));
const start = (prefix: string, endpoint: string = inject('ddbEndpoint')) => startLocalRuntime({ endpoint, prefix, dir: folder(), tickEveryMs: 600_000, logLevel: 'SILENT', push: false });

describe('one local runtime per DynamoDB Local and table prefix', () => {
  it('a second start on the same endpoint and prefix (another process running conclave-local) is refused, naming its pid and the fix; another prefix runs beside it; once it stops, the prefix starts again', async () => {
    const prefix = newPrefix('one');
    const child = spawn(process.execPath, ['--import', TSX, BIN, '--endpoint', inject('ddbEndpoint'), '--table-prefix', prefix, '--events-dir', folder(), '--no-push', '--tick', '600'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = { stdout: '', stderr: '' };
    child.stdout.on('data', (d: Buffer) => void (out.stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => void (out.stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    try {
      await waitFor('conclave-local ready', () => out.stdout.includes('\nready\n') || child.exitCode !== null);
      expect(out.stderr).toBe('');
      // the same DynamoDB Local spelled another way is the same one
      const spelled = `${inject('ddbEndpoint').replace('127.0.0.1', 'localhost')}/`;
      const refused = await start(prefix, spelled).then(
        async (rt) => {
          await rt.stop();
          return undefined;
        },
        (e: unknown) => e as Error,
      );
      // before the fix: started, and each record was handled (each event published) by both
      expect(refused?.message).toBe(
        `local mode already runs on the DynamoDB Local at ${spelled} with table prefix ${prefix}: process ${child.pid} (lock ${runtimeLockFile(inject('ddbEndpoint'), prefix)}). ` +
          'A second would handle every stream record and publish every event again: stop that one first (Ctrl-C), or choose another table prefix (conclave-local: --table-prefix; startLocalConclave: tablePrefix); ' +
          `if process ${child.pid} is no local mode, delete the lock file`,
      );
      expect(child.exitCode).toBeNull(); // the running one is left alone

      const beside = await start(newPrefix('beside'));
      await beside.stop();
    } finally {
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
    expect(existsSync(runtimeLockFile(inject('ddbEndpoint'), prefix))).toBe(false);
    const again = await start(prefix);
    await again.stop();
  });

  it('two in one process: the second is refused naming this pid; a lock left by a process that is gone (killed) is taken over, and let go at the stop', async () => {
    const prefix = newPrefix('stale');
    const lock = runtimeLockFile(inject('ddbEndpoint'), prefix);
    const gone = spawnSync(process.execPath, ['-e', '']).pid!; // ended: no such process now
    writeFileSync(lock, `${gone}.1 endpoint=${inject('ddbEndpoint')} prefix=${prefix}\n`);
    const rt = await start(prefix);
    try {
      await expect(start(prefix)).rejects.toThrow(`with table prefix ${prefix}: process ${process.pid} (lock ${lock})`);
    } finally {
      await rt.stop();
    }
    expect(existsSync(lock)).toBe(false);
  });
});
