/**
 * A local runtime whose start fails part-way stops every part it had started, in reverse order,
 * and reports the original error: nothing keeps the process alive or holds a port (the bus's and
 * the broker's servers, the broker's process, DynamoDB Local's Java). Counted as the listening
 * servers and child processes this process holds before and after.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { startLocalRuntime, type LocalRuntimeOptions } from '../../lib/local/runtime.js';
import { deleteTables } from '../../lib/local/tables.js';
import { localClient } from '../../lib/stores/client.js';
import { defaultTableNames } from '../../lib/tables.js';
import { startLocalConclave } from '../../lib/testing/index.js';
import { waitFor } from '../sdk/harness.js';

/** Listening servers and child processes this process holds now. */
const held = () => {
  const r = process.getActiveResourcesInfo();
  return { servers: r.filter((x) => x === 'TCPServerWrap').length, processes: r.filter((x) => x === 'ProcessWrap').length };
};

/** Once this process holds no more servers and child processes than `before` (a closed handle leaves the list a loop turn after its close). */
const backTo = (before: ReturnType<typeof held>) =>
  waitFor(`the parts' servers and processes gone (${JSON.stringify(before)} before, ${JSON.stringify(held())} now)`, () => {
    const now = held();
    return now.servers <= before.servers && now.processes <= before.processes;
  });

const failing = (o: Partial<LocalRuntimeOptions>): LocalRuntimeOptions => ({
  dir: mkdtempSync(join(tmpdir(), 'conclave-failed-start-')),
  tickEveryMs: 600_000,
  logLevel: 'SILENT',
  ...o,
});

describe('startLocalRuntime that fails part-way', () => {
  it.each(['in-process', 'own-process'] as const)('after the bus and the push broker (%s) started: both are stopped, and the original error is thrown', async (pushBroker) => {
    const prefix = `fs-${randomUUID().slice(0, 8)}`;
    const before = held();
    let partsUp: ReturnType<typeof held> | undefined;
    try {
      await expect(
        startLocalRuntime(
          failing({
            endpoint: inject('ddbEndpoint'),
            prefix,
            pushBroker,
            decorate: () => {
              partsUp = held();
              throw new Error('decorate failed (test)');
            },
          }),
        ),
      ).rejects.toThrow(/^decorate failed \(test\)$/);
      // the parts were up when it failed: the bus's server and the broker's (or its process)
      expect(partsUp!.servers + partsUp!.processes).toBeGreaterThan(before.servers + before.processes);
      await backTo(before);
    } finally {
      const client = localClient(inject('ddbEndpoint'));
      await deleteTables(client, defaultTableNames(prefix));
      client.destroy();
    }
  });

  it('after it started DynamoDB Local (its tables could not be made): Java is stopped, and the original error is thrown', async () => {
    const before = held();
    // a name DynamoDB refuses: CreateTable fails once Java answers
    await expect(startLocalRuntime(failing({ prefix: 'not a table name!' }))).rejects.toThrow(/TableName|table name|Invalid/i);
    await backTo(before);
  });

  it('an endpoint nothing listens on: the error names the endpoint and the fix', async () => {
    const closed = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    const endpoint = `http://127.0.0.1:${closed}`;
    const e = await startLocalConclave({ endpoint, push: false, logLevel: 'SILENT' }).then(
      () => undefined,
      (x: unknown) => x as Error,
    );
    expect(e?.message).toContain(endpoint);
    expect(e?.message).toContain('ECONNREFUSED');
    // the fix: DynamoDB Local started there, or no endpoint (one of its own is started)
    expect(e?.message).toMatch(/leave .*endpoint.* out/);
  });

  it('an events folder that is a file: the error names the option and the fix, before anything starts', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'conclave-events-file-')), 'events');
    writeFileSync(file, '');
    const e = await startLocalConclave({ endpoint: inject('ddbEndpoint'), eventsDir: file, push: false, logLevel: 'SILENT' }).then(
      () => undefined,
      (x: unknown) => x as Error,
    );
    expect(e?.message).toContain(file);
    expect(e?.message).toContain('eventsDir (conclave-local: --events-dir)');
    expect(e?.message).toMatch(/name a folder/);
  });
});
