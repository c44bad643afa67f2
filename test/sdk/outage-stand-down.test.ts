/**
 * A DynamoDB outage that comes and goes: each up window lets some candidate take the vacant lease,
 * and the next down window costs that term before any renewal of it lands. A term lost so is no
 * failed start (the worker did nothing wrong), so no candidate stands down for it, and the lease has
 * a leader within the history checker's bound after the heal (60 s). Found by review (2026-12-07,
 * twelfth): every candidate stood down within two minutes, and the next leader came 481.9 s after
 * the heal, at a candidacy's own renewal. And where every candidate does stand down (its work fails
 * at each start), one takes the lease by the fallback a lease duration after a healthy one would.
 * On simulated time at client-go's timings (15/10/2 s), three coordinated electors and the real
 * coordinator.
 */
import { describe, expect, it } from 'vitest';
import { faults } from '../../sim/dynamodb-model/index.js';
import { Sim } from '../../sim/harness.js';
import { CLIENT_GO, CONFIG, group, L, leaders, onLeases } from './fault-group.js';

/** The checker's leaderless bound after a heal. */
const HEALED_LEADER_MS = 60_000;

const unavailable = () => Object.assign(new Error('service unavailable'), { name: 'ServiceUnavailable', $fault: 'server', $metadata: { httpStatusCode: 503 } });

describe('a DynamoDB outage that comes and goes', () => {
  it.each([
    [12_000, 3_000],
    [14_000, 4_000],
  ])('%i ms down / %i ms up for two minutes, then healed: a leader within 60 s of the heal', async (downMs, upMs) => {
    const { sim, es } = await group();
    const from = sim.clock.monotonic();
    const down = () => (sim.clock.monotonic() - from) % (downMs + upMs) < downMs;
    for (const e of es) e.machine.fault = () => (down() ? unavailable() : undefined);
    await sim.run(120_000);
    for (const e of es) e.machine.fault = undefined;
    const healedAt = sim.clock.monotonic();
    // before the fix: all three stood down (failed starts 2, 2, 4 at 12/3; 2, 2, 2 at 14/4)
    expect(es.filter((e) => e.elector['known'].standsDown).map((e) => e.elector.options.identity)).toEqual([]);
    // before the fix: every candidate stood down, and the next leader came at a candidacy's own renewal (481.9 s on)
    await sim.until('a leader after the heal', () => leaders(es)[0], 10 * 60_000);
    expect(sim.clock.monotonic() - healedAt).toBeLessThanOrEqual(HEALED_LEADER_MS);
  });
});

describe('a best candidate that may take the lease but not renew it', () => {
  // b leads; a, the older emulation version, joins and is handed the lease (led from the read, no write), its lease UpdateItems refused
  it.each([
    ['its role denies them (AccessDeniedException): after two such terms it stands down, and the healthy worker leads on', () => faults.accessDenied('UpdateItem', 'leases'), true],
    ['DynamoDB fails them (503): no failed start, it stands again each time', unavailable, false],
  ] as const)('its renewals refused, %s', async (_, refusal, standsDown) => {
    const sim = await Sim.create({ config: CONFIG });
    sim.coordinator({ tickEveryMs: 1_000 });
    const b = sim.elector('b', { leaseName: L, ...CLIENT_GO }, { versions: ['1.30.0', '1.30.0'] });
    await sim.until('b leads', () => b.elector.isLeader(), 60_000);
    const a = sim.elector('a', { leaseName: L, ...CLIENT_GO }, { versions: ['1.29.0', '1.29.0'] });
    a.machine.fault = (req) => (req.operation === 'UpdateItem' && onLeases(sim, req) ? refusal() : undefined);
    const lost = () => sim.log.of('stopped', 'a').filter((x) => x.reason === 'renewDeadline').length;
    await sim.until('a lost two terms at their renew deadline', () => lost() >= 2, 5 * 60_000);
    expect(a.elector['known'].standsDown).toBe(standsDown);
    if (!standsDown) return;
    // standing down: b leads, and is not preempted for a, for the next two minutes
    await sim.until('b leads', () => b.elector.isLeader(), 60_000);
    const starts = sim.log.of('started', 'a').length;
    await sim.during(120_000, 'b leads on', () => b.elector.isLeader());
    expect(sim.log.of('started', 'a').length).toBe(starts);
  });
});

describe('every candidate stands down', () => {

  it("every candidate's work failing at its start at once (a dependency of the work down): all stand down, yet once the work is healed the lease has a leader within a lease duration past the fallback, not at a candidacy's own renewal", async () => {
    const sim = await Sim.create({ config: CONFIG });
    sim.coordinator({ tickEveryMs: 1_000 });
    let failing = true;
    const es = ['a', 'b', 'c'].map((id) => {
      const m = sim.machine();
      const onStartedLeading = async () => {
        if (!failing) return;
        await m.clock.sleep(1_000);
        throw new Error('its dependency is down');
      };
      return sim.elector(id, { leaseName: L, ...CLIENT_GO, callbacks: { onStartedLeading, onStoppedLeading: () => undefined } }, { machine: m });
    });
    await sim.until('every candidate stands down', () => es.every((e) => e.elector['known'].standsDown), 5 * 60_000);
    failing = false;
    const healedAt = sim.clock.monotonic();
    // the lease stood vacant since the last failed term at the latest: taken by the fallback a lease duration past it (45 + 15 s), within a poll
    await sim.until('a leader once the work is healed', () => leaders(es)[0], 10 * 60_000);
    const fallbackAfterMs = 3 * CLIENT_GO.leaseDurationMs;
    expect(sim.clock.monotonic() - healedAt).toBeLessThanOrEqual(fallbackAfterMs + CLIENT_GO.leaseDurationMs + 2 * CLIENT_GO.retryPeriodMs); // before the fix: at a candidacy's renewal, up to 10 min on
  });
});
