/**
 * A coordinator tick that fails because the runtime's lock was lost (taken over, deleted with its
 * table, gone with its DynamoDB Local). Before (a review, 2026-12-07) the tick's failure was told
 * as any other: an ERROR "the coordinator tick failed (Error: the lock … was …); tried again at its
 * backoff, …" while the process was stopping, and nothing is tried again. The loss is told once, as
 * what it is (onLost); the tick that found it says nothing more.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { systemClock, type Clock } from '../../lib/clock.js';
import { RUNTIME_LOCK_HEARTBEAT_MS, RUNTIME_LOCK_STALE_MS, RUNTIME_LOCK_TABLE } from '../../lib/local/runtime-lock.js';
import { startLocalRuntime } from '../../lib/local/runtime.js';
import { deleteTables } from '../../lib/local/tables.js';
import { localClient } from '../../lib/stores/client.js';
import { defaultTableNames } from '../../lib/tables.js';
import { waitFor } from '../sdk/harness.js';

const admin = localClient(inject('ddbEndpoint'));
const prefix = `tick-lost-${randomUUID().slice(0, 8)}`;
afterAll(async () => {
  await deleteTables(admin, defaultTableNames(prefix));
  admin.destroy();
});

/** The tick's period here: its timer is fired by the test, never by the machine's clock. */
const TICK_MS = 123_457;

describe("a tick that finds the runtime's lock lost", () => {
  it('is not told as a failed tick to be tried again: the loss is told once, by onLost', async () => {
    // paused past the stale time (its monotonic clock jumps), so the tick's invocation confirms the lock
    // first; the heartbeat's and the tick's timers held by the test
    let paused = 0;
    const ticks: (() => void)[] = [];
    const clock: Clock = {
      ...systemClock,
      monotonic: () => systemClock.monotonic() + paused,
      setTimer: (ms, fn, o) =>
        ms === TICK_MS ? (ticks.push(fn), { cancel: () => undefined }) : ms === RUNTIME_LOCK_HEARTBEAT_MS ? { cancel: () => undefined } : systemClock.setTimer(ms, fn, o),
    };
    const logged: string[] = [];
    const take = (chunk: string | Uint8Array) => (logged.push(String(chunk)), true);
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation(take);
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(take);
    const told: string[] = [];
    try {
      const rt = await startLocalRuntime({
        endpoint: inject('ddbEndpoint'), prefix, dir: mkdtempSync(join(tmpdir(), 'conclave-tick-lost-')), tickEveryMs: TICK_MS, logLevel: 'WARN', push: false, clock,
        onLost: (line) => told.push(line),
      });
      try {
        paused += RUNTIME_LOCK_STALE_MS + 1_000;
        // another start judged it stale meanwhile and took it over
        await admin.send(new PutItemCommand({ TableName: RUNTIME_LOCK_TABLE, Item: marshall({ prefix, owner: randomUUID(), pid: 6161, host: `not-${hostname()}`, endpoint: inject('ddbEndpoint'), startedAt: Date.now(), heartbeatAt: Date.now(), staleAt: Date.now() + RUNTIME_LOCK_STALE_MS, renewals: 0 }) }));
        expect(ticks).toHaveLength(1);
        ticks.shift()!();
        await waitFor('the loss told', () => told.length > 0);
        expect(told).toEqual([expect.stringMatching(new RegExp(`^the lock of local mode on table prefix ${prefix} was taken over by process 6161 on not-`))]);
      } finally {
        await rt.stop(); // waits for the tick under way
      }
    } finally {
      stdout.mockRestore();
      stderr.mockRestore();
    }
    // before: "the coordinator tick failed (Error: the lock of local mode … was taken over …); tried again at its backoff, …"
    expect(logged.filter((l) => l.includes('the coordinator tick'))).toEqual([]);
  });
});
