/**
 * Answers that are not DynamoDB's, told apart from DynamoDB's: an answer without x-amzn-RequestId
 * (which DynamoDB and DynamoDB Local send with every answer, their errors too), whatever error type
 * it names, a body the AWS SDK could not read, an error with no DynamoDB error type; and a TLS
 * certificate not trusted, which no answer gets past; and DynamoDB's own answers that refuse the
 * request's credentials, not the role's rights; and a region the AWS SDK refuses before it sends.
 * The SDK's requests (lib/sdk/bounded-client.ts, fencing.ts) and
 * the CLI's (lib/cli/context.ts) go through answeredByDynamoDB. No I/O of its own, no AWS SDK import.
 */
/**
 * An answer that is not DynamoDB's: something else answers at the client's endpoint (a proxy's or a
 * load balancer's error page, a captive portal, another server on that port, a stand-in that says
 * "200 OK" to anything). DynamoDB and DynamoDB Local send every answer as JSON with an
 * x-amzn-RequestId header; the AWS SDK takes an empty "200 OK" without one for a write that landed
 * and a read that found no item. Such an answer is never taken for either: the request fails with
 * this error, and a write counts as one that may have landed (a proxy may have passed it on).
 */
export class NotDynamoDBError extends Error {
  /** Always `NotDynamoDBError`. */
  override readonly name = 'NotDynamoDBError';
  constructor(
    /** Where the client sends its requests, e.g. `http://127.0.0.1:8000`, or `http://127.0.0.1:8000 (AWS_ENDPOINT_URL_DYNAMODB)` for one configured outside the code. */
    readonly endpoint: string,
    /** The answer's HTTP status, e.g. 200 or 502. */
    readonly httpStatusCode: number | undefined,
    /** What tells it is not DynamoDB's: no x-amzn-RequestId header, or a body the AWS SDK could not read (with its content type). */
    readonly sign: string,
    /** The AWS SDK's error, for a body it could not read. */
    override readonly cause?: Error,
    /** The call that does not retry, e.g. `getLeader of lease "jobs"`. @default a worker's request, retried */
    readonly subject?: string,
    /** What was not done, or what the caller does now, e.g. `retrying with backoff`. @default nothing said */
    advice?: string,
  ) {
    super(
      `${subject !== undefined ? `${subject}: ` : ''}the answer from ${endpoint} is not DynamoDB's (HTTP ${httpStatusCode ?? 'status unknown'}, ${sign}): ` +
        "something else answers there (a proxy's or load balancer's error page, a captive portal, another server on that port): check the client's endpoint and region, and any HTTPS_PROXY or HTTP_PROXY setting" +
        (advice !== undefined ? `; ${advice}` : ''),
    );
  }
}

/** `text` with control characters escaped (`\u001b`): an answer's text, which anyone on the path may have written, printed in a message. */
const controlsEscaped = (text: string): string => text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/**
 * The HTTP status and what gives it away, when `e` is the AWS SDK failing to read an answer's body
 * (a SyntaxError with the answer's `$metadata`: HTML, plain text, JSON cut short) or an error
 * answer that is not DynamoDB's: no error type and no request id, or an error type without a
 * request id (`x-amzn-errortype: ResourceNotFoundException` from another AWS stand-in, such as
 * local mode's push broker once did: taken for DynamoDB's, "the tables do not exist"); else undefined.
 */
function unreadableAnswer(e: Error): { status: number; sign: string } | undefined {
  const metadata = (e as { $metadata?: { httpStatusCode?: unknown; requestId?: unknown } }).$metadata;
  const status = metadata?.httpStatusCode;
  if (typeof status !== 'number') return undefined;
  // JSON the AWS SDK read but found no DynamoDB error type in (`{"message":"Forbidden"}`, an API gateway's), without a request id
  if (e.name === 'Unknown' && metadata?.requestId === undefined) return { status, sign: `no x-amzn-RequestId header and no DynamoDB error type, saying: ${controlsEscaped(e.message.slice(0, 200))}` };
  // an error type read from an HTTP answer (the AWS SDK keeps it as $response, a field every
  // exception class declares, set only then: not a fault met on the way, nor an exception made in
  // the process, a test's mock) that carries no request id
  if (e.name !== 'SyntaxError' && metadata?.requestId === undefined && (e as { $response?: unknown }).$response !== undefined)
    return { status, sign: `no x-amzn-RequestId header, which DynamoDB sends with every answer, though it names the error type ${controlsEscaped(e.name.slice(0, 100))}` };
  if (e.name !== 'SyntaxError') return undefined;
  const type = (e as { $response?: { headers?: Record<string, unknown> } }).$response?.headers?.['content-type'];
  const parse = controlsEscaped(e.message.split('\n')[0]!.slice(0, 200));
  return { status, sign: `${typeof type === 'string' ? `content-type ${controlsEscaped(type.slice(0, 100))}, ` : ''}a body the AWS SDK could not read: ${parse}` };
}

/**
 * `sent`'s answer, when DynamoDB gave it; else a rejection with a NotDynamoDBError naming
 * `endpoint()`, where the request went: an answer without x-amzn-RequestId (which the AWS SDK alone takes for
 * a success, or for the error type it names), or a body the AWS SDK could not read. Every other failure is rejected as it is.
 */
export async function answeredByDynamoDB<T>(sent: Promise<T>, endpoint: () => Promise<string> | string): Promise<T> {
  let out: T;
  try {
    out = await sent;
  } catch (e) {
    const unreadable = e instanceof Error ? unreadableAnswer(e) : undefined;
    if (unreadable) throw new NotDynamoDBError(await endpoint(), unreadable.status, unreadable.sign, e as Error);
    throw e;
  }
  const metadata = (out as { $metadata?: { requestId?: unknown; httpStatusCode?: unknown } } | undefined)?.$metadata;
  if (metadata !== undefined && metadata.requestId === undefined) {
    const status = typeof metadata.httpStatusCode === 'number' ? metadata.httpStatusCode : undefined;
    throw new NotDynamoDBError(await endpoint(), status, 'no x-amzn-RequestId header, which DynamoDB sends with every answer');
  }
  return out;
}

/**
 * `client` whose `send` answers only what DynamoDB answered (answeredByDynamoDB, naming `endpoint`):
 * everything else is the client's own (configuration, middleware, credentials shared, not copied).
 */
export function answersChecked<C extends object>(client: C, endpoint: string): C {
  const checked = Object.create(client) as C;
  const own = client as unknown as { send(...args: unknown[]): Promise<unknown> };
  Object.defineProperty(checked, 'send', { value: (...args: unknown[]) => answeredByDynamoDB(own.send(...args), () => endpoint) });
  return checked;
}

/**
 * A TLS certificate this process does not trust (Node's codes from OpenSSL's verification): a
 * proxy that intercepts TLS on the way (a corporate one), or a clock so far off that a good
 * certificate looks expired or not yet valid. DynamoDB is not reached through such a connection.
 */
export const UNTRUSTED_CERTIFICATE_CODES: ReadonlySet<string> = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_UNTRUSTED',
]);

/** What to do about a certificate not trusted (UNTRUSTED_CERTIFICATE_CODES). */
export const UNTRUSTED_CERTIFICATE_FIX =
  "the TLS certificate it presented is not trusted by this process: a proxy that intercepts TLS on the way (give Node its certificate authority: NODE_EXTRA_CA_CERTS=/path/to/ca.pem), or this machine's clock far off (the certificate looks expired or not yet valid)";

/** OpenSSL's reasons for a first answer that is no TLS record: the other end speaks plain text (HTTP) there. */
const NOT_TLS = /wrong version number|packet length too long|http request/i;

/**
 * A TLS handshake that failed, when `e` is one (Node's EPROTO, or an ERR_SSL_ code of OpenSSL's):
 * its code, OpenSSL's reason (not its file and line), and whether that reason says the other end
 * answered in plain text (HTTP), not TLS: an https:// endpoint where DynamoDB Local speaks http://,
 * or something on the way (a proxy, a captive portal). No request went out on it.
 */
export function tlsRefusal(e: Error): { readonly code: string; readonly reason: string; readonly plainText: boolean } | undefined {
  const code = (e as { code?: unknown }).code;
  if (typeof code !== 'string' || (code !== 'EPROTO' && !code.startsWith('ERR_SSL_'))) return undefined;
  const reason = /error:[0-9A-F]+:[^:]*:[^:]*:([^:]+)/i.exec(e.message)?.[1]?.trim() ?? e.message.split('\n')[0]!;
  return { code, reason, plainText: NOT_TLS.test(reason) };
}

/** A handshake refused by a plain-HTTP answer at an endpoint given as https:// (tlsRefusal's plainText): DynamoDB Local's. */
export const PLAIN_HTTP_ANSWER = 'it answers in plain HTTP, not TLS: DynamoDB Local (and `npx conclave-local`) speaks http://';
/** The same at an endpoint that is no DynamoDB Local (the Region's): something on the way answered. */
export const PLAIN_HTTP_ON_THE_WAY = 'something on the way answered in plain HTTP, not TLS (a proxy or firewall that intercepts the connection)';
/** A handshake refused for another of OpenSSL's reasons. */
export const TLS_HANDSHAKE_FAILED = 'the TLS handshake failed';

/**
 * The region the AWS SDK refused, when `e` is that refusal: a value that is no host name part, such
 * as AWS_REGION set but empty (`AWS_REGION=` from an unset CI variable: the AWS SDK takes it as
 * given, before the profile's) or `'us east 1'`. Nothing was sent, nor will be.
 */
export function refusedRegion(e: Error): string | undefined {
  return /^Region not accepted: region="(.*)" is not a valid hostname component/s.exec(e.message)?.[1];
}

/**
 * DynamoDB's error types that refuse the request's credentials, not the role's rights: expired,
 * unknown to AWS, signed with the wrong secret (or on a clock more than 5 minutes off), or none
 * given. A grant does not help; new credentials do.
 */
export const CREDENTIALS_REFUSED: ReadonlySet<string> = new Set(['UnrecognizedClientException', 'InvalidSignatureException', 'ExpiredTokenException', 'MissingAuthenticationTokenException']);
