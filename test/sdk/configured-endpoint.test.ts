/**
 * An endpoint configured outside the code: AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL or a
 * profile's endpoint_url, which the AWS SDK sends to though the client was given no `endpoint`
 * (a common way to point code at DynamoDB Local). A fault names that endpoint and where it came
 * from, not the Region's. The real AWS SDK, a loopback port nothing listens on (1).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { LOCAL_CREDENTIALS } from '../../lib/local/dynamodb-local.js';
import { DynamoDBUnreachableError, getLeader, LeaderElector } from '../../lib/sdk/index.js';
import { defaultTableNames } from '../../lib/tables.js';

const saved = { ...process.env };
afterEach(() => {
  for (const k of ['AWS_ENDPOINT_URL_DYNAMODB', 'AWS_ENDPOINT_URL']) if (saved[k] === undefined) delete process.env[k];
  else process.env[k] = saved[k];
});

const tables = defaultTableNames('configured');

describe('an endpoint configured in the environment, no `endpoint` given to the client', () => {
  it.each([
    ['AWS_ENDPOINT_URL_DYNAMODB', 'us-east-1'],
    ['AWS_ENDPOINT_URL', 'us-east-1'],
    ['AWS_ENDPOINT_URL_DYNAMODB', 'local'],
  ])('%s, region %s: getLeader and a worker name that endpoint and where it came from (before: the Region\'s endpoint)', async (variable, region) => {
    const endpoint = 'http://127.0.0.1:1'; // nothing listens there
    process.env[variable] = `${endpoint}/`;
    const client = new DynamoDBClient({ region, credentials: LOCAL_CREDENTIALS });
    const read = await getLeader('job', { client, tables }).catch((e: unknown) => e);
    expect(read).toBeInstanceOf(DynamoDBUnreachableError);
    expect(read).toMatchObject({ endpoint: `${endpoint} (${variable})`, code: 'ECONNREFUSED' });
    // (with region local: not told "the client has no endpoint", which it has)
    expect((read as Error).message).toBe(
      `getLeader of lease "job": cannot reach DynamoDB at ${endpoint} (${variable}) (ECONNREFUSED): check the client's endpoint and region, and that DynamoDB (or DynamoDB Local: npx conclave-local) is up; ` +
        `the lease's row on the leases table "${tables.leases}" was not read, and getLeader does not retry: call it again once DynamoDB answers`,
    );
    const errors: Error[] = [];
    const stop = new AbortController();
    const worker = new LeaderElector({ client, tables, leaseName: 'job', identity: 'w1', mode: 'NoCoordination', onError: (e) => void errors.push(e), callbacks: { onStartedLeading: () => undefined } });
    const running = worker.run(stop.signal).catch((e: unknown) => e);
    await expect.poll(() => errors.length).toBeGreaterThan(0);
    stop.abort();
    expect(await running).toBeUndefined();
    expect(errors[0]).toBeInstanceOf(DynamoDBUnreachableError);
    expect(errors[0]!.message).toBe(`cannot reach DynamoDB at ${endpoint} (${variable}) (ECONNREFUSED): check the client's endpoint and region, and that DynamoDB (or DynamoDB Local: npx conclave-local) is up; retrying with backoff`);
    client.destroy();
  });
});
