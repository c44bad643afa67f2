import { reconcileLease, type CoordinatorDeps } from '../../lib/coordinator/reconcile.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { WAIT_GUARD_MS } from '../guards.js';

/** Electors that log their callbacks: the same on DynamoDB Local and on the simulation (sim/harness.ts). */
export { FAST, Log, startElector, type LogEntry, type RunningElector } from '../../sim/harness.js';

/** The coordinator, driven in-process: reconcile one lease every `everyMs` (stands in for streams and the timer). */
export function coordinatorLoop(deps: CoordinatorDeps, leaseName: string, everyMs = 100, afterPass?: () => Promise<void>) {
  let running = true;
  const errors: Error[] = [];
  const done = (async () => {
    while (running) {
      try {
        await reconcileLease(deps, leaseName);
        await afterPass?.();
      } catch (e) {
        errors.push(e as Error);
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    errors,
    async stop() {
      running = false;
      await done;
    },
  };
}

/**
 * Polls `probe` until it gives a value: an outcome of DynamoDB Local or real processes, however long
 * a busy machine takes. No budget to pass: only WAIT_GUARD_MS, a hang guard, ends the wait.
 */
export async function waitFor<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>): Promise<T> {
  const end = performance.now() + WAIT_GUARD_MS;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (performance.now() > end) throw new Error(`hung: still waiting for ${what} after ${WAIT_GUARD_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Elector timings for real-time tests whose subject is not the renew deadline: a term outlives a
 * busy machine's stall (1–3 s at load 15+). On FAST's 1.5 s renew deadline a term confirmed or
 * renewed late is given back and the successor takes it, so a role read a moment before (the
 * leader, its heir) is no longer true when the test acts on it. The renewal interval is set: a
 * coordinated leader's default (renew deadline − 2 retry periods) would leave a stall only 1 s
 * between a renewal due and the deadline; here it is 4 s.
 */
export const STEADY = { leaseDurationMs: 8_000, renewDeadlineMs: 6_000, retryPeriodMs: 500, renewIntervalMs: 2_000 } as const;

/**
 * The one of `electors` leading now, and its term's fencing token: its elector says so, and the
 * lease row read after agrees (holder and token). Picked at the moment of acting, never from an
 * earlier read or from the log: a term can change hands in between.
 */
export function leaderNow<E extends { elector: { isLeader(): boolean; readonly fencingToken: number | undefined; readonly options: { identity: string } } }>(
  electors: readonly E[],
  read: () => Promise<Lease | undefined>,
): Promise<{ leader: E; token: number; row: Lease }> {
  return waitFor('an elector leading now, the lease row agreeing', async () => {
    const leader = electors.find((e) => e.elector.isLeader());
    const token = leader?.elector.fencingToken;
    if (!leader || token === undefined) return undefined;
    const row = await read();
    return row?.holderIdentity === leader.elector.options.identity && row.fencingToken === token && leader.elector.fencingToken === token ? { leader, token, row } : undefined;
  });
}

/** The ValidationError `f` throws (any other outcome fails the test). */
export function validationError(f: () => unknown): ValidationError {
  try {
    f();
  } catch (e) {
    if (e instanceof ValidationError) return e;
    throw e;
  }
  throw new Error('expected a ValidationError');
}
