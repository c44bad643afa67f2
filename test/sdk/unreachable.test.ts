/**
 * A worker started against an endpoint nothing listens on (issue 36, item 2): the real AWS SDK's
 * connection error, on loopback. run() keeps trying with backoff and names the fault; it ends only
 * when its signal aborts — a LeaderElector's, a Session's and an IdentityLeaseHeartbeat's alike. Waits on conditions (errors reported), never on a time budget.
 */
import { describe, expect, it } from 'vitest';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { faultReporter } from '../../lib/sdk/faults.js';
import { LOCAL_CREDENTIALS, localClient } from '../../lib/stores/client.js';
import { DynamoDBUnreachableError, IdentityLeaseHeartbeat, LeaderElector, Session, getLeader, tryWithLease, withLease } from '../../lib/sdk/index.js';
import { waitFor } from './harness.js';

describe('an unreachable DynamoDB', () => {
  it('run() does not end: each try is reported as DynamoDBUnreachableError naming the endpoint and the fix', async () => {
    const errors: Error[] = [];
    const elector = new LeaderElector({
      client: localClient('http://127.0.0.1:1'),
      leaseName: 'job',
      identity: 'w1',
      candidacy: { emulationVersion: '1.0.0', binaryVersion: '1.0.0' },
      platform: 'none',
      callbacks: { onStartedLeading: () => undefined },
      onError: (e) => errors.push(e),
    });
    const stop = new AbortController();
    let settled: 'resolved' | 'rejected' | undefined;
    const done = elector.run(stop.signal).then(
      () => void (settled = 'resolved'),
      () => void (settled = 'rejected'),
    );
    await waitFor('two tries reported', () => errors.length >= 2);
    expect(settled).toBeUndefined(); // before the fix: rejected within 0.4 s with a bare "connect ECONNREFUSED"
    for (const e of errors) {
      expect(e).toBeInstanceOf(DynamoDBUnreachableError);
      expect(e.message).toMatch(/cannot reach DynamoDB at http:\/\/127\.0\.0\.1:1 \(ECONNREFUSED\): check the client's endpoint and region/);
      expect((e as DynamoDBUnreachableError).endpoint).toBe('http://127.0.0.1:1');
    }
    stop.abort();
    await done;
    expect(settled).toBe('resolved');
    await expect(elector.ready).rejects.toBeDefined(); // it never took part
  });

  /** What a Session and an IdentityLeaseHeartbeat share with an elector there: run() and ready, its faults told to `errors`. */
  interface Runs {
    run(signal: AbortSignal): Promise<void>;
    readonly ready: Promise<unknown>;
  }
  const unreachable = () => localClient('http://127.0.0.1:1');

  it.each([
    {
      what: "a Session's",
      start: (errors: Error[]) => new Session({ client: unreachable(), retryPeriodMs: 100, renewIntervalMs: 300, renewDeadlineMs: 600, maxLeaseDurationMs: 1_000, onError: (e) => errors.push(e) }),
      live: (s: Runs) => (s as Session).name !== undefined,
    },
    {
      what: "an IdentityLeaseHeartbeat's",
      start: (errors: Error[]) => new IdentityLeaseHeartbeat({ client: unreachable(), component: 'reports', onError: (e) => errors.push(e) }),
      live: (s: Runs) => (s as IdentityLeaseHeartbeat).healthy(),
    },
  ])("$what run() does not end either: each try at its first row is reported as DynamoDBUnreachableError, with backoff", async ({ start, live }) => {
    const errors: Error[] = [];
    const runner: Runs = start(errors);
    const stop = new AbortController();
    let settled: 'resolved' | 'rejected' | undefined;
    const done = runner.run(stop.signal).then(
      () => void (settled = 'resolved'),
      () => void (settled = 'rejected'),
    );
    await waitFor('two tries reported', () => errors.length >= 2);
    expect(settled).toBeUndefined(); // before the fix: rejected at once with a bare "connect ECONNREFUSED 127.0.0.1:1"
    for (const e of errors) expect(e).toBeInstanceOf(DynamoDBUnreachableError);
    expect(live(runner)).toBe(false);
    stop.abort();
    await done;
    expect(settled).toBe('resolved');
    await expect(runner.ready).rejects.toBeDefined(); // it never wrote a row
  });

  it.each([
    { call: 'getLeader', run: () => getLeader('job', { client: unreachable() }) },
    { call: 'withLease', run: () => withLease('job', async () => 1, { client: unreachable(), waitMs: 0 }) },
    { call: 'tryWithLease', run: () => tryWithLease('job', async () => 1, { client: unreachable() }) },
  ])('$call, which does not retry, rejects with DynamoDBUnreachableError naming itself, the endpoint, the table and what to do, never "retrying"', async ({ call, run }) => {
    const e = await run().catch((x: unknown) => x);
    // before the fix: the bare "connect ECONNREFUSED 127.0.0.1:1" of Node
    expect(e).toBeInstanceOf(DynamoDBUnreachableError);
    const u = e as DynamoDBUnreachableError;
    expect(u.endpoint).toBe('http://127.0.0.1:1');
    expect(u.code).toBe('ECONNREFUSED');
    expect(u.message).toMatch(new RegExp(`^${call} of lease "job": cannot reach DynamoDB at http://127\\.0\\.0\\.1:1 \\(ECONNREFUSED\\): check the client's endpoint and region`));
    expect(u.message).toContain('the leases table "conclave-leases"');
    expect(u.message).toContain(`${call} does not retry: call it again once DynamoDB answers`);
    expect(u.message).not.toMatch(/retrying/);
  });
});

describe("region 'local' with no endpoint", () => {
  // before: "cannot reach DynamoDB at the DynamoDB endpoint of region local (ECONNREFUSED): check the
  // client's endpoint and region, …": a new user's client with local mode's region and no endpoint
  // (the AWS SDK then asks dynamodb.local.amazonaws.com) was not told what it lacks
  it('the fault says the region is local mode\'s and which endpoint to give', async () => {
    // the real connection error, on loopback; the client it is reported for has region 'local' and no endpoint (never sent: no network)
    const refused = await localClient('http://127.0.0.1:1', 'local', { maxAttempts: 1 }).send(new ListTablesCommand({})).then(
      () => undefined,
      (e: unknown) => e,
    );
    const told: Error[] = [];
    const report = faultReporter((e) => told.push(e), 'LeaderElector "w1" of lease "job"', new DynamoDBClient({ region: 'local', credentials: LOCAL_CREDENTIALS }));
    report(refused);
    await waitFor('the fault reported', () => told.length === 1);
    const [e] = told;
    expect(e).toBeInstanceOf(DynamoDBUnreachableError);
    expect((e as DynamoDBUnreachableError).endpoint).toBe('the DynamoDB endpoint of region local');
    expect(e!.message).toMatch(/^cannot reach DynamoDB at the DynamoDB endpoint of region local \(ECONNREFUSED\): region 'local' is local mode's, and the client has no endpoint/);
    expect(e!.message).toContain('the endpoint `npx conclave-local` prints (CONCLAVE_ENDPOINT) or startLocalConclave()\'s `endpoint`');
    expect(e!.message).toMatch(/retrying with backoff$/);
    // an AWS Region: as before
    expect(new DynamoDBUnreachableError('the DynamoDB endpoint of region eu-west-1', 'ENOTFOUND', e!).message).toContain("check the client's endpoint and region");
  });
});
