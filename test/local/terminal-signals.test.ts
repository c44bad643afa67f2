/**
 * A terminal's Ctrl-C signals its whole foreground process group. DynamoDB Local's Java was in
 * conclave-local's group, so Ctrl-C ended Java at once, before conclave-local could stop in order:
 * its lock's delete failed (ECONNREFUSED) and every Ctrl-C printed "the lock of local mode … was
 * left in place, not deleted". Java now runs in a session of its own, under a keeper that stops it
 * when this process goes (however it goes: the keeper's IPC channel closes), with a network
 * namespace or without one.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startDynamoDBLocal } from '../../lib/local/dynamodb-local.js';
import { namespaceSupport } from '../../lib/local/network-namespace.js';
import { waitFor } from '../sdk/harness.js';

/** A process's group and session (/proc/PID/stat fields 5 and 6, after the parenthesised name). */
function groupOf(pid: number | 'self'): { pgrp: number; session: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const [, , pgrp, session] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { pgrp: Number(pgrp), session: Number(session) };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const none = () => ({ ok: false, why: 'not asked for in this test' }) as const;
const ways = [
  ...(namespaceSupport().ok ? [{ name: 'in its network namespace', namespace: namespaceSupport }] : []),
  { name: 'without a network namespace', namespace: none },
];

describe.runIf(process.platform === 'linux')("DynamoDB Local's Java, out of reach of a terminal's Ctrl-C", () => {
  it.each(ways)('$name: Java is in no process group or session of ours, and stop() still ends it', async ({ namespace }) => {
    const ddb = await startDynamoDBLocal({ namespace, log: () => undefined });
    try {
      const java = groupOf(ddb.pid!);
      const self = groupOf('self');
      expect(java.pgrp).not.toBe(self.pgrp);
      expect(java.session).not.toBe(self.session);
    } finally {
      await ddb.stop();
    }
    expect(alive(ddb.pid!)).toBe(false);
  });

  it.each(ways)("$name: its keeper killed (SIGKILL), Java is stopped too, and told as stopped with its keeper; Java killed itself is told by its own signal (a review, 2026-12-05: Java ran on for good, told as the one that exited, and Java's own SIGKILL was told as code 1)", async ({ namespace }) => {
    const keeperOf = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[1]);
    const ddb = await startDynamoDBLocal({ namespace, log: () => undefined });
    const told: string[] = [];
    ddb.onExit((how) => told.push(how));
    const keeper = keeperOf(ddb.pid!);
    process.kill(keeper, 'SIGKILL');
    await waitFor('told', () => told.length > 0);
    expect(told).toEqual([`when its keeper (pid ${keeper}) was killed by SIGKILL: stopped with it`]);
    await waitFor("Java gone with its keeper", () => !alive(ddb.pid!));
    await ddb.stop();

    const again = await startDynamoDBLocal({ namespace, log: () => undefined });
    const toldAgain: string[] = [];
    again.onExit((how) => toldAgain.push(how));
    process.kill(again.pid!, 'SIGKILL');
    await waitFor('told', () => toldAgain.length > 0);
    expect(toldAgain).toEqual(['killed by SIGKILL']);
    await again.stop();
  });

  it.each(ways)('$name: a process killed with SIGKILL (no exit handler runs) takes its Java with it', async ({ namespace }) => {
    // a process of its own that starts DynamoDB Local, says Java's pid, and waits to be killed
    const script = `
      import { startDynamoDBLocal } from ${JSON.stringify(new URL('../../lib/local/dynamodb-local.ts', import.meta.url).pathname)};
      import { createServer } from 'node:net';
      import { namespaceSupport } from ${JSON.stringify(new URL('../../lib/local/network-namespace.ts', import.meta.url).pathname)};
      const ddb = await startDynamoDBLocal({ namespace: ${namespace === none ? "() => ({ ok: false, why: 'test' })" : 'namespaceSupport'}, log: () => undefined });
      console.log(ddb.pid);
      createServer().listen(0, '127.0.0.1'); // keeps it running until it is killed
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const pid = await new Promise<number>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (b: Buffer) => {
        out += b.toString();
        const m = /^(\d+)\n/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      child.once('exit', (code) => reject(new Error(`the process exited (${code}) before saying Java's pid`)));
    });
    expect(alive(pid)).toBe(true);
    child.kill('SIGKILL');
    await waitFor("Java gone after its starter's SIGKILL", () => !alive(pid));
  });
});
