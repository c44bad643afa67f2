/**
 * The local push broker in a process of its own (lib/local/push-broker-process.ts), as the bench
 * runs it: the same broker behind the same PushBroker interface. A worker's wake (the leader's,
 * after its hand-over write) reaches another worker's channel through it, the functions' HTTP
 * publishes do too, its counts reach the parent, an outage and a restore are carried out there, and
 * stop() ends the process. Outcomes, never durations.
 */
import { randomUUID } from 'node:crypto';
import { IoTDataPlaneClient } from '@aws-sdk/client-iot-data-plane';
import { afterEach, describe, expect, it } from 'vitest';
import { iotWaker } from '../../lib/functions/wake.js';
import { startPushBrokerProcess } from '../../lib/local/push-broker-process.js';
import type { PushBroker } from '../../lib/local/push-broker.js';
import type { Wake } from '../../lib/schemas/push.js';
import { PushChannel } from '../../lib/sdk/push-channel.js';
import { LOCAL_CREDENTIALS } from '../../lib/stores/client.js';
import { defaultTableNames } from '../../lib/tables.js';
import { waitFor } from '../sdk/harness.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function broker(): Promise<PushBroker> {
  const b = await startPushBrokerProcess();
  cleanups.push(() => b.stop());
  return b;
}

function channel(b: PushBroker, prefix: string, errors: Error[] = []): PushChannel {
  const ch = new PushChannel({ endpoint: b.wsEndpoint, tables: prefix, reconnectFirstMs: 20, onError: (e) => errors.push(e) });
  const stop = new AbortController();
  const run = ch.run(stop.signal);
  cleanups.push(async () => {
    stop.abort();
    await run;
  });
  return ch;
}

describe('push broker in its own process', () => {
  it("a worker's wake (the leader's, after its hand-over write) reaches the other worker's watcher; the counts reach this process", async () => {
    const b = await broker();
    const prefix = `t-${randomUUID().slice(0, 8)}`;
    const leader = channel(b, prefix);
    const successor = channel(b, prefix);
    const seen: Wake[] = [];
    successor.watch('ingest', (w) => w && seen.push(w));
    await Promise.all([leader.ready, successor.ready]);
    await waitFor('both connections counted', () => b.stats().connections === 2);
    leader.wake('ingest', 9);
    await waitFor("the leader's wake", () => seen.length > 0);
    expect(seen).toEqual([{ lease: 'ingest', revision: 9, by: 'worker' }]);
    await waitFor('the publish counted', () => b.stats().workerPublished === 1);
    expect(b.stats()).toMatchObject({ published: 0, connections: 2 });
  });

  it("the functions' publishes (the lease stream's wakes, over HTTP) reach the channels too", async () => {
    const b = await broker();
    const prefix = `t-${randomUUID().slice(0, 8)}`;
    const ch = channel(b, prefix);
    const seen: Wake[] = [];
    ch.watch('ingest', (w) => w && seen.push(w));
    await ch.ready;
    const client = new IoTDataPlaneClient({ endpoint: b.httpEndpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
    cleanups.push(async () => client.destroy());
    await iotWaker(client, defaultTableNames(prefix).leases)('ingest', 4);
    await waitFor("the stream's wake", () => seen.length > 0);
    expect(seen).toEqual([{ lease: 'ingest', revision: 4, by: 'stream' }]);
    await waitFor('the publish counted', () => b.stats().published === 1);
  });

  it('an outage drops the channels (counted at once) and a restore lets them back; stop ends the process', async () => {
    const b = await broker();
    const errors: Error[] = [];
    const ch = channel(b, `t-${randomUUID().slice(0, 8)}`, errors);
    await ch.ready;
    const restore = await b.outage();
    expect(b.stats().connections).toBe(0);
    await waitFor('the channel to notice', () => !ch.healthy());
    await waitFor('a reconnect refused while the broker is down', () => errors.some((e) => /could not connect/.test(e.message)));
    await restore();
    await waitFor('the channel to reconnect', () => ch.healthy());
    await b.stop();
    await waitFor('the channel to lose it', () => !ch.healthy());
    await expect(fetch(`${b.httpEndpoint}/topics/x`, { method: 'POST', body: '{}' })).rejects.toThrow();
  });
});
