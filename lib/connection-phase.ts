/**
 * Where one try of a request to DynamoDB (or of a PushChannel's connection to IoT Core) stands on
 * its way out: looking up the endpoint's name, connecting (the TCP handshake), in the TLS handshake,
 * or sent. Followed through Node.js's http diagnostics channels (published for every
 * http.ClientRequest of the process): a request is this try's when it carries the try's key (the
 * AWS SDK's invocation id and attempt, or the URL connected to). A client whose request handler does
 * not use Node's http module (the simulator's, a fetch-based one, undici, http2) tells nothing. The worker SDK (lib/sdk/bounded-client.ts), the
 * CLI (lib/cli/context.ts) and PushChannel tell a try that timed out unsent by where it stopped, in
 * the words below; the worker SDK tells one that timed out sent (seen sent: Sent) as DynamoDB taking it
 * and not answering, and one of which nothing was seen as out of reach.
 */
import { subscribe } from 'node:diagnostics_channel';
import { isIP, type Socket } from 'node:net';

/** What is read of Node's http.ClientRequest (published on its diagnostics channels). */
type ClientRequest = { readonly host: string; readonly path: string; readonly socket: Socket | null; getHeader(name: string): unknown; once(event: 'socket', listener: (socket: Socket) => void): unknown };

/** A try not yet sent: still looking up `host`, or connecting to `address` (TCP), or in its TLS handshake there. */
export type Unsent = { readonly phase: 'lookup'; readonly host: string } | { readonly phase: 'connect' | 'tls'; readonly host: string; readonly address: string };

/** A try seen sent: its request given a socket already connected (kept alive), or one whose handshakes (TCP, and TLS for https) ended. */
export type Sent = { readonly phase: 'sent' };

/** The service a try goes to, as what reaches it from a private subnet is named. */
const ROUTE = {
  dynamodb: 'DynamoDB is reached through a gateway VPC endpoint (or a NAT gateway) in the subnet\'s route table',
  iot: 'IoT Core is reached through an interface VPC endpoint for its data plane (docs/deploy.md) or a NAT gateway',
} as const;

/** How far a try to `service` that timed out unsent got after `ms`, and what to check. */
export function unsentTold(at: Unsent, ms: number, service: keyof typeof ROUTE = 'dynamodb'): { readonly how: string; readonly fix: string } {
  switch (at.phase) {
    case 'lookup':
      return {
        how: `looking up ${at.host}: this machine's DNS resolver gave no address within ${Math.round(ms)} ms`,
        fix: "check the resolver (the nameservers in /etc/resolv.conf, or the VPC's DNS: one that does not answer costs its timeout on every lookup, and Node.js caches no lookups)",
      };
    case 'connect':
      return {
        how: `connecting to ${at.address}: the TCP handshake was not answered within ${Math.round(ms)} ms`,
        fix: `something on the way drops the packets: from a private subnet, ${ROUTE[service]}; check the security group's and the network ACL's outbound rules, and any firewall`,
      };
    case 'tls':
      return {
        how: `in the TLS handshake with ${at.address}: connected, but no TLS answer within ${Math.round(ms)} ms`,
        fix: 'something that accepts the connection does not speak TLS (a proxy or firewall holding it, or a plain-http server: an http:// endpoint?)',
      };
  }
}

/** One try's HTTP request, followed. */
export class TryConnection {
  #unsent: Unsent | Sent | undefined;
  #looked: (() => void)[] = [];

  /**
   * Where the try stands: while it is not sent, how far it got (Unsent); once seen sent on a
   * connection made, Sent; undefined when nothing was seen: before its request has a socket, or
   * when no request of Node's http was seen (a requestHandler that does not use it). Only Sent says
   * the try went out.
   */
  get unsent(): Unsent | Sent | undefined {
    return this.#unsent;
  }

  /** Calls `fn` once the try's lookup of the endpoint's name ends (resolved or failed); at once when it is not looking one up. */
  afterLookup(fn: () => void): void {
    if (this.#unsent?.phase === 'lookup') this.#looked.push(fn);
    else fn();
  }

  follow(request: ClientRequest): void {
    if (request.socket) this.#onSocket(request, request.socket);
    else request.once('socket', (s) => this.#onSocket(request, s));
  }

  #onSocket(request: ClientRequest, socket: Socket): void {
    const sent = () => void (this.#unsent = { phase: 'sent' });
    // a kept-alive connection: sent at once
    if (!socket.connecting) return sent();
    const host = request.host;
    const tls = (socket as { encrypted?: boolean }).encrypted === true;
    const connecting = (address: string) => void (this.#unsent = { phase: 'connect', host, address });
    if (isIP(host)) connecting(host);
    else this.#unsent = { phase: 'lookup', host };
    socket.once('lookup', (_e: unknown, address: unknown) => {
      connecting(typeof address === 'string' ? address : host);
      for (const fn of this.#looked.splice(0)) fn();
    });
    socket.once('close', () => {
      for (const fn of this.#looked.splice(0)) fn();
    });
    socket.once('connect', () => {
      const at = this.#unsent;
      if (tls && at && at.phase !== 'lookup' && at.phase !== 'sent') this.#unsent = { ...at, phase: 'tls' };
      else sent();
    });
    socket.once('secureConnect', sent);
  }
}

/**
 * The tries whose HTTP request is not seen yet, by what the request will carry (tryKey): a DynamoDB
 * try's invocation id and attempt (the AWS SDK's retry headers), or the URL a connection is made to.
 * Matched by key, not by async context: an AsyncLocalStorage would turn on Node's promise hooks for
 * the whole process, the user's promises included (measured: about 5% more CPU per DynamoDB request).
 */
const awaiting = new Map<string, TryConnection[]>();
const seen = new WeakSet<object>();
let following = false;

/** The key of a DynamoDB try, from the headers the AWS SDK's retry strategy sets on each (undefined without them: that try is not followed). */
export function sdkTryKey(headers: Record<string, string | undefined> | undefined): string | undefined {
  const id = headers?.['amz-sdk-invocation-id'];
  return id === undefined ? undefined : `sdk ${id} ${headers?.['amz-sdk-request'] ?? ''}`;
}

/** The key of a connection made to `url` (a WebSocket's upgrade request). */
export function urlTryKey(url: string): string {
  const u = new URL(url);
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  return `url ${host}${u.pathname}${u.search}`;
}

function keyOf(request: ClientRequest): string {
  const header = (name: string) => {
    const v = request.getHeader(name);
    return v === undefined ? undefined : String(v);
  };
  return sdkTryKey({ 'amz-sdk-invocation-id': header('amz-sdk-invocation-id'), 'amz-sdk-request': header('amz-sdk-request') }) ?? `url ${request.host}${request.path}`;
}

function onRequest(message: unknown): void {
  const request = (message as { request?: ClientRequest }).request;
  if (!request || awaiting.size === 0 || seen.has(request)) return;
  const key = keyOf(request);
  const at = awaiting.get(key)?.shift();
  if (!at) return;
  if (awaiting.get(key)!.length === 0) awaiting.delete(key);
  seen.add(request);
  at.follow(request);
}

/** Runs `send` (one try of a request), the HTTP request it makes with `key` (sdkTryKey, urlTryKey) followed by `connection`; a try without a key is not followed. */
export async function followTry<T>(connection: TryConnection, key: string | undefined, send: () => Promise<T>): Promise<T> {
  if (key === undefined) return await send();
  if (!following) {
    following = true;
    // `created` is published as the request is made (Node.js 22.12 and later), `start` once it is under way (earlier too): whichever comes first
    subscribe('http.client.request.created', onRequest);
    subscribe('http.client.request.start', onRequest);
  }
  const waiting = awaiting.get(key) ?? [];
  awaiting.set(key, [...waiting, connection]);
  try {
    return await send();
  } finally {
    // its request never made (failed before, or not by Node's http): nothing left behind
    const left = awaiting.get(key)?.filter((c) => c !== connection);
    if (left?.length) awaiting.set(key, left);
    else awaiting.delete(key);
  }
}

/** Errors of tries that failed unsent (tryFollowed), with where each stopped. */
const failedUnsent = new WeakMap<object, Unsent>();

/** Where the try that failed with `e` stopped, when it failed unsent under tryFollowed (a client given followTries, say). */
export const unsentWhenFailed = (e: unknown): Unsent | undefined => (typeof e === 'object' && e !== null ? failedUnsent.get(e) : undefined);

/** Runs `send` (one try) with its HTTP request followed: the error it fails with before the request was sent is known by where it stopped (unsentWhenFailed). */
export async function tryFollowed<T>(key: string | undefined, send: () => Promise<T>): Promise<T> {
  const connection = new TryConnection();
  try {
    return await followTry(connection, key, send);
  } catch (e) {
    const at = connection.unsent;
    if (at && at.phase !== 'sent' && typeof e === 'object' && e !== null) failedUnsent.set(e, at);
    throw e;
  }
}

/** Follows each try of `client`'s requests on its way out (tryFollowed): one that fails unsent (the AWS SDK's own request timeout, say) is known by where it stopped. */
export function followTries<C extends { middlewareStack: { add(mw: never, o: object): void } }>(client: C): C {
  const mw = (next: (args: unknown) => Promise<unknown>) => (args: unknown) => tryFollowed(sdkTryKey((args as { request?: { headers?: Record<string, string> } }).request?.headers), () => next(args));
  client.middlewareStack.add(mw as never, { step: 'finalizeRequest', priority: 'low', name: 'conclaveFollowTries', override: true });
  return client;
}
