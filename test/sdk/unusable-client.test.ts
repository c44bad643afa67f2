/**
 * A client no try can ever send with: no region, an endpoint that is not a URL, or one with no
 * host. run() rejects at once with an error naming the object, what is wrong and the fix, `ready`
 * with the same, and nothing is sent or told to onError. (Before: each try told to onError,
 * "retrying with backoff", for ever, though run() rejects for what can never succeed.)
 * The clients are the AWS SDK's own; none of them sends, so no DynamoDB is needed.
 */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdentityLeaseHeartbeat, LeaderElector, LeaseCandidate, Session, getLeader } from '@conclave/sdk';
import { identityLeaseName } from '../../lib/sdk/identity.js';
import { Sim } from '../../sim/harness.js';

const TABLES = 'conclave-unusable';
const CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };
// (before: "…, or an endpoint for DynamoDB Local": an endpoint, given or in AWS_ENDPOINT_URL_DYNAMODB, leaves the same error)
const REGION_FIX = `give it one (new DynamoDBClient({ region: 'eu-west-1' }), AWS_REGION, or the profile's region); a client of DynamoDB Local needs one too, beside its endpoint, and any name does there (region: 'local', as npx conclave-local prints it)`;
const NEVER = 'run() rejects: no request can be sent with this client, nor will be by trying again';

// nothing in the environment or a profile names a region: a client without the option has none
const saved = new Map<string, string | undefined>();
beforeAll(() => {
  for (const k of ['AWS_REGION', 'AWS_DEFAULT_REGION', 'AWS_PROFILE', 'AWS_CONFIG_FILE', 'AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_DYNAMODB']) saved.set(k, process.env[k]);
  for (const k of saved.keys()) delete process.env[k];
  process.env.AWS_CONFIG_FILE = '/nonexistent/conclave-test-config';
});
afterAll(() => {
  for (const [k, v] of saved) if (v === undefined) delete process.env[k]; else process.env[k] = v;
});

/** The AWS SDK's client with `config`, and how many requests it has begun to send. */
function client(config: DynamoDBClientConfig): { client: DynamoDBClient; sent: () => number } {
  const c = new DynamoDBClient({ credentials: CREDENTIALS, maxAttempts: 1, ...config });
  let sent = 0;
  c.middlewareStack.add((next) => (args) => {
    sent++;
    return next(args);
  }, { step: 'initialize', name: 'countSends' });
  return { client: c, sent: () => sent };
}

const CASES: { what: string; config: DynamoDBClientConfig; env?: Record<string, string>; says: (who: string) => string }[] = [
  { what: 'no region', config: {}, says: (who) => `${who}: the DynamoDB client has no region (Region is missing): ${REGION_FIX}; ${NEVER}` },
  { what: 'no region, an endpoint given', config: { endpoint: 'http://127.0.0.1:8000' }, says: (who) => `${who}: the DynamoDB client has no region (Region is missing): ${REGION_FIX}; ${NEVER}` },
  { what: 'no region, an endpoint in AWS_ENDPOINT_URL_DYNAMODB', config: {}, env: { AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:8000' }, says: (who) => `${who}: the DynamoDB client has no region (Region is missing): ${REGION_FIX}; ${NEVER}` },
  // (before, these three: each try told to onError as the AWS SDK's bare "Region not accepted", "retrying with backoff", for ever)
  {
    what: 'AWS_REGION set but empty (an unset CI variable)',
    config: {},
    env: { AWS_REGION: '' },
    says: (who) => `${who}: the DynamoDB client's region "" (AWS_REGION, set but empty: it hides the profile's region) is not a region name (Region not accepted: region="" is not a valid hostname component.): ${REGION_FIX}; ${NEVER}`,
  },
  {
    what: 'AWS_REGION not a region name',
    config: {},
    env: { AWS_REGION: 'us east 1' },
    says: (who) => `${who}: the DynamoDB client's region "us east 1" (AWS_REGION) is not a region name (Region not accepted: region="us east 1" is not a valid hostname component.): ${REGION_FIX}; ${NEVER}`,
  },
  {
    what: 'a region option that is not a region name',
    config: { region: 'eu west 1' },
    says: (who) => `${who}: the DynamoDB client's region "eu west 1" is not a region name (Region not accepted: region="eu west 1" is not a valid hostname component.): ${REGION_FIX}; ${NEVER}`,
  },
  {
    what: 'an endpoint that is not a URL',
    config: { region: 'local', endpoint: '127.0.0.1:8000' },
    says: (who) => `${who}: the DynamoDB client's endpoint "127.0.0.1:8000" is not a URL (Invalid URL): give it with its scheme, such as http://127.0.0.1:8000 (npx conclave-local prints DynamoDB Local's); ${NEVER}`,
  },
  {
    what: 'an endpoint with no host',
    config: { region: 'local', endpoint: 'dynamodb-local:8000' },
    says: (who) => `${who}: the DynamoDB client's endpoint "dynamodb-local:8000" has no host (its host read as the scheme): give it with its scheme, such as http://dynamodb-local:8000 (npx conclave-local prints DynamoDB Local's); ${NEVER}`,
  },
  // (before, given so: each try told "is not an http(s) URL", the requests sent to port 80 of this machine)
  {
    what: 'an endpoint with no host in AWS_ENDPOINT_URL_DYNAMODB',
    config: { region: 'local' },
    env: { AWS_ENDPOINT_URL_DYNAMODB: 'localhost:8000' },
    says: (who) => `${who}: the DynamoDB client's endpoint "localhost:8000" (AWS_ENDPOINT_URL_DYNAMODB) has no host (its host read as the scheme): give it with its scheme, such as http://localhost:8000 (npx conclave-local prints DynamoDB Local's); ${NEVER}`,
  },
  {
    what: 'an endpoint that is not a URL in AWS_ENDPOINT_URL',
    config: { region: 'local' },
    env: { AWS_ENDPOINT_URL: '127.0.0.1:8000' },
    says: (who) => `${who}: the DynamoDB client's endpoint "127.0.0.1:8000" (AWS_ENDPOINT_URL) is not a URL (Invalid URL): give it with its scheme, such as http://127.0.0.1:8000 (npx conclave-local prints DynamoDB Local's); ${NEVER}`,
  },
];

/** `fn` with the variables of `env` set, then as they were. */
async function withEnv<T>(env: Record<string, string> | undefined, fn: () => Promise<T>): Promise<T> {
  const before = Object.keys(env ?? {}).map((k) => [k, process.env[k]] as const);
  Object.assign(process.env, env);
  try {
    return await fn();
  } finally {
    for (const [k, v] of before) if (v === undefined) delete process.env[k]; else process.env[k] = v;
  }
}

interface Runs {
  run(signal: AbortSignal): Promise<unknown>;
  readonly ready: Promise<unknown>;
}
const OBJECTS: { name: string; who: string; make: (c: DynamoDBClient, onError: (e: Error) => void) => Runs }[] = [
  {
    name: 'a LeaderElector without coordination',
    who: 'LeaderElector "w1" of lease "job"',
    make: (c, onError) => new LeaderElector({ leaseName: 'job', identity: 'w1', mode: 'NoCoordination', tables: TABLES, client: c, platform: 'none', callbacks: { onStartedLeading: () => undefined }, onError }),
  },
  {
    name: 'a coordinated LeaderElector',
    who: 'LeaderElector "w1" of lease "job"',
    make: (c, onError) =>
      new LeaderElector({ leaseName: 'job', identity: 'w1', tables: TABLES, client: c, platform: 'none', callbacks: { onStartedLeading: () => undefined }, candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' }, onError }),
  },
  { name: 'a LeaseCandidate', who: 'candidate "c1" of lease "job"', make: (c, onError) => new LeaseCandidate({ leaseName: 'job', name: 'c1', tables: TABLES, client: c, emulationVersion: '1.30.0', binaryVersion: '1.30.0', onError }) },
  { name: 'a Session', who: 'Session', make: (c, onError) => new Session({ client: c, tables: TABLES, onError }) },
  { name: 'an IdentityLeaseHeartbeat', who: `identity lease ${identityLeaseName('api', 'host-1')}`, make: (c, onError) => new IdentityLeaseHeartbeat({ component: 'api', hostname: 'host-1', tables: TABLES, client: c, onError }) },
];

describe.each(OBJECTS)('$name given a client that can never send', ({ who, make }) => {
  it.each(CASES)('$what: run() rejects at once naming it and the fix; ready the same; nothing sent or told to onError', ({ config, env, says }) => withEnv(env, async () => {
    const { client: c, sent } = client(config);
    const told: Error[] = [];
    const o = make(c, (e) => told.push(e));
    const stop = new AbortController();
    try {
      const rejected = await o.run(stop.signal).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(rejected).toBeInstanceOf(Error);
      expect((rejected as Error).message).toBe(says(who));
      await expect(o.ready).rejects.toBe(rejected);
      expect(told).toEqual([]);
      expect(sent()).toBe(0);
    } finally {
      stop.abort();
      c.destroy();
    }
  }));
});

describe.each(OBJECTS)('$name given a client that can never send and a signal aborted before run()', ({ make }) => {
  it('ends as any stopped start-up does: run() resolves, ready rejects with the signal\'s reason', async () => {
    const { client: c, sent } = client({});
    const o = make(c, () => undefined);
    const reason = new Error('stopped before it began');
    const run = o.run(AbortSignal.abort(reason));
    await expect(run).resolves.toBeUndefined();
    await expect(o.ready).rejects.toBe(reason);
    expect(sent()).toBe(0);
    c.destroy();
  });
});

describe('getLeader given a client that can never send', () => {
  it('wrapped in an object of the caller\'s (no AWS SDK config to look at): told by the error the SDK threw', async () => {
    const { client: inner } = client({});
    const wrapped = { send: (command: never, options?: never) => inner.send(command, options) } as unknown as DynamoDBClient;
    const e = await getLeader('job', { client: wrapped, tables: TABLES }).catch((x: unknown) => x);
    expect((e as Error).message).toBe(`getLeader of lease "job": the DynamoDB client has no region (Region is missing): ${REGION_FIX}; the lease's row on the leases table "${TABLES}-leases" was not read`);
    inner.destroy();
  });

  it.each(CASES)('$what: rejects naming it, the fix and what it did not read', ({ config, env, says }) => withEnv(env, async () => {
    const { client: c } = client(config);
    try {
      const e = await getLeader('job', { client: c, tables: TABLES }).catch((x: unknown) => x);
      expect((e as Error).message).toBe(says('getLeader of lease "job"').replace(NEVER, `the lease's row on the leases table "${TABLES}-leases" was not read`));
    } finally {
      c.destroy();
    }
  }));
});

describe('a region provider that never answers (a function of the user\'s)', () => {
  // before (review of 2026-12-04): the start-up's look at the client waited on it for ever: run()
  // and ready never settled, even once the signal aborted
  const stuck = () => new DynamoDBClient({ region: () => new Promise<string>(() => undefined), endpoint: 'http://127.0.0.1:1', credentials: CREDENTIALS, maxAttempts: 1 });

  it.each(OBJECTS)('$name: a stop during the look ends run() as a stop does', async ({ make }) => {
    const c = stuck();
    const o = make(c, () => undefined);
    const stop = new AbortController();
    const run = o.run(stop.signal);
    stop.abort();
    await expect(run).resolves.toBeUndefined();
    c.destroy();
  });

  it('gives up the look after its bound (4 s on the elector\'s clock) and goes on: its first read then tells what it meets, tried again (NoCoordination counts as started once its lease is read)', async () => {
    const sim = await Sim.create({});
    const m = sim.machine();
    const c = stuck();
    const errors: Error[] = [];
    const e = new LeaderElector({ leaseName: 'job', identity: 'w1', mode: 'NoCoordination', tables: sim.names, client: c, clock: m.clock, platform: 'none', clockSync: 'none', callbacks: { onStartedLeading: () => undefined }, onError: (x) => void errors.push(x) });
    const stop = new AbortController();
    const run = e.run(stop.signal);
    let started = false;
    void e.ready.then(() => (started = true), () => undefined);
    await sim.run(3_900);
    expect(errors).toEqual([]); // still looking
    // past the look: the first read goes out, is bounded, and told (the region provider never answers), and tried again
    await sim.run(20_000);
    expect(errors.length).toBeGreaterThan(0);
    expect(started).toBe(false);
    expect(e.runPhase).toBe('starting');
    stop.abort();
    await sim.settle(run, 'run() to end');
    c.destroy();
  });
});

describe("local mode's region with no endpoint", () => {
  it("is not refused: the AWS SDK sends region 'local' to http://localhost:8000, DynamoDB Local's default port, where one may run (a review found it refused at once for a few hours)", async () => {
    const { unusableClient } = await import('../../lib/sdk/faults.js');
    const client = new DynamoDBClient({ region: 'local', credentials: CREDENTIALS });
    const ep = await client.config.endpointProvider({ Region: 'local', UseFIPS: false, UseDualStack: false });
    expect(ep.url.href).toBe('http://localhost:8000/');
    expect(await unusableClient(client, 'LeaderElector "a"')).toBeUndefined();
    client.destroy();
  });
});
