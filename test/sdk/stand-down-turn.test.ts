/**
 * A Session worker's stand-down mark (`standsDownUntil`) and its candidacy's timer turn, which takes
 * the mark off and stands its elector again (work-fails-twice-session.test.ts has the stand-down
 * itself). Found by review: under a construct before the mark (its grant refuses any write naming
 * standsDownUntil) the refused mark left the candidacy owing a take-off, itself refused, before every
 * renewal on its timer for good, so a row gone meanwhile was never registered again; and a mark still
 * on its way as the timer turned landed after the turn's take-off, left on the row while the elector
 * stood again (the coordinator passed it over for a renew interval: the lease leaderless). On DynamoDB
 * Local, the real coordinator in-process on a tick, and a driven clock (test/proxy.ts drivenClock).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DeleteItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { every } from '../../lib/clock.js';
import { coordinatorDeps, reconcileLease } from '../../lib/coordinator/reconcile.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { LeaderElector, Session } from '../../lib/sdk/index.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { drivenClock, inFlight } from '../proxy.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('stand-down-turn')));
afterAll(async () => t.drop());

const CLIENT_GO = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;
/** The worker's candidacy renews every minute (10 by default). */
const RENEW_INTERVAL_MS = 60_000;

/** One worker `a` on a Session, its work failing `firstMs` after its first start and 3 s after each later one while `failing()`; the coordinator ticks every 2 s. */
function world(lease: string, client: DynamoDBClient, coordinatorClient: DynamoDBClient, c: ReturnType<typeof drivenClock>, failing: () => boolean, firstMs = 3_000) {
  const now = () => c.clock.monotonic();
  const deps = coordinatorDeps(coordinatorClient, t.names, { clock: c.clock, config: { ackWindowMs: 5_000, electedLeaseDurationSeconds: 5 } });
  let ticking = false;
  const tick = every(c.clock, 2_000, () => {
    if (ticking) return;
    ticking = true;
    void reconcileLease(deps, lease).finally(() => (ticking = false));
  });
  const log: { at: number; what: string }[] = [];
  let starts = 0;
  const session = new Session({ client, tables: t.names, clock: c.clock, clockSync: 'none', prefix: 'a', leaseNames: [lease], onError: () => undefined });
  const e = new LeaderElector({
    client, tables: t.names, clock: c.clock, clockSync: 'none', session, leaseName: lease, identity: 'a', platform: 'none', ...CLIENT_GO,
    candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0', renewIntervalMs: RENEW_INTERVAL_MS },
    onError: () => undefined,
    callbacks: {
      onStartedLeading: async () => {
        log.push({ at: now(), what: 'started' });
        if (!failing()) return;
        await c.clock.sleep(++starts === 1 ? firstMs : 3_000);
        throw new Error('boom later');
      },
      onStoppedLeading: ({ reason }) => void log.push({ at: now(), what: `stopped ${reason}` }),
    },
  });
  const stop = new AbortController();
  let ended = false;
  void Promise.all([e.run(stop.signal), session.run(stop.signal)]).finally(() => (ended = true));
  const of = (what: string, from = -Infinity) => log.filter((x) => x.what === what && x.at >= from);
  const end = async () => {
    tick.cancel();
    stop.abort();
    await c.drive(() => ended);
  };
  return { now, of, end };
}

describe("a Session worker's stand-down mark and its candidacy's timer turn", () => {
  // the mark refused by the grant; or its answer lost (a 500, say: it may have landed), and so a take-off owed that the grant refuses
  it.each([
    ['its mark refused', 'AccessDeniedException', 0],
    ["its mark's outcome unknown, its take-off refused", 'InternalServerError', 1],
  ] as const)("under a construct before the mark (its grant refuses standsDownUntil), %s: the candidacy's timer renews on, and registers a row gone meanwhile again", async (_, markFault, takeOffs) => {
    const L = `stand-down-old-grant-${takeOffs}`;
    const [aClient, coordinatorClient] = [0, 1].map(() => localClient(inject('ddbEndpoint')));
    let c!: ReturnType<typeof drivenClock>;
    const refused: { at: number; expr: string }[] = [];
    // the old grant: dynamodb:Attributes without standsDownUntil
    aClient!.middlewareStack.add(
      (next, ctx) => async (args) => {
        const input = args.input as { ExpressionAttributeNames?: Record<string, string>; UpdateExpression?: string };
        if (ctx.commandName === 'UpdateItemCommand' && Object.values(input.ExpressionAttributeNames ?? {}).includes('standsDownUntil')) {
          const expr = String(input.UpdateExpression);
          refused.push({ at: c.clock.monotonic(), expr });
          if (expr.startsWith('SET') && markFault === 'InternalServerError') throw Object.assign(new Error('internal server error'), { name: 'InternalServerError', $metadata: { httpStatusCode: 500 } });
          throw Object.assign(new Error('not authorized to perform: dynamodb:UpdateItem'), { name: 'AccessDeniedException', $metadata: { httpStatusCode: 400 } });
        }
        return next(args);
      },
      { step: 'initialize', name: 'oldGrant', priority: 'high' },
    );
    const busy = [aClient, coordinatorClient].map((x) => inFlight(x!));
    c = drivenClock(() => busy.some((x) => x()));
    let failing = true;
    const w = world(L, aClient!, coordinatorClient!, c, () => failing);
    await c.drive(() => w.of('stopped workFailed').length >= 2);
    failing = false;
    const second = w.now();
    // its mark failed
    await c.drive(() => refused.length >= 1 || w.now() >= second + 5_000);
    expect(refused.map((r) => r.expr.slice(0, 9))).toEqual(['SET #down']);
    // a coordinator before 0.2.0 collects the session row by its own stamp (here: deleted by hand)
    const rows = new CandidateStore(coordinatorClient!, t.names.candidates);
    await coordinatorClient!.send(new DeleteItemCommand({ TableName: t.names.candidates, Key: { leaseName: { S: L }, name: { S: 'a' } } }));
    expect((await rows.read(L, 'a')).item).toBeUndefined();
    await c.drive(() => w.now() >= second + 2 * RENEW_INTERVAL_MS);
    // before the fix: REMOVE standsDownUntil refused at every turn and its tries again (60, 61.1, 63.3 ... s on), the renewal never sent
    expect(refused.filter((r) => r.expr.startsWith('REMOVE')).length).toBe(takeOffs);
    expect((await rows.read(L, 'a')).item).toBeDefined(); // registered again by the timer's renewal
    // and it stood again at that turn: elected (the only candidate), it leads
    expect(w.of('started', second).length).toBeGreaterThan(0);
    await w.end();
    for (const x of [aClient, coordinatorClient]) x!.destroy();
  });

  it('a mark still on its way as the timer turns: the worker stands again at that turn with no mark left on its row, and leads at once (the only candidate)', async () => {
    const L = 'stand-down-mark-race';
    const MARK_DELAY_MS = 1_500;
    /** Its first work lasts so long that its second failure, and so its mark, comes 0.45 s before the timer's turn at 60 s. */
    const FIRST_WORK_MS = 52_200;
    const [aClient, coordinatorClient] = [0, 1].map(() => localClient(inject('ddbEndpoint')));
    let c!: ReturnType<typeof drivenClock>;
    const sent: { at: number; what: 'mark begun' | 'mark sent' | 'unmark sent' }[] = [];
    // a's mark held 1.5 s on its way (within the stand-down's retry period: not abandoned)
    aClient!.middlewareStack.add(
      (next, ctx) => async (args) => {
        const input = args.input as { UpdateExpression?: string };
        if (ctx.commandName === 'UpdateItemCommand' && input.UpdateExpression?.startsWith('SET #down')) {
          sent.push({ at: c.clock.monotonic(), what: 'mark begun' });
          await c.clock.sleep(MARK_DELAY_MS);
          sent.push({ at: c.clock.monotonic(), what: 'mark sent' });
        }
        if (ctx.commandName === 'UpdateItemCommand' && input.UpdateExpression?.startsWith('REMOVE #down')) sent.push({ at: c.clock.monotonic(), what: 'unmark sent' });
        return next(args);
      },
      { step: 'initialize', name: 'slowMark', priority: 'high' },
    );
    const busy = [aClient, coordinatorClient].map((x) => inFlight(x!));
    c = drivenClock(() => busy.some((x) => x()));
    let failing = true;
    const w = world(L, aClient!, coordinatorClient!, c, () => failing, FIRST_WORK_MS);
    await c.drive(() => w.of('stopped workFailed').length >= 2);
    failing = false; // its work is fine from now on
    const second = w.now();
    await c.drive(() => w.now() >= second + RENEW_INTERVAL_MS);
    // the race was run: the turn came while the mark was on its way
    const [begun, landed] = [sent.find((x) => x.what === 'mark begun')!.at, sent.find((x) => x.what === 'mark sent')!.at];
    const turned = sent.find((x) => x.what === 'unmark sent' && x.at >= begun)?.at;
    expect(turned).toBeGreaterThan(begun);
    expect(turned).toBeLessThan(landed);
    // before the fix: the mark landed after the turn, left on the row; a, the only candidate, passed over till it ran out (led 80.7 s on)
    const started = w.of('started', second);
    expect(started.length).toBeGreaterThan(0);
    expect(started[0]!.at - turned!).toBeLessThan(15_000);
    expect((await new CandidateStore(coordinatorClient!, t.names.candidates).read(L, 'a')).item!.standsDownUntil).toBeUndefined();
    await w.end();
    for (const x of [aClient, coordinatorClient]) x!.destroy();
  });
});
