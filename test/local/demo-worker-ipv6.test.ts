/**
 * The demo worker (lib/local/demo/worker.ts) on an IPv6 HTTP_HOST: its default `advertise` is
 * `http://<HTTP_HOST>:<HTTP_PORT>`, and an IPv6 literal there must be bracketed (RFC 3986 §3.2.2).
 * Before the fix, HTTP_HOST=::1 gave `http://::1:<port>`, which the elector refuses: the worker
 * exited at start. Spawned as `npm start` and the load-balancer test run it; skipped on a machine
 * without an IPv6 loopback.
 */
import { createServer } from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { portToBindLater } from '../../lib/local/dynamodb-local.js';
import { WorkerProcess } from '../../lib/local/worker-process.js';
import { HEALTH_HEADERS } from '../../lib/sdk/health.js';
import { AdvertisedAddress } from '../../lib/schemas/lease.js';
import { testTables, type TestTables } from '../support.js';
import { waitFor } from '../sdk/harness.js';

/** Whether this machine can listen on the IPv6 loopback (a container may have IPv6 turned off). */
const ipv6Loopback = await new Promise<boolean>((resolve) => {
  const s = createServer();
  s.once('error', () => resolve(false));
  s.listen(0, '::1', () => s.close(() => resolve(true)));
});

describe.skipIf(!ipv6Loopback)('the demo worker on HTTP_HOST=::1', () => {
  let t: TestTables;
  beforeAll(async () => {
    t = await testTables('demo-ipv6');
  });
  afterAll(() => t?.drop());

  it('advertises http://[::1]:<HTTP_PORT>, which its own /leader names and where its application answers', async () => {
    const taken = new Set<number>();
    const [app, health] = [await portToBindLater(taken), await portToBindLater(taken)];
    const w = new WorkerProcess(
      { identity: 'v6', lease: `ipv6-${randomUUID().slice(0, 8)}`, emulationVersion: '1.30.0', binaryVersion: '1.30.0' },
      { endpoint: inject('ddbEndpoint'), tablePrefix: t.names.leases.replace(/-leases$/, ''), extra: { MODE: 'NoCoordination', HTTP_HOST: '::1', HTTP_PORT: String(app), HEALTH_PORT: String(health) } },
    );
    try {
      // before the fix: the elector refused `http://::1:<port>` and the worker exited
      await waitFor('the worker to lead, or exit', () => w.leading || !w.alive);
      expect(w.alive, w.stderrTail).toBe(true);
      const leader = await fetch(`http://[::1]:${health}/leader`);
      expect(leader.status).toBe(200);
      const advertised = leader.headers.get(HEALTH_HEADERS.address);
      expect(advertised).toBe(`http://[::1]:${app}`);
      expect(AdvertisedAddress.safeParse(advertised).success).toBe(true);
      const work = await fetch(`${advertised}/work`);
      expect(work.status).toBe(200);
      expect(await work.json()).toMatchObject({ identity: 'v6' });
    } finally {
      await w.stop();
    }
  });
});
