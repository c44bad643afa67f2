/**
 * An election the tick opens whose deadline is further off than one SQS message's delay (15 min),
 * with the coordinator's tick an operator's 30 minutes (the CDK construct's `tick`): its deadline
 * timer, and the timers it leaves in flight.
 */
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makeHandler as candidateStream } from '../../functions/candidate-stream.js';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { onTick, onTimer, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { sqsDelaySeconds, type TimerMessage, type TermEndMessage } from '../../lib/functions/timer.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { sessionKey } from '../../lib/schemas/identity.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => { t = await testTables('election-timer-tick'); });
afterAll(async () => { await t.drop(); });

const TICK_MS = 30 * 60_000;

it('a re-election the tick opens with a 50-minute window, the tick every 30 minutes: closed at its deadline by one timer chain (before: no timer from either tick, the deadline 20 min after the second; closed at the third, 10 min late)', async () => {
  const start = Date.now();
  const clock = manualClock(start);
  const lease = 'slow-reelection';
  const queue: { at: number; m: TimerMessage | TermEndMessage }[] = [];
  let deadlineMessages = 0;
  const d: FunctionDeps = {
    // a 50-minute lease, a candidate let a ping pass asked again after 2 h: a re-election waits 50 min (reelectionWindowMs)
    coordinator: coordinatorDeps(t.client, t.names, { clock, config: { ackWindowMs: 5_000, askAgainAfterMs: 2 * 3_600_000, candidateStaleAfterMs: 3 * 3_600_000 } }),
    timer: { schedule: async (m, delayMs) => { if (('electionId' in m || 'termEnd' in m) && m.lease === lease) { if ('electionId' in m) deadlineMessages++; queue.push({ at: clock.now() + sqsDelaySeconds(delayMs) * 1000, m }); } } },
    publish: async () => undefined,
    deadLetter: async () => undefined,
    ...observability('test', 'SILENT'),
  };
  const c = d.coordinator;
  const candidate = { binaryVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], createdAt: start - 60 * 60_000 };
  // a holds; b ranks better (an older emulation version) but renewed 10 min ago (not fresh) and answers no ping (crashed, its row not stale yet)
  await c.candidates.write(await c.candidates.read(lease, 'b'), { set: { ...candidate, emulationVersion: '1.29.0', renewTime: start - 10 * 60_000, identity: 'b-1' } });
  const key = sessionKey(`${lease}-a-session`);
  const renewA = async () => {
    const now = clock.now();
    await c.candidates.write(await c.candidates.read(lease, 'a'), { set: { ...candidate, emulationVersion: '1.30.0', renewTime: now, identity: 'a-1' } });
    await c.identities.write(await c.identities.read(key.component, key.name), { set: { holderIdentity: `${lease}-a-session`, hostname: 'h', leaseDurationSeconds: 7_200, acquireTime: start, renewTime: now } });
    await c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 3_000, acquireTime: start, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator', session: `${lease}-a-session` } });
  };
  await renewA();
  await onTick(d);
  const opened = (await c.leases.read(lease)).item!.election!;
  expect(opened.deadline - start).toBe(50 * 60_000);
  // SQS delivers each message at its (capped) delay; a renews before each tick; ticks every 30 minutes
  let nextTick = start + TICK_MS;
  let mostInFlight = queue.length;
  let closedAt: number | undefined;
  while (closedAt === undefined && clock.now() < start + 3 * TICK_MS) {
    queue.sort((x, y) => x.at - y.at);
    const due = queue[0] && queue[0].at <= nextTick ? queue.shift()! : undefined;
    if (due) {
      clock.set(Math.max(clock.now(), due.at));
      await onTimer(d, due.m);
    } else {
      clock.set(nextTick);
      await renewA();
      await onTick(d);
      nextTick += TICK_MS;
    }
    mostInFlight = Math.max(mostInFlight, queue.filter((x) => 'electionId' in x.m).length);
    if ((await c.leases.read(lease)).item!.election?.id !== opened.id) closedAt = clock.now();
  }
  expect(closedAt! - opened.deadline).toBeGreaterThanOrEqual(0);
  expect(closedAt! - opened.deadline).toBeLessThan(1_000); // at its deadline (SQS's whole seconds), not at the next tick
  expect((await c.leases.read(lease)).item!.holderIdentity).toBe('a'); // b never answered: a leads on
  expect(mostInFlight).toBe(1); // one chain: the second tick starts none of its own
  expect(deadlineMessages).toBe(4); // 15 + 15 + 15 + 5 minutes
});

it('an election twenty candidates answer one by one through the candidate stream: one deadline timer for them all, not one per answer (before: 19 more, every one landing at the deadline)', async () => {
  const start = Date.now();
  const clock = manualClock(start);
  const lease = 'many-answers';
  const deadlines: number[] = [];
  const d: FunctionDeps = {
    coordinator: coordinatorDeps(t.client, t.names, { clock, config: { ackWindowMs: 5_000 } }),
    timer: { schedule: async (m) => { if ('electionId' in m && m.lease === lease) deadlines.push(m.deadline); } },
    publish: async () => undefined,
    deadLetter: async () => undefined,
    ...observability('test', 'SILENT'),
  };
  const c = d.coordinator;
  const names = Array.from({ length: 20 }, (_, i) => `w${String(i).padStart(2, '0')}`);
  for (const name of names) await c.candidates.write(await c.candidates.read(lease, name), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: start - 60_000, createdAt: start - 120_000, identity: `${name}-1` } });
  await onTick(d);
  // the row the tick made waits for the lease stream to see it (a delete it may not have handled yet)
  const made = (await streamRecords(t.client, t.names.leases)).filter((x) => x.eventName === 'INSERT' && x.dynamodb!.NewImage!['name']!.S === lease).at(-1)!;
  expect(await leaseStream(d)({ Records: [made] } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });
  const opened = (await c.leases.read(lease)).item!.election!;
  expect(new Set(deadlines)).toEqual(new Set([opened.deadline])); // the tick's (and the lease stream's, before)
  const sentBefore = deadlines.length;
  const before = (await streamRecords(t.client, t.names.candidates)).length;
  // the best (w00, first by name) answers last: the election waits for it
  for (const name of [...names].reverse()) {
    clock.advance(100);
    const r = await c.candidates.read(lease, name);
    expect(r.item!.pingTime).toBeDefined();
    await c.candidates.write(r, { set: { ackedPingTime: r.item!.pingTime!, renewTime: clock.now() } });
    const record = (await streamRecords(t.client, t.names.candidates)).slice(before).at(-1)!; // this answer's
    expect(await candidateStream(d)({ Records: [record] } as DynamoDBStreamEvent, lambdaContext('candidateStream'))).toEqual({ batchItemFailures: [] });
  }
  const after = (await c.leases.read(lease)).item!;
  expect(after.election?.id === opened.id && after.holderIdentity === undefined).toBe(false); // elected once the last answered
  expect(deadlines.length - sentBefore).toBe(0); // the chain this process started goes on by itself
});
