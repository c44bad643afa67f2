/**
 * The push path across Regions in the simulator: IoT Core is per Region (infra/replica.ts
 * `pushEndpoint`), so a worker's channel is on its own Region's broker and each Region's functions
 * publish to theirs. A wake never crosses Regions: a stopping leader's wake to an heir elsewhere
 * reaches nobody, and a process hears each change from its own Region's functions alone.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';

// the functions' metrics would print an EMF line each (as in sim.test.ts)
process.env['POWERTOOLS_METRICS_DISABLED'] ??= 'true';
import type { Wake } from '../../lib/sdk/push.js';
import { SimWorld, type Machine } from '../../sim/machines.js';
import { SimBroker, SimPush } from '../../sim/push.js';
import { generateRegionPlan, regionOf, type RegionPlan } from '../../sim/regions.js';
import { REGION_SETTINGS } from '../../sim/regions-run.js';
import { generateSchedule, type PushFaults } from '../../sim/schedule.js';
import { runWorld } from '../../sim/world.js';

const settings = REGION_SETTINGS;

afterEach(() => void vi.restoreAllMocks());

describe('IoT Core per Region, in the simulator', () => {
  it("a world's brokers: a wake reaches the processes on its own Region's broker alone, and a lost Region's broker delivers nothing more", async () => {
    const world = new SimWorld({ start: 0, seed: 1 });
    const faults: PushFaults = { delayMs: [5, 5], loss: 0, duplicate: 0, outages: [] };
    for (const r of ['us-east-1', 'us-east-2']) world.startBroker(faults, () => 0.5, () => undefined, r);
    const machine = (name: string): Machine => world.machine(name, async (_m, _req, apply) => apply(), {});
    const got: Record<string, string[]> = { w0: [], w2: [], w1: [] };
    const push: Record<string, SimPush> = {};
    for (const [name, region] of [['w0', 'us-east-1'], ['w2', 'us-east-1'], ['w1', 'us-east-2']] as const) {
      push[name] = world.connect(machine(name), () => false, undefined, region);
      push[name].watch('job-0', (w: Wake | undefined) => void (w && got[name]!.push(`${w.by}@${w.revision}`)));
    }
    // a worker in us-east-1 (a stopping leader's wake): its Region-mate hears it, us-east-2's process does not
    push['w0']!.wake('job-0', 3);
    // us-east-2's functions publish to us-east-2's IoT Core
    world.brokerOf('us-east-2')!.publish({ lease: 'job-0', by: 'stream', revision: 4 });
    await world.clock.run(100);
    expect(got).toEqual({ w0: [], w2: ['worker@3'], w1: ['stream@4'] });
    // us-east-1 lost: its IoT Core with it
    world.brokerOf('us-east-1')!.lose();
    world.brokerOf('us-east-1')!.publish({ lease: 'job-0', by: 'stream', revision: 5 });
    push['w2']!.wake('job-0', 6);
    await world.clock.run(100);
    expect(got).toEqual({ w0: [], w2: ['worker@3'], w1: ['stream@4'] });
    expect(push['w0']!.healthy()).toBe(false);
    expect(push['w1']!.healthy()).toBe(true);
  });

  // seeds with the push path and graceful hand-offs (workers' wakes) among their other faults
  it("seeds 4, 12 and 13, among their other faults: each worker is on its own Region's broker, each Region's functions publish to theirs, and no worker's wake is delivered in another Region", async () => {
    const delivered = { sameRegion: 0, otherRegion: [] as string[] };
    for (const seed of [4, 12, 13]) {
      const plan: RegionPlan = generateRegionPlan(seed, settings.durationMs);
      const schedule = generateSchedule(seed, { workers: settings.workers, durationMs: settings.durationMs, faults: true });
      expect(schedule.push, `seed ${seed}: a world with the push path`).toBeDefined();
      // each connection's Region, and the broker it is on
      const regionOfPush = new Map<SimPush, string>();
      const brokerOfPush = new Map<SimPush, SimBroker>();
      const connectWorld = SimWorld.prototype.connect;
      vi.spyOn(SimWorld.prototype, 'connect').mockImplementation(function (this: SimWorld, m: Machine, ...rest: unknown[]) {
        const p = (connectWorld as (...a: unknown[]) => SimPush).call(this, m, ...rest);
        regionOfPush.set(p, regionOf(plan, m.name));
        return p;
      });
      const connectBroker = SimBroker.prototype.connect;
      vi.spyOn(SimBroker.prototype, 'connect').mockImplementation(function (this: SimBroker, ...a: Parameters<SimBroker['connect']>) {
        const p = connectBroker.apply(this, a);
        brokerOfPush.set(p, this);
        return p;
      });
      // each worker's wake → its Region; the brokers the functions publish on
      const publishedIn = new Map<Wake, string>();
      const functionBrokers = new Set<SimBroker>();
      const publish = SimBroker.prototype.publish;
      vi.spyOn(SimBroker.prototype, 'publish').mockImplementation(function (this: SimBroker, wake: Wake, from?: SimPush, processes?: readonly string[]) {
        if (from) publishedIn.set(wake, regionOfPush.get(from)!);
        else functionBrokers.add(this);
        publish.call(this, wake, from, processes);
      });
      const deliver = SimPush.prototype.deliver;
      vi.spyOn(SimPush.prototype, 'deliver').mockImplementation(function (this: SimPush, w: Wake) {
        const from = publishedIn.get(w);
        if (from !== undefined && from === regionOfPush.get(this)) delivered.sameRegion++;
        else if (from !== undefined) delivered.otherRegion.push(`seed ${seed}: ${w.lease}@${w.revision} from ${from} to ${regionOfPush.get(this)}`);
        deliver.call(this, w);
      });
      const r = await runWorld(schedule, settings, { regions: plan });
      vi.restoreAllMocks();
      expect(r.verdict.violations, `seed ${seed}`).toEqual([]);
      // a broker for each replica Region, with that Region's workers on it and no other's; the functions publishing on them
      const regionsOn = new Map<SimBroker, Set<string>>();
      for (const [p, b] of brokerOfPush) regionsOn.set(b, (regionsOn.get(b) ?? new Set()).add(regionOfPush.get(p)!));
      expect([...regionsOn.values()].map((x) => [...x]).sort(), `seed ${seed}`).toEqual(plan.replicas.map((x) => [x]).sort());
      expect(functionBrokers.size, `seed ${seed}`).toBe(plan.replicas.length);
      for (const b of functionBrokers) expect(regionsOn.has(b), `seed ${seed}`).toBe(true);
      expect(publishedIn.size, `seed ${seed}: workers published wakes (hand-offs, releases)`).toBeGreaterThan(0);
    }
    expect(delivered.otherRegion).toEqual([]);
    expect(delivered.sameRegion).toBeGreaterThan(0);
  });
});
