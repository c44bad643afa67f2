/**
 * The demo worker's own application server (lib/local/demo/worker.ts, HTTP_PORT) facing a client
 * that connects and says nothing. Found by a review (2026-12-01): it ran on node:http's defaults, so
 * such a client held a connection for a minute or more (headersTimeout 60 s, requestTimeout 300 s,
 * checked every 30 s; no idle timeout) and any number of them could be open, while serveHealth
 * beside it was already bounded. The worker is spawned as `npm start` runs it, with a probe
 * (http-server-probe.mjs) that prints the limits of each server as node:http publishes it.
 */
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { portToBindLater } from '../../lib/local/dynamodb-local.js';
import { WorkerProcess } from '../../lib/local/worker-process.js';
import { testTables, type TestTables } from '../support.js';
import { waitFor } from '../sdk/harness.js';

const PROBE = fileURLToPath(new URL('./http-server-probe.mjs', import.meta.url));
type Limits = { headersTimeout: number; requestTimeout: number; keepAliveTimeout: number; timeout: number; maxConnections: number | null; connectionsCheckingInterval: number };

describe('the demo worker application server, facing a client that says nothing', () => {
  let t: TestTables;
  beforeAll(async () => {
    t = await testTables('demo-app');
  });
  afterAll(() => t?.drop());

  it('is bounded as serveHealth is (a request within 5 s, idle 5 s, at most 256 connections), and closes a silent connection', async () => {
    const taken = new Set<number>();
    const port = await portToBindLater(taken);
    const w = new WorkerProcess(
      { identity: 'app', lease: `app-${randomUUID().slice(0, 8)}`, emulationVersion: '1.30.0', binaryVersion: '1.30.0' },
      {
        endpoint: inject('ddbEndpoint'),
        tablePrefix: t.names.leases.replace(/-leases$/, ''),
        extra: { MODE: 'NoCoordination', HTTP_PORT: String(port), NODE_OPTIONS: `${process.env['NODE_OPTIONS'] ?? ''} --import ${PROBE}`.trim() },
      },
    );
    try {
      await waitFor('the worker ready (its application listening), or exited', () => w.events.some((e) => e.event === 'ready') || !w.alive);
      expect(w.alive, w.stderrTail).toBe(true);
      expect([200, 503]).toContain((await fetch(`http://127.0.0.1:${port}/work`)).status);
      const probed = await waitFor('the probe to print the application server', () => (w.events as unknown as { event: string; port?: number; limits?: Limits }[]).find((e) => e.event === 'httpServer' && e.port === port));
      // before the fix, node:http's defaults: 60 000, 300 000, 5 000, 0 (never), null (unbounded), 30 000
      expect(probed.limits).toEqual({ headersTimeout: 5_000, requestTimeout: 5_000, keepAliveTimeout: 5_000, timeout: 5_000, maxConnections: 256, connectionsCheckingInterval: 1_000 });

      // a client that connects and sends nothing is closed by the server, unanswered (waitFor is a hang guard, not a budget)
      let got = '';
      let closed = false;
      const silent = connect(port, '127.0.0.1');
      silent.on('data', (d) => (got += d)).on('error', () => undefined).on('close', () => (closed = true));
      await waitFor('the server to close the silent connection', () => closed);
      expect(got).not.toMatch(/200 OK/);
    } finally {
      await w.stop();
    }
  });

  it('exits gracefully: stops taking connections, and answers a request under way with 503, Retry-After and Connection: close', async () => {
    // found 2026-12-02: the worker exited with closeAllConnections(), closing connections that held a
    // request unanswered; behind HAProxy each became a retry (back to the exiting worker, the only one
    // routed to until the new leader's check) or a 502
    const port = await portToBindLater(new Set());
    const w = new WorkerProcess(
      { identity: 'app', lease: `app-${randomUUID().slice(0, 8)}`, emulationVersion: '1.30.0', binaryVersion: '1.30.0' },
      { endpoint: inject('ddbEndpoint'), tablePrefix: t.names.leases.replace(/-leases$/, ''), extra: { MODE: 'NoCoordination', HTTP_PORT: String(port) } },
    );
    try {
      await waitFor('the worker ready (its application listening), or exited', () => w.events.some((e) => e.event === 'ready') || !w.alive);
      expect(w.alive, w.stderrTail).toBe(true);
      // a request under way: its headers begun, not finished
      let got = '';
      let closed = false;
      const held = connect(port, '127.0.0.1');
      held.on('data', (d) => (got += d)).on('error', () => undefined).on('close', () => (closed = true));
      await new Promise<void>((r) => held.write('GET /work HTTP/1.1\r\nHost: app\r\n', () => r()));
      w.child.kill('SIGTERM');
      // the worker has stopped taking connections: a new one is refused
      const refused = () => new Promise<boolean>((r) => connect(port, '127.0.0.1').on('connect', function (this: import('node:net').Socket) { this.destroy(); r(false); }).on('error', () => r(true)));
      await waitFor('the application to stop listening', refused);
      expect(closed, 'the connection holding a request was closed unanswered').toBe(false);
      held.write('\r\n');
      await waitFor('the answer and the connection closed', () => closed);
      expect(got).toMatch(/^HTTP\/1\.1 503 /);
      expect(got).toMatch(/\r\nRetry-After: 1\r\n/i);
      expect(got).toMatch(/\r\nConnection: close\r\n/i);
      expect(await w.exited).toBe(0);
    } finally {
      await w.stop();
    }
  });
});
