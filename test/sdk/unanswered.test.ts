/**
 * A request DynamoDB never answers (a black-holed route: packets dropped, no reset). The AWS SDK
 * sets no request timeout by default, so such a request waits for TCP to give up, many minutes
 * later, and the elector, its candidacy and a Session each wait for their request before their next
 * step. Bounded (lib/sdk/bounded-client.ts), the request fails as a timeout and the loop goes on.
 * On loopback (test/proxy.ts): a server that accepts and never answers, a proxy in front of
 * DynamoDB Local that can start dropping everything, and one that resets a connection as DynamoDB
 * answers a write (it landed; the AWS SDK sends it again). Waits on conditions and simulated time,
 * never on a time budget.
 */
import { createServer as createHttpServer, request } from 'node:http';
import { GetItemCommand, ListTablesCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { seededRandom, simulatedClock, type Clock } from '../../lib/clock.js';
import { boundedClient, MIN_REQUEST_BOUND_MS, requestBoundMs, RequestBoundError } from '../../lib/sdk/bounded-client.js';
import { DynamoDBUnreachableError, LeaderElector, LeaseLostError, type LeaderElectorOptions } from '../../lib/sdk/index.js';
import { untilTermEnds } from '../../lib/sdk/fencing.js';
import { acquisition, dynamoLeaseLock } from '../../lib/sdk/lock.js';
import { Session } from '../../lib/sdk/session.js';
import { withLease } from '../../lib/sdk/with-lease.js';
import { localClient } from '../../lib/stores/client.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { listenOnLoopback, testTables, type TestTables } from '../support.js';
import { waitFor } from './harness.js';
import { close, drivenClock, inFlight, listen, resettingProxy, type Listening } from '../proxy.js';

describe('boundedClient', () => {
  it('a request never answered fails as a timeout once its bound has passed on the clock given, not before', async () => {
    const silent = await listen((s) => s.on('data', () => undefined)); // accepts, reads, never answers
    const clock = simulatedClock({ start: 1_800_000_000_000, seed: 1 });
    const client = localClient(silent.endpoint);
    let outcome: unknown;
    const sent = boundedClient(client, clock, 5_000)
      .send(new GetItemCommand({ TableName: 't', Key: { k: { S: 'a' } } }))
      .then(
        () => (outcome = 'answered'),
        (e: unknown) => (outcome = e),
      );
    await waitFor('the request to reach the server', () => silent.sockets.size > 0);
    await clock.run(4_999);
    expect(outcome).toBeUndefined(); // still waiting: the bound has not passed
    await clock.run(1);
    await sent;
    expect(outcome).toBeInstanceOf(RequestBoundError);
    expect((outcome as Error).name).toBe('TimeoutError'); // told as the SDK's timeout: "cannot reach DynamoDB (timed out)"
    client.destroy();
    await close(silent);
  });

  it('a request answered in time is the client’s own: the same answer, and its timer cancelled', async () => {
    const clock = simulatedClock({ start: 1_800_000_000_000, seed: 1 });
    const client = localClient(inject('ddbEndpoint'));
    const out = await boundedClient(client, clock, 5_000).send(new ListTablesCommand({ Limit: 1 }));
    expect(Array.isArray(out.TableNames)).toBe(true);
    expect(clock.pending()).toBe(0);
    client.destroy();
  });

  it("a request sent with its caller's signal already aborted rejects with the signal's reason, and the client's own rejection after it is handled, not left unhandled", async () => {
    // a stopping worker's last requests are sent so (run()'s signal aborted); an unhandled rejection ends a Node process
    const silent = await listen((s) => s.on('data', () => undefined));
    const client = localClient(silent.endpoint);
    const busy = inFlight(client);
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => void unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      const stop = new AbortController();
      stop.abort(new Error('stopping'));
      const out = await boundedClient(client, simulatedClock({ start: 1_800_000_000_000, seed: 1 }), 5_000)
        .send(new GetItemCommand({ TableName: 't', Key: { k: { S: 'a' } } }), { abortSignal: stop.signal })
        .then(
          () => 'answered',
          (e: unknown) => e,
        );
      expect(out).toBe(stop.signal.reason);
      await waitFor("the client's own send settled", () => !busy());
      for (let i = 0; i < 10; i++) await new Promise<void>((r) => setImmediate(r)); // Node tells an unhandled rejection once the microtasks ran
      expect(unhandled).toEqual([]); // before: [AbortError: Request aborted]
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await close(silent);
    }
  });

  it('the bound: the loop’s period, never under 5 s', () => {
    expect(requestBoundMs(15_000)).toBe(15_000);
    expect(requestBoundMs(2_000)).toBe(MIN_REQUEST_BOUND_MS);
  });
});

describe('untilTermEnds: a write of a term that ends before its answer is abandoned', () => {
  it('rejects with the error given the moment the term ends, aborting the write’s signal, though the write never settles', async () => {
    const term = new AbortController();
    let sent: AbortSignal | undefined;
    const out = untilTermEnds(term.signal, () => new Error('lost'), (signal) => ((sent = signal), new Promise<never>(() => undefined))).catch((e: unknown) => e);
    term.abort('renewDeadline');
    expect(await out).toEqual(new Error('lost'));
    expect(sent?.aborted).toBe(true);
  });

  it('an answer in the term is the write’s own; a term already over sends nothing', async () => {
    const term = new AbortController();
    expect(await untilTermEnds(term.signal, () => new Error('lost'), async () => 'written')).toBe('written');
    term.abort('deposed');
    let called = false;
    await expect(untilTermEnds(term.signal, () => new Error('lost'), async () => void (called = true))).rejects.toThrow('lost');
    expect(called).toBe(false);
  });
});

describe('a leader whose route to DynamoDB Local drops every packet for a while', () => {
  let t: TestTables;
  beforeAll(async () => {
    t = await testTables('unanswered');
  });
  afterAll(async () => {
    await t?.drop();
  });

  /**
   * A proxy in front of DynamoDB Local: a request that arrives while `kills()` says so is taken and
   * never answered (a black-holed flow: no answer, no reset; its connection stays open until the
   * client lets go). The requests it swallowed are named by the header `driven()` puts on each.
   */
  async function blackHoling(kills: () => boolean) {
    const target = new URL(inject('ddbEndpoint'));
    const swallowed = new Set<string>();
    const server = createHttpServer((req, res) => {
      if (kills()) {
        swallowed.add(String(req.headers[REQUEST_ID]));
        req.resume();
        return;
      }
      const up = request({ host: target.hostname, port: Number(target.port), method: req.method, path: req.url, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode ?? 500, r.headers);
        r.pipe(res);
      });
      up.on('error', () => res.destroy());
      req.pipe(up);
    });
    const port = await listenOnLoopback(server);
    return {
      endpoint: `http://127.0.0.1:${port}`,
      swallowed: () => swallowed.size,
      isSwallowed: (id: string) => swallowed.has(id),
      close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
    };
  }
  const REQUEST_ID = 'x-test-request';

  /**
   * A client through `proxy`, and a clock the test moves (drivenClock): its next timer fires only
   * once every request the client sent is answered or swallowed, so no time passes on it while
   * DynamoDB Local, or a busy machine, takes its time. `sent` lists each request (its command, when
   * it went out, and once answered, whether it landed), on that clock.
   */
  function driven(proxy: Awaited<ReturnType<typeof blackHoling>>) {
    const client = localClient(proxy.endpoint);
    const pending = new Set<string>();
    const sent: { command: string; at: number; ok?: boolean }[] = [];
    const c = drivenClock(() => [...pending].some((id) => !proxy.isSwallowed(id)));
    let seq = 0;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const id = String(++seq);
        (args.request as { headers: Record<string, string> }).headers[REQUEST_ID] = id;
        const one: (typeof sent)[number] = { command: context.commandName ?? '?', at: c.clock.monotonic() };
        sent.push(one);
        pending.add(id);
        try {
          const out = await next(args);
          one.ok = true;
          return out;
        } catch (e) {
          one.ok = false;
          throw e;
        } finally {
          pending.delete(id);
        }
      },
      { step: 'build', name: 'testRequestId' },
    );
    return { client, ...c, sent };
  }

  /** A NoCoordination leader "w1" of `leaseName` on `client` and `clock`: its starts and stops in `log`, its faults in `errors`. */
  function loneLeader(client: DynamoDBClient, clock: Clock, leaseName: string, timings: Pick<LeaderElectorOptions, 'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs' | 'renewIntervalMs'>) {
    const errors: Error[] = [];
    const log: string[] = [];
    const elector = new LeaderElector({
      client,
      clock,
      clockSync: 'none', // the stamps are the driven clock's
      tables: t.names,
      leaseName,
      identity: 'w1',
      mode: 'NoCoordination',
      platform: 'none',
      ...timings,
      callbacks: {
        onStartedLeading: () => void log.push('started'),
        onStoppedLeading: ({ reason }) => void log.push(`stopped ${reason}`),
      },
      onError: (e) => errors.push(e),
    });
    return { elector, log, errors };
  }
  /** True once `p` has settled, whichever way. */
  const settled = (p: Promise<unknown>) => {
    let over = false;
    p.then(
      () => (over = true),
      () => (over = true),
    );
    return () => over;
  };
  const timedOut = (errors: Error[]) => errors.filter((e) => e instanceof DynamoDBUnreachableError && /timed out/.test(e.message));

  // Both on the driven clock: the renew deadline and the request bounds are judged on time that
  // stands still while a request is on its way, so a busy machine's stall ends no term here, and
  // the moments are exact. (Before: on the machine's clock, a 1.5 s renew deadline, and 2 s between
  // the abandoned renewal and the deadline, both of which a starved process could miss.)
  it('keeps its term when two renewals in a row go unanswered (two dead pooled connections): each abandoned after half the time left, a third try lands', async () => {
    let drop = 0;
    const proxy = await blackHoling(() => {
      if (drop === 0) return false;
      drop--;
      return true;
    });
    const { client, clock, drive, sent } = driven(proxy);
    const { elector, log } = loneLeader(client, clock, 'kept2', { leaseDurationMs: 12_000, renewDeadlineMs: 8_000, retryPeriodMs: 500, renewIntervalMs: 4_000 });
    const stop = new AbortController();
    const done = elector.run(stop.signal);
    await drive(() => elector.isLeader());
    const token = elector.fencingToken;
    drop = 2;
    await drive(() => proxy.swallowed() === 2);
    const lastSwallowed = () => sent.filter((r) => !r.ok).at(-1)!.at;
    await drive(() => log.length > 1 || sent.some((r) => r.command === 'UpdateItemCommand' && r.ok && r.at > lastSwallowed()));
    // a review of a change that gave the first try all the time left but 1 s: the second had 1 s and a dead connection, and the term was lost
    expect(log).toEqual(['started']);
    expect(elector.isLeader()).toBe(true);
    expect(elector.fencingToken).toBe(token);
    stop.abort();
    await drive(settled(done));
    await done;
    client.destroy();
    await proxy.close();
  });

  it('keeps its term when one renewal goes unanswered: abandoned after half the time left before the renew deadline, tried again on a new connection', async () => {
    // the next request after `dropNext` is swallowed; every other passes
    let dropNext = false;
    const proxy = await blackHoling(() => {
      if (!dropNext) return false;
      dropNext = false;
      return true;
    });
    const { client, clock, drive, sent } = driven(proxy);
    const leases = localClient(inject('ddbEndpoint'));
    // a renewal every 4 s, 4 s before the renew deadline: a hung one is abandoned after 2 s, and the
    // client's own bound (its retry period, at least 5 s) would outlast the deadline
    const { elector, log, errors } = loneLeader(client, clock, 'kept', { leaseDurationMs: 12_000, renewDeadlineMs: 8_000, retryPeriodMs: 500, renewIntervalMs: 4_000 });
    const stop = new AbortController();
    const done = elector.run(stop.signal);
    await drive(() => elector.isLeader());
    const token = elector.fencingToken;
    const row = async () => (await leases.send(new GetItemCommand({ TableName: t.names.leases, Key: { name: { S: 'kept' } }, ConsistentRead: true }))).Item;
    dropNext = true;
    await drive(() => proxy.swallowed() === 1);
    const hung = sent.at(-1)!;
    expect(hung.command).toBe('UpdateItemCommand');
    // the renew deadline counts from when the last write that landed (the take or a renewal) went out
    const deadline = sent.filter((r) => r.ok && r.at < hung.at && r.command !== 'GetItemCommand').at(-1)!.at + 8_000;
    expect(deadline - hung.at).toBeGreaterThan(3_000); // a renewal due about 4 s before it
    await drive(() => timedOut(errors).length > 0);
    // abandoned after half the time left before the renew deadline, and tried again at once
    const abandonedAt = hung.at + (deadline - hung.at) / 2;
    expect(clock.monotonic()).toBe(abandonedAt);
    await drive(() => sent.some((r) => r.command === 'UpdateItemCommand' && r.at > hung.at && r.ok));
    const again = sent.find((r) => r.command === 'UpdateItemCommand' && r.at > hung.at)!;
    expect(again).toMatchObject({ at: abandonedAt, ok: true });
    expect(Number((await row())?.['renewTime']?.N)).toBe(clock.now()); // the renewal after it landed, stamped then
    // without the renewal's own bound it waits on the dead connection past its renew deadline and stops
    expect(log).toEqual(['started']);
    expect(elector.isLeader()).toBe(true);
    expect(elector.fencingToken).toBe(token);
    stop.abort();
    await drive(settled(done));
    await done;
    client.destroy();
    leases.destroy();
    await proxy.close();
  });

  it('loses its term at its renew deadline, its unanswered renewal is abandoned, and once the route is back it leads again', async () => {
    // while `dropping`, every request is swallowed
    let dropping = false;
    const proxy = await blackHoling(() => dropping);
    const { client, clock, drive, sent } = driven(proxy);
    const { elector, log, errors } = loneLeader(client, clock, 'job', { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 250 });
    const stop = new AbortController();
    const done = elector.run(stop.signal);
    await drive(() => elector.isLeader());
    dropping = true;
    const droppedAt = clock.monotonic();
    // a fenced write sent now is never answered: it is abandoned when the term ends, not left waiting
    let writeOver: number | undefined;
    const write = elector.fencedWrite({ TransactItems: [{ Put: { TableName: t.names.leases, Item: { name: { S: 'unanswered-item' } } } }] }).then(
      () => 'answered',
      (e: unknown) => e,
    ).finally(() => void (writeOver = clock.monotonic()));
    await drive(() => log.includes('stopped renewDeadline'));
    // at its renew deadline, counted from when the last write of its term that landed went out
    const landed = sent.filter((r) => r.ok && r.at <= droppedAt && r.command !== 'GetItemCommand').at(-1)!;
    expect(clock.monotonic()).toBe(landed.at + 1_500);
    expect(log).toEqual(['started', 'stopped renewDeadline']);
    await drive(() => writeOver !== undefined);
    const abandoned = await write;
    expect(abandoned).toBeInstanceOf(LeaseLostError);
    expect(abandoned).toMatchObject({ leaseName: 'job', reason: 'renewDeadline' });
    expect(writeOver).toBe(landed.at + 1_500); // the moment the term ended
    // the unanswered request is abandoned after its bound and told as a timeout
    await drive(() => timedOut(errors).length > 0);
    dropping = false;
    // without the bound the renewal (or the read after it) waits on the dead connection for good, and this never comes
    await drive(() => log.filter((l) => l === 'started').length >= 2);
    expect(elector.isLeader()).toBe(true);
    stop.abort();
    await drive(settled(done));
    await done;
    client.destroy();
    await proxy.close();
  });
});

describe('a write that landed, its answer lost as the connection was reset (the AWS SDK sends it again), on DynamoDB Local', () => {
  let t: TestTables;
  beforeAll(async () => {
    t = await testTables('lost-answer');
  });
  afterAll(async () => {
    await t?.drop();
  });

  /** A resetting proxy (test/proxy.ts) in front of DynamoDB Local; by default for a session row's UpdateItem. */
  const resetting = (matches: (request: string) => boolean = (text) => /UpdateItem/.test(text) && text.includes(t.names.identities)) => resettingProxy(inject('ddbEndpoint'), matches);
  // renewals every second, with a deadline far beyond them
  const FAST_SESSION = { renewIntervalMs: 1_000, retryPeriodMs: 300, renewDeadlineMs: 5_000, maxLeaseDurationMs: 8_000 } as const;
  /**
   * A client through `proxy`, and a clock the test moves (drivenClock): its next timer fires only
   * once the client has no request under way, the AWS SDK's own send again after a reset included,
   * so the deadlines and request bounds below are judged on time that stands still while DynamoDB
   * Local, or a busy machine, takes its time. (Before: the machine's clock, against a session's 5 s
   * and a leader's 8 s renew deadline and 5 s request bounds: a DynamoDB Local slow to answer, or a
   * process starved that long, ended the session, or had a renewal abandoned at its bound, one more
   * answer lost, whatever the reset did.) Random drawn from a seed: each session row a name of its own.
   */
  const drivenThrough = (proxy: Listening, seed: number) => {
    const client = localClient(proxy.endpoint);
    const c = drivenClock(inFlight(client));
    return { client, ...c, clock: { ...c.clock, random: seededRandom(seed) } };
  };
  /** `p`, and whether it has settled yet (whichever way). */
  const watched = <T>(p: Promise<T>) => {
    let over = false;
    p.then(
      () => (over = true),
      () => (over = true),
    );
    return { p, over: () => over };
  };

  it('the connection reset after the renewal reached DynamoDB: the SDK sends it again, is refused by its own landed copy, and the session renews on', async () => {
    const { proxy, arm, resets } = await resetting();
    const { client, clock, drive } = drivenThrough(proxy, 11);
    const session = new Session({ client, tables: t.names, clock, clockSync: 'none', prefix: 'reset', ...FAST_SESSION, onError: () => undefined });
    const stop = new AbortController();
    const running = watched(session.run(stop.signal));
    const ready = watched(session.ready);
    await drive(ready.over);
    await ready.p;
    const name = session.name;
    await drive(() => session.stats.renewals >= 1);
    arm();
    await drive(() => resets() === 1);
    await drive(() => session.stats.lostAnswers + session.stats.foreignWrites >= 1 && session.stats.renewals >= 3);
    // before the fix: the SDK's second send was refused by the first, which had landed, and the session ended as if someone else had written its row
    expect(session.stats).toMatchObject({ lostAnswers: 1, foreignWrites: 0, ended: 0 });
    expect(session.name).toBe(name);
    stop.abort();
    await drive(running.over);
    await running.p;
    client.destroy();
    await close(proxy);
  });

  it("the connection reset as DynamoDB answers the session's first row: the SDK's second send is refused by it, and the session starts on it", async () => {
    const { proxy, arm, resets } = await resetting();
    arm();
    const { client, clock, drive } = drivenThrough(proxy, 12);
    const session = new Session({ client, tables: t.names, clock, clockSync: 'none', prefix: 'first', ...FAST_SESSION, onError: () => undefined });
    const stop = new AbortController();
    const running = watched(session.run(stop.signal));
    // before the fix: run() rejected with a ConflictError, the row under its own new name "changed since it was read"
    const ready = watched(session.ready);
    await drive(ready.over);
    await ready.p;
    expect(resets()).toBe(1);
    expect(session.stats).toMatchObject({ started: 1, ended: 0 });
    await drive(() => session.stats.renewals >= 1);
    expect(session.stats.started).toBe(1);
    stop.abort();
    await drive(running.over);
    await running.p;
    client.destroy();
    await close(proxy);
  });

  it("withLease: the connection reset as DynamoDB answers the run-once window's mark: the run is reported as run, not as a conflict", async () => {
    // the mark: an UpdateItem of the candidates table (where run-once rows live) setting the window's runs
    const { proxy, arm, resets } = await resetting((text) => /UpdateItem/.test(text) && text.includes(t.names.candidates) && text.includes('#runs'));
    arm();
    const client = localClient(proxy.endpoint);
    let calls = 0;
    // before the fix: a ConflictError "changed since revision 0 was read", though the mark was this run's own
    const out = await withLease('nightly', async () => ++calls, { client, tables: t.names, identity: 'inv-1', platform: 'none', runOnce: { window: '2026-11-29' } });
    expect(resets()).toBe(1);
    expect(out).toMatchObject({ status: 'ran', value: 1, window: '2026-11-29' });
    // marked once: a second run skips
    const again = await withLease('nightly', async () => ++calls, { client, tables: t.names, identity: 'inv-2', platform: 'none', runOnce: { window: '2026-11-29' } });
    expect(again).toMatchObject({ status: 'skipped', window: '2026-11-29' });
    expect(calls).toBe(1);
    client.destroy();
    await close(proxy);
  });

  it("withLease: the connection reset as DynamoDB answers the mark written with the run's items in one transaction: the SDK's second send is the same transaction (its ClientRequestToken), and the run is reported as run", async () => {
    const { proxy, arm, resets } = await resetting((text) => /TransactWriteItems/.test(text) && text.includes('#runs'));
    arm();
    const client = localClient(proxy.endpoint);
    // the run's result: any row (an identity row's shape, in that table)
    const item = { component: 'reports', name: 'r-2026-11-29', holderIdentity: 'inv-1', hostname: 'h', leaseDurationSeconds: 60, acquireTime: 1, renewTime: 1, revision: 1 };
    const out = await withLease('nightly-tx', async (_signal, term) => term.complete([{ Put: { TableName: t.names.identities, Item: marshall(item) } }]), { client, tables: t.names, identity: 'inv-1', platform: 'none', runOnce: { window: '2026-11-29' } });
    expect(resets()).toBe(1);
    expect(out).toMatchObject({ status: 'ran', window: '2026-11-29' });
    client.destroy();
    await close(proxy);
  });

  it("a hand-over: the connection reset as DynamoDB answers it, the SDK's second send refused by it: the giver is told it was handed (and wakes the heir), not refused", async () => {
    const { proxy, arm, resets } = await resetting((text) => /UpdateItem/.test(text) && text.includes(t.names.leases) && text.includes('#heir = :heir'));
    const direct = new LeaseStore(localClient(inject('ddbEndpoint')), t.names.leases);
    const now = 1_800_000_000_000;
    const term = await direct.write(await direct.read('handed'), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 7, termToken: 7, successor: 'b', successorInstance: 'b-1' } });
    const client = localClient(proxy.endpoint);
    arm();
    // before the fix: undefined, "no longer this term", and the giver went on to a refused release
    const handed = await new LeaseStore(client, t.names.leases).handOver('handed', { holderIdentity: 'a', fencingToken: 7 }, { name: 'b', instance: 'b-1' }, now + 1_000, 5, term.leaseTransitions);
    expect(resets()).toBe(1);
    expect(handed).toMatchObject({ holderIdentity: 'b', holderInstance: 'b-1', electedBy: 'successor', lastHolderIdentity: 'a', renewTime: now + 1_000 });
    expect(handed!.fencingToken).toBeGreaterThan(7);
    expect((await direct.read('handed')).item).toEqual(handed);
    // a row another write put there is still a refusal
    expect(await direct.handOver('handed', { holderIdentity: 'a', fencingToken: 7 }, { name: 'b', instance: 'b-1' }, now + 2_000, 5, term.leaseTransitions)).toBeUndefined();
    client.destroy();
    await close(proxy);
  });

  it("a take: the connection reset as DynamoDB answers it, the SDK's second send refused by it: the taker is told it took the term, not that someone moved first", async () => {
    const { proxy, arm, resets } = await resetting((text) => /UpdateItem/.test(text) && text.includes(t.names.leases) && text.includes('"taken"'));
    const direct = new LeaseStore(localClient(inject('ddbEndpoint')), t.names.leases);
    const now = 1_800_000_000_000;
    await direct.write(await direct.read('taken'), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 7 } });
    const read = await direct.read('taken');
    const client = localClient(proxy.endpoint);
    // a take's lock reads no candidate or session row
    const lock = dynamoLeaseLock('taken', new LeaseStore(client, t.names.leases), undefined as never, undefined as never);
    const take = acquisition(read.item, { identity: 'b', instance: 'b-1', now: now + 20_000, leaseDurationSeconds: 15, electedBy: 'self', session: 'all-1:b-s' });
    arm();
    // before the fix: { refusedBy: 'b' }, as if another had moved first; its elector read the lease
    // again before leading, and, its lease reads failing, left the term it held to its session alone
    const got = await lock.acquire(read, take);
    expect(resets()).toBe(1);
    expect(got).toEqual({ written: (await direct.read('taken')).item });
    expect(got).toMatchObject({ written: { holderIdentity: 'b', holderInstance: 'b-1', session: 'all-1:b-s', renewTime: now + 20_000, revision: read.revision + 1 } });
    // a row another write put there is still a refusal: another's take, or this worker's own later one
    const later = acquisition(read.item, { identity: 'b', instance: 'b-1', now: now + 21_000, leaseDurationSeconds: 15, electedBy: 'self', session: 'all-1:b-s' });
    expect(await lock.acquire(read, later)).toEqual({ refusedBy: 'b', refusedByInstance: 'b-1' });
    const other = acquisition(read.item, { identity: 'c', instance: 'c-1', now: now + 20_000, leaseDurationSeconds: 15, electedBy: 'self' });
    expect(await lock.acquire(read, other)).toEqual({ refusedBy: 'b', refusedByInstance: 'b-1' });
    client.destroy();
    await close(proxy);
  });

  it("a leader's renewal, twice in a row: each send reset as DynamoDB answers, each copy the SDK sent again refused by it: the leader leads on (it stopped, deposed)", async () => {
    // each renewal's first send (a new stamp) is reset; the SDK's second send of it passes
    const seen = new Set<string>();
    const { proxy, arm, resets } = await resetting((text) => {
      if (!/UpdateItem/.test(text) || !text.includes(t.names.leases) || !text.includes('#term = :token')) return false;
      const stamp = /":renew":\{"N":"(\d+)"\}/.exec(text)?.[1];
      if (stamp === undefined || seen.has(stamp)) return false;
      seen.add(stamp);
      return true;
    });
    const { client, clock, drive } = drivenThrough(proxy, 13);
    const log: string[] = [];
    const elector = new LeaderElector({
      client,
      clock,
      clockSync: 'none', // the stamps are the driven clock's
      tables: t.names,
      leaseName: 'renewed-twice',
      identity: 'w1',
      mode: 'NoCoordination',
      platform: 'none',
      leaseDurationMs: 12_000,
      renewDeadlineMs: 8_000,
      retryPeriodMs: 500,
      renewIntervalMs: 1_000,
      callbacks: { onStartedLeading: () => void log.push('started'), onStoppedLeading: ({ reason }) => void log.push(`stopped ${reason}`) },
      onError: () => undefined,
    });
    const stop = new AbortController();
    const done = watched(elector.run(stop.signal));
    await drive(() => elector.isLeader());
    const token = elector.fencingToken;
    arm(2);
    await drive(() => resets() === 2);
    const direct = localClient(inject('ddbEndpoint'));
    const leases = new LeaseStore(direct, t.names.leases);
    // (read while the clock stands still: no renewal goes out meanwhile)
    const after = (await leases.read('renewed-twice')).item!.renewTime!;
    // a renewal after them, within two of its renew intervals
    const from = clock.monotonic();
    await drive(() => clock.monotonic() >= from + 2_000);
    expect((await leases.read('renewed-twice')).item!.renewTime!).toBeGreaterThan(after);
    expect(log).toEqual(['started']); // before the fix: ['started', 'stopped deposed', 'started']
    expect(elector.fencingToken).toBe(token);
    stop.abort();
    await drive(done.over);
    await done.p;
    client.destroy();
    direct.destroy();
    await close(proxy);
  });
});
