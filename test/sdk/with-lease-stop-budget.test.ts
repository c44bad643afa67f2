/**
 * How long withLease takes to settle once its function is done, DynamoDB black-holed, on simulated
 * time: the stop's budget (STOP_BUDGET_MS), as a worker's run() — and README's "Giving the lease up"
 * says so (it said the release was tried up to five times, the call settling up to about 30 s after
 * the signal aborted).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { STOP_BUDGET_MS } from '../../lib/sdk/faults.js';
import { aborted } from '../../lib/sdk/options.js';
import { withLease, type WithLeaseOptions } from '../../lib/sdk/with-lease.js';
import { Sim, type Machine } from '../../sim/harness.js';

const L = 'nightly';
const DEFAULTS = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const opts = (sim: Sim, m: Machine, extra: Partial<WithLeaseOptions> = {}): WithLeaseOptions => ({ client: m.client, clock: m.clock, tables: sim.names, identity: 'a', mode: 'NoCoordination', platform: 'none', ...DEFAULTS, onError: () => undefined, ...extra });

describe('withLease with every request black-holed once its function is done', () => {
  it.each(['returns', 'stops on a cancel'] as const)('the function %s: the call settles within the stop budget of it (STOP_BUDGET_MS)', async (how) => {
    const sim = await Sim.create();
    const a = sim.machine();
    const cancel = new AbortController();
    let doneAt = 0;
    const p = withLease(L, async (signal) => {
      await a.clock.sleep(1_000);
      a.swallow = () => true;
      doneAt = sim.elapsed;
      if (how === 'returns') return 'ok';
      cancel.abort(new Error('SIGTERM'));
      await aborted(signal);
      throw signal.reason;
    }, opts(sim, a, { signal: cancel.signal }));
    await sim.settle(p, 'run', 120_000).catch((e: unknown) => e);
    expect(sim.elapsed - doneAt).toBeLessThanOrEqual(STOP_BUDGET_MS);
  });

  it("README's withLease section says that bound, not five tries and about 30 s", () => {
    const readme = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '../../README.md'), 'utf8');
    const giving = readme.slice(readme.indexOf('- **Giving the lease up**'), readme.indexOf('- **Modes:**'));
    expect(giving).toContain(`at most ${STOP_BUDGET_MS / 1000} s after \`fn\` returns`);
    expect(giving).not.toMatch(/five times|30 s/);
  });
});
