/**
 * LeaderElector on simulated time (sim/harness.ts): the real electors and the real
 * coordinator over the DynamoDB model. Durations are simulated milliseconds, the same on every
 * run, so the bounds are the protocol's own: a term, a poll, an election.
 */
import { PutItemCommand, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import type { ElectionConfigInput } from '../../lib/schemas/config.js';
import { unmarkedHoldMs } from '../../lib/election/decide.js';
import { nextFencingToken } from '../../lib/schemas/fencing-token.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { LeaderElector, type LeaderElectorOptions, type LeadingTerm, type StopReason } from '../../lib/sdk/elector.js';
import { CHASE_FIRST_MS, HEIR_CHECK_FIRST_MS, READ_AFTER_MS, REPORT_ANSWER_MS, SECOND_SUCCESSOR_GRACE_MS, SESSION_QUIET_LEASES, SETTLING_READ_MS, sessionFallbackMs } from '../../lib/sdk/step.js';
import { FencingError, fencedTransactWrite } from '../../lib/sdk/fencing.js';
import { RETRY_JITTER } from '../../lib/sdk/faults.js';
import { leaving, leavingNow } from '../../lib/sdk/leaving.js';
import { requestBoundMs } from '../../lib/sdk/bounded-client.js';
import { NoCoordinatorError, RequestBoundError } from '../../lib/sdk/index.js';
import { DynamoDBModel } from '../../sim/dynamodb-model/index.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { FAST } from './harness.js';
import { LATENCY_MS, Sim, T0, type SimElector } from '../../sim/harness.js';

const L = 'job';
const ACK_MS = 500;
const TICK_MS = 100; // how often the in-process coordinator reconciles
/** Short elections: the coordinator's first term is 2 s, its ack window half a second. */
const CONFIG: ElectionConfigInput = { ackWindowMs: ACK_MS, electedLeaseDurationSeconds: 2 };
/** A follower's poll: the retry period, jittered up to 20 % longer. */
const POLL_MS = FAST.retryPeriodMs * 1.2;
const RTT_MS = 2 * LATENCY_MS;
/** A write is seen by a follower at most a poll, and its read's round trip, after it lands. */
const SEEN_MS = POLL_MS + RTT_MS;
/** A follower that is not the successor reads a quiet lease every two retry periods, jittered by a tenth: it sees a renewal at most that, and a round trip, after it lands. */
const QUIET_SEEN_MS = FAST.retryPeriodMs * 2 * 1.1 + RTT_MS;
/** A successor takes a lease whose term ran out as it watched it: a read and the write after its wake-up. */
const TAKE_MS = 1 + RTT_MS + LATENCY_MS;

const leaders = (es: SimElector[]) => es.filter((e) => e.elector.isLeader());

describe('LeaderElector options', () => {
  const client = new DynamoDBModel({ now: () => T0 }).client();
  const base = () => ({ leaseName: 'x', identity: 'w', client, callbacks: { onStartedLeading: () => undefined }, candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' } });

  it.each([
    { opts: { renewDeadlineMs: 2_000 }, field: 'renewDeadlineMs' },
    { opts: { retryPeriodMs: 1_500 }, field: 'retryPeriodMs' },
    { opts: { leaseDurationMs: 500, renewDeadlineMs: 400, retryPeriodMs: 100 }, field: 'leaseDurationMs' },
    { opts: { identity: '' }, field: 'identity' },
    // named once, as written: not again as the candidacy's name or lease, which the elector derives from them
    { opts: { identity: 'my worker' }, field: 'identity' },
    { opts: { leaseName: 'Nightly Report' }, field: 'leaseName' },
    { opts: { mode: 'Racing' }, field: 'mode' },
  ])('rejects $field', ({ opts, field }) => {
    const make = () => new LeaderElector({ ...base(), ...FAST, ...(opts as object) });
    expect(make).toThrow(ValidationError);
    try {
      make();
    } catch (e) {
      expect((e as ValidationError).fields).toEqual([field]);
    }
  });

  it('has client-go’s defaults', () => {
    const e = new LeaderElector(base());
    expect(e.options).toMatchObject({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, releaseOnCancel: true, mode: 'coordinated' });
  });

  it('refuses a callback no elector calls, naming it and what was meant (onError there, a misspelt onStoppedLeading: accepted and never called; a new user’s trial, 2026-12-05)', () => {
    const make = (callbacks: object) => () => new LeaderElector({ ...base(), callbacks: { onStartedLeading: () => undefined, ...callbacks } as never });
    expect(make({ onError: () => undefined })).toThrow(/callbacks\.onError: is no callback, so nothing would call it: onError is an option of the LeaderElector itself, beside callbacks/);
    expect(make({ onStopedLeading: () => undefined })).toThrow(/callbacks\.onStopedLeading: is no callback, so nothing would call it \(did you mean "onStoppedLeading"\?\)/);
    expect(make({ onStoppedLeading: () => undefined, onNewLeader: () => undefined })).not.toThrow();
    // an object of a class of its own: its fields are no callbacks (a review: they were refused)
    class Worker {
      runs = 0;
      constructor(readonly log: string[]) {}
      onStartedLeading() {
        this.runs++;
      }
    }
    expect(() => new LeaderElector({ ...base(), callbacks: new Worker([]) })).not.toThrow();
  });

  it('rejects bad candidacy at construction, naming the field', () => {
    const make = () => new LeaderElector({ ...base(), candidacy: { emulationVersion: '1.31.0', binaryVersion: '1.30.0' } });
    expect(make).toThrow(/candidacy\.emulationVersion: must be <= binaryVersion 1\.30\.0/);
  });
});

describe('coordinated election', () => {
  it('three electors elect exactly one leader, and every one of them hears of it', async () => {
    const sim = await Sim.create({ config: CONFIG });
    const coord = sim.coordinator();
    const es = ['a', 'b', 'c'].map((id, i) => sim.elector(id, { leaseName: L }, { versions: [`1.3${i}.0`, '1.32.0'] }));
    await sim.until('a leader', () => leaders(es).length === 1, 5_000);
    // ten terms' worth of renewals and polls: never two
    await sim.during(10 * FAST.leaseDurationMs, 'at most one leader', () => leaders(es).length <= 1);
    expect(leaders(es).map((e) => e.elector.options.identity)).toEqual(['a']);
    expect(['a', 'b', 'c'].every((who) => sim.log.of('newLeader', who).some((e) => e.leader === 'a'))).toBe(true);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
    expect(sim.log.of('started')).toHaveLength(1);
    expect(coord.errors).toEqual([]);
  });

  it('the tables made anew under running workers (local mode started again on a DynamoDB Local in memory): each registers its candidacy again at its first read of the missing lease row, the successors named in the term gone too, and the coordinator elects (they came back only at the candidacy renewal, 10 minutes on, and the fallback took the lease 80 s on, blaming the coordinator)', async () => {
    const sim = await Sim.create({ config: CONFIG });
    const coord = sim.coordinator();
    const errors: Error[] = [];
    // a leads; b and c are named its successors (they take a row gone under its term themselves, a term on); d follows
    const es = ['a', 'b', 'c', 'd'].map((id, i) => sim.elector(id, { leaseName: L }, { versions: [`1.3${i}.0`, '1.39.0'], errors }));
    await sim.until('a leader, and its successors named', async () => leaders(es).length === 1 && (await sim.leases.read(L)).item?.secondSuccessor !== undefined, 10_000);
    // every row gone at once, as a DynamoDB Local started again holds none
    const rows = [(await sim.leases.read(L)).item!, ...(await sim.candidates.list(L)).candidates];
    expect(rows).toHaveLength(5);
    await sim.settle(Promise.all([sim.leases.delete(await sim.leases.read(L)), ...(await sim.candidates.list(L)).candidates.map((c) => sim.candidates.delete(CandidateStore.readOf(c)))]));
    const gone = sim.clock.monotonic();
    // every one, the successors named in the term gone too (they came back at the 10-minute renewal:
    // a successor that took the row gone under that term held it without a candidate row, and the
    // coordinator moved the lease from it as from a holder no longer standing)
    const names = async () => (await sim.candidates.list(L)).candidates.map((c) => c.name).sort();
    await sim.until('every candidacy registered again', async () => (await names()).length === 4, 2 * FAST.leaseDurationMs);
    expect(await names()).toEqual(['a', 'b', 'c', 'd']);
    expect(sim.clock.monotonic() - gone).toBeLessThan(FAST.leaseDurationMs);
    const led = await sim.until('a leader elected by the coordinator', async () => leaders(es).length === 1 && (await sim.leases.read(L)).item?.electedBy === 'coordinator', 4 * FAST.leaseDurationMs);
    expect(led).toBe(true);
    expect(errors.filter((e) => e instanceof NoCoordinatorError)).toEqual([]);
    expect(coord.errors).toEqual([]);
  });

  it('a leader gone without releasing is replaced after its term; with release, at once', async () => {
    const sim = await Sim.create({ config: CONFIG });
    const coord = sim.coordinator();
    // the first leader does not release; the ones after it do (options are fixed at construction)
    const es = [sim.elector('a', { leaseName: L, releaseOnCancel: false })];
    const first = await sim.until('a leader', () => leaders(es)[0]);
    es.push(...['b', 'c'].map((id) => sim.elector(id, { leaseName: L, releaseOnCancel: true })));
    await sim.settle(Promise.all(es.map((e) => e.elector.ready))); // b and c stand
    await sim.run(FAST.leaseDurationMs);
    expect(leaders(es)).toEqual([first]); // same versions: the oldest candidate keeps the lease

    const stoppedAt = sim.clock.monotonic();
    await first.stop(); // no release: the others must wait out the term
    const lastTerm = (await sim.leases.read(L)).item!;
    expect(lastTerm.holderIdentity).toBe('a');
    const second = await sim.until('a second leader', () => leaders(es)[0], 10_000);
    const crashFailover = sim.clock.monotonic() - stoppedAt;
    // a's successor (the coordinator named one) took it: not before the old term, counted from its
    // last renewal, had run out (in true time: the rows' stamps carry each worker's estimate of
    // DynamoDB's clock, ±maxClockErrorMs) …
    const next = (await sim.leases.read(L)).item!;
    expect(next).toMatchObject({ holderIdentity: second.elector.options.identity, electedBy: 'successor' });
    const ranOut = sim.lastRenewal(L, 'a') + lastTerm.leaseDurationSeconds * 1000;
    expect(sim.tookOver(L, next.holderIdentity!)).toBeGreaterThanOrEqual(ranOut);
    // … and no waiting beyond it: the successor times the term from when it saw the last renewal —
    // right behind it once locked on to the holder's cadence, within a quiet lease's poll (two retry
    // periods) if it was named successor only after that renewal (the coordinator may re-designate)
    expect(sim.tookOver(L, next.holderIdentity!)).toBeLessThanOrEqual(ranOut + QUIET_SEEN_MS + TAKE_MS);
    // so from the stop (which came after that renewal): at most about a term
    expect(crashFailover).toBeLessThanOrEqual(FAST.leaseDurationMs + QUIET_SEEN_MS + TAKE_MS + LATENCY_MS);

    // now a graceful hand-off: release on cancel
    const handedAt = sim.clock.monotonic();
    await second.stop();
    await sim.until('a third leader', () => leaders(es)[0], 10_000);
    const handoff = sim.clock.monotonic() - handedAt;
    // no term waited out: the release starts an election at once (b took the lease as a's successor
    // and left before the coordinator named one): a tick opens it, c answers at its next poll, a
    // tick elects, c confirms at its next poll
    expect(handoff).toBeLessThanOrEqual(2 * (TICK_MS + POLL_MS) + 10 * RTT_MS);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
    const tokens = sim.log.of('started').map((e) => e.token!);
    expect(tokens).toHaveLength(3);
    expect(tokens).toEqual([...tokens].sort((x, y) => x - y));
    expect(new Set(tokens).size).toBe(tokens.length);
    expect(coord.errors).toEqual([]);
  });

  it.each([
    { name: 'an older emulation version', joiner: { versions: ['1.29.0', '1.31.0'] as [string, string] } },
    { name: 'a higher priority', joiner: { versions: ['1.31.0', '1.31.0'] as [string, string], priority: 10 } },
  ])('a better candidate ($name) joins: the holder stops, releases, and the better one leads (not the old successor)', async ({ joiner }) => {
    const sim = await Sim.create({ config: CONFIG });
    sim.coordinator();
    const a = sim.elector('a', { leaseName: L }, { versions: ['1.30.0', '1.31.0'] });
    await sim.settle(a.elector.ready); // a stands first: the coordinator's first election cannot pick c alone
    sim.elector('c', { leaseName: L }, { versions: ['1.30.0', '1.32.0'] });
    await sim.until('a to lead with c as its successor', async () => a.elector.isLeader() && (await sim.leases.read(L)).item?.successor === 'c');
    const b = sim.elector('b', { leaseName: L }, joiner);
    await sim.until('b to lead', () => b.elector.isLeader(), 10_000);
    expect(a.elector.isLeader()).toBe(false);
    const log = sim.log;
    expect(log.of('started').map((e) => e.who)).toEqual(['a', 'b']); // no detour through c
    const stoppedA = log.entries.findIndex((e) => e.who === 'a' && e.what === 'stopped');
    const startedB = log.entries.findIndex((e) => e.who === 'b' && e.what === 'started');
    expect(stoppedA).toBeGreaterThanOrEqual(0);
    expect(log.entries[stoppedA]!.reason).toBe('preempted');
    expect(stoppedA).toBeLessThan(startedB);
    expect(a.signals[0]!.aborted).toBe(true);
  });
});

describe('safety of a leader that cannot renew', () => {
  it('renewal failures (injected in its network) abort the leader’s signal exactly at its renew deadline, before its term can expire', async () => {
    const sim = await Sim.create({ config: CONFIG });
    sim.coordinator();
    const a = sim.elector('a', { leaseName: L });
    await sim.until('a to lead', () => a.elector.isLeader());
    await sim.run(3 * FAST.retryPeriodMs); // a few renewals
    a.machine.fault = (req) => (req.operation === 'UpdateItem' ? Object.assign(new Error('injected: service unavailable'), { name: 'ServiceUnavailable' }) : undefined);
    const signal = a.signals[0]!;
    let abortedAt: { mono: number; wall: number } | undefined;
    signal.addEventListener('abort', () => (abortedAt = { mono: sim.clock.monotonic(), wall: sim.clock.now() }));
    await sim.until('the signal to abort', () => signal.aborted, 10_000);
    const held = (await sim.leases.read(L)).item!;
    expect(held.holderIdentity).toBe('a');
    expect(signal.reason).toBe('renewDeadline');
    // the deadline counts from when the last renewal that succeeded was sent
    const lastRenewal = a.machine.sent.filter((r) => r.ok && r.operation === 'UpdateItem' && (r.input as { TableName: string }).TableName === sim.names.leases).at(-1)!;
    expect(abortedAt!.mono).toBe(lastRenewal.at + FAST.renewDeadlineMs);
    expect(abortedAt!.wall).toBeLessThan(held.renewTime! + held.leaseDurationSeconds * 1000); // stopped acting while the term still stood
    expect(a.elector.healthy()).toBe(true); // it stepped down, so it is not stuck
  });
});

describe('a leader that lost its term and lives on', () => {
  it('stands again as the best candidate: once the successor took its term it shows life, is named successor, and takes the next vacancy (not a newer version)', async () => {
    const sim = await Sim.create({ config: CONFIG });
    sim.coordinator();
    const a = sim.elector('a', { leaseName: L, releaseOnCancel: false }, { versions: ['1.30.0', '1.31.0'] });
    await sim.settle(a.elector.ready); // a stands first: the coordinator's first election cannot pick another alone
    const b = sim.elector('b', { leaseName: L, releaseOnCancel: false }, { versions: ['1.30.0', '1.31.0'] });
    const c = sim.elector('c', { leaseName: L, releaseOnCancel: false }, { versions: ['1.31.0', '1.31.0'] });
    await sim.until('a leading, b its successor', async () => a.elector.isLeader() && (await sim.leases.read(L)).item?.successor === 'b');
    // a's renewals fail (its own network, nothing else): it stops at its renew deadline, alive, and b takes the term as successor
    a.machine.fault = (req) => (req.operation === 'UpdateItem' && (req.input as { TableName: string }).TableName === sim.names.leases ? Object.assign(new Error('injected: service unavailable'), { name: 'ServiceUnavailable' }) : undefined);
    await sim.until('b leading', () => b.elector.isLeader(), 10_000);
    expect(sim.log.of('stopped', 'a').at(-1)?.reason).toBe('renewDeadline');
    a.machine.fault = undefined;
    // a (the oldest emulation version, alive) is named again, not passed over as a holder that died with its term
    await sim.until('a named successor', async () => (await sim.leases.read(L)).item?.successor === 'a', 10 * FAST.leaseDurationMs);
    await sim.run(2 * FAST.leaseDurationMs); // a few of b's renewals: a, a quiet follower until named, has read it is the successor
    expect((await sim.leases.read(L)).item).toMatchObject({ holderIdentity: 'b', successor: 'a' });
    b.machine.kill();
    await sim.until('the next leader', () => a.elector.isLeader() || c.elector.isLeader(), 10 * FAST.leaseDurationMs);
    expect(a.elector.isLeader()).toBe(true);
    expect(sim.log.of('started', 'c')).toEqual([]);
    // not before b's term had run out (kill -9 logs no stop: the lease's writes tell)
    expect(sim.tookOver(L, 'a', sim.tookOver(L, 'b'))).toBeGreaterThanOrEqual(sim.lastRenewal(L, 'b') + (await sim.leases.read(L)).item!.leaseDurationSeconds * 1000);
  });
});

describe('a candidate that let a ping pass', () => {
  it('is asked again askAgainAfterMs after it, not passed over until its candidacy renews on its own (10 minutes): the best candidate, frozen through the re-election that asked it, preempts the worse holder once asked again', async () => {
    const ASK_AGAIN_MS = 4_000;
    const sim = await Sim.create({ config: { ...CONFIG, askAgainAfterMs: ASK_AGAIN_MS } });
    const functions = sim.coordinator();
    const b = sim.elector('b', { leaseName: L }, { versions: ['1.31.0', '1.31.0'] });
    await sim.until('b leading', () => b.elector.isLeader());
    // the functions down while a (an older version: the better candidate) joins, so its row is no
    // longer fresh when they come back: they ask it first (a re-election), and a is frozen meanwhile
    functions.stop();
    const a = sim.elector('a', { leaseName: L }, { versions: ['1.30.0', '1.30.0'] });
    await sim.settle(a.elector.ready);
    await sim.run(2 * ACK_MS);
    a.machine.clock.pause();
    sim.coordinator();
    const row = async () => (await sim.candidates.list(L)).candidates.find((c) => c.name === 'a');
    await sim.until('the re-election asked a and closed without its answer', async () => {
      const [l, r] = [(await sim.leases.read(L)).item, await row()];
      return r?.pingTime !== undefined && (r.ackedPingTime ?? 0) < r.pingTime && sim.clock.now() > r.pingTime + ACK_MS && !l?.election;
    });
    const missed = (await row())!.pingTime!;
    a.machine.clock.resume();
    expect(b.elector.isLeader()).toBe(true);
    // a, alive, reads the lease as a quiet follower and renews nothing: only being asked again moves it
    await sim.until('a leading', () => a.elector.isLeader(), ASK_AGAIN_MS + 10 * FAST.leaseDurationMs);
    // asked again, not before: the ping it let pass kept it passed over until then
    expect(sim.tookOver(L, 'a')).toBeGreaterThanOrEqual(missed + ASK_AGAIN_MS);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
  });
});

describe("an operator's pin on a fleet without the push path", () => {
  // The holder's successors read the lease once a renewal interval (1 s here, its renewal's
  // cadence), longer than the ack window (500 ms): a re-election opened just after a renewal is
  // seen by them only after it closed, unless the window of a held lease's re-election covers it.
  it('a priority set on the successor just after a renewal: it answers the re-election and leads, not passed over for askAgainAfterMs', async () => {
    const sim = await Sim.create({ config: CONFIG });
    sim.coordinator();
    const a = sim.elector('a', { leaseName: L }, { versions: ['1.30.0', '1.30.0'] });
    await sim.settle(a.elector.ready);
    const others = [sim.elector('b', { leaseName: L }, { versions: ['1.31.0', '1.31.0'] }), sim.elector('c', { leaseName: L }, { versions: ['1.31.0', '1.31.0'] })];
    await sim.until('a leading, b and c its successors, the lease quiet', async () => {
      const l = (await sim.leases.read(L)).item;
      return a.elector.isLeader() && l?.successor !== undefined && l.secondSuccessor !== undefined && !l.election && l.renewTime! > l.acquireTime!;
    });
    await sim.run(10 * FAST.leaseDurationMs); // the candidates' rows no longer fresh: the coordinator asks before it preempts
    const heir = (await sim.leases.read(L)).item!.successor!;
    const before = (await sim.leases.read(L)).item!.renewTime!;
    await sim.until("a's next renewal", async () => (await sim.leases.read(L)).item!.renewTime! > before);
    const pinnedAt = sim.clock.now();
    await sim.candidates.write(await sim.candidates.read(L, heir), { set: { priority: 10 } });
    const askedAgainAfter = 60_000; // the default askAgainAfterMs: what a pin let pass would wait
    const pinned = others.find((e) => e.elector.options.identity === heir)!;
    await sim.until(`${heir} leading`, () => pinned.elector.isLeader(), askedAgainAfter + 10 * FAST.leaseDurationMs);
    // asked in the re-election and answered it: leading within a few renewal intervals of the pin
    expect(sim.tookOver(L, heir) - pinnedAt).toBeLessThan(5 * FAST.leaseDurationMs);
    const row = (await sim.candidates.list(L)).candidates.find((c) => c.name === heir)!;
    expect(row.pingTime === undefined || (row.ackedPingTime ?? 0) >= row.pingTime).toBe(true);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
  });
});

describe('health (client-go healthz adaptor)', () => {
  it('a leader whose term ran out without it stepping down (a frozen process) is unhealthy; asked whether it leads, it steps down; a follower is healthy', async () => {
    const sim = await Sim.create();
    const e = sim.elector('h', { leaseName: L, mode: 'NoCoordination', healthToleranceMs: 500, clockSync: 'none' });
    expect(e.elector.healthy()).toBe(true);
    await sim.until('h to lead', () => e.elector.isLeader());
    const acquired = e.machine.sent.filter((r) => r.operation === 'UpdateItem').at(-1)!;
    expect(e.elector.fencingToken).toBe(nextFencingToken(undefined, acquired.at)); // a new lease: the clock's floor (clockSync none: its own clock)
    expect(e.elector.leader).toBe('h');
    expect(e.elector.healthy()).toBe(true);
    e.machine.clock.pause(); // its renewals and its renew deadline stand still
    await sim.clock.runUntil(acquired.at + FAST.leaseDurationMs + 500); // the term and the tolerance, no more: still healthy
    expect(e.elector.healthy()).toBe(true);
    await sim.run(1);
    expect(e.elector.healthy()).toBe(false);
    expect(e.elector.healthy(10_000)).toBe(true); // a caller's own tolerance
    // asked whether it leads, it judges its renew deadline on the spot (no timer has run) and steps down
    expect(sim.log.of('stopped', 'h')).toEqual([]);
    expect(e.elector.isLeader()).toBe(false);
    expect(sim.log.of('stopped', 'h')).toEqual([expect.objectContaining({ reason: 'renewDeadline' })]);
    expect(e.elector.healthy()).toBe(true); // a follower is healthy
  });
});

describe('fencing', () => {
  it('a deposed (or paused) leader’s fenced write fails and leaves the target unchanged', async () => {
    const sim = await Sim.create({ config: CONFIG });
    sim.coordinator();
    const target = sim.names.leases; // any table works; the leases table is at hand
    const key = { name: `${L}-state` };
    await sim.client.send(new PutItemCommand({ TableName: target, Item: marshall({ ...key, v: 0, leaseDurationSeconds: 1, leaseTransitions: 0, fencingToken: 0, revision: 1 }) }));
    const put = (v: number) => ({ TransactItems: [{ Update: { TableName: target, Key: marshall(key), UpdateExpression: 'SET v = :v', ExpressionAttributeValues: marshall({ ':v': v }) } }] });
    const a = sim.elector('a', { leaseName: L }, { versions: ['1.30.0', '1.30.0'] });
    await sim.until('a to lead', () => a.elector.isLeader());
    const oldTerm = { holderIdentity: 'a', fencingToken: a.elector.fencingToken! };
    await sim.settle(a.elector.fencedWrite(put(1)));
    const b = sim.elector('b', { leaseName: L }, { versions: ['1.29.0', '1.30.0'] });
    await sim.until('b to lead', () => b.elector.isLeader(), 10_000);
    // the deposed elector refuses at once
    await expect(a.elector.fencedWrite(put(2))).rejects.toBeInstanceOf(FencingError);
    // a paused ex-leader still holding its old term is refused by DynamoDB itself
    const err = await fencedTransactWrite(sim.client, { table: sim.names.leases, leaseName: L, term: oldTerm }, put(3)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FencingError);
    expect((err as FencingError).message).toMatch(new RegExp(`fencing token ${oldTerm.fencingToken} refused`));
    const now = await sim.client.send(new GetItemCommand({ TableName: target, Key: marshall(key), ConsistentRead: true }));
    expect(unmarshall(now.Item!)['v']).toBe(1);
    // the new leader's fenced write goes through
    await sim.settle(b.elector.fencedWrite(put(4)));
    const after = await sim.client.send(new GetItemCommand({ TableName: target, Key: marshall(key), ConsistentRead: true }));
    expect(unmarshall(after.Item!)['v']).toBe(4);
  });
});

describe('a term’s own fenced writes', () => {
  it('work that outlives its term (it ignored its signal) cannot write in the same worker’s next term: the term’s own writes are refused, the elector’s go to the term it leads now', async () => {
    const sim = await Sim.create({});
    const target = sim.names.leases; // any table works; the leases table is at hand
    const key = { name: `${L}-state` };
    await sim.client.send(new PutItemCommand({ TableName: target, Item: marshall({ ...key, v: 0, leaseDurationSeconds: 1, leaseTransitions: 0, fencingToken: 0, revision: 1 }) }));
    const put = (v: number) => ({ TransactItems: [{ Update: { TableName: target, Key: marshall(key), UpdateExpression: 'SET v = :v', ExpressionAttributeValues: marshall({ ':v': v }) } }] });
    const terms: LeadingTerm[] = [];
    const a = sim.elector('a', { leaseName: L, mode: 'NoCoordination', callbacks: { onStartedLeading: (_signal, term) => void terms.push(term) } });
    await sim.until('a to lead', () => a.elector.isLeader());
    await sim.settle(terms[0]!.fencedWrite(put(1)));
    // its renewals fail past the renew deadline: term 1 stops; then it leads again, in a new term
    a.machine.fault = (req) => (req.operation === 'UpdateItem' && (req.input as { TableName: string }).TableName === sim.names.leases ? Object.assign(new Error('injected: service unavailable'), { name: 'ServiceUnavailable' }) : undefined);
    await sim.until('term 1 stopped', () => !a.elector.isLeader(), 2 * FAST.leaseDurationMs);
    a.machine.fault = undefined;
    await sim.until('a leads again', () => terms.length === 2 && a.elector.isLeader(), 10 * FAST.leaseDurationMs);
    // its row still named it in term 1: it ended term 1 there and took a new term, so a fence on the token tells them apart
    expect(terms[1]!.fencingToken).toBeGreaterThan(terms[0]!.fencingToken);
    // term 1's work writes late: refused (before, its elector.fencedWrite was fenced by term 2 and landed)
    const late = await terms[0]!.fencedWrite(put(2)).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(FencingError);
    expect((late as FencingError).message).toMatch(new RegExp(`fencing token ${terms[0]!.fencingToken} refused: its term ended \\(renewDeadline\\)`));
    await expect(terms[0]!.fencedItemWrite({ put: { TableName: target, Item: marshall({ name: `${L}-item`, leaseDurationSeconds: 1, leaseTransitions: 0, fencingToken: 0, revision: 1 }) } })).rejects.toBeInstanceOf(FencingError);
    expect(unmarshall((await sim.client.send(new GetItemCommand({ TableName: target, Key: marshall(key), ConsistentRead: true }))).Item!)['v']).toBe(1);
    // term 2's own, and the elector's (the term it leads now), go through
    await sim.settle(terms[1]!.fencedWrite(put(3)));
    await sim.settle(a.elector.fencedWrite(put(4)));
    expect(unmarshall((await sim.client.send(new GetItemCommand({ TableName: target, Key: marshall(key), ConsistentRead: true }))).Item!)['v']).toBe(4);
    await a.stop();
  });
});

describe('a fenced write never answered while its term lives', () => {
  it('gives up after the elector\'s request bound with a timeout (its outcome unknown), not when TCP does: the work goes on, its term renewed', async () => {
    const sim = await Sim.create({});
    const target = sim.names.leases; // any table works; the leases table is at hand
    const terms: LeadingTerm[] = [];
    const a = sim.elector('a', { leaseName: L, mode: 'NoCoordination', callbacks: { onStartedLeading: (_signal, term) => void terms.push(term) } });
    await sim.until('a to lead', () => a.elector.isLeader());
    // the route black-holes the writes of the work only: the lease's renewals (UpdateItem) are answered
    a.machine.swallow = (req) => req.operation === 'TransactWriteItems' || req.operation === 'PutItem';
    const bound = requestBoundMs(FAST.retryPeriodMs);
    const item = { put: { TableName: target, Item: marshall({ name: `${L}-item`, leaseDurationSeconds: 1, leaseTransitions: 0, fencingToken: 0, revision: 1 }) } };
    const put = { TransactItems: [{ Put: { TableName: target, Item: marshall({ name: `${L}-state`, leaseDurationSeconds: 1, leaseTransitions: 0, fencingToken: 0, revision: 1 }) } }] };
    for (const write of [() => terms[0]!.fencedWrite(put), () => terms[0]!.fencedItemWrite(item), () => a.elector.fencedWrite(put)]) {
      const from = sim.elapsed;
      // before: no answer within a minute (the caller's client has no request timeout; TCP gives up in minutes)
      const e = await sim.settle(write().catch((x: unknown) => x), 'the unanswered write', 4 * bound);
      expect(e).toBeInstanceOf(Error);
      expect((e as Error).name).toBe('TimeoutError');
      // told apart by the SDK's own export, not by its name alone
      expect(e).toBeInstanceOf(RequestBoundError);
      expect(e).toMatchObject({ boundMs: bound });
      expect(sim.elapsed - from).toBe(bound);
      expect(a.elector.isLeader()).toBe(true);
    }
    expect(terms).toHaveLength(1);
    a.machine.swallow = undefined;
    await a.stop();
    expect(sim.clock.pending()).toBe(0);
  });
});

describe('succession: the designated successor takes a vacant lease itself', () => {
  /** Three electors (or `ids`) elected by the coordinator, which is then stopped once the lease names a successor (and, `second`, a second successor). */
  async function electedThenCoordinatorDown(opts: Partial<LeaderElectorOptions> = {}, ids = ['a', 'b', 'c'], second = false) {
    const sim = await Sim.create({ config: CONFIG });
    const coord = sim.coordinator();
    const es = ids.map((id) => sim.elector(id, { leaseName: L, fallbackAfterMs: 60_000, ...opts }));
    const leader = await sim.until('a leader', () => leaders(es)[0]);
    const held = await sim.until('a successor on the lease', async () => {
      const l = (await sim.leases.read(L)).item;
      return l?.successor && !l.election && (!second || l.secondSuccessor) ? l : undefined;
    });
    coord.stop(); // from here on only the workers act: no election can happen
    const successor = es.find((e) => e.elector.options.identity === held.successor)!;
    expect(successor).not.toBe(leader);
    expect(held.successorInstance).toBe(successor.elector.instance);
    return { sim, es, leader, successor, held };
  }

  it('a leader gone without releasing: the successor leads once the term has run out, with no coordinator and long before the fallback', async () => {
    const { sim, es, leader, successor, held } = await electedThenCoordinatorDown({ releaseOnCancel: false });
    const stoppedAt = sim.clock.monotonic();
    await leader.stop();
    const lastTerm = (await sim.leases.read(L)).item!;
    expect(lastTerm.holderIdentity).toBe(leader.elector.options.identity);
    await sim.until('the successor leading', () => successor.elector.isLeader(), 10_000);
    const took = sim.clock.monotonic() - stoppedAt;
    const l = (await sim.leases.read(L)).item!;
    expect(l).toMatchObject({ holderIdentity: successor.elector.options.identity, holderInstance: successor.elector.instance, electedBy: 'successor' });
    expect(l.fencingToken).toBeGreaterThan(held.fencingToken);
    // not before the term had run out (true time), and as soon as it had as the successor watched it
    // (from when it saw the last renewal): it wakes for that moment, it does not wait for a poll
    const ranOut = sim.lastRenewal(L, leader.elector.options.identity) + lastTerm.leaseDurationSeconds * 1000;
    expect(sim.tookOver(L, successor.elector.options.identity)).toBeGreaterThanOrEqual(ranOut);
    expect(sim.tookOver(L, successor.elector.options.identity)).toBeLessThanOrEqual(ranOut + SEEN_MS + TAKE_MS);
    expect(took).toBeLessThanOrEqual(lastTerm.leaseDurationSeconds * 1000 + SEEN_MS + TAKE_MS + LATENCY_MS); // so about a term after the stop
    expect(l.successor).toBe(held.secondSuccessor); // the second successor moves up (none named: the coordinator names the next one)
    expect(leaders(es)).toEqual([successor]);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
  });

  it('a cancelled leader hands its term to the successor in one write, at its next renewal slot, when the successor reads: no leaderless gap to speak of, no coordinator', async () => {
    const { sim, leader, successor, held } = await electedThenCoordinatorDown({ releaseOnCancel: true });
    await sim.run(3 * leader.elector.renewIntervalMs); // the successor has seen a few renewals: it knows their cadence and where they land
    const stoppedAt = sim.clock.monotonic();
    await leader.stop();
    await sim.until('the successor leading', () => successor.elector.isLeader(), 5_000);
    const l = (await sim.leases.read(L)).item!;
    expect(l).toMatchObject({ holderIdentity: successor.elector.options.identity, holderInstance: successor.elector.instance, electedBy: 'successor', lastHolderIdentity: leader.elector.options.identity });
    expect(l.fencingToken).toBeGreaterThan(held.fencingToken);
    // the leader led on until its next renewal would have been due (at most a renew interval)…
    const stopped = sim.log.of('stopped', leader.elector.options.identity).at(-1)!.at;
    expect(stopped - stoppedAt).toBeLessThanOrEqual(leader.elector.renewIntervalMs + RTT_MS);
    // …and the successor, reading just after that moment, confirmed at once: no poll waited for
    const started = sim.log.of('started', successor.elector.options.identity).at(-1)!.at;
    expect(started - stopped).toBeLessThanOrEqual(READ_AFTER_MS + 2 * CHASE_FIRST_MS + 6 * RTT_MS); // its aim is within 100 ms of the landing once locked on
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
  });

  it.each([
    ['cancelled (SIGTERM)', 'cancelled'],
    ['its work failed', 'workFailed'],
  ] as const)('a leader %s: onStoppedLeading runs before the step-down write is answered, which is noted as in progress until it is (a process exiting meanwhile is told why its successor waits), and before the successor leads', async (_, how) => {
    const sim = await Sim.create({ config: CONFIG });
    const coord = sim.coordinator();
    const fail = new Map<string, (e: Error) => void>();
    const inProgress = new Map<string, string[]>();
    const es = ['a', 'b', 'c'].map((id) => {
      const onStartedLeading = (signal: AbortSignal, term: LeadingTerm) => {
        sim.log.add({ who: id, what: 'started', token: term.fencingToken });
        return new Promise<void>((_resolve, reject) => void fail.set(id, reject));
      };
      const onStoppedLeading = ({ reason, fencingToken }: { reason: StopReason; fencingToken: number }) => {
        sim.log.add({ who: id, what: 'stopped', reason, token: fencingToken });
        inProgress.set(id, leavingNow());
      };
      // noted as a real process's elector notes it (by default, only on the system clock)
      return sim.elector(id, { leaseName: L, fallbackAfterMs: 60_000, callbacks: { onStartedLeading, onStoppedLeading } }, { internals: { stepDowns: leaving } });
    });
    const leader = await sim.until('a leader', () => leaders(es)[0]);
    const held = await sim.until('a successor on the lease', async () => {
      const l = (await sim.leases.read(L)).item;
      return l?.successor && !l.election ? l : undefined;
    });
    coord.stop();
    const successor = es.find((e) => e.elector.options.identity === held.successor)!;
    await sim.run(3 * leader.elector.renewIntervalMs);
    const id = leader.elector.options.identity;
    if (how === 'cancelled') leader.controller.abort();
    else fail.get(id)!(new Error('the job crashed'));
    await sim.until('the successor leading', () => successor.elector.isLeader(), 5 * FAST.leaseDurationMs);
    expect(sim.log.of('stopped', id).at(-1)!.reason).toBe(how);
    expect((await sim.leases.read(L)).item).toMatchObject({ holderIdentity: successor.elector.options.identity, electedBy: 'successor', lastHolderIdentity: id });
    // its step-down was in progress as onStoppedLeading ran (the hand-over not yet answered), and is over now
    expect(inProgress.get(id)).toContain(`LeaderElector "${id}" of lease "${L}"`);
    if (how === 'cancelled') await leader.done;
    expect(leavingNow()).not.toContain(`LeaderElector "${id}" of lease "${L}"`);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
  });

  it('two crashes in a row and no coordinator: the successor takes and names the second successor, which takes the next vacancy as successor (not by the fallback)', async () => {
    const { sim, es, leader, successor, held } = await electedThenCoordinatorDown({ releaseOnCancel: false }, ['a', 'b', 'c'], true);
    const second = es.find((e) => e.elector.options.identity === held.secondSuccessor)!;
    expect([leader, successor]).not.toContain(second);
    await sim.run(2 * leader.elector.renewIntervalMs + 123);
    await leader.stop(); // releaseOnCancel false: gone without a word, the term has to run out
    await sim.until('the successor leading', () => successor.elector.isLeader(), 10_000);
    const took = (await sim.leases.read(L)).item!;
    expect(took).toMatchObject({ holderIdentity: successor.elector.options.identity, electedBy: 'successor', successor: second.elector.options.identity, successorInstance: second.elector.instance });
    expect(took.secondSuccessor).toBeUndefined();
    await sim.run(2 * successor.elector.renewIntervalMs + 321);
    const killedAt = sim.clock.monotonic();
    await successor.stop();
    // a term and a poll or two later, far inside the fallback (60 s): the coordinator never came back
    await sim.until('the second successor leading', () => second.elector.isLeader(), 10_000);
    const l = (await sim.leases.read(L)).item!;
    expect(l).toMatchObject({ holderIdentity: second.elector.options.identity, electedBy: 'successor', lastHolderIdentity: successor.elector.options.identity });
    expect(l.fencingToken).toBeGreaterThan(took.fencingToken);
    expect(sim.clock.monotonic() - killedAt).toBeLessThanOrEqual(took.leaseDurationSeconds * 1000 + SEEN_MS + TAKE_MS + LATENCY_MS);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
  });

  it('a hand-over names the second successor too: the heir, gone without a word, is taken over by it with no coordinator', async () => {
    const { sim, es, leader, successor, held } = await electedThenCoordinatorDown({ releaseOnCancel: true }, ['a', 'b', 'c'], true);
    const second = es.find((e) => e.elector.options.identity === held.secondSuccessor)!;
    await sim.run(3 * leader.elector.renewIntervalMs);
    await leader.stop();
    await sim.until('the heir leading', () => successor.elector.isLeader(), 5_000);
    const handed = (await sim.leases.read(L)).item!;
    expect(handed).toMatchObject({ holderIdentity: successor.elector.options.identity, lastHolderIdentity: leader.elector.options.identity, successor: second.elector.options.identity });
    await sim.run(2 * successor.elector.renewIntervalMs + 77);
    const killedAt = sim.clock.monotonic();
    successor.machine.kill();
    await sim.until('the second successor leading', () => second.elector.isLeader(), 10_000);
    expect((await sim.leases.read(L)).item).toMatchObject({ holderIdentity: second.elector.options.identity, electedBy: 'successor' });
    expect(sim.clock.monotonic() - killedAt).toBeLessThanOrEqual(FAST.leaseDurationMs + SEEN_MS + TAKE_MS + LATENCY_MS);
    // not before the heir's term had run out (kill -9 logs no stop: the lease's writes tell)
    expect(sim.tookOver(L, second.elector.options.identity)).toBeGreaterThanOrEqual(sim.lastRenewal(L, successor.elector.options.identity) + FAST.leaseDurationMs);
  });

  describe('failures in bursts (client-go timings: 15 s / 10 s / 2 s): a new leader fails 1–3 s into its term, before it renewed', () => {
    const TIMING = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, fallbackAfterMs: 600_000 } as const;
    /** A first failure: the leader gone without releasing, the successor takes over once the term ran out; returns the new leader. */
    async function afterFirstFailover(releaseOnCancel: boolean) {
      const sim = await Sim.create({ config: { ackWindowMs: 5_000 } });
      const coord = sim.coordinator();
      const es = ['a', 'b', 'c'].map((id) => sim.elector(id, { leaseName: L, ...TIMING, releaseOnCancel: id === 'a' ? false : releaseOnCancel }));
      const first = await sim.until('a leader', () => leaders(es)[0], 60_000);
      await sim.run(4 * first.elector.renewIntervalMs);
      first.machine.kill(); // SIGKILL: no release, no withdrawal — the lease stays quiet until its term runs out
      const second = await sim.until('the next leader', () => leaders(es).find((e) => e !== first), 60_000);
      // the coordinator names the new term's successor — not the departed holder (its row, the oldest, ranks first)
      const heir = await sim.until('a successor for the new term', async () => {
        const l = (await sim.leases.read(L)).item;
        return l?.holderIdentity === second.elector.options.identity && l.successor ? es.find((e) => e.elector.options.identity === l.successor) : undefined;
      }, 5_000);
      expect(heir).not.toBe(first);
      return { sim, coord, es, second, heir: heir! };
    }

    it('a crash: the next successor, reading the young term every 150 ms, takes it within a read of its end', async () => {
      const { sim, second, heir } = await afterFirstFailover(false);
      await sim.run(1_500); // 1–3 s into its term, before its first renewal
      const term = (await sim.leases.read(L)).item!;
      expect(term.renewTime).toBe(term.acquireTime); // not renewed yet
      await second.stop(); // no release
      await sim.until('the heir leading', () => heir.elector.isLeader(), 60_000);
      const ranOut = sim.lastRenewal(L, second.elector.options.identity) + term.leaseDurationSeconds * 1000;
      const took = sim.tookOver(L, heir.elector.options.identity, ranOut - 1);
      expect(took).toBeGreaterThanOrEqual(ranOut);
      expect(took - ranOut).toBeLessThanOrEqual(SETTLING_READ_MS * 1.2 + TAKE_MS + 2 * RTT_MS); // not a 4–4.4 s poll
      expect((await sim.leases.read(L)).item!.fencingToken).toBeGreaterThan(term.fencingToken);
    });

    it('a graceful stop: a term not yet renewed is handed over at once (the heir reads it every 150 ms), not at the next renewal', async () => {
      const { sim, second, heir } = await afterFirstFailover(true);
      await sim.run(1_500);
      const stoppedAt = sim.clock.monotonic();
      await second.stop();
      await sim.until('the heir leading', () => heir.elector.isLeader(), 10_000);
      const started = sim.log.of('started', heir.elector.options.identity).at(-1)!.at;
      const stopped = sim.log.of('stopped', second.elector.options.identity).at(-1)!.at;
      expect(stopped - stoppedAt).toBeLessThanOrEqual(RTT_MS); // it did not wait for a renewal slot
      expect(started - stopped).toBeLessThanOrEqual(SETTLING_READ_MS * 1.2 + 10 * RTT_MS); // a settling read, and the candidate read, hand-off, read and confirmation round trips
      expect((await sim.leases.read(L)).item).toMatchObject({ holderIdentity: heir.elector.options.identity, electedBy: 'successor', lastHolderIdentity: second.elector.options.identity });
    });
  });

  it('five crashes in a row, a new process after each: every one is taken over by a live successor within tens of ms of the term’s end (issue 38: the rows of the processes killed before stay, and one was named)', async () => {
    const TIMING = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, fallbackAfterMs: 600_000, releaseOnCancel: false } as const;
    const sim = await Sim.create({ config: { ackWindowMs: 5_000 } });
    sim.coordinator(); // the streams, the timer and the tick, every 100 ms
    const es = ['w1', 'w2', 'w3'].map((id) => sim.elector(id, { leaseName: L, ...TIMING }));
    for (let crash = 1; crash <= 5; crash++) {
      // settled: a leader that renewed a few times, its successor named, no election (a liveness check) open
      const { leader, named } = await sim.until('a settled leader', async () => {
        const l = (await sim.leases.read(L)).item;
        const leader = leaders(es)[0];
        if (!leader || !l || l.holderIdentity !== leader.elector.options.identity || l.election || !l.successor) return undefined;
        if (sim.clock.monotonic() - sim.log.of('started', leader.elector.options.identity).at(-1)!.at < 3 * leader.elector.renewIntervalMs) return undefined;
        return { leader, named: l.successor };
      }, 120_000);
      const heir = es.find((e) => e.elector.options.identity === named)!;
      expect(heir.machine.clock.dead).toBe(false); // the successor is a live process, not a row left by an earlier crash
      await sim.run(137 * crash); // at another point of the renew cycle each time
      leader.machine.kill();
      const next = await sim.until('the next leader', () => leaders(es).find((e) => e !== leader), 60_000);
      const ranOut = sim.lastRenewal(L, leader.elector.options.identity) + TIMING.leaseDurationMs;
      const took = sim.tookOver(L, next.elector.options.identity, ranOut - 1);
      expect(next).toBe(heir);
      expect(took).toBeGreaterThanOrEqual(ranOut);
      expect(took - ranOut).toBeLessThanOrEqual(READ_AFTER_MS + 2 * CHASE_FIRST_MS + TAKE_MS + 4 * RTT_MS);
      es.push(sim.elector(`w${3 + crash}`, { leaseName: L, ...TIMING })); // a new process after each crash
    }
  });

  it('the successor reads just after each renewal it expects: a leader gone without releasing is replaced within tens of ms of its term’s end', async () => {
    const { sim, leader, successor } = await electedThenCoordinatorDown({ releaseOnCancel: false });
    await sim.run(3 * leader.elector.renewIntervalMs + 123); // gone at an arbitrary point of the renew cycle, a few renewals after the successor was named
    await leader.stop(); // releaseOnCancel false: the term has to run out
    await sim.until('the successor leading', () => successor.elector.isLeader(), 10_000);
    const lastTerm = sim.leaseWrites.filter((w) => w.name === L && w.item?.['holderIdentity'] === leader.elector.options.identity).at(-1)!.item!;
    const ranOut = sim.lastRenewal(L, leader.elector.options.identity) + (lastTerm['leaseDurationSeconds'] as number) * 1000;
    const took = sim.tookOver(L, successor.elector.options.identity);
    expect(took).toBeGreaterThanOrEqual(ranOut);
    // it saw the last renewal within a read of its landing (not up to a poll later), and woke for the term's end
    expect(took - ranOut).toBeLessThanOrEqual(READ_AFTER_MS + 2 * CHASE_FIRST_MS + TAKE_MS + 4 * RTT_MS); // its aim is within 100 ms of the landing once locked on
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
  });

  it('the successor killed before the leader: the next in line (the second successor) takes the lease a grace after the term ran out, with no coordinator: no tick, no election (issue 38)', async () => {
    const { sim, es, leader, successor } = await electedThenCoordinatorDown({ releaseOnCancel: false });
    const next = es.find((e) => e !== leader && e !== successor)!;
    successor.machine.kill(); // kill -9: its candidate row stays, and the lease still names it
    await sim.run(2 * leader.elector.renewIntervalMs + 321); // the leader renews on; the successor's death tells nobody
    leader.machine.kill();
    await sim.until('the next candidate leading', () => next.elector.isLeader(), 10_000);
    const lastTerm = sim.leaseWrites.filter((w) => w.name === L && w.item?.['holderIdentity'] === leader.elector.options.identity).at(-1)!.item!;
    const ranOut = sim.lastRenewal(L, leader.elector.options.identity) + (lastTerm['leaseDurationSeconds'] as number) * 1000;
    const took = sim.tookOver(L, next.elector.options.identity);
    expect(took).toBeGreaterThanOrEqual(ranOut);
    // the successor's grace, then as the successor itself would (it watched the renewals as closely): far under a tick (a minute on AWS) and an ack window
    expect(took - ranOut).toBeLessThanOrEqual(SECOND_SUCCESSOR_GRACE_MS + READ_AFTER_MS + 2 * CHASE_FIRST_MS + TAKE_MS + 4 * RTT_MS);
    expect((await sim.leases.read(L)).item).toMatchObject({ holderIdentity: next.elector.options.identity, electedBy: 'successor', lastHolderIdentity: leader.elector.options.identity });
  });

  it('the successor alive: it takes the lease, not the second successor (which gives it the grace)', async () => {
    const { sim, es, leader, successor } = await electedThenCoordinatorDown({ releaseOnCancel: false });
    const next = es.find((e) => e !== leader && e !== successor)!;
    await sim.run(2 * leader.elector.renewIntervalMs + 321);
    leader.machine.kill();
    await sim.until('the successor leading', () => successor.elector.isLeader(), 10_000);
    await sim.run(2 * SECOND_SUCCESSOR_GRACE_MS);
    expect(next.elector.isLeader()).toBe(false);
    expect(sim.leaseWrites.some((w) => w.by === next.machine.name && w.item?.['holderIdentity'] === next.elector.options.identity)).toBe(false);
  });

  it('the successor and the second successor gone too: the others do not take the lease, they report the vacancy (after their turns); no coordinator answers, so the one left takes it itself REPORT_ANSWER_MS after it saw the report, not at the three-term fallback', async () => {
    const { sim, es, leader, successor, held } = await electedThenCoordinatorDown({ releaseOnCancel: false }, ['a', 'b', 'c', 'd'], true);
    const second = es.find((e) => e.elector.options.identity === held.secondSuccessor)!;
    expect([leader, successor]).not.toContain(second);
    const other = es.find((e) => e !== leader && e !== successor && e !== second)!;
    await second.stop();
    await successor.stop();
    await leader.stop();
    const reported = await sim.until('a vacancy report', async () => (await sim.leases.read(L)).item?.vacancyReport, 10_000);
    expect(reported.by).toBe(other.elector.options.identity);
    // a running coordinator answers a report within seconds: until REPORT_ANSWER_MS nobody takes it
    await sim.during(REPORT_ANSWER_MS - 2 * POLL_MS, 'nobody leads while a coordinator could still answer', () => leaders(es).length === 0);
    await sim.until('the last worker leading', () => other.elector.isLeader(), 4 * POLL_MS);
    const l = (await sim.leases.read(L)).item!;
    expect(l).toMatchObject({ holderIdentity: other.elector.options.identity, electedBy: 'self' });
    expect(l.fencingToken).toBeGreaterThan(held.fencingToken);
    expect(sim.elapsed).toBeLessThan(60_000); // the fallback (fallbackAfterMs) would have waited a minute
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
  });

  it('a coordinator gone mid-election (a liveness check left open on the held row), then the holder and both successors: the election blocks every report, so the one left takes the lease its ack window and REPORT_ANSWER_MS after it saw the election, not at the fallback (seed 49950)', async () => {
    const { sim, es, leader, successor, held } = await electedThenCoordinatorDown({ releaseOnCancel: false }, ['a', 'b', 'c', 'd'], true);
    const second = es.find((e) => e.elector.options.identity === held.secondSuccessor)!;
    const other = es.find((e) => e !== leader && e !== successor && e !== second)!;
    // the coordinator's last write: a re-election that pings the candidates (the holder leads on), then it stopped
    const read = await sim.leases.read(L);
    const now = sim.clock.now();
    await sim.leases.write(read, { set: { election: { id: `${L}#check`, startedAt: now, deadline: now + ACK_MS, strategy: 'OldestEmulationVersion', holder: held.holderIdentity! } } });
    const opened = sim.clock.monotonic();
    for (const e of [second, successor, leader]) await e.stop();
    await sim.until('the last worker leading', () => other.elector.isLeader(), 60_000);
    const l = (await sim.leases.read(L)).item!;
    expect(l).toMatchObject({ holderIdentity: other.elector.options.identity, electedBy: 'self' });
    expect(l.fencingToken).toBeGreaterThan(held.fencingToken);
    const took = sim.tookOver(L, other.elector.options.identity);
    // not before the term ran out, nor before a running coordinator would have closed its election and answered
    expect(took).toBeGreaterThanOrEqual(sim.lastRenewal(L, leader.elector.options.identity) + held.leaseDurationSeconds * 1000);
    expect(sim.clock.monotonic() - opened).toBeGreaterThanOrEqual(ACK_MS + REPORT_ANSWER_MS);
    expect(sim.clock.monotonic() - opened).toBeLessThan(ACK_MS + REPORT_ANSWER_MS + held.leaseDurationSeconds * 1000); // the fallback (fallbackAfterMs) would wait a minute after the term's end
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
  });

  it('the same with the coordinator running: its choice leads (an election, or the successor it names once the first ones left), not a worker of its own accord', async () => {
    const sim = await Sim.create({ config: CONFIG });
    sim.coordinator();
    const es = ['a', 'b', 'c', 'd'].map((id) => sim.elector(id, { leaseName: L, fallbackAfterMs: 60_000, releaseOnCancel: false }));
    const leader = await sim.until('a leader', () => leaders(es)[0]);
    const held = await sim.until('both successors on the lease', async () => {
      const l = (await sim.leases.read(L)).item;
      return l?.successor && l.secondSuccessor && !l.election ? l : undefined;
    });
    for (const name of [held.secondSuccessor, held.successor, held.holderIdentity]) await es.find((e) => e.elector.options.identity === name)!.stop();
    const other = es.find((e) => ![held.secondSuccessor, held.successor, held.holderIdentity].includes(e.elector.options.identity))!;
    await sim.until('the last worker leading', () => other.elector.isLeader(), 60_000);
    // elected, or named successor by the running coordinator after the first ones left: never of its own accord
    expect(['coordinator', 'successor']).toContain((await sim.leases.read(L)).item?.electedBy);
  });
});

describe('a whole fleet stopped at once (a deploy sends SIGTERM to every worker)', () => {
  const CLIENT_GO = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;
  /** A hand-over's first term at these timings (a third of the lease): what a term handed to a worker that is gone would hold the lease for. */
  const HANDED_TERM_MS = Math.ceil(CLIENT_GO.leaseDurationMs / 3000) * 1000;
  /**
   * Three electors, one leading, its successor named: on the push path (a cancelled leader hands
   * over at once), or polling (no wakes: it leads on until its heir's next read). `followers`: a
   * leads (the oldest version) and b and c stand with these options.
   */
  async function fleet(push = true, followers?: Partial<LeaderElectorOptions>) {
    const sim = await Sim.create({ config: CONFIG });
    if (push) sim.pushBroker();
    const coord = sim.coordinator();
    const start = (id: string, opts: Partial<LeaderElectorOptions> = {}, versions?: [string, string]) => {
      const machine = sim.machine();
      return sim.elector(id, { leaseName: L, ...CLIENT_GO, ...(push ? { push: sim.pushFor(machine) } : {}), ...opts }, { machine, ...(versions ? { versions } : {}) });
    };
    const es = followers ? [start('a', {}, ['1.30.0', '1.31.0']), start('b', followers, ['1.31.0', '1.31.0']), start('c', followers, ['1.31.0', '1.31.0'])] : ['a', 'b', 'c'].map((id) => start(id));
    const leader = await sim.until('a leader', () => leaders(es)[0]);
    const held = await sim.until('a successor on the lease', async () => {
      const l = (await sim.leases.read(L)).item;
      return l?.successor && l.secondSuccessor && !l.election ? l : undefined;
    });
    await sim.run(3 * leader.elector.renewIntervalMs + 37); // a settled term: a few renewals
    return { sim, coord, es, leader, held, start };
  }

  it('the leader never leaves its term handed to an heir that is stopping too: a new process leads within an election, not after the handed term (5 s)', async () => {
    const { sim, coord, es, start } = await fleet();
    const stoppedAt = sim.clock.monotonic();
    for (const e of es) e.controller.abort(); // the same simulated instant
    const d = start('d'); // the new fleet
    await sim.settle(Promise.all(es.map((e) => e.done)), 'the old fleet to stop');
    // nothing the old fleet left holds the lease: released, or never handed
    const left = (await sim.leases.read(L)).item!;
    expect(['a', 'b', 'c']).not.toContain(left.holderIdentity);
    await sim.until('the new process leading', () => d.elector.isLeader(), 60_000);
    const took = sim.clock.monotonic() - stoppedAt;
    // an election (a tick opens it, d answers, a tick elects, d confirms), never a term waited out
    expect(took).toBeLessThan(HANDED_TERM_MS / 2);
    expect(sim.log.of('started', 'b')).toHaveLength(0);
    expect(sim.log.of('started', 'c')).toHaveLength(0);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
    const tokens = sim.log.of('started').map((e) => e.token!);
    expect(tokens).toEqual([...tokens].sort((x, y) => x - y));
    expect(coord.errors).toEqual([]);
    await d.stop();
  });

  it('the followers with releaseOnCancel: false: a term handed to a stopping follower is still released (it never led it), so the fleet does not wait it out either', async () => {
    const { sim, coord, es, leader, start } = await fleet(true, { releaseOnCancel: false });
    expect(leader.elector.options.identity).toBe('a');
    const stoppedAt = sim.clock.monotonic();
    for (const e of es) e.controller.abort(); // the same simulated instant
    const d = start('d');
    await sim.settle(Promise.all(es.map((e) => e.done)), 'the old fleet to stop');
    expect(['a', 'b', 'c']).not.toContain((await sim.leases.read(L)).item!.holderIdentity);
    await sim.until('the new process leading', () => d.elector.isLeader(), 60_000);
    console.log(`push fleet stop, followers releaseOnCancel false: d leads after ${sim.clock.monotonic() - stoppedAt} ms`);
    expect(sim.clock.monotonic() - stoppedAt).toBeLessThan(HANDED_TERM_MS / 2);
    expect(sim.log.of('started', 'b')).toHaveLength(0);
    expect(sim.log.of('started', 'c')).toHaveLength(0);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
    expect(coord.errors).toEqual([]);
    await d.stop();
  });

  // Without wakes a cancelled leader leads on until its heir's next read (its next renewal's slot:
  // up to a renewal interval, 6 s here); the heir stopping too, it looks whether the heir still stands.
  it('without wakes (followers poll), nobody left: the leader leading on for its heir finds it gone and releases within a look (HEIR_CHECK_FIRST_MS), not at the heir\'s next read (5.4 s)', async () => {
    const { sim, coord, es, leader, start } = await fleet(false);
    expect(leader.elector.renewIntervalMs).toBeGreaterThan(5 * HEIR_CHECK_FIRST_MS);
    const stoppedAt = sim.clock.monotonic();
    for (const e of es) e.controller.abort(); // the same simulated instant
    await sim.settle(Promise.all(es.map((e) => e.done)), 'the old fleet to stop');
    const stoppedAfter = sim.clock.monotonic() - stoppedAt;
    console.log(`no-push fleet stop, nobody left: the old leader done after ${stoppedAfter} ms`);
    // the refresh, a look at the heir's row, a read of the lease (nobody named: both followers declined), the release, the candidacy's withdrawal
    expect(stoppedAfter).toBeLessThan(HEIR_CHECK_FIRST_MS + 10 * RTT_MS);
    expect((await sim.leases.read(L)).item!.holderIdentity).toBeUndefined();
    const d = start('d'); // the new fleet, a moment later
    const startedAt = sim.clock.monotonic();
    await sim.until('the new process leading', () => d.elector.isLeader(), 60_000);
    expect(sim.clock.monotonic() - startedAt).toBeLessThan(HANDED_TERM_MS / 2); // an election, no term waited out
    expect(sim.log.of('started', 'b')).toHaveLength(0);
    expect(sim.log.of('started', 'c')).toHaveLength(0);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
    expect(coord.errors).toEqual([]);
    await d.stop();
  });

  it('without wakes, the new fleet already standing: the leader leads on for the new process the coordinator named, and the term passes to it at its read (a poll of leaderless time, no term waited out)', async () => {
    const { sim, coord, es, leader, start } = await fleet(false);
    const stoppedAt = sim.clock.monotonic();
    for (const e of es) e.controller.abort(); // the same simulated instant
    const d = start('d');
    await sim.settle(Promise.all(es.map((e) => e.done)), 'the old fleet to stop');
    await sim.until('the new process leading', () => d.elector.isLeader(), 60_000);
    const took = sim.clock.monotonic() - stoppedAt;
    const id = leader.elector.options.identity;
    const gap = sim.log.of('started', 'd')[0]!.at - sim.log.of('stopped', id).at(-1)!.at;
    console.log(`no-push fleet stop, d standing: d leads after ${took} ms, leaderless ${gap} ms`);
    expect((await sim.leases.read(L)).item).toMatchObject({ holderIdentity: 'd', electedBy: 'successor', lastHolderIdentity: id });
    expect(took).toBeLessThan(leader.elector.renewIntervalMs + SEEN_MS); // at d's read after the leader's next renewal slot
    expect(gap).toBeLessThan(SEEN_MS);
    expect(sim.log.of('started', 'b')).toHaveLength(0);
    expect(sim.log.of('started', 'c')).toHaveLength(0);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
    const tokens = sim.log.of('started').map((e) => e.token!);
    expect(tokens).toEqual([...tokens].sort((x, y) => x - y));
    expect(coord.errors).toEqual([]);
    await d.stop();
  });

  it('only the heir stops, the leader running on: the lease stops naming it, and the leader, stopped later, hands its term to the heir named then', async () => {
    const { sim, coord, es, leader, held } = await fleet();
    const heir = es.find((e) => e.elector.options.identity === held.successor)!;
    const next = es.find((e) => e !== heir && e !== leader)!;
    await heir.stop();
    await sim.until('the lease to name the next heir', async () => (await sim.leases.read(L)).item?.successorInstance === next.elector.instance, 10_000);
    expect(leader.elector.isLeader()).toBe(true);
    await sim.run(2 * leader.elector.renewIntervalMs + 123);
    const stoppedAt = sim.clock.monotonic();
    await leader.stop();
    await sim.until('the next heir leading', () => next.elector.isLeader(), 10_000);
    const l = (await sim.leases.read(L)).item!;
    expect(l).toMatchObject({ holderIdentity: next.elector.options.identity, electedBy: 'successor', lastHolderIdentity: leader.elector.options.identity });
    expect(sim.clock.monotonic() - stoppedAt).toBeLessThan(1_000); // handed over at once (push): no election, no term waited out
    expect(sim.log.of('started', heir.elector.options.identity)).toHaveLength(0);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
    expect(coord.errors).toEqual([]);
    await next.stop();
  });
});

describe('without the coordinator', () => {
  it("a term given with an election open whose acknowledgement fails is still recorded as led: stopped at its renew deadline and found still its own, it is taken again with a higher token, never led again with the same (seed 8702338)", async () => {
    const sim = await Sim.create({ config: CONFIG });
    const a = sim.elector('a', { leaseName: L, fallbackAfterMs: 600_000 });
    await sim.settle(a.elector.ready, 'a stands');
    // the coordinator's write (it is down after it): the term given to a, and at once a re-election on the held row
    const now = sim.clock.now();
    const token = nextFencingToken(now, 0);
    await sim.leases.write(await sim.leases.read(L), {
      set: {
        holderIdentity: 'a', holderInstance: a.elector.instance, fencingToken: token, termToken: token, acquireTime: now, renewTime: now, leaseDurationSeconds: 2, leaseTransitions: 1, electedBy: 'coordinator',
        election: { id: `${L}#re`, startedAt: now, deadline: now + ACK_MS, strategy: 'OldestEmulationVersion', holder: 'a' },
      },
    });
    // its acknowledgement (the candidacy's renewal) cannot be made
    const unavailable = () => Object.assign(new Error('injected: service unavailable'), { name: 'ServiceUnavailable' });
    const onCandidates = (req: { input: unknown }) => (req.input as { TableName?: string }).TableName === sim.names.candidates;
    a.machine.fault = (req) => (req.operation === 'UpdateItem' && onCandidates(req) ? unavailable() : undefined);
    await sim.until('a leads the term given', () => a.elector.isLeader() && a.elector.fencingToken === token);
    await sim.run(FAST.retryPeriodMs); // the acknowledgement fails
    // then its renewals fail too, until its renew deadline stops the term
    a.machine.fault = (req) => (req.operation === 'UpdateItem' ? unavailable() : undefined);
    await sim.until('a stops', () => !a.elector.isLeader(), 10_000);
    expect(sim.log.of('stopped', 'a').at(-1)).toMatchObject({ reason: 'renewDeadline', token });
    expect((await sim.leases.read(L)).item).toMatchObject({ holderIdentity: 'a', fencingToken: token });
    a.machine.fault = undefined;
    await sim.until('a leads again', () => a.elector.isLeader(), 10_000);
    // before the fix: confirmed again with the same token (its record of terms led had missed it)
    expect(sim.log.of('started', 'a').map((x) => x.token)).toEqual([token, expect.any(Number)]);
    expect(a.elector.fencingToken).toBeGreaterThan(token);
    await a.stop();
  });

  it('fallback: a lease vacant for fallbackAfter is acquired directly (electedBy self), by one worker; a row nobody has seen waits out the session fallback', async () => {
    const sim = await Sim.create({ config: CONFIG });
    const FALLBACK_MS = 1_500;
    // no row at all: a holder on a session of a row deleted before these workers started would lead
    // on until its backstop read, which the session fallback waits out (seed 1666515530: 8.6 s of
    // two leaders when a follower restarted after the delete took it at the three-term fallback)
    const waitMs = Math.max(FALLBACK_MS, sessionFallbackMs({ sessionBackstopMs: SESSION_QUIET_LEASES * FAST.leaseDurationMs, ...FAST }));
    expect(waitMs).toBeGreaterThan(FALLBACK_MS);
    const errors = new Map<string, Error[]>(['a', 'b', 'c'].map((id) => [id, []]));
    const es = ['a', 'b', 'c'].map((id) => sim.elector(id, { leaseName: L, fallbackAfterMs: FALLBACK_MS }, { errors: errors.get(id)! }));
    const leader = await sim.until('a self-elected leader', () => leaders(es)[0], 4 * waitMs);
    // vacant from each worker's first poll: the fallback, then at most a poll to act on it
    expect(sim.elapsed).toBeGreaterThanOrEqual(waitMs);
    expect(sim.elapsed).toBeLessThanOrEqual(waitMs + POLL_MS + 10 * RTT_MS);
    const l = (await sim.leases.read(L)).item!;
    expect(l).toMatchObject({ holderIdentity: leader.elector.options.identity, electedBy: 'self', fencingToken: nextFencingToken(undefined, l.acquireTime!) });
    await sim.during(5 * FAST.leaseDurationMs, 'one leader', () => leaders(es).length === 1);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
    // the taker says so, once: no coordinator elected anyone (before: nothing was told, the deployment's fault hidden)
    const id = leader.elector.options.identity;
    expect(errors.get(id)).toHaveLength(1);
    expect(errors.get(id)![0]).toBeInstanceOf(NoCoordinatorError);
    expect(errors.get(id)![0]).toMatchObject({ leaseName: L, identity: id });
    expect((errors.get(id)![0] as NoCoordinatorError).vacantMs).toBeGreaterThanOrEqual(waitMs);
    expect(errors.get(id)![0]!.message).toMatch(new RegExp(`^LeaderElector "${id}" of lease "${L}" took the lease itself after it stood vacant \\d+\\.\\d s with no coordinator electing anyone \\(the fallback\\): its term was not chosen by versions or priority\\. Check that Conclave's coordinator runs on these tables`));
    for (const other of es.filter((e) => e !== leader)) expect(errors.get(other.elector.options.identity)).toEqual([]);
  });

  it('a vacant row whose election the lease stream held (a term on a session ended, its mark not yet written): no fallback takes it before the hold ends', async () => {
    const sim = await Sim.create({ config: CONFIG });
    // the row as holdUnmarked leaves it: vacant, successors unnamed, the election held unmarkedHoldMs
    const holdMs = unmarkedHoldMs(FAST.leaseDurationMs / 1000);
    const now = sim.clock.now();
    await sim.leases.write(await sim.leases.read(L), {
      set: { leaseDurationSeconds: FAST.leaseDurationMs / 1000, leaseTransitions: 1, fencingToken: nextFencingToken(now - 60_000, 0), lastHolderIdentity: 'z', renewTime: now, election: { id: `${L}#held`, startedAt: now, deadline: now + holdMs, notBefore: now + holdMs, strategy: 'OldestEmulationVersion', departed: 'z' } },
    });
    const from = sim.clock.monotonic();
    // started since: it never saw the term held, so its own fallback is three terms, shorter than the hold
    const b = sim.elector('b', { leaseName: L });
    expect(3 * FAST.leaseDurationMs).toBeLessThan(holdMs);
    await sim.until('b leads', () => b.elector.isLeader(), 4 * holdMs);
    // before: taken at its three-term fallback, while the unmarked holder could still lead
    expect(sim.clock.monotonic() - from).toBeGreaterThanOrEqual(holdMs);
    expect((await sim.leases.read(L)).item).toMatchObject({ holderIdentity: 'b', electedBy: 'self' });
    await b.stop();
  });

  it('a row the tick created again over a deleted one, its election waiting for the lease stream (down): a worker started since waits out the session fallback, not three terms', async () => {
    const sim = await Sim.create({ config: CONFIG });
    // the deleted term may have been on a session, whose holder hears of the delete only from the
    // stream's mark or its backstop read; the row created again tells nothing of it
    const now = sim.clock.now();
    await sim.leases.write(await sim.leases.read(L), {
      set: { leaseDurationSeconds: FAST.leaseDurationMs / 1000, leaseTransitions: 0, fencingToken: 0, election: { id: `${L}#1`, startedAt: now, deadline: now + ACK_MS, strategy: 'OldestEmulationVersion', awaitsStream: true } },
    });
    const from = sim.clock.monotonic();
    const b = sim.elector('b', { leaseName: L });
    const waitMs = sessionFallbackMs({ sessionBackstopMs: SESSION_QUIET_LEASES * FAST.leaseDurationMs, ...FAST });
    expect(3 * FAST.leaseDurationMs).toBeLessThan(waitMs);
    await sim.until('b leads', () => b.elector.isLeader(), 4 * waitMs);
    // before: taken at its three-term fallback, while a deleted term's holder on a session could still lead
    expect(sim.clock.monotonic() - from).toBeGreaterThanOrEqual(waitMs);
    expect((await sim.leases.read(L)).item).toMatchObject({ holderIdentity: 'b', electedBy: 'self' });
    await b.stop();
  });

  it('a process frozen between its acquisition landing and reading the answer, past its renew deadline, never leads that term: it gives it back', async () => {
    const sim = await Sim.create({ config: CONFIG });
    const m = sim.machine();
    let frozenAt: number | undefined;
    m.fault = (req) => {
      const input = req.input as { TableName?: string };
      if (frozenAt === undefined && input.TableName === sim.names.leases && (req.operation === 'PutItem' || req.operation === 'UpdateItem')) {
        frozenAt = sim.elapsed;
        m.clock.pause(); // the write still lands; its answer waits for the process to run again
      }
      return undefined;
    };
    const e = sim.elector('f', { leaseName: L, mode: 'NoCoordination' }, { machine: m });
    const held = await sim.until('the frozen worker’s term on the lease', async () => (await sim.leases.read(L)).item?.holderIdentity === 'f' && (await sim.leases.read(L)).item);
    await sim.run(FAST.renewDeadlineMs + 500);
    m.clock.resume();
    await sim.until('the term given back', async () => (await sim.leases.read(L)).item?.holderIdentity === undefined, 5_000);
    expect(frozenAt).toBeDefined();
    expect(sim.log.of('started', 'f')).toEqual([]); // onStartedLeading never ran for the stale term
    expect(e.elector.isLeader()).toBe(false);
    expect((await sim.leases.read(L)).item).toMatchObject({ lastHolderIdentity: 'f', fencingToken: held.fencingToken });
    // and it leads a fresh term afterwards, as any follower would
    await sim.until('f leads a new term', () => e.elector.isLeader(), 10_000);
    expect((await sim.leases.read(L)).item!.fencingToken).toBeGreaterThan(held.fencingToken);
    await e.stop();
  });

  it('NoCoordination electors beside coordinated ones never make two holders', async () => {
    const sim = await Sim.create({ config: CONFIG });
    const coord = sim.coordinator();
    const es = [
      sim.elector('plain-1', { leaseName: L, mode: 'NoCoordination', releaseOnCancel: false }),
      sim.elector('coord-1', { leaseName: L, releaseOnCancel: false }),
      sim.elector('plain-2', { leaseName: L, mode: 'NoCoordination', releaseOnCancel: false }),
      sim.elector('coord-2', { leaseName: L, releaseOnCancel: false }),
    ];
    const live = [...es];
    // kill the leader twice, whoever it is, once it has led for two terms with the others polling;
    // the rest must agree on one holder at a time
    for (let round = 0; round < 2; round++) {
      await sim.until('a leader', () => leaders(live)[0], 20_000);
      await sim.run(2 * FAST.leaseDurationMs);
      const leader = leaders(live)[0]!;
      live.splice(live.indexOf(leader), 1);
      await leader.stop();
    }
    await sim.until('a third leader', () => leaders(live)[0], 20_000);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
    const tokens = sim.log.of('started').map((e) => e.token!);
    expect(tokens.length).toBeGreaterThanOrEqual(3);
    expect(new Set(tokens).size).toBe(tokens.length);
    expect(coord.errors).toEqual([]);
  });
});

describe('a broken lease row (one the schema refuses)', () => {
  it('a follower never takes it and keeps polling, reporting each poll to onError; once the row is repaired it leads', async () => {
    const sim = await Sim.create({ config: CONFIG });
    // A vacant lease with a 0-second term, written by hand: a NoCoordination worker would take a vacant lease at once.
    await sim.client.send(new PutItemCommand({ TableName: sim.names.leases, Item: marshall({ name: L, leaseDurationSeconds: 0, leaseTransitions: 0, fencingToken: 4, revision: 2 }) }));
    const errors: Error[] = [];
    sim.elector('plain', { leaseName: L, mode: 'NoCoordination' }, { errors });
    sim.elector('coord', { leaseName: L, fallbackAfterMs: 300 }, { errors });
    await sim.until('several polls reported', () => errors.filter((e) => e instanceof ValidationError).length >= 6, 10_000);
    await sim.run(5 * FAST.leaseDurationMs); // well past the fallback
    expect(errors.every((e) => e instanceof ValidationError && e.fields.includes('leaseDurationSeconds'))).toBe(true);
    expect(sim.log.of('started')).toEqual([]);
    const raw = await sim.client.send(new GetItemCommand({ TableName: sim.names.leases, Key: marshall({ name: L }) }));
    expect(unmarshall(raw.Item!)).toMatchObject({ leaseDurationSeconds: 0, fencingToken: 4, revision: 2 }); // nobody wrote over it

    // repaired in place (the field set right): the polls pick it up; the term's token continues from the row's.
    // A refused row is read again every retry period (jittered up to a fifth), never on a doubled backoff:
    // the repair is seen within one (seed 18091 --regions: 5.8 s after an operator's repair)
    await sim.client.send(new PutItemCommand({ TableName: sim.names.leases, Item: marshall({ name: L, leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 4, revision: 3 }) }));
    const repairedAt = sim.clock.monotonic();
    const started = await sim.until('a leader after the repair', () => sim.log.of('started')[0], 10_000);
    expect(started.token).toBeGreaterThan(4);
    expect(started.at - repairedAt).toBeLessThanOrEqual(FAST.retryPeriodMs * (1 + RETRY_JITTER) + 4 * RTT_MS);
  });

  it('a leader whose row turns broken stops acting exactly at its renew deadline, keeps running, and reports it', async () => {
    const sim = await Sim.create();
    const errors: Error[] = [];
    const e = sim.elector('solo', { leaseName: L, mode: 'NoCoordination', releaseOnCancel: false }, { errors });
    await sim.until('leading', () => e.elector.isLeader());
    await sim.run(FAST.retryPeriodMs); // a renewal
    const row = unmarshall((await sim.client.send(new GetItemCommand({ TableName: sim.names.leases, Key: marshall({ name: L }) }))).Item!);
    await sim.client.send(new PutItemCommand({ TableName: sim.names.leases, Item: marshall({ ...row, leaseTransitions: -1 }) }));
    const brokenAt = sim.clock.monotonic();
    const stopped = await sim.until('stepped down', () => sim.log.of('stopped', 'solo')[0], 10_000);
    expect(stopped.reason).toBe('renewDeadline');
    const lastRenewal = e.machine.sent.filter((r) => r.operation === 'UpdateItem' && (r.input as { TableName: string }).TableName === sim.names.leases && r.at + LATENCY_MS <= brokenAt).at(-1)!; // applied before the row broke
    expect(stopped.at).toBe(lastRenewal.at + FAST.renewDeadlineMs);
    const before = errors.length;
    await sim.run(20 * FAST.retryPeriodMs);
    // still polling after stepping down, with backoff: a poll, and a report, at most every retry period
    const reported = errors.slice(before).filter((x) => x instanceof ValidationError).length;
    expect(reported).toBeGreaterThanOrEqual(4);
    expect(reported).toBeLessThanOrEqual(20);
    expect(e.elector.isLeader()).toBe(false);
  });
});
