/**
 * A local runtime on a DynamoDB Local that accepts connections and never answers (test/proxy.ts'
 * hangingProxy: a DynamoDB Local wedged, a flow black-holed). The SDK sets no request timeout and
 * nothing in local mode plays Lambda's function timeout, so before RUNTIME_REQUEST_MS a stream
 * poller's read, or a function's request, waited for an answer for good: the shard delivered
 * nothing more, and the stop waited behind it. Each bound is a timer of the runtime's clock that the
 * test holds and fires: no wait on the machine's clock.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { systemClock, type Clock } from '../../lib/clock.js';
import { RUNTIME_REQUEST_MS, startLocalRuntime } from '../../lib/local/runtime.js';
import { lockRuntime, RUNTIME_LOCK_REQUEST_MS } from '../../lib/local/runtime-lock.js';
import { deleteTables } from '../../lib/local/tables.js';
import { localClient } from '../../lib/stores/client.js';
import { defaultTableNames } from '../../lib/tables.js';
import { waitFor } from '../sdk/harness.js';
import { hangingProxy } from '../proxy.js';
import { heldBoundsClock } from './held-bounds.js';

const admin = localClient(inject('ddbEndpoint'));
const prefix = `hung-${randomUUID().slice(0, 8)}`;
afterAll(async () => {
  await deleteTables(admin, defaultTableNames(prefix));
  admin.destroy();
});

/** A lease row put straight into DynamoDB Local (not through the proxy): its stream's record is named `name`. */
const putLease = (name: string) =>
  admin.send(new PutItemCommand({ TableName: defaultTableNames(prefix).leases, Item: { name: { S: name }, leaseTransitions: { N: '0' }, leaseDurationSeconds: { N: '15' }, fencingToken: { N: '1' }, revision: { N: '1' } } }));

describe('a local runtime on a DynamoDB Local that accepts connections and never answers', () => {
  it("abandons a stream read and a function's request after RUNTIME_REQUEST_MS, tells the read and retries both; its stop abandons the reads under way", async () => {
    expect(RUNTIME_REQUEST_MS).toBe(RUNTIME_LOCK_REQUEST_MS); // (the test holds both by their length)
    // the machine's clock but: request bounds held (fired by the test), the lock's heartbeat held (never
    // fired), and the monotonic clock still, so the lock stays sure and no renewal goes through the proxy
    const bounds: { fn: () => void; live: boolean; hung: boolean }[] = [];
    /** Whether the proxy takes requests and leaves them unanswered now. */
    let hanging = false;
    const clock = heldBoundsClock((fn) => {
      const b = { fn, live: true, hung: hanging };
      bounds.push(b);
      return { cancel: () => void (b.live = false) };
    });
    /** Runs out the bounds of the requests the proxy may have taken while hanging (from the `from`th bound set on): an answered one is never cut short. */
    const runOut = (from = 0) => {
      for (const b of bounds.slice(from).filter((x) => x.live && x.hung)) {
        b.live = false;
        b.fn();
      }
    };
    // the runtime's log (Powertools JSON lines, errors on stderr): where a poller tells a failed read
    const logged: string[] = [];
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => (logged.push(String(chunk)), true));
    const proxy = await hangingProxy(inject('ddbEndpoint'));
    const hang = () => {
      hanging = true;
      for (const b of bounds) b.hung = true; // (one set just before may not have reached the proxy yet)
      proxy.hang();
    };
    /** Answers again; the requests taken meanwhile are left unanswered still, and run out now. */
    const pass = () => {
      proxy.pass();
      runOut();
      hanging = false;
    };
    /** The lease stream's invocations: the leases of each, and how it ended. */
    const runs: { names: string[]; ok: boolean }[] = [];
    const ran = (name: string, ok: boolean) => runs.some((r) => r.names.includes(name) && r.ok === ok);
    let stopped: string | undefined;
    const rt = await startLocalRuntime({
      endpoint: proxy.endpoint, prefix, dir: mkdtempSync(join(tmpdir(), 'conclave-hung-')), tickEveryMs: 600_000, logLevel: 'ERROR', push: false, clock,
      intercept: async (name, event, invoke) => {
        if (name !== 'leaseStream') return invoke(event);
        const names = (event as { Records: { dynamodb: { Keys: { name: { S: string } } } }[] }).Records.map((r) => r.dynamodb.Keys.name.S);
        // DynamoDB Local stops answering as the function starts: its reads and writes are taken and left unanswered
        if (names.includes('hang') && !runs.some((r) => r.names.includes('hang'))) hang();
        try {
          const out = (await invoke(event)) as { batchItemFailures?: unknown[] } | undefined;
          runs.push({ names, ok: !out?.batchItemFailures?.length });
          return out;
        } catch (e) {
          runs.push({ names, ok: false });
          throw e;
        }
      },
    });
    try {
      await putLease('before');
      await waitFor('the record before', () => ran('before', true));
      await putLease('hang');
      // before: no bound on any request (the SDK sets none): nothing was abandoned, told or retried, and
      // the lease stream's shard waited on its function for good
      await waitFor('a stream read abandoned and told, and the function failed on its request abandoned', () => {
        runOut();
        return ran('hang', false) && logged.some((l) => l.includes("function's stream reads failed") && l.includes('TimeoutError'));
      });
      // (told once as the outage starts, DynamoDB Local named, the first error with it)
      expect(logged.find((l) => l.includes("function's stream reads failed"))).toContain(`is unreachable (timed out)`);
      expect(logged.find((l) => l.includes("function's stream reads failed"))).toContain(`DynamoDB gave no answer within ${RUNTIME_REQUEST_MS} ms`);
      pass();
      // the batch retried (the lease stream's retries are unbounded) and handled, and the shards read on
      await waitFor('the function retried, and handled', () => ran('hang', true));
      await putLease('after');
      await waitFor('the record after', () => ran('after', true));

      // stopped while DynamoDB Local answers nothing: the pollers' reads under way are abandoned at once,
      // not at their bounds (only those set from the stop on run out here: the lock's delete)
      hang();
      const taken = proxy.hung();
      await waitFor('a read taken and left unanswered', () => proxy.hung() > taken);
      const from = bounds.length;
      void rt.stop().then(
        () => (stopped = 'stopped'),
        (e: unknown) => (stopped = (e as Error).message),
      );
      await waitFor('the stop', () => (runOut(from), stopped));
      expect(stopped).toBe('stopped'); // (the lock left in place, said: its delete unanswered too)
    } finally {
      stderr.mockRestore();
      proxy.pass();
      if (stopped === undefined) await rt.stop().catch(() => undefined);
      await proxy.close();
    }
  });

  it('gives up a start whose first request, the lock table made if missing, is never answered (lockRuntime)', async () => {
    // before: the lock table's making went out on the unbounded client, so a start against such an
    // endpoint waited for good before its first bounded request. The bound here is a timer of the
    // lock's clock, fired once the proxy has taken one more request than when it was set
    const proxy = await hangingProxy(inject('ddbEndpoint'));
    proxy.hang();
    const clock: Clock = {
      ...systemClock,
      setTimer: (ms, fn, o) => {
        if (ms !== RUNTIME_LOCK_REQUEST_MS) return systemClock.setTimer(ms, fn, o);
        const taken = proxy.hung();
        let live = true;
        void waitFor('the request taken and left unanswered', () => proxy.hung() > taken || !live).then(() => live && fn());
        return { cancel: () => void (live = false) };
      },
    };
    const client = localClient(proxy.endpoint);
    try {
      await expect(lockRuntime(client, proxy.endpoint, `${prefix}-start`, { clock, say: () => undefined })).rejects.toThrow(`no answer within ${RUNTIME_LOCK_REQUEST_MS} ms`);
    } finally {
      client.destroy();
      proxy.pass();
      await proxy.close();
    }
  });
});
