/**
 * work-fails-twice.test.ts, with every elector's candidacy on its process's `Session`: the best
 * candidate whose work fails at every start stands down after its second failed start in a row until
 * its candidacy's own renewal, and the healthy worker leads meanwhile. Before the fix the session's
 * renewals showed the standing-down candidate alive (vouchedCandidate): the coordinator preempted the
 * healthy worker's term for it at once, and it took the lease back after each backoff. On DynamoDB
 * Local, the real coordinator in-process on a tick, and a driven clock (test/proxy.ts drivenClock).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { every } from '../../lib/clock.js';
import { coordinatorDeps, reconcileLease } from '../../lib/coordinator/reconcile.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { LeaderElector, Session } from '../../lib/sdk/index.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { drivenClock, inFlight } from '../proxy.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('fails-twice-s')));
afterAll(async () => t.drop());

const L = 'fails-twice-s';
const CLIENT_GO = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;
/** The failing worker's candidacy renews every minute (10 by default): the test waits for one. */
const RENEW_INTERVAL_MS = 60_000;
/** a's work rejects this long after each start. */
const FAILS_AFTER_MS = 3_000;

describe('on a Session: a best candidate whose work fails at every start, and a healthy newer worker', () => {
  it('after its second failed start in a row, the healthy worker leads, and is not preempted for it, until its candidacy renews on its own; then it stands again', async () => {
    const [aClient, bClient, coordinatorClient] = [0, 1, 2].map(() => localClient(inject('ddbEndpoint')));
    const busy = [aClient, bClient, coordinatorClient].map((x) => inFlight(x!));
    const c = drivenClock(() => busy.some((x) => x()));
    const now = () => c.clock.monotonic();
    // the coordinator's tick every 2 s on the driven clock (stands in for the streams and the timer)
    const deps = coordinatorDeps(coordinatorClient!, t.names, { clock: c.clock, config: { ackWindowMs: 5_000, electedLeaseDurationSeconds: 5 } });
    let ticking = false;
    const tick = every(c.clock, 2_000, () => {
      if (ticking) return;
      ticking = true;
      void reconcileLease(deps, L).finally(() => (ticking = false));
    });
    const log: { at: number; who: string; what: 'started' | 'stopped'; reason?: string }[] = [];
    const start = (id: 'a' | 'b', version: string, client: DynamoDBClient) => {
      const session = new Session({ client, tables: t.names, clock: c.clock, clockSync: 'none', prefix: id, leaseNames: [L], onError: () => undefined });
      const e = new LeaderElector({
        client,
        tables: t.names,
        clock: c.clock,
        clockSync: 'none',
        session,
        leaseName: L,
        identity: id,
        platform: 'none',
        ...CLIENT_GO,
        candidacy: { emulationVersion: version, binaryVersion: version, renewIntervalMs: RENEW_INTERVAL_MS },
        onError: () => undefined,
        callbacks: {
          onStartedLeading: async () => {
            log.push({ at: now(), who: id, what: 'started' });
            if (id !== 'a') return;
            await c.clock.sleep(FAILS_AFTER_MS);
            throw new Error('boom later');
          },
          onStoppedLeading: ({ reason }) => void log.push({ at: now(), who: id, what: 'stopped', reason }),
        },
      });
      const stop = new AbortController();
      let ended = false;
      const running = Promise.all([e.run(stop.signal), session.run(stop.signal)]);
      void running.finally(() => (ended = true));
      return { e, stop: () => (stop.abort(), () => ended) };
    };
    const of = (who: string, what: 'started' | 'stopped', from = -Infinity) => log.filter((x) => x.who === who && x.what === what && x.at >= from);

    // a alone: its first failure, then the coordinator elects it back and it leads again after its backoff
    const startedAt = now();
    const a = start('a', '1.29.0', aClient!);
    await c.drive(() => of('a', 'started').length >= 2);
    // the healthy newer worker joins; a's work fails a second time in a row
    const b = start('b', '1.30.0', bClient!);
    await c.drive(() => of('a', 'stopped').length >= 2);
    const secondFailure = of('a', 'stopped')[1]!;
    expect(secondFailure.reason).toBe('workFailed');
    // a's candidacy's timer turns at startedAt + k · RENEW_INTERVAL_MS (its registration's answer comes a few ms on)
    const turnDue = startedAt + Math.ceil((secondFailure.at - startedAt) / RENEW_INTERVAL_MS) * RENEW_INTERVAL_MS;
    expect(turnDue - secondFailure.at).toBeGreaterThan(20_000); // room to see a loop (before the fix: a third start ~5 s on)
    // meanwhile its row is marked, and b's term names it neither successor nor preferred holder
    const rows = new CandidateStore(coordinatorClient!, t.names.candidates);
    const leases = new LeaseStore(coordinatorClient!, t.names.leases);
    await c.drive(() => now() >= secondFailure.at + 20_000);
    const marked = (await rows.read(L, 'a')).item!;
    expect(marked.session).toBeDefined();
    expect(marked.standsDownUntil! - secondFailure.at).toBeGreaterThan(RENEW_INTERVAL_MS - 1_000);
    expect(marked.standsDownUntil! - secondFailure.at).toBeLessThanOrEqual(RENEW_INTERVAL_MS);
    const held = (await leases.read(L)).item!;
    expect([held.holderIdentity, held.successor, held.preferredHolder]).toEqual(['b', undefined, undefined]);
    await c.drive(() => now() >= turnDue);
    const before = (xs: { at: number }[]) => xs.filter((x) => x.at < turnDue);
    // until then b led from a's second failure on: started once, never stopped; a did not start again
    expect(before(of('a', 'started', secondFailure.at))).toEqual([]);
    expect(before(of('b', 'started', secondFailure.at)).length).toBe(1);
    expect(before(of('b', 'stopped', secondFailure.at))).toEqual([]);

    // its candidacy's renewal stands it again: the coordinator preempts for it, and it leads (and fails) once more
    await c.drive(() => of('a', 'started', turnDue).length >= 1 || now() >= turnDue + 30_000);
    expect(of('a', 'started', turnDue).length).toBe(1);
    expect(of('a', 'started', turnDue)[0]!.at - turnDue).toBeLessThan(15_000);
    expect(of('b', 'stopped', secondFailure.at).map((x) => x.reason)).toEqual(['preempted']);
    expect((await rows.read(L, 'a')).item!.standsDownUntil).toBeUndefined(); // taken off by that renewal

    tick.cancel();
    const ended = [a.stop(), b.stop()];
    await c.drive(() => ended.every((x) => x()));
    for (const x of [aClient, bClient, coordinatorClient]) x!.destroy();
  });
  it('its mark held up (the candidates table slow): each hand-over waits a retry period at most for it, and the healthy worker leads within 30 s', async () => {
    const L2 = 'fails-twice-slow';
    const HELD_MS = 7_000;
    const [aClient, bClient, coordinatorClient] = [0, 1, 2].map(() => localClient(inject('ddbEndpoint')));
    let c!: ReturnType<typeof drivenClock>;
    // a's stand-down mark (the only UpdateItem setting standsDownUntil) answered 7 s late
    aClient!.middlewareStack.add(
      (next, ctx) => async (args) => {
        const input = args.input as { UpdateExpression?: string };
        if (ctx.commandName === 'UpdateItemCommand' && input.UpdateExpression?.startsWith('SET #down')) await c.clock.sleep(HELD_MS);
        return next(args);
      },
      { step: 'initialize', name: 'slowMark', priority: 'high' },
    );
    const busy = [aClient, bClient, coordinatorClient].map((x) => inFlight(x!));
    c = drivenClock(() => busy.some((x) => x()));
    const now = () => c.clock.monotonic();
    const deps = coordinatorDeps(coordinatorClient!, t.names, { clock: c.clock, config: { ackWindowMs: 5_000, electedLeaseDurationSeconds: 5 } });
    let ticking = false;
    const tick = every(c.clock, 2_000, () => {
      if (ticking) return;
      ticking = true;
      void reconcileLease(deps, L2).finally(() => (ticking = false));
    });
    const log: { at: number; who: string; what: 'started' | 'stopped' }[] = [];
    const start = (id: 'a' | 'b', version: string, client: DynamoDBClient) => {
      const session = new Session({ client, tables: t.names, clock: c.clock, clockSync: 'none', prefix: id, leaseNames: [L2], onError: () => undefined });
      const e = new LeaderElector({
        client, tables: t.names, clock: c.clock, clockSync: 'none', session, leaseName: L2, identity: id, platform: 'none', ...CLIENT_GO,
        candidacy: { emulationVersion: version, binaryVersion: version, renewIntervalMs: RENEW_INTERVAL_MS },
        onError: () => undefined,
        callbacks: {
          onStartedLeading: async () => {
            log.push({ at: now(), who: id, what: 'started' });
            if (id !== 'a') return;
            await c.clock.sleep(FAILS_AFTER_MS);
            throw new Error('boom later');
          },
          onStoppedLeading: () => void log.push({ at: now(), who: id, what: 'stopped' }),
        },
      });
      const stop = new AbortController();
      let ended = false;
      void Promise.all([e.run(stop.signal), session.run(stop.signal)]).finally(() => (ended = true));
      return () => (stop.abort(), () => ended);
    };
    const of = (who: string, what: 'started' | 'stopped', from = -Infinity) => log.filter((x) => x.who === who && x.what === what && x.at >= from);
    const a = start('a', '1.29.0', aClient!);
    await c.drive(() => of('a', 'started').length >= 2);
    const b = start('b', '1.30.0', bClient!);
    await c.drive(() => of('a', 'stopped').length >= 2);
    const secondFailure = of('a', 'stopped')[1]!.at;
    await c.drive(() => of('b', 'started', secondFailure).length >= 1 || now() >= secondFailure + 30_000);
    // before: each hand-over waited on the mark until the term's bound, the mark abandoned unlanded, and a was
    // elected back each time (b first led 58 s on); now the mark is waited for a retry period at most. Its mark
    // abandoned, a is still elected back once more (the loop as before the mark: 4.4 s on), but b leads within 30 s
    expect(of('b', 'started', secondFailure).length).toBe(1);
    tick.cancel();
    const ended = [a(), b()];
    await c.drive(() => ended.every((x) => x()));
    for (const x of [aClient, bClient, coordinatorClient]) x!.destroy();
  });
  it('under a construct before the mark (its grant refuses any write naming standsDownUntil): a new worker still registers, on a Session or not', async () => {
    const L3 = 'fails-twice-oldgrant';
    const [client, checker] = [0, 1].map(() => localClient(inject('ddbEndpoint')));
    const refused: string[] = [];
    // the old grant: dynamodb:Attributes without standsDownUntil
    client!.middlewareStack.add(
      (next, ctx) => async (args) => {
        const names = Object.values((args.input as { ExpressionAttributeNames?: Record<string, string> }).ExpressionAttributeNames ?? {});
        if (ctx.commandName === 'UpdateItemCommand' && names.includes('standsDownUntil')) {
          refused.push(ctx.commandName);
          throw Object.assign(new Error('not authorized to perform: dynamodb:UpdateItem'), { name: 'AccessDeniedException', $metadata: { httpStatusCode: 400 } });
        }
        return next(args);
      },
      { step: 'initialize', name: 'oldGrant', priority: 'high' },
    );
    const busy = [client, checker].map((x) => inFlight(x!));
    const c = drivenClock(() => busy.some((x) => x()));
    const rows = new CandidateStore(checker!, t.names.candidates);
    const stops: (() => () => boolean)[] = [];
    for (const [id, onSession] of [['p', false], ['q', true]] as const) {
      const session = onSession ? new Session({ client: client!, tables: t.names, clock: c.clock, clockSync: 'none', prefix: id, leaseNames: [L3], onError: () => undefined }) : undefined;
      const e = new LeaderElector({ client: client!, tables: t.names, clock: c.clock, clockSync: 'none', ...(session ? { session } : {}), leaseName: L3, identity: id, platform: 'none', ...CLIENT_GO, candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' }, onError: () => undefined, callbacks: { onStartedLeading: async () => undefined } });
      const stop = new AbortController();
      let ended = false;
      void Promise.all([e.run(stop.signal), session?.run(stop.signal)]).finally(() => (ended = true));
      stops.push(() => (stop.abort(), () => ended));
    }
    const from = c.clock.monotonic();
    await c.drive(() => c.clock.monotonic() >= from + 5_000);
    const found = (await Promise.all(['p', 'q'].map(async (n) => ((await rows.read(L3, n)).item ? n : '')))).filter(Boolean);
    expect(found).toEqual(['p', 'q']);
    expect(refused).toEqual([]);
    const ended = stops.map((f) => f());
    await c.drive(() => ended.every((x) => x()));
    for (const x of [client, checker]) x!.destroy();
  });
});
