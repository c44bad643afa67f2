import { reconcileLease, type CoordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { WAIT_GUARD_MS } from '../guards.js';

/** Electors that log their callbacks: the same on DynamoDB Local and on the simulation (sim/harness.ts). */
export { FAST, Log, startElector, type LogEntry, type RunningElector } from '../../sim/harness.js';

/** The coordinator, driven in-process: reconcile one lease every `everyMs` (stands in for streams and the timer). */
export function coordinatorLoop(deps: CoordinatorDeps, leaseName: string, everyMs = 100) {
  let running = true;
  const errors: Error[] = [];
  const done = (async () => {
    while (running) {
      try {
        await reconcileLease(deps, leaseName);
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
