/**
 * Reads a user calls once (getLeader, listIdentities) and the start-up's DescribeTable of a
 * `multiRegion` elector, on a connection that never answers (the AWS SDK sets no request timeout by
 * default): each gives up after its bound (bounded-client.ts) instead of hanging its caller. On
 * simulated time (sim/harness.ts); each fails without its bound (found by a review, 2026-11-30).
 */
import { describe, expect, it } from 'vitest';
import { MIN_REQUEST_BOUND_MS } from '../../lib/sdk/bounded-client.js';
import { getLeader } from '../../lib/sdk/get-leader.js';
import { listIdentities } from '../../lib/sdk/identity.js';
import { Sim } from '../../sim/harness.js';

/** What `p` came to, or 'pending' after `ms` of simulated time. */
async function within<T>(sim: Sim, p: Promise<T>, ms: number): Promise<T | Error | 'pending'> {
  let out: T | Error | 'pending' = 'pending';
  void p.then(
    (v) => void (out = v),
    (e: unknown) => void (out = e as Error),
  );
  await sim.run(ms);
  return out;
}

describe('a read never answered (a black-holed connection)', () => {
  it('getLeader rejects as a timeout after its bound, and answers once the connection does', async () => {
    const sim = await Sim.create();
    const m = sim.machine();
    m.swallow = () => true;
    const out = await within(sim, getLeader('job', { client: m.client, clock: m.clock, tables: sim.names }), 2 * MIN_REQUEST_BOUND_MS);
    // before the fix: still pending
    expect(out).toMatchObject({ name: 'TimeoutError' });
    m.swallow = undefined;
    expect(await within(sim, getLeader('job', { client: m.client, clock: m.clock, tables: sim.names }), 1_000)).toBeNull();
  });

  it('listIdentities rejects as a timeout after its bound', async () => {
    const sim = await Sim.create();
    const m = sim.machine();
    m.swallow = () => true;
    const out = await within(sim, listIdentities({ client: m.client, clock: m.clock, tables: sim.names, component: 'workers' }), 2 * MIN_REQUEST_BOUND_MS);
    expect(out).toMatchObject({ name: 'TimeoutError' });
  });

  it("a multiRegion elector's DescribeTable: the option is left unchecked (told to onError), and the worker starts and leads", async () => {
    const sim = await Sim.create();
    const m = sim.machine();
    m.swallow = (r) => r.operation === 'DescribeTable';
    const errors: Error[] = [];
    const e = sim.elector('a', { leaseName: 'job', mode: 'NoCoordination', multiRegion: true }, { machine: m, errors });
    // before the fix: run() waited on the DescribeTable forever, and never led
    await sim.until('it leads', () => e.elector.isLeader(), 60_000);
    expect(errors.some((x) => /multiRegion not checked: DescribeTable of the leases table .* failed \(TimeoutError/.test(x.message))).toBe(true);
    await e.stop();
  });
});
