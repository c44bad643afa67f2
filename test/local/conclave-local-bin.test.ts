/**
 * `npx conclave-local`'s own command line (lib/testing/bin.ts): its --help says what each option
 * does and its default, and a bad value is refused naming the flag the user typed, not the
 * startLocalConclave() option behind it. Nothing is started but by the one case that starts it on
 * a port of its own (--port); each other case fails before DynamoDB Local.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { WAIT_GUARD_MS } from '../guards.js';
import { portToBindLater } from '../../lib/local/dynamodb-local.js';
import { localClient } from '../../lib/stores/client.js';

const BIN = fileURLToPath(new URL('../../lib/testing/bin.ts', import.meta.url));
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
// a hang guard only (a value taken would start the whole system and run until stopped), not a budget
const run = (...args: string[]) => spawnSync(process.execPath, ['--import', TSX, BIN, ...args], { encoding: 'utf8', timeout: WAIT_GUARD_MS });
/** run(), the test's own event loop free meanwhile (a server of its own listening). */
const runAsync = (...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', TSX, BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], timeout: WAIT_GUARD_MS });
    let [stdout, stderr] = ['', ''];
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.once('exit', (status) => resolve({ status, stdout, stderr }));
  });

describe('conclave-local', () => {
  it('--help: each option, what it does and its default, and what it prints', () => {
    const r = run('--help');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^usage: conclave-local /);
    for (const line of [
      /--table-prefix PREFIX +.*default conclave-local/,
      /--endpoint URL +.*DynamoDB Local already running.*default: one of its own/,
      /the prefix's tables already there \(an earlier run's\) are reused with their rows,\s+one of another shape is refused: choose another --table-prefix, or delete it/,
      /the streams are resumed where the last run left them \(stream-checkpoints\.json in --events-dir\)/,
      /--port N +the 127\.0\.0\.1 port of its own DynamoDB Local.*\n.*default: a free port.*not with --endpoint/,
      /--tick DURATION +.*reconcile.*default 10s/,
      /--no-push +.*push/,
      /--events-dir DIR +.*events\.jsonl.*default \.local/,
    ])
      expect(r.stdout).toMatch(line);
    expect(r.stdout).toMatch(/CONCLAVE_ENDPOINT.*CONCLAVE_TABLE_PREFIX/s);
  });

  it('--version (-V): the version of @conclave/testing, as `conclave --version` is the CLI\'s (it was an unknown option)', () => {
    const version = (JSON.parse(readFileSync(new URL('../../packages/testing/package.json', import.meta.url), 'utf8')) as { version: string }).version;
    for (const flag of ['--version', '-V']) expect(run(flag)).toMatchObject({ status: 0, stdout: `${version}\n`, stderr: '' });
    expect(run('--help').stdout).toMatch(/-V, --version +the version of @conclave\/testing/);
  });

  it.each([
    [['--table-prefix', 'bad prefix!'], /^conclave-local: --table-prefix: must be 1-200 of A-Z a-z 0-9 _ \. -/],
    [['--endpoint', 'localhost'], /^conclave-local: --endpoint: must be the URL of a running DynamoDB Local, such as http:\/\/127\.0\.0\.1:8000/],
    // host:port without a scheme parses as a URL of scheme "localhost:" (or "127.0.0.1:"): the AWS SDK then failed with "UnknownError" alone
    [['--endpoint', 'localhost:8000'], /^conclave-local: --endpoint: must be the URL of a running DynamoDB Local, such as http:\/\/127\.0\.0\.1:8000/],
    [['--endpoint', '127.0.0.1:8000'], /^conclave-local: --endpoint: must be the URL of a running DynamoDB Local, such as http:\/\/127\.0\.0\.1:8000/],
    [['--endpoint', 'ftp://127.0.0.1:8000'], /^conclave-local: --endpoint: must be the URL of a running DynamoDB Local, such as http:\/\/127\.0\.0\.1:8000/],
    // --tick takes a duration, parsed as every duration flag of the CLI is (--for, --timeout, watch --interval): a number alone is refused
    [['--tick', '10'], /^conclave-local: --tick: must be a duration such as 90s, 1\.5s, 500ms, 10m, 2h or 1h30m \(units ms, s, m, h\); a number alone has no unit: 10 seconds is 10s\n/],
    [['--tick', '0.5'], /^conclave-local: --tick: must be a duration such as .*; a number alone has no unit: 0\.5 seconds is 0\.5s\n/],
    [['--tick', 'often'], /^conclave-local: --tick: must be a duration such as 90s, 1\.5s, 500ms, 10m, 2h or 1h30m \(units ms, s, m, h\)\n/],
    // --port: digits only, a port; not with --endpoint (which names one already running)
    [['--port', 'abc'], /^conclave-local: --port: must be a port, 1-65535, such as 8000\n/],
    [['--port', '8000x'], /^conclave-local: --port: must be a port, 1-65535, such as 8000\n/],
    [['--port', '0'], /^conclave-local: --port: must be a port, 1-65535\n/],
    [['--port', '70000'], /^conclave-local: --port: must be a port, 1-65535\n/],
    [['--port', '8000', '--endpoint', 'http://127.0.0.1:8000'], /^conclave-local: --port: not with an endpoint: the port is where the DynamoDB Local this starts listens/],
    [['--tick', '5ms'], /^conclave-local: --tick: must be at least 10ms\n/],
    // a bare number's hint names a value --tick takes, or none: "0 seconds is 0s" was then refused as under 10ms
    [['--tick', '0'], /^conclave-local: --tick: must be a duration such as .*; a number alone has no unit\n/],
    [['--tick', '100000'], /^conclave-local: --tick: must be a duration such as .*; a number alone has no unit\n/],
    [['--tick', '25h'], /^conclave-local: --tick: must be at most 24h \(a day\)\n/],
    // a typo is answered with the option meant, as `conclave` (commander) answers one
    [['--tabel-prefix', 'x'], /^conclave-local: unknown option '--tabel-prefix' \(did you mean --table-prefix\?\)/],
    [['--events', 'x'], /^conclave-local: unknown option '--events' \(did you mean --events-dir\?\)/],
    [['--nopush'], /^conclave-local: unknown option '--nopush' \(did you mean --no-push\?\)/],
    // a word of the option, typed alone
    [['--prefix', 'x'], /^conclave-local: unknown option '--prefix' \(did you mean --table-prefix\?\)/],
    [['--dir', 'x'], /^conclave-local: unknown option '--dir' \(did you mean --events-dir\?\)/],
    [['--verbose'], /^conclave-local: unknown option '--verbose'\n/],
  ])('%j: refused naming the flag, with the usage, exit 2', (args, message) => {
    const r = run(...args);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toMatch(/\nusage: conclave-local /);
  });

  it('--port in use: refused before DynamoDB Local starts, naming the port and the ways out, exit 1', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const r = await runAsync('--port', String(port));
      expect(r.status, r.stderr).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`^conclave-local: DynamoDB Local not started: port ${port} on 127\\.0\\.0\\.1 is already in use .*Leave out \`port\` \\(\`--port\`\\) to start one on a free port`));
      expect(r.stdout).not.toMatch(/ready/);
    } finally {
      taken.close();
    }
  });

  it('--port N: its DynamoDB Local on that port, the endpoint printed with it; with --events-dir, the events command names the file (it said "in this folder", where `conclave events` reads .local/events.jsonl)', async () => {
    const port = await portToBindLater();
    const eventsDir = mkdtempSync(join(tmpdir(), 'conclave-local-port-'));
    const local = spawn(process.execPath, ['--import', TSX, BIN, '--port', String(port), '--no-push', '--events-dir', eventsDir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    local.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const exited = new Promise<number | null>((r) => local.once('exit', (code) => r(code)));
    try {
      const lines: string[] = [];
      for await (const line of createInterface({ input: local.stdout })) {
        if (line === 'ready') break;
        lines.push(line);
      }
      expect(lines, stderr).toContain(`CONCLAVE_ENDPOINT=http://127.0.0.1:${port}`);
      expect(lines).toContain(`# the events, as they are published: npx conclave events --follow --events-file ${join(eventsDir, 'events.jsonl')} (or CONCLAVE_EVENTS_FILE)`);
      expect((await localClient(`http://127.0.0.1:${port}`).send(new ListTablesCommand({}))).TableNames).toContain('conclave-local-leases');
    } finally {
      local.kill('SIGINT');
    }
    expect(await exited, stderr).toBe(0);
  });

  // Node's recursive mkdir never returns where mkdir answers ENOENT under a parent that exists: the
  // command hung there, with nothing printed, before DynamoDB Local or anything else started
  it.skipIf(!existsSync('/proc/self'))('--events-dir under a folder that takes no new folders (/proc): refused naming the flag and the parent, exit 1', () => {
    const r = run('--events-dir', '/proc/conclave-no-such/events', '--endpoint', 'http://127.0.0.1:9');
    expect(r.error).toBeUndefined();
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/^conclave-local: cannot use \/proc\/conclave-no-such\/events as the events folder, eventsDir \(conclave-local: --events-dir\): \/proc takes no new folders .* - name a folder/);
  });
});
