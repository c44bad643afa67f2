/**
 * Faults met on the way to DynamoDB that are not DynamoDB's (a review, 2026-12-07, fourteenth): a
 * credential provider that fails (the container's or instance's metadata endpoint refusing
 * connections or never answering, STS throttling or refusing a role's assumption), an https://
 * endpoint answered in plain text, and a table whose KMS key refuses. Each was told as DynamoDB out
 * of reach, as DynamoDB refusing, or raw, and counted as a request that may have landed though
 * nothing was sent. Real providers and the real AWS SDK, against loopback stand-ins and DynamoDB
 * Local; a driven clock wherever the worker waits.
 */
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { fromWebToken } from '@aws-sdk/credential-provider-web-identity';
import { fromContainerMetadata, fromInstanceMetadata } from '@smithy/credential-provider-imds';
import type { ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { LOCAL_CREDENTIALS } from '../../lib/local/dynamodb-local.js';
import { boundedClient } from '../../lib/sdk/bounded-client.js';
import { faultKind, mayHaveLanded, namedFault } from '../../lib/sdk/faults.js';
import { DynamoDBRefusedError, DynamoDBUnreachableError, getLeader } from '../../lib/sdk/index.js';
import { drivenClock, inFlight } from '../proxy.js';
import { listenOnLoopback, loopbackServers, testTables, type TestTables } from '../support.js';
import { drivenElector } from './driven-elector.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('not-dynamodb')));
afterAll(async () => t.drop());

const servers = loopbackServers();
const sockets = new Set<Socket>();
const tcp: ReturnType<typeof createTcpServer>[] = [];
const env = new Map<string, string | undefined>();
/** Sets `name` in this process's environment until the test ends. */
const setEnv = (name: string, value: string) => {
  if (!env.has(name)) env.set(name, process.env[name]);
  process.env[name] = value;
};
afterEach(async () => {
  for (const [name, value] of env) if (value === undefined) delete process.env[name];
  else process.env[name] = value;
  env.clear();
  for (const s of sockets) s.destroy();
  sockets.clear();
  await Promise.all(tcp.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))));
  await servers.close();
});

/** A TCP server on loopback that `onSocket` answers (or never does); its port. */
async function tcpServer(onSocket: (s: Socket) => void): Promise<number> {
  const server = createTcpServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    onSocket(s);
  });
  tcp.push(server);
  return listenOnLoopback(server);
}

/** A loopback port nothing listens on: connections to it are refused. */
async function closedPort(): Promise<number> {
  const server = createTcpServer();
  const port = await listenOnLoopback(server);
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** The error `client`'s request fails with as a worker's bounded request (boundedClient: as the SDK's requests go), raw; its bound never reached. */
async function failedWith(client: DynamoDBClient): Promise<Error> {
  const never = drivenClock(() => true).clock;
  const e = await boundedClient(client, never, 5_000)
    .send(new GetItemCommand({ TableName: t.names.leases, Key: { name: { S: 'x' } } }))
    .then(() => undefined, (x: unknown) => x);
  if (!(e instanceof Error)) throw new Error(`the request did not fail: ${String(e)}`);
  return e;
}

/** getLeader's outcome on a driven clock that stands still while `client` has a request under way (its provider's own time is the machine's). */
async function getLeaderFails(client: DynamoDBClient, lease: string): Promise<Error> {
  const c = drivenClock(inFlight(client));
  const out: { e?: unknown } = {};
  getLeader(lease, { client, tables: t.names, clock: c.clock }).then(() => (out.e = 'answered'), (x: unknown) => (out.e = x));
  await c.drive(() => out.e !== undefined);
  if (!(out.e instanceof Error)) throw new Error(`getLeader did not fail: ${String(out.e)}`);
  return out.e;
}

const WORKER = 'LeaderElector "w1" of lease "jobs"';
const notRead = (lease: string) => `the lease's row on the leases table "${t.names.leases}" was not read, and getLeader does not retry`;

/** What a provider's failure to reach where it gets the credentials points at. */
const UNANSWERED_FIX =
  "check where it gets them: the container's or the instance's metadata endpoint (reachable from this process? a task or instance role given? IMDSv2's hop limit of 1 stops a container on an instance), or STS and SSO (the network path, a proxy)";

describe('a credential provider that fails: told as that, nothing sent, not as DynamoDB out of reach or refusing', () => {
  it("a LeaderElector whose container metadata endpoint refuses connections: each try is told as its credential provider failing (the provider's message and code kept), never as DynamoDBUnreachableError", async () => {
    setEnv('AWS_CONTAINER_CREDENTIALS_FULL_URI', `http://127.0.0.1:${await closedPort()}/v2/credentials`);
    const client = new DynamoDBClient({ endpoint: inject('ddbEndpoint'), region: 'local', credentials: fromContainerMetadata() });
    const c = drivenClock(inFlight(client));
    const errors: Error[] = [];
    const a = drivenElector(t.names, 'a', 'refused-metadata', client, c, [], errors);
    await c.drive(() => errors.length >= 3);
    await a.stop();
    // before: DynamoDBUnreachableError "cannot reach DynamoDB at http://127.0.0.1:… (ECONNREFUSED)", DynamoDB being fine
    for (const x of errors) {
      expect(x).not.toBeInstanceOf(DynamoDBUnreachableError);
      expect(x).toMatchObject({ name: 'CredentialsProviderError', code: 'ECONNREFUSED', cause: { name: 'ProviderError', code: 'ECONNREFUSED' } });
      expect(x.message).toBe(
        `LeaderElector "a" of lease "refused-metadata": the DynamoDB client's credential provider failed (ProviderError, ECONNREFUSED: Unable to connect to instance metadata service), so nothing was sent to DynamoDB: ${UNANSWERED_FIX}; retrying with backoff`,
      );
    }
    // nothing sent: no write can have landed (before: true, a coordinated take failing so held its session's renewals)
    const raw = await failedWith(client);
    expect(mayHaveLanded(raw)).toBe(false);
    expect(faultKind(raw)).not.toBe('unreachable');
    client.destroy();
  });

  it('getLeader whose instance metadata endpoint accepts and never answers: the call, the provider\'s own timeout and what to check, nothing sent (before: the bare "ProviderError: TimeoutError from instance metadata service")', async () => {
    setEnv('AWS_EC2_METADATA_SERVICE_ENDPOINT', `http://127.0.0.1:${await tcpServer(() => undefined)}`);
    const client = new DynamoDBClient({ endpoint: inject('ddbEndpoint'), region: 'local', credentials: fromInstanceMetadata({ timeout: 100 }) });
    const e = await getLeaderFails(client, 'silent-metadata');
    expect(e).toMatchObject({ name: 'CredentialsProviderError', cause: { name: 'ProviderError', message: 'TimeoutError from instance metadata service' } });
    expect(e.message).toBe(
      `getLeader of lease "silent-metadata": the DynamoDB client's credential provider failed (ProviderError: TimeoutError from instance metadata service), so nothing was sent to DynamoDB: ${UNANSWERED_FIX}; ${notRead('silent-metadata')}: call it again once they load`,
    );
    const raw = await failedWith(client);
    expect(mayHaveLanded(raw)).toBe(false);
    expect(namedFault(raw, WORKER, 'http://127.0.0.1:8000').message).toBe(
      `${WORKER}: the DynamoDB client's credential provider failed (ProviderError: TimeoutError from instance metadata service), so nothing was sent to DynamoDB: ${UNANSWERED_FIX}; retrying with backoff`,
    );
    client.destroy();
  });

  it("a failure after the credentials came, before the request is built (the endpoint's, the serializer's), is not taken for the provider's", async () => {
    const client = new DynamoDBClient({ endpoint: inject('ddbEndpoint'), region: 'local', credentials: LOCAL_CREDENTIALS });
    // the serialize step's last: the AWS SDK has its identity by then
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    client.middlewareStack.add(() => () => Promise.reject(refused), { step: 'serialize', priority: 'low', name: 'afterCredentials' });
    const raw = await failedWith(client);
    expect(raw).toBe(refused);
    expect(faultKind(raw)).toBe('unreachable');
    expect(namedFault(raw, WORKER, 'http://127.0.0.1:1')).toBeInstanceOf(DynamoDBUnreachableError);
    client.destroy();
  });

  /** A stand-in for STS on loopback: each AssumeRoleWithWebIdentity answered with `answer()` (held while `hold`, until `release()`). */
  async function sts(answer: () => { status: number; code: string; message: string }) {
    const held: (() => void)[] = [];
    let hold = false;
    const reply = (res: ServerResponse) => {
      const a = answer();
      res.writeHead(a.status, { 'content-type': 'text/xml', 'x-amzn-requestid': 'sts-stand-in' });
      res.end(`<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>${a.code}</Code><Message>${a.message}</Message></Error><RequestId>sts-stand-in</RequestId></ErrorResponse>`);
    };
    const port = await servers.listen((req, res) => {
      req.resume();
      req.on('end', () => (hold ? held.push(() => reply(res)) : reply(res)));
    });
    // the AWS SDK's own STS client, as a role-assuming provider makes it; tried once (its retries would wait on the machine's clock)
    const credentials = fromWebToken({ roleArn: 'arn:aws:iam::123456789012:role/worker', webIdentityToken: 'token', clientConfig: { endpoint: `http://127.0.0.1:${port}`, region: 'eu-west-1', maxAttempts: 1 } });
    return {
      client: new DynamoDBClient({ endpoint: inject('ddbEndpoint'), region: 'local', credentials }),
      hold: () => void (hold = true),
      held: () => held.length,
      release: () => {
        hold = false;
        for (const r of held.splice(0)) r();
      },
    };
  }

  it.each([
    {
      code: 'Throttling',
      status: 400,
      message: 'Rate exceeded',
      fix: "STS throttled the provider's calls (the account's STS request rate): keep one DynamoDB client per process, whose provider caches the credentials until they near expiry, rather than a client (and a role assumed) per request",
    },
    {
      code: 'AccessDenied',
      status: 403,
      message: 'Not authorized to perform sts:AssumeRoleWithWebIdentity',
      fix: "STS refused to let these credentials assume the role: check the role's trust policy, and that the caller may call sts:AssumeRole (sts:AssumeRoleWithWebIdentity for a web identity token)",
    },
    {
      code: 'InvalidIdentityToken',
      status: 400,
      message: "Couldn't retrieve verification key from your identity provider",
      name: 'InvalidIdentityTokenException',
      fix: 'STS refused the token or credentials the provider presented (expired or not valid): renew them (the web identity token file, AWS_WEB_IDENTITY_TOKEN_FILE; the credentials that assume the role), and check the identity provider the role trusts',
    },
    {
      code: 'ExpiredTokenException',
      status: 400,
      message: 'Token expired: current date/time 1765080000 must be before the expiration date/time 1765076400',
      fix: 'STS refused the token or credentials the provider presented (expired or not valid): renew them (the web identity token file, AWS_WEB_IDENTITY_TOKEN_FILE; the credentials that assume the role), and check the identity provider the role trusts',
    },
  ])('STS answers a role-assuming provider $code: told as the provider failing and what to check, not as DynamoDB refusing; nothing sent', async ({ code, status, message, name, fix }) => {
    const s = await sts(() => ({ status, code, message }));
    const told = `the DynamoDB client's credential provider failed (${name ?? code}: ${message}), so nothing was sent to DynamoDB: ${fix}`;
    const e = await getLeaderFails(s.client, 'sts');
    // before: the STS error raw, or (ExpiredTokenException) DynamoDBRefusedError "DynamoDB refused the request"
    expect(e).not.toBeInstanceOf(DynamoDBRefusedError);
    expect(e).toMatchObject({ name: 'CredentialsProviderError', cause: { name: name ?? code } });
    expect(e.message).toBe(`getLeader of lease "sts": ${told}; ${notRead('sts')}: call it again once they load`);
    const raw = await failedWith(s.client);
    expect(mayHaveLanded(raw)).toBe(false);
    const named = namedFault(raw, WORKER, inject('ddbEndpoint'));
    expect(named).not.toBeInstanceOf(DynamoDBRefusedError);
    expect(named.message).toBe(`${WORKER}: ${told}; retrying with backoff`);
    s.client.destroy();
  });

  it("a provider whose call fails after the requests waiting on it were abandoned: the next request abandoned so tells that failure, once; the advice says how to bound the provider", async () => {
    const s = await sts(() => ({ status: 400, code: 'Throttling', message: 'Rate exceeded' }));
    const busy = inFlight(s.client);
    s.hold();
    // the bound fires while STS holds the call (the driven clock moves whenever nothing answers DynamoDB-side)
    const c = drivenClock(() => false);
    const outcome = () => {
      const o: { e?: unknown } = {};
      getLeader('late', { client: s.client, tables: t.names, clock: c.clock }).then(() => (o.e = 'answered'), (x: unknown) => (o.e = x));
      return o;
    };
    const AWAITED =
      "the DynamoDB client's credential provider has not answered within 5000 ms, and the AWS SDK sends none of this client's requests until it does (a credential_process waiting for input; STS, SSO or the instance metadata unreachable with no request timeout)";
    const ADVICE =
      "give the provider a timeout (its clientConfig's requestHandler: { requestTimeout, throwOnRequestTimeout: true }; requestTimeout alone only logs a warning); a client given no credentials (the default chain, as on ECS or EKS) takes none: point the liveness probe at the worker's health check (serveHealth's /healthz, LeaderElector.healthy()), which fails once the client is held over a minute, so a restart ends it";
    const said = (e: unknown) => ((e as Error).cause as Error).message;
    const first = outcome();
    await c.drive(() => first.e !== undefined);
    expect(first.e).toMatchObject({ name: 'CredentialsProviderError' });
    // before: "…: give the provider a timeout (its clientConfig's requestHandler: { requestTimeout })", which only logs a warning
    expect(said(first.e)).toBe(`${AWAITED}: ${ADVICE}`);
    // its call fails now, the request that waited on it long abandoned
    const until = (done: () => boolean) => new Promise<void>((r) => void (function wait() { if (done()) r(); else setImmediate(wait); })());
    await until(() => s.held() > 0);
    s.release();
    await until(() => !busy());
    s.hold();
    const second = outcome();
    await c.drive(() => second.e !== undefined);
    // before: the failure was told to nobody
    expect(said(second.e)).toBe(`${AWAITED}; the call before this one, its requests abandoned, failed since (Throttling: Rate exceeded): ${ADVICE}`);
    // told once: a request meanwhile (held on the same call, refused at once) does not tell it again
    const third = outcome();
    await c.drive(() => third.e !== undefined);
    expect(said(third.e)).toBe(`${AWAITED}: ${ADVICE}`);
    s.release();
    s.client.destroy();
  });
});

describe('an https:// endpoint answered in plain text (DynamoDB Local, a captive portal): out of reach, nothing sent, and the fix', () => {
  it('getLeader names the TLS refusal and the http:// URL to give; a worker is told so, and the request counts as unsent (before: the bare "write EPROTO …", maybe landed)', async () => {
    const port = await tcpServer((s) => s.once('data', () => s.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n')));
    const client = new DynamoDBClient({ endpoint: `https://127.0.0.1:${port}`, region: 'local', credentials: LOCAL_CREDENTIALS });
    const e = await getLeaderFails(client, 'tls');
    expect(e).toBeInstanceOf(DynamoDBUnreachableError);
    const code = (e as DynamoDBUnreachableError).code;
    expect(code).toMatch(/^(EPROTO|ERR_SSL_WRONG_VERSION_NUMBER)$/);
    expect(e.message).toBe(
      `getLeader of lease "tls": cannot reach DynamoDB at https://127.0.0.1:${port} (${code}: wrong version number): it answers in plain HTTP, not TLS: DynamoDB Local (and \`npx conclave-local\`) speaks http://, so give the endpoint as http://127.0.0.1:${port}; ${notRead('tls')}: call it again once DynamoDB answers`,
    );
    const raw = await failedWith(client);
    expect(mayHaveLanded(raw)).toBe(false);
    expect(faultKind(raw)).toBe('unreachable');
    // a worker's (retried, its subject told by its elector): configured outside the code, and the Region's own endpoint (something on the way answered)
    expect(namedFault(raw, WORKER, `https://127.0.0.1:${port} (AWS_ENDPOINT_URL_DYNAMODB)`).message).toBe(
      `cannot reach DynamoDB at https://127.0.0.1:${port} (AWS_ENDPOINT_URL_DYNAMODB) (${code}: wrong version number): it answers in plain HTTP, not TLS: DynamoDB Local (and \`npx conclave-local\`) speaks http://, so give the endpoint as http://127.0.0.1:${port} in AWS_ENDPOINT_URL_DYNAMODB; retrying with backoff`,
    );
    expect(namedFault(raw, WORKER, 'the DynamoDB endpoint of region eu-west-1').message).toBe(
      `cannot reach DynamoDB at the DynamoDB endpoint of region eu-west-1 (${code}: wrong version number): something on the way answered in plain HTTP, not TLS (a proxy or firewall that intercepts the connection): check the network path to it, and any proxy setting; retrying with backoff`,
    );
    client.destroy();
  });
});

describe("a table whose KMS key refuses (disabled, or the role may not use it): told as the key, not the role's grant", () => {
  const KMS_FIX =
    "the table's KMS key refused DynamoDB (disabled, pending deletion, or its key policy or grant withdrawn), or this role may not use it: check that the table's key (DescribeTable's SSEDescription.KMSMasterKeyArn) is enabled, and that the role may call kms:Decrypt and kms:DescribeKey on it";
  it.each([
    ['ValidationException', 'KMS key access denied error: com.amazonaws.services.kms.model.DisabledException: arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab is disabled. (Service: AWSKMS; Status Code: 400; Error Code: DisabledException)'],
    ['AccessDeniedException', 'User: arn:aws:sts::123456789012:assumed-role/worker/i-0 is not authorized to perform: kms:Decrypt on resource: arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab'],
  ])('%s naming KMS: DynamoDBRefusedError, denied, with the key to check; nothing landed', async (type, message) => {
    // a stand-in answering as DynamoDB does (its JSON error, a request id)
    const port = await servers.listen((req, res) => {
      req.resume();
      const body = JSON.stringify({ __type: `com.amazonaws.dynamodb.v20120810#${type}`, message });
      res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'kms-stand-in', 'content-length': Buffer.byteLength(body) }).end(body);
    });
    const client = new DynamoDBClient({ endpoint: `http://127.0.0.1:${port}`, region: 'local', credentials: LOCAL_CREDENTIALS });
    const e = await getLeaderFails(client, 'kms');
    // before (ValidationException): raw, unknown; (AccessDeniedException): "this role may not read (GetItem); grant it …"
    expect(e).toBeInstanceOf(DynamoDBRefusedError);
    expect(e).toMatchObject({ kind: 'denied', cause: { name: type } });
    expect(e.message).toBe(`getLeader of lease "kms": DynamoDB refused the request (${type}: ${message}): ${KMS_FIX}; ${notRead('kms')}: call it again once the key is usable`);
    const raw = await failedWith(client);
    expect(faultKind(raw)).toBe('denied');
    expect(mayHaveLanded(raw)).toBe(false);
    expect(namedFault(raw, WORKER, `http://127.0.0.1:${port}`).message).toBe(`${WORKER}: DynamoDB refused the request (${type}: ${message}): ${KMS_FIX}; retrying with backoff`);
    client.destroy();
  });
});
