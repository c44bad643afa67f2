/**
 * Platform detection against loopback stand-ins for the ECS task metadata endpoint and the EC2
 * instance metadata service (IMDSv2: a PUT for a token, then GETs that must carry it).
 */
import type { RequestListener } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { detectPlatform } from '../../lib/sdk/platform.js';
import { sendsToThisMachine } from '../../lib/sdk/faults.js';
import { LeaderElector } from '../../lib/sdk/elector.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { waitFor } from './harness.js';
import { startEcsTask } from '../../lib/local/ecs-task.js';
import { loopbackServers, testTables } from '../support.js';

const servers = loopbackServers();
afterEach(() => servers.close());

const serve = async (handler: RequestListener): Promise<string> => `http://127.0.0.1:${await servers.listen(handler)}`;

/** IMDSv2 as EC2 serves it: GETs without the session token are refused. */
const imds = (opts: { v2?: boolean; id?: string } = {}) =>
  serve((req, res) => {
    if (req.method === 'PUT' && req.url === '/latest/api/token') {
      if (opts.v2 === false) return res.writeHead(403).end();
      if (!req.headers['x-aws-ec2-metadata-token-ttl-seconds']) return res.writeHead(400).end();
      return res.writeHead(200).end('TOKEN-1');
    }
    if (req.headers['x-aws-ec2-metadata-token'] !== 'TOKEN-1') return res.writeHead(401).end();
    if (req.url === '/latest/meta-data/instance-id') return res.writeHead(200).end(opts.id ?? 'i-0123456789abcdef0');
    if (req.url === '/latest/meta-data/placement/availability-zone') return res.writeHead(200).end('eu-west-1b');
    res.writeHead(404).end();
  });

describe('detectPlatform', () => {
  it('ECS: reads cluster, task ARN and zone from <ECS_CONTAINER_METADATA_URI_V4>/task', async () => {
    const task = await startEcsTask(() => undefined);
    try {
      expect(await detectPlatform({ env: task.env, ec2: false })).toEqual(task.platform);
    } finally {
      await task.close();
    }
  });

  it('ECS on a starved host: a task metadata endpoint too slow to answer the first ask is asked again, with a longer timeout (issue 36: a busy machine ran its workers with no platform)', async () => {
    let asked = 0;
    const ecs = await serve((req, res) => {
      if (++asked === 1) return; // the first ask is never answered (the timeout ends it)
      res.writeHead(200).end(JSON.stringify({ Cluster: 'c1', TaskARN: 'arn:aws:ecs:eu-west-1:000000000000:task/c1/abc', AvailabilityZone: 'eu-west-1a' }));
    });
    expect(await detectPlatform({ env: { ECS_CONTAINER_METADATA_URI_V4: ecs }, ec2: false, timeoutMs: 200 })).toMatchObject({ kind: 'ecs', cluster: 'c1', availabilityZone: 'eu-west-1a' });
    expect(asked).toBe(2);
  });

  it('ECS wins over EC2 (a task on an EC2 host is what stops)', async () => {
    const task = await startEcsTask(() => undefined);
    try {
      const ec2 = await imds();
      expect(await detectPlatform({ env: { ...task.env, AWS_EC2_METADATA_SERVICE_ENDPOINT: ec2 } })).toMatchObject({ kind: 'ecs' });
    } finally {
      await task.close();
    }
  });

  it('EC2: an IMDSv2 token first, then instance id and zone with it', async () => {
    const ec2 = await imds();
    expect(await detectPlatform({ env: { AWS_EC2_METADATA_SERVICE_ENDPOINT: ec2 } })).toEqual({ kind: 'ec2', id: 'i-0123456789abcdef0', availabilityZone: 'eu-west-1b' });
  });

  it('an IMDS that refuses tokens (v1 only) is not used: no platform', async () => {
    const ec2 = await imds({ v2: false });
    expect(await detectPlatform({ env: { AWS_EC2_METADATA_SERVICE_ENDPOINT: ec2 } })).toBeUndefined();
  });

  it('answers that are not what the platform gives are ignored', async () => {
    const ec2 = await imds({ id: '<html>captive portal</html>' });
    expect(await detectPlatform({ env: { AWS_EC2_METADATA_SERVICE_ENDPOINT: ec2 } })).toBeUndefined();
    const ecs = await serve((_req, res) => res.writeHead(200).end('{"Cluster": 3}'));
    expect(await detectPlatform({ env: { ECS_CONTAINER_METADATA_URI_V4: ecs }, ec2: false })).toBeUndefined();
  });

  it('nothing listening, or an endpoint that never answers: no platform (the request is abandoned at the timeout)', async () => {
    const silent = await serve(() => undefined); // accepts, never answers
    expect(await detectPlatform({ env: { ECS_CONTAINER_METADATA_URI_V4: silent, AWS_EC2_METADATA_SERVICE_ENDPOINT: 'http://127.0.0.1:1' }, timeoutMs: 200 })).toBeUndefined();
  });

  it('AWS_EC2_METADATA_DISABLED=true: IMDS is not asked at all', async () => {
    let asked = 0;
    const ec2 = await serve((_req, res) => (asked++, res.writeHead(500).end()));
    expect(await detectPlatform({ env: { AWS_EC2_METADATA_SERVICE_ENDPOINT: ec2, AWS_EC2_METADATA_DISABLED: 'true' } })).toBeUndefined();
    expect(asked).toBe(0);
  });
});

// a new user's trial (2026-12-06): the README's quick start against local mode asked the EC2
// metadata service, off this machine, at every start (`platform: 'detect'`, the default)
describe('a worker whose DynamoDB client sends to this machine (local mode)', () => {
  it.each([
    ['http://127.0.0.1:8000', true],
    ['http://localhost:8000', true],
    ['http://[::1]:8000', true],
    ['http://127.1.2.3:8000', true],
    ['http://10.0.0.5:8000', false],
    ['https://dynamodb.eu-west-1.amazonaws.com', false],
  ])('endpoint %s: sends to this machine %s', async (endpoint, local) => {
    const client = new DynamoDBClient({ region: 'local', endpoint, credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    expect(await sendsToThisMachine(client)).toBe(local);
    client.destroy();
  });

  it('the Region\'s own endpoint (none given), or one in AWS_ENDPOINT_URL_DYNAMODB', async () => {
    const regional = new DynamoDBClient({ region: 'eu-west-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    expect(await sendsToThisMachine(regional)).toBe(false);
    regional.destroy();
    const saved = process.env['AWS_ENDPOINT_URL_DYNAMODB'];
    process.env['AWS_ENDPOINT_URL_DYNAMODB'] = 'http://127.0.0.1:8000';
    try {
      const configured = new DynamoDBClient({ region: 'local', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
      expect(await sendsToThisMachine(configured)).toBe(true);
      configured.destroy();
    } finally {
      if (saved === undefined) delete process.env['AWS_ENDPOINT_URL_DYNAMODB'];
      else process.env['AWS_ENDPOINT_URL_DYNAMODB'] = saved;
    }
  });

  it("an elector on DynamoDB Local with platform 'detect' (the default) does not ask EC2's metadata service", async () => {
    // EC2's metadata service on loopback (its address, 169.254.169.254, is off this machine): asked, it would give the worker a platform
    let asked = 0;
    const ec2 = await imds();
    const counted = await serve((req, res) => {
      asked++;
      res.writeHead(307, { location: `${ec2}${req.url}` }).end();
    });
    // (the suite disables IMDS for every test, vitest.config.ts: enabled here, on loopback)
    const saved = { imds: process.env['AWS_EC2_METADATA_SERVICE_ENDPOINT'], ecs: process.env['ECS_CONTAINER_METADATA_URI_V4'], disabled: process.env['AWS_EC2_METADATA_DISABLED'] };
    process.env['AWS_EC2_METADATA_SERVICE_ENDPOINT'] = counted;
    delete process.env['ECS_CONTAINER_METADATA_URI_V4'];
    delete process.env['AWS_EC2_METADATA_DISABLED'];
    const t = await testTables('platform-local');
    const stop = new AbortController();
    try {
      const elector = new LeaderElector({ leaseName: 'quick-start', identity: 'w1', mode: 'NoCoordination', tables: t.names, client: t.client, callbacks: { onStartedLeading: () => undefined }, onError: () => undefined });
      const run = elector.run(stop.signal);
      await waitFor('the elector to lead', () => elector.isLeader());
      expect(asked).toBe(0);
      expect((await new LeaseStore(t.client, t.names.leases).read('quick-start')).item?.holderPlatform).toBeUndefined();
      stop.abort();
      await run;
    } finally {
      stop.abort();
      for (const [k, v] of [['AWS_EC2_METADATA_SERVICE_ENDPOINT', saved.imds], ['ECS_CONTAINER_METADATA_URI_V4', saved.ecs], ['AWS_EC2_METADATA_DISABLED', saved.disabled]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
      await t.drop();
    }
  });
});
