/**
 * A leader whose DynamoDB answers, but slowly: each write taken on a connection made and answered
 * seconds later (a multi-Region strongly consistent table whose quorum is a far Region away, an
 * overloaded endpoint). Its renewals are abandoned unanswered, and it stops at its renew deadline,
 * as it must; what onError is told names that case (DynamoDB took the request and gave no answer
 * within the bound) and its fixes: the network path, and, for a DynamoDB only slow, the gap a
 * renewal has to land in (renewDeadlineMs - renewIntervalMs). Before (a review, 2026-12-07): "cannot
 * reach DynamoDB at … (timed out): check the client's endpoint and region, and that DynamoDB (or
 * DynamoDB Local: npx conclave-local) is up", blaming the endpoint's configuration. On DynamoDB
 * Local behind a loopback proxy that answers the lease's writes after SLOW_MS of the driven clock
 * (test/proxy.ts drivenClock): the real AWS SDK and Node.js sockets, no wall-clock wait.
 */
import { createServer, request } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Clock } from '../../lib/clock.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { RequestBoundError } from '../../lib/sdk/bounded-client.js';
import { DynamoDBUnreachableError, LeaderElector } from '../../lib/sdk/index.js';
import { drivenClock } from '../proxy.js';
import { listenOnLoopback, testTables, type TestTables } from '../support.js';
import { CLIENT_GO, type Terms } from './driven-elector.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('slow-answer')));
afterAll(async () => t.drop());
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** How long the slow DynamoDB takes to answer a write: past a renewal's 4 s (renewDeadlineMs - renewIntervalMs) and past a request's 5 s bound. */
const SLOW_MS = 6_000;

/**
 * An HTTP proxy in front of `target` (DynamoDB Local): while `slow(true)`, each request `matches`
 * picks is taken and passed on only SLOW_MS later on `clock` (it lands then, the client waiting or
 * not); everything else at once. `waiting()` counts the requests it holds whose client still waits;
 * `passing()` those passed on and not answered yet.
 */
async function slowProxy(target: string, clock: () => Clock, matches: (operation: string, body: string) => boolean) {
  const to = new URL(target);
  let slow = false;
  let waiting = 0;
  let passing = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const passOn = () => {
        passing++;
        const up = request({ host: to.hostname, port: Number(to.port), method: req.method, path: req.url, headers: req.headers }, (r) => {
          const answer: Buffer[] = [];
          r.on('data', (c: Buffer) => answer.push(c));
          r.on('end', () => {
            passing--;
            if (!res.destroyed) res.writeHead(r.statusCode ?? 500, r.headers).end(Buffer.concat(answer));
          });
        });
        up.on('error', () => {
          passing--;
          res.destroy();
        });
        up.end(body);
      };
      const operation = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? '';
      if (!slow || !matches(operation, body.toString('utf8'))) return passOn();
      waiting++;
      let counted = true;
      const uncount = () => void (counted && (waiting--, (counted = false)));
      res.on('close', uncount); // the client gave up on it: it still lands, later
      clock().setTimer(SLOW_MS, () => {
        uncount();
        passOn();
      });
    });
  });
  const port = await listenOnLoopback(server);
  return {
    endpoint: `http://127.0.0.1:${port}`,
    slow: (on: boolean) => void (slow = on),
    waiting: () => waiting,
    passing: () => passing,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

/** How many requests `client` has under way (sent, not yet answered or failed). */
function underWay(client: { middlewareStack: { add: (mw: never, o: object) => void } }): () => number {
  let n = 0;
  const count = (next: (args: unknown) => Promise<unknown>) => async (args: unknown) => {
    n++;
    try {
      return await next(args);
    } finally {
      n--;
    }
  };
  client.middlewareStack.add(count as never, { step: 'initialize', name: 'underWay', priority: 'high' });
  return () => n;
}

describe('a leader whose DynamoDB takes its renewals and answers each seconds later (slow, not unreachable)', () => {
  it('stops by its renew deadline; onError names a request taken and unanswered within its bound, the network path, and the renew-deadline gap to widen (docs/deploy.md)', async () => {
    const box: { c?: ReturnType<typeof drivenClock> } = {};
    const lease = 'slow-answer';
    // the lease's writes (its renewals, and its takes once it stepped down)
    const proxy = await slowProxy(inject('ddbEndpoint'), () => box.c!.clock, (operation, body) => operation === 'UpdateItem' && body.includes(`"${lease}"`));
    cleanups.push(() => proxy.close());
    const client = localClient(proxy.endpoint);
    cleanups.push(() => client.destroy());
    const sent = underWay(client);
    // the clock moves while no request is under way but those the proxy holds on it
    const c = (box.c = drivenClock(() => proxy.passing() > 0 || sent() > proxy.waiting()));
    const terms: Terms = [];
    const told: { e: Error; leading: boolean }[] = [];
    const a = new LeaderElector({
      client,
      tables: t.names,
      clock: c.clock,
      clockSync: 'none',
      leaseName: lease,
      identity: 'a',
      mode: 'NoCoordination',
      ...CLIENT_GO,
      renewIntervalMs: 6_000, // a coordinated leader's default: renewDeadlineMs - 2 × retryPeriodMs; a renewal has 4 s to land
      onError: (e) => void told.push({ e, leading: a.isLeader() }),
      callbacks: {
        onStartedLeading: () => void terms.push({ who: 'a', from: c.clock.monotonic() }),
        onStoppedLeading: () => void (terms.findLast((x) => x.who === 'a')!.to = c.clock.monotonic()),
      },
    });
    const cancel = new AbortController();
    let settled = false;
    const running = a.run(cancel.signal).finally(() => void (settled = true));
    cleanups.push(async () => {
      cancel.abort();
      proxy.slow(false);
      await c.drive(() => settled);
      await running;
    });

    await c.drive(() => a.isLeader());
    expect(told).toEqual([]);
    proxy.slow(true);
    const from = c.clock.monotonic();
    await c.drive(() => !a.isLeader());
    // it stops as a leader must that cannot show its term renewed: by its renew deadline
    expect(terms).toHaveLength(1);
    expect(terms[0]!.to! - from).toBeLessThanOrEqual(CLIENT_GO.renewDeadlineMs);

    const renewal = told.find((x) => x.leading);
    expect(renewal, 'a renewal abandoned while it led is told').toBeDefined();
    const e = renewal!.e;
    // the class and code kept: code that tells faults by them still does
    expect(e).toBeInstanceOf(DynamoDBUnreachableError);
    expect(e).toMatchObject({ endpoint: proxy.endpoint, code: 'timed out', cause: expect.any(RequestBoundError) });
    const boundMs = Math.round((e.cause as RequestBoundError).boundMs);
    // before: `cannot reach DynamoDB at ${endpoint} (timed out): check the client's endpoint and region, and that DynamoDB (or DynamoDB Local: npx conclave-local) is up; retrying with backoff`
    expect(e.message).not.toContain("check the client's endpoint and region, and that DynamoDB (or DynamoDB Local: npx conclave-local) is up");
    expect(e.message).toBe(
      `DynamoDB at ${proxy.endpoint} took the request and gave no answer within ${boundMs} ms (timed out after it was sent on a connection made: DynamoDB slow to answer, or the connection cut off on the way): ` +
        `check the network path to the endpoint (a route, NAT, proxy or firewall that drops a flow once made; the client's endpoint and region; a DynamoDB Local wedged or starved of CPU); ` +
        `if DynamoDB is reachable but slow (a multi-Region table whose write quorum is a Region away, an overloaded endpoint), a leader's renewal must land within renewDeadlineMs - renewIntervalMs of being sent ` +
        `(4 s at a coordinated leader's defaults; make it about twice the slowest write): widen that gap, lengthening renewDeadlineMs with leaseDurationMs and retryPeriodMs ` +
        `(docs/deploy.md, "One leader across Regions", "Timings across Regions"); retrying with backoff`,
    );
    // every fault told meanwhile is this one (its takes, once it stepped down, too)
    for (const x of told) expect(x.e.message).toMatch(/^DynamoDB at \S+ took the request and gave no answer within \d+ ms \(timed out after it was sent/);

    // DynamoDB fast again: it leads again
    proxy.slow(false);
    await c.drive(() => a.isLeader());
  });
});
