/**
 * A withLease run's fenced writes are its own term's: once that term ended, they stay refused, and
 * the run's elector stops with it: it takes no newer term while the function, begun in the old
 * one, runs on (a term its work could not use would keep the lease from every other run).
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { FencingError } from '../../lib/sdk/fencing.js';
import { aborted } from '../../lib/sdk/options.js';
import { tryWithLease, withLease, type WithLeaseOptions } from '../../lib/sdk/with-lease.js';
import { Sim, type Machine } from '../../sim/harness.js';
import { FAST } from './harness.js';

const L = 'nightly';
const opts = (sim: Sim, m: Machine, identity: string): WithLeaseOptions => ({ client: m.client, clock: m.clock, tables: sim.names, identity, mode: 'NoCoordination', platform: 'none', ...FAST, onError: () => undefined });
const row = async (sim: Sim, name: string) => {
  const r = await sim.client.send(new GetItemCommand({ TableName: sim.names.candidates, Key: marshall({ leaseName: 'job-output', name }), ConsistentRead: true }));
  return r.Item && unmarshall(r.Item);
};

describe('withLease: the function’s term handle is bound to its term', () => {
  it('deposed while fn runs on: its elector takes no later term (a term nobody could use held the lease, other runs busy), and the old term’s writes are refused', async () => {
    const sim = await Sim.create();
    const a = sim.machine();
    let tokens: { first: number; b?: number; c?: number } | undefined;
    let writes: unknown[] = [];
    let held: boolean | undefined;
    let retaken = false;
    const pa = withLease(L, async (signal, term) => {
      tokens = { first: term.fencingToken };
      // a's writes to the lease fail: its term ends at the renew deadline, and it cannot take the lease back
      a.fault = (req) => (req.operation === 'UpdateItem' ? new Error('network unreachable') : undefined);
      await aborted(signal);
      // meanwhile b takes the lease once a's term ran out, runs, and lets it go
      const rb = await withLease(L, async (_s, t) => t.fencingToken, opts(sim, sim.machine(), 'b'));
      tokens.b = rb.status === 'ran' ? rb.fencingToken : undefined;
      a.fault = undefined;
      // fn runs on, not watching its signal, for ten lease durations: a's elector, stopped with the
      // term fn began in, never takes the vacant lease (before: it did, a term nobody used)
      for (let i = 0; i < (10 * FAST.leaseDurationMs) / FAST.retryPeriodMs; i++) {
        const l = (await sim.leases.read(L)).item;
        if (l?.holderIdentity === 'a' && l.fencingToken > tokens.b!) retaken = true;
        await a.clock.sleep(FAST.retryPeriodMs);
      }
      // another run meanwhile finds the lease free, not busy
      const rc = await tryWithLease(L, async (_s, t) => t.fencingToken, opts(sim, sim.machine(), 'c'));
      tokens.c = rc.status === 'ran' ? rc.fencingToken : undefined;
      held = term.held();
      // the work begun in the first term writes late
      writes = [
        await term.fencedWrite({ TransactItems: [{ Put: { TableName: sim.names.candidates, Item: marshall({ leaseName: 'job-output', name: 'tx', by: 'a' }) } }] }).catch((e: unknown) => e),
        await term.fencedItemWrite({ put: { TableName: sim.names.candidates, Item: marshall({ leaseName: 'job-output', name: 'item', by: 'a' }) } }).catch((e: unknown) => e),
      ];
      return 'late';
    }, opts(sim, a, 'a'));
    const ra = await sim.settle(pa, 'the run', 60_000).catch((e: unknown) => e);
    expect(tokens!.b).toBeGreaterThan(tokens!.first);
    expect(retaken).toBe(false);
    expect(tokens!.c).toBeGreaterThan(tokens!.b!);
    expect(held).toBe(false);
    expect(writes[0]).toBeInstanceOf(FencingError);
    expect(writes[1]).toBeInstanceOf(FencingError);
    expect(await row(sim, 'tx')).toBeUndefined();
    expect(await row(sim, 'item')).toBeUndefined();
    expect(ra).toMatchObject({ name: 'LeaseLostError', fencingToken: tokens!.first });
  });
});
