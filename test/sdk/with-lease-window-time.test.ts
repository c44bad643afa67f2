/**
 * withLease's run-once windows on simulated time (sim/harness.ts): which window a periodic run
 * without `at` counts for (the one its first look fell in, not the one it won the lease in), a
 * skip that a clock running ahead may have caused told to onError, and the window's own claim and
 * mark unanswered, named with the lease, the window and whether the function ran.
 */
import { describe, expect, it } from 'vitest';
import { keyedWindowRow } from '../../lib/schemas/run-once.js';
import { DynamoDBUnreachableError } from '../../lib/sdk/faults.js';
import { tryWithLease, withLease, type LeaseRunResult, type WithLeaseOptions } from '../../lib/sdk/with-lease.js';
import { Sim, T0, type Machine } from '../../sim/harness.js';
import type { ModelRequest } from '../../sim/dynamodb-model/index.js';
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
    // the next midnight by the host's clock, as its cron fires: DynamoDB's time is 23:59:59.7
    const host = sim.machine({ offsetMs: 300 });
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
