/**
 * ECS_CONTAINER_METADATA_URI_V4 set, its endpoint unanswered (a starved or stopped ECS agent, a
 * network mode the container cannot reach it from): detection used to fall back to EC2's IMDS and
 * record the *host's* instance id (a task stop then never signals) or, on Fargate, nothing, and
 * said nothing either way. Now IMDS is never asked when the variable is set, and the worker is
 * told once (onError) that its platform signal is off.
 */
import type { RequestListener } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { detectPlatform } from '../../lib/sdk/platform.js';
import { LeaderElector } from '../../lib/sdk/elector.js';
import { waitFor } from './harness.js';
import { loopbackServers, testTables } from '../support.js';

const servers = loopbackServers();
afterEach(() => servers.close());

const serve = async (handler: RequestListener): Promise<string> => `http://127.0.0.1:${await servers.listen(handler)}`;

/** IMDSv2 that answers, counting every request. */
const countedImds = async () => {
  const seen = { asked: 0 };
  const url = await serve((req, res) => {
    seen.asked++;
    if (req.method === 'PUT') return res.writeHead(200).end('TOKEN-1');
    if (req.url === '/latest/meta-data/instance-id') return res.writeHead(200).end('i-0123456789abcdef0');
    res.writeHead(200).end('eu-west-1a');
  });
  return { url, seen };
};

describe('ECS task metadata endpoint set but unanswered', () => {
  it('ECS on EC2 (IMDS answers): no platform, never the host\'s instance id; told once, naming the endpoint', async () => {
    const silent = await serve(() => undefined); // accepts, never answers
    const imds = await countedImds();
    const told: Error[] = [];
    const found = await detectPlatform({ env: { ECS_CONTAINER_METADATA_URI_V4: `${silent}/v4/abc`, AWS_EC2_METADATA_SERVICE_ENDPOINT: imds.url }, timeoutMs: 100, onUnanswered: (e) => told.push(e) });
    expect(found).toBeUndefined();
    expect(imds.seen.asked).toBe(0);
    expect(told).toHaveLength(1);
    expect(told[0]!.message).toContain(`${silent}/v4/abc/task`);
    expect(told[0]!.message).toMatch(/platform signal is off for this worker/);
    expect(told[0]!.message).toMatch(/network mode/);
    expect(told[0]!.message).toMatch(/ECS agent/);
  });

  it('an answer that is no task (no ARN, no cluster): told as well, IMDS not asked', async () => {
    const odd = await serve((_req, res) => res.writeHead(200).end('{"Cluster": 3}'));
    const imds = await countedImds();
    const told: Error[] = [];
    expect(await detectPlatform({ env: { ECS_CONTAINER_METADATA_URI_V4: odd, AWS_EC2_METADATA_SERVICE_ENDPOINT: imds.url }, onUnanswered: (e) => told.push(e) })).toBeUndefined();
    expect(imds.seen.asked).toBe(0);
    expect(told.map((e) => e.message)).toEqual([expect.stringMatching(/answered without a task ARN and cluster.*platform signal is off/)]);
  });

  it("a worker (platform 'detect') is told once on onError and runs, with no platform", async () => {
    const silent = await serve(() => undefined);
    const saved = process.env['ECS_CONTAINER_METADATA_URI_V4'];
    process.env['ECS_CONTAINER_METADATA_URI_V4'] = `${silent}/v4/abc`;
    const t = await testTables('platform-ecs-unanswered');
    const stop = new AbortController();
    const errors: Error[] = [];
    try {
      const elector = new LeaderElector({ leaseName: 'ecs-unanswered', identity: 'w1', mode: 'NoCoordination', tables: t.names, client: t.client, callbacks: { onStartedLeading: () => undefined }, onError: (e) => errors.push(e) });
      const run = elector.run(stop.signal);
      await waitFor('the elector to lead', () => elector.isLeader());
      expect(elector.platform).toBeUndefined();
      const signalOff = errors.filter((e) => /platform signal is off/.test(e.message));
      expect(signalOff).toHaveLength(1);
      expect(signalOff[0]!.message).toContain('LeaderElector "w1"');
      expect(signalOff[0]!.message).toContain(`${silent}/v4/abc/task`);
      stop.abort();
      await run;
    } finally {
      stop.abort();
      if (saved === undefined) delete process.env['ECS_CONTAINER_METADATA_URI_V4'];
      else process.env['ECS_CONTAINER_METADATA_URI_V4'] = saved;
      await t.drop();
    }
  });
});
