/**
 * Credentials as users bring them: a credential provider that does not answer (a credential_process
 * waiting for input; STS, SSO or the instance metadata unreachable and given no request timeout),
 * and credentials DynamoDB refuses (expired, not valid). The AWS SDK asks the credential provider
 * once for every request waiting on it: while that one call hangs, no request of the client goes
 * out. On DynamoDB Local, the real AWS SDK, and a clock driven while a request that has its
 * credentials is in flight: waits on simulated time, never on a time budget.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LOCAL_CREDENTIALS, localClient } from '../../lib/local/dynamodb-local.js';
import { CREDENTIALS_STUCK_MS, requestBoundMs } from '../../lib/sdk/bounded-client.js';
import { DynamoDBRefusedError, DynamoDBUnreachableError, getLeader, leaseHealth } from '../../lib/sdk/index.js';
import { drivenClock } from '../proxy.js';
import { bound, CLIENT_GO, drivenElector, handedOver, type Terms } from './driven-elector.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('credentials')));
afterAll(async () => t.drop());

type Middleware = (next: (args: unknown) => Promise<unknown>) => (args: unknown) => Promise<unknown>;
type Stack = { middlewareStack: { add(mw: never, o: object): void } };

/** A count of `client`'s requests between two points of the AWS SDK's stack (`from` entered, not yet settled): `() => n`. */
function counted(client: Stack, step: 'initialize' | 'build', name: string): () => number {
  let n = 0;
  const count: Middleware = (next) => async (args) => {
    n++;
    try {
      return await next(args);
    } finally {
      n--;
    }
  };
  client.middlewareStack.add(count as never, { step, name, priority: 'high' });
  return () => n;
}

/**
 * A DynamoDB Local client whose credential provider answers at once until `hang()`; from then on its
 * call does not answer until `release()`. Its credentials expire within the AWS SDK's refresh
 * window, so the SDK asks the provider again before each request (as it does near an expiry).
 */
function heldCredentials() {
  let hanging = false;
  let calls = 0;
  const held: (() => void)[] = [];
  const fresh = () => ({ ...LOCAL_CREDENTIALS, expiration: new Date(Date.now() + 1_000) });
  const client = new DynamoDBClient({
    endpoint: inject('ddbEndpoint'),
    region: 'local',
    maxAttempts: 3,
    credentials: () => {
      calls++;
      return hanging ? new Promise((resolve) => held.push(() => resolve(fresh()))) : Promise.resolve(fresh());
    },
  });
  // every request sent and not settled, its credentials come or not; and those past getting them
  const entered = counted(client, 'initialize', 'entered');
  const credentialed = counted(client, 'build', 'credentialed');
  return {
    client,
    calls: () => calls,
    /** Requests of the client's waiting on the credential provider's call (sent, not past their credentials). */
    waiting: () => entered() - credentialed(),
    busy: () => credentialed() > 0,
    hang: () => void (hanging = true),
    release: () => {
      hanging = false;
      for (const answer of held.splice(0)) answer();
    },
  };
}

const AWAITED =
  /^LeaderElector "a" of lease "held": the AWS SDK has no valid credentials \(CredentialsProviderError: the DynamoDB client's credential provider has not answered within \d+ ms, and the AWS SDK sends none of this client's requests until it does \(a credential_process waiting for input; STS, SSO or the instance metadata unreachable with no request timeout\): give the provider a timeout \(its clientConfig's requestHandler: \{ requestTimeout, throwOnRequestTimeout: true \}; requestTimeout alone only logs a warning\); a client given no credentials \(the default chain, as on ECS or EKS\) takes none: point the liveness probe at the worker's health check \(serveHealth's \/healthz, LeaderElector\.healthy\(\)\), which fails once the client is held over a minute, so a restart ends it\): check the worker's credentials \(its role, AWS_PROFILE or the environment; an SSO session may need a new login\); retrying with backoff$/;

describe('a leader whose credential provider stops answering (the AWS SDK holds every request of its client on that one call)', () => {
  it('stops by its renew deadline and a peer leads; each try is told as credentials awaited, not "cannot reach DynamoDB"; no request piles up on the call; held past a minute, its liveness check fails; once it answers, the worker leads again', async () => {
    const held = heldCredentials();
    const healthy = localClient(inject('ddbEndpoint'));
    const healthyBusy = counted(healthy, 'initialize', 'inFlight');
    const c = drivenClock(() => held.busy() || healthyBusy() > 0);
    const terms: Terms = [];
    const errors = { a: [] as Error[], b: [] as Error[] };
    const a = drivenElector(t.names, 'a', 'held', held.client, c, terms, errors.a);
    await c.drive(() => a.e.isLeader());
    const b = drivenElector(t.names, 'b', 'held', healthy, c, terms, errors.b);
    await c.drive(() => b.e.leader === 'a');

    held.hang();
    const from = c.clock.monotonic();
    const calls = held.calls();
    await c.drive(() => c.clock.monotonic() - from >= 30_000);
    // held half a minute: a slow refresh, no reason to restart the process
    expect(leaseHealth(a.e)).toMatchObject({ leading: false, live: true });
    await c.drive(() => c.clock.monotonic() - from >= 60_000);
    handedOver(terms, from);
    expect(b.e.isLeader()).toBe(true);
    // before: each try told as DynamoDBUnreachableError "cannot reach DynamoDB at … (timed out): check the client's endpoint"
    const told = errors.a;
    expect(told.length).toBeGreaterThanOrEqual(3);
    expect(told.length).toBeLessThanOrEqual(bound(60_000));
    for (const x of told) {
      expect(x).not.toBeInstanceOf(DynamoDBUnreachableError);
      expect(x.name).toBe('CredentialsProviderError');
      expect(x.message).toMatch(AWAITED);
    }
    // the provider asked once, and the requests waiting on it are the first abandoned and none since
    // (before: every try's request left pending on the call, one more per try: 10 after 60 s)
    expect(held.calls() - calls).toBe(1);
    expect(held.waiting()).toBeLessThanOrEqual(1);
    expect(a.settled()).toBeUndefined(); // run() goes on
    // held past CREDENTIALS_STUCK_MS: /healthz fails, so the orchestrator restarts what only a restart ends (before: live)
    await c.drive(() => c.clock.monotonic() - from >= CREDENTIALS_STUCK_MS + requestBoundMs(CLIENT_GO.retryPeriodMs) + 1);
    expect(leaseHealth(a.e)).toMatchObject({ leading: false, live: false, ready: false });
    expect(leaseHealth(b.e)).toMatchObject({ leading: true, live: true });

    held.release();
    await c.drive(() => held.waiting() === 0);
    const quiet = errors.a.length;
    await b.stop();
    await c.drive(() => a.e.isLeader());
    expect(errors.a.length).toBe(quiet);
    expect(leaseHealth(a.e)).toMatchObject({ leading: true, live: true, ready: true });
    await a.stop();
    held.client.destroy();
    healthy.destroy();
  });
});

describe('getLeader while the credential provider does not answer', () => {
  it('rejects at its bound naming the call, what it did not read and what to check; a call meanwhile rejects at once, sending nothing', async () => {
    const held = heldCredentials();
    const c = drivenClock(held.busy);
    held.hang();
    const outcome = (p: Promise<unknown>) => {
      const o: { e?: unknown } = {};
      p.then(() => (o.e = 'answered'), (e: unknown) => (o.e = e));
      return o;
    };
    const first = outcome(getLeader('held-read', { client: held.client, tables: t.names, clock: c.clock }));
    await c.drive(() => first.e !== undefined);
    // before: the bare TimeoutError "DynamoDB gave no answer within 5000 ms: the request was abandoned"
    const want = (ms: string) =>
      `getLeader of lease "held-read": the AWS SDK has no valid credentials (CredentialsProviderError: the DynamoDB client's credential provider has not answered within ${ms} ms, and the AWS SDK sends none of this client's requests until it does (a credential_process waiting for input; STS, SSO or the instance metadata unreachable with no request timeout): give the provider a timeout (its clientConfig's requestHandler: { requestTimeout, throwOnRequestTimeout: true }; requestTimeout alone only logs a warning); ` +
      "a client given no credentials (the default chain, as on ECS or EKS) takes none: point the liveness probe at the worker's health check (serveHealth's /healthz, LeaderElector.healthy()), which fails once the client is held over a minute, so a restart ends it): " +
      `check the caller's credentials (its role, AWS_PROFILE or the environment; an SSO session may need a new login); the lease's row on the leases table "${t.names.leases}" was not read, and getLeader does not retry: call it again once they load`;
    expect(first.e).toMatchObject({ name: 'CredentialsProviderError', message: want('5000') });
    const at = c.clock.monotonic();
    const second = outcome(getLeader('held-read', { client: held.client, tables: t.names, clock: c.clock }));
    await c.drive(() => second.e !== undefined);
    expect(c.clock.monotonic()).toBe(at);
    expect(second.e).toMatchObject({ name: 'CredentialsProviderError', message: want('5000') });
    expect(held.waiting()).toBe(1);
    held.release();
    await c.drive(() => held.waiting() === 0);
    expect(await getLeader('held-read', { client: held.client, tables: t.names, clock: c.clock })).toBeNull();
    held.client.destroy();
  });
});

describe('credentials DynamoDB refuses (expired, not valid): told as credentials, not as a role short of a grant', () => {
  it.each([
    ['ExpiredTokenException', 'The security token included in the request is expired'],
    ['UnrecognizedClientException', 'The security token included in the request is invalid.'],
    ['InvalidSignatureException', 'Signature expired: 20261204T050000Z is now earlier than 20261204T051000Z (20261204T052000Z - 5 min.)'],
  ])('getLeader, %s', async (name, message) => {
    const client = localClient(inject('ddbEndpoint'));
    const refuse: Middleware = () => async () => {
      throw Object.assign(new Error(message), { name, $fault: 'client', $metadata: { httpStatusCode: 400 } });
    };
    client.middlewareStack.add(refuse as never, { step: 'initialize', name: 'refuse' });
    const e = await getLeader('refused', { client, tables: t.names }).catch((x: unknown) => x);
    client.destroy();
    expect(e).toBeInstanceOf(DynamoDBRefusedError);
    expect(e).toMatchObject({ kind: 'denied', cause: { name } });
    // before: "… this role may not read (GetItem); grant it Conclave's grantGetLeader …"
    expect((e as Error).message).toBe(
      `getLeader of lease "refused": DynamoDB refused the request (${name}: ${message}): the credentials are expired or not valid (a grant would not help): renew them (an SSO login, the role's session, AWS_PROFILE or the environment) or check the secret key; a signature refused as expired means this machine's clock is more than 5 minutes off; ` +
        `the lease's row on the leases table "${t.names.leases}" was not read, and getLeader does not retry: call it again once they are renewed`,
    );
  });
});
