/**
 * DynamoDB back after an outage: how soon the workers lead again. On simulated time at client-go's
 * timings (15/10/2 s), three coordinated electors, one leading with a successor named; then every
 * request of every process is black-holed (DynamoDB gone, no answer: each request waits out its
 * bound), long enough for each follower's backoff to reach its cap, and DynamoDB comes back just
 * after the successor sent a read into the void. Its backoff counts from when that try went out, so
 * the wait it spent on the unanswered request is part of it, not added to it. A Session that ended
 * in the outage likewise starts again once its last try's bound or its capped backoff is over,
 * whichever is longer.
 */
import { describe, expect, it } from 'vitest';
import { MIN_REQUEST_BOUND_MS, requestBoundMs } from '../../lib/sdk/bounded-client.js';
import { LeaseCandidate } from '../../lib/sdk/candidate.js';
import { RETRY_CAP_PERIODS, RETRY_JITTER, START_RETRY_MS } from '../../lib/sdk/faults.js';
import { IdentityLeaseHeartbeat } from '../../lib/sdk/identity.js';
import { Session } from '../../lib/sdk/session.js';
import { Sim } from '../../sim/harness.js';
import { CLIENT_GO, CONFIG, L, group, leaders, onLeases } from './fault-group.js';

/** The longest backoff a follower waits between two tries (its cap, jittered at most). */
const CAPPED_MS = CLIENT_GO.retryPeriodMs * RETRY_CAP_PERIODS * (1 + RETRY_JITTER);

describe('DynamoDB back after an outage', () => {
  it('a follower whose read went into the void reads again within its capped backoff of that read, and a leader follows within a retry period more', async () => {
    const { sim, es, successor } = await group();
    const reads = () => successor.machine.sent.filter((r) => r.operation === 'GetItem' && onLeases(sim, r));
    for (const e of es) e.machine.swallow = () => true;
    await sim.run(60_000); // every backoff at its cap, the leader stopped at its renew deadline
    expect(leaders(es)).toEqual([]);
    // back just after the successor's next read went out: that one is never answered
    const before = reads().length;
    await sim.until('the successor sends a read into the void', () => reads().length > before, 2 * (CAPPED_MS + MIN_REQUEST_BOUND_MS));
    const backAt = sim.clock.monotonic();
    for (const e of es) e.machine.swallow = undefined;
    await sim.until('the successor reads again', () => reads().some((r) => r.at > backAt && r.ok), 60_000);
    const readAgainMs = reads().find((r) => r.at > backAt && r.ok)!.at - backAt;
    // before: the read's bound (5 s) and then the whole capped backoff (8-9.6 s) after it
    expect(readAgainMs).toBeLessThanOrEqual(CAPPED_MS);
    await sim.until('a leader again', () => leaders(es)[0], 60_000);
    expect(sim.clock.monotonic() - backAt).toBeLessThanOrEqual(CAPPED_MS + CLIENT_GO.retryPeriodMs);
    expect((await sim.leases.read(L)).item?.holderIdentity).toBe(leaders(es)[0]!.elector.options.identity);
  });

  it('a Session that ended in the outage: its start that went into the void is tried again once the bound of that try or the capped backoff is over, whichever is longer', async () => {
    const sim = await Sim.create({ config: CONFIG });
    const m = sim.machine();
    const session = new Session({ client: m.client, tables: sim.names, clock: m.clock, onError: () => undefined });
    const running = session.run(new AbortController().signal);
    await sim.until('the session started', () => session.name);
    const { retryPeriodMs, renewDeadlineMs } = session.options;
    const capped = retryPeriodMs * RETRY_CAP_PERIODS * (1 + RETRY_JITTER);
    m.swallow = () => true;
    await sim.run(60_000); // the session ended at its deadline; its starts back off to the cap
    expect(session.name).toBeUndefined();
    const sent = m.sent.length;
    await sim.until('a start sent into the void', () => m.sent.length > sent, 2 * (capped + requestBoundMs(renewDeadlineMs)));
    const backAt = sim.clock.monotonic();
    m.swallow = undefined;
    await sim.until('a session again', () => session.name, 60_000);
    // the longer of the start's bound (7.5 s: that start is never answered) and the capped backoff (7.2 s), and one more start;
    // before: the bound and then the whole capped backoff after it
    expect(sim.clock.monotonic() - backAt).toBeLessThanOrEqual(Math.max(capped, requestBoundMs(renewDeadlineMs)) + retryPeriodMs);
    void running;
  });

  /** The longest backoff between two start-up tries (START_RETRY_MS at its cap, jittered at most). */
  const START_CAPPED_MS = START_RETRY_MS * RETRY_CAP_PERIODS * (1 + RETRY_JITTER);

  /**
   * `start` (a LeaseCandidate's or IdentityLeaseHeartbeat's run) begun with every request
   * black-holed, long enough for its start-up's backoff to reach its cap; DynamoDB back just after
   * a try went into the void. How long from then until `ready` resolves.
   */
  async function startedAfterOutage(start: (m: ReturnType<Sim['machine']>, sim: Sim) => { ready: Promise<unknown>; run: (s: AbortSignal) => Promise<void> }, boundMs: number): Promise<number> {
    const sim = await Sim.create({ config: CONFIG });
    const m = sim.machine();
    m.swallow = () => true;
    const o = start(m, sim);
    let ready = false;
    void o.ready.then(() => (ready = true));
    void o.run(new AbortController().signal);
    await sim.run(120_000); // its start-up's tries back off to the cap
    const sent = m.sent.length;
    await sim.until('a start-up try sent into the void', () => m.sent.length > sent, 2 * (START_CAPPED_MS + boundMs));
    const backAt = sim.clock.monotonic();
    m.swallow = undefined;
    await sim.until('started', () => ready, 120_000);
    return sim.clock.monotonic() - backAt;
  }

  it('a LeaseCandidate starting in the outage: its registration that went into the void is tried again once the bound of that try or the capped backoff is over, whichever is longer', async () => {
    const boundMs = requestBoundMs(15_000); // its claim window's
    const ms = await startedAfterOutage((m, sim) => new LeaseCandidate({ leaseName: L, name: 'c', emulationVersion: '1.30.0', binaryVersion: '1.30.0', client: m.client, tables: sim.names, clock: m.clock, onError: () => undefined }), boundMs);
    // before: the bound (15 s: that try is never answered) and then the whole capped backoff (4-4.8 s) after it
    expect(ms).toBeLessThanOrEqual(Math.max(START_CAPPED_MS, boundMs) + START_RETRY_MS);
  });

  it('an IdentityLeaseHeartbeat starting in the outage: its first write that went into the void is tried again once the bound of that try or the capped backoff is over, whichever is longer', async () => {
    const boundMs = requestBoundMs(10_000); // its renew interval's
    const ms = await startedAfterOutage((m, sim) => new IdentityLeaseHeartbeat({ component: 'c', hostname: 'host-1', client: m.client, tables: sim.names, clock: m.clock, onError: () => undefined }), boundMs);
    // before: the bound (10 s) and then the whole capped backoff (4-4.8 s) after it
    expect(ms).toBeLessThanOrEqual(Math.max(START_CAPPED_MS, boundMs) + START_RETRY_MS);
  });
});
