/**
 * A process that exits while its elector hands over or releases the lease: process.exit in
 * onStoppedLeading, as client-go's example does (client-go calls OnStoppedLeading after its
 * release; here it runs when the leader stops acting, before the write, so that no successor
 * leads before it). Tried from outside: the release was cut off and the successor led 11.3 s
 * after the SIGTERM instead of at once, with nothing said. Now the process says so on stderr as it
 * exits, with the fix. Real child processes (test/sdk/exit-worker.ts) on DynamoDB Local.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { exitedWhileLeaving } from '../../lib/sdk/leaving.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { testTables, type TestTables } from '../support.js';
import { waitFor } from './harness.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('exits')));
afterAll(async () => t.drop());

/** Runs the worker `identity` (on a lease of its name) until it leads, SIGTERMs it, and returns its exit code, its stderr and the lease row after. */
async function leadThenTerminate(identity: string, exit: 'onStopped' | 'afterRun') {
  const prefix = t.names.leases.slice(0, -'-leases'.length);
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/sdk/exit-worker.ts'], {
    env: { ...process.env, ENDPOINT: inject('ddbEndpoint'), PREFIX: prefix, IDENTITY: identity, LEASE: identity, EXIT: exit },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => void (stderr += String(d)));
  let leading = false;
  createInterface({ input: child.stdout! }).on('line', (l) => void (l === 'leading' && (leading = true)));
  const exited = once(child, 'exit') as Promise<[number | null]>;
  await waitFor(`${identity} leading`, () => leading);
  child.kill('SIGTERM');
  const [code] = await exited;
  const lease = (await new LeaseStore(t.client, t.names.leases).read(identity)).item;
  return { code, stderr, lease };
}

describe('a process that exits while its elector releases the lease', () => {
  it("exits in onStoppedLeading (client-go's example): it says on stderr that the release was cut off, why the successor waits, and to exit once run() has resolved", async () => {
    const { code, stderr, lease } = await leadThenTerminate('exits-early', 'onStopped');
    expect(code).toBe(0);
    expect(stderr).toContain(exitedWhileLeaving('LeaderElector "exits-early" of lease "exits-early"'));
    expect(stderr).toMatch(/the successor waits for the term to run out \(up to the lease duration\) instead of leading at once\. Exit once run\(\) has resolved/);
    // what it costs: the release never landed, the term stands until it runs out
    expect(lease?.holderIdentity).toBe('exits-early');
  });

  it('exits once run() has resolved: released, and nothing said', async () => {
    const { code, stderr, lease } = await leadThenTerminate('exits-after', 'afterRun');
    expect(code).toBe(0);
    expect(stderr).not.toContain('conclave:');
    expect(lease?.holderIdentity).toBeUndefined();
  });
});
