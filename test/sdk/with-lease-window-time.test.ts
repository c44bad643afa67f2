/**
 * withLease's run-once windows on simulated time (sim/harness.ts): which window a periodic run
 * without `at` counts for (the one its first look fell in, not the one it won the lease in), a
 * skip that a clock running ahead may have caused told to onError, and the window's own claim and
 * mark unanswered, named with the lease, the window and whether the function ran.
 */
import { describe, expect, it } from 'vitest';
import { keyedWindowRow } from '../../lib/schemas/run-once.js';
import { NotDynamoDBError } from '../../lib/dynamodb-answers.js';
import { DynamoDBRefusedError, DynamoDBUnreachableError } from '../../lib/sdk/faults.js';
import { tryWithLease, withLease, type LeaseRunResult, type WithLeaseOptions } from '../../lib/sdk/with-lease.js';
import { Sim, T0, type Machine } from '../../sim/harness.js';
import { faults, type ModelRequest } from '../../sim/dynamodb-model/index.js';
import { FAST } from './harness.js';

const DAY_MS = 86_400_000;
const opts = (sim: Sim, m: Machine, identity: string, extra: Partial<WithLeaseOptions> = {}): WithLeaseOptions => ({ client: m.client, clock: m.clock, tables: sim.names, identity, mode: 'NoCoordination', platform: 'none', ...FAST, onError: () => undefined, ...extra });

describe('a periodic window without `at`: the window of the call’s first look', () => {
  it('ten hosts fired at 23:59:59.5, each run taking 1 s: every one counts for that day (one runs, the rest skip), and the next day’s own run runs', async () => {
    const sim = await Sim.create();
    await sim.run(DAY_MS - 500); // 2027-01-01T23:59:59.5Z
    const results = await sim.settle(
      Promise.all(
        Array.from({ length: 10 }, (_, i) => {
          const m = sim.machine();
          return withLease('daily', async () => (await m.clock.sleep(1_000), `host ${i}`), opts(sim, m, `h${i}`, { runOnce: { every: 'day' } }));
        }),
      ),
      'ten hosts',
      120_000,
    );
    // before: host 0 ran 2027-01-01; the one that won at 00:00:01 ran 2027-01-02, the rest skipped it
    expect(results.map((r) => (r as { window?: string }).window)).toEqual(Array(10).fill('2027-01-01'));
    expect(results.filter((r) => r.status === 'ran')).toHaveLength(1);
    await sim.run(DAY_MS - 5_000);
    const next = await sim.settle(withLease('daily', () => 'next day', opts(sim, sim.machine(), 'n', { runOnce: { every: 'day' } })), 'next day');
    expect(next).toMatchObject({ status: 'ran', window: '2027-01-02' }); // it was skipped
  });

  it('a host whose clock is 300 ms ahead, fired at its own midnight without `at`: counted for the day ending and skipped, and onError is told so (with `at`, it runs)', async () => {
    const sim = await Sim.create();
    await sim.run(3_600_000);
    const day1 = await sim.settle(tryWithLease('report', () => 'day 1', opts(sim, sim.machine({ offsetMs: 300 }), 'h1', { runOnce: { every: 'day' } })), 'day 1');
    expect(day1).toMatchObject({ status: 'ran', window: '2027-01-01' });
    // the same day again at noon: skipped, nothing to tell
    await sim.run(11 * 3_600_000);
    const noonTold: Error[] = [];
    const noon = await sim.settle(tryWithLease('report', () => 'noon', opts(sim, sim.machine({ offsetMs: 300 }), 'h2', { runOnce: { every: 'day' }, onError: (e) => noonTold.push(e) })), 'noon');
    expect(noon).toMatchObject({ status: 'skipped', window: '2027-01-01' });
    expect(noonTold).toEqual([]);
    // the host's client has seen DynamoDB's time before (a Lambda function's, kept between
    // invocations): its runs half a minute before midnight (skipped, nothing to tell: far from the
    // next window) land early and late in DynamoDB's seconds, which tells its clock's 300 ms ahead
    const host = sim.machine({ offsetMs: 300 });
    for (const before of [30_000 - 5, 20_000 - 990]) {
      await sim.run(T0 + DAY_MS - before - (host.clock.now() - 300));
      expect(await sim.settle(tryWithLease('report', () => 'early', opts(sim, host, 'h0', { runOnce: { every: 'day' }, onError: (e) => noonTold.push(e) })), 'before midnight')).toMatchObject({ status: 'skipped' });
    }
    expect(noonTold).toEqual([]);
    // the next midnight by the host's clock, as its cron fires: DynamoDB's time is 23:59:59.7
    await sim.run(T0 + DAY_MS - host.clock.now());
    const told: Error[] = [];
    const r = await sim.settle(tryWithLease('report', () => 'day 2', opts(sim, host, 'h3', { runOnce: { every: 'day' }, onError: (e) => told.push(e) })), 'day 2');
    expect(r).toMatchObject({ status: 'skipped', window: '2027-01-01' });
    // before: nothing told, and the day's run never ran
    expect(told.map((e) => e.message)).toEqual([
      expect.stringMatching(/lease "report": skipped the run-once window 2027-01-01, already run by "h1"; this run looked at 2027-01-01T23:59:59\.\d+Z by DynamoDB's time, \d+ ms before the window 2027-01-02 began.*Pass the scheduled time as runOnce\.at/),
    ]);
    const scheduled = await sim.settle(tryWithLease('report', () => 'day 2', opts(sim, host, 'h4', { runOnce: { every: 'day', at: new Date(host.clock.now()) } })), 'day 2 with at');
    expect(scheduled).toMatchObject({ status: 'ran', window: '2027-01-02' });
  });
});

describe('a skip just before the next window, told only of a clock judged ahead, on a period well longer than the clocks may disagree', () => {
  // 40 runs, one every 250 ms across the start of a window, each from a host of its own (a
  // worker polling with tryWithLease): every skip just before the next window was told as "a clock
  // running ahead" (34 of 34 at 2 s, clockSync 'server'; a review, 2026-12-07, tenth)
  it.each([
    [2_000, 'server'],
    [2_000, 'none'],
    [5_000, 'server'],
    [5_000, 'none'],
    [60_000, 'server'],
    [3_600_000, 'server'],
  ] as const)('clocks that are right, polling a window of %i ms (clockSync %s): no skip is told', async (every, clockSync) => {
    const sim = await Sim.create();
    await sim.run(Math.max(0, every - 5_000));
    const told: string[] = [];
    let skips = 0;
    for (let i = 0; i < 40; i++) {
      const r = await sim.settle(tryWithLease('poll', () => 'x', opts(sim, sim.machine(), `h${i}`, { clockSync, runOnce: { every }, onError: (e) => told.push(e.message) })), 'poll');
      if (r.status === 'skipped') skips++;
      await sim.run(250);
    }
    expect(skips).toBeGreaterThan(30);
    expect(told).toEqual([]);
  });

  it('a clock 800 ms ahead, its client kept, polling a window of 2 s: nothing told (the next run is a moment away)', async () => {
    const sim = await Sim.create();
    const host = sim.machine({ offsetMs: 800 });
    const told: string[] = [];
    let skips = 0;
    for (let i = 0; i < 40; i++) {
      const r = await sim.settle(tryWithLease('poll', () => 'x', opts(sim, host, `h${i}`, { runOnce: { every: 2_000 }, onError: (e) => told.push(e.message) })), 'poll');
      if (r.status === 'skipped') skips++;
      await sim.run(250 + (i % 3) * 7);
    }
    expect(skips).toBeGreaterThan(30);
    expect(told).toEqual([]);
  });

  it('the same clock polling a window of a minute: its skips in the last moments before the next window are told, naming how far ahead it is', async () => {
    const sim = await Sim.create();
    await sim.run(55_000);
    const host = sim.machine({ offsetMs: 800 });
    const told: string[] = [];
    for (let i = 0; i < 40; i++) {
      await sim.settle(tryWithLease('poll', () => 'x', opts(sim, host, `h${i}`, { runOnce: { every: 60_000 }, onError: (e) => told.push(e.message) })), 'poll');
      await sim.run(250 + (i % 3) * 7);
    }
    expect(told.length).toBeGreaterThan(0);
    for (const m of told) expect(m).toMatch(/skipped the run-once window 2027-01-01T00:00:00\.000Z, already run by "h\d+"; this run looked at 2027-01-01T00:00:59\.\d+Z by DynamoDB's time, \d+ ms before the window 2027-01-01T00:01:00\.000Z began, and this machine's clock is [78]\d\d ms \(\+\/- \d+ ms\) ahead of DynamoDB's/);
  });
});

const L = 'nightly';
const onRow = (req: ModelRequest, op: string) => {
  const input = req.input as { Key?: { leaseName?: { S?: string }; name?: { S?: string } } };
  return req.operation === op && input.Key?.leaseName?.S === L && input.Key.name?.S === keyedWindowRow('w-1');
};

describe("the window's claim and withLease's own mark given no answer: named with the lease, the window and whether the function ran", () => {
  it('the claim: a DynamoDBUnreachableError saying the function was not run (it was a bare TimeoutError)', async () => {
    const sim = await Sim.create();
    const a = sim.machine();
    let claims = 0;
    a.swallow = (req) => onRow(req, 'UpdateItem') && ++claims === 1;
    let ran = false;
    const e = await sim.settle(withLease(L, () => ((ran = true), 'ran'), opts(sim, a, 'a', { runOnce: { window: 'w-1' } })).then((r: LeaseRunResult<string>) => r, (x: unknown) => x), 'a', 60_000);
    expect(ran).toBe(false);
    expect(e).toBeInstanceOf(DynamoDBUnreachableError);
    expect(e).toMatchObject({ code: 'timed out', cause: { name: 'TimeoutError' } });
    expect((e as Error).message).toMatch(/^withLease run "a" of lease "nightly": .*gave no answer within 5000 ms.*; the claim of the run-once window "w-1" \(row "~run-once\/w-1" of the candidates table "[^"]+"\) failed: the function was not run.*the lease is given up, and withLease does not retry: call it again/);
    // the lease was given up
    expect((await sim.leases.read(L)).item?.holderIdentity).toBeUndefined();
  });

  it('the mark after fn returned, and its read back: a DynamoDBUnreachableError saying the function ran and whether the window is marked is not known', async () => {
    const sim = await Sim.create();
    const a = sim.machine();
    let updates = 0;
    a.swallow = (req) => (onRow(req, 'UpdateItem') && ++updates >= 2) || (updates >= 2 && onRow(req, 'GetItem'));
    let ran = false;
    const e = await sim.settle(withLease(L, () => ((ran = true), 'ran'), opts(sim, a, 'a', { runOnce: { window: 'w-1' } })).then((r: LeaseRunResult<string>) => r, (x: unknown) => x), 'a', 60_000);
    expect(ran).toBe(true);
    expect(e).toBeInstanceOf(DynamoDBUnreachableError);
    expect((e as Error).message).toMatch(/^withLease run "a" of lease "nightly": .*gave no answer within 5000 ms.*; the function ran and returned, but withLease's mark of the run-once window "w-1" .* failed, and no read back showed it landed: whether the window is marked is not known\. If the mark landed, the next run .* skips the window; if not, it runs the function again/);
  });
});

describe("the window's claim and withLease's own mark refused, or failed on DynamoDB's side: named with the lease, the window, and what to do", () => {
  // every try of the claim (the first UpdateItem of the window's row) or of the mark (those after it) answered with `fault`
  const failing = async (which: 'claim' | 'mark', fault: () => Error) => {
    const sim = await Sim.create();
    const a = sim.machine();
    let updates = 0;
    a.fault = (req) => (onRow(req, 'UpdateItem') && ++updates >= (which === 'claim' ? 1 : 2) ? fault() : undefined);
    let ran = false;
    const e = await sim.settle(withLease(L, () => ((ran = true), 'ran'), opts(sim, a, 'a', { runOnce: { window: 'w-1' } })).then((r: LeaseRunResult<string>) => r, (x: unknown) => x), 'a', 60_000);
    return { e: e as Error, ran, sim };
  };
  const GRANT = /: this role may not write the window's row \(UpdateItem\); grant it Conclave's grantWorker with the lease among its leaseNames \(or allLeases\), and check its credentials/;

  // the advice was a throttle's: "call it again", no word of the role (a review, 2026-12-07, tenth)
  it('the claim denied by IAM: a DynamoDBRefusedError naming the grant, the function not run', async () => {
    const { e, ran } = await failing('claim', () => faults.accessDenied('UpdateItem', 'candidates'));
    expect(ran).toBe(false);
    expect(e).toBeInstanceOf(DynamoDBRefusedError);
    expect(e).toMatchObject({ kind: 'denied', cause: { name: 'AccessDeniedException' } });
    expect(e.message).toMatch(/^withLease run "a" of lease "nightly": DynamoDB refused the request \(AccessDeniedException: /);
    expect(e.message).toMatch(GRANT);
    expect(e.message).toMatch(/the claim of the run-once window "w-1" .* failed: the function was not run.* withLease does not retry: call it again once the role may$/);
  });

  it('the claim refused for expired credentials: what to renew, not the grant', async () => {
    const expired = () => Object.assign(new Error('The security token included in the request is expired'), { name: 'ExpiredTokenException', $fault: 'client', $metadata: { httpStatusCode: 400 } });
    const { e, ran } = await failing('claim', expired);
    expect(ran).toBe(false);
    expect(e).toMatchObject({ name: 'DynamoDBRefusedError', kind: 'denied' });
    expect(e.message).toMatch(/the credentials are expired or not valid \(a grant would not help\).*; the claim of the run-once window "w-1" .* failed: the function was not run/);
    expect(e.message).not.toMatch(/grantWorker/);
  });

  it("the mark denied by IAM: a DynamoDBRefusedError naming the grant, and that the function ran", async () => {
    const { e, ran } = await failing('mark', () => faults.accessDenied('UpdateItem', 'candidates'));
    expect(ran).toBe(true);
    expect(e).toBeInstanceOf(DynamoDBRefusedError);
    expect(e).toMatchObject({ kind: 'denied' });
    expect(e.message).toMatch(GRANT);
    expect(e.message).toMatch(/; the function ran and returned, but withLease's mark of the run-once window "w-1" .* failed/);
  });

  // a 5xx, or an answer not DynamoDB's: it was as the AWS SDK threw it, naming no lease and no window
  it.each([
    ['the claim', 'a 500 from DynamoDB', 'claim' as const, () => faults.internalServerError(), /^withLease run "a" of lease "nightly": DynamoDB failed the request on its side \(InternalServerError: Internal server error, HTTP 500\).*; the claim of the run-once window "w-1" .* failed: the function was not run/],
    ['the mark', 'a 500 from DynamoDB', 'mark' as const, () => faults.internalServerError(), /^withLease run "a" of lease "nightly": DynamoDB failed the request on its side \(InternalServerError: .*; the function ran and returned, but withLease's mark of the run-once window "w-1" .* whether the window is marked is not known/],
    ['the claim', "an answer not DynamoDB's", 'claim' as const, () => new NotDynamoDBError('http://proxy:8080', 502, 'no x-amzn-RequestId header'), /^withLease run "a" of lease "nightly": the answer from http:\/\/proxy:8080 is not DynamoDB's \(HTTP 502.*; the claim of the run-once window "w-1" .* failed: the function was not run/],
    ['the mark', "an answer not DynamoDB's", 'mark' as const, () => new NotDynamoDBError('http://proxy:8080', 502, 'no x-amzn-RequestId header'), /^withLease run "a" of lease "nightly": the answer from http:\/\/proxy:8080 is not DynamoDB's .*; the function ran and returned, but withLease's mark .* whether the window is marked is not known/],
  ])('%s given %s: named with the lease, the window and what stands (the error\'s own name kept)', async (_what, _how, which, fault, want) => {
    const { e, ran } = await failing(which, fault);
    expect(ran).toBe(which === 'mark');
    expect(e.name).toBe(fault().name);
    expect(e.message).toMatch(want);
  });
});
