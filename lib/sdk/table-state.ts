/**
 * A call that met a missing table (getLeader, withLease, listIdentities) reads again while the
 * table is being created (readWhileCreating); how a table is looked at is lib/stores/table-state.ts
 * (the CLI's too). Apart from options.ts, which the push entry point imports, so that it keeps no
 * DynamoDB client at run time.
 */
import { Nap, type Clock } from '../clock.js';
import type { TableWait } from '../table-wait.js';
import { raced } from './bounded-client.js';
import { retryDelayMs, START_RETRY_MS } from './faults.js';

export { tableState } from '../stores/table-state.js';

/**
 * `read()` until it answers, for a call that is no long-lived object (getLeader, withLease, listIdentities): DynamoDB's
 * missing table is looked at (`tables`, the call's TableWait) and, while one is being created, read
 * again after the start-ups' backoff (retryDelayMs from START_RETRY_MS) on `clock`, each try a new
 * read judged as of its own moment; any other error, and a missing table given up on, is thrown as
 * `fail` makes it. `signal` ends the call, at once or as it aborts, with its reason: a read or look
 * in flight abandoned (it gives up at its bound).
 */
export async function readWhileCreating<T>(read: () => Promise<T>, o: { tables: TableWait; clock: Pick<Clock, 'setTimer' | 'random'>; signal?: AbortSignal | undefined; fail: (e: unknown) => unknown }): Promise<T> {
  const { signal } = o;
  signal?.throwIfAborted();
  const until = <R>(p: Promise<R>): Promise<R> => (signal ? raced(p, signal) : p);
  for (let failures = 1; ; failures++) {
    try {
      return await until(read());
    } catch (e) {
      if (signal?.aborted) throw signal.reason;
      if (!(await until(o.tables.waitsFor(e)))) throw o.fail(e);
      await new Nap(o.clock, retryDelayMs(failures, START_RETRY_MS, o.clock.random()), signal).done;
      signal?.throwIfAborted();
    }
  }
}
