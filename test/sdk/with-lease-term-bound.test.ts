/**
 * A withLease run's fenced writes are its own term's: once that term ended, they stay refused even
 * when the run's elector (which takes part until the function returns) leads the lease again in a
 * newer term — the function's work, begun in the old term, never writes with the new term's token.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { FencingError } from '../../lib/sdk/fencing.js';
import { aborted } from '../../lib/sdk/options.js';
import { withLease, type WithLeaseOptions } from '../../lib/sdk/with-lease.js';
import { Sim, type Machine } from '../../sim/harness.js';
import { FAST } from './harness.js';

const L = 'nightly';
const opts = (sim: Sim, m: Machine, identity: string): WithLeaseOptions => ({ client: m.client, clock: m.clock, tables: sim.names, identity, mode: 'NoCoordination', platform: 'none', ...FAST, onError: () => undefined });
const row = async (sim: Sim, name: string) => {
  const r = await sim.client.send(new GetItemCommand({ TableName: sim.names.candidates, Key: marshall({ leaseName: 'job-output', name }), ConsistentRead: true }));
  return r.Item && unmarshall(r.Item);
};

describe('withLease: the function’s term handle is bound to its term', () => {
  it('deposed, then its elector leads again in a newer term: the old term’s fencedWrite and fencedItemWrite are refused', async () => {
    const sim = await Sim.create();
    const a = sim.machine();
    let tokens: { first: number; again?: number; b?: number } | undefined;
    let writes: unknown[] = [];
    let held: boolean | undefined;
    const pa = withLease(L, async (signal, term) => {
      tokens = { first: term.fencingToken };
      // a's writes to the lease fail: its term ends at the renew deadline, and it cannot take the lease back
      a.fault = (req) => (req.operation === 'UpdateItem' ? new Error('network unreachable') : undefined);
      await aborted(signal);
      // meanwhile b takes the lease once a's term ran out, runs, and lets it go
      const rb = await withLease(L, async (_s, t) => t.fencingToken, opts(sim, sim.machine(), 'b'));
      tokens.b = rb.status === 'ran' ? rb.fencingToken : undefined;
      a.fault = undefined;
      // a's elector takes part until fn returns: it takes the vacant lease, a newer term
      for (let i = 0; i < 200 && tokens.again === undefined; i++) {
        const l = (await sim.leases.read(L)).item;
        if (l?.holderIdentity === 'a' && l.fencingToken > tokens.b!) tokens.again = l.fencingToken;
        else await a.clock.sleep(FAST.retryPeriodMs);
      }
      held = term.held();
      // the work begun in the first term writes late
      writes = [
        await term.fencedWrite({ TransactItems: [{ Put: { TableName: sim.names.candidates, Item: marshall({ leaseName: 'job-output', name: 'tx', by: 'a' }) } }] }).catch((e: unknown) => e),
        await term.fencedItemWrite({ put: { TableName: sim.names.candidates, Item: marshall({ leaseName: 'job-output', name: 'item', by: 'a' }) } }).catch((e: unknown) => e),
      ];
      return 'late';
    }, opts(sim, a, 'a'));
    const ra = await sim.settle(pa, 'the run', 60_000).catch((e: unknown) => e);
    // the scenario: a led again, in a term newer than b's
    expect(tokens!.b).toBeGreaterThan(tokens!.first);
    expect(tokens!.again).toBeGreaterThan(tokens!.b!);
    expect(held).toBe(false); // its term is over, whatever term the elector leads now
    expect(writes[0]).toBeInstanceOf(FencingError);
    expect(writes[1]).toBeInstanceOf(FencingError);
    expect(await row(sim, 'tx')).toBeUndefined();
    expect(await row(sim, 'item')).toBeUndefined();
    expect(ra).toMatchObject({ name: 'LeaseLostError', fencingToken: tokens!.first });
  });
});
