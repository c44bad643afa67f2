import { systemClock, type Clock, type Timer } from '../../lib/clock.js';
import { RUNTIME_REQUEST_MS } from '../../lib/local/runtime.js';
import { RUNTIME_LOCK_HEARTBEAT_MS } from '../../lib/local/runtime-lock.js';

/**
 * The machine's clock for a local runtime whose requests a test holds unanswered: the monotonic
 * clock still (the runtime's lock stays sure, so no renewal is sent), the lock's heartbeat never
 * fired, and each request's bound (RUNTIME_REQUEST_MS) given to `bound`, to fire or not, instead
 * of armed; `other` may take any other timer first (undefined: the machine's clock arms it).
 */
export function heldBoundsClock(bound: (fn: () => void) => Timer, other?: (ms: number, fn: () => void) => Timer | undefined): Clock {
  const still = systemClock.monotonic();
  return {
    ...systemClock,
    monotonic: () => still,
    setTimer: (ms, fn, o) => {
      if (ms === RUNTIME_LOCK_HEARTBEAT_MS) return { cancel: () => undefined };
      if (ms === RUNTIME_REQUEST_MS) return bound(fn);
      return other?.(ms, fn) ?? systemClock.setTimer(ms, fn, o);
    },
  };
}
