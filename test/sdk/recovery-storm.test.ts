/**
 * A process's followers behind DynamoDB throttling part of their requests (capacity-based, as AWS
 * throttles: some pass). Every answer after a failure is a recovery (lib/sdk/faults.ts recovered),
 * which wakes the process's followers napping out a backoff. Before a review (2026-12-08, sixteenth)
 * each woke at once: the followers that had just failed tried again a round trip later, each wave's
 * few answers waking the next, and the doubling backoff never ran (README: "never more than one try
 * per retry period"). On DynamoDB Local through a loopback proxy (test/proxy.ts foreignAnswersProxy),
 * on a clock moved while no request is in flight: simulated time, never a time budget.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localClient } from '../../lib/stores/client.js';
import { retryDelayMs, RETRY_JITTER } from '../../lib/sdk/faults.js';
import { drivenClock, foreignAnswersProxy, inFlight } from '../proxy.js';
import { bound, CLIENT_GO, drivenElector, type Terms } from './driven-elector.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('storm')));
afterAll(async () => t.drop());

/** Notes, per lease, when each request `client` sends on it goes out (on `now`). */
function sentPerLease(client: DynamoDBClient, now: () => number): Map<string, number[]> {
  const sent = new Map<string, number[]>();
  const note = (next: (args: unknown) => Promise<unknown>) => async (args: unknown) => {
    const key = (args as { input?: { Key?: { name?: { S?: string } | string } } }).input?.Key?.name;
    const lease = typeof key === 'string' ? key : (key?.S ?? '(none)');
    sent.set(lease, [...(sent.get(lease) ?? []), now()]);
    return next(args);
  };
  client.middlewareStack.add(note as never, { step: 'initialize', name: 'sentPerLease', priority: 'high' });
  return sent;
}

/**
 * A proxy in front of DynamoDB Local that, while `throttling(passEvery)`, answers all but every
 * `passEvery`-th request as DynamoDB throttles one (the rest passed on); process A's client straight
 * to DynamoDB Local, process B's through the proxy (one try per request, as the AWS SDK's retries
 * would hide nothing here), and a clock driven while neither has a request in flight.
 */
async function setUp() {
  let passEvery = 0;
  let seen = 0;
  const proxy = await foreignAnswersProxy(inject('ddbEndpoint'), () => passEvery > 0 && ++seen % passEvery !== 0);
  proxy.answer('throttled');
  const b = localClient(proxy.endpoint, undefined, { maxAttempts: 1 });
  const a = localClient(inject('ddbEndpoint'));
  const busy = [inFlight(b), inFlight(a)];
  const c = drivenClock(() => proxy.inFlight() > 0 || busy.some((x) => x()));
  return {
    a,
    b,
    c,
    sent: sentPerLease(b, () => c.clock.monotonic()),
    throttling: (every: number) => void ((passEvery = every), (seen = 0)),
    close: async () => {
      a.destroy();
      b.destroy();
      await proxy.close();
    },
  };
}

describe('followers in one process, DynamoDB throttling nine requests in ten (every tenth passes)', () => {
  it("each lease's follower tries at most once a retry period (and one more), however many of the process's requests pass: no storm of recoveries", async () => {
    const s = await setUp();
    const n = 20;
    const terms: Terms = [];
    const errors: Error[] = [];
    const leases = Array.from({ length: n }, (_, i) => `storm-${i}`);
    // process A leads every lease (straight to DynamoDB); process B follows each, behind the throttling
    const leaders = leases.map((l) => drivenElector(t.names, `a-${l}`, l, s.a, s.c, terms, []));
    await s.c.drive(() => leaders.every((x) => x.e.isLeader()));
    const followers = leases.map((l) => drivenElector(t.names, `b-${l}`, l, s.b, s.c, terms, errors));
    // (each start-up's first look and its loop's first read go out together: the window opens after them)
    const started = s.c.clock.monotonic();
    await s.c.drive(() => s.c.clock.monotonic() >= started + 2 * CLIENT_GO.retryPeriodMs);
    const from = s.c.clock.monotonic();
    s.throttling(10);
    const windowMs = 60_000;
    await s.c.drive(() => s.c.clock.monotonic() - from >= windowMs);
    const tries = leases.map((l) => (s.sent.get(l) ?? []).filter((x) => x >= from && x < from + windowMs).length);
    // the option's bound: one try per retry period per lease, and one more (test/sdk/driven-elector.ts)
    const most = bound(windowMs);
    // before the fix: up to ~100 a lease (each wave's answers woke every follower that had just failed)
    expect(Math.max(...tries)).toBeLessThanOrEqual(most);
    expect(tries.reduce((x, y) => x + y, 0)).toBeLessThanOrEqual(n * most);
    // and no two of a lease's tries closer than a retry period
    for (const l of leases) {
      const at = (s.sent.get(l) ?? []).filter((x) => x >= from && x < from + windowMs);
      for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!, `${l}'s tries at ${at.map((x) => x - from).join(', ')}`).toBeGreaterThanOrEqual(CLIENT_GO.retryPeriodMs);
    }
    // each throttled try told; process A's terms untouched
    expect(errors.length).toBeGreaterThan(0);
    for (const e of errors) expect(e).toMatchObject({ name: 'DynamoDBRefusedError', kind: 'throttled' });
    expect(leaders.every((x) => x.e.isLeader())).toBe(true);
    expect(terms.filter((x) => x.who.startsWith('b-'))).toEqual([]);
    s.throttling(0);
    for (const x of [...followers, ...leaders]) await x.stop();
    await s.close();
  });
});

describe('a follower backed off long (its third failure in a row: four retry periods), then a request of its process answers after failures', () => {
  it('it tries again at once (the recovery still cuts its backoff short), a retry period or more after its last try', async () => {
    const s = await setUp();
    const terms: Terms = [];
    const ofB1: Error[] = [];
    const ofB2: Error[] = [];
    const [a1, a2] = [drivenElector(t.names, 'a1', 'long-1', s.a, s.c, terms, []), drivenElector(t.names, 'a2', 'long-2', s.a, s.c, terms, [])];
    await s.c.drive(() => a1.e.isLeader() && a2.e.isLeader());
    const b1 = drivenElector(t.names, 'b1', 'long-1', s.b, s.c, terms, ofB1);
    await s.c.drive(() => (s.sent.get('long-1')?.length ?? 0) >= 2);
    // every request throttled until b1 has failed three times in a row: its next try four retry periods on
    s.throttling(Number.MAX_SAFE_INTEGER);
    await s.c.drive(() => ofB1.length >= 3);
    const lastTry = s.sent.get('long-1')!.at(-1)!;
    const backoffEnds = lastTry + retryDelayMs(3, CLIENT_GO.retryPeriodMs, s.c.clock.random());
    s.throttling(0);
    // b2, on the process's client, starts following long-2 while DynamoDB answers; then one of its reads is throttled
    const b2 = drivenElector(t.names, 'b2', 'long-2', s.b, s.c, terms, ofB2);
    await s.c.drive(() => (s.sent.get('long-2')?.length ?? 0) >= 2);
    s.throttling(Number.MAX_SAFE_INTEGER);
    await s.c.drive(() => ofB2.length >= 1);
    s.throttling(0);
    // b2's next read answers: a recovery
    const tries = () => s.sent.get('long-1')!.filter((x) => x > lastTry);
    await s.c.drive(() => tries().length >= 1);
    const recoveredAt = s.sent.get('long-2')!.at(-1)!;
    expect(recoveredAt).toBeLessThan(backoffEnds - CLIENT_GO.retryPeriodMs);
    const next = tries()[0]!;
    // without a recovery it would have waited its backoff out (four retry periods, jittered)
    expect(next).toBeLessThan(backoffEnds);
    expect(next).toBeLessThanOrEqual(recoveredAt + CLIENT_GO.retryPeriodMs * RETRY_JITTER);
    expect(next - lastTry).toBeGreaterThanOrEqual(CLIENT_GO.retryPeriodMs);
    expect(ofB1).toHaveLength(3);
    for (const x of [b1, b2, a1, a2]) await x.stop();
    await s.close();
  });
});
