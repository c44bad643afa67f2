/**
 * PushChannel against local mode's broker (lib/local/push-broker.ts): a real MQTT connection on
 * loopback. What test/local/push-broker.test.ts does not cover: stopping it at any moment of its
 * start-up, and the URL it signs for IoT Core.
 */
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { createServer as createHttpServer } from 'node:http';
import { IoTDataPlaneClient, PublishCommand } from '@aws-sdk/client-iot-data-plane';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPushBroker, type PushBroker } from '../../lib/local/push-broker.js';
import { hashedPushTopic, plainPushTopic, pushClientIdPrefix, type Wake } from '../../lib/schemas/push.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { awsTime, PushChannel, presignIotUrl } from '../../lib/sdk/push-channel.js';
import { Session } from '../../lib/sdk/session.js';
import { LOCAL_CREDENTIALS, localClient } from '../../lib/stores/client.js';
import { waitFor } from './harness.js';
import { listenOnLoopback } from '../support.js';

let broker: PushBroker;
beforeAll(async () => {
  broker = await startPushBroker();
});
afterAll(async () => {
  await broker.stop();
});

describe('PushChannel', () => {
  // The moments of its start-up, each waited for by what the broker or the channel shows, not by time.
  const moments: { moment: string; reached: (channel: PushChannel) => boolean | Promise<boolean> }[] = [
    { moment: 'as soon as run() is called', reached: () => true },
    { moment: 'a turn of the event loop in: dialling', reached: () => new Promise((resolve) => setImmediate(() => resolve(true))) },
    { moment: 'its WebSocket open at the broker: MQTT connecting or subscribing', reached: () => broker.stats().connections > 0 },
    { moment: 'connected and subscribed', reached: (channel) => channel.healthy() },
  ];
  it.each(moments)('stopped $moment, run() resolves and leaves no connection open', async ({ moment, reached }) => {
    const errors: Error[] = [];
    const channel = new PushChannel({ endpoint: broker.wsEndpoint, tables: 'stop-test', onError: (e) => errors.push(e) });
    const stop = new AbortController();
    const run = channel.run(stop.signal);
    await waitFor(moment, () => reached(channel));
    stop.abort();
    await run;
    expect(channel.healthy()).toBe(false);
    await waitFor('the broker to see no connection', () => broker.stats().connections === 0);
    expect(errors).toEqual([]);
  });

  it('refuses a client id the worker role may not connect with, and an IoT Core endpoint without a client to sign with', () => {
    expect(() => new PushChannel({ endpoint: broker.wsEndpoint, clientId: 'mine-1' })).toThrow(/clientId: must start with "conclave-conclave-leases:"/);
    // the old, unscoped form: the grant no longer allows it
    expect(() => new PushChannel({ endpoint: broker.wsEndpoint, tables: 'acme', clientId: 'conclave-mine-1' })).toThrow(/clientId: must start with "conclave-acme-leases:".*Leave it out/);
    expect(() => new PushChannel({ endpoint: broker.wsEndpoint, tables: 'acme', clientId: 'conclave-acme-leases:' })).toThrow(/clientId: must start with "conclave-acme-leases:" and go on after it/);
    // the form before issue 36: `-` ends no table name, so acme-leases' prefix was also every id of a
    // deployment whose leases table is acme-leases-reports (or acme-leases-eu, …): refused
    expect(() => new PushChannel({ endpoint: broker.wsEndpoint, tables: 'acme', clientId: 'conclave-acme-leases-reports-1' })).toThrow(/clientId: must start with "conclave-acme-leases:"/);
    expect(new PushChannel({ endpoint: broker.wsEndpoint, tables: 'acme', clientId: 'conclave-acme-leases:reports-1' }).options.clientId).toBe('conclave-acme-leases:reports-1');
    expect(new PushChannel({ endpoint: broker.wsEndpoint, tables: 'acme' }).options.clientId).toMatch(/^conclave-acme-leases:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    // no deployment's default id starts with another's prefix, a table whose name extends this one's included
    const ids = ['acme-leases', 'acme-leases-eu', 'acme-leases.eu', 'acme-leases_eu'].map((leases) => new PushChannel({ endpoint: broker.wsEndpoint, tables: { leases } }).options.clientId);
    for (const [i, leases] of ['acme-leases', 'acme-leases-eu', 'acme-leases.eu', 'acme-leases_eu'].entries()) {
      expect(ids.filter((id) => id.startsWith(pushClientIdPrefix(leases)))).toEqual([ids[i]]);
    }
    expect(() => new PushChannel({ endpoint: 'wss://abc123-ats.iot.eu-west-1.amazonaws.com/mqtt' })).toThrow(ValidationError);
    expect(() => new PushChannel({ endpoint: 'wss://abc123-ats.iot.eu-west-1.amazonaws.com/mqtt' })).toThrow(/client: is required for an IoT Core endpoint/);
    expect(() => new PushChannel({ endpoint: 'https://abc123-ats.iot.eu-west-1.amazonaws.com' })).toThrow(/endpoint: must be a ws:\/\/ or wss:\/\/ URL/);
  });

  it("knows IoT Core by its data endpoint's names, an interface VPC endpoint's among them; a custom domain is told with iotCore", () => {
    const client = new DynamoDBClient({ region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
    const iot = (endpoint: string, o: { iotCore?: boolean } = {}) => new PushChannel({ endpoint, client, ...o }).options.iotCore;
    // the account's name (a private hosted zone in front of a VPC endpoint keeps it), and a VPC endpoint's own, regional and zonal
    const vpce = ['vpce-0b1ea22b5753b7a86-7yq7jgyr.data.iot.us-east-1.vpce.amazonaws.com', 'vpce-0b1ea22b5753b7a86-7yq7jgyr-us-east-1a.data.iot.us-east-1.vpce.amazonaws.com', 'vpce-0b1ea22b5753b7a86-7yq7jgyr.data.iot.cn-north-1.vpce.amazonaws.com.cn'];
    for (const host of ['abc123-ats.iot.eu-west-1.amazonaws.com', ...vpce]) {
      expect(iot(`wss://${host}/mqtt`), host).toBe(true);
      // signed, so the client is required (before the fix: a VPC endpoint's name was taken for a broker of its own, connected to unsigned)
      expect(() => new PushChannel({ endpoint: `wss://${host}/mqtt` }), host).toThrow(/client: is required for an IoT Core endpoint/);
    }
    // not IoT Core's data plane: its credentials provider's VPC endpoint, another IoT service's, local mode's broker
    for (const host of ['vpce-0b1ea22b5753b7a86-7yq7jgyr.credentials.iot.us-east-1.vpce.amazonaws.com', 'vpce-0b1ea22b5753b7a86-7yq7jgyr.data.iotsitewise.us-east-1.vpce.amazonaws.com', '127.0.0.1:1883']) {
      expect(iot(`wss://${host}/mqtt`), host).toBe(false);
    }
    // a custom domain (an IoT Core domain configuration): no name tells, the option does
    expect(iot('wss://mqtt.example.com/mqtt')).toBe(false);
    expect(iot('wss://mqtt.example.com/mqtt', { iotCore: true })).toBe(true);
    expect(() => new PushChannel({ endpoint: 'wss://mqtt.example.com/mqtt', iotCore: true })).toThrow(/client: is required for an IoT Core endpoint/);
    expect(iot(`wss://${vpce[0]}/mqtt`, { iotCore: false })).toBe(false);
    // a review (2026-12-06): IoT Core's FIPS and dual-stack (IPv6) names were taken for a broker of their own, connected to unsigned
    for (const host of ['data.iot-fips.us-east-1.amazonaws.com', 'abc123-ats.iot.us-east-1.api.aws', 'data.iot-fips.us-gov-west-1.amazonaws.com']) {
      expect(iot(`wss://${host}/mqtt`), host).toBe(true);
    }
    expect(iot('wss://iot.example.api.aws.example.com/mqtt')).toBe(false);
    client.destroy();
  });

  // a review (2026-12-06): a Session of named leases was taken, and its process topic, which such a role may not subscribe to, asked for
  it("refuses a Session of named leases (its process topic needs allLeases), naming the option and what to do", () => {
    const client = new DynamoDBClient({ region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
    try {
      const named = new Session({ client, tables: 'acme', leaseNames: ['nightly-report', 'billing-sync'] });
      let err: unknown;
      try {
        new PushChannel({ endpoint: broker.wsEndpoint, tables: 'acme', session: named });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).issues).toEqual([{ field: 'session', message: expect.stringMatching(/^is a Session of named leases \(its leaseNames: nightly-report, billing-sync\): its process topic needs the grant of a worker with allLeases \(grantWorker without leaseNames\).*Leave session out/) as unknown }]);
      // a Session of every lease is taken
      expect(() => new PushChannel({ endpoint: broker.wsEndpoint, tables: 'acme', session: new Session({ client, tables: 'acme' }) })).not.toThrow();
    } finally {
      client.destroy();
    }
  });

  // a review (2026-12-06): a custom domain's port was left out of the signed URL (and of the host signed)
  it("signs a custom domain's URL with its port, and the host it signs is the one the WebSocket sends (with the port)", async () => {
    const creds = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };
    const at = Date.UTC(2026, 11, 7, 1, 2, 3);
    const url = new URL(await presignIotUrl('wss://iot.example.com:8443/mqtt', 'eu-west-1', creds, at));
    expect(url.host).toBe('iot.example.com:8443');
    expect(url.pathname).toBe('/mqtt');
    const bare = new URL(await presignIotUrl('wss://iot.example.com/mqtt', 'eu-west-1', creds, at));
    expect(bare.host).toBe('iot.example.com');
    // the host header signed differs, so does the signature; 443 is no port of its own
    expect(url.searchParams.get('X-Amz-Signature')).not.toBe(bare.searchParams.get('X-Amz-Signature'));
    const explicit = new URL(await presignIotUrl('wss://iot.example.com:443/mqtt', 'eu-west-1', creds, at));
    expect(explicit.host).toBe('iot.example.com');
    expect(explicit.searchParams.get('X-Amz-Signature')).toBe(bare.searchParams.get('X-Amz-Signature'));
  });

  it("drops a wake whose lease is not its topic's (either form): publish rights are per topic, so a worker of one lease cannot wake another's electors", async () => {
    const errors: Error[] = [];
    const channel = new PushChannel({ endpoint: broker.wsEndpoint, tables: 'mismatch', onError: (e) => errors.push(e) });
    const table = channel.options.tables.leases;
    const long = `report-${'x'.repeat(240)}`; // its wakes go on the lease-hash topic
    const got: string[] = [];
    for (const lease of ['jobs', 'payroll', long]) channel.watch(lease, (w) => void (w && got.push(w.lease)));
    const stop = new AbortController();
    const run = channel.run(stop.signal);
    const data = new IoTDataPlaneClient({ endpoint: broker.httpEndpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
    const publish = (topic: string, wake: Wake) => data.send(new PublishCommand({ topic, qos: 1, payload: new TextEncoder().encode(JSON.stringify(wake)) }));
    try {
      await channel.ready;
      await publish(plainPushTopic(table, 'jobs'), { lease: 'payroll', by: 'worker' }); // jobs' topic, naming payroll
      await publish(hashedPushTopic(table, long), { lease: 'payroll', by: 'worker' }); // the long lease's hashed topic, naming payroll
      await publish(hashedPushTopic(table, 'jobs'), { lease: long, by: 'worker' }); // jobs' hashed topic, naming the long lease
      // the wakes that do match, in the same order on the same connection: delivered after the three above would have been
      await publish(plainPushTopic(table, 'jobs'), { lease: 'jobs', by: 'stream' });
      await publish(hashedPushTopic(table, long), { lease: long, by: 'stream' });
      await waitFor('the matching wakes', () => got.length >= 2);
      expect(got).toEqual(['jobs', long]);
      expect(channel.stats).toMatchObject({ received: 2, dropped: 3 });
      expect(errors.map((e) => e.message)).toEqual([
        expect.stringMatching(/dropped a wake naming lease "payroll" that came on another lease's topic \(conclave\/mismatch-leases\/lease\/jobs\)/),
        expect.stringMatching(/dropped a wake naming lease "payroll" that came on another lease's topic \(conclave\/mismatch-leases\/lease-hash\//),
        expect.stringMatching(/dropped a wake naming lease "report-x+" that came on another lease's topic/),
      ]);
    } finally {
      stop.abort();
      await run;
      data.destroy();
    }
  });

  it("signs at AWS's time as the DynamoDB client last saw it: a machine whose clock is 10 minutes off, which the AWS SDK's own requests survive, is not refused by IoT Core either", async () => {
    // an endpoint whose clock is 10 minutes ahead of this machine's (as AWS's is of a machine 10 minutes behind)
    const AHEAD_MS = 600_000;
    const server = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const body = JSON.stringify({ TableNames: [] });
        res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0', 'content-length': Buffer.byteLength(body), 'x-amzn-requestid': 'r-1', date: new Date(Date.now() + AHEAD_MS).toUTCString() }).end(body);
      });
    });
    const client = localClient(`http://127.0.0.1:${await listenOnLoopback(server)}`);
    try {
      expect(awsTime(1_000, client)).toBe(1_000); // nothing heard yet: this machine's time
      await client.send(new ListTablesCommand({}));
      // AWS's time less this machine's, as the client keeps it: awsTime of this machine's instant 0
      expect(Math.abs(awsTime(0, client) - AHEAD_MS)).toBeLessThan(2_000); // the Date header's second, and the round trip
      // before: signed at this machine's time, 10 minutes from IoT Core's, which refuses a signature 5 minutes off
      const url = new URL(await presignIotUrl('wss://abc123-ats.iot.eu-west-1.amazonaws.com/mqtt', 'eu-west-1', { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' }, awsTime(Date.UTC(2026, 11, 4, 6, 0, 0), client)));
      expect(url.searchParams.get('X-Amz-Date')).toMatch(/^20261204T06(09|10)\d\dZ$/);
    } finally {
      client.destroy();
      server.close();
    }
  });

  it('signs IoT Core’s WebSocket URL with SigV4 (service iotdevicegateway), the session token added after signing, /mqtt by default', async () => {
    const creds = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', sessionToken: 'token/with+chars' };
    const at = Date.UTC(2026, 10, 25, 1, 2, 3);
    const url = new URL(await presignIotUrl('wss://abc123-ats.iot.eu-west-1.amazonaws.com', 'eu-west-1', creds, at));
    expect(url.protocol).toBe('wss:');
    expect(url.pathname).toBe('/mqtt');
    const q = url.searchParams;
    expect(q.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
    expect(q.get('X-Amz-Credential')).toBe('AKIDEXAMPLE/20261125/eu-west-1/iotdevicegateway/aws4_request');
    expect(q.get('X-Amz-Date')).toBe('20261125T010203Z');
    expect(q.get('X-Amz-SignedHeaders')).toBe('host');
    expect(q.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
    expect(q.get('X-Amz-Security-Token')).toBe(creds.sessionToken);
    // the token is not part of what was signed: the same URL without a token has the same signature
    const bare = new URL(await presignIotUrl('wss://abc123-ats.iot.eu-west-1.amazonaws.com/mqtt', 'eu-west-1', { accessKeyId: creds.accessKeyId, secretAccessKey: creds.secretAccessKey }, at));
    expect(bare.searchParams.get('X-Amz-Signature')).toBe(q.get('X-Amz-Signature'));
    expect(bare.searchParams.has('X-Amz-Security-Token')).toBe(false);
  });
});
