/**
 * LeaseCandidate called directly on a clock stepped by hand, over the DynamoDB model
 * (sim/harness.ts; the candidate store's DynamoDB behaviour is held to DynamoDB Local by
 * test/stores and test/sim/contract.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock, simulatedClock } from '../../lib/clock.js';
import { LeaseCandidate } from '../../lib/sdk/candidate.js';
import { resolveLocation } from '../../lib/sdk/platform.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { reconcileAll } from '../../lib/coordinator/reconcile.js';
import type { TestTables } from '../support.js';
import { Sim, T0, modelTables, type Machine } from '../../sim/harness.js';

let t: TestTables;
let store: CandidateStore;
// stepped by hand; its timers (the renewal interval) are a simulated clock's nobody runs
const clock = manualClock(T0, simulatedClock({ start: T0 }));
beforeAll(async () => {
  t = await modelTables();
  store = new CandidateStore(t.client, t.names.candidates);
});
afterAll(() => t.drop());

const make = (over: Record<string, unknown> = {}, instance?: string) =>
  new LeaseCandidate({ leaseName: 'jobs', name: 'w1', tables: t.names, client: t.client, clock, clockSync: 'none', binaryVersion: '1.31.0', emulationVersion: '1.30.0', ...(instance ? { instance } : {}), ...over } as never);

/** Runs `c` until stop(); `row` is its first write. */
async function stand(c: LeaseCandidate) {
  const controller = new AbortController();
  const done = c.run(controller.signal);
  const row = await c.ready;
  return {
    row,
    async stop() {
      controller.abort();
      await done;
    },
  };
}

describe('LeaseCandidate', () => {
  it.each([
    { over: { emulationVersion: '1.32.0' }, field: 'emulationVersion' },
    { over: { binaryVersion: '1.31' }, field: 'binaryVersion' },
    { over: { emulationVersion: 'v1.30.0' }, field: 'emulationVersion' },
    // a priority is an operator's pin: not an option a worker has
    { over: { priority: 10 }, field: 'priority' },
    { over: { name: '' }, field: 'name' },
    { over: { leaseName: '' }, field: 'leaseName' },
    { over: { renewIntervalMs: 10 }, field: 'renewIntervalMs' },
    // renewed less often than twice in the coordinator's default stale age (30 min), a live worker’s row would be collected; beyond 2^31 ms Node fires a timer at once
    { over: { renewIntervalMs: 15 * 60_000 + 1 }, field: 'renewIntervalMs' },
    { over: { claimWindowMs: 25 * 86_400_000 }, field: 'claimWindowMs' },
    // longer than a row's `identity` may be (512): run() would retry its refused write forever
    { over: { instance: 'x'.repeat(600) }, field: 'instance' },
    // issue 18: where it runs
    { over: { location: { zone: 'US-EAST-1A' } }, field: 'location.zone' },
    { over: { location: { zone: 'us-east-1a', region: 'eu-west-1' } }, field: 'location.region' },
    { over: { location: { zone: 'us-east-1a', rack: 'r1' } }, field: 'location.rack' },
  ])('rejects bad configuration at construction: $field', ({ over, field }) => {
    let err: unknown;
    try {
      make(over);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).fields).toEqual([field]);
  });

  it('registers, renews (the ack), keeps its creation time across a restart, resets an operator’s priority, and removes its row once its signal aborts', async () => {
    const c1 = make({}, 'w1_first');
    const first = await stand(c1);
    expect(first.row).toMatchObject({ leaseName: 'jobs', name: 'w1', binaryVersion: '1.31.0', emulationVersion: '1.30.0', preferredStrategies: ['OldestEmulationVersion'], identity: 'w1_first', renewTime: clock.now(), createdAt: clock.now() });
    const created = first.row.createdAt;

    clock.advance(1_000);
    await store.ping('jobs', 'w1', clock.now());
    clock.advance(100);
    await c1.renew(); // the acknowledgement of the election
    const acked = (await store.read('jobs', 'w1')).item!;
    expect(acked.renewTime).toBeGreaterThanOrEqual(acked.pingTime!);

    // an operator pins it
    await store.write(await store.read('jobs', 'w1'), { set: { priority: 50 } });
    await c1.renew();
    expect((await store.read('jobs', 'w1')).item?.priority).toBe(50); // renewals leave it alone

    // the process restarts (a new instance, a new binary): creation time kept, the pin reset — the
    // pinned row is deleted and written anew, since a worker never names priority. Long after: the
    // row is stale, so taken over at once (a fresh one is asked for first: tests on simulated time below)
    clock.advance(31 * 60_000);
    const second = await stand(make({ binaryVersion: '1.32.0' }, 'w1_second'));
    expect(second.row).toMatchObject({ identity: 'w1_second', binaryVersion: '1.32.0', createdAt: created });
    expect(second.row.priority).toBeUndefined();

    // the old instance's stop does not remove the new instance's row
    await first.stop();
    expect((await store.read('jobs', 'w1')).item?.identity).toBe('w1_second');
    await second.stop();
    expect((await store.read('jobs', 'w1')).item).toBeUndefined();
    // after run() a renewal writes nothing
    await c1.renew();
    expect((await store.read('jobs', 'w1')).item).toBeUndefined();
  });

  it('renews its row on its own every 10 minutes by default: twice before its row would be stale (30 min), and half as often as KEP-4355’s 5 (issue 38: most of what a quiet session-held lease costs)', async () => {
    const sim = simulatedClock({ start: T0 });
    const c = new LeaseCandidate({ leaseName: 'jobs', name: 'w9', tables: t.names, client: t.client, clock: sim, clockSync: 'none', binaryVersion: '1.31.0', emulationVersion: '1.30.0' });
    expect(c.options.renewIntervalMs).toBe(10 * 60_000);
    const s = await stand(c);
    const renewedAt = async () => (await store.read('jobs', 'w9')).item!.renewTime;
    expect(await renewedAt()).toBe(T0);
    await sim.run(10 * 60_000 - 1);
    expect(await renewedAt()).toBe(T0); // not at 5 minutes
    await sim.run(1);
    expect(await renewedAt()).toBe(T0 + 10 * 60_000);
    await sim.run(10 * 60_000);
    expect(await renewedAt()).toBe(T0 + 20 * 60_000);
    await s.stop();
  });

  it('a row collected while the worker lived (a long pause) is registered again at the next renewal', async () => {
    const c = make({ name: 'w2' }, 'w2_a');
    const s = await stand(c);
    await store.delete(await store.read('jobs', 'w2'));
    await c.renew();
    expect((await store.read('jobs', 'w2')).item).toMatchObject({ identity: 'w2_a' });
    await s.stop();
  });

  it('carries its location: the one it was given, else its platform’s zone and that zone’s region; a restart without one removes it', async () => {
    const given = await stand(make({ name: 'w3', location: { zone: 'us-east-1a' } }, 'w3_a'));
    expect(given.row.location).toEqual({ zone: 'us-east-1a', region: 'us-east-1' });
    await given.stop();

    const detected = make({ name: 'w3' }, 'w3_b');
    detected.setPlatform({ kind: 'ecs', id: 'arn:aws:ecs:eu-west-1:123456789012:task/c/abc', cluster: 'c', availabilityZone: 'eu-west-1b' });
    const d = await stand(detected);
    expect(d.row.location).toEqual({ zone: 'eu-west-1b', region: 'eu-west-1' });
    await d.stop();

    const regionOnly = await stand(make({ name: 'w3', location: { region: 'ap-south-1' } }, 'w3_c'));
    expect(regionOnly.row.location).toEqual({ region: 'ap-south-1' });
    await regionOnly.stop();

    // a row left by an earlier start-up with a location (a crash: not withdrawn), stale now …
    await stand(make({ name: 'w4', location: { zone: 'us-east-1a' } }, 'w4_a'));
    clock.advance(31 * 60_000);
    // … taken over by a start-up that knows none: the old location does not outlive it
    const none = await stand(make({ name: 'w4' }, 'w4_b'));
    expect(none.row.location).toEqual(resolveLocation(undefined, undefined)); // AWS_REGION's region, if the test runs with one
    await none.stop();
  });
});

describe('resolveLocation: what the candidate row says', () => {
  const ecs = (zone: string) => ({ kind: 'ecs' as const, id: 'arn:aws:ecs:us-east-1:123456789012:task/c/1', cluster: 'c', availabilityZone: zone });
  it.each([
    { name: 'nothing known', stated: undefined, platform: undefined, env: {}, want: undefined },
    { name: 'AWS_REGION alone', stated: undefined, platform: undefined, env: { AWS_REGION: 'eu-west-1' }, want: { region: 'eu-west-1' } },
    { name: 'AWS_DEFAULT_REGION when AWS_REGION is unset', stated: undefined, platform: undefined, env: { AWS_DEFAULT_REGION: 'eu-west-2' }, want: { region: 'eu-west-2' } },
    { name: 'a detected zone and its region (over AWS_REGION)', stated: undefined, platform: ecs('us-east-1c'), env: { AWS_REGION: 'eu-west-1' }, want: { zone: 'us-east-1c', region: 'us-east-1' } },
    { name: 'a local zone name: the region from AWS_REGION', stated: undefined, platform: ecs('local-1a'), env: { AWS_REGION: 'local' }, want: { zone: 'local-1a', region: 'local' } },
    { name: 'a given zone over the detected one', stated: { zone: 'us-east-1a' }, platform: ecs('us-east-1c'), env: {}, want: { zone: 'us-east-1a', region: 'us-east-1' } },
    { name: 'a given region keeps a detected zone inside it', stated: { region: 'us-east-1' }, platform: ecs('us-east-1c'), env: {}, want: { zone: 'us-east-1c', region: 'us-east-1' } },
    { name: 'a given region drops a detected zone outside it (what it was told wins)', stated: { region: 'eu-west-1' }, platform: ecs('us-east-1c'), env: {}, want: { region: 'eu-west-1' } },
    { name: 'an AWS_REGION that is no region name is ignored', stated: undefined, platform: undefined, env: { AWS_REGION: 'Not A Region' }, want: undefined },
  ])('$name', ({ stated, platform, env, want }) => {
    expect(resolveLocation(stated, platform, env)).toEqual(want);
  });
});

/** Found by a review of LeaseCandidate (2026-11-30); each fails without its fix. */
describe('LeaseCandidate, on simulated time', () => {
  const V = { binaryVersion: '1.31.0', emulationVersion: '1.30.0' } as const;
  const cand = (sim: Sim, m: Machine, name: string, over: object = {}) => new LeaseCandidate({ leaseName: 'jobs', name, tables: sim.names, client: m.client, clock: m.clock, ...V, ...over });
  const throttled = () => Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException', $fault: 'client', $metadata: { httpStatusCode: 400 } });

  it.each(['deleted by an operator', 'throttled once, and retried by the SDK after the withdrawal'] as const)('a renewal in flight as its signal aborts writes no row after run() resolved (%s)', async (how) => {
    const sim = await Sim.create();
    const m = sim.machine();
    const c = cand(sim, m, 'w1', { renewIntervalMs: 1_000 });
    const stop = new AbortController();
    const done = c.run(stop.signal);
    await sim.settle(c.ready);
    if (how === 'deleted by an operator') await sim.candidates.delete(await sim.candidates.read('jobs', 'w1'));
    else m.fault = (r) => (r.operation === 'UpdateItem' && r.attempt === 1 ? throttled() : undefined);
    const from = sim.clock.monotonic();
    await sim.until('the timer renewal is sent', () => m.sent.some((r) => r.at > from && r.operation === 'UpdateItem'), 5_000);
    await sim.run(5);
    stop.abort();
    await sim.settle(done);
    expect((await sim.candidates.read('jobs', 'w1')).item).toBeUndefined();
    await sim.run(1_000);
    // before the fix: the renewal found the row gone and registered it again, after run() had resolved
    expect((await sim.candidates.read('jobs', 'w1')).item).toBeUndefined();
  });

  // a review: the first renewal after a suspend was stamped on the estimate of DynamoDB's time carried over the sleep on the
  // monotonic clock, 40 minutes behind: stale at once, the tick collected the live candidate's row, and healthy() said true
  it("clockSync 'server', a suspend of 40 minutes (past a row's 30-minute staleness): healthy() is false on waking and renews at once, stamped with DynamoDB's time, so the tick collects nothing", async () => {
    const sim = await Sim.create();
    const m = sim.machine();
    m.clock.monotonicTimers = true; // as Node's: its renewal timer did not count the sleep
    const errors: Error[] = [];
    const c = cand(sim, m, 'laptop', { onError: (e: Error) => errors.push(e) });
    const stop = new AbortController();
    const done = c.run(stop.signal);
    await sim.settle(c.ready);
    await sim.run(5 * 60_000);
    const before = (await sim.candidates.read('jobs', 'laptop')).item!;
    m.clock.pause();
    const sleptAt = sim.clock.monotonic();
    await sim.run(40 * 60_000);
    m.clock.lostMs += sim.clock.monotonic() - sleptAt;
    m.clock.resume();
    expect(c.healthy()).toBe(false); // asked: its row may be gone, and it renews now, not at its timer's next turn (5 minutes on)
    const after = await sim.until('a renewal after waking', async () => {
      const r = (await sim.candidates.read('jobs', 'laptop')).item;
      return r !== undefined && r.revision > before.revision ? r : undefined;
    }, 10_000);
    expect(Math.abs(sim.clock.now() - after.renewTime)).toBeLessThan(2_000);
    expect((await sim.settle(reconcileAll(sim.deps))).collectedCandidates).toEqual([]);
    expect((await sim.candidates.read('jobs', 'laptop')).item?.identity).toBe(c.instance);
    expect(c.healthy()).toBe(true);
    expect(errors).toEqual([]);
    stop.abort();
    await sim.settle(done);
  });

  it("a row another start-up of the same name took over is not renewed: it is reported, and healthy() turns false", async () => {
    const sim = await Sim.create();
    const errors: Error[] = [];
    const first = cand(sim, sim.machine(), 'w2', { onError: (e: Error) => errors.push(e) });
    void first.run(new AbortController().signal);
    await sim.settle(first.ready);
    const second = cand(sim, sim.machine(), 'w2'); // another process: a standalone candidate answers no claim, so it is taken over after claimWindowMs
    void second.run(new AbortController().signal);
    await sim.settle(second.ready);
    await sim.run(1_000);
    const before = (await sim.candidates.read('jobs', 'w2')).item!;
    await sim.settle(first.renew()); // its timer, or its elector answering a ping
    const after = (await sim.candidates.read('jobs', 'w2')).item!;
    expect(after.identity).toBe(second.instance);
    expect(after.renewTime).toBe(before.renewTime); // before the fix: renewed by the first start-up
    expect(first.healthy()).toBe(false);
    expect(errors.some((e) => /registered by another start-up .*two workers share one name/.test(e.message))).toBe(true);
  });

  it('a standalone candidate reads no lease, so it answers no claim: a second process under its name takes the row over after claimWindowMs, and the first learns it at its next renewal (documented: give each process a unique name)', async () => {
    const sim = await Sim.create();
    await sim.leases.write(await sim.leases.read('jobs'), { set: { leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 0 } }); // a lease row: the newcomer puts its claim there
    const errors: Error[] = [];
    const first = cand(sim, sim.machine(), 'w3', { onError: (e: Error) => errors.push(e) });
    void first.run(new AbortController().signal);
    await sim.settle(first.ready);
    const second = cand(sim, sim.machine(), 'w3', { claimWindowMs: 15_000 });
    const outcome: string[] = [];
    void second.run(new AbortController().signal).catch((e: Error) => outcome.push(e.name));
    const from = sim.clock.monotonic();
    await sim.settle(second.ready); // not refused: nobody answered the claim
    expect(sim.clock.monotonic() - from).toBeGreaterThanOrEqual(15_000);
    expect(outcome).toEqual([]);
    expect((await sim.leases.read('jobs')).item?.identityClaim).toMatchObject({ name: 'w3', instance: second.instance, of: first.instance });
    expect((await sim.candidates.read('jobs', 'w3')).item?.identity).toBe(second.instance);
    expect(first.healthy()).toBe(true); // until its next renewal
    await sim.settle(first.renew());
    expect(first.healthy()).toBe(false);
    expect(errors.some((e) => /registered by another start-up .*two workers share one name/.test(e.message))).toBe(true);
  });

  // chaos schedule 11-0 (2026-12-01, load 20 on 2 cores): w3 was killed and restarted; its new start-up
  // was refused as a duplicate and never stood again (lostCandidate), the settle never converged
  it.each([
    { landed: 'a renewal the killed start-up sent before it died, landing late', stampedMs: -3_000, refused: false },
    { landed: 'a live start-up answering the claim', stampedMs: 200, refused: true },
  ])('a restart whose claim meets $landed: refused $refused', async ({ stampedMs, refused }) => {
    const sim = await Sim.create();
    await sim.leases.write(await sim.leases.read('jobs'), { set: { leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 0 } }); // a lease row: the newcomer puts its claim there
    // the first start-up registers, then is killed (it does nothing more: its timer is 15 min away)
    const first = cand(sim, sim.machine(), 'w3', { renewIntervalMs: 15 * 60_000 });
    void first.run(new AbortController().signal);
    await sim.settle(first.ready);
    await sim.run(5_000); // killed, restarted
    const second = cand(sim, sim.machine(), 'w3', { claimWindowMs: 15_000 });
    const outcome: string[] = [];
    void second.run(new AbortController().signal).catch((e: Error) => outcome.push(e.name));
    const claim = await sim.until('the claim is put', async () => (await sim.leases.read('jobs')).item?.identityClaim, 5_000);
    // what lands now: stamped 3 s before the claim (sent before the kill, on a DynamoDB slow to answer), or after it (an answer)
    expect(await sim.candidates.renew('jobs', 'w3', claim.at + stampedMs, undefined, undefined, first.instance)).toBe(true);
    await sim.until('decided', () => outcome.length > 0 || (second.healthy() ? 'stands' : undefined), 30_000);
    if (refused) {
      expect(outcome).toEqual(['DuplicateIdentityError']);
      expect((await sim.candidates.read('jobs', 'w3')).item?.identity).toBe(first.instance);
    } else {
      // before the fix: refused (DuplicateIdentityError) by the dead start-up's late renewal, and never stood again
      expect(outcome).toEqual([]);
      expect((await sim.candidates.read('jobs', 'w3')).item?.identity).toBe(second.instance);
    }
  });

  it('two electors started together under one identity: one is refused (DuplicateIdentityError), the other stands', async () => {
    const sim = await Sim.create({ config: { ackWindowMs: 5_000, electedLeaseDurationSeconds: 5 } });
    sim.coordinator({ tickEveryMs: 1_000 });
    const T = { leaseName: 'job', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
    sim.elector('a', T);
    await sim.until('a lease row', async () => (await sim.leases.read('job')).item, 60_000);
    const errors: Error[] = [];
    const both = [sim.elector('b', T, { errors }), sim.elector('b', T, { errors })];
    const outcomes: string[] = [];
    for (const e of both) void e.done.then(() => outcomes.push('resolved'), (x: Error) => outcomes.push(x.name));
    await sim.until('one refused', () => outcomes.length > 0, 60_000);
    // before the fix: both stood on one row, and nothing was told
    expect(outcomes).toEqual(['DuplicateIdentityError']);
    const standing = both.find((e) => e.elector.candidate?.healthy())!;
    expect((await sim.candidates.read('job', 'b')).item?.identity).toBe(standing.elector.instance);
    await sim.run(60_000);
    expect(outcomes).toEqual(['DuplicateIdentityError']);
  });

  // a review: with no lease row (no coordinator yet, a new lease, a row an operator deleted) the
  // newcomer put no claim and waited for no answer: it took the live start-up's row at once, its
  // run() did not reject, and the first was told nothing until its next renewal (10 minutes on)
  describe('no lease row', () => {
    // fallbackAfterMs: no fallback writes a lease row during the test
    const T = { leaseName: 'job', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, fallbackAfterMs: 3_600_000 };
    const noLeaseRow = async (sim: Sim) => expect((await sim.leases.read('job')).item).toBeUndefined();

    it('a second process under a live elector’s identity is refused (DuplicateIdentityError); the first keeps its row and is told', async () => {
      const sim = await Sim.create();
      const aErrors: Error[] = [];
      const a = sim.elector('w', T, { errors: aErrors });
      await sim.settle(a.elector.ready);
      await sim.run(5_000);
      const b = sim.elector('w', T);
      const outcomes: string[] = [];
      void b.done.then(() => outcomes.push('resolved'), (x: Error) => outcomes.push(x.name));
      await sim.until('b decided', () => outcomes.length > 0 || (b.elector.candidate?.healthy() ? 'stands' : undefined), 60_000);
      expect(outcomes).toEqual(['DuplicateIdentityError']);
      await noLeaseRow(sim);
      expect((await sim.candidates.read('job', 'w')).item?.identity).toBe(a.elector.instance);
      expect(a.elector.candidate!.healthy()).toBe(true);
      expect(aErrors.map((e) => e.name)).toEqual(['DuplicateIdentityError']);
      expect(aErrors[0]!.message).toMatch(/which this start-up \(\S+\) holds; it was refused/);
      await a.stop();
    });

    it('a restart after a crash takes the dead start-up’s row over after the claim window (its leaseDurationMs)', async () => {
      const sim = await Sim.create();
      const a = sim.elector('w', T);
      await sim.settle(a.elector.ready);
      await sim.run(5_000);
      a.machine.kill();
      const b = sim.elector('w', T);
      const from = sim.clock.monotonic();
      await sim.settle(b.elector.candidate!.ready);
      expect(sim.clock.monotonic() - from).toBeGreaterThanOrEqual(T.leaseDurationMs);
      await noLeaseRow(sim);
      expect((await sim.candidates.read('job', 'w')).item?.identity).toBe(b.elector.instance);
      await b.stop();
    });

    it('a lone start-up finding its name’s row absent, or stale (renewed an hour ago, off a session), stands at once', async () => {
      const sim = await Sim.create();
      const stale = { leaseName: 'job', name: 'old', binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: ['OldestEmulationVersion'], identity: 'old_gone', renewTime: sim.clock.now() - 3_600_000, createdAt: sim.clock.now() - 7_200_000 };
      await sim.candidates.write(await sim.candidates.read('job', 'old'), { set: stale });
      for (const name of ['new', 'old']) {
        const e = sim.elector(name, T);
        const from = sim.clock.monotonic();
        await sim.settle(e.elector.candidate!.ready);
        expect(sim.clock.monotonic() - from).toBeLessThan(1_000);
        await e.stop();
      }
    });
  });
});
