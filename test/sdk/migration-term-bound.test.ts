/**
 * A migration controller's term handle (ControllerTerm) is bound to its term, as a LeaderElector's
 * onStartedLeading term (LeadingTerm) and a withLease run's are: work that outlives its term (it
 * ignored its signal) writes nothing, even where a bare token would still pass the fence.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { FencingError } from '../../lib/sdk/fencing.js';
import { defaultLeaderMigrationConfiguration, electorStarter, runWithLeaderMigration, type ControllerTerm } from '../../lib/sdk/migration.js';
import { aborted } from '../../lib/sdk/options.js';
import { Sim } from '../../sim/harness.js';
import { FAST } from './harness.js';

const row = async (sim: Sim, name: string) => {
  const r = await sim.client.send(new GetItemCommand({ TableName: sim.names.candidates, Key: marshall({ leaseName: 'route-output', name }), ConsistentRead: true }));
  return r.Item && unmarshall(r.Item);
};

describe('runWithLeaderMigration: a controller’s term handle is bound to its term', () => {
  it('its renewals failing, the migrated controller’s term ends; its late fencedWrite and fencedItemWrite are refused', async () => {
    const sim = await Sim.create({ config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } });
    sim.coordinator({ tickEveryMs: 100 });
    const m = sim.machine();
    const stop = new AbortController();
    let writes: unknown[] | undefined;
    let token: number | undefined;
    const done = runWithLeaderMigration({
      startElector: electorStarter({ identity: 'kcm-1', tables: sim.names, ...FAST, platform: 'none', client: m.client, clock: m.clock, candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' }, onError: () => undefined }),
      controllers: {
        'cloud-route': async (signal: AbortSignal, term: ControllerTerm) => {
          if (writes) return; // a later term: nothing to show
          token = term.fencingToken;
          // the process's lease writes fail: its terms end at the renew deadline
          m.fault = (req) => (req.operation === 'UpdateItem' ? new Error('network unreachable') : undefined);
          await aborted(signal);
          m.fault = undefined;
          // the work begun in the term writes late, through its term's handle. Before it had one, the
          // controller fenced with its token (fencedTransactWrite on { leaseName, term },
          // fencedItemWrite on its fencingToken): both writes landed, the row still in the ended
          // term and the item written by no newer one
          writes = [
            await term.fencedWrite({ TransactItems: [{ Put: { TableName: sim.names.candidates, Item: marshall({ leaseName: 'route-output', name: 'tx', by: 'kcm-1' }) } }] }).catch((e: unknown) => e),
            await term.fencedItemWrite({ put: { TableName: sim.names.candidates, Item: marshall({ leaseName: 'route-output', name: 'item', by: 'kcm-1' }) } }).catch((e: unknown) => e),
          ];
        },
      },
      component: 'kcm',
      primaryLeaseName: 'kcm',
      config: defaultLeaderMigrationConfiguration(['cloud-route']),
      signal: stop.signal,
    });
    await sim.until('the late writes', () => writes !== undefined, 60_000);
    stop.abort();
    await sim.settle(done);
    expect(token).toBeGreaterThan(0);
    expect(writes![0]).toBeInstanceOf(FencingError);
    expect(writes![1]).toBeInstanceOf(FencingError);
    expect(await row(sim, 'tx')).toBeUndefined();
    expect(await row(sim, 'item')).toBeUndefined();
  });
});
