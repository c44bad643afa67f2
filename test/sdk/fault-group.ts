/**
 * The set-up the fault tests share (faults.test.ts, user-faults.test.ts): three coordinated
 * electors on simulated time at client-go's timings (15/10/2 s), one leading with a successor named.
 */
import type { ElectionConfigInput } from '../../lib/schemas/config.js';
import type { LeaderElectorOptions } from '../../lib/sdk/elector.js';
import { maxFailingRequestsPerSecond } from '../../lib/sdk/faults.js';
import type { ModelRequest } from '../../sim/dynamodb-model/index.js';
import { Sim, type SimElector } from '../../sim/harness.js';

export const L = 'job';
export const CLIENT_GO = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;
export const CONFIG: ElectionConfigInput = { ackWindowMs: 5_000, electedLeaseDurationSeconds: 5 };

export const leaders = (es: SimElector[]) => es.filter((e) => e.elector.isLeader());
export const onLeases = (sim: Sim, r: ModelRequest) => (r.input as { TableName?: string }).TableName === sim.names.leases;
/** The most tries of one kind a failing process makes in `ms`: one per retry period, and the one it started with. */
export const bound = (ms: number) => Math.floor((ms / 1000) * maxFailingRequestsPerSecond(CLIENT_GO.retryPeriodMs)) + 1;

/** Three coordinated electors at client-go's timings, one leading with a successor named; `errors(e)`: what each told onError. */
export async function group(opts: Partial<LeaderElectorOptions> = {}) {
  const sim = await Sim.create({ config: CONFIG });
  sim.coordinator({ tickEveryMs: 1_000 });
  const errors = new Map<string, Error[]>();
  const es = ['a', 'b', 'c'].map((id) => {
    const list: Error[] = [];
    errors.set(id, list);
    return sim.elector(id, { leaseName: L, ...CLIENT_GO, ...opts }, { errors: list });
  });
  const leader = await sim.until('a leader', () => leaders(es)[0], 120_000);
  const held = await sim.until('a successor named', async () => (await sim.leases.read(L)).item?.successor, 120_000);
  const successor = es.find((e) => e.elector.options.identity === held)!;
  return { sim, es, leader, successor, errors: (e: SimElector) => errors.get(e.elector.options.identity)! };
}

/** group(), then 20 s more: its successor settled on the lease. */
export async function settledGroup(opts: Partial<LeaderElectorOptions> = {}) {
  const g = await group(opts);
  await g.sim.run(20_000);
  return g;
}
