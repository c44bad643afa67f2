/**
 * A local runtime stopped while the lease stream's function is half way through a record: its
 * requests under way are answered, not abandoned, so the record is finished (its batch answered
 * without a failure, nothing logged as failed). Before, stop() abandoned every request of the
 * runtime's at once, and the record was logged "record failed; reported for retry" with "the local
 * runtime is stopped" (seen in `npm start`'s output on a busy machine, where the last story's
 * records were still being handled as it stopped). The stop's grace is a timer the test holds: the
 * first case never fires it, the second fires it with the function's request still unanswered.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { STOP_GRACE_MS, startLocalRuntime } from '../../lib/local/runtime.js';
import { deleteTables } from '../../lib/local/tables.js';
import { localClient } from '../../lib/stores/client.js';
import { defaultTableNames } from '../../lib/tables.js';
import { waitFor } from '../sdk/harness.js';
import { holdingProxy } from '../proxy.js';
import { heldBoundsClock } from './held-bounds.js';

const admin = localClient(inject('ddbEndpoint'));
const prefixes: string[] = [];
afterAll(async () => {
  for (const p of prefixes) await deleteTables(admin, defaultTableNames(p));
  admin.destroy();
});

/** The requests of DynamoDB's API the functions send (not the Streams API the pollers read). */
const FUNCTION_OPERATIONS = new Set(['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems', 'TransactGetItems', 'BatchGetItem']);

/**
 * A runtime on a proxy that holds the functions' requests on demand, with the stop's grace and
 * the requests' bounds held by the test; a lease row put straight into DynamoDB Local, and the
 * lease stream's invocation of it held at its first request.
 */
async function stoppedHalfWay() {
  const prefix = `stopfin-${randomUUID().slice(0, 8)}`;
  prefixes.push(prefix);
  let graceRunsOut: (() => void) | undefined;
  const clock = heldBoundsClock(
    () => ({ cancel: () => undefined }),
    (ms, fn) => (ms === STOP_GRACE_MS ? ((graceRunsOut = fn), { cancel: () => void (graceRunsOut = undefined) }) : undefined),
  );
  const proxy = await holdingProxy(inject('ddbEndpoint'), (operation) => FUNCTION_OPERATIONS.has(operation));
  const logged: string[] = [];
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => (logged.push(String(chunk)), true));
  /** How each of the lease stream's invocations ended: its answer, or its error. */
  const answers: unknown[] = [];
  const rt = await startLocalRuntime({
    endpoint: proxy.endpoint, prefix, dir: mkdtempSync(join(tmpdir(), 'conclave-stopfin-')), tickEveryMs: 123_457, push: false, clock,
    intercept: async (name, event, invoke) => {
      if (name !== 'leaseStream') return invoke(event);
      try {
        const answer = await invoke(event);
        answers.push(answer);
        return answer;
      } catch (e) {
        answers.push(e);
        throw e;
      }
    },
  });
  proxy.holding(true);
  await admin.send(new PutItemCommand({ TableName: defaultTableNames(prefix).leases, Item: { name: { S: 'half-way' }, leaseTransitions: { N: '0' }, leaseDurationSeconds: { N: '15' }, fencingToken: { N: '1' }, revision: { N: '1' } } }));
  await waitFor("the lease stream's first request for the record held", () => proxy.held() > 0);
  let stopped: string | undefined;
  void rt.stop().then(
    () => (stopped = 'stopped'),
    (e: unknown) => (stopped = (e as Error).message),
  );
  return {
    proxy, logged, answers, rt,
    stopped: () => stopped,
    graceRunsOut: () => graceRunsOut,
    [Symbol.asyncDispose]: async () => {
      stderr.mockRestore();
      proxy.release();
      if (stopped === undefined) {
        graceRunsOut?.();
        await rt.stop().catch(() => undefined);
      }
      await proxy.close();
    },
  };
}

describe('a local runtime stopped while a function is half way through a record', () => {
  it('lets the invocation finish: the record is handled, its batch answered without a failure, nothing logged as failed', async () => {
    await using s = await stoppedHalfWay();
    // the stop waits on the stream pollers, which wait on the invocation, which waits on its request
    // (before: no grace, and the invocation failed as the stop began)
    await waitFor('the stop under way, its grace armed', () => s.graceRunsOut() ?? s.answers.length);
    expect(s.answers).toEqual([]);
    expect(s.stopped()).toBeUndefined();
    s.proxy.release(); // DynamoDB Local answers the held requests, and any after
    await waitFor('the stop', () => s.stopped());
    expect(s.stopped()).toBe('stopped');
    // before: the request abandoned as the stop began, the record failed and logged so
    expect(s.answers).toEqual([{ batchItemFailures: [] }]);
    expect(s.logged.filter((l) => l.includes('"ERROR"'))).toEqual([]);
    expect(s.graceRunsOut()).toBeUndefined(); // (the grace cancelled)
  });

  it('abandons the requests still unanswered when the grace runs out, and stops', async () => {
    await using s = await stoppedHalfWay();
    await waitFor('the stop under way, its grace armed', () => s.graceRunsOut());
    s.graceRunsOut()!();
    s.proxy.holding(false); // the requests held stay unanswered; the stop's own (the lock's delete) pass
    await waitFor('the stop', () => s.stopped());
    expect(s.stopped()).toBe('stopped');
    // the record reported for retry (read again at the next start: its batch, of one, failed whole),
    // its request abandoned, never answered
    expect(s.answers).toHaveLength(1);
    expect(s.answers[0]).toMatchObject({ name: 'FullBatchFailureError', recordErrors: [expect.objectContaining({ message: 'the local runtime is stopped' })] });
    expect(s.proxy.held()).toBeGreaterThan(0);
  });
});
