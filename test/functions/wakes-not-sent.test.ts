/**
 * Wakes not sent are counted (`conclave_wakes_not_sent`, with the function and its deployment), as
 * records failed are: a review (2026-12-07, fifteenth) found them a WARN line each and nothing else,
 * so a role without iot:Publish, or IoT Core throttling, slowed every failover (followers reading
 * only every 2 to 4 lease durations) with no metric to see it by. Counted once the invocation's wakes
 * settle: those that failed, those still queued (dropped) and those unanswered; one failing after
 * that was counted unanswered. None not sent publishes nothing.
 */
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../lib/clock.js';
import { withWakes, WAKES_SETTLE_MARGIN_MS, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { WAKES_NOT_SENT } from '../../lib/functions/metrics.js';
import { WAKES_IN_FLIGHT, type Waker } from '../../lib/functions/wake.js';
import { metricDocs } from '../support.js';

/** An invocation's deps with `wake` (no candidates on a session: each wake goes to its lease's topic alone). */
function deps(wake: Waker): FunctionDeps {
  const coordinator = { clock: systemClock, candidates: { list: async () => ({ candidates: [] }) } };
  return { ...observability('leaseStream', 'SILENT', 'orders-leases'), coordinator, wake } as unknown as FunctionDeps;
}

/** The WAKES_NOT_SENT values one invocation published: `run` sends its wakes, then the invocation ends with `remainingMs`. */
async function counted(d: FunctionDeps, run: (send: (lease: string) => void) => Promise<void>, remainingMs: number) {
  const { docs } = await metricDocs(async () => {
    const w = withWakes(d);
    await run((lease) => w.deps.wakes!.send(lease, 1));
    await w.end(remainingMs);
    d.metrics.publishStoredMetrics();
  });
  return docs.filter((x) => WAKES_NOT_SENT in x);
}

describe('wakes not sent are counted', () => {
  it('each publish refused (iot:Publish denied), with the function and its deployment', async () => {
    const refused: Waker = async () => {
      throw Object.assign(new Error('not authorized to perform: iot:Publish'), { name: 'ForbiddenException' });
    };
    const docs = await counted(deps(refused), async (send) => {
      for (const lease of ['a', 'b', 'c']) send(lease);
      await new Promise((resolve) => setImmediate(resolve));
    }, 60_000);
    // before: none (a WARN line per wake)
    expect(docs).toHaveLength(1);
    expect(docs[0]).toMatchObject({ service: 'conclave', function: 'leaseStream', deployment: 'orders-leases', [WAKES_NOT_SENT]: 3 });
    const declared = (docs[0]!['_aws'] as { CloudWatchMetrics: { Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[] }).CloudWatchMetrics;
    expect(declared.flatMap((m) => m.Metrics)).toContainEqual({ Name: WAKES_NOT_SENT, Unit: 'Count' });
    expect(declared.flatMap((m) => m.Dimensions)).toEqual([expect.arrayContaining(['service', 'function', 'deployment'])]);
  });

  it('those given up at the end of the invocation (queued: dropped; sent: unanswered), once: one failing after is not counted again', async () => {
    const pending: ((e: Error) => void)[] = [];
    const hung: Waker = () => new Promise((_, reject) => void pending.push(reject));
    const d = deps(hung);
    const docs = await counted(d, async (send) => {
      for (let i = 0; i < WAKES_IN_FLIGHT + 2; i++) send(`lease-${i}`);
    }, WAKES_SETTLE_MARGIN_MS); // no time left to wait for them
    expect(pending).toHaveLength(WAKES_IN_FLIGHT);
    expect(docs.map((x) => x[WAKES_NOT_SENT])).toEqual([WAKES_IN_FLIGHT + 2]);
    // the unanswered fail later (their own timeout): told in the log, not counted twice
    const later = await metricDocs(async () => {
      for (const reject of pending) reject(new Error('timed out'));
      await new Promise((resolve) => setImmediate(resolve));
      d.metrics.publishStoredMetrics();
    });
    expect(later.docs.filter((x) => WAKES_NOT_SENT in x)).toEqual([]);
  });

  it('none when every wake was answered', async () => {
    const docs = await counted(deps(async () => undefined), async (send) => {
      send('a');
      await new Promise((resolve) => setImmediate(resolve));
    }, 60_000);
    expect(docs).toEqual([]);
  });
});
