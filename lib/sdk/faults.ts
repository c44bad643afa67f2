/**
 * Faults a worker outlives: how long it waits before trying again (client-go's jittered retry
 * period, doubling while the fault lasts, up to a cap), and the names it reports them by. A worker
 * never exits on a fault it can outlive (an unreachable endpoint, a denied or throttled request, a
 * malformed row): it tells onError, once per try, what is wrong and what to check, and tries again.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Clock, Timer } from '../clock.js';
import { unsentTold, type Sent, type Unsent } from '../connection-phase.js';
import { ValidationError } from '../schemas/validation.js';
import { answeredByDynamoDB, CREDENTIALS_REFUSED, NotDynamoDBError, PLAIN_HTTP_ANSWER, PLAIN_HTTP_ON_THE_WAY, refusedRegion, TLS_HANDSHAKE_FAILED, tlsRefusal, UNTRUSTED_CERTIFICATE_CODES, UNTRUSTED_CERTIFICATE_FIX } from '../dynamodb-answers.js';

/** A retry waits the backoff plus up to this share of it more (client-go jitters its retry period too). */
export const RETRY_JITTER = 0.2;
/** The backoff doubles per failed try in a row up to this many retry periods. */
export const RETRY_CAP_PERIODS = 4;

/**
 * How long to wait before try number `failures + 1`, after `failures` tries in a row failed:
 * the retry period, doubled per failure after the first, at most RETRY_CAP_PERIODS retry periods,
 * jittered up to RETRY_JITTER longer (`random` in [0, 1)). Never below the retry period: a fault is
 * never tried again faster than that, whatever the fault.
 */
/** The first wait before a start-up tries again after a fault it can outlive (a candidacy's first row, a heartbeat's): retryDelayMs from it. */
export const START_RETRY_MS = 1_000;

export function retryDelayMs(failures: number, retryPeriodMs: number, random: number): number {
  const doublings = Math.min(Math.max(failures, 1) - 1, Math.log2(RETRY_CAP_PERIODS));
  return retryPeriodMs * 2 ** doublings * (1 + RETRY_JITTER * random);
}

/** The most requests of one kind a process sends per lease and second while every try fails: one per retry period. */
export function maxFailingRequestsPerSecond(retryPeriodMs: number): number {
  return 1000 / retryPeriodMs;
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ECONNABORTED', ...UNTRUSTED_CERTIFICATE_CODES]);
const THROTTLED = new Set(['ThrottlingException', 'ProvisionedThroughputExceededException', 'RequestLimitExceeded', 'LimitExceededException']);
const DENIED = new Set(['AccessDeniedException', ...CREDENTIALS_REFUSED]);
/** What to do about credentials DynamoDB refused (CREDENTIALS_REFUSED): a grant would not help. */
const CREDENTIALS_REFUSED_FIX =
  "the credentials are expired or not valid (a grant would not help): renew them (an SSO login, the role's session, AWS_PROFILE or the environment) or check the secret key; a signature refused as expired means this machine's clock is more than 5 minutes off";
/**
 * DynamoDB refused the request because the table's KMS key refused it (AccessDeniedException, or a
 * ValidationException "KMS key access denied error: …"): the key disabled or pending deletion, its
 * policy or grant withdrawn, or the role may not use it. Nothing was written.
 */
const isKmsRefused = (e: Error): boolean => (e.name === 'AccessDeniedException' || e.name === 'ValidationException') && /\bKMS key\b|\bkms:[A-Za-z]|AWSKMS|\.kms\.model\.|arn:aws[\w-]*:kms:/.test(e.message);
/** What to do about a table whose KMS key refused (isKmsRefused): a grant on the table would not help. */
const KMS_REFUSED_FIX =
  "the table's KMS key refused DynamoDB (disabled, pending deletion, or its key policy or grant withdrawn), or this role may not use it: check that the table's key (DescribeTable's SSEDescription.KMSMasterKeyArn) is enabled, and that the role may call kms:Decrypt and kms:DescribeKey on it";
/**
 * A denied request's advice for `e`: when the table's KMS key refused it, KMS_REFUSED_FIX and `then`;
 * when DynamoDB refused its credentials, CREDENTIALS_REFUSED_FIX and `then`; else `role` (what the
 * role may not do, the grant, and what follows). `again`: the caller does not retry, and is told
 * when to call again.
 */
const deniedAdvice = (e: Error, role: string, then: string, again = false): string =>
  isKmsRefused(e)
    ? `${KMS_REFUSED_FIX}; ${then}${again ? ': call it again once the key is usable' : ''}`
    : CREDENTIALS_REFUSED.has(e.name)
      ? `${CREDENTIALS_REFUSED_FIX}; ${then}${again ? ': call it again once they are renewed' : ''}`
      : role;
/** The AWS SDK found no credentials, or could not refresh them (an SSO session expired, a role not assumable): nothing was sent. */
const NO_CREDENTIALS = new Set(['CredentialsProviderError', 'TokenProviderError']);
/** Such errors as namedFault named them (named once). */
const namedNoCredentials = new WeakSet<Error>();
/** `e` (NO_CREDENTIALS) named with `subject`, what to check (`whose` credentials), and `then`; the AWS SDK's own name kept, so code that tells it by name still does. */
function noCredentials(subject: string, e: Error, whose: string, then: string): Error {
  const named = new Error(`${subject}: the AWS SDK has no valid credentials (${e.name}: ${e.message}): ${credentialSourceFix(e, whose)}; ${then}`, { cause: e });
  named.name = e.name;
  namedNoCredentials.add(named);
  return named;
}

/** Where it gets them from, set for a container (ECS, EKS Pod Identity): the default chain asks it. */
const CONTAINER_CREDENTIALS = ['AWS_CONTAINER_CREDENTIALS_FULL_URI', 'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI'];
/**
 * What to check for credentials not found (noCredentials): the endpoint the provider could not
 * reach, where its message says a connection failed or a container's endpoint is set (the default
 * chain on ECS says only "Could not load credentials from any providers"); else the usual sources.
 */
function credentialSourceFix(e: Error, whose: string): string {
  const container = CONTAINER_CREDENTIALS.find((k) => process.env[k]);
  if (!container && !/ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|socket hang up/.test(e.message)) return `check ${whose} credentials (its role, AWS_PROFILE or the environment; an SSO session may need a new login)`;
  return `${container ? `${container} is set: ` : ''}check that the endpoint the credentials come from answers this process (the container's or the instance's metadata endpoint: a task or instance role given? IMDSv2's hop limit of 1 stops a container on an instance; or STS, SSO: the network path, a proxy)`;
}

/**
 * Errors a request failed with while the AWS SDK was still getting the client's credentials
 * (bounded-client.ts): its credential provider's own (the container's or instance's metadata
 * endpoint refusing or silent, STS throttling or refusing a role's assumption), not DynamoDB's,
 * whatever code they carry (ECONNREFUSED from the metadata endpoint). Nothing was sent.
 */
const failedGettingCredentials = new WeakSet<object>();

/** Notes that a request failed with `e` while the AWS SDK was still getting the client's credentials: nothing of it was sent. */
export function noteCredentialsFailed(e: unknown): void {
  if (typeof e === 'object' && e !== null) failedGettingCredentials.add(e);
}

/**
 * The credential provider's own error, when `e` is one (noteCredentialsFailed), or an answer not
 * DynamoDB's made of one (a proxy's page where STS was asked); not a region or endpoint the AWS SDK
 * refused meanwhile, nor credentials it found none of: each told as that.
 */
function providerFailure(e: unknown): Error | undefined {
  const x = e instanceof NotDynamoDBError ? e.cause : e;
  return x instanceof Error && failedGettingCredentials.has(x) && !NO_CREDENTIALS.has(x.name) && !isRegionMissing(x) && invalidEndpoint(x) === undefined && x.name !== 'EndpointError' ? x : undefined;
}

/** What to check for a credential provider that failed with `e` (providerFailure): what the service it asked answered (STS, SSO), or where it could not get them from. */
function providerFix(e: Error): string {
  const status = (e as { $metadata?: { httpStatusCode?: unknown } }).$metadata?.httpStatusCode;
  if (typeof status !== 'number')
    return "check where it gets them: the container's or the instance's metadata endpoint (reachable from this process? a task or instance role given? IMDSv2's hop limit of 1 stops a container on an instance), or STS and SSO (the network path, a proxy)";
  if (/Throttl|TooManyRequests|LimitExceeded/.test(e.name))
    return "STS throttled the provider's calls (the account's STS request rate): keep one DynamoDB client per process, whose provider caches the credentials until they near expiry, rather than a client (and a role assumed) per request";
  if (/AccessDenied/.test(e.name)) return "STS refused to let these credentials assume the role: check the role's trust policy, and that the caller may call sts:AssumeRole (sts:AssumeRoleWithWebIdentity for a web identity token)";
  if (/InvalidIdentityToken|ExpiredToken|IDPRejectedClaim|InvalidClientToken|Unauthorized/.test(e.name))
    return 'STS refused the token or credentials the provider presented (expired or not valid): renew them (the web identity token file, AWS_WEB_IDENTITY_TOKEN_FILE; the credentials that assume the role), and check the identity provider the role trusts';
  return `the service it asked (STS, SSO) answered HTTP ${status}: check the role to assume and the credentials that assume it`;
}

/**
 * `e` named as credentials the AWS SDK did not get, with `subject`, what to check (`whose`
 * credentials) and `then`, when it is that: none found (NO_CREDENTIALS, noCredentials), or their
 * provider failed (providerFailure: its own message and code kept, under the AWS SDK's name for
 * credentials it could not load). Nothing was sent. One already named as it is; else undefined.
 */
function credentialsFault(subject: string, e: unknown, whose: string, then: string): Error | undefined {
  if (!(e instanceof Error)) return undefined;
  if (namedNoCredentials.has(e)) return e;
  const failed = providerFailure(e);
  if (failed === undefined) return NO_CREDENTIALS.has(e.name) ? noCredentials(subject, e, whose, then) : undefined;
  const code = (failed as { code?: unknown }).code;
  const named = new Error(`${subject}: the DynamoDB client's credential provider failed (${failed.name}${typeof code === 'string' ? `, ${code}` : ''}: ${failed.message}), so nothing was sent to DynamoDB: ${providerFix(failed)}; ${then}`, { cause: failed });
  named.name = 'CredentialsProviderError';
  if (typeof code === 'string') Object.assign(named, { code });
  namedNoCredentials.add(named);
  return named;
}
/** DynamoDB failed the request on its side (HTTP 5xx: InternalServerError, ServiceUnavailable), after the AWS SDK's own retries. */
const isServerFault = (e: Error): boolean => (e as { $fault?: unknown }).$fault === 'server' || e.name === 'InternalServerError' || e.name === 'ServiceUnavailable';
/** Server faults as namedFault named them (named once). */
const namedServerFaults = new WeakSet<Error>();
/** Answers not DynamoDB's as namedFault named them (named once). */
const namedNotDynamoDB = new WeakSet<Error>();

/**
 * The AWS SDK found no region for the client it can send with: none (no `region` option, AWS_REGION
 * or profile), or one it refuses (refusedRegion: AWS_REGION set but empty, `'us east 1'`). Nothing
 * was sent, nor will be.
 */
const isRegionMissing = (e: Error): boolean => /^Region is missing/.test(e.message) || refusedRegion(e) !== undefined;
/** What to do about a client with no region: an endpoint does not stand in for one, DynamoDB Local's included. */
const REGION_ADVICE =
  "give it one (new DynamoDBClient({ region: 'eu-west-1' }), AWS_REGION, or the profile's region); a client of DynamoDB Local needs one too, beside its endpoint, and any name does there (region: 'local', as npx conclave-local prints it)";
/** A client with no region (isRegionMissing), named with `subject`; a region refused, with its value and where it came from when AWS_REGION holds it. */
function noRegion(subject: string, e: Error, then: string): Error {
  const refused = refusedRegion(e);
  if (refused === undefined) return new Error(`${subject}: the DynamoDB client has no region (${e.message}): ${REGION_ADVICE}; ${then}`, { cause: e });
  // the AWS SDK takes AWS_REGION as it is, an empty one too, before the profile's
  const from = process.env['AWS_REGION'] !== refused ? '' : refused === '' ? " (AWS_REGION, set but empty: it hides the profile's region)" : ' (AWS_REGION)';
  return new Error(`${subject}: the DynamoDB client's region ${JSON.stringify(refused)}${from} is not a region name (${e.message}): ${REGION_ADVICE}; ${then}`, { cause: e });
}

/**
 * The endpoint the AWS SDK could not parse as a URL (Node's ERR_INVALID_URL, e.g. `endpoint:
 * '127.0.0.1:8000'` without its scheme), when `e` is that failure: nothing was sent, nor will be.
 */
const invalidEndpoint = (e: Error): string | undefined => {
  if ((e as { code?: unknown }).code !== 'ERR_INVALID_URL') return undefined;
  const input = (e as { input?: unknown }).input;
  return typeof input === 'string' ? input : '';
};
const badEndpoint = (subject: string, e: Error, input: string, then: string, from = ''): Error =>
  new Error(
    `${subject}: the DynamoDB client's endpoint ${JSON.stringify(input)}${from} is not a URL (${e.message}): give it with its scheme, such as ${input !== '' && !input.includes('://') ? `http://${input}` : 'http://127.0.0.1:8000'} (npx conclave-local prints DynamoDB Local's); ${then}`,
    { cause: e },
  );

/** What run() says of a client no try can ever send with. */
const NEVER_SENT = 'run() rejects: no request can be sent with this client, nor will be by trying again';

/** The AWS SDK's client configuration as read here (its providers resolve the values). */
interface ClientConfig {
  region?: () => Promise<string>;
  endpoint?: () => Promise<{ protocol: string; hostname: string; port?: number; path: string }>;
  serviceConfiguredEndpoint?: () => Promise<string | undefined>;
  ignoreConfiguredEndpointUrls?: boolean;
}

/** Where an endpoint the client did not get as its option came from: the variable that holds it, else the profile. */
const configuredFrom = (configured: string): string => ['AWS_ENDPOINT_URL_DYNAMODB', 'AWS_ENDPOINT_URL'].find((k) => process.env[k] === configured) ?? "the profile's endpoint_url";

interface GivenEndpoint {
  given: string;
  /** Where a configured one came from, as ` (AWS_ENDPOINT_URL_DYNAMODB)`; empty for the option. */
  from: string;
  /** Its host; throws for a configured one that is no URL. */
  host(): string;
}

/** The client's endpoint: its option, else one configured (a variable, the profile); undefined for the Region's own. Throws what resolving the option throws. */
async function givenEndpoint(config: ClientConfig): Promise<GivenEndpoint | undefined> {
  if (typeof config.endpoint === 'function') {
    const e = await config.endpoint();
    // (an endpoint given as a URL object is passed on as it is: its path is `pathname`)
    return { given: `${e.protocol}${e.path ?? (e as { pathname?: string }).pathname ?? ''}`, from: '', host: () => e.hostname };
  }
  const configured = config.ignoreConfiguredEndpointUrls ? undefined : await config.serviceConfiguredEndpoint?.();
  if (configured === undefined) return undefined;
  return { given: configured, from: ` (${configuredFrom(configured)})`, host: () => new URL(configured).hostname };
}

/** The Conclave table prefixes DynamoDB Local on this machine holds, by the "not found" a request there met (noteLocalPrefixes). */
const localPrefixes = new WeakMap<object, readonly string[]>();

/**
 * Notes the Conclave table prefixes (`prefixes`, closest to the one asked first) that DynamoDB Local
 * on this machine holds, where `error` is its "not found" for a table (boundedClient lists them
 * there, never off this machine: a worker's role in AWS may not list tables), for TableNotFoundError
 * to say.
 */
export function noteLocalPrefixes(error: object, prefixes: readonly string[]): void {
  localPrefixes.set(error, prefixes);
}

/** The prefixes noteLocalPrefixes noted on `error`; undefined for any other error (off this machine, or not listed). */
export const localPrefixesOf = (error: unknown): readonly string[] | undefined => (typeof error === 'object' && error !== null ? localPrefixes.get(error) : undefined);

/**
 * Whether `client` sends to this machine (a loopback host: local mode's DynamoDB Local). A worker
 * there does not ask EC2's metadata service for its platform: `platform: 'detect'` asked it, off
 * this machine, at every start of the README's quick start, and a developer's instance would have
 * been the candidates' platform (a task metadata endpoint named in the environment is still asked:
 * local mode's ECS task, lib/local/ecs-task.ts).
 */
export async function sendsToThisMachine(client: DynamoDBClient): Promise<boolean> {
  const config = client.config as ClientConfig | undefined;
  if (typeof config?.region !== 'function') return false;
  const host = await givenEndpoint(config).then((e) => e?.host().replace(/^\[|\]$/g, ''), () => undefined);
  return host !== undefined && (host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host));
}

/**
 * Why `client` can never send a request, when it cannot: no region (the AWS SDK's "Region is
 * missing": no `region` option, AWS_REGION or profile) or one it refuses (AWS_REGION set but
 * empty, `'us east 1'`), an endpoint that is not a URL
 * (`'127.0.0.1:8000'`), or one with no host (`'localhost:8000'`: its host read as the scheme),
 * given as the option or configured (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, the profile's
 * endpoint_url). An Error naming `subject`, what is wrong and the fix, then `then` (by default:
 * run() rejects); undefined when it can send. Credentials are not looked at: a provider may load them later.
 */
export async function unusableClient(client: DynamoDBClient, subject: string, then = NEVER_SENT): Promise<Error | undefined> {
  const config = client.config as ClientConfig | undefined;
  if (typeof config?.region !== 'function') return undefined; // not the AWS SDK's client (a model's): nothing to look at
  try {
    await config.region();
  } catch (e) {
    // any other failure is the requests' to meet and tell
    return e instanceof Error && isRegionMissing(e) ? noRegion(subject, e, then) : undefined;
  }
  let endpoint: GivenEndpoint | undefined;
  let host: string;
  try {
    endpoint = await givenEndpoint(config);
    if (endpoint === undefined) return undefined;
    host = endpoint.host();
  } catch (e) {
    const input = e instanceof Error ? invalidEndpoint(e) : undefined;
    return input === undefined ? undefined : badEndpoint(subject, e as Error, input, then, endpoint?.from ?? '');
  }
  if (host !== '') return undefined;
  const { given, from } = endpoint;
  const meant = /^[A-Za-z][A-Za-z0-9+.-]*:\d+(\/.*)?$/.test(given) ? `http://${given}` : 'http://127.0.0.1:8000';
  return new Error(`${subject}: the DynamoDB client's endpoint ${JSON.stringify(given)}${from} has no host (its host read as the scheme): give it with its scheme, such as ${meant} (npx conclave-local prints DynamoDB Local's); ${then}`);
}

/** The system error code of a failed connection (Node puts it on the error, or on each of an AggregateError's). */
function networkCode(e: unknown): string | undefined {
  if (!(e instanceof Error)) return undefined;
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || tlsRefusal(e) !== undefined)) return code;
  if (e.name === 'TimeoutError') return 'timed out';
  const inner = (e as { errors?: unknown[] }).errors ?? [];
  for (const x of inner) {
    const c = networkCode(x);
    if (c) return c;
  }
  return undefined;
}

/**
 * A write refused because a transaction held the item at that moment (TransactionConflictException,
 * which the AWS SDK does not retry): on the lease row, this worker's own fenced writes, whose
 * transactions check it. Nothing was written; the write may go again a moment later.
 */
export function isContended(e: unknown): boolean {
  return e instanceof Error && e.name === 'TransactionConflictException';
}

/** What kind of fault `e` is, for its name and advice. */
export type FaultKind = 'unreachable' | 'throttled' | 'denied' | 'invalidRow' | 'other';

export function faultKind(e: unknown): FaultKind {
  // credentials not got: nothing sent, whatever code their provider's failure carries
  if (e instanceof Error && (NO_CREDENTIALS.has(e.name) || providerFailure(e) !== undefined)) return 'other';
  if (networkCode(e)) return 'unreachable';
  if (!(e instanceof Error)) return 'other';
  if (THROTTLED.has(e.name)) return 'throttled';
  if (DENIED.has(e.name) || isKmsRefused(e)) return 'denied';
  if (e instanceof ValidationError) return 'invalidRow';
  return 'other';
}

/**
 * Whether a write that failed with `e` may have landed all the same: its answer lost (a timeout, a
 * connection reset), DynamoDB failing on its side, or any failure after the AWS SDK sent it more
 * than once (`$metadata.attempts`: an earlier try's answer may have been lost, and the last try
 * refused, throttled say, tells nothing of it). Not a throttled or denied request tried once, a row
 * the schema refuses, or a request never sent (no credentials, or their provider failed; no region;
 * a TLS handshake refused, tried once): those wrote nothing.
 */
export function mayHaveLanded(e: unknown): boolean {
  if (!(e instanceof Error)) return true;
  if (NO_CREDENTIALS.has(e.name) || providerFailure(e) !== undefined || isRegionMissing(e) || invalidEndpoint(e) !== undefined || e instanceof ValidationError) return false;
  const attempts = (e as { $metadata?: { attempts?: unknown } }).$metadata?.attempts;
  if (typeof attempts === 'number' && attempts > 1) return true;
  if (tlsRefusal(e) !== undefined) return false;
  const kind = faultKind(e);
  return kind !== 'throttled' && kind !== 'denied';
}

/**
 * What a write refused by a ReplicatedWriteConflictException `e` (a multi-Region table: another
 * Region wrote the item at that moment) left, as the worker judges it (mayHaveLanded): not applied;
 * or, its last try refused but the write maybe landed all the same (an earlier try of the AWS SDK's,
 * its answer lost), that and `inDoubt`, what the worker does about it.
 */
export function replicatedConflictLeft(e: unknown, inDoubt: string): string {
  if (!mayHaveLanded(e)) return 'this write was not applied';
  const attempts = (e as { $metadata?: { attempts?: unknown } }).$metadata?.attempts;
  const why = typeof attempts === 'number' && attempts > 1 ? `the AWS SDK sent it ${attempts} times, and an earlier try may have landed, its answer lost` : 'the write may have landed all the same';
  return `its last try was not applied, but ${why}: ${inDoubt}`;
}

/** The AWS SDK's last failed try of a request abandoned at its bound, the SDK trying it again as the bound passed (after a throttle, say): by the error it was abandoned with. */
const lastTries = new WeakMap<object, Error>();

/** Notes that the request abandoned with `abandoned` (its bound's RequestBoundError) had last failed with `lastTry`, DynamoDB's answer or not. */
export function noteLastTry(abandoned: unknown, lastTry: Error | undefined): void {
  if (lastTry !== undefined && typeof abandoned === 'object' && abandoned !== null) lastTries.set(abandoned, lastTry);
}

/**
 * Requests abandoned at their bound before the AWS SDK began their first try, their credentials
 * come: held in the process by the client's retry strategy. The adaptive retry mode (`retryMode:
 * 'adaptive'`) does that, slowing every request of the client once DynamoDB throttled some.
 */
const heldClientSide = new WeakSet<object>();

/** Notes that the request abandoned with `abandoned` (its bound's RequestBoundError) was held by its client's retry strategy, never tried. */
export function noteHeldClientSide(abandoned: object): void {
  heldClientSide.add(abandoned);
}

/** A client's connection pool, full: its size (maxSockets) and the requests waiting for a socket. */
export interface FullPool {
  readonly maxSockets: number;
  readonly waiting: number;
}

/** Requests abandoned at their bound while their client's connection pool was full (noteFullPool). */
const fullPools = new WeakMap<object, FullPool>();

type Agent = { readonly maxSockets?: unknown; readonly sockets?: Record<string, unknown[] | undefined>; readonly requests?: Record<string, unknown[] | undefined> };

/**
 * `client`'s connection pool, when it is full now: for some host, every socket its HTTP agent may
 * open in use (maxSockets: 50 unless the client was given more) and requests queued for one. Read
 * from Node's http.Agent (its documented `sockets`, `requests` and `maxSockets`), reached through
 * the AWS SDK's Node.js request handler's resolved config, which the SDK does not document: where
 * it is not found, undefined (nothing is claimed).
 */
export function fullConnectionPool(client: object): FullPool | undefined {
  const handler = (client as { config?: { requestHandler?: { config?: { httpAgent?: Agent; httpsAgent?: Agent } } } }).config?.requestHandler;
  for (const agent of [handler?.config?.httpAgent, handler?.config?.httpsAgent]) {
    if (typeof agent?.maxSockets !== 'number' || !Number.isFinite(agent.maxSockets)) continue;
    for (const [host, queued] of Object.entries(agent.requests ?? {}))
      if ((queued?.length ?? 0) > 0 && (agent.sockets?.[host]?.length ?? 0) >= agent.maxSockets) return { maxSockets: agent.maxSockets, waiting: queued!.length };
  }
  return undefined;
}

/** Notes that the request abandoned with `abandoned` (its bound's RequestBoundError) was abandoned while its client's connection pool was `pool`, full. */
export function noteFullPool(abandoned: object, pool: FullPool): void {
  fullPools.set(abandoned, pool);
}

/** A request abandoned at its bound while its client's pool was full (noteFullPool), named with `subject`, the pool, what to do, and `then`; else undefined. */
function waitedOnPool(subject: string, e: Error, then: string): Error | undefined {
  const pool = fullPools.get(e);
  if (!pool) return undefined;
  const boundMs = (e as { boundMs?: unknown }).boundMs;
  const named = new Error(
    `${subject}: no answer within ${typeof boundMs === 'number' ? Math.round(boundMs) : '?'} ms, the request abandoned, while the DynamoDB client's connection pool was full (all ${pool.maxSockets} sockets its HTTP agent may open in use, ${pool.waiting} request${pool.waiting === 1 ? '' : 's'} waiting for one): ` +
      `this process's other requests on the same client (a leader's own work, say) hold the sockets, and Conclave's requests wait behind them; give the LeaderElector (and Session) a DynamoDBClient of their own, or the client a larger pool (new DynamoDBClient({ requestHandler: { httpsAgent: { maxSockets: 500 } } }), httpAgent for an http endpoint); ${then}`,
    { cause: e },
  );
  // the AWS SDK's name for a timeout, as the bound's own error has it: code that tells faults by name treats both alike
  named.name = e.name;
  return named;
}

/** The system's codes for a file descriptor refused: this process's limit (EMFILE) or the machine's (ENFILE). */
const NO_DESCRIPTORS = new Set(['EMFILE', 'ENFILE']);
/** Such errors as descriptorsOut named them (named once). */
const namedNoDescriptors = new WeakSet<Error>();

/**
 * A connection refused a file descriptor (`e`'s code, or one of an AggregateError's, EMFILE or
 * ENFILE), named with `subject`, what ran out, what to do, and `then`: nothing was sent. It reached
 * onError as Node's bare "connect EMFILE 127.0.0.1:8000 - Local" (a review, 2026-12-07, ninth).
 * undefined for any other error. The name and code are kept: code that tells faults by them still does.
 */
function descriptorsOut(subject: string, e: Error, then: string): Error | undefined {
  if (namedNoDescriptors.has(e)) return e;
  const code = [e, ...((e as { errors?: unknown[] }).errors ?? [])].map((x) => (x as { code?: unknown } | undefined)?.code).find((c): c is string => typeof c === 'string' && NO_DESCRIPTORS.has(c));
  if (code === undefined) return undefined;
  const whose = code === 'EMFILE' ? "this process has no file descriptor left (its limit: ulimit -n, systemd's LimitNOFILE, the container's nofile)" : 'the machine has no file descriptor left (its limit: fs.file-max)';
  const named = new Error(`${subject}: could not open a connection to DynamoDB: ${whose} (${code}: ${e.message}): nothing was sent; raise the limit, or find what holds descriptors open (sockets or files never closed, a client made per request); ${then}`, { cause: e });
  named.name = e.name;
  Object.assign(named, { code });
  namedNoDescriptors.add(named);
  return named;
}

/** Requests abandoned at their bound with where their last try was seen to stand: not yet sent, or sent on a connection made. */
const onTheWay = new WeakMap<object, Unsent | Sent>();

/**
 * Notes that the request abandoned with `abandoned` (its bound's RequestBoundError) had its last try
 * `unsent`: looking up the endpoint's name, connecting, or in the TLS handshake; or seen sent on a
 * connection made (Sent: connection-phase.ts saw its socket connected, or a network that is no
 * Node.js http, the simulator's, took it), the only evidence DynamoDBUnreachableError tells a
 * request as taken and unanswered on.
 */
export function noteOnTheWay(abandoned: object, unsent: Unsent | Sent): void {
  onTheWay.set(abandoned, unsent);
}

/** For a request abandoned on its way out (noteOnTheWay): how far it got, and what to check. */
function notSent(cause: Error): { readonly how: string; readonly fix: string } | undefined {
  const at = onTheWay.get(cause);
  return at && at.phase !== 'sent' ? unsentTold(at, (cause as { boundMs?: number }).boundMs ?? 0) : undefined;
}

/**
 * The client's own HTTP handler ended the request at a timeout the user gave it (its requestHandler
 * option `requestTimeout` with `throwOnRequestTimeout`, `connectionTimeout` or `socketTimeout`; the
 * older handlers' wording too): told with the option and its value, not as DynamoDB out of reach.
 * DynamoDB answers in milliseconds, but a new connection's handshakes, a throttled try's backoff or
 * a busy DynamoDB Local take longer, and a bound shorter than that fails requests DynamoDB answers.
 */
function handlerTimeout(cause: Error): { readonly how: string; readonly fix: string; readonly unsent?: true } | undefined {
  if (cause.name !== 'TimeoutError') return undefined;
  const m = cause.message;
  const told = (option: string, ms: string, before: string) => ({
    how: `at the client's own ${option} of ${ms} ms, its requestHandler option: ${before}`,
    fix: `DynamoDB answers within milliseconds, but a new connection, a retried try or a busy DynamoDB Local takes longer: raise ${option} to a second or more, or leave it out (Conclave bounds each request itself)`,
  });
  let x: RegExpExecArray | null;
  if ((x = /exceeded the configured (\d+) ms requestTimeout/.exec(m)) || (x = /^Connection timed out after (\d+) ms$/.exec(m))) return told('requestTimeout', x[1]!, 'no answer by then');
  if ((x = /did not establish a connection with the server within the configured timeout of (\d+) ms/.exec(m)) || (x = /^Socket timed out without establishing a connection within (\d+) ms$/.exec(m)))
    return { ...told('connectionTimeout', x[1]!, 'no connection by then'), fix: `check the route to DynamoDB, and raise connectionTimeout to a second or more, or leave it out (Conclave bounds each request itself)`, unsent: true };
  if ((x = /socket timed out after (\d+) ms of inactivity \(configured by client requestHandler\)/.exec(m))) return told('socketTimeout', x[1]!, 'the connection idle that long');
  return undefined;
}

/** Requests abandoned at their bound before the AWS SDK sent any try: it was still getting the client's credentials; with how the call before failed, when it failed after its requests were abandoned. */
const unsentAtBound = new WeakMap<object, Error | undefined>();

/** Notes that the request abandoned with `abandoned` (its bound's RequestBoundError) was never sent: its credentials had not come; `failedSince`, the provider's failure of the call before, not told yet. */
export function noteUnsent(abandoned: object, failedSince?: Error): void {
  unsentAtBound.set(abandoned, failedSince);
}

/**
 * A request not sent because the DynamoDB client's credential provider had not answered in
 * `waitedMs` (bounded-client.ts), and how its call before this one failed (`failedSince`) when it
 * failed after the requests waiting on it were abandoned: named as the AWS SDK names credentials it
 * could not load (CredentialsProviderError), so code that tells that fault by name tells this one
 * too; nothing was sent. A provider's timeout needs throwOnRequestTimeout: without it the AWS SDK's
 * Node.js handler only logs a warning at requestTimeout and waits on.
 */
export function credentialsAwaited(waitedMs: number, failedSince?: Error): Error {
  const code = (failedSince as { code?: unknown } | undefined)?.code;
  const since = failedSince === undefined ? '' : `; the call before this one, its requests abandoned, failed since (${failedSince.name}${typeof code === 'string' ? `, ${code}` : ''}: ${failedSince.message})`;
  const e = new Error(
    `the DynamoDB client's credential provider has not answered within ${Math.round(waitedMs)} ms, and the AWS SDK sends none of this client's requests until it does (a credential_process waiting for input; STS, SSO or the instance metadata unreachable with no request timeout)${since}: ` +
      "give the provider a timeout (its clientConfig's requestHandler: { requestTimeout, throwOnRequestTimeout: true }; requestTimeout alone only logs a warning); a client given no credentials (the default chain, as on ECS or EKS) takes none: " +
      "point the liveness probe at the worker's health check (serveHealth's /healthz, LeaderElector.healthy()), which fails once the client is held over a minute, so a restart ends it",
  );
  e.name = 'CredentialsProviderError';
  return e;
}

/** `e`, or for a request abandoned at its bound before it was sent (noteUnsent), credentialsAwaited: what held it. */
const unsentAs = (e: unknown): unknown => (e instanceof Error && unsentAtBound.has(e) ? credentialsAwaited((e as { boundMs?: number }).boundMs ?? 0, unsentAtBound.get(e)) : e);

/** What DynamoDB answered to the last try of a request abandoned with `e` (noteLastTry), when it did answer. */
const answeredLastTry = (e: Error): Error | undefined => {
  const last = lastTries.get(e);
  return last !== undefined && typeof (last as { $metadata?: { httpStatusCode?: unknown } }).$metadata?.httpStatusCode === 'number' ? last : undefined;
};

/**
 * For an endpoint not on this machine, when this process's environment names a proxy (HTTPS_PROXY,
 * HTTP_PROXY, either case): that the AWS SDK's Node.js HTTP handler does not go through it by itself
 * (a network that reaches AWS only through a proxy then reaches nothing). Else nothing.
 */
function proxyUnused(endpoint: string): string {
  if (/^https?:\/\/(localhost|127\.|\[::1\])/i.test(endpoint)) return '';
  const named = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'].find((k) => process.env[k]);
  return named === undefined
    ? ''
    : `; ${named} is set in this process's environment, but the AWS SDK's HTTP handler does not go through a proxy by itself: if DynamoDB is reached only through it, give the DynamoDB client a requestHandler whose agent does`;
}

/**
 * A request that timed out after it was sent (abandoned at its bound, or at a leader's renew
 * deadline, its last try seen sent on a connection made, noteOnTheWay: not still looking up the endpoint's name, connecting or in its
 * TLS handshake, nor a try of which nothing was seen; not at a timeout of the client's own, handlerTimeout; not held in the
 * process, the credentials awaited or the pool full, each told as that), told by `endpoint`: DynamoDB
 * took it and gave no answer within its bound. So DynamoDB is slow, or the connection was cut off
 * once made: both are named. A DynamoDB reachable and slow (a multi-Region strongly consistent table
 * whose write quorum is a Region away, an overloaded endpoint) was told "cannot reach DynamoDB …:
 * check the client's endpoint and region" for every renewal it answered late, its leases leaderless
 * for minutes. For a `worker`'s request (retried), the renewal's gap too: a renewal must land within
 * renewDeadlineMs - renewIntervalMs of being sent (docs/deploy.md, "Timings across Regions").
 */
function sentUnanswered(endpoint: string, cause: Error, worker: boolean): string {
  const boundMs = (cause as { boundMs?: unknown }).boundMs;
  const within = typeof boundMs === 'number' ? `${Math.round(boundMs)} ms` : 'its bound';
  const path = "check the network path to the endpoint (a route, NAT, proxy or firewall that drops a flow once made; the client's endpoint and region; a DynamoDB Local wedged or starved of CPU)";
  const gap =
    "; if DynamoDB is reachable but slow (a multi-Region table whose write quorum is a Region away, an overloaded endpoint), a leader's renewal must land within renewDeadlineMs - renewIntervalMs of being sent " +
    "(4 s at a coordinated leader's defaults; make it about twice the slowest write): widen that gap, lengthening renewDeadlineMs with leaseDurationMs and retryPeriodMs " +
    '(docs/deploy.md, "One leader across Regions", "Timings across Regions")';
  return `DynamoDB at ${endpoint} took the request and gave no answer within ${within} (timed out after it was sent on a connection made: DynamoDB slow to answer, or the connection cut off on the way): ${path}${worker ? gap : ''}`;
}

/**
 * What to do about a TLS handshake refused at `endpoint` (tlsRefusal): an https:// endpoint given or
 * configured that answers in plain HTTP is DynamoDB Local's, to be given as http:// (where it was
 * given); at the Region's, something on the way answered.
 */
function tlsFix(endpoint: string, plainText: boolean): string {
  if (!plainText) return `${TLS_HANDSHAKE_FAILED}: check the client's endpoint, and any proxy on the way that intercepts TLS`;
  const given = /^(https:\/\/\S+?)(?: \((.+)\))?$/i.exec(endpoint);
  if (!given) return `${PLAIN_HTTP_ON_THE_WAY}: check the network path to it, and any proxy setting`;
  return `${PLAIN_HTTP_ANSWER}, so give the endpoint as ${given[1]!.replace(/^https:/i, 'http:')}${given[2] ? ` in ${given[2]}` : ''}`;
}

/**
 * DynamoDB could not be reached: the connection was refused, reset or timed out, or the host
 * name did not resolve. A worker's request is retried with backoff; a call that does not retry
 * (getLeader, withLease's first reads) names itself and what it did not read. The message names
 * the endpoint and what to check.
 */
export class DynamoDBUnreachableError extends Error {
  /** Always `DynamoDBUnreachableError`. */
  override readonly name = 'DynamoDBUnreachableError';
  constructor(
    /** Where the client sends its requests, e.g. `http://127.0.0.1:8000`, `the DynamoDB endpoint of region eu-west-1`, or one configured outside the code with where it came from: `http://127.0.0.1:8000 (AWS_ENDPOINT_URL_DYNAMODB)`. */
    readonly endpoint: string,
    /** The system's code, e.g. `ECONNREFUSED`, or `timed out`. */
    readonly code: string,
    /** The error the request failed with. */
    override readonly cause: Error,
    /** The call that does not retry, e.g. `getLeader of lease "jobs"`. @default a worker's request, retried */
    subject?: string,
    /** For such a call: what was not done and what to do. */
    advice?: string,
  ) {
    const own = handlerTimeout(cause);
    const unsent = notSent(cause) ?? own;
    const tls = tlsRefusal(cause);
    // timed out, its last try seen sent on a connection made (noteOnTheWay): nothing seen (a requestHandler not Node's http: fetch, undici, http2) is no evidence
    const sent = code === 'timed out' && onTheWay.get(cause)?.phase === 'sent' && own === undefined && endpoint !== LOCAL_REGION_ENDPOINT;
    super(
      `${subject !== undefined ? `${subject}: ` : ''}${
        sent
          ? sentUnanswered(endpoint, cause, subject === undefined)
          : `cannot reach DynamoDB at ${endpoint} (${own ? 'timed out' : tls ? `${code}: ${tls.reason}` : code}${unsent ? ` ${unsent.how}` : ''}): ${endpoint === LOCAL_REGION_ENDPOINT ? LOCAL_REGION_FIX : tls ? tlsFix(endpoint, tls.plainText) : UNTRUSTED_CERTIFICATE_CODES.has(code) ? UNTRUSTED_CERTIFICATE_FIX : (unsent?.fix ?? "check the client's endpoint and region, and that DynamoDB (or DynamoDB Local: npx conclave-local) is up")}`
      }${UNTRUSTED_CERTIFICATE_CODES.has(code) ? '' : proxyUnused(endpoint)}; ${advice ?? 'retrying with backoff'}`,
    );
  }
}

/**
 * A coordinated worker took its lease itself: the lease stood vacant with no coordinator electing
 * anyone (a vacancy report or election unanswered, or `fallbackAfterMs` passed), so its term was
 * not chosen by versions or priority (KEP-4355). It leads, as the fallback intends; reported to
 * onError once per such take, as a fault of the deployment: no coordinator runs on these tables
 * (the construct not deployed, other table names, local mode not started), or it fails, or the
 * strategies leave the lease to no one: the coordinator elects only under OldestEmulationVersion,
 * and leaves alone a lease whose strategy (an operator's, else the candidates' consensus) is
 * another, a third party's, or whose candidates' strategies contradict.
 */
export class NoCoordinatorError extends Error {
  /** Always `NoCoordinatorError`. */
  override readonly name = 'NoCoordinatorError';
  constructor(
    /** The lease taken. */
    readonly leaseName: string,
    /** The worker that took it. */
    readonly identity: string,
    /** How long it had stood vacant when taken, as this worker saw it, in whole milliseconds. */
    readonly vacantMs: number,
    /**
     * What the worker saw of the strategies that may be why nobody elected: its own
     * preferredStrategies (best first) when the first is not OldestEmulationVersion, the lease's
     * strategy when an operator set another, the coordinator's recorded failure when the
     * candidates' strategies contradicted (its message). Each given is named in the message.
     * @default none seen
     */
    readonly strategies: { readonly preferred?: readonly string[]; readonly lease?: string; readonly contradiction?: string } = {},
  ) {
    const { preferred, lease, contradiction } = strategies;
    const seen = [
      lease !== undefined ? `the lease's strategy is "${lease}", set by an operator (\`conclave set-strategy ${leaseName} --clear\` lets the candidates decide)` : '',
      contradiction !== undefined ? `the coordinator recorded: ${contradiction}` : '',
      preferred?.length ? `this worker prefers ${preferred.map((p) => `"${p}"`).join(', ')}` : '',
    ].filter(Boolean);
    const rule = `the coordinator elects only under OldestEmulationVersion, and leaves alone a lease whose strategy (an operator's, else the candidates' consensus) is another (NoCoordination, a third party's such as example.com/my-strategy), or whose candidates' strategies contradict (\`conclave describe lease ${leaseName}\` shows the strategy in force and each candidate's)`;
    const coordinator = `that Conclave's coordinator runs on these tables (the Conclave construct's coordinator and stream functions, deployed with these table names; locally, npx conclave-local)`;
    super(
      `LeaderElector "${identity}" of lease "${leaseName}" took the lease itself after it stood vacant ${(vacantMs / 1000).toFixed(1)} s with no coordinator electing anyone (the fallback): its term was not chosen by versions or priority. ` +
        (seen.length
          ? `The strategies may be why nobody elects: ${seen.join('; ')}; ${rule}. Make the candidates' preferredStrategies agree on OldestEmulationVersion, or run the third party that elects under theirs; else check ${coordinator}`
          : `Check ${coordinator}, and that the candidates' strategies let it elect: ${rule}`) +
        `; or give mode: 'NoCoordination' for a plain race without one`,
    );
  }
}

/**
 * A leader's term ended at its renew deadline only because this process did not run the elector:
 * the deadline was judged `lateMs` after it passed, when the elector checks its term at least once
 * a retry period. Its renewals were not tried in time; nothing else failed. The usual causes:
 * synchronous work holding Node's event loop (a long computation, a blocking call), the process
 * stopped or starved of CPU (SIGSTOP, a debugger, a frozen container, a CPU limit), or the machine
 * suspended. Reported to onError once per such term; the worker stands for the lease again.
 */
export class LeaderStalledError extends Error {
  /** Always `LeaderStalledError`. */
  override readonly name = 'LeaderStalledError';
  constructor(
    /** The lease whose term ended. */
    readonly leaseName: string,
    /** The worker that led it. */
    readonly identity: string,
    /** How long past its renew deadline the term was judged over, in whole milliseconds: at least that long, nothing of the elector ran. */
    readonly lateMs: number,
  ) {
    super(
      `LeaderElector "${identity}" of lease "${leaseName}" stopped leading ${(lateMs / 1000).toFixed(1)} s past its renew deadline: for at least that long this process ran none of the elector's timers, so its term was not renewed in time. ` +
        `Look for synchronous work holding the event loop (run CPU-bound work in a worker thread, or await between slices of it), a process stopped or starved of CPU (SIGSTOP, a debugger, a frozen container, a CPU limit; a Lambda function between invocations, where withLease is the tool), or a suspended machine`,
    );
  }
}

/**
 * DynamoDB answered, and refused: too many requests (throttled), or not allowed (IAM, credentials).
 * A worker's request is retried with backoff; a call that does not retry (getLeader, withLease's
 * first reads) names itself and what it did not read. The message says which and what to check.
 */
export class DynamoDBRefusedError extends Error {
  /** Always `DynamoDBRefusedError`. */
  override readonly name = 'DynamoDBRefusedError';
  constructor(
    /** `throttled`: too many requests; `denied`: not allowed (IAM, credentials). */
    readonly kind: 'throttled' | 'denied',
    /** What was being done, e.g. `LeaderElector "w1" of lease "jobs"`. */
    readonly subject: string,
    /** DynamoDB's error. */
    override readonly cause: Error,
    /** What was refused and what to check, when it is not a worker's retried request. @default the worker's role (grantWorker) and credentials; retried */
    advice?: string,
  ) {
    super(
      kind === 'throttled'
        ? `${subject}: ${heldClientSide.has(cause) ? heldLine(cause) : `DynamoDB throttled the request (${cause.name})`}: ${advice ?? "the table's capacity is exhausted (on-demand tables: a hot partition, or the account's limit); retrying with backoff"}`
        : `${subject}: DynamoDB refused the request (${cause.name}: ${cause.message}): ${advice ?? "check the worker's role (grantWorker) and credentials; retrying with backoff"}`,
    );
  }
}

/** A request its client's retry strategy held (noteHeldClientSide), as DynamoDBRefusedError tells it. */
const heldLine = (held: Error): string => {
  const boundMs = (held as { boundMs?: unknown }).boundMs;
  return `the AWS SDK held the request in this process${typeof boundMs === 'number' ? ` for ${Math.round(boundMs)} ms` : ''} and never sent it (the client's retry mode is adaptive, which slows every request once DynamoDB throttled some, a renewal past its deadline too: give Conclave a client in the standard retry mode)`;
};

/**
 * `sent`'s answer, when DynamoDB gave it; else a rejection with a NotDynamoDBError naming where
 * `client` sends its requests (lib/dynamodb-answers.ts).
 */
export function fromDynamoDB<T>(sent: Promise<T>, client: DynamoDBClient): Promise<T> {
  return answeredByDynamoDB(sent, () => endpointOf(client));
}

/**
 * Where a client with local mode's region and no endpoint sends its requests: the AWS SDK's rules
 * send region `local` to http://localhost:8000 (DynamoDB Local's default port), so a DynamoDB Local
 * there is reached, and one that is not there yet may be later (retried); where nothing answers,
 * the fix is the endpoint local mode prints.
 */
// lib/stores/client.ts' LOCAL_REGION, not imported: that module loads the AWS SDK's client, which the
// decisions (step.ts) and the push entry must not (test/packaging/import-graph.test.ts)
const LOCAL_REGION = 'local';
const LOCAL_REGION_ENDPOINT = `the DynamoDB endpoint of region ${LOCAL_REGION}`;
const LOCAL_REGION_FIX =
  `region '${LOCAL_REGION}' is local mode's, and the client has no endpoint (the AWS SDK then sends to http://localhost:8000, DynamoDB Local's default port, where nothing answered): give it the endpoint \`npx conclave-local\` prints (CONCLAVE_ENDPOINT) or startLocalConclave()'s \`endpoint\` ` +
  `(new DynamoDBClient({ endpoint, region: '${LOCAL_REGION}', credentials }), or AWS_ENDPOINT_URL_DYNAMODB)`;

/**
 * Where `client` sends its requests: its endpoint option; else one configured outside the code,
 * which the AWS SDK sends to as well (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, or the profile's
 * endpoint_url: named with where it came from); else the Region's DynamoDB endpoint.
 */
export async function endpointOf(client: DynamoDBClient): Promise<string> {
  try {
    const config = client.config as ClientConfig;
    if (config.endpoint) {
      const e = await config.endpoint();
      return `${e.protocol}//${e.hostname}${e.port ? `:${e.port}` : ''}${e.path === '/' ? '' : e.path}`;
    }
    const configured = config.ignoreConfiguredEndpointUrls ? undefined : await config.serviceConfiguredEndpoint?.();
    if (configured) return `${configured.replace(/\/$/, '')} (${configuredFrom(configured)})`;
    return `the DynamoDB endpoint of region ${await config.region!()}`;
  } catch {
    return 'the client\'s endpoint (not resolvable: is a region set?)';
  }
}

/**
 * `e`, named for what it is: a DynamoDBUnreachableError (naming `endpoint`) or a
 * DynamoDBRefusedError; credentials the AWS SDK could not load, under the SDK's name with `subject`
 * and what to check; a client with no region, with `subject` and where to give one; an endpoint
 * that is no URL, with `subject`, the endpoint and the URL meant (one with no host, `host:port`, is
 * refused before run() sends anything: unusableClient); a fault on
 * DynamoDB's side (HTTP 5xx), under the SDK's name with `subject` and that it is retried; an answer
 * not DynamoDB's (NotDynamoDBError, fromDynamoDB) as it is; any other error as it is (a ValidationError already names the row and field).
 */
export function namedFault(e: unknown, subject: string, endpoint: string, denied = "check the worker's role (grantWorker) and credentials; retrying with backoff"): Error {
  const unsent = unsentAs(e);
  const error = unsent instanceof Error ? unsent : new Error(String(unsent));
  if (error instanceof DynamoDBUnreachableError || error instanceof DynamoDBRefusedError || namedNoCredentials.has(error)) return error;
  if (error instanceof NotDynamoDBError && providerFailure(error) === undefined) {
    if (namedNotDynamoDB.has(error)) return error;
    const named = new NotDynamoDBError(error.endpoint, error.httpStatusCode, error.sign, error.cause, undefined, 'retrying with backoff');
    namedNotDynamoDB.add(named);
    return named;
  }
  // abandoned while the AWS SDK held it before its first try (adaptive retries), or tried again
  // what DynamoDB refused or failed: told as that, not as "cannot reach DynamoDB"
  if (heldClientSide.has(error)) return new DynamoDBRefusedError('throttled', subject, error);
  const answered = answeredLastTry(error);
  if (answered) return namedFault(answered, subject, endpoint, denied);
  const pooled = waitedOnPool(subject, error, 'retrying with backoff');
  if (pooled) return pooled;
  if (isRegionMissing(error)) return noRegion(subject, error, 'retrying with backoff');
  const input = invalidEndpoint(error);
  if (input !== undefined) return badEndpoint(subject, error, input, 'retrying with backoff');
  // credentials not got (none found, or their provider failed): before any code it carries, as nothing was sent to DynamoDB
  const credentials = credentialsFault(subject, error, "the worker's", 'retrying with backoff');
  if (credentials) return credentials;
  const descriptors = descriptorsOut(subject, error, 'retrying with backoff');
  if (descriptors) return descriptors;
  const code = networkCode(error);
  if (code) return new DynamoDBUnreachableError(endpoint, code, error);
  const kind = faultKind(error);
  if (kind === 'throttled') return new DynamoDBRefusedError(kind, subject, error);
  if (kind === 'denied') return new DynamoDBRefusedError(kind, subject, error, deniedAdvice(error, denied, 'retrying with backoff'));
  if (error.name === 'ReplicatedWriteConflictException' && !namedServerFaults.has(error)) {
    // a multi-Region table: another Region wrote the item at that moment; the last try was not
    // applied, an earlier one may have been (replicatedConflictLeft)
    const named = new Error(
      `${subject}: another Region wrote the same item at the same moment (${error.name}), and the AWS SDK's own retries used up: ${replicatedConflictLeft(error, 'taken as a write in doubt, as one unanswered is')}; nothing to fix (frequent ones mean the Regions' functions and workers write the row at once); retrying with backoff`,
      { cause: error },
    );
    named.name = error.name;
    namedServerFaults.add(named);
    return named;
  }
  if (kind === 'other' && isServerFault(error) && !namedServerFaults.has(error)) {
    return serverFault(error, subject, ", nothing to fix here unless it lasts (then see the AWS Health Dashboard for DynamoDB in the client's Region); retrying with backoff");
  }
  return error;
}

/**
 * `e`, a fault on DynamoDB's side (HTTP 5xx) the AWS SDK's retries did not outlast, told with
 * `subject` and `tail` (what follows "a fault of DynamoDB's"); the SDK's own name kept, as for
 * credentials: code that tells it by name still does.
 */
function serverFault(e: Error, subject: string, tail: string): Error {
  const status = (e as { $metadata?: { httpStatusCode?: unknown } }).$metadata?.httpStatusCode;
  const named = new Error(`${subject}: DynamoDB failed the request on its side (${e.name}: ${e.message}${typeof status === 'number' ? `, HTTP ${status}` : ''}), the AWS SDK's own retries used up: a fault of DynamoDB's${tail}`, { cause: e });
  named.name = e.name;
  namedServerFaults.add(named);
  return named;
}

/**
 * `fault`, a read's failure in `call` (e.g. `getLeader`) of `of` (`lease "<name>"`, `component "<name>"`), which does not retry
 * (only reads come here: nothing of the request can have landed): an unreachable endpoint as a
 * DynamoDBUnreachableError naming the call, what it did not `read`, and that the caller calls again,
 * a read given no answer within its bound (or the client's own timeout) included, before it was sent
 * or after (a connection black-holed once made), the timeout its cause; one whose last try DynamoDB
 * answered (a throttle the AWS SDK was backing off from) as that answer; a throttled request as a
 * DynamoDBRefusedError saying as much; a fault on DynamoDB's side (HTTP 5xx) under the SDK's name,
 * naming the call;
 * a denied one as a DynamoDBRefusedError with `denied` (what the role may not read, and the grant),
 * when given, or with what to do about credentials DynamoDB refused (expired, not valid); a client with no region, naming the call and where to give one; an endpoint that is
 * no URL, naming the call, the endpoint and the URL meant; an answer not DynamoDB's, naming the call
 * and what it did not read; credentials the AWS SDK could not load, or whose provider had not answered
 * when the request's bound passed (nothing sent), naming the call and what to check; any other error as
 * it is. (A worker's write unanswered is another matter: it may have landed, namedFault.)
 */
export async function oneShotFault(fault: unknown, call: string, of: string, read: string, client: DynamoDBClient, denied?: string): Promise<unknown> {
  const subject = `${call} of ${of}`;
  const abandoned = unsentAs(fault);
  // abandoned at its bound while the AWS SDK backed off from DynamoDB's answer to its last try (a
  // throttle, a 5xx): told as that answer, not as DynamoDB out of reach
  const e = (abandoned instanceof Error && networkCode(abandoned) === 'timed out' && answeredLastTry(abandoned)) || abandoned;
  // a client that can never send (no region, an endpoint that is no URL or has no host): said so,
  // whatever the SDK threw; not after a request that timed out, as one behind a region or endpoint
  // provider that never answers does (the look would wait on that provider too)
  if (networkCode(e) !== 'timed out') {
    const unusable = await unusableClient(client, subject, `${read} was not read`);
    if (unusable) return unusable;
  }
  const credentials = credentialsFault(subject, e, "the caller's", `${read} was not read, and ${call} does not retry: call it again once they load`);
  if (credentials) return credentials;
  const pooled = e instanceof Error ? waitedOnPool(subject, e, `${read} was not read, and ${call} does not retry`) : undefined;
  if (pooled) return pooled;
  const descriptors = e instanceof Error ? descriptorsOut(subject, e, `${read} was not read, and ${call} does not retry: call it again once descriptors are free`) : undefined;
  if (descriptors) return descriptors;
  // a client whose config is not the AWS SDK's (wrapped in an object of the caller's): by the error the SDK threw
  if (e instanceof Error && isRegionMissing(e)) return noRegion(subject, e, `${read} was not read`);
  const input = e instanceof Error ? invalidEndpoint(e) : undefined;
  if (input !== undefined) return badEndpoint(subject, e as Error, input, `${read} was not read`);
  if (e instanceof Error && heldClientSide.has(e)) return new DynamoDBRefusedError('throttled', subject, e, `${read} was not read, and ${call} does not retry: call it again later`);
  const kind = faultKind(e);
  if (kind === 'throttled')
    return new DynamoDBRefusedError('throttled', subject, e as Error, `${read} was not read: the table's capacity is exhausted (on-demand tables: a hot partition, or the account's limit), the AWS SDK's own retries used up, and ${call} does not retry: call it again later`);
  if (kind === 'denied' && denied !== undefined) return new DynamoDBRefusedError('denied', subject, e as Error, deniedAdvice(e as Error, denied, `${read} was not read, and ${call} does not retry`, true));
  if (e instanceof NotDynamoDBError)
    return new NotDynamoDBError(e.endpoint, e.httpStatusCode, e.sign, e.cause, subject, `${read} was not read, and ${call} does not retry: call it again once DynamoDB answers there`);
  if (kind === 'other' && e instanceof Error && isServerFault(e)) return serverFault(e, subject, `; ${read} was not read, and ${call} does not retry: call it again (if it lasts, see the AWS Health Dashboard for DynamoDB in the client's Region)`);
  const code = networkCode(e);
  // a read's timeout too, sent or not (a connection that took it and went silent): nothing of a read lands, so it is only unanswered
  if (!code || e instanceof DynamoDBUnreachableError) return e;
  return new DynamoDBUnreachableError(await endpointOf(client), code, e as Error, subject, `${read} was not read, and ${call} does not retry: call it again once DynamoDB answers`);
}

/**
 * `fault`, a write of a call that does not retry (withLease's claim and mark of its run-once
 * window), named as oneShotFault names a read's, with `advice` (what the call did and did not do,
 * and what to do) in place of a read's: unreachable, or given no answer within its bound (it may
 * have landed: `advice` says what stands either way), as a DynamoDBUnreachableError naming
 * `subject`; throttled as a DynamoDBRefusedError; denied as one with `denied` (what the role may
 * not write, the grant, and what stands), when given, or with what to do about credentials DynamoDB
 * refused and `advice`; a fault on DynamoDB's side (HTTP 5xx) under the SDK's name, and an answer
 * not DynamoDB's, each with `subject` and `advice`. Any other error as it is (a ValidationError
 * already names its row; the caller's cancel reason, a term's end, its own).
 */
export async function unretriedWriteFault(fault: unknown, subject: string, advice: string, client: DynamoDBClient, denied?: string): Promise<unknown> {
  const abandoned = unsentAs(fault);
  // abandoned while the AWS SDK backed off from DynamoDB's answer to its last try: told as that answer
  const e = (abandoned instanceof Error && networkCode(abandoned) === 'timed out' && answeredLastTry(abandoned)) || abandoned;
  if (!(e instanceof Error) || e instanceof DynamoDBUnreachableError || e instanceof DynamoDBRefusedError) return e;
  const credentials = credentialsFault(subject, e, "the caller's", advice);
  if (credentials) return credentials;
  if (heldClientSide.has(e)) return new DynamoDBRefusedError('throttled', subject, e, advice);
  const kind = faultKind(e);
  if (kind === 'throttled') return new DynamoDBRefusedError(kind, subject, e, advice);
  if (kind === 'denied') return new DynamoDBRefusedError(kind, subject, e, denied === undefined ? advice : deniedAdvice(e, denied, advice));
  if (e instanceof NotDynamoDBError) return new NotDynamoDBError(e.endpoint, e.httpStatusCode, e.sign, e.cause, subject, advice);
  if (kind === 'other' && isServerFault(e)) return serverFault(e, subject, `; ${advice}`);
  const code = networkCode(e);
  return code ? new DynamoDBUnreachableError(await endpointOf(client), code, e, subject, advice) : e;
}

/**
 * Calls a user's callback from the SDK's own loops and timers: what it throws, or the promise it
 * returns rejects with, goes to `report`, never into the SDK's control flow and never an unhandled
 * rejection.
 */
export function callBack(f: () => unknown, report: (e: unknown) => void): void {
  try {
    const r = f();
    // any promise-like (not only a native Promise): its rejection is reported, never unhandled
    if (typeof (r as PromiseLike<unknown> | undefined)?.then === 'function') Promise.resolve(r).catch(report);
  } catch (e) {
    report(e);
  }
}

/**
 * How long a LeaderElector waits, at most, for the promise its onStoppedLeading returned to settle
 * before it goes on (client-go's Run returns only once OnStoppedLeading has): before a hand-over or
 * release of the term, which waits only until the term's renew deadline too, and before run()
 * resolves. As long as a stop's wait on DynamoDB (STOP_BUDGET_MS); in a stop it is counted in that
 * wait, less STOP_WRITES_MS kept for the stop's own writes.
 */
export const STOPPED_LEADING_WAIT_MS = 10_000;

/**
 * Of a stop's wait on DynamoDB, what an async onStoppedLeading leaves for the stop's writes (the
 * hand-over or release, the candidacy's withdrawal): a callback still running after the rest is
 * gone on without, and the term handed over (a callback that took the whole 10 s left them
 * unsent, the heir waiting out a 60 s term).
 */
export const STOP_WRITES_MS = 3_000;

/**
 * Calls a user's callback as callBack does, and returns what to wait for: the promise it returned
 * settling, or `ms` passing on `clock` (then `late` is called, once), whichever comes first.
 * Undefined when it returned no promise (or threw): nothing to wait for.
 */
export function awaitedCallBack(f: () => unknown, report: (e: unknown) => void, clock: Pick<Clock, 'setTimer'>, ms: number, late: () => void): Promise<void> | undefined {
  let r: unknown;
  try {
    r = f();
  } catch (e) {
    report(e);
    return undefined;
  }
  if (typeof (r as PromiseLike<unknown> | undefined)?.then !== 'function') return undefined;
  const settled = Promise.resolve(r).then(() => undefined, report);
  return new Promise((resolve) => {
    const timer = clock.setTimer(ms, () => {
      late();
      resolve();
    });
    void settled.then(() => {
      timer.cancel();
      resolve();
    });
  });
}

/** With no onError, a fault told again within this long of its last process warning is counted, not printed. */
export const STILL_FAILING_EVERY_MS = 60_000;

/**
 * Process warnings for faults told once per try: a fault is printed in full the first time, and
 * again only once a minute while it lasts, as one "still failing" line counting the tries since;
 * a different fault (another name or message) is printed in full at once, and so is the same one
 * after a quiet minute (a new outbreak). A worker retrying every few seconds would otherwise print
 * the same warning a dozen times a minute.
 */
export function quietWarnings(clock: Pick<Clock, 'monotonic'>): (e: Error) => void {
  const seen = new Map<string, { printedAt: number; seenAt: number; more: number }>();
  return (e) => {
    const now = clock.monotonic();
    for (const [k, s] of seen) if (now - s.seenAt >= STILL_FAILING_EVERY_MS) seen.delete(k);
    const key = `${e.name}: ${e.message}`;
    const s = seen.get(key);
    if (!s) {
      seen.set(key, { printedAt: now, seenAt: now, more: 0 });
      return process.emitWarning(e);
    }
    s.seenAt = now;
    s.more++;
    if (now - s.printedAt < STILL_FAILING_EVERY_MS) return;
    process.emitWarning(`still failing (${s.more} more time${s.more === 1 ? '' : 's'} in ${Math.round((now - s.printedAt) / 1000)} s, told once a minute): ${e.message}`, { type: e.name, code: 'CONCLAVE_STILL_FAILING' });
    s.printedAt = now;
    s.more = 0;
  };
}

/**
 * The user's `onError` of `subject`, as the SDK tells it: what it throws (or rejects with) is a
 * process warning naming the fault it was told of, so a broken alarm never stops a worker. No
 * `onError`: each fault is a process warning, the same one repeated quieted by quietWarnings on
 * `clock` (without a clock, one a try). An `onError` is told every try, as documented.
 */
export function errorSink(onError: ((e: Error) => void) | undefined, subject: string, clock?: Pick<Clock, 'monotonic'>): (e: Error) => void {
  if (!onError) return clock ? quietWarnings(clock) : (e) => process.emitWarning(e);
  return (e) => callBack(() => onError(e), (thrown) => process.emitWarning(new Error(`${subject}: onError threw while told: ${e.message}`, { cause: thrown })));
}

/**
 * What an SDK object reports its faults with: `onError` (an errorSink), each fault named
 * (namedFault), or by `own` first when it names it (a missing table: options.ts' runningTableFault);
 * `denied`: what a request IAM refused tells to check, where more than the role and credentials
 * (a Session's partition). The endpoint is looked up once, when it is made (or at the first fault
 * that needs it, if sooner).
 */
export function faultReporter(onError: (e: Error) => void, subject: string, client: DynamoDBClient, own?: (e: unknown) => Error | undefined, denied?: string): (e: unknown) => void {
  let endpoint: string | undefined;
  // looked up now too, so a fault of any kind names an endpoint that is no http(s) URL (namedFault)
  void endpointOf(client).then((found) => (endpoint ??= found));
  return (e) => {
    const named = own?.(e);
    if (named) return onError(named);
    if (endpoint !== undefined || faultKind(e) !== 'unreachable') return onError(namedFault(e, subject, endpoint ?? '', denied));
    void endpointOf(client).then((found) => {
      endpoint = found;
      onError(namedFault(e, subject, found, denied));
    });
  };
}

/** Per DynamoDB client (one per process, shared by its electors and its Session): who is told when a request answers again after failures. */
const recoveryListeners = new WeakMap<object, Set<() => void>>();

/** Calls `fn` whenever a request on `client` answers after a failed one (recovered); returns the unsubscribe. */
export function onRecovered(client: object, fn: () => void): () => void {
  let set = recoveryListeners.get(client);
  if (!set) recoveryListeners.set(client, (set = new Set()));
  set.add(fn);
  return () => void set.delete(fn);
}

/**
 * A request on `client` answered after one of the same sender failed: the endpoint is back, and
 * the process's electors that wait out an error backoff read soon, each no sooner than a retry
 * period after its own last try (step.ts recoveryWake: under partial throttling every answer is one).
 */
export function recovered(client: object): void {
  for (const fn of [...(recoveryListeners.get(client) ?? [])]) fn();
}

/**
 * How long a stopping LeaderElector, LeaseCandidate or Session waits on DynamoDB, counted from
 * run()'s signal aborting (a SIGTERM): then the requests of its stop still unanswered are abandoned,
 * those it has yet to send fail unsent, run() resolves, and onError is told once what was left
 * undone. Well inside the 30 s Kubernetes and ECS give a process between SIGTERM and SIGKILL. Safety
 * needs none of a stop's writes (and none lands during an outage): a term not released runs out a
 * lease duration after its last renewal, and a candidate or session row left behind goes stale and
 * is collected. A leader's wait for its heir (leading on until its next renewal would be due, a
 * hand-over's moment) is not counted.
 */
export const STOP_BUDGET_MS = 10_000;

/**
 * One stop's budget (STOP_BUDGET_MS from `start()`): once spent, `signal` aborts with an error of
 * its own, abandoning every request `requests()` sent through it, and failing unsent those sent
 * later, until `end()` (run() resolved: what runs on after it, a Session's look at a term left to run
 * out, is bounded by its own bounds alone). A LeaderElector shares its budget with its candidacy.
 */
export class StopBudget {
  private readonly controller = new AbortController();
  /** Why its requests were abandoned (one error, told apart by identity: `cut`). */
  private readonly reason: Error;
  private timer: Timer | undefined;
  private endsAt: number | undefined;
  private ended = false;
  /** Whether it cut a request (abandoned, or failed unsent). */
  private cutShort = false;
  /** What the stop is doing now: noted as left undone when a request of it fails. */
  doing: string | undefined;
  /** What the stop left undone (`failed`), in the order met. */
  private readonly undone = new Set<string>();

  constructor(
    private readonly clock: Pick<Clock, 'setTimer' | 'monotonic'>,
    readonly ms: number = STOP_BUDGET_MS,
  ) {
    // named as a timeout is (a request abandoned unanswered may have landed: mayHaveLanded)
    this.reason = Object.assign(new Error(`DynamoDB did not answer within the ${ms} ms a stop waits: the request was abandoned`), { name: 'TimeoutError' });
  }

  /** Starts counting (the stop began); once started, again does nothing. */
  start(): void {
    if (this.endsAt !== undefined || this.ended) return;
    this.endsAt = this.clock.monotonic() + this.ms;
    this.arm();
  }

  /** A wait of the stop's own, `ms` long, is not counted (a leader leading on for its heir). */
  extend(ms: number): void {
    if (this.endsAt === undefined || this.spent || this.ended) return;
    this.endsAt += ms;
    this.arm();
  }

  /**
   * A wait of the stop's own, `ms` at most, is not counted (the user's onStoppedLeading): extended
   * by `ms` now, and by what the wait did not use less when the function it returns is called. A
   * stop that starts during the wait counts it.
   */
  notCounting(ms: number): () => void {
    if (this.endsAt === undefined || this.spent || this.ended) return () => undefined;
    const from = this.clock.monotonic();
    this.extend(ms);
    return () => this.extend(-Math.max(0, ms - (this.clock.monotonic() - from)));
  }

  /** How long it has left (Infinity before it started). */
  get remainingMs(): number {
    return this.endsAt === undefined ? Infinity : Math.max(0, this.endsAt - this.clock.monotonic());
  }

  /** Not spent for `ms` yet, at least: a Session whose elector leads on for its heir waits as long (its row's delete comes after). */
  atLeast(ms: number): void {
    if (this.endsAt === undefined || this.spent || this.ended || !Number.isFinite(ms)) return;
    this.endsAt = Math.max(this.endsAt, this.clock.monotonic() + ms);
    this.arm();
  }

  private arm(): void {
    this.timer?.cancel();
    this.timer = this.clock.setTimer(Math.max(0, this.endsAt! - this.clock.monotonic()), () => this.controller.abort(this.reason));
  }

  /** Whether it ran out. */
  get spent(): boolean {
    return this.controller.signal.aborted;
  }

  /**
   * A request failed with `e`: during the stop, what it was doing is noted as left undone. True if
   * the budget cut it: told only with the rest (leftUndone), as run() resolves.
   */
  failed(e: unknown): boolean {
    if (this.endsAt !== undefined && !this.ended && this.doing !== undefined) this.undone.add(this.doing);
    if (e !== this.reason) return false;
    this.cutShort = true;
    return true;
  }

  /** What the stop left undone, once its budget cut some of it (else nothing: each fault was told as it came). */
  get leftUndone(): string[] {
    return this.cutShort ? [...this.undone] : [];
  }

  /** run() resolved: its timer cancelled, and requests sent from now on are not the stop's. */
  end(): void {
    this.ended = true;
    this.timer?.cancel();
  }

  /** Aborted once the budget is spent. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /**
   * `client` whose requests, until `end()`, are abandoned once the budget is spent (sent after that,
   * they fail unsent, with the same error); or, given `by`, once the signal it names as each is sent
   * aborts (a Session's: cut only once it is leaving, its electors gone).
   */
  requests<C extends object>(client: C, by: () => AbortSignal = () => this.signal): C {
    const own = client as unknown as { send(command: unknown, options?: { abortSignal?: AbortSignal }): Promise<unknown> };
    const bounded = Object.create(client) as C;
    const send = (command: unknown, options?: { abortSignal?: AbortSignal }): Promise<unknown> => {
      if (this.ended) return own.send(command, options);
      const stop = by();
      if (stop.aborted) return Promise.reject(stop.reason);
      const theirs = options?.abortSignal;
      if (!theirs) return own.send(command, { ...options, abortSignal: stop });
      // the caller's signal too: whichever aborts first
      const either = new AbortController();
      const offs = [theirs, stop].map((s) => {
        const passOn = () => either.abort(s.reason);
        if (s.aborted) passOn();
        else s.addEventListener('abort', passOn, { once: true });
        return () => s.removeEventListener('abort', passOn);
      });
      return own.send(command, { ...options, abortSignal: either.signal }).finally(() => offs.forEach((off) => off()));
    };
    Object.defineProperty(bounded, 'send', { value: send });
    return bounded;
  }
}
