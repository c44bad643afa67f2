/**
 * A request to DynamoDB that never answers ends after a bound. The AWS SDK sets no request timeout
 * by default: a request on a connection whose packets are dropped (a black-holed route, a NAT that
 * forgot the flow) waits for TCP to give up, many minutes later. The elector, its candidacy and a
 * Session each wait for their request before their next step, so one such request would stop them
 * until then: a follower that never takes over, a leader that never stands again after its term
 * ran out. Bounded, the request fails as a timeout (a fault like any other: reported, and tried
 * again after the backoff) and the loop goes on. An answer that is not DynamoDB's fails too
 * (faults.ts fromDynamoDB), never taken for a write that landed or a row not there.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Clock } from '../clock.js';
import { isMissingTable, namedRequests, requestTableOf } from '../table-wait.js';
import { followTry, sdkTryKey, TryConnection } from '../connection-phase.js';
import { conclavePrefixes, tablesThere } from '../stores/table-prefixes.js';
import { credentialsAwaited, endpointOf, fromDynamoDB, fullConnectionPool, noteCredentialsFailed, noteFullPool, noteHeldClientSide, noteLastTry, noteLocalPrefixes, noteOnTheWay, noteUnsent, sendsToThisMachine } from './faults.js';

/** The least bound: longer than any answer a healthy DynamoDB (or DynamoDB Local on a busy machine) gives, retries included. */
export const MIN_REQUEST_BOUND_MS = 5_000;

/** The bound for a loop that steps every `periodMs` (an elector's retry period, a Session's renew deadline, a candidacy's claim window): that, and never under MIN_REQUEST_BOUND_MS. */
export const requestBoundMs = (periodMs: number): number => Math.max(periodMs, MIN_REQUEST_BOUND_MS);

/**
 * How much longer than its bound a request may wait on the lookup of its endpoint's name. A resolver
 * ends its own lookups: glibc's at most 5 s (its timeout) × 2 attempts × 3 nameservers. A slow one
 * (a nameserver that does not answer, tried first, costs its timeout on every lookup, and Node.js
 * caches none) would otherwise starve the client: each request abandoned during its lookup, its
 * connection with it, the next one looks the name up again. Waited for, the request connects, and
 * its connection is kept for the next ones, as the AWS SDK's own requests do.
 */
export const LOOKUP_MOST_MS = 30_000;

/**
 * A request to DynamoDB given no answer within its bound (`boundMs`), abandoned: a write's outcome
 * is unknown (it may have landed). Named as the AWS SDK names a timeout (`TimeoutError`), so code
 * that tells faults by name treats both alike; `instanceof RequestBoundError` tells this one apart.
 */
export class RequestBoundError extends Error {
  /** `TimeoutError`, as the AWS SDK names its own timeouts. */
  override readonly name = 'TimeoutError';
  constructor(
    /** How long the request was given, in milliseconds. */
    readonly boundMs: number,
  ) {
    super(`DynamoDB gave no answer within ${Math.round(boundMs)} ms: the request was abandoned`);
  }
}

/**
 * Per client: its requests abandoned at their bound while the AWS SDK was still getting the client's
 * credentials (nothing of theirs sent), each with its bound and when it was sent (monotonic), until
 * the credentials come or fail. The AWS SDK asks the credential provider once for every request
 * waiting (a credential_process waiting for input, STS unreachable and given no timeout: the one
 * call hangs, and every request of the client with it), so a request sent meanwhile would only wait
 * on that call too, abandoned at its bound and left pending for good: it fails at once instead,
 * sending nothing.
 */
const awaitingCredentials = new WeakMap<object, Map<object, { readonly boundMs: number; readonly sentAt: number }>>();

/**
 * Per client: how the credential provider's call failed that requests abandoned at their bound had
 * waited on (it failed after they were, so nobody was told), until the next request abandoned so
 * tells it (credentialsAwaited), once; forgotten once a request of the client gets its credentials.
 */
const failedSinceAbandoned = new WeakMap<object, Error>();

/** How long a worker's client may be held on its credential provider before its liveness check fails (LeaderElector.healthy()): legitimate refreshes take a few seconds at most. */
export const CREDENTIALS_STUCK_MS = 60_000;

/**
 * How long, as of `now` (monotonic), `client`'s requests have been held on its credential provider:
 * since the first still held was sent; 0 when none is. A worker held so long cannot go on by itself
 * (LeaderElector.healthy()).
 */
export function heldOnCredentialsMs(client: object, now: number): number {
  let first = now;
  for (const held of awaitingCredentials.get(client)?.values() ?? []) first = Math.min(first, held.sentAt);
  return now - first;
}

type Middleware = (next: (args: unknown) => Promise<unknown>, context?: unknown) => (args: unknown) => Promise<unknown>;

/**
 * What the AWS SDK has done with `command`, told by middleware on the command's own stack (a client
 * that runs none, the simulator's, tells nothing): its last failed try, noted as each fails (the SDK
 * tries one again after a throttle, say), and whether it is still getting the client's credentials
 * (in the stack, not yet past the serialize step where the SDK gets them), or failed getting them
 * (their provider's failure, not DynamoDB's). `onCredentials` once it is past, or settled without.
 */
function watched(command: unknown, onCredentials: () => void) {
  const seen = { lastTry: undefined as Error | undefined, entered: false, serializing: false, credentialed: false, tried: false, connection: undefined as TryConnection | undefined, context: undefined as unknown };
  const credentialsSettled = () => {
    seen.credentialed = true;
    onCredentials();
  };
  const stack = (command as { middlewareStack?: { add(mw: never, o: object): void } }).middlewareStack;
  const add = (step: string, priority: string, name: string, mw: Middleware) => stack?.add(mw as never, { step, priority, name, override: true });
  add('initialize', 'high', 'conclaveEntered', (next) => (args) => ((seen.entered = true), next(args)));
  // the serialize step's first: the AWS SDK gets the credentials next (its httpAuthSchemeMiddleware)
  add('serialize', 'high', 'conclaveSerializing', (next, context) => (args) => ((seen.serializing = true), (seen.context = context), next(args)));
  add('build', 'high', 'conclaveCredentialed', (next) => (args) => (credentialsSettled(), next(args)));
  add('finalizeRequest', 'low', 'conclaveLastTry', (next) => async (args) => {
    seen.tried = true;
    const connection = (seen.connection = new TryConnection());
    try {
      return await followTry(connection, sdkTryKey((args as { request?: { headers?: Record<string, string> } }).request?.headers), () => next(args));
    } catch (e) {
      if (e instanceof Error) seen.lastTry = e;
      throw e;
    }
  });
  return {
    lastTry: () => seen.lastTry,
    awaitsCredentials: () => seen.entered && !seen.credentialed,
    // still getting them when it failed: in the serialize step, where the AWS SDK gets them, and not
    // holding the identity they gave (its own record of it, where it keeps one: a failure after it,
    // the endpoint's or the serializer's, is no provider's)
    gettingCredentials: () => seen.serializing && !seen.credentialed && (seen.context as { __smithy_context?: { selectedHttpAuthScheme?: { identity?: unknown } } } | undefined)?.__smithy_context?.selectedHttpAuthScheme?.identity === undefined,
    // credentials come, no try begun: the client's retry strategy holds it (the adaptive mode's rate limiter)
    heldBeforeFirstTry: () => seen.credentialed && !seen.tried,
    // the last try's HTTP request, followed on its way out (lib/connection-phase.ts)
    connection: () => seen.connection,
    credentialsSettled,
  };
}

/**
 * `client` whose `send` gives up after `boundMs` on `clock` (aborting the request), or sooner when
 * the caller's own `abortSignal` aborts, or `until` (every request of the client's: local mode's
 * stop, which does not wait out a request DynamoDB Local never answers): everything else is the
 * client's own (its configuration, middleware and credentials are shared, not copied). A DynamoDB
 * client, or another of the AWS SDK's (local mode's DynamoDB Streams client).
 */
export function boundedClient<C extends object>(client: C, clock: Pick<Clock, 'setTimer' | 'monotonic'>, boundMs: number, until?: AbortSignal): C {
  // each failed request names its table: a table not found is looked at alone (TableWait)
  const named = namedRequests(client as unknown as DynamoDBClient, () => endpointOf(client as unknown as DynamoDBClient));
  const bounded = Object.create(client) as C;
  const stalled = awaitingCredentials.get(client) ?? new Map<object, { readonly boundMs: number; readonly sentAt: number }>();
  awaitingCredentials.set(client, stalled);
  const send = (command: Parameters<DynamoDBClient['send']>[0], options?: { abortSignal?: AbortSignal }) => {
    const waiting = stalled.values().next();
    if (!waiting.done) return Promise.reject(credentialsAwaited(waiting.value.boundMs));
    const abort = new AbortController();
    const sentAt = clock.monotonic();
    const request = watched(command, () => stalled.delete(abort));
    let settled = false;
    const abandon = (reason: unknown) => {
      // told as what DynamoDB last answered (faults.ts namedFault), or as credentials awaited
      noteLastTry(reason, request.lastTry());
      const unsent = request.connection()?.unsent;
      if (unsent && reason instanceof RequestBoundError) noteOnTheWay(reason, unsent);
      if (request.awaitsCredentials() && reason instanceof RequestBoundError) {
        noteUnsent(reason, failedSinceAbandoned.get(client));
        failedSinceAbandoned.delete(client);
        stalled.set(abort, { boundMs: reason.boundMs, sentAt });
      } else if (request.heldBeforeFirstTry() && reason instanceof RequestBoundError) {
        noteHeldClientSide(reason);
      } else if (reason instanceof RequestBoundError) {
        // sent, or waiting for a socket of a pool the process's other requests fill: told as that
        const pool = fullConnectionPool(client);
        if (pool) noteFullPool(reason, pool);
      }
      abort.abort(reason);
    };
    // at the bound: abandoned, unless its try still looks up the endpoint's name (LOOKUP_MOST_MS),
    // then given its bound again once the lookup ends
    let waitedOnLookup = false;
    const atBound = () => {
      const waited = clock.monotonic() - sentAt;
      const connection = request.connection();
      if (connection?.unsent?.phase !== 'lookup' || waited >= boundMs + LOOKUP_MOST_MS) return abandon(new RequestBoundError(waitedOnLookup ? waited : boundMs));
      waitedOnLookup = true;
      timer = clock.setTimer(boundMs + LOOKUP_MOST_MS - waited, atBound);
      connection.afterLookup(() => {
        if (settled) return;
        timer.cancel();
        timer = clock.setTimer(boundMs, atBound);
      });
    };
    let timer = clock.setTimer(boundMs, atBound);
    // the caller's signal and `until`: a request sent once either has aborted fails at once
    const signals = [options?.abortSignal, until].filter((x) => x !== undefined);
    const passOns = signals.map((signal) => {
      const passOn = () => abandon(signal.reason);
      if (signal.aborted) passOn();
      else signal.addEventListener('abort', passOn, { once: true });
      return () => signal.removeEventListener('abort', passOn);
    });
    // raced as well as aborted: a request handler that does not honour the signal still lets go
    // an answer not DynamoDB's (an empty "200 OK" from something else at the endpoint) is no success
    const sent = withLocalPrefixes(named.send(command as never, { ...options, abortSignal: abort.signal }), client as unknown as DynamoDBClient, abort.signal);
    // its credentials failed, or came after its bound (it fails then, aborted, sending nothing)
    sent.then(
      () => {
        failedSinceAbandoned.delete(client);
        request.credentialsSettled();
      },
      (e: unknown) => {
        if (!request.gettingCredentials()) failedSinceAbandoned.delete(client);
        // failed while the AWS SDK was getting its credentials: their provider's failure, nothing sent
        // (its bound, or the caller's signal, is told as that); or, abandoned waiting on them, told later
        else if (!abort.signal.aborted) noteCredentialsFailed(e);
        else if (stalled.has(abort) && e instanceof Error && e !== abort.signal.reason && e.name !== 'AbortError') failedSinceAbandoned.set(client, e);
        request.credentialsSettled();
      },
    );
    return raced(fromDynamoDB(sent, client as unknown as DynamoDBClient), abort.signal).finally(() => {
      settled = true;
      timer.cancel();
      for (const off of passOns) off();
    });
  };
  Object.defineProperty(bounded, 'send', { value: send });
  return bounded;
}

/**
 * `sent`, its "not found" for a table noted with the Conclave table prefixes DynamoDB Local holds
 * (noteLocalPrefixes, for TableNotFoundError to say) where `client` sends to this machine: a bare
 * `npx conclave-local` makes conclave-local's tables, while the quick start's worker names
 * `conclave`. Listed at each such answer, best effort, within the request's bound (`signal`). Off
 * this machine nothing more is sent: a worker's role in AWS may not list tables.
 */
async function withLocalPrefixes<T>(sent: Promise<T>, client: DynamoDBClient, signal: AbortSignal): Promise<T> {
  try {
    return await sent;
  } catch (e) {
    const table = requestTableOf(e);
    if (isMissingTable(e) && table !== undefined && (await sendsToThisMachine(client))) {
      const there = await tablesThere(client, signal);
      if (there) noteLocalPrefixes(e as object, conclavePrefixes(there, table.replace(/-(?:leases|candidates|identities)$/, '')));
    }
    throw e;
  }
}

/** A signal that aborts after `ms` on `clock` with a RequestBoundError (a request given less time than its client's bound); `cancel` once answered. */
export function abortAfter(clock: Pick<Clock, 'setTimer'>, ms: number): { readonly signal: AbortSignal; cancel(): void } {
  const abort = new AbortController();
  const timer = clock.setTimer(ms, () => abort.abort(new RequestBoundError(ms)));
  return { signal: abort.signal, cancel: () => timer.cancel() };
}

/** `sent`, or a rejection with `signal`'s reason once it aborts first: the answer is no longer waited for. */
export function raced<T>(sent: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    // abandoned before it began: its own outcome (a rejection, once the aborted send gives up) is nobody's, and unhandled it would end the process
    sent.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  let stop: (() => void) | undefined;
  const abandoned = new Promise<never>((_, reject) => {
    stop = () => reject(signal.reason);
    signal.addEventListener('abort', stop, { once: true });
  });
  return Promise.race([sent, abandoned]).finally(() => signal.removeEventListener('abort', stop!));
}
