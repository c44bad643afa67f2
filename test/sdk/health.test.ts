/**
 * The health check (lib/sdk/health.ts) over real HTTP on loopback: `/leader` is 200 only while the
 * elector leads a live term, judged on its own clock when asked; `/ready` is 200 for a leader and a
 * standby alike; `/healthz` fails only a failed or stuck elector. First on simulated time (the SDK
 * over the DynamoDB model: the renew deadline to the millisecond), then on DynamoDB Local.
 */
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { createServer, type Server } from 'node:http';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { getEventListeners } from 'node:events';
import { connect, type Socket } from 'node:net';
import { inject } from 'vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import { drivenClock, inFlight } from '../proxy.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { LeaderElector } from '../../lib/sdk/elector.js';
import { acquisition } from '../../lib/sdk/lock.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { Session } from '../../lib/sdk/session.js';
import { HEALTH_HEADERS, HealthResponseSchema, ServeHealthOptionsSchema, healthCheck, serveHealth, type HealthHandler, type HealthServer } from '../../lib/sdk/health.js';
import { listenOnLoopback, testTables, type TestTables } from '../support.js';
import { FAST, Log, STEADY, startElector, validationError, waitFor, type RunningElector } from './harness.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { LATENCY_MS, Sim, type SimElector } from '../../sim/harness.js';
import { CHASE_FIRST_MS, READ_AFTER_MS } from '../../lib/sdk/step.js';
import { DynamoDBModel } from '../../sim/dynamodb-model/index.js';

const A = 'http://10.0.0.1:8080';

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}
async function ask(url: string, method = 'GET'): Promise<Answer> {
  const r = await fetch(url, { method });
  return { status: r.status, headers: r.headers, text: await r.text() };
}
const body = (a: Answer) => HealthResponseSchema.parse(JSON.parse(a.text));

/** What `check`'s /leader answers when called: status, the headers about the holder, and the body's lease. */
const leaderAnswer = (check: HealthHandler) => () => {
  const headers = new Map<string, string>();
  let text = '';
  const res = { statusCode: 0, setHeader: (k: string, v: unknown) => (headers.set(k.toLowerCase(), String(v)), res), end: (x?: string) => ((text = x ?? ''), res) };
  check({ url: '/leader', method: 'GET' } as never, res as never);
  const lease = HealthResponseSchema.parse(JSON.parse(text)).leases[0]!;
  return { status: res.statusCode, holder: headers.get('conclave-holder'), address: headers.get('conclave-address'), body: { holder: lease.holder, address: lease.address } };
};

describe('on simulated time: /leader follows the renew deadline to the millisecond', () => {
  it('200 for the leader, 503 for a follower, ready for both; the leader answers 503 from its renew deadline on when it cannot renew', async () => {
    const L = 'health-sim';
    const sim = await Sim.create();
    const a = sim.elector('a', { leaseName: L, mode: 'NoCoordination', clockSync: 'none', advertise: A });
    await sim.until('a to lead', () => a.elector.isLeader());
    const b = sim.elector('b', { leaseName: L, mode: 'NoCoordination', clockSync: 'none' });
    await sim.until('b to see a lead', () => b.elector.leader === 'a');
    const servers = await Promise.all([serveHealth(a.elector, { port: 0, host: '127.0.0.1' }), serveHealth(b.elector, { port: 0, host: '127.0.0.1' })]);
    const [sa, sb] = servers;
    try {
      const leader = await ask(`${sa!.url}/leader`);
      expect(leader.status).toBe(200);
      expect(leader.headers.get(HEALTH_HEADERS.lease)).toBe(L);
      expect(leader.headers.get(HEALTH_HEADERS.holder)).toBe('a');
      expect(leader.headers.get(HEALTH_HEADERS.fencingToken)).toBe(String(a.elector.fencingToken));
      expect(leader.headers.get(HEALTH_HEADERS.address)).toBe(A);
      expect(leader.headers.get('cache-control')).toBe('no-store');
      expect(body(leader)).toEqual({ check: 'leader', ok: true, leases: [{ lease: L, identity: 'a', state: 'running', leading: true, ready: true, live: true, holder: 'a', fencingToken: a.elector.fencingToken, address: A }] });

      const follower = await ask(`${sb!.url}/leader`);
      expect(follower.status).toBe(503);
      expect(follower.headers.get(HEALTH_HEADERS.holder)).toBe('a'); // the holder it last saw
      expect(follower.headers.get(HEALTH_HEADERS.fencingToken)).toBeNull();
      // where the leader is, as the lease last read showed it (before 2026-12-05: nothing, only its name)
      expect(follower.headers.get(HEALTH_HEADERS.address)).toBe(A);
      expect(b.elector.leaderAddress).toBe(A);
      expect(body(follower)).toMatchObject({ check: 'leader', ok: false, leases: [{ identity: 'b', leading: false, ready: true, holder: 'a', address: A }] });
      for (const s of servers) expect((await ask(`${s.url}/ready`)).status).toBe(200);
      for (const s of servers) expect((await ask(`${s.url}/healthz`)).status).toBe(200);

      // a load balancer's HEAD: the same status and headers, no body
      const head = await ask(`${sa!.url}/leader`, 'HEAD');
      expect(head.status).toBe(200);
      expect(head.headers.get(HEALTH_HEADERS.fencingToken)).toBe(String(a.elector.fencingToken));
      expect(head.text).toBe('');
      // HAProxy's `option httpchk /leader` (a path alone) asks with OPTIONS, as Patroni's checks are answered
      const options = await ask(`${sa!.url}/leader`, 'OPTIONS');
      expect(options.status).toBe(200);
      expect(options.headers.get(HEALTH_HEADERS.fencingToken)).toBe(String(a.elector.fencingToken));
      expect(options.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
      expect(options.text).toBe('');
      expect((await ask(`${sb!.url}/leader`, 'OPTIONS')).status).toBe(503);

      // its renewals fail from now on: it leads until its renew deadline, counted from the last renewal that succeeded
      a.machine.fault = (req) => (req.operation === 'UpdateItem' ? Object.assign(new Error('injected: service unavailable'), { name: 'ServiceUnavailable' }) : undefined);
      await sim.run(FAST.retryPeriodMs); // an attempt fails (and whatever was in flight lands)
      const renewed = a.machine.sent.filter((r) => r.ok && r.operation === 'UpdateItem').at(-1)!.at;
      const deadline = renewed + FAST.renewDeadlineMs;
      await sim.clock.runUntil(deadline - 1);
      expect((await ask(`${sa!.url}/leader`)).status).toBe(200);
      await sim.run(1);
      const after = await ask(`${sa!.url}/leader`);
      expect(after.status).toBe(503);
      expect(after.headers.get(HEALTH_HEADERS.fencingToken)).toBeNull();
      expect(body(after).leases[0]).toMatchObject({ leading: false, ready: true, live: true });
      expect(sim.log.of('stopped', 'a')).toEqual([expect.objectContaining({ reason: 'renewDeadline' })]);
      // a standby is ready: a rolling update is never blocked by one that does not lead
      for (const s of servers) expect((await ask(`${s.url}/ready`)).status).toBe(200);
    } finally {
      await Promise.all(servers.map((s) => s.close()));
    }
  });

  it('an address with a non-ASCII host: Conclave-Address carries it as a client dials it (the host in punycode), the body as written', async () => {
    // found by a review (2026-12-06): the whole address was percent-encoded, `http%3A%2F%2Fb%C3%BCcher.example%3A8080`, which no client parses
    const sim = await Sim.create();
    const url = sim.elector('u', { leaseName: 'health-idn-url', mode: 'NoCoordination', clockSync: 'none', advertise: 'http://bücher.example:8080' });
    const grpc = sim.elector('g', { leaseName: 'health-idn-grpc', mode: 'NoCoordination', clockSync: 'none', advertise: 'grpc://bücher.example:8080/svc' });
    await sim.until('both to lead', () => url.elector.isLeader() && grpc.elector.isLeader());
    // host:port from a lease row another writer made (this SDK refuses a non-ASCII host:port of its own)
    const L = 'health-idn-hostport';
    const a = sim.elector('a', { leaseName: L, mode: 'NoCoordination', clockSync: 'none' });
    await sim.until('a to lead', () => a.elector.isLeader());
    await sim.client.send(new UpdateItemCommand({ TableName: sim.names.leases, Key: { name: { S: L } }, UpdateExpression: 'SET holderAddress = :a', ExpressionAttributeValues: { ':a': { S: 'bücher.example:8080' } } }));
    const b = sim.elector('b', { leaseName: L, mode: 'NoCoordination', clockSync: 'none' });
    await sim.until('b to see where a is', () => b.elector.leaderAddress === 'bücher.example:8080');
    const servers = await Promise.all([url, grpc, b].map((e) => serveHealth(e.elector, { port: 0, host: '127.0.0.1' })));
    const [su, sg, sb] = servers;
    try {
      const u = await ask(`${su!.url}/leader`);
      expect(u.headers.get(HEALTH_HEADERS.address)).toBe('http://xn--bcher-kva.example:8080/');
      expect(new URL(u.headers.get(HEALTH_HEADERS.address)!).host).toBe(new URL('http://bücher.example:8080').host);
      expect(body(u).leases[0]!.address).toBe('http://bücher.example:8080');
      // a scheme of its own: the URL percent-encodes its host; the header gives it in punycode, as http's
      expect((await ask(`${sg!.url}/leader`)).headers.get(HEALTH_HEADERS.address)).toBe('grpc://xn--bcher-kva.example:8080/svc');
      const follower = await ask(`${sb!.url}/leader`);
      expect(follower.status).toBe(503);
      expect(follower.headers.get(HEALTH_HEADERS.address)).toBe('xn--bcher-kva.example:8080');
      expect(body(follower).leases[0]!.address).toBe('bücher.example:8080');
    } finally {
      await Promise.all(servers.map((s) => s.close()));
    }
  });

  it('once run() has resolved, the body says it no longer takes part and names no holder it can no longer vouch for', async () => {
    const L = 'health-after-stop';
    const sim = await Sim.create();
    const a = sim.elector('a', { leaseName: L, mode: 'NoCoordination', clockSync: 'none' });
    await sim.until('a to lead', () => a.elector.isLeader());
    const b = sim.elector('b', { leaseName: L, mode: 'NoCoordination', clockSync: 'none' });
    await sim.until('b to see a lead', () => b.elector.leader === 'a');
    await b.stop();
    await a.stop(); // released: a's holder is gone too, which b, stopped, never sees
    const server = await listen(healthCheck(b.elector));
    try {
      for (const path of ['leader', 'ready', 'healthz']) {
        const stopped = await ask(`${server.url}/${path}`);
        expect(stopped.headers.get(HEALTH_HEADERS.holder)).toBeNull();
        const [l] = body(stopped).leases;
        expect(l).toEqual({ lease: L, identity: 'b', state: 'stopped', leading: false, ready: false, live: true });
      }
      // a stopped elector is not failed nor stuck: only /leader and /ready turn it away
      expect((await ask(`${server.url}/leader`)).status).toBe(503);
      expect((await ask(`${server.url}/ready`)).status).toBe(503);
      expect((await ask(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('a process frozen past its renew deadline answers 503 at once when asked, before any of its timers ran', async () => {
    const sim = await Sim.create();
    const e = sim.elector('h', { leaseName: 'health-frozen', mode: 'NoCoordination', clockSync: 'none' });
    await sim.until('h to lead', () => e.elector.isLeader());
    const handler = healthCheck(e.elector);
    const server = await listen(handler);
    try {
      e.machine.clock.pause(); // its timers stand still; its monotonic clock does not
      await sim.run(FAST.renewDeadlineMs + 100);
      expect(sim.log.of('stopped', 'h')).toEqual([]); // no timer of its has run
      expect((await ask(`${server.url}/leader`)).status).toBe(503);
      expect(sim.log.of('stopped', 'h')).toEqual([expect.objectContaining({ reason: 'renewDeadline' })]);
    } finally {
      await server.close();
    }
  });
});

/**
 * Found by a review (2026-12-07, twelfth): /healthz never failed a leader stuck past its term, as
 * the module promises (client-go's healthz). leaseHealth asked isLeader() first, which ends a term
 * past its renew deadline, then healthy() of what was a follower by then. A liveness probe restarts
 * only after several failures in a row (Kubernetes' failureThreshold: 3), so each probe fails until
 * the elector's own loop runs again; a stall within the tolerance, and a freeze its own timers end
 * before anything asks, fail none.
 */
describe('on simulated time: /healthz fails a leader stuck past its term until its own loop runs again', () => {
  const TOLERANCE_MS = 1_000;
  /** What `handler` answers GET /healthz with, now: its status and the body's one lease. */
  const healthz = (handler: HealthHandler) => {
    let text = '';
    const res = { statusCode: 0, setHeader: () => res, end: (t?: string) => ((text = t ?? ''), res) };
    handler({ url: '/healthz', method: 'GET' } as never, res as never);
    return { status: res.statusCode, lease: HealthResponseSchema.parse(JSON.parse(text)).leases[0]! };
  };
  const elector = (sim: Sim, id: string, leaseName: string) => sim.elector(id, { leaseName, mode: 'NoCoordination', clockSync: 'none', healthToleranceMs: TOLERANCE_MS });

  it('frozen past its lease duration and the tolerance: 503 at every probe while its loop stands still, 200 once it runs again; a follower 200 throughout', async () => {
    const L = 'health-stuck';
    const sim = await Sim.create();
    const a = elector(sim, 'a', L);
    await sim.until('a to lead', () => a.elector.isLeader());
    const b = elector(sim, 'b', L);
    await sim.until('b to see a lead', () => b.elector.leader === 'a');
    const [ofA, ofB] = [healthCheck(a.elector), healthCheck(b.elector)];
    a.machine.clock.pause(); // its timers stand still (its renew deadline's among them); its monotonic clock does not
    await sim.run(FAST.leaseDurationMs + TOLERANCE_MS + 500);
    // a probe a retry period apart, three in a row: what a liveness probe counts before it restarts
    for (const probe of [1, 2, 3]) {
      const got = healthz(ofA);
      expect({ probe, status: got.status, live: got.lease.live, ready: got.lease.ready }).toEqual({ probe, status: 503, live: false, ready: false });
      expect(healthz(ofB).status).toBe(200);
      await sim.run(FAST.retryPeriodMs);
    }
    expect(sim.log.of('stopped', 'a')).toEqual([expect.objectContaining({ reason: 'renewDeadline' })]); // the first probe ended its term
    a.machine.clock.resume(); // its timers run, and its loop with them
    await sim.run(1);
    expect(healthz(ofA)).toMatchObject({ status: 200, lease: { state: 'running', leading: false, live: true, ready: true } });
    await a.stop();
    expect(healthz(ofA)).toMatchObject({ status: 200, lease: { state: 'stopped', live: true } });
  });

  it('a stall past its renew deadline within the tolerance fails no probe; nor does a freeze past it whose own timers ran before the probe', async () => {
    const L = 'health-stall';
    const sim = await Sim.create();
    const a = elector(sim, 'a', L);
    await sim.until('a to lead', () => a.elector.isLeader());
    const check = healthCheck(a.elector);
    a.machine.clock.pause();
    await sim.run(FAST.leaseDurationMs + TOLERANCE_MS - 200);
    // the probe ends its term (past its renew deadline), but it is not stuck: the term ran out by less than the tolerance
    expect(healthz(check)).toMatchObject({ status: 200, lease: { leading: false, live: true } });
    a.machine.clock.resume();
    await sim.until('a to lead again', () => a.elector.isLeader());
    for (let i = 0; i < 3; i++) {
      expect(healthz(check).status).toBe(200);
      await sim.run(FAST.retryPeriodMs);
    }
    // frozen past the tolerance, its timers run as it thaws, before the probe: its renew deadline ended the term itself
    a.machine.clock.pause();
    await sim.run(FAST.leaseDurationMs + TOLERANCE_MS + 500);
    a.machine.clock.resume();
    await sim.run(1);
    expect(sim.log.of('stopped', 'a').at(-1)).toMatchObject({ reason: 'renewDeadline' });
    for (let i = 0; i < 3; i++) {
      expect(healthz(check)).toMatchObject({ status: 200, lease: { live: true } });
      await sim.run(FAST.retryPeriodMs);
    }
  });
});

/** A bare server around `handler` (as a user without serveHealth would write it), on loopback. */
async function listen(handler: Parameters<typeof createServer>[1]): Promise<HealthServer & { server: Server }> {
  const server = createServer(handler);
  const port = await listenOnLoopback(server);
  return {
    server,
    port,
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

/** An elector that never runs, on an in-memory model: what a test of the server alone serves. */
const idle = (lease: string) => new LeaderElector({ leaseName: lease, identity: 'a', mode: 'NoCoordination', client: new DynamoDBModel({ now: () => 0 }).client({ name: 'test' }), callbacks: { onStartedLeading: () => undefined } });
/** The status line `port` answers the raw request `req` with (the connection closed by the server). */
function statusLineOf(port: number, req: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let got = '';
    const s = connect(port, '127.0.0.1', () => s.write(req))
      .on('data', (d) => (got += d))
      .on('end', () => resolve(got.split('\r\n')[0]!))
      .on('error', reject);
  });
}

describe('on DynamoDB Local', () => {
  let t: TestTables;
  beforeAll(async () => {
    t = await testTables('health');
  });
  afterAll(() => t?.drop());

  it('/leader: 200 while leading, 503 once its renew deadline passed without a renewal (its own injected clock); a follower 503; both ready', async () => {
    const L = 'health-local';
    const clock = manualClock(); // wall and monotonic moved by hand; timers real
    const client = localClient(inject('ddbEndpoint'));
    let partitioned = false;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (partitioned && context.commandName === 'UpdateItemCommand') throw Object.assign(new Error('partitioned'), { name: 'NetworkingError' });
        return next(args);
      },
      { step: 'initialize', name: 'partition', priority: 'high' },
    );
    const log = new Log();
    // STEADY for a: b judges a's term by the duration on its row, on the wall clock; on FAST's 2 s a
    // busy machine's stall between a's renewals let b take the lease before the partition
    const a = startElector(t, log, 'a', { leaseName: L, mode: 'NoCoordination', platform: 'none', clockSync: 'none', clock, advertise: A, ...STEADY }, { client });
    await waitFor('a to lead', () => a.elector.isLeader());
    const b = startElector(t, log, 'b', { leaseName: L, mode: 'NoCoordination', platform: 'none' });
    await waitFor('b to see a lead', () => b.elector.leader === 'a');
    const servers = [await serveHealth(a.elector, { port: 0, host: '127.0.0.1' }), await serveHealth(b.elector, { port: 0, host: '127.0.0.1' })];
    try {
      const [sa, sb] = servers;
      const leading = await ask(`${sa!.url}/leader`);
      expect(leading.status).toBe(200);
      expect(body(leading).leases[0]).toMatchObject({ leading: true, fencingToken: a.elector.fencingToken, address: A });
      expect((await ask(`${sb!.url}/leader`)).status).toBe(503);
      for (const s of servers) expect((await ask(`${s.url}/ready`)).status).toBe(200);
      partitioned = true; // a's renewals fail from now on; its clock has not moved since its last renewal was sent
      expect(log.of('stopped', 'a')).toEqual([]); // a led its one term up to the partition
      clock.advance(STEADY.renewDeadlineMs);
      const lapsed = await ask(`${sa!.url}/leader`);
      expect(lapsed.status).toBe(503);
      expect(body(lapsed).leases[0]).toMatchObject({ leading: false, ready: true });
      expect(log.of('stopped', 'a')).toEqual([expect.objectContaining({ reason: 'renewDeadline' })]);
      for (const s of servers) expect((await ask(`${s.url}/ready`)).status).toBe(200);
    } finally {
      partitioned = false;
      await Promise.all(servers.map((s) => s.close()));
      await a.stop();
      await b.stop();
      client.destroy();
    }
  });

  // found by a review (2026-12-07, ninth): after the holder released, a follower that could not take
  // the lease (its writes failing) kept naming the holder gone, in Conclave-Holder and the body, for
  // as long as that lasted, its own last read showing nobody (the address, checked against that read, was dropped)
  it("a follower's 503 names the holder its last read of the lease shows, with that holder's address: nobody once it shows the lease released, the new holder once it shows one", async () => {
    const L = 'health-released';
    const [B, C] = ['http://10.0.0.2:8080', 'http://10.0.0.3:8080'];
    const clientA = localClient(inject('ddbEndpoint'));
    const clientB = localClient(inject('ddbEndpoint'));
    const [busyA, busyB] = [inFlight(clientA), inFlight(clientB)];
    // one clock the test moves, while neither client has a request under way
    const { clock, drive } = drivenClock(() => busyA() || busyB());
    let writesRefused = false;
    let takes = 0;
    clientB.middlewareStack.add(
      (next, context) => async (args) => {
        if (writesRefused && /^(UpdateItem|PutItem|TransactWriteItems)Command$/.test(String(context.commandName))) {
          takes++;
          throw Object.assign(new Error('injected: unreachable'), { name: 'NetworkingError' });
        }
        return next(args);
      },
      { step: 'initialize', name: 'writesRefused', priority: 'high' },
    );
    const log = new Log();
    const opts = { leaseName: L, mode: 'NoCoordination', platform: 'none', clockSync: 'none', clock } as const;
    const a = startElector(t, log, 'a', { ...opts, advertise: A }, { client: clientA });
    await drive(() => a.elector.isLeader());
    const b = startElector(t, log, 'b', { ...opts, advertise: B }, { client: clientB, errors: [] });
    const asked = leaderAnswer(healthCheck(b.elector));
    let c: RunningElector | undefined;
    try {
      await drive(() => b.elector.leader === 'a');
      expect(asked()).toEqual({ status: 503, holder: 'a', address: A, body: { holder: 'a', address: A } });
      writesRefused = true; // b can read the lease, never take it
      // a stops (SIGTERM): it releases the lease
      let stopped = false;
      void a.stop().then(() => (stopped = true));
      await drive(() => stopped);
      // b reads the lease unheld, and tries to take it (refused, as every try after it)
      await drive(() => takes >= 2);
      expect(b.elector.isLeader()).toBe(false);
      // before: { holder: 'a' } in the header and the body, for as long as b could not take the lease
      expect(asked()).toEqual({ status: 503, holder: undefined, address: undefined, body: { holder: undefined, address: undefined } });
      // another takes it: b's next read names that one, and where it is
      const third = (c = startElector(t, log, 'c', { ...opts, advertise: C }, { client: clientA }));
      await drive(() => third.elector.isLeader() && b.elector.leader === 'c');
      expect(asked()).toEqual({ status: 503, holder: 'c', address: C, body: { holder: 'c', address: C } });
    } finally {
      writesRefused = false;
      let stopped = false;
      void Promise.all([b.stop(), c?.stop()]).then(() => (stopped = true));
      await drive(() => stopped);
      clientA.destroy();
      clientB.destroy();
    }
  });

  // found by a review (2026-12-07, tenth): a follower whose take of a lease run out was refused (another
  // moved first) went on naming the holder whose term had run out, with its address, until its next read;
  // the refusal had already named the winner (onNewLeader, LeaderElector.leader)
  it.each([
    { refusal: "with the winner's row", named: 'c' },
    { refusal: 'without a row (DynamoDB Local before 2.2.0)', named: undefined },
  ])("a follower whose take is refused, $refusal, names the one that moved first at once (nobody when the refusal names none), and its address from its next read", async ({ named }) => {
    const L = `health-refused-take-${named ?? 'none'}`;
    const C = 'http://10.0.0.3:8080';
    const clientB = localClient(inject('ddbEndpoint'));
    const clientC = localClient(inject('ddbEndpoint'));
    const [busyB, busyC] = [inFlight(clientB), inFlight(clientC)];
    const { clock, drive } = drivenClock(() => busyB() || busyC());
    const leases = new LeaseStore(clientC, t.names.leases);
    const take = async (identity: string, address: string) => {
      const read = await leases.read(L);
      await leases.write(read, acquisition(read.item, { identity, instance: `${identity}-1`, now: clock.now(), leaseDurationSeconds: 15, electedBy: 'self', address }));
    };
    await take('a', A); // a's term, never renewed: b sees it run out on its own clock
    let raced = false;
    let refused = false;
    clientB.middlewareStack.add(
      (next, context) => async (args) => {
        if (raced || context.commandName !== 'UpdateItemCommand' || (args.input as { TableName?: string }).TableName !== t.names.leases) return next(args);
        // b's take: c's lands just before it, so DynamoDB refuses b's (with c's row, or none as DynamoDB Local before 2.2.0 answered)
        raced = true;
        await take('c', C);
        try {
          return await next(args);
        } catch (e) {
          if (named === undefined) delete (e as { Item?: unknown }).Item;
          throw e;
        } finally {
          refused = true;
        }
      },
      { step: 'initialize', name: 'cMovesFirst', priority: 'high' },
    );
    const log = new Log();
    const b = startElector(t, log, 'b', { leaseName: L, mode: 'NoCoordination', platform: 'none', clockSync: 'none', clock, advertise: 'http://10.0.0.2:8080' }, { client: clientB, errors: [] });
    const asked = leaderAnswer(healthCheck(b.elector));
    try {
      await drive(() => b.elector.leader === 'a');
      expect(asked()).toEqual({ status: 503, holder: 'a', address: A, body: { holder: 'a', address: A } });
      await drive(() => refused);
      await new Promise((resolve) => setImmediate(resolve)); // the refusal's answer stepped
      expect(b.elector.isLeader()).toBe(false);
      expect(b.elector.leader).toBe(named ?? 'a'); // onNewLeader's: the refusal's row, when it came with one
      // before: { holder: 'a', address: A }, the holder whose term ran out, until b's next read
      expect(asked()).toEqual({ status: 503, holder: named, address: undefined, body: { holder: named, address: undefined } });
      // b's next read shows c's row: c, and where it is
      await drive(() => asked().address === C);
      expect(asked()).toEqual({ status: 503, holder: 'c', address: C, body: { holder: 'c', address: C } });
    } finally {
      let stopped = false;
      void b.stop().then(() => (stopped = true));
      await drive(() => stopped);
      clientB.destroy();
      clientC.destroy();
    }
  });

  it('several leases in one process: /leader/<lease> each, /ready and /healthz for all, a bare /leader is ambiguous', async () => {
    const log = new Log();
    // On a clock the test moves (drivenClock), only while it waits for the two to lead: no time
    // passes, and no renew deadline, during the requests below, however long a busy machine takes
    // over them. (Before: the machine's clock and FAST's 1.5 s renew deadline, a budget a stall
    // between the election and the last request could miss, /leader then answering 503.)
    const client = localClient(inject('ddbEndpoint'));
    const { clock, drive } = drivenClock(inFlight(client));
    const one = startElector(t, log, 'w', { leaseName: 'health-one', mode: 'NoCoordination', platform: 'none', clockSync: 'none', clock }, { client });
    const two = startElector(t, log, 'w', { leaseName: 'health/two', mode: 'NoCoordination', platform: 'none', clockSync: 'none', clock }, { client });
    await drive(() => one.elector.isLeader() && two.elector.isLeader());
    const other = new LeaderElector({ leaseName: 'health-idle', identity: 'w', mode: 'NoCoordination', client: t.client, tables: t.names, callbacks: { onStartedLeading: () => undefined } });
    const s = await serveHealth([one.elector, two.elector], { port: 0, host: '127.0.0.1' });
    const idle = await serveHealth(other, { port: 0, host: '127.0.0.1' });
    try {
      expect((await ask(`${s.url}/leader/health-one`)).status).toBe(200);
      const slash = await ask(`${s.url}/leader/health/two`); // a lease name with a slash
      expect(slash.status).toBe(200);
      expect(slash.headers.get(HEALTH_HEADERS.lease)).toBe('health/two');
      expect((await ask(`${s.url}/leader/${encodeURIComponent('health/two')}?x=1`)).status).toBe(200);
      const ambiguous = await ask(`${s.url}/leader`);
      expect(ambiguous.status).toBe(404);
      expect(ambiguous.text).toMatch(/ambiguous with 2 leases: ask \/leader\/<lease>/);
      const unknown = await ask(`${s.url}/leader/nope`);
      expect(unknown.status).toBe(404);
      expect(unknown.text).toMatch(/no lease "nope".*leases: health-one, health\/two/);
      const ready = await ask(`${s.url}/ready`);
      expect(ready.status).toBe(200);
      expect(ready.headers.get(HEALTH_HEADERS.lease)).toBeNull(); // several leases: the body names them
      expect(body(ready).leases.map((l) => l.lease)).toEqual(['health-one', 'health/two']);
      expect((await ask(`${s.url}/healthz/health-one`)).status).toBe(200);
      expect((await ask(`${s.url}/metrics`)).status).toBe(404);
      const post = await ask(`${s.url}/ready`, 'POST');
      expect(post.status).toBe(405);
      expect(post.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
      // not run yet: alive, not ready
      expect((await ask(`${idle.url}/ready`)).status).toBe(503);
      expect((await ask(`${idle.url}/healthz`)).status).toBe(200);
      expect(body(await ask(`${idle.url}/healthz`)).leases[0]!.state).toBe('idle');
      expect(log.of('stopped')).toEqual([]); // each led its one term throughout
    } finally {
      await s.close();
      await idle.close();
      await one.stop();
      await two.stop();
      client.destroy();
    }
  });

  it('an elector whose run() failed is neither ready nor live; one stopped is live but not ready', async () => {
    // a coordinated one registers its candidacy before it starts: a missing table is fatal there
    const missing = new LeaderElector({ leaseName: 'health-failed', identity: 'f', candidacy: { emulationVersion: '1.0.0', binaryVersion: '1.0.0' }, platform: 'none', client: t.client, tables: 'no-such-tables', callbacks: { onStartedLeading: () => undefined }, onError: () => undefined });
    const failed = missing.run(new AbortController().signal);
    await expect(failed).rejects.toMatchObject({ name: 'TableNotFoundError' });
    const stopped = startElector(t, new Log(), 's', { leaseName: 'health-stopped', mode: 'NoCoordination', platform: 'none' });
    await stopped.elector.ready;
    await stopped.stop();
    const s = await serveHealth([missing, stopped.elector], { port: 0, host: '127.0.0.1' });
    try {
      const why = (await failed.catch((e: unknown) => e)) as Error;
      const failedAnswer = await ask(`${s.url}/healthz/health-failed`);
      // the message as the check shows it: at most 1,000 characters (on DynamoDB Local it lists the table prefixes there too)
      const shown = why.message.length > 1000 ? `${why.message.slice(0, 997)}...` : why.message;
      expect(body(failedAnswer)).toMatchObject({ ok: false, leases: [{ state: 'failed', live: false, ready: false, error: { name: 'TableNotFoundError', message: shown } }] });
      expect(Object.keys(JSON.parse(failedAnswer.text).leases[0].error)).toEqual(['name', 'message']); // no stack, no cause
      expect(body(await ask(`${s.url}/healthz/health-stopped`)).leases[0]).not.toHaveProperty('error');
      expect((await ask(`${s.url}/ready/health-failed`)).status).toBe(503);
      expect(body(await ask(`${s.url}/ready/health-stopped`))).toMatchObject({ ok: false, leases: [{ state: 'stopped', ready: false, live: true }] });
      expect((await ask(`${s.url}/healthz/health-stopped`)).status).toBe(200);
      expect((await ask(`${s.url}/healthz`)).status).toBe(503); // one failed: the process is not well
    } finally {
      await s.close();
    }
  });

  it('mounted in an app (Express-style): its paths answered, any other passed to next()', async () => {
    const e = new LeaderElector({ leaseName: 'health-mounted', identity: 'm', mode: 'NoCoordination', client: t.client, tables: t.names, callbacks: { onStartedLeading: () => undefined } });
    const check = healthCheck(e);
    const app = await listen((req, res) =>
      check(req, res, () => {
        res.statusCode = 418;
        res.end('the app');
      }),
    );
    try {
      expect((await ask(`${app.url}/leader`)).status).toBe(503);
      expect(await ask(`${app.url}/orders`)).toMatchObject({ status: 418, text: 'the app' });
    } finally {
      await app.close();
    }
  });

  it('bad arguments are ValidationErrors naming the field', () => {
    const e = new LeaderElector({ leaseName: 'health-bad', identity: 'x', mode: 'NoCoordination', client: t.client, tables: t.names, callbacks: { onStartedLeading: () => undefined } });
    const twin = new LeaderElector({ leaseName: 'health-bad', identity: 'y', mode: 'NoCoordination', client: t.client, tables: t.names, callbacks: { onStartedLeading: () => undefined } });
    expect(validationError(() => healthCheck([])).message).toMatch(/at least one LeaderElector/);
    expect(validationError(() => healthCheck({} as LeaderElector)).message).toMatch(/a LeaderElector or an array of them/);
    expect(validationError(() => healthCheck([e, twin])).message).toMatch(/lease "health-bad" twice/);
    return Promise.all([
      expect(serveHealth(e, { port: 70_000 })).rejects.toMatchObject({ name: 'ValidationError', fields: ['port'] }),
      expect(serveHealth(e, { port: 0, hots: 'x' } as never)).rejects.toThrow(/unknown option of serveHealth: "hots"/),
    ]);
  });
});

/** Found by a review (2026-11-30); each fails without its fix. */
describe('serveHealth, as a load balancer and a shutdown hook meet it', () => {

  it('answers a request whose target is in absolute form (RFC 9112) as its path', async () => {
    const s = await serveHealth(idle('abs'), { port: 0, host: '127.0.0.1' });
    try {
      // before the fix: 404
      expect(await statusLineOf(s.port, `GET http://127.0.0.1:${s.port}/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)).toBe('HTTP/1.1 200 OK');
    } finally {
      await s.close();
    }
  });

  it('listening on every interface (the default), its url is the IPv4 loopback its TSDoc names, not localhost (which may resolve to ::1 first)', async () => {
    const s = await serveHealth(idle('url'), { port: 0 });
    try {
      expect(s.url).toBe(`http://127.0.0.1:${s.port}`); // before the fix: http://localhost:PORT
      expect((await ask(`${s.url}/healthz`)).status).toBe(200);
    } finally {
      await s.close();
    }
  });

  it('close() twice resolves; a port in use is refused naming serveHealth and `port`', async () => {
    const a = await serveHealth(idle('twice'), { port: 0, host: '127.0.0.1' });
    const e = await serveHealth(idle('twice-2'), { port: a.port, host: '127.0.0.1' }).catch((x: Error) => x);
    await a.close();
    await expect(a.close()).resolves.toBeUndefined(); // before the fix: ERR_SERVER_NOT_RUNNING
    expect((e as Error).message).toMatch(/^serveHealth cannot listen on 127\.0\.0\.1:\d+: the port is in use; give another `port`/);
    expect(((e as Error).cause as { code?: string }).code).toBe('EADDRINUSE');
  });
});

/** Found by a review (2026-12-01), as a load balancer's operator meets it; each fails without its fix. */
describe('the health check, as a load balancer in front of a fleet meets it', () => {

  it('a lease path with a malformed escape names no lease: 404, not the bare check', async () => {
    const s = await serveHealth(idle('escape'), { port: 0, host: '127.0.0.1' });
    try {
      // before the fix: 200, answered as /healthz for every lease
      const bad = await ask(`${s.url}/healthz/escape%ZZ`);
      expect(bad.status).toBe(404);
      expect(bad.text).toMatch(/no lease "escape%ZZ" here/);
      expect((await ask(`${s.url}/healthz/escape`)).status).toBe(200);
    } finally {
      await s.close();
    }
  });

  // found by a review (2026-12-07): a trailing slash was stripped from every path, so a lease named
  // `reports/` (a name may end with `/`) was reachable only as /leader/reports%2F, and /leader/reports/ asked for `reports`
  it('a lease whose name ends with "/" is served at its own path; a trailing slash after another lease\'s name is still that lease', async () => {
    const handler = healthCheck([idle('reports/'), idle('reports'), idle('jobs/daily//')]);
    const leaseAt = (path: string) => {
      let text = '';
      const res = { statusCode: 0, setHeader: () => res, end: (t?: string) => ((text = t ?? ''), res) };
      handler({ url: path, method: 'GET' } as never, res as never);
      return res.statusCode === 404 ? 404 : HealthResponseSchema.parse(JSON.parse(text)).leases.map((l) => l.lease).join(',');
    };
    // the name as written (before the fix: `reports`, and 404 for jobs/daily//)
    expect(leaseAt('/ready/reports/')).toBe('reports/');
    expect(leaseAt('/ready/jobs/daily//')).toBe('jobs/daily//');
    expect(leaseAt('/ready/reports%2F')).toBe('reports/');
    expect(leaseAt('/ready/reports')).toBe('reports');
    // no lease of the name as written: the trailing slashes dropped, as ever
    expect(leaseAt('/ready/reports//')).toBe('reports');
    expect(leaseAt('/ready/jobs/daily/')).toBe(404);
    expect(leaseAt('/healthz/')).toBe('reports/,reports,jobs/daily//');
    expect(leaseAt('/healthz/?x=/')).toBe('reports/,reports,jobs/daily//');
  });

  it('an HTTP/1.1 check without a Host header is answered (HAProxy\'s `option httpchk GET /leader HTTP/1.1` sends none)', async () => {
    const s = await serveHealth(idle('no-host'), { port: 0, host: '127.0.0.1' });
    try {
      // before the fix: 400 Bad Request from node:http, and HAProxy marked every worker DOWN (HAProxy 2.6: "Layer7 wrong status, code: 400")
      expect(await statusLineOf(s.port, 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n')).toBe('HTTP/1.1 200 OK');
      expect(await statusLineOf(s.port, 'OPTIONS /leader HTTP/1.1\r\nConnection: close\r\n\r\n')).toBe('HTTP/1.1 503 Service Unavailable');
    } finally {
      await s.close();
    }
  });

  it('a host this machine has no interface for is refused naming serveHealth and `host`', async () => {
    // 203.0.113.0/24 (TEST-NET-3): documentation's, no interface here has it
    const e = await serveHealth(idle('elsewhere'), { port: 0, host: '203.0.113.7' }).catch((x: Error) => x);
    // before the fix: "listen EADDRNOTAVAIL: address not available 203.0.113.7", naming no option
    expect((e as Error).message).toMatch(/^serveHealth cannot listen on 203\.0\.113\.7:0: no interface of this host has that address; give one of its own as `host`/);
    expect(((e as Error).cause as { code?: string }).code).toBe('EADDRNOTAVAIL');
  });
});

/**
 * What a load balancer sees of a change of leader, on simulated time: every worker's `/leader`
 * asked after every step of the simulation, never two 200s at once; the new leader's first 200
 * timed from the old one's first 503. Asked in-process (the handler, as a server would call it):
 * a step is too short for a real request.
 */
describe('on simulated time: /leader across a change of leader', () => {
  const L = 'health-change';
  const RTT_MS = 2 * LATENCY_MS;
  /** The status `handler` answers GET `path` with, now. */
  const statusOf = (handler: HealthHandler, path: string): number => {
    const res = { statusCode: 0, setHeader: () => res, end: () => res };
    handler({ url: path, method: 'GET' } as never, res as never);
    return res.statusCode;
  };
  async function electedThenCoordinatorDown(releaseOnCancel: boolean) {
    const sim = await Sim.create({ config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } });
    const coord = sim.coordinator();
    const es = ['a', 'b'].map((id) => sim.elector(id, { leaseName: L, fallbackAfterMs: 60_000, releaseOnCancel }));
    const leader = await sim.until('a leader', () => es.find((e) => e.elector.isLeader()));
    await sim.until('a successor on the lease', async () => (await sim.leases.read(L)).item?.successor !== undefined);
    coord.stop(); // only the workers act from here on
    const successor = es.find((e) => e !== leader)!;
    return { sim, leader, successor };
  }
  /** Runs until `successor` answers 200, asking both after every step: when the old one first failed, when the new one first answered, and any moment both answered 200. */
  async function watch(sim: Sim, leader: SimElector, successor: SimElector) {
    const [old, next] = [healthCheck(leader.elector), healthCheck(successor.elector)];
    let oldDown: number | undefined;
    const both: number[] = [];
    const nextUp = await sim.until('the successor to answer 200', () => {
      const [o, n] = [statusOf(old, '/leader'), statusOf(next, '/leader')];
      const now = sim.clock.monotonic();
      if (o !== 200) oldDown ??= now;
      if (o === 200 && n === 200) both.push(now);
      return n === 200 && now;
    }, 30_000);
    return { oldDown, nextUp, both };
  }

  it('a hand-off (SIGTERM): the old leader answers 503 before the heir answers 200, which it does within a read and a few round trips', async () => {
    const { sim, leader, successor } = await electedThenCoordinatorDown(true);
    await sim.run(3 * leader.elector.renewIntervalMs);
    leader.controller.abort(); // SIGTERM: it hands its term over
    const { oldDown, nextUp, both } = await watch(sim, leader, successor);
    expect(both).toEqual([]);
    expect(nextUp).toBeGreaterThanOrEqual(oldDown!);
    expect(nextUp - oldDown!).toBeLessThanOrEqual(READ_AFTER_MS + 2 * CHASE_FIRST_MS + 6 * RTT_MS);
  });

  it('a leader cut off from DynamoDB: it answers 503 from its renew deadline, the successor 200 only once the term ran out, within a poll and a take of it', async () => {
    const { sim, leader, successor } = await electedThenCoordinatorDown(false);
    await sim.run(3 * leader.elector.renewIntervalMs + 123);
    const cutAt = sim.clock.monotonic();
    leader.machine.fault = () => Object.assign(new Error('injected: unreachable'), { name: 'NetworkingError' });
    const { oldDown, nextUp, both } = await watch(sim, leader, successor);
    expect(both).toEqual([]);
    const renewed = sim.lastRenewal(L, leader.elector.options.identity, cutAt);
    const term = (await sim.leases.read(L)).item!.leaseDurationSeconds * 1000;
    expect(oldDown).toBeLessThanOrEqual(renewed + FAST.renewDeadlineMs + LATENCY_MS); // its deadline, counted from the renewal's send
    expect(nextUp).toBeGreaterThanOrEqual(renewed + term);
    expect(nextUp - (renewed + term)).toBeLessThanOrEqual(FAST.retryPeriodMs * 1.2 + 3 * RTT_MS + 1); // seen at a poll, taken, then answered
  });
});

/**
 * Found by a review (2026-12-07): a leader cut off from DynamoDB stops at its renew deadline and
 * answers 503, but the last holder it saw is still itself, so its 503 named itself and its own
 * address as where the leader is, for as long as the partition lasted, while the successor led:
 * a client following the pointer came straight back to the 503. It names no holder it knows is stale.
 */
describe('on simulated time: a deposed leader cut off from DynamoDB points nowhere, not at itself', () => {
  const L = 'health-deposed';
  const ADDRESS = { a: 'http://10.0.0.1:80', b: 'http://10.0.0.2:80' } as const;
  /** What `handler` answers GET `path` with, now: status, headers and body. */
  const answerOf = (handler: HealthHandler, path: string) => {
    const headers = new Map<string, string>();
    let text = '';
    const res = { statusCode: 0, setHeader: (k: string, v: unknown) => (headers.set(k.toLowerCase(), String(v)), res), end: (t?: string) => ((text = t ?? ''), res) };
    handler({ url: path, method: 'GET' } as never, res as never);
    return { status: res.statusCode, headers, body: HealthResponseSchema.parse(JSON.parse(text)) };
  };
  /** Session timings that fit FAST's (as test/sdk/session.test.ts' SESSION). */
  const SESSION = { renewIntervalMs: 600, retryPeriodMs: 150, renewDeadlineMs: 1_200, maxLeaseDurationMs: 2_000 } as const;

  it.each([{ held: 'on its own renewals' }, { held: 'on a Session' }])('a leader holding the lease $held: its 503 names neither itself nor its address once b leads, at once and 60 s on', async ({ held }) => {
    const sim = await Sim.create({ config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } });
    sim.coordinator();
    const es = (['a', 'b'] as const).map((id) => {
      const machine = sim.machine();
      const session = held === 'on a Session' ? new Session({ client: machine.client, tables: sim.names, clock: machine.clock, prefix: id, onError: () => undefined, ...SESSION }) : undefined;
      void session?.run(new AbortController().signal);
      return sim.elector(id, { leaseName: L, fallbackAfterMs: 60_000, advertise: ADDRESS[id], ...(session ? { session } : {}) }, { machine });
    });
    const [a, b] = es as [SimElector, SimElector];
    const first = await sim.until('a leader', () => es.find((e) => e.elector.isLeader()));
    const [cut, next] = first === a ? [a, b] : [b, a];
    if (held === 'on a Session') expect((await sim.leases.read(L)).item?.session).toBeDefined();
    await sim.run(3 * cut.elector.renewIntervalMs + 123);
    cut.machine.fault = () => Object.assign(new Error('injected: unreachable'), { name: 'NetworkingError' });
    await sim.until('the other to lead', () => next.elector.isLeader(), 30_000);
    const [old, now] = [healthCheck(cut.elector), healthCheck(next.elector)];
    const me = cut.elector.options.identity as 'a' | 'b';
    const them = next.elector.options.identity as 'a' | 'b';
    for (const when of ['at once', '60 s on']) {
      if (when === '60 s on') await sim.run(60_000);
      const o = answerOf(old, '/leader');
      expect({ when, status: o.status, holder: o.headers.get('conclave-holder'), address: o.headers.get('conclave-address') }).toEqual({ when, status: 503, holder: undefined, address: undefined });
      expect(o.body.leases[0]).not.toHaveProperty('holder');
      expect(o.body.leases[0]).not.toHaveProperty('address');
      expect(o.body.leases[0]).toMatchObject({ identity: me, leading: false, state: 'running' });
      const n = answerOf(now, '/leader');
      expect({ when, status: n.status, holder: n.headers.get('conclave-holder'), address: n.headers.get('conclave-address') }).toEqual({ when, status: 200, holder: them, address: ADDRESS[them] });
    }
  });
});

/**
 * Found by a review (2026-12-01): a health server on node:http's defaults is held open by any
 * client that connects and says nothing (60 s before headersTimeout, checked only every 30 s), takes
 * any number of connections, and cannot be tied to the app's own stop signal. Each fails without its fix.
 */
describe('serveHealth, as a health port exposed to slow clients and an app that stops meets it', () => {
  /**
   * For the tests of the cap: a timeout far beyond them, so a connection closed is closed by the cap
   * alone. (Before: the 5 s default, a budget on the machine's clock: a stall that long between a
   * connection's last bytes and the look at it had the timeout close it, an idle keep-alive or a
   * check whose request was still arriving, or close the one the cap was to close.)
   */
  const UNTIMED = { timeoutMs: 10 * 60_000 } as const;
  /** A raw connection to `port`: what it received, and a promise of its close (by either side). */
  const raw = (port: number, send?: string) => {
    const c = { got: '', error: undefined as string | undefined, socket: connect(port, '127.0.0.1', () => send !== undefined && c.socket.write(send)), closed: undefined as unknown as Promise<string> };
    c.closed = new Promise<string>((resolve) =>
      c.socket
        .on('data', (d) => (c.got += d))
        .on('error', (e: Error & { code?: string }) => (c.error = e.code))
        .on('close', () => resolve(c.got)),
    );
    return c;
  };

  it('bounds its connections by default: a request within 5 s, an idle connection closed after 5 s, at most 64 at once', async () => {
    // the server object serveHealth made, as node:http publishes it for each request it starts
    let seen: Server | undefined;
    const onStart = (m: unknown) => (seen = (m as { server: Server }).server);
    subscribe('http.server.request.start', onStart);
    const s = await serveHealth(idle('defaults'), { port: 0, host: '127.0.0.1' });
    try {
      expect(await statusLineOf(s.port, 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n')).toBe('HTTP/1.1 200 OK');
      // before the fix: 60 000, 300 000, 5 000, 0 (never), Infinity
      // (the cap on connections is serveHealth's own, below; node:http's closes the newest)
      expect(seen).toMatchObject({ headersTimeout: 5_000, requestTimeout: 5_000, keepAliveTimeout: 5_000, timeout: 5_000 });
      expect(ServeHealthOptionsSchema.parse({ port: 0 })).toMatchObject({ timeoutMs: 5_000, maxConnections: 64 });
    } finally {
      unsubscribe('http.server.request.start', onStart);
      await s.close();
    }
  });

  it('timeoutMs: a client that sends nothing, one that stops halfway through its headers, and an idle keep-alive are each closed', async () => {
    const s = await serveHealth(idle('slow'), { port: 0, host: '127.0.0.1', timeoutMs: 100 });
    try {
      const silent = raw(s.port);
      const half = raw(s.port, 'GET /healthz HTTP/1.1\r\nX-Slow: 1\r\n');
      const kept = raw(s.port, 'GET /healthz HTTP/1.1\r\n\r\n'); // HTTP/1.1: kept alive after its answer
      expect(await silent.closed).not.toMatch(/200 OK/);
      expect(await half.closed).not.toMatch(/200 OK/);
      expect(await kept.closed).toMatch(/^HTTP\/1\.1 200 OK/);
    } finally {
      await s.close();
    }
  });

  it('maxConnections: one past the cap closes the oldest idle connection, and the new one is answered', async () => {
    const s = await serveHealth(idle('cap'), { port: 0, host: '127.0.0.1', maxConnections: 2, ...UNTIMED });
    try {
      const first = raw(s.port, 'GET /healthz HTTP/1.1\r\n\r\n');
      await waitFor('the first answered and kept open', () => first.got.includes('200 OK'));
      const second = raw(s.port, 'GET /healthz HTTP/1.1\r\n\r\n');
      await waitFor('the second answered and kept open', () => second.got.includes('200 OK'));
      const third = raw(s.port, 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n');
      expect(await third.closed).toMatch(/^HTTP\/1\.1 200 OK/);
      await first.closed; // the oldest idle one, closed
      expect(second.socket.destroyed).toBe(false);
    } finally {
      await s.close();
    }
  });

  it('maxConnections: a check whose request is still arriving is not idle: the idle one is closed, and the check answered (a review, 2026-12-05: the check, being the oldest, was closed)', async () => {
    const s = await serveHealth(idle('cap-mid'), { port: 0, host: '127.0.0.1', maxConnections: 2, ...UNTIMED });
    try {
      const check = raw(s.port, 'GET /healthz HTTP/1.1\r\n'); // its headers still on the way
      // a keep-alive connection, answered after the check's first bytes were sent (so read), idle since
      const kept = raw(s.port, 'GET /healthz HTTP/1.1\r\n\r\n');
      await waitFor('the keep-alive answered', () => kept.got.includes('200 OK'));
      const third = raw(s.port, 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n');
      expect(await third.closed).toMatch(/^HTTP\/1\.1 200 OK/);
      await kept.closed; // the idle one, closed
      check.socket.write('Connection: close\r\n\r\n');
      expect(await check.closed).toMatch(/^HTTP\/1\.1 200 OK/);
    } finally {
      await s.close();
    }
  });

  it('maxConnections: a client holding the cap with idle connections from one address, opening another as each closes, does not shut out a check from another (it refused every check)', async () => {
    // found by a review (2026-12-05): node:http's maxConnections closed the new connection, so 64
    // silent sockets reopened as they closed had every check refused: a load balancer marked the leader down
    const s = await serveHealth(idle('flood'), { port: 0, host: '127.0.0.1', ...UNTIMED });
    let flooding = true;
    const sockets: Socket[] = [];
    const hold = () => {
      if (!flooding) return;
      const c = connect({ port: s.port, host: '127.0.0.1', localAddress: '127.0.0.2' });
      sockets.push(c);
      c.on('error', () => undefined).on('close', hold);
    };
    try {
      for (let i = 0; i < 64; i++) hold();
      await waitFor('the flood holding the cap', () => sockets.filter((c) => !c.connecting && !c.destroyed).length >= 64);
      for (let i = 0; i < 10; i++) expect(await statusLineOf(s.port, 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n')).toBe('HTTP/1.1 200 OK');
    } finally {
      flooding = false;
      for (const c of sockets) c.destroy();
      await s.close();
    }
  });

  it.each([
    { from: '127.0.0.2', what: 'another address' },
    { from: '127.0.0.1', what: "the check's own address (one NAT in front of both)" },
  ])('maxConnections: a client holding the cap from $what with requests it never finishes does not shut a check out: its oldest is closed (it closed every check)', async ({ from }) => {
    // found by a review (2026-12-06): only idle connections were closed, else the new one (counted
    // idle), so 8 connections each with a request line sent and no more had every check closed at once
    const accepted: Socket[] = []; // the server's side of each connection, as node:net publishes it
    const onSocket = (m: unknown) => accepted.push((m as { socket: Socket }).socket);
    subscribe('net.server.socket', onSocket);
    const s = await serveHealth(idle('cap-slow'), { port: 0, host: '127.0.0.1', maxConnections: 8, ...UNTIMED });
    const held: Socket[] = [];
    try {
      for (let i = 0; i < 8; i++) {
        const c = connect({ port: s.port, host: '127.0.0.1', localAddress: from }, () => c.write('GET /leader HTTP/1.1\r\n'));
        held.push(c.on('error', () => undefined));
      }
      // each request line read by the server: not one of them idle
      const flood = () => accepted.filter((c) => c.localPort === s.port);
      const [oldest, ...rest] = await waitFor('8 requests begun', () => flood().length === 8 && flood().every((c) => c.bytesRead > 0) && flood());
      expect(await statusLineOf(s.port, 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n')).toBe('HTTP/1.1 200 OK');
      expect(oldest!.destroyed).toBe(true); // the flood's oldest (as the server accepted them), closed mid-request
      expect(rest.every((c) => !c.destroyed)).toBe(true);
    } finally {
      unsubscribe('net.server.socket', onSocket);
      for (const c of held) c.destroy();
      await s.close();
    }
  });

  it('maxConnections: a check just accepted, its request not read yet, is not closed for a connection from another address that lands after it: the oldest unfinished one is (it counted as idle and was closed first)', async () => {
    // found by a review (2026-12-06): a connection that had sent nothing counted as idle (nothing read
    // since its last answer, of which it had none), so with the cap held from many addresses, one
    // each, an attacker's connection landing just after a load balancer's had the check closed
    // (10% of checks reset at 500 connections a second). Its request is sent only once the next
    // connection has landed: the window between its accept and its first bytes, held open, not timed.
    // the server's side of each of its connections, as node:net publishes it (once capConnections has judged it; a closed one keeps its place)
    const flood: Socket[] = [];
    let port = -1;
    const onSocket = (m: unknown) => void ((m as { socket: Socket }).socket.localPort === port && flood.push((m as { socket: Socket }).socket));
    subscribe('net.server.socket', onSocket);
    const s = await serveHealth(idle('cap-fresh'), { port: 0, host: '127.0.0.1', maxConnections: 4, ...UNTIMED });
    port = s.port;
    const held: Socket[] = [];
    const hold = (from: string) => {
      const c = connect({ port: s.port, host: '127.0.0.1', localAddress: from }, () => c.write('GET /leader HTTP/1.1\r\n'));
      held.push(c.on('error', () => undefined));
    };
    try {
      for (let i = 0; i < 4; i++) hold(`127.0.0.${10 + i}`); // the cap, from four addresses: every address holds the most
      const [oldest, second, ...rest] = await waitFor('4 requests begun', () => flood.length === 4 && flood.every((c) => c.bytesRead > 0) && [...flood]);
      const check = raw(s.port); // from 127.0.0.1, one past the cap: the flood's oldest is closed
      const checkSide = await waitFor('the check accepted', () => flood[4]);
      expect(oldest!.destroyed).toBe(true);
      hold('127.0.0.20'); // one past the cap again, before the check's request is read
      await waitFor('the next accepted', () => flood.length === 6);
      expect(checkSide.bytesRead).toBe(0);
      expect(checkSide.destroyed).toBe(false); // before the fix: true, the check closed as idle
      expect(second!.destroyed).toBe(true); // the oldest unfinished, instead
      expect(rest.every((c) => !c.destroyed)).toBe(true);
      check.socket.write('GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n');
      expect(await check.closed).toMatch(/^HTTP\/1\.1 200 OK/);
    } finally {
      unsubscribe('net.server.socket', onSocket);
      for (const c of held) c.destroy();
      await s.close();
    }
  });

  it('signal: aborting it closes the server and its open connections, as close() does; close() after resolves; its listener is removed on close()', async () => {
    const stop = new AbortController();
    const s = await serveHealth(idle('signal'), { port: 0, host: '127.0.0.1', signal: stop.signal });
    const kept = raw(s.port, 'GET /healthz HTTP/1.1\r\n\r\n');
    await waitFor('a kept-alive connection', () => kept.got.includes('200 OK'));
    stop.abort(); // before the fix: an unknown option, refused
    await kept.closed;
    await expect(s.close()).resolves.toBeUndefined();
    const refused = raw(s.port);
    await refused.closed;
    expect(refused.error).toBe('ECONNREFUSED');

    const lives = new AbortController(); // an app-wide signal, outliving the server
    const t = await serveHealth(idle('signal-2'), { port: 0, host: '127.0.0.1', signal: lives.signal });
    expect(getEventListeners(lives.signal, 'abort')).toHaveLength(1);
    await t.close();
    expect(getEventListeners(lives.signal, 'abort')).toHaveLength(0);
  });

  it('signal: already aborted, serveHealth rejects with its reason and listens on nothing; not an AbortSignal, a ValidationError naming it', async () => {
    const reason = new Error('shutting down');
    await expect(serveHealth(idle('aborted'), { port: 0, host: '127.0.0.1', signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    // aborted while it begins to listen: closed again, and refused the same way
    const stop = new AbortController();
    const starting = serveHealth(idle('aborting'), { port: 0, host: '127.0.0.1', signal: stop.signal });
    stop.abort(reason);
    await expect(starting).rejects.toBe(reason);
    await expect(serveHealth(idle('bad-signal'), { port: 0, signal: 'stop' as never })).rejects.toMatchObject({ name: 'ValidationError', fields: ['signal'] });
    await expect(serveHealth(idle('bad-timeout'), { port: 0, timeoutMs: 0 })).rejects.toMatchObject({ name: 'ValidationError', fields: ['timeoutMs'] });
    await expect(serveHealth(idle('bad-cap'), { port: 0, maxConnections: 0 })).rejects.toMatchObject({ name: 'ValidationError', fields: ['maxConnections'] });
  });
});

/** Found by a review (2026-12-02): one bad argument hid another; each fails without its fix. */
describe('healthCheck and serveHealth: every bad argument in one error', () => {
  it('healthCheck([e, e, "x"]): the lease listed twice and the element that is no LeaderElector, each at its index with its fix', () => {
    const e = idle('health-every');
    // before: only "(root): must be a LeaderElector or an array of them" (the union's array branch
    // stopped at 'x', and the duplicate check after it never ran)
    const err = validationError(() => healthCheck([e, e, 'x' as never]));
    expect([...err.fields].sort()).toEqual(['[1]', '[2]']);
    const at = (f: string) => err.issues.find((i) => i.field === f)?.message;
    expect(at('[1]')).toBe('lists lease "health-every" twice, at [0] and [1]: each lease is served once, at /leader/health-every; drop one (one elector per lease)');
    expect(at('[2]')).toBe('must be a LeaderElector, not the string "x": give the elector itself (new LeaderElector({ ... })), one per lease');
    // two electors of one lease, and two bad elements: each named
    const twin = idle('health-every');
    const many = validationError(() => healthCheck([e, 7 as never, twin, null as never]));
    expect([...many.fields].sort()).toEqual(['[1]', '[2]', '[3]']);
    expect(many.message).toContain('[1]: must be a LeaderElector, not the number 7');
    expect(many.message).toContain('[2]: lists lease "health-every" twice, at [0] and [2]');
    expect(many.message).toContain('[3]: must be a LeaderElector, not null');
    // the shapes that were right before are still refused as before
    expect(validationError(() => healthCheck([])).message).toBe('invalid healthCheck electors: (root): must list at least one LeaderElector');
    expect(validationError(() => healthCheck('x' as never)).message).toBe('invalid healthCheck electors: (root): must be a LeaderElector or an array of them');
    expect(healthCheck([e, idle('health-every-2')])).toBeTypeOf('function');
  });

  it('serveHealth with bad electors and bad options: both in one error', async () => {
    const e = idle('health-both');
    // before: "invalid serveHealth options: port: …" alone; the electors were judged only once the options were fixed
    const both = await serveHealth([e, e], { port: -1, timeoutMs: 0 }).catch((x: unknown) => x);
    expect(both).toBeInstanceOf(ValidationError);
    expect((both as ValidationError).fields).toEqual(['electors[1]', 'port', 'timeoutMs']);
    expect((both as ValidationError).message).toMatch(/^invalid serveHealth electors and options: electors\[1\]: lists lease "health-both" twice, at \[0\] and \[1\].*; port: must be a port from 0 to 65535/);
    const notOne = await serveHealth('x' as never, { port: 70_000 }).catch((x: unknown) => x);
    expect((notOne as ValidationError).fields).toEqual(['electors', 'port']);
    // one of the two alone: named as before
    await expect(serveHealth(e, { port: 70_000 })).rejects.toMatchObject({ name: 'ValidationError', subject: 'serveHealth options', fields: ['port'] });
    await expect(serveHealth([e, e], { port: 0 })).rejects.toMatchObject({ name: 'ValidationError', subject: 'serveHealth electors', fields: ['electors[1]'] });
  });
});
