/**
 * DynamoDB back after an outage: how soon the workers lead again. On simulated time at client-go's
 * timings (15/10/2 s), three coordinated electors, one leading with a successor named; then every
 * request of every process is black-holed (DynamoDB gone, no answer: each request waits out its
 * bound), long enough for each follower's backoff to reach its cap, and DynamoDB comes back just
 * after the successor sent a read into the void. Its backoff counts from when that try went out, so
 * the wait it spent on the unanswered request is part of it, not added to it.
 */
import { describe, expect, it } from 'vitest';
import { MIN_REQUEST_BOUND_MS } from '../../lib/sdk/bounded-client.js';
import { RETRY_CAP_PERIODS, RETRY_JITTER } from '../../lib/sdk/faults.js';
import { CLIENT_GO, L, group, leaders, onLeases } from './fault-group.js';

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
});
