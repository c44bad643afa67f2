/**
 * A process that exits while its elector hands over or releases the lease: process.exit in
 * onStoppedLeading, as client-go's example does (client-go calls OnStoppedLeading after its
 * release; here it runs when the leader stops acting, before the write, so that no successor
 * leads before it). Tried from outside: the release was cut off and the successor led 11.3 s
 * after the SIGTERM instead of at once, with nothing said. Now the process says so on stderr as it
 * exits, with the fix. So does one whose leader's work calls process.exit() (in onStartedLeading):
 * tried from outside, the successor led 12.1 s after it exited, stderr empty. Real child processes
 * (test/sdk/exit-worker.ts) on DynamoDB Local. A withLease caller whose function calls
 * process.exit() was told of a LeaderElector and its run(), which it has neither: now it is told of
 * its withLease call, and to return from the function or abort its `signal` option.
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

/** Runs the worker `identity` (on a lease of its name) until it leads, SIGTERMs it (unless its work exits itself: inWork, withLeaseInWork), and returns its exit code, its stderr and the lease row after. */
async function leadThenTerminate(identity: string, exit: 'onStopped' | 'afterRun' | 'inWork' | 'withLeaseInWork' | 'migrationInWork') {
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
  if (exit === 'onStopped' || exit === 'afterRun') child.kill('SIGTERM');
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
    // one line: its term, still led as the stop began, is told of only as the step-down's
    expect(stderr.match(/^conclave:/gm)).toHaveLength(1);
    // what it costs: the release never landed, the term stands until it runs out
    expect(lease?.holderIdentity).toBe('exits-early');
  });

  it("exits in the leader's work (process.exit() in onStartedLeading): it says once which term was not released, when it runs out, and how to exit instead", async () => {
    const { code, stderr, lease } = await leadThenTerminate('exits-working', 'inWork');
    expect(code).toBe(0);
    // what it costs: the term stands until it runs out
    expect(lease?.holderIdentity).toBe('exits-working');
    const lines = stderr.split('\n').filter((l) => l.startsWith('conclave:'));
    expect(lines).toHaveLength(1);
    const [line] = lines;
    expect(line).toContain(`conclave: LeaderElector "exits-working" of lease "exits-working": the process exited while it led the term with fencing token ${lease!.fencingToken}, which was not released`);
    expect(line).toMatch(/the successor waits for it to run out, a lease duration \(\d+ s\) after its last renewal, at about \d{4}-\d\d-\d\dT[\d:.]+Z \(in \d+\.\d s\), instead of leading at once/);
    expect(line).toContain("abort run()'s signal and await elector.run(signal) before exiting (as on SIGTERM)");
    expect(line).toContain('set process.exitCode and abort the signal rather than calling process.exit()');
  });

  it("a withLease caller whose function calls process.exit(): told of its withLease call and how to end it, not of an elector's run()", async () => {
    const { code, stderr, lease } = await leadThenTerminate('exits-withlease', 'withLeaseInWork');
    expect(code).toBe(0);
    expect(lease?.holderIdentity).toBe('exits-withlease');
    const lines = stderr.split('\n').filter((l) => l.startsWith('conclave:'));
    expect(lines).toHaveLength(1);
    const [line] = lines;
    // before the fix: `LeaderElector "exits-withlease" of lease "exits-withlease"`, told to "abort run()'s signal and await elector.run(signal)"
    expect(line).toContain(`conclave: withLease run "exits-withlease" of lease "exits-withlease": the process exited while it led the term with fencing token ${lease!.fencingToken}, which was not released`);
    expect(line).toContain("To end the process, return from withLease's function, or abort the signal given as its `signal` option, and await withLease before exiting (as on SIGTERM)");
    expect(line).toContain('in the function, set process.exitCode and return rather than calling process.exit()');
    expect(line).not.toMatch(/LeaderElector|run\(\)|elector\.run/);
  });

  it("a runWithLeaderMigration caller whose migrated controller calls process.exit(): told of its runWithLeaderMigration call and how to end it, for each lease it led, not of an elector's run()", async () => {
    const { code, stderr, lease } = await leadThenTerminate('exits-migration', 'migrationInWork');
    expect(code).toBe(0);
    expect(lease?.holderIdentity).toBe('exits-migration');
    const lines = stderr.split('\n').filter((l) => l.startsWith('conclave:'));
    // one per term led: the primary lease's, and the migration lease's its controller ran in
    expect(lines).toHaveLength(2);
    expect(lines[0]! + lines[1]!).toContain('conclave: runWithLeaderMigration "exits-migration" of lease "exits-migration": the process exited while it led the term');
    expect(lines[0]! + lines[1]!).toContain('conclave: runWithLeaderMigration "exits-migration/ccm" of lease "exits-migration-migration": the process exited while it led the term');
    for (const line of lines) {
      // before the fix: `LeaderElector "exits-migration" of lease …`, told to "abort run()'s signal and await elector.run(signal)"
      expect(line).toContain("To end the process, abort the signal given as runWithLeaderMigration's `signal` option and await runWithLeaderMigration before exiting (as on SIGTERM)");
      expect(line).toContain('in a controller, set process.exitCode and abort that signal rather than calling process.exit()');
      expect(line).not.toMatch(/LeaderElector|run\(\)|elector\.run/);
    }
  });

  it('exits once run() has resolved: released, and nothing said', async () => {
    const { code, stderr, lease } = await leadThenTerminate('exits-after', 'afterRun');
    expect(code).toBe(0);
    expect(stderr).not.toContain('conclave:');
    expect(lease?.holderIdentity).toBeUndefined();
  });
});
