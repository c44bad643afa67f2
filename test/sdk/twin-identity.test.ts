/**
 * Two processes given one identity. In coordinated mode the candidacy refuses the second
 * (DuplicateIdentityError); with `NoCoordination` nothing did, and nothing was told: safe (terms are
 * told apart by instance), but events, logs and onNewLeader could not tell the two apart. The one
 * that follows now tells onError once, when it sees the other's term renewed. On simulated time at
 * client-go's timings.
 */
import { describe, expect, it } from 'vitest';
import { Sim, type Log } from '../../sim/harness.js';
import { CLIENT_GO, L } from './fault-group.js';

const TWIN = /^LeaderElector "w" of lease "job": another live start-up \(instance (\S+)\) leads under this identity, its term renewed between two reads of this one's\. .*give each process a unique identity/;
const OPTIONS = { leaseName: L, mode: 'NoCoordination' as const, ...CLIENT_GO };

/** The most terms of `who` led at once, replaying its started and stopped in order (the log names both start-ups `who`). */
function mostLeadingAtOnce(log: Log, who: string): number {
  let leading = 0;
  let most = 0;
  for (const e of log.entries.filter((x) => x.who === who)) {
    if (e.what === 'started') most = Math.max(most, ++leading);
    if (e.what === 'stopped') leading--;
  }
  return most;
}

describe('two start-ups under one identity with NoCoordination', () => {
  it('the one that follows tells onError once, naming the other start-up; the leader tells nothing; never both leading', async () => {
    const sim = await Sim.create({});
    const aErrors: Error[] = [];
    const bErrors: Error[] = [];
    const a = sim.elector('w', OPTIONS, { errors: aErrors });
    await sim.until('a leads', () => a.elector.isLeader(), 30_000);
    const b = sim.elector('w', OPTIONS, { errors: bErrors });
    await sim.run(120_000);
    expect(a.elector.isLeader()).toBe(true);
    expect(b.elector.isLeader()).toBe(false);
    const told = bErrors.filter((e) => TWIN.test(e.message));
    expect(told, bErrors.map((e) => e.message).join('\n')).toHaveLength(1);
    expect(TWIN.exec(told[0]!.message)![1]).toBe(a.elector.instance);
    expect(aErrors).toEqual([]);
    // b follows a's term and takes the lease once a leaves it: one leading at a time throughout
    await a.stop();
    await sim.until('b leads', () => b.elector.isLeader(), 4 * CLIENT_GO.leaseDurationMs);
    await b.stop();
    expect(mostLeadingAtOnce(sim.log, 'w')).toBe(1);
  });

  it('a restart under the same identity, the previous start-up killed while leading: its term is never renewed again, and nothing is told', async () => {
    const sim = await Sim.create({});
    const errors: Error[] = [];
    const a = sim.elector('w', OPTIONS);
    await sim.until('a leads', () => a.elector.isLeader(), 30_000);
    a.machine.kill();
    const b = sim.elector('w', OPTIONS, { errors });
    await sim.until('b leads', () => b.elector.isLeader(), 4 * CLIENT_GO.leaseDurationMs);
    await sim.run(30_000);
    expect(errors.filter((e) => TWIN.test(e.message))).toEqual([]);
    await b.stop();
  });
});
