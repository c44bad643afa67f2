/**
 * A lease at rest on simulated time, for the read-cadence and cost-at-rest tests: three electors
 * with the push path at client-go's timings, a leader, a successor and a second successor named,
 * every watcher locked on the holder's renewals; and the requests a machine sent, counted by kind.
 */
import type { ElectionConfigInput } from '../../lib/schemas/config.js';
import { Sim, type Machine, type SimElector } from '../../sim/harness.js';

/** client-go's timings: the SDK's defaults. */
export const CLIENT_GO = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;
export const CONFIG: ElectionConfigInput = { ackWindowMs: 5_000, electedLeaseDurationSeconds: 15 };

const onTable = (suffix: string) => (r: { input: unknown }) => (r.input as { TableName?: string }).TableName?.endsWith(suffix) === true;
/** GetItems `m` sent since `from` to the table whose name ends with `suffix`. */
export const reads = (m: Machine, from: number, suffix: string) => m.sent.filter((r) => r.at >= from && r.operation === 'GetItem' && onTable(suffix)(r)).length;
/** UpdateItems `m` sent since `from` that succeeded, to the table whose name ends with `suffix`. */
export const writes = (m: Machine, from: number, suffix: string) => m.sent.filter((r) => r.at >= from && r.ok && r.operation === 'UpdateItem' && onTable(suffix)(r)).length;

export async function quietGroup() {
  const sim = await Sim.create({ config: CONFIG });
  sim.pushBroker({ delayMs: 50, deliveryMs: 5 });
  const coord = sim.coordinator({ tickEveryMs: 1_000 });
  const es: SimElector[] = ['a', 'b', 'c'].map((id) => {
    const machine = sim.machine();
    return sim.elector(id, { leaseName: 'job', ...CLIENT_GO, push: sim.pushFor(machine) }, { machine });
  });
  const held = await sim.until('a leader, a successor and a second successor named', async () => {
    const l = (await sim.leases.read('job')).item;
    return l?.successor && l.secondSuccessor && !l.election ? l : undefined;
  }, 120_000);
  await sim.run(4 * CLIENT_GO.leaseDurationMs); // every watcher has learnt the holder's cadence
  const by = (id: string | undefined) => es.find((e) => e.elector.options.identity === id)!;
  return { sim, coord, es, held, holder: by(held.holderIdentity), successor: by(held.successor), second: by(held.secondSuccessor) };
}
