/**
 * Local mode's push broker (lib/local/push-broker.ts) stands in for IoT Core: the unmodified
 * IoTDataPlaneClient publishes through its HTTP API, real MQTT clients (mqtt.js, and the SDK's
 * PushChannel) receive over WebSocket, it counts what IoT Core bills, and an outage drops and
 * refuses connections until restored. On loopback, on the real clock: outcomes, never durations.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IoTDataPlaneClient, PublishCommand } from '@aws-sdk/client-iot-data-plane';
import { connectAsync, type MqttClient } from 'mqtt';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { WebSocket } from 'ws';
import { iotWaker } from '../../lib/functions/wake.js';
import { startPushBroker, type PushBroker } from '../../lib/local/push-broker.js';
import { startLocalRuntime, type LocalRuntime, type LocalRuntimeOptions } from '../../lib/local/runtime.js';
import type { TableNames } from '../../lib/schemas/config.js';
import { pushSubscription, pushTopic, type Wake } from '../../lib/schemas/push.js';
import { PushChannel } from '../../lib/sdk/push-channel.js';
import { LOCAL_CREDENTIALS } from '../../lib/stores/client.js';
import { defaultTableNames } from '../../lib/tables.js';
import { Log, startElector, waitFor } from '../sdk/harness.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function broker(): Promise<PushBroker> {
  const b = await startPushBroker();
  cleanups.push(() => b.stop());
  return b;
}

function dataPlane(b: PushBroker, maxAttempts?: number): IoTDataPlaneClient {
  const c = new IoTDataPlaneClient({ endpoint: b.httpEndpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS, ...(maxAttempts ? { maxAttempts } : {}) });
  cleanups.push(async () => c.destroy());
  return c;
}

/** A plain MQTT client (as a worker would connect, with a SigV4-like query string) subscribed to `filter`; collects what it receives. */
async function subscriber(b: PushBroker, filter: string): Promise<{ mqtt: MqttClient; got: { topic: string; payload: string }[] }> {
  const mqtt = await connectAsync(`${b.wsEndpoint}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=ignored`, { clientId: `test-${randomUUID()}`, protocolVersion: 4, reconnectPeriod: 0 }, false);
  cleanups.push(() => mqtt.endAsync(true));
  const got: { topic: string; payload: string }[] = [];
  mqtt.on('message', (topic, payload) => got.push({ topic, payload: payload.toString('utf8') }));
  await mqtt.subscribeAsync(filter, { qos: 1 });
  return { mqtt, got };
}

/** A PushChannel to `endpoint` for the deployment with these tables (a prefix or the names), running until the test ends. */
function channel(endpoint: string, tables: string | TableNames, errors: Error[] = []): { ch: PushChannel; run: Promise<void> } {
  const ch = new PushChannel({ endpoint, tables, reconnectFirstMs: 20, onError: (e) => errors.push(e) });
  const stop = new AbortController();
  const run = ch.run(stop.signal);
  cleanups.push(async () => {
    stop.abort();
    await run;
  });
  return { ch, run };
}

describe('push broker: IoT Core on loopback', () => {
  // a review (2026-12-06): it answered SUBACK 0x80, which IoT Core (MQTT 3.1.1) never does: it closes the connection
  it('answers a subscription it refuses as IoT Core does, by closing the connection: one past 50 a connection, or one its `subscribable` refuses (a role granted named leases and a process topic)', async () => {
    const b = await startPushBroker({ subscribable: (filter) => !filter.includes('/process/') });
    cleanups.push(() => b.stop());
    const connect = async () => {
      const m = await connectAsync(b.wsEndpoint, { clientId: `test-${randomUUID()}`, protocolVersion: 4, reconnectPeriod: 0 }, false);
      cleanups.push(() => m.endAsync(true));
      return m;
    };
    const full = await connect();
    for (let i = 0; i < 50; i++) await full.subscribeAsync(`conclave/q-leases/lease/l${i}`, { qos: 0 });
    const fullClosed = new Promise<void>((resolve) => full.once('close', () => resolve()));
    await expect(full.subscribeAsync('conclave/q-leases/lease/l50', { qos: 0 })).rejects.toThrow('Connection closed');
    await fullClosed;
    const named = await connect();
    await named.subscribeAsync('conclave/q-leases/#', { qos: 0 });
    const namedClosed = new Promise<void>((resolve) => named.once('close', () => resolve()));
    await expect(named.subscribeAsync('conclave/q-leases/process/p1', { qos: 0 })).rejects.toThrow('Connection closed');
    await namedClosed;
  });

  it('the unmodified IoTDataPlaneClient publishes (POST /topics/{topic}?qos=1) and a subscriber to conclave/<table>/# receives it', async () => {
    const b = await broker();
    const table = `t-${randomUUID().slice(0, 8)}-leases`;
    const sub = await subscriber(b, pushSubscription(table));
    // a lease name that needs encoding twice: in the topic, then in the request path
    const out = await dataPlane(b).send(new PublishCommand({ topic: pushTopic(table, 'reports/nightly 100%'), qos: 1, payload: new TextEncoder().encode('{"lease":"reports/nightly 100%","by":"stream"}') }));
    expect(out.$metadata.httpStatusCode).toBe(200);
    await waitFor('the message', () => sub.got.length > 0);
    expect(sub.got).toEqual([{ topic: pushTopic(table, 'reports/nightly 100%'), payload: '{"lease":"reports/nightly 100%","by":"stream"}' }]);
  });

  it('iotWaker, as the lease stream function calls it, reaches the subscribers of the deployment only', async () => {
    const b = await broker();
    const table = `t-${randomUUID().slice(0, 8)}-leases`;
    const mine = await subscriber(b, pushSubscription(table));
    const other = await subscriber(b, pushSubscription(`other-${table}`));
    await iotWaker(dataPlane(b), table)('ingest', 7);
    await waitFor('the wake', () => mine.got.length > 0);
    expect(JSON.parse(mine.got[0]!.payload)).toEqual({ lease: 'ingest', revision: 7, by: 'stream' } satisfies Wake);
    expect(other.got).toEqual([]);
  });

  it('refuses what IoT Core refuses, with its error names: a wildcard topic, QoS 2', async () => {
    const b = await broker();
    const c = dataPlane(b, 1);
    await expect(c.send(new PublishCommand({ topic: 'conclave/x/#', qos: 1, payload: new Uint8Array() }))).rejects.toMatchObject({ name: 'InvalidRequestException' });
    await expect(c.send(new PublishCommand({ topic: 'conclave/x/y', qos: 2, payload: new Uint8Array() }))).rejects.toMatchObject({ name: 'InvalidRequestException' });
    await expect(c.send(new PublishCommand({ topic: 'a/b/c/d/e/f/g/h/i', qos: 1, payload: new Uint8Array() }))).rejects.toMatchObject({ name: 'InvalidRequestException' });
    expect(b.stats().published).toBe(0);
  });

  it("answers another path with a plain 404, naming what it serves: nothing an AWS SDK takes for an AWS service's error (its port given as DynamoDB's was told \"tables do not exist\")", async () => {
    const b = await broker();
    for (const [method, path] of [['GET', '/things/x/shadow'], ['POST', '/']]) {
      // (POST /: where a DynamoDB client sends its requests)
      const res = await fetch(`${b.httpEndpoint}${path}`, { method, ...(method === 'POST' ? { body: '{"TableName":"conclave-leases"}', headers: { 'x-amz-target': 'DynamoDB_20120810.Scan', 'content-type': 'application/x-amz-json-1.0' } } : {}) });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(res.headers.get('x-amzn-errortype')).toBeNull();
      expect(res.headers.get('x-amzn-requestid')).toBeNull();
      expect(await res.text()).toBe(`Not Found: the local push broker (IoT Core's stand-in) serves POST /topics/{topic} (IoT Core's Publish) and WebSocket /mqtt, not ${method} ${path}; DynamoDB Local is at the other endpoint conclave-local prints (CONCLAVE_ENDPOINT)\n`);
    }
    expect(b.stats().published).toBe(0);
  });

  it('a worker-side MQTT publish reaches the other subscribers; stats count publishes, deliveries and connections', async () => {
    const b = await broker();
    const table = `t-${randomUUID().slice(0, 8)}-leases`;
    const a = await subscriber(b, pushSubscription(table));
    const c = await subscriber(b, pushSubscription(table));
    expect(b.stats().connections).toBe(2);
    await a.mqtt.publishAsync(pushTopic(table, 'ingest'), '{"lease":"ingest","by":"worker"}', { qos: 0 });
    await waitFor('both deliveries', () => a.got.length > 0 && c.got.length > 0); // MQTT 3.1.1: the publisher's own subscription gets it too, as on IoT Core
    await iotWaker(dataPlane(b), table)('ingest', 2);
    await waitFor('the second message at both', () => a.got.length > 1 && c.got.length > 1);
    expect(c.got.map((m) => JSON.parse(m.payload) as Wake)).toEqual([
      { lease: 'ingest', by: 'worker' },
      { lease: 'ingest', revision: 2, by: 'stream' },
    ]);
    const s = b.stats();
    expect(s).toMatchObject({ published: 1, workerPublished: 1, delivered: 4, connections: 2 });
    expect(s.connectionMs).toBeGreaterThanOrEqual(0);
    await a.mqtt.endAsync();
    await waitFor('the closed connection', () => b.stats().connections === 1);
    // connection time only grows: the closed connection's is kept
    expect(b.stats().connectionMs).toBeGreaterThanOrEqual(s.connectionMs);
  });

  it('an outage drops every connection and refuses new ones and publishes; restored, it accepts them again', async () => {
    const b = await broker();
    const table = `t-${randomUUID().slice(0, 8)}-leases`;
    const sub = await subscriber(b, pushSubscription(table));
    const closed = new Promise<void>((resolve) => sub.mqtt.once('close', () => resolve()));
    const restore = await b.outage();
    expect(b.stats().connections).toBe(0);
    await closed;
    // allowRetries false: reject when the connection closes before CONNACK (PushChannel connects so)
    await expect(connectAsync(b.wsEndpoint, { clientId: 'refused', reconnectPeriod: 0 }, false)).rejects.toThrow();
    await expect(iotWaker(dataPlane(b, 1), table)('ingest', 1)).rejects.toMatchObject({ name: 'ServiceUnavailableException' });
    await restore();
    const again = await subscriber(b, pushSubscription(table));
    await iotWaker(dataPlane(b), table)('ingest', 3);
    await waitFor('the wake after the restore', () => again.got.length > 0);
    expect(b.stats()).toMatchObject({ published: 1, connections: 1 });
  });

  it('an outage that keeps the HTTP API up: publishes are accepted and reach nobody', async () => {
    const b = await broker();
    const table = `t-${randomUUID().slice(0, 8)}-leases`;
    await subscriber(b, pushSubscription(table));
    await b.outage({ publishes: true });
    await iotWaker(dataPlane(b), table)('ingest', 1);
    expect(b.stats()).toMatchObject({ published: 1, delivered: 0, connections: 0 });
  });

  // an attacker review (2026-12-07): a web page's cross-site text/plain POST (no preflight) was published, retained too
  it("refuses a web page's requests: another origin's POST and WebSocket, and a name other than loopback's (DNS rebinding); its own origin and Node's clients are served", async () => {
    const b = await broker();
    const table = `t-${randomUUID().slice(0, 8)}-leases`;
    const sub = await subscriber(b, pushSubscription(table));
    const port = new URL(b.httpEndpoint).port;
    const path = `/topics/${encodeURIComponent(pushTopic(table, 'ingest'))}?qos=1&retain=true`;
    /** A POST as a browser sends a form's or fetch's text/plain body, with the headers it names. */
    const post = (headers: Record<string, string>) =>
      new Promise<{ status: number; type: string | undefined }>((resolve, reject) => {
        const req = request(`${b.httpEndpoint}${path}`, { method: 'POST', headers: { 'content-type': 'text/plain', ...headers } }, (res) => {
          res.resume();
          resolve({ status: res.statusCode!, type: res.headers['x-amzn-errortype'] as string | undefined });
        });
        req.on('error', reject);
        req.end('{"lease":"ingest","by":"stream"}');
      });
    // another site's page, a sandboxed one, another local port's page; a page whose name was rebound to 127.0.0.1
    const forged: Record<string, string>[] = [{ origin: 'https://evil.example' }, { origin: 'null' }, { origin: 'http://localhost:3000' }, { host: `evil.example:${port}` }, { host: `evil.example:${port}`, origin: `http://evil.example:${port}` }];
    for (const headers of forged) expect(await post(headers), JSON.stringify(headers)).toEqual({ status: 403, type: 'ForbiddenException' });
    expect(b.stats().published).toBe(0);
    /** Whether a WebSocket opened with these options is let in. */
    const opens = (url: string, o: { origin?: string; headers?: Record<string, string> }) =>
      new Promise<boolean | number>((resolve) => {
        const ws = new WebSocket(url, 'mqtt', o);
        ws.once('open', () => (ws.terminate(), resolve(true)));
        ws.once('unexpected-response', (_req, res) => (res.resume(), resolve(res.statusCode!)));
        ws.once('error', () => resolve(false));
      });
    expect(await opens(b.wsEndpoint, { origin: 'https://evil.example' })).toBe(403);
    expect(await opens(b.wsEndpoint, { headers: { host: `evil.example:${port}` } })).toBe(403);
    expect(b.stats().connections).toBe(1); // the subscriber's alone
    // the broker's own origin, and Node's clients (no Origin): served
    expect(await opens(b.wsEndpoint, { origin: `http://127.0.0.1:${port}` })).toBe(true);
    expect(await opens(b.wsEndpoint, { headers: { host: `localhost:${port}` } })).toBe(true);
    expect(await post({ origin: `http://127.0.0.1:${port}` })).toEqual({ status: 200, type: undefined });
    await iotWaker(dataPlane(b), table)('ingest', 4);
    await waitFor('the two publishes served', () => sub.got.length === 2);
    expect(b.stats().published).toBe(2);
  });
});

describe('PushChannel against the local broker', () => {
  it('connects (ready, live), gets a wake published over HTTP, goes down with an outage (watchers told) and comes back by itself', async () => {
    const b = await broker();
    const prefix = `t-${randomUUID().slice(0, 8)}`;
    const table = defaultTableNames(prefix).leases;
    const errors: Error[] = [];
    const { ch } = channel(b.wsEndpoint, prefix, errors);
    const seen: (Wake | undefined)[] = [];
    ch.watch('ingest', (w) => seen.push(w));
    await ch.ready;
    expect(ch.healthy()).toBe(true);
    const liveCalls = seen.length; // going live tells the watchers (undefined): a wake may have been missed before

    await iotWaker(dataPlane(b), table)('ingest', 5);
    await iotWaker(dataPlane(b), table)('another-lease', 1); // not watched: not passed on
    await waitFor('the wake', () => seen.some((w) => w !== undefined));
    expect(seen.slice(liveCalls)).toEqual([{ lease: 'ingest', revision: 5, by: 'stream' }]);

    const before = seen.length;
    const restore = await b.outage();
    await waitFor('the channel to notice', () => !ch.healthy());
    expect(seen.slice(before)).toEqual([undefined]);
    await waitFor('a reconnect refused (and reported) while the broker is down', () => errors.some((e) => /could not connect/.test(e.message)));
    expect(ch.healthy()).toBe(false);

    await restore();
    await waitFor('the channel to reconnect', () => ch.healthy());
    expect(seen.at(-1)).toBeUndefined(); // back up: watchers told again
    expect(ch.stats.connections).toBe(2);
    await iotWaker(dataPlane(b), table)('ingest', 6);
    await waitFor('a wake after reconnecting', () => seen.at(-1)?.revision === 6);
    // every message that came was a wake
    expect(errors.filter((e) => /not a wake/.test(e.message))).toEqual([]);
  });

  it("a channel's wake() (a worker after a hand-off) reaches the other channels' watchers, not over HTTP", async () => {
    const b = await broker();
    const prefix = `t-${randomUUID().slice(0, 8)}`;
    const sender = channel(b.wsEndpoint, prefix).ch;
    const receiver = channel(b.wsEndpoint, prefix).ch;
    const seen: Wake[] = [];
    receiver.watch('ingest', (w) => w && seen.push(w));
    await Promise.all([sender.ready, receiver.ready]);
    sender.wake('ingest', 9);
    await waitFor('the worker wake', () => seen.length > 0);
    expect(seen).toEqual([{ lease: 'ingest', revision: 9, by: 'worker' }]);
    expect(b.stats()).toMatchObject({ published: 0, workerPublished: 1 });
  });
});

describe('the local runtime with push', () => {
  async function runtime(extra: Partial<LocalRuntimeOptions> = {}): Promise<LocalRuntime> {
    const rt = await startLocalRuntime({ endpoint: inject('ddbEndpoint'), prefix: `push-${randomUUID().slice(0, 8)}`, dir: mkdtempSync(join(tmpdir(), 'conclave-push-')), tickEveryMs: 600_000, logLevel: 'SILENT', ...extra });
    cleanups.push(() => rt.stop());
    return rt;
  }

  it('serves a broker (pushEndpoint), and the lease stream function wakes a PushChannel when a lease changes', async () => {
    const rt = await runtime();
    expect(rt.pushEndpoint).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/mqtt$/);
    const { ch } = channel(rt.pushEndpoint!, rt.tables);
    const seen: Wake[] = [];
    ch.watch('reports', (w) => w && seen.push(w));
    await ch.ready;

    const log = new Log();
    const t = { client: rt.client, names: rt.tables, drop: async () => undefined };
    const e = startElector(t, log, 'solo', { leaseName: 'reports', mode: 'NoCoordination' });
    cleanups.push(() => e.stop());
    await waitFor('the wake of the acquisition', () => seen.length > 0);
    expect(seen[0]).toMatchObject({ lease: 'reports', by: 'stream', revision: expect.any(Number) });
    expect(rt.pushBroker!.stats().published).toBeGreaterThan(0);
  });

  it('push: false runs without a broker', async () => {
    const rt = await runtime({ push: false });
    expect(rt.pushEndpoint).toBeUndefined();
    expect(rt.pushBroker).toBeUndefined();
    expect(rt.deps.wake).toBeUndefined();
  });
});
