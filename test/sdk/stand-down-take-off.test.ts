/**
 * A Session worker's stand-down mark (`standsDownUntil`) taken off by its candidacy's timer turn
 * while a new stand-down begins (stand-down-turn.test.ts has the turn and a mark on its way). Found
 * by review: the turn's take-off named no mark, so one still on its way as the new stand-down's mark
 * landed took that one off; and a new mark refused by the turn's renewal, landed but not yet
 * answered, was given up. Either way its elector stood down on (a turn during which a stand-down
 * began does not stand it again) with its row unmarked on a live session: the coordinator could
 * elect it, or preempt a healthy holder for it, until the next turn, the loop the mark is there to
 * stop. On DynamoDB Local, a driven clock (test/proxy.ts drivenClock); the candidacy is told of its
 * stand-downs as its LeaderElector tells it (standDown).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { candidateWith, standDown } from '../../lib/sdk/candidate.js';
import { Session } from '../../lib/sdk/index.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { drivenClock, inFlight } from '../proxy.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('stand-down-take-off')));
afterAll(async () => t.drop());

/** The candidacy renews every minute (10 by default). */
const RENEW_INTERVAL_MS = 60_000;

type Update = { readonly expr: string; readonly send: () => Promise<unknown> };

/**
 * Candidate `a` of lease `L` on a Session, its UpdateItem requests passed through `update` (on the
 * driven clock, outside what it waits for), registered on the live session and marked by a first
 * stand-down; `stood` lists when its timer's turns stood its elector again.
 */
async function marked(L: string, update: (u: Update, c: ReturnType<typeof drivenClock>) => Promise<unknown>) {
  const client: DynamoDBClient = localClient(inject('ddbEndpoint'));
  let c!: ReturnType<typeof drivenClock>;
  client.middlewareStack.add(
    (next, ctx) => async (args) => {
      const expr = (args.input as { UpdateExpression?: string }).UpdateExpression;
      if (ctx.commandName !== 'UpdateItemCommand' || expr === undefined) return next(args);
      return (await update({ expr, send: () => next(args) }, c)) as Awaited<ReturnType<typeof next>>;
    },
    { step: 'initialize', name: 'heldUpdates', priority: 'high' },
  );
  const busy = inFlight(client);
  c = drivenClock(busy);
  const now = () => c.clock.monotonic();
  const stood: number[] = [];
  const session = new Session({ client, tables: t.names, clock: c.clock, clockSync: 'none', prefix: 'a', leaseNames: [L], onError: () => undefined });
  const candidate = candidateWith(
    { renewedOnTurn: () => void stood.push(now()) },
    { client, tables: t.names, clock: c.clock, clockSync: 'none', session, leaseName: L, name: 'a', emulationVersion: '1.30.0', binaryVersion: '1.30.0', renewIntervalMs: RENEW_INTERVAL_MS, onError: () => undefined },
  );
  const stop = new AbortController();
  let ended = false;
  void Promise.all([candidate.run(stop.signal), session.run(stop.signal)]).finally(() => (ended = true));
  const rows = new CandidateStore(client, t.names.candidates);
  const row = async () => (await rows.read(L, 'a')).item;
  const started = now();
  await c.drive(() => now() >= started + 5_000);
  expect((await row())?.session).toBe(session.name);
  /** A stand-down begun now; `settled` once its mark is sent (landed or not: a fault rejects, the elector stands down all the same). */
  const down = () => {
    const s = { settled: false };
    void standDown(candidate)
      .catch(() => undefined)
      .finally(() => (s.settled = true));
    return s;
  };
  const first = down();
  await c.drive(() => first.settled);
  const until = (await row())!.standsDownUntil;
  expect(until).toBeDefined();
  const end = async () => {
    stop.abort();
    await c.drive(() => ended);
    client.destroy();
  };
  return { c, now, started, stood, row, down, first: until!, end };
}

describe("a Session worker's stand-down mark taken off by its candidacy's timer turn", () => {
  it("a stand-down that begins while the turn's take-off of the last one is on its way keeps its own mark on the row until the next turn, which takes it off and stands the worker again", async () => {
    const held: number[] = [];
    // the turn's take-off held 3 s on its way (a slow answer), the first time only
    const w = await marked('stand-down-take-off', async (u, c) => {
      if (!u.expr.startsWith('REMOVE #down') || held.length > 0) return u.send();
      held.push(c.clock.monotonic());
      await c.clock.sleep(3_000);
      held.push(c.clock.monotonic());
      return u.send();
    });
    // the timer turns (a minute on): renews, then its take-off of the first mark is held, and meanwhile a second stand-down marks the row
    await w.c.drive(() => held.length >= 1);
    expect(held[0]! - w.started).toBeGreaterThanOrEqual(RENEW_INTERVAL_MS);
    const second = w.down();
    await w.c.drive(() => second.settled);
    const until = (await w.row())!.standsDownUntil;
    expect(until).toBeGreaterThan(w.first); // landed: the turn's renewal went before it
    expect(held).toHaveLength(1); // the take-off still on its way
    await w.c.drive(() => held.length >= 2);
    await w.c.drive(() => w.now() >= held[1]! + 1_000);

    // that turn does not stand the worker again (a stand-down began during it), and leaves the second's mark on its row
    // (before the fix: the take-off landed after it, and took it off: unmarked on a live session while it stood down)
    expect(w.stood).toEqual([]);
    expect((await w.row())!.standsDownUntil).toBe(until);

    // the next turn takes it off and stands the worker again
    await w.c.drive(() => w.stood.length >= 1);
    expect(w.stood[0]! - w.started).toBeGreaterThanOrEqual(2 * RENEW_INTERVAL_MS);
    expect((await w.row())!.standsDownUntil).toBeUndefined();
    await w.end();
  });

  it("a stand-down that begins while the turn's renewal is answered (landed, its answer on its way): its mark, refused by that renewal, is sent again, and stays on the row until the next turn", async () => {
    let armed = false;
    const held: number[] = [];
    // the turn's renewal lands, its answer held 2 s on its way, once armed
    const w = await marked('stand-down-renewal-answer', async (u, c) => {
      const hold = armed && u.expr.startsWith('SET #renew');
      const out = await u.send();
      if (hold) {
        armed = false;
        held.push(c.clock.monotonic());
        await c.clock.sleep(2_000);
        held.push(c.clock.monotonic());
      }
      return out;
    });
    armed = true;
    await w.c.drive(() => held.length >= 1);
    expect(held[0]! - w.started).toBeGreaterThanOrEqual(RENEW_INTERVAL_MS);
    const second = w.down();
    await w.c.drive(() => second.settled && held.length >= 2);
    await w.c.drive(() => w.now() >= held[1]! + 1_000);

    // (before the fix: its mark, refused by the renewal whose answer had not come, was given up, and the turn took the first off: unmarked)
    expect(w.stood).toEqual([]);
    expect((await w.row())!.standsDownUntil).toBeGreaterThan(w.first);

    await w.c.drive(() => w.stood.length >= 1);
    expect(w.stood[0]! - w.started).toBeGreaterThanOrEqual(2 * RENEW_INTERVAL_MS);
    expect((await w.row())!.standsDownUntil).toBeUndefined();
    await w.end();
  });

  it("a take-off that fails while a new stand-down's mark is on its way, that mark then refused unwritten (a throttle): the turn tried again takes the first mark off as it stands the worker again", async () => {
    const takeOffs: number[] = [];
    const marks: number[] = [];
    const w = await marked('stand-down-take-off-failed', async (u, c) => {
      // the turn's first take-off fails after 2 s (a 500: it may have landed; here it did not)
      if (u.expr.startsWith('REMOVE #down') && takeOffs.push(c.clock.monotonic()) === 1) {
        await c.clock.sleep(2_000);
        throw Object.assign(new Error('internal server error'), { name: 'InternalServerError', $metadata: { httpStatusCode: 500 } });
      }
      // the second stand-down's mark throttled after 2.5 s (refused unwritten: it owes no take-off of its own)
      if (u.expr.startsWith('SET #down') && marks.push(c.clock.monotonic()) === 2) {
        await c.clock.sleep(2_500);
        throw Object.assign(new Error('rate exceeded'), { name: 'ThrottlingException', $metadata: { httpStatusCode: 400 } });
      }
      return u.send();
    });
    await w.c.drive(() => takeOffs.length >= 1);
    expect(takeOffs[0]! - w.started).toBeGreaterThanOrEqual(RENEW_INTERVAL_MS);
    const second = w.down();
    await w.c.drive(() => second.settled && w.stood.length >= 1);
    expect(marks).toHaveLength(2);
    // stood again by the turn tried again (a stand-down began before it), seconds on; before the fix the first mark was left on
    // the row then (the failed take-off's owed to the second stand-down, forgotten when its mark was refused): passed over till it ran out
    expect(w.stood[0]! - takeOffs[0]!).toBeLessThan(10_000);
    expect(takeOffs.length).toBeGreaterThanOrEqual(2);
    expect((await w.row())!.standsDownUntil).toBeUndefined();
    await w.end();
  });
});
