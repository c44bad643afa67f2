/** Time comes in through this, never from Date.now() inside a decision. */
export interface Clock {
  /** Epoch milliseconds: stamps written to tables (compared across machines only with a margin). */
  now(): number;
  /**
   * Milliseconds on a clock that never jumps: what durations on this machine are measured with
   * (client-go's observedTime). Defaults to now() where a clock has no separate one.
   */
  monotonic?(): number;
}

export const systemClock: Clock = { now: () => Date.now(), monotonic: () => performance.now() };

export const monotonicOf = (c: Clock): number => (c.monotonic ? c.monotonic() : c.now());

/**
 * A machine whose wall clock is `offsetMs()` off the true time (ahead when positive; change what
 * it returns to step it, as NTP does) while its monotonic clock stays true: what tests and the
 * chaos workers run the SDK on to show that a wall clock's error never reaches a row.
 */
export function skewedClock(offsetMs: () => number, base: Clock = systemClock): Clock {
  return { now: () => base.now() + offsetMs(), monotonic: () => monotonicOf(base) };
}

/** A clock moved by hand: tests step through time without sleeping. */
export interface ManualClock extends Clock {
  advance(ms: number): number;
  set(ms: number): void;
}

/** Starts at the real time by default: DynamoDB Local applies TTLs (`expiresAt`) against its own wall clock. */
export function manualClock(start = Date.now()): ManualClock {
  let t = start;
  return {
    now: () => t,
    advance(ms) {
      t += ms;
      return t;
    },
    set(ms) {
      t = ms;
    },
  };
}
