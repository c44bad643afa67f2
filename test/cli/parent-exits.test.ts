/**
 * `npx conclave watch` killed (`kill <pid>` of npx): npm passes the SIGTERM to its `sh -c conclave
 * watch`, and dash exits without passing it on. Before: the watch, re-parented to init, ran on, and
 * once DynamoDB Local was gone retried ECONNREFUSED for good. Now a command that runs until
 * interrupted watches the process that started it (lib/util/parent-watch.ts, as conclave-local
 * does) and stops as at SIGTERM when it exits.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { runByNpm } from '../../lib/cli/main.js';
import { waitFor } from '../sdk/harness.js';
import { cliHarness, type CliHarness } from './harness.js';
import { exited } from '../support.js';

let orphan: number | undefined;
let h: CliHarness | undefined;
afterAll(async () => {
  if (orphan !== undefined && !exited(orphan)) process.kill(orphan, 'SIGKILL');
  await h?.t.drop();
});

describe.skipIf(!existsSync('/proc/self') || !existsSync('/bin/sh'))('conclave watch whose parent exits without passing a signal on', () => {
  it('stops as at SIGTERM, saying why (before: it ran on under init for good)', async () => {
    h = await cliHarness('cli-orphan');
    // as npx runs it: under `sh -c`, with npm's npm_command; the shell tells the watch's pid, then waits; a SIGTERM ends the shell alone
    const argv = ['bin/conclave.mjs', ...h.target, 'watch', '--interval', '1s'].map((a) => `'${a}'`).join(' ');
    const shell = spawn('/bin/sh', ['-c', `'${process.execPath}' ${argv} & echo $!; wait`], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1', npm_command: 'exec' } });
    let stderr = '';
    shell.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const lines = createInterface({ input: shell.stdout })[Symbol.asyncIterator]();
    orphan = Number((await lines.next()).value);
    expect(orphan).toBeGreaterThan(0);
    // its first frame drawn: it runs
    for (;;) {
      const { value, done } = await lines.next();
      expect(done, stderr).toBeFalsy();
      if (/^conclave watch - every 1s - /.test(value)) break;
    }
    const shellExit = new Promise<NodeJS.Signals | null>((r) => shell.once('exit', (_code, signal) => r(signal)));
    shell.kill('SIGTERM');
    expect(await shellExit).toBe('SIGTERM');
    await waitFor('the orphaned watch to exit', () => exited(orphan!));
    await waitFor('its note on stderr', () => /^note: stopped \(its parent process \d+ exited\)$/m.test(stderr));
  });
});

describe('which runs stop with their parent', () => {
  it('only a run by npm (npx, an npm script): one detached on purpose (nohup, setsid) runs on when its shell exits', () => {
    expect(runByNpm({ npm_command: 'exec' })).toBe(true);
    expect(runByNpm({ npm_command: 'run-script' })).toBe(true);
    expect(runByNpm({})).toBe(false);
  });
});
