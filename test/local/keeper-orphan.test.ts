/**
 * Java's keeper (lib/local/network-namespace.ts RELAY) whose parent dies before it has told the
 * parent Java's pid: `conclave-local` interrupted during its start-up (a Ctrl-C before its
 * handlers are set), or killed. Before: the keeper's first send failed (EPIPE), crashed the keeper
 * and left Java running for good, re-parented to init (in its own network namespace, no port shows
 * for it). Here `sleep` stands in for Java, under a name of its own.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { RELAY } from '../../lib/local/network-namespace.js';
import { waitFor } from '../sdk/harness.js';

// a sleep of about ten minutes, its argument unique to this run: `sleep 600.<pid>`
const marker = `600.${process.pid}`;

/** The pids of the processes running `sleep <marker>`. */
function sleepers(): number[] {
  const pids: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/cmdline`, 'utf8') === `sleep\0${marker}\0`) pids.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

afterAll(() => {
  for (const pid of sleepers()) process.kill(pid, 'SIGKILL');
});

describe("Java's keeper, its parent killed before the keeper's first message", () => {
  it('stops Java (here sleep) and itself: nothing is left running', async () => {
    // the parent starts the keeper as lib/local/network-namespace.ts keep() does (its own session, an IPC channel), then is killed at once
    const parent = spawn(
      process.execPath,
      ['-e', `require('node:child_process').spawn(process.execPath, ['-e', process.env.RELAY, '8000', 'sleep', '${marker}'], { stdio: ['ignore', 'ignore', 'ignore', 'ipc'], detached: true }); process.kill(process.pid, 'SIGKILL');`],
      { env: { ...process.env, RELAY }, stdio: 'ignore' },
    );
    const signal = await new Promise<NodeJS.Signals | null>((r) => parent.once('exit', (_code, sig) => r(sig)));
    expect(signal).toBe('SIGKILL');
    // before the fix: still running, for ever (its keeper crashed on EPIPE)
    await waitFor('no sleep of the keeper left', () => sleepers().length === 0);
  });
});
