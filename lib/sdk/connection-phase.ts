/**
 * Where one try of a request to DynamoDB stands on its way out: looking up the endpoint's name,
 * connecting (the TCP handshake), in the TLS handshake, or sent. Followed through Node.js's http
 * diagnostics channels (published for every http.ClientRequest of the process): a request is this
 * try's when it is made in the try's async context (AsyncLocalStorage). A client whose request
 * handler does not use Node's http module (the simulator's, a fetch-based one) tells nothing.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { subscribe } from 'node:diagnostics_channel';
import type { ClientRequest } from 'node:http';
import { isIP, type Socket } from 'node:net';
import type { Unsent } from './faults.js';

/** One try's HTTP request, followed. */
export class TryConnection {
  #unsent: Unsent | undefined;
  #looked: (() => void)[] = [];

  /** Where the try stands, while it is not sent; undefined once it is, or before it has a socket, or when no request of Node's http was seen. */
  get unsent(): Unsent | undefined {
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
    // a kept-alive connection: sent at once
    if (!socket.connecting) return;
    const host = request.host;
    const tls = (socket as { encrypted?: boolean }).encrypted === true;
    const sent = () => void (this.#unsent = undefined);
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
      if (tls && at && at.phase !== 'lookup') this.#unsent = { ...at, phase: 'tls' };
      else sent();
    });
    socket.once('secureConnect', sent);
  }
}

const tries = new AsyncLocalStorage<TryConnection>();
const seen = new WeakSet<object>();
let following = false;

function onRequest(message: unknown): void {
  const request = (message as { request?: ClientRequest }).request;
  const at = tries.getStore();
  if (!at || !request || seen.has(request)) return;
  seen.add(request);
  at.follow(request);
}

/** Runs `send` (one try of a request) in its own async context, the HTTP request it makes followed by `connection`. */
export function followTry<T>(connection: TryConnection, send: () => T): T {
  if (!following) {
    following = true;
    // `created` is published as the request is made (Node.js 22.12 and later), `start` once it is under way (earlier too): whichever comes first
    subscribe('http.client.request.created', onRequest);
    subscribe('http.client.request.start', onRequest);
  }
  return tries.run(connection, send);
}
