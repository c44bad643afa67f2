/**
 * Worker clocks that lie (issue 15, item 4): a worker's wall clock 30 s slow, 30 s fast, or stepped
 * by NTP while it runs, against a coordinator and a DynamoDB that keep the true time. The
 * coordinator judges expiry and acknowledgements from what the workers write, so these run the
 * real SDK and the real coordinator over the DynamoDB model on simulated time
 * (sim/harness.ts): only the workers' clocks are off, and every figure is exact.
 */
import { describe, expect, it } from 'vitest';
import type { ElectionConfigInput } from '../../lib/schemas/config.js';
import { LeaseCandidate } from '../../lib/sdk/candidate.js';
import { IdentityLeaseHeartbeat } from '../../lib/sdk/identity.js';
import { DATE_RESOLUTION_MS, serverClockOf } from '../../lib/sdk/server-clock.js';
import { FAST } from './harness.js';
import { LATENCY_MS, Sim, type Machine } from '../../sim/harness.js';

const L = 'skew';
const ACK_MS = 500;
const TICK_MS = 100;
/** Pure KEP elections (no successor): a vacancy always goes through the coordinator's judgement. */
const CONFIG: ElectionConfigInput = { ackWindowMs: ACK_MS, electedLeaseDurationSeconds: 2, succession: false };
const POLL_MS = FAST.retryPeriodMs * 1.2;
/** A follower that is not the successor reads a quiet lease every two retry periods, jittered by a tenth (lib/sdk/step.ts nextReadDelay). */
const QUIET_POLL_MS = FAST.retryPeriodMs * 2 * 1.1;
const RTT_MS = 2 * LATENCY_MS;
/** LeaderElector's default: stamps within this of DynamoDB's clock, or it does not lead. */
const MAX_CLOCK_ERROR_MS = 500;

describe('worker clocks 30 s off, and stepped (the coordinator keeps the true time)', () => {
  it('30 s slow: the leader renews and is never deposed; the coordinator sees fresh renewals', async () => {
    const sim = await Sim.create({ config: CONFIG });
    const coord = sim.coordinator();
    const s = sim.elector('s', { leaseName: L }, { machine: sim.machine({ offsetMs: -30_000 }) });
    await sim.until('s to lead', () => s.elector.isLeader(), 5_000);
    await sim.during(3 * FAST.leaseDurationMs, 's leads throughout', () => s.elector.isLeader()); // three terms' worth of renewals
    expect(sim.log.of('stopped', 's')).toEqual([]);
    expect(sim.log.of('started', 's')).toHaveLength(1);
    const l = (await sim.leases.read(L)).item!;
    expect(l).toMatchObject({ holderIdentity: 's', electedBy: 'coordinator' }); // elected, not taken by the fallback after its acks went unheard
    const stats = s.elector.stats;
    expect(stats).toMatchObject({ clockSynced: true, clockSkewPreventions: expect.any(Number) });
    expect(Math.abs(stats.clockOffsetMs! - 30_000)).toBeLessThanOrEqual(stats.clockErrorMs!); // it knows its wall clock is 30 s behind
    // the renewal's stamp is DynamoDB's time at the renewal, within the estimate's error
    const renewal = sim.leaseWrites.filter((w) => w.item?.['renewTime'] === l.renewTime).at(0)!;
    expect(Math.abs(l.renewTime! - renewal.at)).toBeLessThanOrEqual(MAX_CLOCK_ERROR_MS);
    expect(sim.clock.now() - renewal.at).toBeLessThanOrEqual(s.elector.renewIntervalMs); // and it renews every renew interval
    expect(coord.errors).toEqual([]);
  });

  it('30 s fast: once it died it is not counted alive; the next election passes it over', async () => {
    const sim = await Sim.create({ config: CONFIG });
    const coord = sim.coordinator();
    // f ranks first (the oldest emulation version): a live f would win every election
    const f = sim.elector('f', { leaseName: L, releaseOnCancel: false }, { machine: sim.machine({ offsetMs: 30_000 }), versions: ['1.29.0', '1.31.0'] });
    await sim.until('f to lead', () => f.elector.isLeader());
    const b = sim.elector('b', { leaseName: L }, { versions: ['1.30.0', '1.31.0'] });
    await sim.settle(b.elector.ready);
    await sim.run(ACK_MS + 200); // f's own stamps are no longer fresh by the true time
    f.machine.kill(); // f crashes: no renewal, no release, no withdrawal
    const died = sim.clock.monotonic();
    await sim.until('b to lead', () => b.elector.isLeader(), 30_000);
    const took = sim.clock.monotonic() - died;
    // b timed f's term on its own clock, from the poll that saw f's last renewal (in true time: a
    // poll and a round trip after it landed at the latest), and reported the vacancy at its next poll …
    const ranOut = sim.lastRenewal(L, 'f') + FAST.leaseDurationMs;
    const writes = sim.leaseWrites.filter((w) => w.at >= died);
    const report = writes.find((w) => (w.item?.['vacancyReport'] as { by?: string } | undefined)?.by === 'b')!;
    expect(report).toBeDefined();
    expect(report.at).toBeGreaterThanOrEqual(ranOut);
    // (a follower that is not the successor reads a quiet lease every two retry periods, jittered by a tenth)
    expect(report.at - ranOut).toBeLessThanOrEqual(QUIET_POLL_MS + RTT_MS + QUIET_POLL_MS + 2 * RTT_MS);
    // … on which the coordinator opened an election at its next tick, whose window f (asked, dead)
    // never answers; a tick after the deadline elected b, which confirmed at its next poll. f's
    // rows, had they claimed it renewed 30 s into the future, would have made it wait for f.
    const opened = writes.find((w) => w.at >= report.at && w.item?.['election'] !== undefined)!;
    expect(opened.at - report.at).toBeLessThanOrEqual(TICK_MS + 4 * RTT_MS); // a tick, its reads, and one retry if a worker wrote meanwhile
    expect(died + took - opened.at).toBeLessThanOrEqual(ACK_MS + TICK_MS + POLL_MS + 4 * RTT_MS);
    expect((await sim.leases.read(L)).item!.holderIdentity).toBe('b');
    expect(coord.errors).toEqual([]);
  });

  it('stepped back 30 s by NTP: its acknowledgements still count at once', async () => {
    const sim = await Sim.create({ config: CONFIG });
    let coord = sim.coordinator();
    const a = sim.elector('a', { leaseName: L }, { versions: ['1.30.0', '1.31.0'] });
    await sim.until('a to lead', () => a.elector.isLeader());
    // The coordinator pauses while b joins, so b's registration is no longer fresh when it looks:
    // b must answer a ping to be preferred.
    coord.stop();
    const machine = sim.machine();
    const b = sim.elector('b', { leaseName: L }, { machine, versions: ['1.29.0', '1.31.0'] });
    await sim.settle(b.elector.ready);
    await sim.run(ACK_MS + 200);
    machine.clock.offsetMs = -30_000; // NTP steps b's clock back 30 s
    coord = sim.coordinator();
    const back = sim.clock.monotonic();
    // b ranks first: a re-election pings it, it answers at its next poll, the next tick prefers it
    // (and names it successor), a yields at its next renewal and hands the term to b, which is
    // reading just then and confirms: polls and ticks, no ack window run out, no term waited out
    await sim.until('b to lead', () => b.elector.isLeader(), 8_000);
    expect(sim.clock.monotonic() - back).toBeLessThanOrEqual(3 * TICK_MS + 2 * POLL_MS + a.elector.renewIntervalMs + 10 * RTT_MS);
    expect(a.elector.isLeader()).toBe(false);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
    expect(coord.errors).toEqual([]);
  });
});

describe('every time the SDK writes is DynamoDB’s, whatever the wall clock says', () => {
  it('a LeaseCandidate 30 s slow and an IdentityLeaseHeartbeat 30 s fast write the true time; so does a stepped one', async () => {
    const sim = await Sim.create();
    const slow = sim.machine({ offsetMs: -30_000 });
    const fast = sim.machine({ offsetMs: 30_000 });
    const c = new LeaseCandidate({ leaseName: L, name: 'c', tables: sim.names, client: slow.client, clock: slow.clock, emulationVersion: '1.30.0', binaryVersion: '1.31.0' });
    const h = new IdentityLeaseHeartbeat({ client: fast.client, tables: sim.names, component: 'skewed', hostname: 'h1', clock: fast.clock });
    const stop = new AbortController();
    const runs = [c.run(stop.signal), h.run(stop.signal)];
    const [row, beat] = await sim.settle(Promise.all([c.ready, h.ready]));
    // one response bounds DynamoDB's time to its Date header's second and the round trip
    const oneSample = DATE_RESOLUTION_MS / 2 + RTT_MS;
    expect(Math.abs(row.renewTime - writeTime(sim, slow))).toBeLessThanOrEqual(oneSample);
    expect(Math.abs(beat.renewTime - writeTime(sim, fast))).toBeLessThanOrEqual(oneSample);
    await sim.run(600); // a second response, 600 ms on (another point of the server's second), narrows the estimate
    slow.clock.offsetMs += 75_000; // and now a step of 75 s
    await sim.settle(c.renew());
    await sim.settle(h.renew());
    const renewed = await sim.candidates.read(L, 'c');
    expect(Math.abs(renewed.item!.renewTime - writeTime(sim, slow))).toBeLessThanOrEqual(MAX_CLOCK_ERROR_MS);
    const [identity] = sim.model.items(sim.names.identities);
    expect(Math.abs(Number(identity!['renewTime']!.N) - writeTime(sim, fast))).toBeLessThanOrEqual(MAX_CLOCK_ERROR_MS);
    stop.abort();
    await sim.settle(Promise.all(runs));
  });
});

/** True time the machine's last write reached DynamoDB (sent, plus the way there). */
function writeTime(sim: Sim, m: Machine): number {
  const w = m.sent.filter((r) => r.operation === 'UpdateItem' || r.operation === 'PutItem').at(-1)!;
  return w.at + LATENCY_MS; // the simulated clock's monotonic time is its epoch time
}

describe('beyond the bound: a worker that cannot tell DynamoDB’s time does not lead', () => {
  /** A machine whose responses lose their Date header (a proxy that strips it). */
  function dateless(sim: Sim): Machine {
    const m = sim.machine();
    serverClockOf(m.client, m.clock); // the SDK's middleware first: the one added after it runs inside it
    m.client.middlewareStack.add(
      (next) => async (args) => {
        const out = await next(args);
        const headers = (out.response as { headers: Record<string, string> }).headers;
        delete headers['date'];
        return out;
      },
      { step: 'deserialize', priority: 'low', name: 'stripDate' },
    );
    return m;
  }

  it('no Date header: it stays a follower, counts clock skew preventions and says why; with clockSync none it leads', async () => {
    const sim = await Sim.create({ config: CONFIG });
    const errors: Error[] = [];
    sim.coordinator();
    const machine = dateless(sim);
    const n = sim.elector('n', { leaseName: L, mode: 'NoCoordination' }, { machine, errors });
    await sim.during(FAST.leaseDurationMs + 3 * FAST.retryPeriodMs, 'n never leads', () => !n.elector.isLeader());
    expect(n.elector.stats).toMatchObject({ clockSynced: false, clockErrorMs: undefined, clockOffsetMs: undefined });
    expect(n.elector.stats.clockSkewPreventions).toBeGreaterThan(1);
    const skew = errors.filter((e) => e.name === 'ClockSkewError');
    expect(skew).toHaveLength(1); // once per spell, not once per poll
    expect(skew[0]!.message).toMatch(/no response with a Date header yet.*clockSync: 'none'/);
    await n.stop();
    const trusting = sim.elector('trusting', { leaseName: L, mode: 'NoCoordination', clockSync: 'none' }, { machine });
    const from = sim.clock.monotonic();
    await sim.until('the trusting one to lead', () => trusting.elector.isLeader(), 5_000);
    expect(sim.clock.monotonic() - from).toBeLessThanOrEqual(3 * RTT_MS); // at its first poll: stand, read, take
    expect(trusting.elector.stats).toMatchObject({ clockSynced: true, clockSkewPreventions: 0 });
  });

  it('its measurement of DynamoDB’s time jumps (the machine was suspended, and has no clock since boot to tell: its monotonic clock stood still): a leader stops at the next response', async () => {
    const sim = await Sim.create();
    const errors: Error[] = [];
    const a = sim.elector('a', { leaseName: L, mode: 'NoCoordination' }, { errors });
    Object.assign(a.machine.clock, { sinceBoot: undefined }); // a custom Clock: nothing tells a suspend from a step of the server's clock
    await sim.until('a to lead', () => a.elector.isLeader());
    await sim.run(3 * FAST.retryPeriodMs);
    a.machine.clock.lostMs = 20_000; // 20 s this machine's monotonic clock did not count
    const from = sim.clock.monotonic();
    await sim.until('a to stop', () => !a.elector.isLeader(), 10_000);
    expect(sim.clock.monotonic() - from).toBeLessThanOrEqual(FAST.retryPeriodMs + RTT_MS); // its next renewal's response
    expect(sim.log.of('stopped', 'a')[0]?.reason).toBe('renewDeadline');
    const jumped = Number(/jumped by (\d+) ms/.exec(errors.find((e) => e.name === 'ClockSkewError')?.message ?? '')?.[1]);
    expect(jumped).toBeGreaterThan(20_000 - DATE_RESOLUTION_MS); // the 20 s it did not count, less the samples' width
    expect(jumped).toBeLessThan(20_000 + DATE_RESOLUTION_MS);
    expect(a.elector.stats.clockSkewPreventions).toBeGreaterThan(0);
    // once two responses agree again it may lead again
    await sim.until('a to lead again', () => a.elector.isLeader(), 10_000);
  });

  it('DynamoDB’s clock steps 5 s forward (its clock since boot shows no sleep): a jump, a leader stops at the next response and says so, as before', async () => {
    const sim = await Sim.create();
    const errors: Error[] = [];
    const a = sim.elector('a', { leaseName: L, mode: 'NoCoordination' }, { errors });
    const c = a.machine.clock;
    let stepped = 0;
    // serverTime − monotonic grows by 5 s with no sleep: to this machine, the same as the server's clock stepping
    Object.assign(c, { sinceBoot: () => c.monotonic() + c.lostMs - stepped });
    await sim.until('a to lead', () => a.elector.isLeader());
    await sim.run(3 * FAST.retryPeriodMs);
    c.lostMs += 5_000;
    stepped = 5_000;
    const from = sim.clock.monotonic();
    await sim.until('a to stop', () => !a.elector.isLeader(), 10_000);
    expect(sim.clock.monotonic() - from).toBeLessThanOrEqual(FAST.retryPeriodMs + RTT_MS);
    const jumped = Number(/jumped by (\d+) ms/.exec(errors.find((e) => e.name === 'ClockSkewError')?.message ?? '')?.[1]);
    expect(jumped).toBeGreaterThan(5_000 - DATE_RESOLUTION_MS);
    expect(jumped).toBeLessThan(5_000 + DATE_RESOLUTION_MS);
  });

  it('suspended past its renew deadline, its clock since boot counting it: a leader stops by its deadline counting the sleep, no jump told', async () => {
    const sim = await Sim.create();
    const errors: Error[] = [];
    const a = sim.elector('a', { leaseName: L, mode: 'NoCoordination' }, { errors });
    await sim.until('a to lead', () => a.elector.isLeader());
    await sim.run(3 * FAST.retryPeriodMs);
    // suspended 20 s: the process stands still while DynamoDB's clock goes on, and its monotonic clock does not count them
    // (lostMs set alone would move its monotonic clock back 20 s with no time passing: its last renewal, counting the
    // sleep, a second and a quarter old, a term it may keep, and does once the clock is vouched for again)
    const c = a.machine.clock;
    c.pause();
    const sleptAt = sim.clock.monotonic();
    await sim.run(20_000);
    c.lostMs += sim.clock.monotonic() - sleptAt;
    c.resume();
    const from = sim.clock.monotonic();
    await sim.until('a to stop', () => !a.elector.isLeader(), 10_000);
    expect(sim.clock.monotonic() - from).toBeLessThanOrEqual(FAST.retryPeriodMs + RTT_MS); // its first look at its clocks
    expect(sim.log.of('stopped', 'a')[0]?.reason).toBe('renewDeadline');
    expect(errors.filter((e) => e.name === 'ClockSkewError' && /jumped/.test(e.message))).toEqual([]);
    await sim.until('a to lead again', () => a.elector.isLeader(), 10_000);
  });
});

describe('a fresh process: how soon it can vouch for DynamoDB’s time', () => {
  it.each(['coordinated', 'NoCoordination'] as const)('%s: at the answer to its first request sent after its first answer came back, wherever in the server’s second it starts (the first one’s middle not kept)', async (mode) => {
    const late: { startMs: number; waitedMs: number; secondMs: number }[] = [];
    for (let startMs = 0; startMs < DATE_RESOLUTION_MS; startMs += 100) {
      const sim = await Sim.create();
      await sim.run(startMs);
      const a = sim.elector('a', { leaseName: L, mode });
      await sim.until('a to vouch for its clock', () => a.elector.stats.clockSynced, 10_000);
      const firstAnswer = a.machine.sent[0]!.at + RTT_MS;
      const second = a.machine.sent.find((r) => r.at > firstAnswer)!.at + RTT_MS;
      const waitedMs = sim.clock.monotonic() - firstAnswer;
      if (waitedMs !== second - firstAnswer) late.push({ startMs, waitedMs, secondMs: second - firstAnswer });
      await a.stop();
    }
    // after its first answer: 8 ms coordinated (its first requests go out back to back), 277 ms NoCoordination (its poll,
    // the take held off); before: 192 to 533 ms coordinated, 277 or 580 ms NoCoordination, until a response sent about
    // half a second after the first, or one from the next server second, forced the first one's middle off
    expect(late).toEqual([]);
  });
});
