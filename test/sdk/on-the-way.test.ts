/**
 * A request stuck before it reaches DynamoDB: the endpoint's name looked up slowly (a nameserver
 * that does not answer, tried first, costs its timeout on every lookup, and Node.js caches none),
 * a TCP handshake nobody answers (a private subnet with no route to DynamoDB), a TLS handshake
 * nobody answers. A request whose lookup outlives its bound waits for it (LOOKUP_MOST_MS), so its
 * connection is made and kept; each other one is told as where it stopped, with what to check. A
 * request the client's own HTTP handler ended at a timeout the user gave it is told with that option.
 * A stop abandons the read a loop waits on, in its lookup or not. On
 * DynamoDB Local, the real AWS SDK and Node.js sockets, the clock driven (test/proxy.ts).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LookupFunction } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Clock } from '../../lib/clock.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { LOOKUP_MOST_MS, MIN_REQUEST_BOUND_MS } from '../../lib/sdk/bounded-client.js';
import { DynamoDBUnreachableError, IdentityLeaseHeartbeat, LeaderElector, Session, getLeader } from '../../lib/sdk/index.js';
import { close, drivenClock, inFlight, listen, synDroppingPort, type Listening } from '../proxy.js';
import { testTables, type TestTables } from '../support.js';
import { CLIENT_GO, drivenElector, type Terms } from './driven-elector.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('on-the-way')));
afterAll(async () => t.drop());
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A lookup of any name as 127.0.0.1, answered when `answer` says (never, when it never calls back). */
function lookupAs(answer: (reply: () => void) => void): LookupFunction {
  return ((_host: string, options: { all?: boolean }, callback: (...a: unknown[]) => void) =>
    answer(() => (options.all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4)))) as LookupFunction;
}

/** An elector of lease `lease` on `client` (destroyed after the test) and a clock driven whenever the process is idle, its faults in `errors`. */
function unreached(client: DynamoDBClient, lease: string) {
  cleanups.push(() => client.destroy());
  const c = drivenClock(() => false);
  const errors: Error[] = [];
  const a = drivenElector(t.names, 'a', lease, client, c, [], errors);
  cleanups.push(() => a.stop());
  return { c, errors };
}

/** DynamoDB Local's endpoint by a name to look up: `localhost` for 127.0.0.1. */
const byName = (): string => inject('ddbEndpoint').replace('127.0.0.1', 'localhost');

describe('a request still looking up its endpoint at its bound', () => {
  it('a resolver slower than the bound: the request waits for its lookup, so the worker leads, on one lookup, and keeps its term on the connection made', async () => {
    const LOOKUP_MS = MIN_REQUEST_BOUND_MS + 500;
    let lookups = 0;
    let pending = 0;
    const box: { c?: ReturnType<typeof drivenClock> } = {};
    const client = localClient(byName(), 'local', {
      requestHandler: {
        httpAgent: {
          keepAlive: true,
          lookup: lookupAs((reply) => {
            lookups++;
            pending++;
            box.c!.clock.setTimer(LOOKUP_MS, () => {
              pending--;
              reply();
            });
          }),
        },
      },
    });
    cleanups.push(() => client.destroy());
    const busy = inFlight(client);
    const c = (box.c = drivenClock(() => busy() && pending === 0));
    const terms: Terms = [];
    const errors: Error[] = [];
    const a = drivenElector(t.names, 'a', 'slow-lookup', client, c, terms, errors);
    cleanups.push(() => a.stop());
    // before: never (each try abandoned at its bound in its lookup, its connection with it, and the next one looked the name up again)
    await c.drive(() => a.e.isLeader() || c.waited() > 120_000);
    expect(a.e.isLeader()).toBe(true);
    expect(lookups).toBe(1);
    const token = a.e.fencingToken;
    const from = c.waited();
    await c.drive(() => c.waited() - from > 60_000);
    expect(a.e.isLeader()).toBe(true);
    expect(a.e.fencingToken).toBe(token);
    expect(lookups).toBe(1);
    expect(terms).toHaveLength(1);
    expect(errors).toEqual([]);
  });

  it('a lookup that never ends: abandoned LOOKUP_MOST_MS past the bound, told as the lookup that held it, and tried again', async () => {
    let lookups = 0;
    const { c, errors } = unreached(localClient(byName(), 'local', { requestHandler: { httpAgent: { lookup: lookupAs(() => void lookups++) } } }), 'lost-lookup');
    await c.drive(() => errors.length >= 2);
    expect(c.waited()).toBeGreaterThanOrEqual(2 * (MIN_REQUEST_BOUND_MS + LOOKUP_MOST_MS));
    for (const e of errors) {
      expect(e).toBeInstanceOf(DynamoDBUnreachableError);
      expect((e as DynamoDBUnreachableError).code).toBe('timed out');
      // before: "cannot reach DynamoDB at … (timed out): check the client's endpoint and region, and that DynamoDB … is up", at the bound
      expect(e.message).toMatch(
        /^cannot reach DynamoDB at http:\/\/localhost:\d+ \(timed out looking up localhost: this machine's DNS resolver gave no address within 35000 ms\): check the resolver \(the nameservers in \/etc\/resolv\.conf, or the VPC's DNS: one that does not answer costs its timeout on every lookup, and Node\.js caches no lookups\); retrying with backoff$/,
      );
    }
    expect(lookups).toBe(2);
  });
});

/**
 * Runs what `make` makes (on a client whose lookups never end, a driven clock, its faults in
 * `errors`) until its first request is in its lookup, then stops it: run() resolves with no time
 * passed on the clock, nothing told, no second lookup.
 */
async function stoppedInLookup(make: (client: DynamoDBClient, clock: Clock, onError: (e: Error) => void) => { run(signal: AbortSignal): Promise<unknown> }) {
  let lookups = 0;
  const client = localClient(byName(), 'local', { requestHandler: { httpAgent: { lookup: lookupAs(() => void lookups++) } } });
  cleanups.push(() => client.destroy());
  const c = drivenClock(() => false);
  const errors: Error[] = [];
  const cancel = new AbortController();
  let settled: string | undefined;
  const running = make(client, c.clock, (x) => void errors.push(x))
    .run(cancel.signal)
    .then(() => void (settled = 'resolved'), (x: unknown) => void (settled = `rejected: ${String(x)}`));
  await c.drive(() => lookups >= 1);
  await new Promise((resolve) => setImmediate(resolve));
  const stoppedAt = c.waited();
  cancel.abort();
  await c.drive(() => settled !== undefined);
  await running;
  expect(settled).toBe('resolved');
  expect(c.waited() - stoppedAt).toBe(0);
  expect(errors).toEqual([]);
  expect(lookups).toBe(1);
}

describe('a stop while a read waits on a lookup that never ends', () => {
  // before: run() resolved only once the read was abandoned at its bound and LOOKUP_MOST_MS (35 s),
  // the abandoned read told to onError meanwhile; the candidacy's first read (coordinated) 45 s
  it.each(['NoCoordination', 'coordinated'] as const)('a LeaderElector, %s: the read is abandoned, run() resolves with no time passed, and nothing is told', (mode) =>
    stoppedInLookup(
      (client, clock, onError) =>
        new LeaderElector({
          client,
          tables: t.names,
          clock,
          clockSync: 'none',
          leaseName: `stop-in-lookup-${mode}`,
          identity: 'a',
          platform: 'none',
          ...(mode === 'coordinated' ? { candidacy: { emulationVersion: '1.0.0', binaryVersion: '1.0.0' } } : { mode }),
          ...CLIENT_GO,
          onError,
          callbacks: { onStartedLeading: () => undefined, onStoppedLeading: () => undefined },
        }),
    ),
  );

  // before: 37.5 s (a Session: its probe of DynamoDB's clock) and 40 s (a heartbeat: its first read of its row)
  it('a Session: its probe read is abandoned, run() resolves with no time passed, and nothing is told', () =>
    stoppedInLookup((client, clock, onError) => new Session({ client, tables: t.names, clock, onError })));
  it('an IdentityLeaseHeartbeat: its first read is abandoned, run() resolves with no time passed, and nothing is told', () =>
    stoppedInLookup((client, clock, onError) => new IdentityLeaseHeartbeat({ client, tables: t.names, clock, component: 'stop-in-lookup', hostname: 'h', onError })));
});

describe('a request whose handshake is not answered', () => {
  it('TCP (a listener whose queue is full drops the SYN): told as the handshake not answered, with the private subnet\'s routes to check', async () => {
    const { port, close: unblock } = await synDroppingPort();
    cleanups.push(unblock);
    const client = localClient(`http://127.0.0.1:${port}`);
    const { c, errors } = unreached(client, 'syn-dropped');
    await c.drive(() => errors.length >= 1);
    const fix = "something on the way drops the packets: from a private subnet, DynamoDB is reached through a gateway VPC endpoint \\(or a NAT gateway\\) in the subnet's route table; check the security group's and the network ACL's outbound rules, and any firewall";
    // before: "cannot reach DynamoDB at … (timed out): check the client's endpoint and region, and that DynamoDB … is up"
    expect(errors[0]!.message).toMatch(new RegExp(`^cannot reach DynamoDB at http://127\\.0\\.0\\.1:\\d+ \\(timed out connecting to 127\\.0\\.0\\.1: the TCP handshake was not answered within 5000 ms\\): ${fix}; retrying with backoff$`));
    // a call that does not retry says the same, and what it did not read (before: the bare TimeoutError "DynamoDB gave no answer within 5000 ms")
    let read: unknown;
    void getLeader('syn-dropped', { client, clock: c.clock, tables: t.names }).catch((x: unknown) => void (read = x));
    await c.drive(() => read !== undefined);
    expect(read).toBeInstanceOf(DynamoDBUnreachableError);
    expect((read as Error).message).toMatch(
      new RegExp(`^getLeader of lease "syn-dropped": cannot reach DynamoDB at http://127\\.0\\.0\\.1:\\d+ \\(timed out connecting to 127\\.0\\.0\\.1: the TCP handshake was not answered within 5000 ms\\): ${fix}; the lease's row on the leases table "${t.names.leases}" was not read, and getLeader does not retry: call it again once DynamoDB answers$`),
    );
  });

  it('TLS (a server that accepts and says nothing): told as the TLS handshake not answered', async () => {
    const silent: Listening = await listen(() => undefined);
    cleanups.push(() => close(silent));
    const { c, errors } = unreached(localClient(silent.endpoint.replace('http:', 'https:')), 'tls-silent');
    await c.drive(() => errors.length >= 1);
    expect(errors[0]!.message).toMatch(
      /^cannot reach DynamoDB at https:\/\/127\.0\.0\.1:\d+ \(timed out in the TLS handshake with 127\.0\.0\.1: connected, but no TLS answer within 5000 ms\): something that accepts the connection does not speak TLS \(a proxy or firewall holding it, or a plain-http server: an http:\/\/ endpoint\?\); retrying with backoff$/,
    );
  });
});

describe("a request ended by the client's own HTTP handler timeout", () => {
  // before: "cannot reach DynamoDB at … (ETIMEDOUT): check the client's endpoint and region, and that
  // DynamoDB … is up" for a requestTimeout shorter than DynamoDB's answers; "(timed out)" likewise for
  // the other two: DynamoDB named out of reach, the option that ended the request not named
  const timedOut = async (endpoint: string, requestHandler: Record<string, unknown>, lease: string) => {
    const client = localClient(endpoint, 'local', { requestHandler });
    cleanups.push(() => client.destroy());
    // the clock held while a request is under way: only the handler's own timer (real time) ends it
    const busy = inFlight(client);
    const c = drivenClock(() => busy());
    const errors: Error[] = [];
    const a = drivenElector(t.names, 'a', lease, client, c, [], errors);
    cleanups.push(() => a.stop());
    await c.drive(() => errors.length >= 1);
    return { client, c, error: errors[0]! };
  };
  const FIX = 'DynamoDB answers within milliseconds, but a new connection, a retried try or a busy DynamoDB Local takes longer';

  it('requestTimeout (thrown, throwOnRequestTimeout): told with the option and its value, and to raise it or leave it out', async () => {
    const silent: Listening = await listen(() => undefined);
    cleanups.push(() => close(silent));
    const { error } = await timedOut(silent.endpoint, { requestTimeout: 50, throwOnRequestTimeout: true }, 'own-request-timeout');
    expect(error).toBeInstanceOf(DynamoDBUnreachableError);
    expect(error.message).toBe(
      `cannot reach DynamoDB at ${silent.endpoint} (timed out at the client's own requestTimeout of 50 ms, its requestHandler option: no answer by then): ${FIX}: raise requestTimeout to a second or more, or leave it out (Conclave bounds each request itself); retrying with backoff`,
    );
  });

  it('socketTimeout: told with the option and its value', async () => {
    const silent: Listening = await listen(() => undefined);
    cleanups.push(() => close(silent));
    const { error } = await timedOut(silent.endpoint, { socketTimeout: 50 }, 'own-socket-timeout');
    expect(error.message).toMatch(/\(timed out at the client's own socketTimeout of 50 ms, its requestHandler option: the connection idle that long\): .*raise socketTimeout to a second or more, or leave it out/);
  });

  it('connectionTimeout (a SYN dropped): told with the option, the route to check; getLeader tells it as never sent', async () => {
    const { port, close: unblock } = await synDroppingPort();
    cleanups.push(unblock);
    const { client, c, error } = await timedOut(`http://127.0.0.1:${port}`, { connectionTimeout: 50 }, 'own-connection-timeout');
    const told = /\(timed out at the client's own connectionTimeout of 50 ms, its requestHandler option: no connection by then\): check the route to DynamoDB, and raise connectionTimeout to a second or more, or leave it out \(Conclave bounds each request itself\)/;
    expect(error.message).toMatch(told);
    let read: unknown;
    void getLeader('own-connection-timeout', { client, clock: c.clock, tables: t.names }).catch((x: unknown) => void (read = x));
    await c.drive(() => read !== undefined);
    // before: the bare TimeoutError of the handler
    expect(read).toBeInstanceOf(DynamoDBUnreachableError);
    expect((read as Error).message).toMatch(told);
  });
});
