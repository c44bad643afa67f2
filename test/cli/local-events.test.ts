/**
 * `conclave events` against the packages' local system (`npx conclave-local`, `startLocalConclave`),
 * not only the repository's `npm start`: the same runtime writes the events file, where the CLI
 * looks for it by default.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, inject, it } from 'vitest';
import { WorkerProcess } from '../../lib/local/worker-process.js';
import { startLocalConclave } from '../../lib/testing/index.js';
import { WAIT_GUARD_MS } from '../guards.js';
import { waitFor } from '../sdk/harness.js';
import { runMain } from './harness.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
// tsx by path: the children run in a folder of their own, where no node_modules resolves 'tsx'
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const TIMING = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 };

describe('conclave events with npx conclave-local', () => {
  it('conclave-local writes .local/events.jsonl in the folder it runs in and prints CONCLAVE_EVENTS_FILE; conclave events run there reads it with no flag', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'conclave-local-events-')));
    const prefix = `cle-${Date.now().toString(36)}`;
    const local = spawn(process.execPath, ['--import', TSX, join(ROOT, 'lib/testing/bin.ts'), '--endpoint', inject('ddbEndpoint'), '--table-prefix', prefix, '--no-push'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    local.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const exited = new Promise<number | null>((r) => local.once('exit', (code) => r(code)));
    let worker: WorkerProcess | undefined;
    try {
      const printed: Record<string, string> = {};
      const lines: string[] = [];
      for await (const line of createInterface({ input: local.stdout })) {
        if (line === 'ready') break;
        lines.push(line);
        const m = /^([A-Z_]+)=(.*)$/.exec(line);
        if (m) printed[m[1]!] = m[2]!;
      }
      const file = join(dir, '.local', 'events.jsonl');
      expect(printed['CONCLAVE_EVENTS_FILE'], `${lines.join('\n')}\n${stderr}`).toBe(file);
      expect(lines).toContain(`# the events, as they are published: npx conclave events --follow (in this folder; elsewhere --events-file ${file}, or CONCLAVE_EVENTS_FILE)`);
      const conclaveEvents = () =>
        spawnSync(process.execPath, [join(ROOT, 'bin/conclave.mjs'), 'events', '--lease', 'lev', '--type', 'Leader Elected'], { cwd: dir, encoding: 'utf8', timeout: WAIT_GUARD_MS, env: { ...process.env, NO_COLOR: '1', CONCLAVE_EVENTS_FILE: '' } });
      // before any event: none yet, not "no events file" (the file is there from the start)
      expect(conclaveEvents()).toMatchObject({ status: 0, stdout: '', stderr: '' });

      worker = new WorkerProcess({ identity: 'w1', lease: 'lev', emulationVersion: '1.30.0', binaryVersion: '1.30.0', timing: TIMING }, { endpoint: printed['CONCLAVE_ENDPOINT']!, tablePrefix: prefix });
      await waitFor('w1 leading', () => worker!.events.some((e) => e.event === 'started'));
      await waitFor('Leader Elected in the events file', () => existsSync(file) && readFileSync(file, 'utf8').includes('"Leader Elected"'));

      // the real bin, in that folder, no --events-file
      const r = conclaveEvents();
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^\S+Z {2}Leader Elected +lev {2}w1 leads, fencing token \d+/);
    } finally {
      await worker?.stop();
      local.kill('SIGINT');
    }
    expect(await exited, stderr).toBe(0);
  });
});

describe('startLocalConclave eventsDir', () => {
  it('appends the events to <eventsDir>/events.jsonl, kept after stop(); conclave events reads it through CONCLAVE_EVENTS_FILE', async () => {
    const dir = join(realpathSync(mkdtempSync(join(tmpdir(), 'conclave-events-dir-'))), 'kept');
    const conclave = await startLocalConclave({ endpoint: inject('ddbEndpoint'), tablePrefix: `ced-${Date.now().toString(36)}`, eventsDir: dir, push: false });
    expect(conclave.eventsFile).toBe(join(dir, 'events.jsonl'));
    const worker = new WorkerProcess({ identity: 'w2', lease: 'kept', emulationVersion: '1.30.0', binaryVersion: '1.30.0', timing: TIMING }, { endpoint: conclave.endpoint, tablePrefix: conclave.tablePrefix });
    try {
      await waitFor('Leader Elected', () => conclave.events.some((e) => e.detailType === 'Leader Elected'));
    } finally {
      await worker.stop();
      await conclave.stop();
    }
    expect(existsSync(conclave.eventsFile)).toBe(true);
    // each line names the system that wrote it: other runtimes append to the same file
    const written = readFileSync(conclave.eventsFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { tablePrefix?: string; endpoint?: string });
    expect(written.every((l) => l.tablePrefix === conclave.tablePrefix && l.endpoint === conclave.endpoint), JSON.stringify(written[0])).toBe(true);
    const r = await runMain(['events', '--type', 'Leader Elected'], { env: { CONCLAVE_EVENTS_FILE: conclave.eventsFile } });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^\S+Z {2}Leader Elected +kept {2}w2 leads, fencing token \d+/);
  });

  it('without eventsDir the file is in a folder of its own, removed by stop()', async () => {
    const conclave = await startLocalConclave({ endpoint: inject('ddbEndpoint'), tablePrefix: `cet-${Date.now().toString(36)}`, push: false });
    expect(conclave.eventsFile).toMatch(/conclave-testing-[^/]+\/events\.jsonl$/);
    await conclave.stop();
    expect(existsSync(conclave.eventsFile)).toBe(false);
  });
});

describe('conclave events, no file', () => {
  it('says what writes it, where, and the flag and variable that name it', async () => {
    const r = await runMain(['events'], { env: { CONCLAVE_EVENTS_FILE: '/nonexistent/conclave/events.jsonl' } });
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      'error: no events file at /nonexistent/conclave/events.jsonl - the local system (`npx conclave-local`) writes .local/events.jsonl in the folder it runs in and prints its path as CONCLAVE_EVENTS_FILE: run this in that folder, or pass --events-file PATH (or set CONCLAVE_EVENTS_FILE); on AWS the events go to EventBridge, not to a file',
    );
  });

  // a review (2026-12-06): "invalid global options: CONCLAVE_REQUEST_TIMEOUT: must be whole milliseconds", for a command that reads a file
  it('reads the file whatever DynamoDB settings the environment holds: only --output is its', async () => {
    const r = await runMain(['events', '--events-file', '/dev/null'], { env: { CONCLAVE_REQUEST_TIMEOUT: '5s', CONCLAVE_TABLE_PREFIX: 'not a prefix!' } });
    expect(r).toMatchObject({ code: 0, err: '' });
    expect((await runMain(['-o', 'yaml', 'events', '--events-file', '/dev/null'])).err).toMatch(/--output: must be one of: table, json/);
  });
});
