/**
 * A local runtime stopped while one of its functions waits on a DynamoDB request that DynamoDB
 * Local has taken and never answers (test/proxy.ts' hangingProxy, stalling the functions' requests
 * only). Before, the stop waited behind the invocation until the request's bound (RUNTIME_REQUEST_MS)
 * abandoned it: 5 s of every such stop (startLocalConclave's stop, Ctrl-C of conclave-local). The
 * bounds here are timers of the runtime's clock that the test holds and never fires: the stop has to
 * end without them, with the stalled request still unanswered at the proxy.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { systemClock, type Clock } from '../../lib/clock.js';
import { RUNTIME_REQUEST_MS, startLocalRuntime } from '../../lib/local/runtime.js';
import { RUNTIME_LOCK_HEARTBEAT_MS, RUNTIME_LOCK_TABLE } from '../../lib/local/runtime-lock.js';
import { deleteTables } from '../../lib/local/tables.js';
import { localClient } from '../../lib/stores/client.js';
import { defaultTableNames } from '../../lib/tables.js';
import { waitFor } from '../sdk/harness.js';
import { hangingProxy } from '../proxy.js';

const admin = localClient(inject('ddbEndpoint'));
const prefix = `stop-${randomUUID().slice(0, 8)}`;
afterAll(async () => {
  await deleteTables(admin, defaultTableNames(prefix));
  admin.destroy();
});

/** The tick's period here: a timer the test fires itself. */
const TICK_MS = 123_457;

describe('a local runtime stopped while a function waits on a request DynamoDB Local never answers', () => {
  it("abandons the function's request at once, releases its lock, and stops without the request's bound firing", async () => {
    // the machine's clock but: request bounds held (never fired), the lock's heartbeat held, the
    // monotonic clock still (the lock stays sure: no confirmation), and the tick fired by the test
    const bounds: { fn: () => void; live: boolean }[] = [];
    let fireTick: (() => void) | undefined;
    const still = systemClock.monotonic();
    const clock: Clock = {
      ...systemClock,
      monotonic: () => still,
      setTimer: (ms, fn, o) => {
        if (ms === RUNTIME_LOCK_HEARTBEAT_MS) return { cancel: () => undefined };
        if (ms === TICK_MS) {
          fireTick = fn;
          return { cancel: () => void (fireTick = undefined) };
        }
        if (ms !== RUNTIME_REQUEST_MS) return systemClock.setTimer(ms, fn, o);
        const b = { fn, live: true };
        bounds.push(b);
        return { cancel: () => void (b.live = false) };
      },
    };
    // only the functions' requests (DynamoDB's API, not the Streams API the pollers read) are taken and left unanswered
    const proxy = await hangingProxy(inject('ddbEndpoint'), (head) => /^x-amz-target: DynamoDB_20120810\./im.test(head));
    let ticked: 'running' | 'ended' | undefined;
    let stopped: string | undefined;
    const rt = await startLocalRuntime({
      endpoint: proxy.endpoint, prefix, dir: mkdtempSync(join(tmpdir(), 'conclave-stop-')), tickEveryMs: TICK_MS, logLevel: 'SILENT', push: false, clock,
      intercept: async (name, event, invoke) => {
        if (name !== 'coordinator') return invoke(event);
        ticked = 'running';
        try {
          return await invoke(event);
        } finally {
          ticked = 'ended';
        }
      },
    });
    try {
      proxy.hang();
      fireTick!();
      await waitFor("the tick's first request taken and left unanswered", () => proxy.hung() > 0);
      proxy.pass(); // DynamoDB Local answers again; the request taken stays unanswered
      expect(ticked).toBe('running');
      void rt.stop().then(
        () => (stopped = 'stopped'),
        (e: unknown) => (stopped = (e as Error).message),
      );
      // before: the stop waited on the tick, the tick on its request, the request on its bound (held
      // here: the stalled request stays unanswered, and its connection open, until the client gives it up)
      await waitFor('the stop, with the bounds never fired', () => stopped);
      expect(stopped).toBe('stopped');
      expect(ticked).toBe('ended');
      // the request was abandoned, not answered: no bound fired, and the one the proxy took was never passed on
      expect(bounds.length).toBeGreaterThan(0);
      expect(proxy.hung()).toBe(1);
      await waitFor('the stalled request given up by the client', () => proxy.abandoned() === 1);
      // what it holds, released: the lock's delete went through (DynamoDB Local answers it)
      const lock = await admin.send(new GetItemCommand({ TableName: RUNTIME_LOCK_TABLE, Key: { prefix: { S: prefix } }, ConsistentRead: true }));
      expect(lock.Item).toBeUndefined();
    } finally {
      proxy.pass();
      if (stopped === undefined) {
        // (a stop still waiting: its bounds run out, so that it ends)
        for (const b of bounds.filter((x) => x.live)) (b.live = false), b.fn();
        await rt.stop().catch(() => undefined);
      }
      await proxy.close();
    }
  });
});
