/**
 * `npx conclave-local` killed (`kill <pid>` of npx): npm passes the SIGTERM to its `sh -c
 * conclave-local`, and dash exits without passing it on. Before: conclave-local, re-parented to
 * init, ran on with its DynamoDB Local, holding the port (the next `--port 8000` was refused). Now
 * it watches its parent (lib/local/parent-watch.ts) and stops as at SIGTERM when it exits.
 * `npm start` runs tsx's CLI, which runs the script in a child of its own and stays when npm's shell
 * exits: the script watches the CLI's parent (test/start.test.ts runs it so).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { simulatedClock } from '../../lib/clock.js';
import { portToBindLater } from '../../lib/local/dynamodb-local.js';
import { PARENT_CHECK_MS, parentOf, starterOf, watchParent } from '../../lib/local/parent-watch.js';
import { waitFor } from '../sdk/harness.js';
import { exited } from '../support.js';

const BIN = fileURLToPath(new URL('../../lib/testing/bin.ts', import.meta.url));
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

describe('watchParent', () => {
  it('tells once, at the first look after the parent changed; a parent that stays is never told', async () => {
    const clock = simulatedClock({ start: 0 });
    let ppid = 4242;
    const told: Array<[number, number]> = [];
    watchParent(clock, (was, now) => told.push([was, now]), () => ppid);
    await clock.run(10 * PARENT_CHECK_MS);
    expect(told).toEqual([]);
    ppid = 1; // the parent exited: init took this process over
    await clock.run(PARENT_CHECK_MS);
    expect(told).toEqual([[4242, 1]]);
    await clock.run(10 * PARENT_CHECK_MS);
    expect(told).toEqual([[4242, 1]]);
    expect(clock.pending()).toBe(0);
  });

  it('a parent that is init from the start (a service) is not taken for one gone', async () => {
    const clock = simulatedClock({ start: 0 });
    const told: number[] = [];
    watchParent(clock, (was) => told.push(was), () => 1);
    await clock.run(100 * PARENT_CHECK_MS);
    expect(told).toEqual([]);
  });
});

describe('starterOf', () => {
  const preflight = ['--require', '/repo/node_modules/tsx/dist/preflight.cjs', '--import', 'file:///repo/node_modules/tsx/dist/loader.mjs'];
  const parents: Record<number, number> = { 300: 200, 200: 100 };

  it("the parent, for a script run by node itself (`node --import tsx`, npx's bin)", () => {
    expect(starterOf(300, ['--import', 'tsx'], (pid) => parents[pid])).toBe(300);
  });

  it("under tsx's CLI (`npm start`: sh -c → tsx → the script), the CLI's parent: npm's shell, which a kill of npm ends while the CLI stays", () => {
    expect(starterOf(300, preflight, (pid) => parents[pid])).toBe(200);
    // the CLI itself killed: the script, re-parented to init, sees init's parent (0)
    expect(starterOf(1, preflight, () => 0)).toBe(0);
    // no /proc to read: the parent
    expect(starterOf(300, preflight, () => undefined)).toBe(300);
  });

  it.skipIf(!existsSync('/proc/self'))("parentOf reads /proc: this process's parent", () => {
    expect(parentOf(process.pid)).toBe(process.ppid);
    expect(parentOf(2 ** 30)).toBeUndefined();
  });
});

let orphan: number | undefined;
afterAll(() => {
  if (orphan !== undefined && !exited(orphan)) process.kill(orphan, 'SIGKILL');
});

describe.skipIf(!existsSync('/proc/self') || !existsSync('/bin/sh'))('conclave-local whose parent exits without passing a signal on', () => {
  it('stops as at SIGTERM: its DynamoDB Local gone, the port free again', async () => {
    const port = await portToBindLater();
    const eventsDir = mkdtempSync(join(tmpdir(), 'conclave-local-orphan-'));
    // as npx runs it: under `sh -c`; the shell tells conclave-local's pid, then waits; a SIGTERM ends the shell alone
    const cmd = `'${process.execPath}' --import '${TSX}' '${BIN}' --port ${port} --no-push --events-dir '${eventsDir}' & echo $!; wait`;
    const shell = spawn('/bin/sh', ['-c', cmd], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    shell.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const lines = createInterface({ input: shell.stdout })[Symbol.asyncIterator]();
    orphan = Number((await lines.next()).value);
    expect(orphan).toBeGreaterThan(0);
    for (;;) {
      const { value, done } = await lines.next();
      expect(done, stderr).toBeFalsy();
      if (value === 'ready') break;
    }
    const shellExit = new Promise<NodeJS.Signals | null>((r) => shell.once('exit', (_code, signal) => r(signal)));
    shell.kill('SIGTERM');
    expect(await shellExit).toBe('SIGTERM');
    // before the fix: running for good under init (the wait hung)
    const rest: string[] = [];
    for (;;) {
      const { value, done } = await lines.next();
      if (done) break;
      rest.push(value);
    }
    await waitFor('conclave-local exited', () => exited(orphan!));
    expect(rest.join('\n'), stderr).toMatch(/^stopped \(its parent process \d+ exited\)$/m);
    // its DynamoDB Local stopped with it: the port binds again
    const server = createServer();
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
    server.close();
  });
});
