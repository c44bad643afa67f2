/** Time comes in through this, never from Date.now() inside a decision. */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock moved by hand: tests step through time without sleeping. */
export interface ManualClock extends Clock {
  advance(ms: number): number;
  set(ms: number): void;
}

export function manualClock(start = Date.UTC(2026, 0, 1)): ManualClock {
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
