/**
 * A newcomer's DynamoDB client given `endpoint: 'dynamodb-local:8000'` (a compose service's name,
 * no scheme) or `'localhost:8000'`: the URL parses, with scheme `dynamodb-local:`, and the AWS SDK
 * sends to this host's port 80, so a worker printed `Unknown: UnknownError` (or a refused
 * connection to "dynamodb-local://8000") at every try, never saying the endpoint lacks its
 * `http://`. Each try is now reported naming the endpoint and the URL meant.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { LeaderElector } from '../../lib/sdk/index.js';
import { waitFor } from './harness.js';

describe("a client endpoint that is a URL but not an http(s) one (no scheme: 'host:port')", () => {
  it.each([
    ['dynamodb-local:8000', 'http://dynamodb-local:8000'],
    ['localhost:8000', 'http://localhost:8000'],
  ])('%s: each try is reported naming the endpoint and the URL meant, %s', async (endpoint, meant) => {
    // (its requests go to this host's port 80, loopback: refused, or answered by whatever serves there)
    const client = new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, maxAttempts: 1 });
    const errors: Error[] = [];
    const elector = new LeaderElector({ client, tables: 'conclave', leaseName: 'job', identity: 'w1', mode: 'NoCoordination', platform: 'none', callbacks: { onStartedLeading: () => undefined }, onError: (e) => errors.push(e) });
    const stop = new AbortController();
    const run = elector.run(stop.signal);
    try {
      await waitFor('a fault told', () => errors.length > 0);
      expect(errors[0]!.message).toContain(`LeaderElector "w1" of lease "job": the DynamoDB client's endpoint "${endpoint}" is not an http(s) URL`);
      expect(errors[0]!.message).toContain(`give it with its scheme, such as ${meant}`);
    } finally {
      stop.abort();
      await run.catch(() => undefined);
      client.destroy();
    }
  });
});
