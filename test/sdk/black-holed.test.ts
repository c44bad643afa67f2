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
import { withLease } from '../../lib/sdk/with-lease.js';
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
  it('getLeader rejects after its bound as DynamoDB out of reach (a read: nothing landed), the timeout its cause, and answers once the connection does', async () => {
    const sim = await Sim.create();
    const m = sim.machine();
    m.swallow = () => true;
    const out = await within(sim, getLeader('job', { client: m.client, clock: m.clock, tables: sim.names }), 2 * MIN_REQUEST_BOUND_MS);
    // before the fix: still pending; then (to 2026-12-07) the bare TimeoutError, naming no call, lease or endpoint
    expect(out).toMatchObject({ name: 'DynamoDBUnreachableError', code: 'timed out', cause: { name: 'TimeoutError' } });
    // the simulator's network took the request and never answered: told as sent and unanswered (to 2026-12-07: "cannot reach DynamoDB at … (timed out)")
    expect((out as Error).message).toMatch(/^getLeader of lease "job": DynamoDB at .* took the request and gave no answer within 5000 ms \(timed out after it was sent on a connection made: .*was not read, and getLeader does not retry: call it again once DynamoDB answers$/);
    m.swallow = undefined;
    expect(await within(sim, getLeader('job', { client: m.client, clock: m.clock, tables: sim.names }), 1_000)).toBeNull();
  });

  it('listIdentities rejects after its bound as DynamoDB out of reach, naming the component, the timeout its cause', async () => {
    const sim = await Sim.create();
    const m = sim.machine();
    m.swallow = () => true;
    const out = await within(sim, listIdentities({ client: m.client, clock: m.clock, tables: sim.names, component: 'workers' }), 2 * MIN_REQUEST_BOUND_MS);
    // to 2026-12-07 (tenth): the bare TimeoutError, naming no call, component or endpoint
    expect(out).toMatchObject({ name: 'DynamoDBUnreachableError', code: 'timed out', cause: { name: 'TimeoutError' } });
    expect((out as Error).message).toMatch(/^listIdentities of component "workers": DynamoDB at .* the partition of component "workers" on the identities table ".*" was not read, and listIdentities does not retry: call it again once DynamoDB answers$/);
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

describe('stopped while the multiRegion check waits on a DescribeTable never answered', () => {
  it('run() settles at once, nothing told of a check nobody waits for (before: after its bound, then "multiRegion not checked"); an aborted signal sends nothing', async () => {
    const sim = await Sim.create();
    const m = sim.machine();
    m.swallow = (r) => r.operation === 'DescribeTable';
    const errors: Error[] = [];
    const e = sim.elector('a', { leaseName: 'job', mode: 'NoCoordination', multiRegion: true }, { machine: m, errors });
    await sim.run(100); // the DescribeTable is out, unanswered
    e.controller.abort();
    expect(await within(sim, e.done, 10)).toBeUndefined();
    expect(errors).toEqual([]);
    // a signal aborted before run(): no DescribeTable sent
    const sent: string[] = [];
    m.client.middlewareStack.add((next, ctx) => async (args) => (sent.push(ctx.commandName ?? '?'), next(args)), { step: 'initialize', name: 'sent' });
    const again = sim.elector('b', { leaseName: 'job', mode: 'NoCoordination', multiRegion: true }, { machine: m, errors });
    again.controller.abort();
    expect(await within(sim, again.done, 10)).toBeUndefined();
    expect(sent).toEqual([]);
  });

  it('withLease of a run-once window, cancelled while its candidates table is described, rejects at once with the reason, its function not run', async () => {
    const sim = await Sim.create();
    const m = sim.machine();
    m.swallow = (r) => r.operation === 'DescribeTable';
    const cancel = new AbortController();
    const errors: Error[] = [];
    let ran = false;
    const p = withLease('nightly', async () => void (ran = true), { client: m.client, clock: m.clock, tables: sim.names, mode: 'NoCoordination', multiRegion: true, platform: 'none', runOnce: { window: 'w1' }, signal: cancel.signal, onError: (e) => void errors.push(e) });
    await sim.run(200);
    cancel.abort(new Error('invocation ending'));
    expect(await within(sim, p, 10)).toMatchObject({ message: 'invocation ending' });
    expect(ran).toBe(false);
    expect(errors).toEqual([]);
  });
});
