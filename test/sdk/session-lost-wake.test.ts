/**
 * A session-held lease's successor whose wakes are lost while its channel passes for live (a dead
 * connection its keep-alive has not noticed yet, a QoS 0 wake dropped, IoT Core's 100 messages a
 * second per connection), on simulated time (sim/harness.ts) at client-go's timings and the
 * Session's defaults. With the push path live and the lease quiet, the successor reads only the
 * holder's session row after each renewal it expects, and the lease row every SESSION_QUIET_LEASES
 * lease durations: a hand-over or release by an elector whose process runs on (its session renewed
 * for its other leases) must show on that row, or the successor waits for its backstop read.
 * Before: 49.4 s without a leader (a review's reproduction); without push at all, a renew interval.
 */
import { describe, expect, it } from 'vitest';
import type { ElectionConfigInput } from '../../lib/schemas/config.js';
import { Session } from '../../lib/sdk/session.js';
import { Sim, type Machine, type SimElector } from '../../sim/harness.js';

const LEASES = ['reports', 'other'];
const CONFIG: ElectionConfigInput = { ackWindowMs: 500, electedLeaseDurationSeconds: 15 };
/** client-go's timings (15/10/2 s), which the Session's defaults fit. */
const CLIENT_GO = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;
const L = CLIENT_GO.leaseDurationMs;

interface Process {
  machine: Machine;
  session: Session;
  electors: SimElector[];
  stop: AbortController;
  running: Promise<void>;
}

/** Two processes, as in the review, each with a Session and an elector on every lease, the push path and the coordinator; settled. */
async function fleet() {
  const sim = await Sim.create({ config: CONFIG });
  sim.pushBroker({ delayMs: 50, deliveryMs: 5 });
  sim.coordinator();
  const procs: Process[] = ['a', 'b'].map((id) => {
    const machine = sim.machine();
    const errors: Error[] = [];
    const session = new Session({ client: machine.client, tables: sim.names, clock: machine.clock, prefix: id, onError: (e) => void errors.push(e) });
    const stop = new AbortController();
    const running = session.run(stop.signal);
    const electors = LEASES.map((leaseName) => sim.elector(id, { leaseName, fallbackAfterMs: 60_000, session, ...CLIENT_GO, push: sim.pushFor(machine) }, { machine, errors }));
    return { machine, session, electors, stop, running };
  });
  await sim.until('each lease held on a session, a successor named', async () => {
    for (const name of LEASES) {
      const l = (await sim.leases.read(name)).item;
      if (!l?.session || !l.successorInstance) return undefined;
    }
    return true;
  });
  await sim.run(3 * L + 77);
  const lease = LEASES[0]!;
  const l = (await sim.leases.read(lease)).item!;
  const holder = procs.find((p) => p.session.name === l.session)!;
  const leader = holder.electors.find((e) => e.elector.options.leaseName === lease)!;
  const heir = procs.flatMap((p) => p.electors.filter((e) => e.elector.instance === l.successorInstance).map((e) => ({ p, e })))[0]!;
  return { sim, procs, holder, leader, heir, lease };
}

const leadersOf = (procs: Process[], lease: string) => procs.flatMap((p) => p.electors.filter((e) => e.elector.options.leaseName === lease && e.elector.isLeader()));
const readsOf = (m: Machine, lease: string) => (r: Machine['sent'][number]) => r.operation === 'GetItem' && (r.input as { TableName?: string }).TableName?.endsWith('-leases') === true && (r.input as { Key?: { name?: { S?: string } } }).Key?.name?.S === lease;

/** Runs until just after the heir's next read of the lease row was answered: its next backstop read is then four lease durations away. */
async function afterHeirLeaseRead(sim: Sim, m: Machine, lease: string): Promise<void> {
  const from = sim.clock.now();
  await sim.until(`a read of ${lease} by its heir`, () => m.sent.some((r) => r.at > from && readsOf(m, lease)(r)), 6 * L);
  await sim.run(200);
}

/** How long after `since` the heir leads, never two leaders of a lease meanwhile. */
function heirLeads(sim: Sim, procs: Process[], heir: SimElector, lease: string, since: number): Promise<number> {
  return sim.until(
    'the heir leading',
    () => {
      for (const n of LEASES) if (leadersOf(procs, n).length > 1) throw new Error(`two leaders of ${n}`);
      return heir.elector.isLeader() && sim.clock.monotonic() - since;
    },
    6 * L,
  );
}

describe("a session-held lease's successor whose wakes are lost, its channel live", () => {
  it("its leader's elector stops (releaseOnCancel), its process running on: the hand-over shows on the holder's session row, and the heir leads within a renew interval (before: 49.4 s, its backstop read)", async () => {
    const { sim, procs, holder, leader, heir, lease } = await fleet();
    expect(leader.elector.isLeader()).toBe(true);
    expect(heir.p).not.toBe(holder);
    sim.deafToWakes.add(heir.p.machine);
    await afterHeirLeaseRead(sim, heir.p.machine, lease);
    const stoppedAt = sim.clock.monotonic();
    await leader.stop();
    expect(holder.session.healthy()).toBe(true); // its process's session lives on, for its elector of the other lease
    const after = await heirLeads(sim, procs, heir.e, lease, stoppedAt);
    console.log(`lost wake, the leader's elector stopped: the heir leads ${after} ms after the stop`);
    // without push, a renew interval (6 s) at most: a lost wake costs no more
    expect(after).toBeLessThan(leader.elector.renewIntervalMs + 1_000);
    await sim.during(L, 'one leader per lease', () => LEASES.every((n) => leadersOf(procs, n).length <= 1));
  });

  it('its leader\'s process stops (SIGTERM: its Session and every elector): the heir leads within a renew interval', async () => {
    const { sim, procs, holder, leader, heir, lease } = await fleet();
    expect(leader.elector.isLeader()).toBe(true);
    sim.deafToWakes.add(heir.p.machine);
    await afterHeirLeaseRead(sim, heir.p.machine, lease);
    const stoppedAt = sim.clock.monotonic();
    holder.stop.abort();
    for (const e of holder.electors) await e.stop();
    await sim.settle(holder.running, 'the session to end');
    const after = await heirLeads(sim, procs, heir.e, lease, stoppedAt);
    console.log(`lost wake, the leader's process stopped: the heir leads ${after} ms after the stop`);
    expect(after).toBeLessThan(leader.elector.renewIntervalMs + 1_000);
  });

});
