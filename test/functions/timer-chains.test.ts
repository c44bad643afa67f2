/**
 * An election held for a long lease's duration (its row deleted while held, with long leases), the
 * tick running every minute and SQS delaying a message at most 15 minutes (an earlier one is put
 * back): the timers it leaves in flight.
 */
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, expect, it } from 'vitest';
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
beforeAll(async () => { t = await testTables('timer-chains'); });
afterAll(async () => { await t.drop(); });

const DURATION_S = 3_600; // a one-hour lease (the schema allows up to a day)

it('an election held an hour (a one-hour lease\'s row deleted while held): the ticks add no timer chain of their own (the lease stream\'s run on), and the election closes at it (before: one chain a tick, 61 messages in flight after an hour; then one message a tick over the last 15 minutes, 18)', async () => {
  const start = Date.now();
  const clock = manualClock(start);
  const queue: { at: number; m: TimerMessage | TermEndMessage }[] = [];
  let scheduled = 0;
  const d: FunctionDeps = {
    coordinator: coordinatorDeps(t.client, t.names, { clock, config: { ackWindowMs: 5_000 } }),
    timer: { schedule: async (m, delayMs) => { if ('electionId' in m || 'termEnd' in m) { scheduled++; queue.push({ at: clock.now() + sqsDelaySeconds(delayMs) * 1000, m }); } } },
    publish: async () => undefined,
    deadLetter: async () => undefined,
    ...observability('test', 'SILENT'),
  };
  const c = d.coordinator;
  const lease = 'long-lease';
  for (const name of ['a', 'b']) await c.candidates.write(await c.candidates.read(lease, name), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: start, createdAt: start - 60_000, identity: `${name}-1` } });
  const key = sessionKey('a-session');
  await c.identities.write(await c.identities.read(key.component, key.name), { set: { holderIdentity: 'a-session', hostname: 'h', leaseDurationSeconds: 7_200, acquireTime: start, renewTime: start } });
  await c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: DURATION_S, acquireTime: start, renewTime: start, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator', session: 'a-session' } });
  await t.client.send(new DeleteItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }) }));
  const recs = () => streamRecords(t.client, t.names.leases).then((r) => r.filter((x) => x.dynamodb!.Keys!['name']!.S === lease));
  const rm = (await recs()).find((x) => x.eventName === 'REMOVE')!;
  expect(await leaseStream(d)({ Records: [rm] } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });
  const created = (await recs()).filter((x) => x.eventName === 'INSERT').at(-1)!;
  expect(await leaseStream(d)({ Records: [created] } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });
  const opened = (await c.leases.read(lease)).item!;
  expect(opened.election!.deadline - clock.now()).toBeGreaterThan(55 * 60_000); // held about a lease duration
  // candidates keep renewing (alive); ticks every minute; SQS delivers each message at its (capped) delay
  let nextTick = clock.now() + 60_000;
  let timerReconciles = 0;
  let mostInFlight = 0;
  const end = opened.election!.deadline + 60_000;
  while (clock.now() < end) {
    queue.sort((x, y) => x.at - y.at);
    const due = queue[0] && queue[0].at <= nextTick ? queue.shift()! : undefined;
    if (due) {
      clock.set(Math.max(clock.now(), due.at));
      await onTimer(d, due.m);
      timerReconciles++;
    } else {
      clock.set(nextTick);
      for (const name of ['a', 'b']) { const r = await c.candidates.read(lease, name); await c.candidates.write(r, { set: { renewTime: clock.now(), ...(r.item!.pingTime !== undefined ? { ackedPingTime: r.item!.pingTime } : {}) } }); }
      await onTick(d);
      nextTick += 60_000;
      mostInFlight = Math.max(mostInFlight, queue.length);
    }
  }
  // the chains of the reconciles the lease stream made (3 today), none of the ticks'
  expect(mostInFlight).toBeLessThanOrEqual(4);
  expect(scheduled).toBeLessThanOrEqual(20); // before: 341 (a chain a tick, each put back every 15 minutes); then 46
  expect((await c.leases.read(lease)).item!.holderIdentity).toBeDefined(); // elected at the deadline
});

/**
 * A one-hour lease whose holder died (a's process and session silent from the start), b a live
 * candidate, the tick every minute, SQS holding a message at most 15 minutes. Each tick from half
 * the term on used to start a term-end chain of its own (a message put back every 15 minutes until
 * the term ran out): 45 messages, 30 in flight, 30 reconciles landing in the same second. `skip`:
 * ticks that never ran (a throttled or failed tick); the term is judged as it runs out regardless.
 */
async function deadHolder(lease: string, skip: (minute: number) => boolean) {
  const start = Date.now();
  const clock = manualClock(start);
  const queue: { at: number; m: TimerMessage | TermEndMessage }[] = [];
  let termEnds = 0;
  const d: FunctionDeps = {
    coordinator: coordinatorDeps(t.client, t.names, { clock, config: { ackWindowMs: 5_000 } }),
    // (the tick reconciles every lease in the table: this test's are the ones counted and delivered)
    timer: { schedule: async (m, delayMs) => { if (('electionId' in m || 'termEnd' in m) && m.lease === lease) { if ('termEnd' in m) termEnds++; queue.push({ at: clock.now() + sqsDelaySeconds(delayMs) * 1000, m }); } } },
    publish: async () => undefined,
    deadLetter: async () => undefined,
    ...observability('test', 'SILENT'),
  };
  const c = d.coordinator;
  const renewB = async () => {
    const r = await c.candidates.read(lease, 'b');
    await c.candidates.write(r, { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: clock.now(), createdAt: start - 60_000, identity: 'b-1', ...(r.item?.pingTime !== undefined ? { ackedPingTime: r.item.pingTime } : {}) } });
  };
  await renewB();
  const key = sessionKey(`${lease}-a-session`);
  await c.identities.write(await c.identities.read(key.component, key.name), { set: { holderIdentity: `${lease}-a-session`, hostname: 'h', leaseDurationSeconds: 15, acquireTime: start, renewTime: start } });
  await c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: DURATION_S, acquireTime: start, renewTime: start, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator', session: `${lease}-a-session` } });
  const termEnd = start + DURATION_S * 1000 + c.config.clockSkewMs + 1; // recheckAt: the first moment the term counts as run out
  let mostInFlight = 0;
  let judgedAt: number | undefined;
  const atTermEnd: number[] = [];
  let minute = 1;
  const end = termEnd + 3 * 60_000;
  while (clock.now() < end) {
    const nextTick = start + minute * 60_000;
    queue.sort((x, y) => x.at - y.at);
    const due = queue[0] && queue[0].at <= nextTick ? queue.shift()! : undefined;
    if (due) {
      clock.set(Math.max(clock.now(), due.at));
      if ('termEnd' in due.m && clock.now() >= due.m.termEnd) atTermEnd.push(clock.now());
      await onTimer(d, due.m);
    } else {
      clock.set(nextTick);
      await renewB();
      if (!skip(minute)) await onTick(d);
      minute++;
    }
    mostInFlight = Math.max(mostInFlight, queue.filter((x) => 'termEnd' in x.m).length);
    const row = (await c.leases.read(lease)).item!;
    if (judgedAt === undefined && (row.election !== undefined || row.holderIdentity !== 'a')) judgedAt = clock.now();
  }
  return { termEnd, termEnds, mostInFlight, judgedAt, atTermEnd, elected: (await c.leases.read(lease)).item!.holderIdentity };
}

it('a one-hour lease whose holder died: one term-end chain (two messages: 15 minutes, then the rest), not a chain a tick from half the term on (before: 45 sent, 30 in flight, 30 reconciles in the same second), and the term judged as it runs out', async () => {
  const r = await deadHolder('dead-holder', () => false);
  expect(r.termEnds).toBe(2);
  expect(r.mostInFlight).toBe(1);
  expect(r.atTermEnd).toHaveLength(1); // one reconcile as the term ends
  expect(r.judgedAt! - r.termEnd).toBeGreaterThanOrEqual(0);
  expect(r.judgedAt! - r.termEnd).toBeLessThan(1_000); // at the term's end (SQS's whole seconds), not at the next tick
  expect(r.elected).toBe('b');
});

it('the same with every tick in the term\'s last 29 minutes missed (a throttled or failed tick, or a tick of 30 minutes): the chain the tick at half the term started judges it as it runs out (a tick sending only within 15 minutes of the term end sent none: judged 3 min late)', async () => {
  const r = await deadHolder('dead-holder-missed', (minute) => minute > 31);
  expect(r.termEnds).toBe(2);
  expect(r.mostInFlight).toBe(1);
  expect(r.judgedAt! - r.termEnd).toBeGreaterThanOrEqual(0);
  expect(r.judgedAt! - r.termEnd).toBeLessThan(1_000);
  expect(r.elected).toBe('b');
});
