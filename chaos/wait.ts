/**
 * Waiting in the chaos runs: real processes on real time (the machine's clock, lib/clock.ts'
 * systemClock), so every wait here is for an outcome, with a bound.
 */
import { systemClock } from '../lib/clock.js';

/**
 * Polls `probe` every `everyMs` until it gives a value (returned) or `timeoutMs` has passed
 * (undefined: the caller says what that means).
 */
export async function waitFor<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, o: { timeoutMs: number; everyMs: number }): Promise<T | undefined> {
  const end = systemClock.monotonic() + o.timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (systemClock.monotonic() > end) return undefined;
    await systemClock.sleep(o.everyMs);
  }
}

/** Whether `p` settles within `ms` (it is not cancelled if not). */
export async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  const timeout = new AbortController();
  const settled = p.then(
    () => true,
    () => true,
  );
  try {
    return await Promise.race([settled, systemClock.sleep(ms, timeout.signal).then(() => false)]);
  } finally {
    timeout.abort(); // the timer goes: a finished wait keeps no process alive
  }
}
