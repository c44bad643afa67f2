/**
 * One local runtime per DynamoDB Local and table prefix: a second (another `conclave-local
 * --endpoint` on the same prefix, or a `startLocalConclave({ endpoint, tablePrefix })` beside it)
 * would poll the same streams, so each record would be handled twice and each event published
 * twice, and the two would share the streams' checkpoints. It is refused at its start, naming the
 * running one's pid, host and the fix, through a lock item in that DynamoDB Local itself
 * (lib/local/runtime-lock.ts), so whatever each one's temp folder or user; a lock whose holder is
 * gone (its process dead on this host, or not renewed for RUNTIME_LOCK_STALE_MS) is taken over.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DeleteItemCommand, GetItemCommand, PutItemCommand, UpdateItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { manualClock, systemClock, type Clock } from '../../lib/clock.js';
import { LOCAL_DEPLOYMENT } from '../../lib/local/ecs-task.js';
import { startLocalRuntime } from '../../lib/local/runtime.js';
import { startLocalConclave } from '../../lib/testing/index.js';
import { lockRuntime, type RuntimeLockLoss, RUNTIME_LOCK_HEARTBEAT_MS, RUNTIME_LOCK_REQUEST_MS, RUNTIME_LOCK_RETRY_MS, RUNTIME_LOCK_STALE_MS, RUNTIME_LOCK_SURE_MS, RUNTIME_LOCK_TABLE } from '../../lib/local/runtime-lock.js';
import { deleteTables } from '../../lib/local/tables.js';
import { localClient } from '../../lib/stores/client.js';
import { defaultTableNames } from '../../lib/tables.js';
import { creatingTableProxy } from '../proxy.js';
import { waitFor } from '../sdk/harness.js';
import { ecsTaskStateChange, taskArn } from '../platform-fixtures.js';
import { closableProxy, close, hangingProxy, resettingProxy } from '../proxy.js';

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
const lockItem = async (prefix: string) => (await admin.send(new GetItemCommand({ TableName: RUNTIME_LOCK_TABLE, Key: { prefix: { S: prefix } }, ConsistentRead: true }))).Item;
/** A lock item as a holder writes it. */
const holder = (prefix: string, o: { pid: number; host: string; heartbeatAt: number; owner?: string }) =>
  admin.send(
    new PutItemCommand({
      TableName: RUNTIME_LOCK_TABLE,
      Item: marshall({ prefix, owner: o.owner ?? randomUUID(), pid: o.pid, host: o.host, endpoint: inject('ddbEndpoint'), startedAt: o.heartbeatAt, heartbeatAt: o.heartbeatAt, staleAt: o.heartbeatAt + RUNTIME_LOCK_STALE_MS, renewals: 0 }),
    }),
  );

/** `conclave-local` on the shared DynamoDB Local and `prefix` (`env` added to this process's): its output as it comes, and its exit code once it exits. */
const conclaveLocal = (prefix: string, env: NodeJS.ProcessEnv = {}) => {
  const child = spawn(process.execPath, ['--import', TSX, BIN, '--endpoint', inject('ddbEndpoint'), '--table-prefix', prefix, '--events-dir', folder(), '--no-push', '--tick', '600s'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (d: Buffer) => void (out.stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => void (out.stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { child, out, exited };
};

/** Simulated time for a waiting start: a sleep moves the clock on (then `renewing` runs, as a live holder renews meanwhile), and nothing else does. */
const sleepsMove = (T0: number, renewing?: (at: number) => Promise<unknown>) => {
  const manual = manualClock(T0);
  return { manual, clock: { ...manual, sleep: async (ms: number) => {
    manual.advance(ms);
    await renewing?.(manual.now());
  } } };
};
/** A start on `prefix` whose sleeps move simulated time on from T0: its lock, what it said, how long it waited. */
const startWaiting = async (prefix: string, T0: number) => {
  const { manual, clock } = sleepsMove(T0);
  const said: string[] = [];
  const lock = await lockRuntime(admin, inject('ddbEndpoint'), prefix, { clock, say: (line) => said.push(line) });
  return { lock, said, waited: manual.now() - T0, manual };
};
/** A lease row put in `rt`'s leases table (its stream's record named `name`). */
const putLease = (rt: { client: DynamoDBClient; tables: { leases: string } }, name: string) =>
  rt.client.send(new PutItemCommand({ TableName: rt.tables.leases, Item: { name: { S: name }, leaseTransitions: { N: '0' }, leaseDurationSeconds: { N: '15' }, fencingToken: { N: '1' }, revision: { N: '1' } } }));
/** The names of the leases of a lease stream batch. */
const leaseNames = (event: unknown) => (event as { Records: { dynamodb: { Keys: { name: { S: string } } } }[] }).Records.map((r) => r.dynamodb.Keys.name.S);

describe('one local runtime per DynamoDB Local and table prefix', () => {
  it('a second start on the same endpoint and prefix (another process running conclave-local, with another TMPDIR) is refused, naming its pid, host and the fix; another prefix runs beside it; once it stops, the prefix starts again', async () => {
    const prefix = newPrefix('one');
    // its own temp folder (another TMPDIR, as another user has): before, each took a lock file in its own, and both ran
    const { child, out, exited } = conclaveLocal(prefix, { TMPDIR: folder() });
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
      // before the fix: started (this process's TMPDIR is not the child's), and each record was handled (each event published) by both
      expect(refused?.message).toMatch(
        new RegExp(
          `^local mode already runs on the DynamoDB Local at ${spelled.replace(/[.]/g, '\\.')} with table prefix ${prefix}: process ${child.pid} on ${hostname()}, started .+Z, its lock renewed .+Z \\(item "${prefix}" of table ${RUNTIME_LOCK_TABLE} there\\)\\. ` +
            'A second would handle every stream record and publish every event again: stop that one first \\(Ctrl-C\\), or choose another table prefix \\(conclave-local: --table-prefix; startLocalConclave: tablePrefix\\); ' +
            `a holder that stops renewing its lock \\(killed where its pid cannot be looked at: another host or container\\) gives it up once a start has seen it unrenewed for ${RUNTIME_LOCK_STALE_MS / 1000} s$`,
        ),
      );
      expect(child.exitCode).toBeNull(); // the running one is left alone

      const beside = await start(newPrefix('beside'));
      await beside.stop();
    } finally {
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }
    expect(await lockItem(prefix)).toBeUndefined(); // let go at its stop
    const again = await start(prefix);
    await again.stop();
  });

  it('conclave-local whose lock is taken over (it was cut off past the stale time, and another start took it) stops and exits 1, saying so', async () => {
    const prefix = newPrefix('bin-lost');
    const { child, out, exited } = conclaveLocal(prefix);
    try {
      await waitFor('conclave-local ready', () => out.stdout.includes('\nready\n') || child.exitCode !== null);
      // a host name with a space (the lock's host is any name its holder gives): read from the loss's fields, not its line
      await holder(prefix, { pid: 5151, host: 'build box', heartbeatAt: Date.now() });
      // before: it said the lock was taken over and kept running (its bus, broker and endpoint printed as ready) until Ctrl-C, then exited 0
      await waitFor('conclave-local exited', () => child.exitCode !== null);
      expect(await exited).toBe(1);
      expect(out.stderr).toMatch(new RegExp(`^conclave-local: the lock of local mode on table prefix ${prefix} was taken over by process 5151 on build box \\(judged not renewed\\): this runtime's functions are stopped .*\n`));
      // the command stops itself: not told to "stop it" (a library caller's message), then that it stopped
      expect(out.stderr).not.toMatch(/stop it/);
      // before (its line matched as text, the host as \S+): "stopped (its lock lost)"
      expect(out.stdout).toMatch(/\nstopped \(its lock taken over by process 5151 on build box\)\n$/);
    } finally {
      child.kill('SIGKILL');
    }
    expect((await lockItem(prefix))?.['pid']).toEqual({ N: '5151' }); // the taker's, left to it
  });

  it('conclave-local whose lock item is deleted under it (by hand, or with its table) stops and exits 1, saying it was deleted, not taken over', async () => {
    const prefix = newPrefix('bin-deleted');
    const { child, out, exited } = conclaveLocal(prefix);
    try {
      await waitFor('conclave-local ready', () => out.stdout.includes('\nready\n') || child.exitCode !== null);
      await admin.send(new DeleteItemCommand({ TableName: RUNTIME_LOCK_TABLE, Key: { prefix: { S: prefix } } }));
      await waitFor('conclave-local exited', () => child.exitCode !== null);
      expect(await exited).toBe(1);
      expect(out.stderr).toMatch(new RegExp(`^conclave-local: the lock of local mode on table prefix ${prefix} was deleted \\(not by a local runtime`));
      // before: "stopped (its lock taken over)", which no one did
      expect(out.stdout).toMatch(/\nstopped \(its lock deleted\)\n$/);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('a runtime on a DynamoDB Local of its own (conclave-local without --endpoint) takes the lock too: a second start at the endpoint it printed, on its prefix, is refused; another prefix runs beside it', async () => {
    const own = await startLocalRuntime({ prefix: 'conclave-local', dir: folder(), tickEveryMs: 600_000, logLevel: 'SILENT', push: false });
    try {
      // before: started (the first took no lock: "one of its own DynamoDB Local has an endpoint no other runtime has"), and read
      // every stream from its start, so each event was published again (seen from a fresh project: 65 events, each twice)
      const refused = await start('conclave-local', own.endpoint).then(
        async (rt) => {
          await rt.stop();
          return undefined;
        },
        (e: unknown) => e as Error,
      );
      expect(refused?.message).toMatch(new RegExp(`^local mode already runs on the DynamoDB Local at ${own.endpoint.replace(/[.]/g, '\\.')} with table prefix conclave-local: process ${process.pid} on `));
      const beside = await start('beside-own', own.endpoint);
      await beside.stop();
    } finally {
      await own.stop();
    }
  });

  it('a runtime whose own DynamoDB Local exits under it (killed) stops its functions and says so at once, naming its pid and the port to start again on; the stop then stops', async () => {
    const lines: string[] = [];
    const losses: RuntimeLockLoss[] = [];
    const own = await startLocalRuntime({ prefix: 'conclave-local', dir: folder(), tickEveryMs: 600_000, logLevel: 'SILENT', push: false, onLost: (line, loss) => (lines.push(line), losses.push(loss)) });
    try {
      const pid = own.dynamoDBLocalPid!;
      expect(pid).toBeGreaterThan(0);
      process.kill(pid, 'SIGKILL');
      // before: nothing told, ever; every poll and tick failed against the port (ECONNREFUSED) for as long as it ran,
      // its lock's renewals too: conclave-local stood as if ready beside tables that were gone
      await waitFor('the runtime told its DynamoDB Local exited', () => lines.length > 0);
      const port = new URL(own.endpoint).port;
      expect(lines).toEqual([
        // (Java's own signal, as its keeper now tells it: "with code 1" before, the keeper's code for any signal)
        // the port to start again on: a start without --port picks a free one, and the workers still running keep the old endpoint
        // (a review, 2026-12-07: "start local mode again" alone)
        `the lock of local mode on table prefix conclave-local was lost with its DynamoDB Local (Java, pid ${pid}), which exited killed by SIGKILL: its tables were in memory and are gone; ` +
          `start local mode again on the same port (--port ${port}, or startLocalConclave({ port: ${port} })), so that the workers still running reach it at ${own.endpoint} again: ` +
          "this runtime's functions are stopped (its stream pollers, timer queue, tick and platform events): stop it",
      ]);
      expect(losses).toEqual([{ kind: 'storeExited' }]);
      await expect(own.tick()).rejects.toThrow(`reach it at ${own.endpoint} again: this runtime's functions are stopped; stop it`);
    } finally {
      await own.stop();
    }
  });

  it('two in one process: the second is refused naming this pid; a lock left by a process that is gone (killed) is taken over at once, and let go at the stop', async () => {
    const prefix = newPrefix('stale');
    await start(newPrefix('table')).then((rt) => rt.stop()); // the lock table there
    const gone = spawnSync(process.execPath, ['-e', '']).pid!; // ended: no such process now
    await holder(prefix, { pid: gone, host: hostname(), heartbeatAt: Date.now() });
    const rt = await start(prefix);
    try {
      await expect(start(prefix)).rejects.toThrow(`with table prefix ${prefix}: process ${process.pid} on ${hostname()}`);
    } finally {
      await rt.stop();
    }
    expect(await lockItem(prefix)).toBeUndefined();
  });

  it('a lock of a process elsewhere (another host or container: its pid cannot be looked at) is waited for, saying for what, and taken over once seen unrenewed for RUNTIME_LOCK_STALE_MS; one that renews meanwhile is refused', async () => {
    await start(newPrefix('table')).then((rt) => rt.stop());
    const T0 = 1_800_000_000_000;
    const quiet = newPrefix('quiet');
    await holder(quiet, { pid: 4242, host: 'elsewhere', heartbeatAt: T0 - 1_000 });
    const { lock, said, waited, manual } = await startWaiting(quiet, T0);
    try {
      // seen unrenewed for the stale time on this host's clock from its first look, not judged by the holder's stamp (another clock)
      expect(waited).toBe(RUNTIME_LOCK_STALE_MS);
      expect(said[0]).toBe(
        `local mode on the DynamoDB Local at ${inject('ddbEndpoint')} with table prefix ${quiet} is locked by process 4242 on elsewhere, whose pid cannot be looked at from ${hostname()}: ` +
          `waiting ${RUNTIME_LOCK_STALE_MS / 1000} s (until ${new Date(T0 + RUNTIME_LOCK_STALE_MS).toISOString()} by ${hostname()}'s clock; its last renewal is stamped ${new Date(T0 - 1_000).toISOString()} by its own) for it to renew (then this start is refused) or not (then its lock is taken over)`,
      );
      expect(said[1]).toBe(`taking over the lock of process 4242 on elsewhere: not renewed for ${RUNTIME_LOCK_STALE_MS / 1000} s as ${hostname()}'s clock counts (its last renewal stamped ${new Date(T0 - 1_000).toISOString()} by its own)`);
      expect(said).toHaveLength(2);
      expect((await lockItem(quiet))?.['pid']).toEqual({ N: String(process.pid) });
    } finally {
      await lock.release();
    }
    expect(await lockItem(quiet)).toBeUndefined();

    const live = newPrefix('live');
    await holder(live, { pid: 4343, host: 'elsewhere', heartbeatAt: manual.now() });
    // the holder renews, as a live one does every RUNTIME_LOCK_HEARTBEAT_MS
    const renewing = sleepsMove(manual.now(), (at) => admin.send(new UpdateItemCommand({ TableName: RUNTIME_LOCK_TABLE, Key: { prefix: { S: live } }, UpdateExpression: 'SET heartbeatAt = :h, staleAt = :s', ExpressionAttributeValues: { ':h': { N: String(at) }, ':s': { N: String(at + RUNTIME_LOCK_STALE_MS) } } })));
    const before = renewing.manual.now();
    await expect(lockRuntime(admin, inject('ddbEndpoint'), live, { clock: renewing.clock, say: () => {} })).rejects.toThrow(`with table prefix ${live}: process 4343 on elsewhere`);
    expect(renewing.manual.now() - before).toBe(RUNTIME_LOCK_HEARTBEAT_MS); // refused at its first renewal seen
  });

  it('two starts in the same millisecond: one takes the lock, the other is refused naming it', async () => {
    await start(newPrefix('table')).then((rt) => rt.stop());
    const prefix = newPrefix('same-ms');
    const clock = manualClock(1_800_000_000_000); // the same now for both
    const tries = await Promise.allSettled([0, 1, 2].map(() => lockRuntime(admin, inject('ddbEndpoint'), prefix, { clock, say: () => {} })));
    const held = tries.filter((t) => t.status === 'fulfilled');
    expect(held).toHaveLength(1);
    for (const t of tries.filter((t) => t.status === 'rejected')) expect(String(t.reason)).toContain(`with table prefix ${prefix}: process ${process.pid} on ${hostname()}`);
    await held[0]!.value.release();
    expect(await lockItem(prefix)).toBeUndefined();
  });

  it('a runtime whose lock was taken over (judged stale) is told at its next renewal, naming the taker', async () => {
    await start(newPrefix('table')).then((rt) => rt.stop());
    const prefix = newPrefix('lost');
    const lost: string[] = [];
    const losses: unknown[] = [];
    const lock = await lockRuntime(admin, inject('ddbEndpoint'), prefix, { say: () => {}, onLost: (m, loss) => (lost.push(m), losses.push(loss)) });
    await holder(prefix, { pid: 4444, host: 'elsewhere', heartbeatAt: Date.now() });
    await lock.renew();
    expect(lost).toEqual([`the lock of local mode on table prefix ${prefix} was taken over by process 4444 on elsewhere (judged not renewed)`]);
    // before: no second argument, only the line's text to tell taken over from deleted
    expect(losses).toEqual([{ kind: 'takenOver', pid: 4444, host: 'elsewhere' }]);
    await lock.release();
    expect((await lockItem(prefix))?.['pid']).toEqual({ N: '4444' }); // the taker's, left to it
  });

  it('a runtime whose lock item was deleted under it (by hand: a runtime deletes only its own) is told it was deleted, not that it was judged not renewed', async () => {
    await start(newPrefix('table')).then((rt) => rt.stop());
    const prefix = newPrefix('deleted');
    const lost: string[] = [];
    const losses: unknown[] = [];
    const lock = await lockRuntime(admin, inject('ddbEndpoint'), prefix, { say: () => {}, onLost: (m, loss) => (lost.push(m), losses.push(loss)) });
    await admin.send(new DeleteItemCommand({ TableName: RUNTIME_LOCK_TABLE, Key: { prefix: { S: prefix } } }));
    await lock.renew();
    // before: "... was deleted (judged not renewed)": no start judged anything, none deletes a lock not its own
    expect(lost).toEqual([`the lock of local mode on table prefix ${prefix} was deleted (not by a local runtime, which deletes only its own lock: by hand, or with its table)`]);
    expect(losses).toEqual([{ kind: 'deleted' }]);
    await lock.release();
    expect(await lockItem(prefix)).toBeUndefined();
  });

  it("a runtime whose lock's table is gone (an --endpoint DynamoDB Local started again without its data) is told its lock was deleted with it, and to start again (a passing fault before: its functions waited for ever; a review, 2026-12-05)", async () => {
    await start(newPrefix('table')).then((rt) => rt.stop());
    const prefix = newPrefix('table-gone');
    const proxy = await creatingTableProxy(inject('ddbEndpoint'), RUNTIME_LOCK_TABLE, { describe: 'active' });
    const client = localClient(proxy.endpoint);
    const lost: string[] = [];
    const losses: unknown[] = [];
    const said: string[] = [];
    try {
      const lock = await lockRuntime(client, proxy.endpoint, prefix, { say: (l) => said.push(l), onLost: (m, loss) => (lost.push(m), losses.push(loss)) });
      proxy.creating(1); // the next request on the lock table: ResourceNotFoundException, as on a DynamoDB Local that lost it
      await lock.renew();
      expect(lost).toEqual([expect.stringMatching(new RegExp(`^the lock of local mode on table prefix ${prefix} was deleted with its table ${RUNTIME_LOCK_TABLE}: the DynamoDB Local there lost its tables .*start local mode again$`))]);
      expect(losses).toEqual([{ kind: 'deleted' }]);
      expect(said).toEqual([]);
      await lock.release();
    } finally {
      client.destroy();
      await proxy.close();
      await admin.send(new DeleteItemCommand({ TableName: RUNTIME_LOCK_TABLE, Key: { prefix: { S: prefix } } }));
    }
  });

  it('startLocalConclave: an onLockLost that throws is reported as a process warning naming it, and the stop still stops', async () => {
    const tablePrefix = newPrefix('throwing-cb');
    const warnings: Error[] = [];
    const onWarning = (w: Error) => void warnings.push(w);
    process.on('warning', onWarning);
    let called = false;
    const losses: unknown[] = [];
    const local = await startLocalConclave({ endpoint: inject('ddbEndpoint'), tablePrefix, tickEveryMs: 600_000, logLevel: 'SILENT', push: false, onLockLost: (_message, loss) => {
      called = true;
      losses.push(loss);
      throw new Error('a broken alarm');
    } });
    try {
      await holder(tablePrefix, { pid: 4646, host: 'elsewhere', heartbeatAt: Date.now() });
      // the next heartbeat (every RUNTIME_LOCK_HEARTBEAT_MS) finds it taken over
      await waitFor('onLockLost called', () => called);
      await new Promise((r) => setImmediate(r)); // a warning is emitted on the next tick
      // before: no warning, no line: the throw went into the renewal's rejection, dropped once the lock was lost
      expect(losses).toEqual([{ kind: 'takenOver', pid: 4646, host: 'elsewhere' }]);
      expect(warnings.map((w) => w.message)).toEqual([expect.stringMatching(new RegExp(`^startLocalConclave: onLockLost threw while told "the lock of local mode on table prefix ${tablePrefix} was taken over by process 4646 on elsewhere \\(judged not renewed\\): .*": a broken alarm$`))]);
    } finally {
      process.off('warning', onWarning);
      await local.stop();
    }
    expect((await lockItem(tablePrefix))?.['pid']).toEqual({ N: '4646' }); // the taker's, left to it
  });

  it('lockRuntime and startLocalRuntime given an onLost that throws: reported as a process warning naming it and the loss, as startLocalConclave\'s onLockLost is; the runtime still stops its functions, and its stop still stops', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => void warnings.push(w);
    process.on('warning', onWarning);
    try {
      await start(newPrefix('table')).then((rt) => rt.stop());
      const prefix = newPrefix('throwing-lock-cb');
      const lock = await lockRuntime(admin, inject('ddbEndpoint'), prefix, { say: () => {}, onLost: () => {
        throw new Error('a broken alarm');
      } });
      await holder(prefix, { pid: 4747, host: 'elsewhere', heartbeatAt: Date.now() });
      // before: this renewal rejected with the callback's throw, which the heartbeat drops once the lock is lost: nothing told
      await lock.renew();
      await lock.release();
      await waitFor('the warning', () => warnings.length > 0);
      expect(warnings.map((w) => w.message)).toEqual([`lockRuntime: onLost threw while told "the lock of local mode on table prefix ${prefix} was taken over by process 4747 on elsewhere (judged not renewed)": a broken alarm`]);

      warnings.length = 0;
      const rtPrefix = newPrefix('throwing-rt-cb');
      const beats: (() => void)[] = [];
      const clock: Clock = { ...systemClock, setTimer: (ms, fn, o) => (ms === RUNTIME_LOCK_HEARTBEAT_MS ? (beats.push(fn), { cancel: () => undefined }) : systemClock.setTimer(ms, fn, o)) };
      let called = false;
      const rt = await startLocalRuntime({ endpoint: inject('ddbEndpoint'), prefix: rtPrefix, dir: folder(), tickEveryMs: 600_000, logLevel: 'SILENT', push: false, clock, onLost: async () => {
        called = true;
        throw new Error('an alarm that rejects');
      } });
      try {
        await holder(rtPrefix, { pid: 4848, host: 'elsewhere', heartbeatAt: Date.now() });
        beats.shift()!();
        await waitFor('onLost called', () => called);
        // before: no warning, no line (its rejection unhandled, or dropped in the renewal that told it)
        await waitFor('the warning', () => warnings.length > 0);
        expect(warnings.map((w) => w.message)).toEqual([expect.stringMatching(new RegExp(`^startLocalRuntime: onLost threw while told "the lock of local mode on table prefix ${rtPrefix} was taken over by process 4848 on elsewhere \\(judged not renewed\\): this runtime's functions are stopped .*": an alarm that rejects$`))]);
        await expect(rt.tick()).rejects.toThrow('was taken over by process 4848 on elsewhere');
      } finally {
        await rt.stop();
      }
      expect((await lockItem(rtPrefix))?.['pid']).toEqual({ N: '4848' });
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('the runtime: its lock taken over (judged stale) at a renewal, it stops every trigger of its functions (stream pollers, timer queue, tick, platform events) and says so, and leaves the taker its lock at the stop', async () => {
    const prefix = newPrefix('lost-rt');
    // the heartbeat's timers held by the test, fired by hand; every other timer the machine's
    const beats: (() => void)[] = [];
    const clock: Clock = { ...systemClock, setTimer: (ms, fn, o) => (ms === RUNTIME_LOCK_HEARTBEAT_MS ? (beats.push(fn), { cancel: () => undefined }) : systemClock.setTimer(ms, fn, o)) };
    const seen: string[] = [];
    /** The functions other than the lease stream's invoked (seen here, not run). */
    const invoked: string[] = [];
    const told: string[] = [];
    const rt = await startLocalRuntime({
      endpoint: inject('ddbEndpoint'), prefix, dir: folder(), tickEveryMs: 600_000, logLevel: 'SILENT', push: false, clock,
      onLost: (line) => told.push(line),
      intercept: async (name, event, invoke) => {
        if (name !== 'leaseStream') return void invoked.push(name);
        seen.push(...leaseNames(event));
        return invoke(event);
      },
    });
    try {
      const put = (name: string) => putLease(rt, name);
      await put('before');
      await waitFor('the record before the take-over', () => seen.includes('before'));
      await holder(prefix, { pid: 4545, host: 'elsewhere', heartbeatAt: Date.now() });
      beats.shift()!();
      const line = `the lock of local mode on table prefix ${prefix} was taken over by process 4545 on elsewhere (judged not renewed): this runtime's functions are stopped (its stream pollers, timer queue, tick and platform events): stop it`;
      await waitFor('the loss told', () => told.length > 0);
      expect(told).toEqual([line]);
      expect(beats).toEqual([]); // no renewal after the loss
      invoked.length = 0;
      await put('after');
      // before: the timer queue still delivered (a message the functions scheduled, or one pending), and the
      // tick and platform events still ran the coordinator and the platform function beside the taker's
      await rt.deps.timer.schedule({ republish: [], since: Date.now(), attempt: 1 }, 0);
      await new Promise<void>((resolve) => systemClock.setTimer(0, resolve)); // after the queue's own timer of 0 ms, had it set one
      await expect(rt.tick()).rejects.toThrow(`${line.split(': this runtime')[0]}: this runtime's functions are stopped; stop it`);
      await expect(rt.platformEvent(ecsTaskStateChange(taskArn('0105700d'), 'STOPPED', LOCAL_DEPLOYMENT))).rejects.toThrow('was taken over by process 4545 on elsewhere');
      expect(invoked).toEqual([]);
    } finally {
      await rt.stop();
    }
    expect(seen).toEqual(['before']);
    expect((await lockItem(prefix))?.['pid']).toEqual({ N: '4545' }); // the taker's, left to it
  });
});

describe('a runtime paused past the stale time (SIGSTOP, a debugger, a suspended VM), its lock taken over meanwhile', () => {
  it('handles no record on waking before its lock is confirmed: its first invocation renews first, finds the lock taken over, and the runtime stops', async () => {
    const prefix = newPrefix('paused');
    // its monotonic clock jumps by the pause; the heartbeat's timers held by the test (on waking they fire late: after the pollers' naps)
    let paused = 0;
    const clock: Clock = {
      ...systemClock,
      monotonic: () => systemClock.monotonic() + paused,
      setTimer: (ms, fn, o) => (ms <= RUNTIME_LOCK_HEARTBEAT_MS && ms >= RUNTIME_LOCK_HEARTBEAT_MS / 4 ? { cancel: () => undefined } : systemClock.setTimer(ms, fn, o)),
    };
    const seen: string[] = [];
    const told: string[] = [];
    const rt = await startLocalRuntime({
      endpoint: inject('ddbEndpoint'), prefix, dir: folder(), tickEveryMs: 600_000, logLevel: 'SILENT', push: false, clock,
      onLost: (line) => told.push(line),
      intercept: async (name, event, invoke) => {
        if (name === 'leaseStream') seen.push(...leaseNames(event));
        return invoke(event);
      },
    });
    try {
      const put = (name: string) => putLease(rt, name);
      await put('before');
      await waitFor('the record before the pause', () => seen.includes('before'));
      // paused past the stale time: another start judged the lock stale and took it over
      paused += RUNTIME_LOCK_STALE_MS + 1_000;
      await holder(prefix, { pid: 5353, host: 'elsewhere', heartbeatAt: Date.now() });
      await put('after');
      // before: the poller handled it at once beside the taker (nothing asked whether the lock was still this runtime's
      // until the heartbeat's next renewal, which fires after the pollers' naps on waking)
      await waitFor('the record handled, or the loss told', () => seen.includes('after') || told.length > 0);
      expect(told).toEqual([`the lock of local mode on table prefix ${prefix} was taken over by process 5353 on elsewhere (judged not renewed): this runtime's functions are stopped (its stream pollers, timer queue, tick and platform events): stop it`]);
    } finally {
      await rt.stop();
    }
    expect(seen).toEqual(['before']);
    expect((await lockItem(prefix))?.['pid']).toEqual({ N: '5353' });
  });
});

describe('a runtime stopped while a function waits for its lock to be confirmed (DynamoDB Local unreachable)', () => {
  it('stops without DynamoDB Local coming back: the waiting invocation gives up, its function not run and nothing dead-lettered', async () => {
    await start(newPrefix('table')).then((rt) => rt.stop());
    const prefix = newPrefix('stop-confirming');
    const proxy = await closableProxy(inject('ddbEndpoint'));
    // its monotonic clock jumps past the sure window; the heartbeat's timers held (never fired); the
    // lock's first wait before it tries a confirmation again (a sleep of RUNTIME_LOCK_RETRY_MS, a length
    // no other part sleeps) held too: it ends only if aborted
    let paused = 0;
    const naps: (() => void)[] = [];
    const confirmWait = (ms: number) => ms === RUNTIME_LOCK_RETRY_MS;
    const machine: Clock = {
      ...systemClock,
      monotonic: () => systemClock.monotonic() + paused,
      setTimer: (ms, fn, o) => (ms <= RUNTIME_LOCK_HEARTBEAT_MS && ms >= RUNTIME_LOCK_RETRY_MS ? { cancel: () => undefined } : systemClock.setTimer(ms, fn, o)),
    };
    const clock: Clock = {
      ...machine,
      // the runtime's other sleeps (its pollers' naps) are the machine's, as with ...systemClock
      sleep: (ms, signal) =>
        confirmWait(ms)
          ? new Promise<void>((resolve) => {
              naps.push(resolve);
              signal?.addEventListener('abort', () => resolve(), { once: true });
            })
          : machine.sleep(ms, signal),
    };
    const invoked: string[] = [];
    const rt = await startLocalRuntime({
      endpoint: proxy.endpoint, prefix, dir: folder(), tickEveryMs: 600_000, logLevel: 'SILENT', push: false, clock,
      intercept: async (name, event, invoke) => {
        invoked.push(name);
        return invoke(event);
      },
    });
    let stopped: string | undefined;
    try {
      await proxy.close(); // DynamoDB Local gone, and not back before the stop
      paused += RUNTIME_LOCK_STALE_MS; // past RUNTIME_LOCK_SURE_MS since its last renewal: an invocation confirms the lock first
      const delivered = rt.platformEvent(ecsTaskStateChange(taskArn('5709c0f1'), 'STOPPED', LOCAL_DEPLOYMENT));
      await waitFor('a confirmation failed, its retry waiting', () => naps.length > 0);
      // before: stop() waited for the platform event, whose invocation waited for a renewal to land, retried for as
      // long as DynamoDB Local was gone: the stop (conclave-local's Ctrl-C, npm start's end) hung until it came back
      void rt.stop().then(
        () => (stopped = 'stopped'),
        (e: unknown) => (stopped = (e as Error).message),
      );
      await waitFor('the stop', () => stopped);
      // the lock's item could not be deleted (DynamoDB Local gone): said (stderr), and the stop completes
      expect(stopped).toBe('stopped');
      await delivered;
      expect(invoked).toEqual([]);
      expect(rt.deadLetters).toEqual([]);
    } finally {
      await proxy.open();
      // (a stop still under way: its confirmation let go on, it lands now)
      for (const end of naps) end();
      await waitFor('the stop, DynamoDB Local back', () => stopped);
      await proxy.close();
    }
  });
});

describe('a runtime whose lock cannot be deleted at its stop (DynamoDB Local gone by then)', () => {
  it('stops all the same, saying the lock is left in place and how a later start takes it over; a start in this process takes it over at once', async () => {
    await start(newPrefix('table')).then((rt) => rt.stop());
    const prefix = newPrefix('left-in-place');
    const proxy = await closableProxy(inject('ddbEndpoint'));
    // the runtime's lines (the lock's `say`: stderr)
    const lines: string[] = [];
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => (lines.push(String(chunk)), true));
    let stopped: string;
    try {
      const rt = await startLocalRuntime({ endpoint: proxy.endpoint, prefix, dir: folder(), tickEveryMs: 600_000, logLevel: 'SILENT', push: false });
      await proxy.close(); // DynamoDB Local gone before the stop (stopped first, or unreachable)
      // before: rejected, "stopping the local runtime: the runtime lock: the lock ... was left in place, not deleted (...)",
      // though every part had stopped and a stop again could only fail the same way
      stopped = await rt.stop().then(() => 'stopped', (e: unknown) => (e as Error).message);
    } finally {
      stderr.mockRestore();
      await proxy.open();
      await proxy.close();
    }
    expect(stopped).toBe('stopped');
    expect(lines.filter((l) => l.includes('left in place'))).toEqual([
      expect.stringMatching(
        new RegExp(
          `^conclave: local runtime: the lock of local mode on table prefix ${prefix} was left in place, not deleted \\(.+\\): a later start takes it over, at once in this process or on this host once this process has exited; ` +
            `elsewhere once it has seen it unrenewed for ${RUNTIME_LOCK_STALE_MS / 1000} s \\(one on this host while this process still runs is refused until ${RUNTIME_LOCK_STALE_MS / 1000} s after its last renewal\\)\n$`,
        ),
      ),
    ]);
    expect((await lockItem(prefix))?.['pid']).toEqual({ N: String(process.pid) }); // left in place
    // as said: a start in this process takes it over at once (its pid this process's, its token none of ours)
    const said: string[] = [];
    const lock = await lockRuntime(admin, inject('ddbEndpoint'), prefix, { say: (line) => said.push(line) });
    await lock.release();
    expect(said).toEqual([`taking over the lock of process ${process.pid} on ${hostname()}: its pid is this process's, which does not hold it: an earlier process's`]);
    expect(await lockItem(prefix)).toBeUndefined();
  });
});

describe('a runtime lock item written before it counted its renewals (no renewals field)', () => {
  /** A lock item as a holder of before cf676b3 wrote it, and renews it (heartbeatAt and staleAt, no count). */
  const olderHolder = (prefix: string, o: { pid: number; host: string; heartbeatAt: number }) => {
    const { renewals: _, ...item } = { prefix, owner: randomUUID(), pid: o.pid, host: o.host, endpoint: inject('ddbEndpoint'), startedAt: o.heartbeatAt, heartbeatAt: o.heartbeatAt, staleAt: o.heartbeatAt + RUNTIME_LOCK_STALE_MS, renewals: 0 };
    return admin.send(new PutItemCommand({ TableName: RUNTIME_LOCK_TABLE, Item: marshall(item) }));
  };
  const olderRenewal = (prefix: string, at: number) =>
    admin.send(new UpdateItemCommand({ TableName: RUNTIME_LOCK_TABLE, Key: { prefix: { S: prefix } }, UpdateExpression: 'SET heartbeatAt = :h, staleAt = :s', ExpressionAttributeValues: { ':h': { N: String(at) }, ':s': { N: String(at + RUNTIME_LOCK_STALE_MS) } } }));

  it('is judged as a lock whose count is 0: one left unrenewed elsewhere is taken over after RUNTIME_LOCK_STALE_MS, one renewed meanwhile is refused; one of a process gone here is taken over at once', async () => {
    await start(newPrefix('table')).then((rt) => rt.stop());
    const T0 = 1_800_000_000_000;
    const quiet = newPrefix('older-quiet');
    await olderHolder(quiet, { pid: 4747, host: 'elsewhere', heartbeatAt: T0 - 1_000 });
    // before: refused at once as malformed ("renewals: required"), naming the item to delete
    const { lock, said, waited, manual } = await startWaiting(quiet, T0);
    try {
      expect(waited).toBe(RUNTIME_LOCK_STALE_MS);
      expect(said[1]).toMatch(/^taking over the lock of process 4747 on elsewhere: not renewed for 10 s/);
      expect((await lockItem(quiet))?.['pid']).toEqual({ N: String(process.pid) });
    } finally {
      await lock.release();
    }

    const live = newPrefix('older-live');
    await olderHolder(live, { pid: 4848, host: 'elsewhere', heartbeatAt: manual.now() });
    // its holder, of the older version, renews as it did
    const renewing = sleepsMove(manual.now(), (at) => olderRenewal(live, at));
    await expect(lockRuntime(admin, inject('ddbEndpoint'), live, { clock: renewing.clock, say: () => {} })).rejects.toThrow(`with table prefix ${live}: process 4848 on elsewhere`);

    const gone = newPrefix('older-gone');
    await olderHolder(gone, { pid: spawnSync(process.execPath, ['-e', '']).pid!, host: hostname(), heartbeatAt: Date.now() });
    const taken = await lockRuntime(admin, inject('ddbEndpoint'), gone, { say: () => {} });
    await taken.release();
  });

  it('an item that is not a lock of any version (a field of the wrong type) is still refused, naming the item and the fix', async () => {
    await start(newPrefix('table')).then((rt) => rt.stop());
    const prefix = newPrefix('malformed');
    await admin.send(new PutItemCommand({ TableName: RUNTIME_LOCK_TABLE, Item: { ...marshall({ prefix, owner: randomUUID(), pid: 4949, host: 'elsewhere', endpoint: 'x', startedAt: 1, heartbeatAt: 1, staleAt: 2 }), renewals: { S: 'many' } } }));
    await expect(lockRuntime(admin, inject('ddbEndpoint'), prefix, { say: () => {} })).rejects.toThrow(
      new RegExp(`runtime lock "${prefix}" \\(table ${RUNTIME_LOCK_TABLE} at ${inject('ddbEndpoint').replace(/[.]/g, '\\.')}; delete the item if no local mode runs on that prefix\\).*renewals`, 's'),
    );
  });
});

describe('a runtime lock whose renewals fail for a moment (DynamoDB Local unreachable)', () => {
  /** A held heartbeat: each timer the lock sets is kept (with its wait) and fired by the test. */
  const heldBeats = () => {
    const beats: { ms: number; fn: () => void }[] = [];
    const clock: Clock = { ...systemClock, setTimer: (ms, fn, o) => (ms <= RUNTIME_LOCK_HEARTBEAT_MS ? (beats.push({ ms, fn }), { cancel: () => undefined }) : systemClock.setTimer(ms, fn, o)) };
    return { beats, clock };
  };
  const renewalsOf = async (prefix: string) => Number((await lockItem(prefix))?.['renewals']?.N);
  /**
   * A lock of a new prefix taken through a proxy the test closes and opens (DynamoDB Local gone and
   * back), with no SDK retries (they wait on the machine's clock: each failure is the lock's), and
   * `options`; `body` runs with it, then the lock is let go with the proxy open.
   */
  const throughProxy = async (label: string, options: NonNullable<Parameters<typeof lockRuntime>[3]>, body: (l: { prefix: string; proxy: Awaited<ReturnType<typeof closableProxy>>; lock: Awaited<ReturnType<typeof lockRuntime>> }) => Promise<void>) => {
    await start(newPrefix('table')).then((rt) => rt.stop());
    const prefix = newPrefix(label);
    const proxy = await closableProxy(inject('ddbEndpoint'));
    const client = localClient(proxy.endpoint, undefined, { maxAttempts: 1 });
    const lock = await lockRuntime(client, proxy.endpoint, prefix, options);
    try {
      await body({ prefix, proxy, lock });
    } finally {
      await proxy.open();
      await lock.release();
      client.destroy();
      await proxy.close();
    }
  };

  it('is kept: a renewal after a failed one is sent and lands, and a take-over after it is still seen', async () => {
    const lost: string[] = [];
    // the heartbeat held: every renewal here is the test's
    await throughProxy('flaky', { clock: heldBeats().clock, say: () => {}, onLost: (m) => lost.push(m) }, async ({ prefix, proxy, lock }) => {
      await lock.renew();
      expect(await renewalsOf(prefix)).toBe(1);
      await proxy.close();
      await expect(lock.renew()).rejects.toThrow();
      await proxy.open();
      // before: every renewal after the first failed one was that failure again, never sent: the lock went
      // unrenewed, was taken over 10 s later by another start, and this runtime never learned it
      await lock.renew();
      expect(await renewalsOf(prefix)).toBe(2);
      await holder(prefix, { pid: 4646, host: 'elsewhere', heartbeatAt: Date.now() });
      await lock.renew();
      expect(lost).toEqual([`the lock of local mode on table prefix ${prefix} was taken over by process 4646 on elsewhere (judged not renewed)`]);
    });
  });

  it('the heartbeat retries a failed renewal at a backoff, 0.5 s, 1 s, then every 2 s (never later than a beat), told at the 1st, 2nd, 4th … failure in a row; one that lands says so and beats every 2 s again', async () => {
    const { beats, clock } = heldBeats();
    const said: string[] = [];
    const lost: string[] = [];
    /** Fires the pending beat, waits for the next one it sets: that one's wait. */
    const fire = async () => {
      const pending = beats.shift()!;
      pending.fn();
      return (await waitFor('the next beat set', () => beats[0])).ms;
    };
    await throughProxy('backoff', { clock, say: (line) => said.push(line), onLost: (m) => lost.push(m) }, async ({ prefix, proxy }) => {
      expect(beats.map((b) => b.ms)).toEqual([RUNTIME_LOCK_HEARTBEAT_MS]);
      await proxy.close();
      const waits: number[] = [];
      for (let i = 0; i < 5; i++) waits.push(await fire());
      // before: 2000 each time (the next beat), each failure told
      expect(waits).toEqual([500, 1000, 2000, 2000, 2000]);
      expect(said.map((l) => /failed \((\d+) in a row; tried again in ([\d.]+) s/.exec(l)?.slice(1))).toEqual([['1', '0.5'], ['2', '1'], ['4', '2']]);
      expect(said[0]).toMatch(new RegExp(`^renewing the lock of table prefix ${prefix} failed \\(1 in a row; tried again in 0\\.5 s; .*\\): .+`));
      said.length = 0;
      await proxy.open();
      expect(await fire()).toBe(RUNTIME_LOCK_HEARTBEAT_MS);
      expect(said).toEqual([`renewed the lock of table prefix ${prefix} again, after 5 failed renewals`]);
      expect(await renewalsOf(prefix)).toBe(1);
      expect(lost).toEqual([]);
    });
  });

  it('a failed renewal told past the sure window says the functions wait for a renewal to land, not that the runtime runs on', async () => {
    const { beats, clock: beatsHeld } = heldBeats();
    // its renewals failing for longer than RUNTIME_LOCK_SURE_MS (its monotonic clock moved on by that)
    let failingFor = 0;
    const clock: Clock = { ...beatsHeld, monotonic: () => systemClock.monotonic() + failingFor };
    const said: string[] = [];
    await throughProxy('unsure', { clock, say: (line) => said.push(line), onLost: () => {} }, async ({ prefix, proxy }) => {
      await proxy.close();
      failingFor += RUNTIME_LOCK_SURE_MS;
      beats.shift()!.fn();
      await waitFor('the failure told', () => said[0]);
      // before: "this runtime runs on meanwhile", while every invocation waits in held() for a renewal to land
      expect(said[0]).toMatch(new RegExp(`^renewing the lock of table prefix ${prefix} failed \\(1 in a row; tried again in 0\\.5 s; this runtime's functions wait for a renewal to land before they run; `));
    });
  });

  it('its lock item gone while its renewals were failing (DynamoDB Local down, then started again without its data): told that, not "deleted by hand" (a review, 2026-12-07)', async () => {
    const { beats, clock } = heldBeats();
    const lost: string[] = [];
    await throughProxy('restarted-empty', { clock, say: () => {}, onLost: (m) => lost.push(m) }, async ({ prefix, proxy }) => {
      await proxy.close();
      beats.shift()!.fn();
      await waitFor('a renewal failed, the next set', () => beats[0]);
      beats.shift()!.fn();
      await waitFor('a second renewal failed, the next set', () => beats[0]);
      // the DynamoDB Local back, without the lock (its tables started again empty; the lock table made again by another start)
      await admin.send(new DeleteItemCommand({ TableName: RUNTIME_LOCK_TABLE, Key: { prefix: { S: prefix } } }));
      await proxy.open();
      beats.shift()!.fn();
      await waitFor('the loss told', () => lost[0]);
      // before: "... was deleted (not by a local runtime, which deletes only its own lock: by hand, or with its table)"
      expect(lost).toEqual([
        `the lock of local mode on table prefix ${prefix} was deleted while its renewals were failing (2 in a row): the DynamoDB Local there was probably started again without its data, and this local mode's tables went with it; start local mode again`,
      ]);
    });
  });

  it('a take-over is told even when who took it cannot be read (the read after the refused renewal fails too)', async () => {
    await start(newPrefix('table')).then((rt) => rt.stop());
    const prefix = newPrefix('unread-taker');
    const { proxy, arm } = await resettingProxy(inject('ddbEndpoint'), (request) => request.includes('DynamoDB_20120810.GetItem'));
    const client = localClient(proxy.endpoint, undefined, { maxAttempts: 1 });
    const lost: string[] = [];
    const losses: { kind: string; error?: unknown }[] = [];
    const lock = await lockRuntime(client, proxy.endpoint, prefix, { clock: heldBeats().clock, say: () => {}, onLost: (m, loss) => (lost.push(m), losses.push(loss)) });
    try {
      await holder(prefix, { pid: 5050, host: 'elsewhere', heartbeatAt: Date.now() });
      arm(); // the read of who holds it now: sent, its answer lost
      // before: this renewal rejected with the read's failure and marked the lock over first, so the
      // loss was never told (nor by any renewal after it): the runtime kept its pollers and tick running
      await lock.renew();
      expect(lost).toHaveLength(1);
      expect(lost[0]).toMatch(new RegExp(`^the lock of local mode on table prefix ${prefix} was taken over or deleted \\(who holds it now could not be read: .+\\)`));
      expect(losses).toEqual([{ kind: 'unread', error: expect.any(Error) }]);
    } finally {
      await lock.release();
      client.destroy();
      await close(proxy);
    }
    expect((await lockItem(prefix))?.['pid']).toEqual({ N: '5050' });
  });
});

describe('a runtime lock on a DynamoDB Local that accepts connections and never answers', () => {
  /**
   * The lock's clock with its heartbeat's timers and its requests' bounds held (each kept, fired by
   * the test); a lock of a new prefix taken through a hangingProxy, with no SDK retries (each
   * failure is the lock's). `body` runs with it; the lock is let go with the proxy passing again.
   */
  const throughHangingProxy = async (label: string, body: (l: { prefix: string; proxy: Awaited<ReturnType<typeof hangingProxy>>; lock: Awaited<ReturnType<typeof lockRuntime>>; beats: { ms: number; fn: () => void }[]; bounds: { fn: () => void; cancelled: boolean }[]; said: string[] }) => Promise<void>) => {
    await start(newPrefix('table')).then((rt) => rt.stop());
    const prefix = newPrefix(label);
    const beats: { ms: number; fn: () => void }[] = [];
    const bounds: { fn: () => void; cancelled: boolean }[] = [];
    const clock: Clock = {
      ...systemClock,
      setTimer: (ms, fn, o) => {
        if (ms <= RUNTIME_LOCK_HEARTBEAT_MS) return beats.push({ ms, fn }), { cancel: () => undefined };
        if (ms !== RUNTIME_LOCK_REQUEST_MS) return systemClock.setTimer(ms, fn, o);
        const b = { fn, cancelled: false };
        bounds.push(b);
        return { cancel: () => void (b.cancelled = true) };
      },
    };
    const said: string[] = [];
    const proxy = await hangingProxy(inject('ddbEndpoint'));
    const client = localClient(proxy.endpoint, undefined, { maxAttempts: 1 });
    const lock = await lockRuntime(client, proxy.endpoint, prefix, { clock, say: (line) => said.push(line), onLost: (m) => said.push(`lost: ${m}`) });
    try {
      await body({ prefix, proxy, lock, beats, bounds, said });
    } finally {
      proxy.pass();
      await lock.release();
      client.destroy();
      await proxy.close();
    }
  };
  /** The bounds of requests still unanswered. */
  const pending = <B extends { cancelled: boolean }>(bounds: B[]) => bounds.filter((b) => !b.cancelled);

  it('a renewal left unanswered is abandoned after RUNTIME_LOCK_REQUEST_MS, told and retried at the backoff as one that cannot connect is; one that lands after says so', async () => {
    await throughHangingProxy('hung-renewal', async ({ prefix, proxy, beats, bounds, said }) => {
      expect(pending(bounds)).toEqual([]); // the take's request answered
      proxy.hang();
      beats.shift()!.fn();
      await waitFor('the renewal taken by the proxy', () => proxy.hung() > 0);
      // before: no bound (the SDK sets no request timeout): the renewal waited for an answer for good, no retry, no line
      expect(pending(bounds)).toHaveLength(1);
      pending(bounds)[0]!.fn(); // its bound runs out
      const next = await waitFor('the next beat set', () => beats[0]);
      expect(next.ms).toBe(RUNTIME_LOCK_RETRY_MS);
      expect(said).toEqual([expect.stringMatching(new RegExp(`^renewing the lock of table prefix ${prefix} failed \\(1 in a row; tried again in 0\\.5 s; .*\\): TimeoutError: DynamoDB gave no answer within ${RUNTIME_LOCK_REQUEST_MS} ms`))]);
      proxy.pass();
      beats.shift()!.fn();
      await waitFor('the beat after the one that landed', () => beats[0]);
      expect(said[1]).toBe(`renewed the lock of table prefix ${prefix} again, after 1 failed renewal`);
    });
  });

  it('release() at the stop does not wait for a renewal left unanswered, and gives up on its delete after RUNTIME_LOCK_REQUEST_MS, saying the lock is left in place (resolved: the stop completes)', async () => {
    await throughHangingProxy('hung-release', async ({ prefix, proxy, lock, beats, bounds, said }) => {
      proxy.hang();
      beats.shift()!.fn();
      await waitFor('the renewal taken by the proxy', () => proxy.hung() > 0);
      // before: no bound on it, and release() waited for it for good
      expect(pending(bounds)).toHaveLength(1);
      const released = lock.release().then(() => undefined, (e: unknown) => e as Error);
      // the renewal abandoned at once (release() aborts it); the delete sent, and taken too
      await waitFor('the delete taken by the proxy', () => proxy.hung() > 1);
      expect(pending(bounds)).toHaveLength(1);
      pending(bounds)[0]!.fn();
      expect(await released).toBeUndefined();
      expect(beats).toEqual([]); // no beat set after the release (the abandoned renewal is not retried)
      // nor told as a failed renewal: only the lock left in place is said
      expect(said).toEqual([expect.stringMatching(new RegExp(`^the lock of local mode on table prefix ${prefix} was left in place, not deleted \\(TimeoutError: DynamoDB gave no answer within ${RUNTIME_LOCK_REQUEST_MS} ms.*\\): a later start takes it over, at once in this process`))]);
      expect((await lockItem(prefix))?.['pid']).toEqual({ N: String(process.pid) }); // left in place
    });
  });
});

describe('the runtime lock between two hosts whose clocks disagree', () => {
  const SKEW = 60_000; // more than RUNTIME_LOCK_STALE_MS
  /**
   * Two hosts on one simulated time `t`: each's wall clock is off by its own offset, its monotonic
   * clock counts `t`. The holder's heartbeat timers are held by the test (fired through `beat()`);
   * the reader's sleeps move `t` on and, when `renewing`, the holder renews meanwhile as a live one does.
   */
  const twoHosts = (holderOffset: number, readerOffset: number) => {
    let t = 1_800_000_000_000;
    const beats: (() => void)[] = [];
    const view = (offset: number): Clock => ({ ...systemClock, now: () => t + offset, monotonic: () => t, setTimer: (_ms, fn) => (beats.push(fn), { cancel: () => undefined }) });
    const hosts = { t: () => t, holder: view(holderOffset), reader: view(readerOffset), renewing: undefined as (() => Promise<void>) | undefined };
    hosts.reader = { ...hosts.reader, sleep: async (ms: number) => {
      t += ms;
      await hosts.renewing?.();
    } };
    return hosts;
  };

  it('a reader whose clock is ahead of the holder\'s by more than RUNTIME_LOCK_STALE_MS does not take over a lock renewed every RUNTIME_LOCK_HEARTBEAT_MS: refused once it sees a renewal', async () => {
    await start(newPrefix('table')).then((rt) => rt.stop());
    const prefix = newPrefix('skew-ahead');
    const hosts = twoHosts(0, SKEW);
    const lost: string[] = [];
    const holding = await lockRuntime(admin, inject('ddbEndpoint'), prefix, { clock: hosts.holder, host: 'host-a', say: () => {}, onLost: (m) => lost.push(m) });
    hosts.renewing = () => holding.renew();
    try {
      const before = hosts.t();
      // before: the reader judged the lock stale at once (its now past the holder's staleAt) and took it over: two runtimes ran
      await expect(lockRuntime(admin, inject('ddbEndpoint'), prefix, { clock: hosts.reader, host: 'host-b', say: () => {} })).rejects.toThrow(`with table prefix ${prefix}: process ${process.pid} on host-a`);
      expect(hosts.t() - before).toBe(RUNTIME_LOCK_HEARTBEAT_MS); // refused at the first renewal it saw
      await holding.renew();
      expect(lost).toEqual([]);
      expect((await lockItem(prefix))?.['host']).toEqual({ S: 'host-a' });
    } finally {
      await holding.release();
    }
  });

  it('a reader whose clock is behind the holder\'s by more than RUNTIME_LOCK_STALE_MS takes over a lock no longer renewed after RUNTIME_LOCK_STALE_MS of its own time, not that plus the skew', async () => {
    await start(newPrefix('table')).then((rt) => rt.stop());
    const prefix = newPrefix('skew-behind');
    const hosts = twoHosts(0, -SKEW);
    const lost: string[] = [];
    // its holder hangs (or its host is gone): it never renews
    const silent = await lockRuntime(admin, inject('ddbEndpoint'), prefix, { clock: hosts.holder, host: 'host-a', say: () => {}, onLost: (m) => lost.push(m) });
    const said: string[] = [];
    const before = hosts.t();
    const taken = await lockRuntime(admin, inject('ddbEndpoint'), prefix, { clock: hosts.reader, host: 'host-b', say: (line) => said.push(line) });
    try {
      // before: waited until the holder's staleAt on the reader's clock: RUNTIME_LOCK_STALE_MS + SKEW
      expect(hosts.t() - before).toBe(RUNTIME_LOCK_STALE_MS);
      expect(said).toHaveLength(2);
      expect(said[1]).toBe(`taking over the lock of process ${process.pid} on host-a: not renewed for ${RUNTIME_LOCK_STALE_MS / 1000} s as host-b's clock counts (its last renewal stamped ${new Date(hosts.t() - RUNTIME_LOCK_STALE_MS).toISOString()} by its own)`);
      expect((await lockItem(prefix))?.['host']).toEqual({ S: 'host-b' });
      await silent.renew(); // the holder, back, finds it taken over
      expect(lost).toEqual([`the lock of local mode on table prefix ${prefix} was taken over by process ${process.pid} on host-b (judged not renewed)`]);
    } finally {
      await taken.release();
      await silent.release();
    }
  });
});
