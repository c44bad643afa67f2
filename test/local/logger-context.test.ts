/**
 * Two invocations of one function at once in local mode (the delay queue delivers each message as
 * an invocation of its own). In Lambda each runs in an execution environment of its own, one
 * invocation at a time, so the Powertools Logger's context (injectLambdaContext's request id, the
 * keys a record appends) is the invocation's. Before, local mode ran both through one handler and
 * one Logger: each invocation's lines carried the keys and request id of whichever invocation set
 * them last.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { startLocalRuntime } from '../../lib/local/runtime.js';
import { deleteTables } from '../../lib/local/tables.js';
import { localClient } from '../../lib/stores/client.js';
import { defaultTableNames } from '../../lib/tables.js';
import { waitFor } from '../sdk/harness.js';

const admin = localClient(inject('ddbEndpoint'));
const prefix = `logctx-${randomUUID().slice(0, 8)}`;
afterAll(async () => {
  await deleteTables(admin, defaultTableNames(prefix));
  admin.destroy();
});

const LEASES = ['ctx-a', 'ctx-b'];

describe("concurrent local invocations of one function and the Powertools Logger's context", () => {
  it("each invocation's log lines carry its own keys and request id", async () => {
    // both invocations read their lease's row before they log; each read waits until both have begun
    // (each has appended its keys), so the two are surely in flight at once when they log
    const arrived = new Set<string>();
    let bothIn: () => void = () => undefined;
    const together = new Promise<void>((resolve) => (bothIn = resolve));
    const decorate = (d: FunctionDeps): FunctionDeps => {
      const leases = d.coordinator.leases;
      const read: typeof leases.read = async (name, ...rest) => {
        if (LEASES.includes(name)) {
          arrived.add(name);
          if (arrived.size === LEASES.length) bothIn();
          await together;
        }
        return leases.read(name, ...rest);
      };
      return { ...d, coordinator: { ...d.coordinator, leases: Object.assign(Object.create(leases) as typeof leases, { read }) } };
    };
    // the functions' log (Powertools JSON lines on stdout)
    const lines: Record<string, unknown>[] = [];
    const take = (chunk: string | Uint8Array) => {
      for (const l of String(chunk).split('\n')) {
        if (!l.startsWith('{')) continue;
        try {
          lines.push(JSON.parse(l) as Record<string, unknown>);
        } catch {
          // not a log line of the functions'
        }
      }
      return true;
    };
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation(take);
    /** The message each lease's invocation carried, by lease. */
    const messages = new Map<string, string>();
    const rt = await startLocalRuntime({
      endpoint: inject('ddbEndpoint'), prefix, dir: mkdtempSync(join(tmpdir(), 'conclave-logctx-')), tickEveryMs: 600_000, logLevel: 'INFO', push: false, decorate,
      intercept: (name, event, invoke) => {
        if (name === 'electionTimer') {
          for (const r of (event as { Records: { messageId: string; body: string }[] }).Records) messages.set((JSON.parse(r.body) as { lease: string }).lease, r.messageId);
        }
        return invoke(event);
      },
    });
    try {
      const now = Date.now();
      // rows that are not there: each invocation logs "timer for a lease whose row is gone"
      for (const lease of LEASES) await rt.deps.timer.schedule({ lease, electionId: `e-${lease}`, deadline: now }, 0);
      const gone = () => lines.filter((l) => l['message'] === 'timer for a lease whose row is gone: nothing to finish');
      await waitFor('a line from each invocation', () => gone().length >= LEASES.length);
      const byLease = new Map(gone().map((l) => [l['lease'], l]));
      expect([...byLease.keys()].sort()).toEqual(LEASES);
      for (const lease of LEASES) {
        // the record key the invocation appended: its own message's id, not the other's
        expect({ lease, record: byLease.get(lease)!['record'] }).toEqual({ lease, record: messages.get(lease) });
      }
      // injectLambdaContext's request id: one per invocation
      const ids = LEASES.map((lease) => byLease.get(lease)!['function_request_id']);
      expect(ids.every((id) => typeof id === 'string')).toBe(true);
      expect(new Set(ids).size).toBe(LEASES.length);
    } finally {
      stdout.mockRestore();
      await rt.stop();
    }
  });
});
