/**
 * One local runtime per DynamoDB Local and table prefix. A second beside the first would poll the
 * same streams: each record handled twice and each event published twice (into the same
 * events.jsonl, if they share the folder), the ticks doubled, and one set of checkpoints moved on
 * by both. So a runtime on an endpoint holds a lock file for its endpoint and prefix while it runs,
 * and a start that finds it held by a live process is refused, naming that process. The lock is in
 * the machine's temp folder, not the events folder: two runtimes on other folders are as much two.
 * One left by a process that is gone (killed, or exited without stopping) is taken over.
 */
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { breakStale, pidOf, tryLock, unlock } from './lock-file.js';
import { endpointKey } from './stream-checkpoints.js';

/**
 * The lock file of local mode on `endpoint` (by its endpointKey: one DynamoDB Local however its
 * loopback address is spelled) with table prefix `prefix`: `conclave-local-<hash>.lock` in the
 * temp folder.
 */
export const runtimeLockFile = (endpoint: string, prefix: string): string =>
  join(tmpdir(), `conclave-local-${createHash('sha256').update(`${endpointKey(endpoint)}\n${prefix}`).digest('hex').slice(0, 16)}.lock`);

/** The tokens of the runtime locks this process holds: a lock naming this pid but none of them is an earlier process's. */
const held = new Set<string>();

/** A runtime lock held: let go by `release()` (at the runtime's stop). */
export interface RuntimeLock {
  readonly file: string;
  release(): void;
}

/**
 * Takes the lock of local mode on `endpoint` with `prefix`, or throws naming the live process that
 * holds it and the fix. A lock whose process is gone is taken over.
 */
export function lockRuntime(endpoint: string, prefix: string): RuntimeLock {
  const file = runtimeLockFile(endpoint, prefix);
  for (;;) {
    const got = tryLock(file, (token) => held.has(token), `endpoint=${endpointKey(endpoint)} prefix=${prefix}`);
    if (got.held) {
      held.add(got.token);
      return {
        file,
        release: () => {
          held.delete(got.token);
          unlock(file, got.token);
        },
      };
    }
    if (got.holder === undefined) continue; // let go since: tried again at once
    if (got.stale) {
      breakStale(file, got.holder);
      continue;
    }
    const pid = pidOf(got.holder);
    throw new Error(
      `local mode already runs on the DynamoDB Local at ${endpoint} with table prefix ${prefix}: process ${pid} (lock ${file}). ` +
        'A second would handle every stream record and publish every event again: stop that one first (Ctrl-C), or choose another table prefix (conclave-local: --table-prefix; startLocalConclave: tablePrefix); ' +
        `if process ${pid} is no local mode, delete the lock file`,
    );
  }
}
