/**
 * Time and randomness come in through a Clock, never from `Date.now`, `setTimeout`,
 * `setInterval` or `Math.random` (test/clock-discipline.test.ts keeps every other module off them).
 * Production passes `systemClock`; tests and the simulator pass one they drive.
 */
import { randomUUID } from 'node:crypto';
import { uptime } from 'node:os';

/** A pending timer: cancel() before it fires and it never does. */
export interface Timer {
  /** Stops the timer; it never fires after this (a no-op once it has). */
  cancel(): void;
}

/** How a timer behaves. */
export interface TimerOptions {
  /** It does not keep the process alive on its own. @default false */
  readonly background?: boolean;
}

/** Time (wall and monotonic), timers and sleeps on that time, and a random source. */
export interface Clock {
  /** Epoch milliseconds: stamps written to tables (compared across machines only with a margin). */
  now(): number;
  /**
   * Milliseconds on a clock that never jumps: what durations on this machine are measured with
   * (client-go's observedTime). Its origin is arbitrary.
   */
  monotonic(): number;
  /**
   * Calls `fn` once, `ms` from now on this clock's time. A `background` timer never keeps the
   * process alive (Node's unref), as a heartbeat must not.
   */
  setTimer(ms: number, fn: () => void, opts?: TimerOptions): Timer;
  /** Resolves after `ms` on this clock's time, or as soon as `signal` aborts; never rejects. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** A number in [0, 1): seeded where runs must repeat. */
  random(): number;
  /**
   * Milliseconds on a clock that, unlike `monotonic`, also counts the time the machine slept (a
   * laptop's suspend), and that NTP never steps: Linux's `CLOCK_BOOTTIME`, read through
   * `os.uptime()`. Its origin is arbitrary. A leader compares it with `monotonic` to notice a sleep
   * its renew deadline did not count. Absent: the wall clock (`now`) stands in, which an NTP step
   * moves too.
   */
  sinceBoot?(): number;
}

/**
 * How coarse a `sinceBoot` may be: os.uptime() is to 10 ms on Linux, but whole seconds on some
 * systems (macOS). A gain on the monotonic clock below it may be that rounding, not a sleep.
 */
export const SINCE_BOOT_RESOLUTION_MS = 1_000;

/**
 * How fast a `sinceBoot` may drift from `monotonic` (ms per ms): 1,000 ppm. On Linux the two are
 * one clock (CLOCK_BOOTTIME is CLOCK_MONOTONIC and the time suspended), so they never drift; on
 * macOS os.uptime() is read off the wall clock, which NTP keeps to true time (slewing it by up to
 * 500 ppm), while the monotonic clock is the raw oscillator (crystals are within 100 ppm). A gain
 * that slow is drift, not a sleep.
 */
export const SINCE_BOOT_DRIFT = 1e-3;

/** The machine's clocks, timers and Math.random: what production runs on. */
export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimer(ms, fn, opts) {
    const t = setTimeout(fn, Math.max(0, ms));
    if (opts?.background) t.unref();
    return { cancel: () => clearTimeout(t) };
  },
  sleep: (ms, signal) => sleepOn(systemClock, ms, signal),
  random: () => Math.random(),
  // seconds, to 10 ms on Linux (whole seconds on some systems): enough to see a sleep of a retry period
  sinceBoot: () => uptime() * 1000,
};

/** `clock.sleep` for any clock that has timers: resolves at the timer or on abort, whichever is first. */
export function sleepOn(clock: Pick<Clock, 'setTimer'>, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Nap(clock, ms, signal).done;
}

/**
 * A sleep on a clock that ends at its timer, when `signal` aborts (if `endOnAbort` agrees, when
 * given), or at `end()` — whichever comes first; `done` resolves then, once. What the elector's and
 * a session's naps and every `sleep` are.
 */
export class Nap {
  /** Resolves when the nap ends. */
  readonly done: Promise<void>;
  private resolve: (() => void) | undefined;
  private readonly timer: Timer;
  private readonly onAbort: (() => void) | undefined;

  constructor(
    clock: Pick<Clock, 'setTimer'>,
    ms: number,
    private readonly signal?: AbortSignal,
    endOnAbort?: () => boolean,
  ) {
    this.done = new Promise<void>((resolve) => void (this.resolve = resolve));
    this.timer = clock.setTimer(ms, () => this.end());
    if (signal) {
      this.onAbort = endOnAbort ? () => void (endOnAbort() && this.end()) : () => this.end();
      signal.addEventListener('abort', this.onAbort, { once: true });
    }
  }

  /** Ends the nap now (a no-op once it has ended). */
  end(): void {
    const resolve = this.resolve;
    if (!resolve) return;
    this.resolve = undefined;
    this.timer.cancel();
    if (this.onAbort) this.signal!.removeEventListener('abort', this.onAbort);
    resolve();
  }
}

/** Calls `fn` every `ms` on the clock's time, until cancelled (setInterval on a Clock). */
export function every(clock: Pick<Clock, 'setTimer'>, ms: number, fn: () => void, opts?: TimerOptions): Timer {
  let current: Timer;
  let cancelled = false;
  const arm = () => {
    current = clock.setTimer(
      ms,
      () => {
        if (cancelled) return;
        arm();
        fn();
      },
      opts,
    );
  };
  arm();
  return {
    cancel() {
      cancelled = true;
      current.cancel();
    },
  };
}

/**
 * A unique id in UUID form: crypto's on the system clock, drawn from the clock's own random source
 * on any other (so a simulated run, seeded, names its start-ups the same way every time).
 */
const HEX_DIGITS = '0123456789abcdef';

export function uniqueId(clock: Clock): string {
  if (clock === systemClock) return randomUUID();
  let hex = '';
  for (let i = 0; i < 32; i++) hex += HEX_DIGITS[Math.floor(clock.random() * 16)];
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${'89ab'[Math.floor(clock.random() * 4)]}${hex.slice(17, 20)}-${hex.slice(20)}`;
}

/** A small seeded generator (mulberry32), [0, 1): the same seed gives the same numbers on every machine. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** @deprecated since every Clock has `monotonic()`; kept for callers that still use it. */
export const monotonicOf = (c: Clock): number => c.monotonic();

/**
 * A machine whose wall clock is `offsetMs()` off the true time (ahead when positive; change what
 * it returns to step it, as NTP does) while its monotonic clock, timers and random source are the
 * base's: what tests and the chaos workers run the SDK on to show that a wall clock's error never
 * reaches a row.
 */
export function skewedClock(offsetMs: () => number, base: Clock = systemClock): Clock {
  return {
    now: () => base.now() + offsetMs(),
    monotonic: () => base.monotonic(),
    setTimer: (ms, fn, opts) => base.setTimer(ms, fn, opts),
    sleep: (ms, signal) => base.sleep(ms, signal),
    random: () => base.random(),
  };
}

/** A clock whose time is moved by hand: tests step through time without sleeping. */
export interface ManualClock extends Clock {
  /** Moves wall and monotonic time on by `ms`; returns the new wall time. */
  advance(ms: number): number;
  /** Sets wall and monotonic time to `ms`. */
  set(ms: number): void;
}

/**
 * Wall and monotonic time moved by hand (both by the same amount); timers, sleeps and randomness
 * are `base`'s (the machine's by default: the SDK's polls still pace themselves in real time while
 * every stamp it writes is the manual one). For time where timers fire as it moves, use
 * `simulatedClock`. Starts at the real time by default: DynamoDB Local applies TTLs (`expiresAt`)
 * against its own wall clock.
 */
export function manualClock(start = systemClock.now(), base: Clock = systemClock): ManualClock {
  let t = start;
  return {
    now: () => t,
    monotonic: () => t,
    setTimer: (ms, fn, opts) => base.setTimer(ms, fn, opts),
    sleep: (ms, signal) => base.sleep(ms, signal),
    random: () => base.random(),
    advance(ms) {
      t += ms;
      return t;
    },
    set(ms) {
      t = ms;
    },
  };
}

/**
 * Simulated time: nothing happens until the owner runs it, then timers fire in time order (ties in
 * the order they were set), each followed by everything its promise chains do before they wait
 * again. Randomness is seeded. One of these drives a whole simulated system: every process gets a
 * view of it (`skewedClock` for a wall clock that is off).
 */
export interface SimulatedClock extends Clock {
  /** Runs every timer due within `ms` of now, then leaves the time at now + `ms`. */
  run(ms: number): Promise<void>;
  /** Runs timers until none is left or `until` (simulated epoch ms) is reached. */
  runUntil(until: number): Promise<void>;
  /** Timers set and not yet fired or cancelled. */
  pending(): number;
}

/** A timer in a simulated clock's heap, and its handle: cancelled, it stays in the heap and is skipped when it comes up. */
class Scheduled implements Timer {
  cancelled = false;
  constructor(
    readonly at: number,
    readonly seq: number,
    readonly fn: () => void,
    /** The clock's count of timers set and not yet fired or cancelled. */
    private readonly counts: { live: number },
  ) {}

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.counts.live--;
  }
}

/**
 * Marks a `settle` that can also call a function once settled (drainMicrotasks): the clock's run
 * loop then fires timer after timer from those calls, without a promise and an async resumption
 * per timer (a simulated schedule fires about twelve thousand).
 */
const AFTER_SETTLED = Symbol('afterSettled');
/** A settle; with AFTER_SETTLED, what makes a scheduler of `fn`: each call of it calls `fn` once settled. */
type Settle = (() => Promise<void>) & { [AFTER_SETTLED]?: (fn: () => void) => () => void };

const SETTLED = Promise.resolve();

/**
 * A `settle` for a simulated clock that drives only in-memory work (the simulator): it resolves
 * once every promise chain has run to its next wait, without a turn of the real event loop —
 * which costs a poll of the operating system each time, about a quarter of a simulated schedule's
 * time when it was taken after every timer. How: a microtask that queues a `process.nextTick`
 * callback; Node runs that callback only once the microtask queue is empty (ticks queued from a
 * microtask wait for the queue to drain), so every chain has settled when it resolves. Every
 * `realTurnEvery` settles it takes a real turn instead, so real timers (a watchdog, a test's
 * timeout) and the thread's messages still get to run during a long simulated run. Which chains
 * run, and in which order, is the same as with a turn of the event loop each time: only real I/O
 * and real timers are given fewer chances.
 */
export function drainMicrotasks(realTurnEvery = 1_000): () => Promise<void> {
  let n = 0;
  // (a reaction on a settled promise, not queueMicrotask: the same place in the microtask queue,
  // without the AsyncResource and bound function Node makes for each queueMicrotask)
  const scheduler = (fn: () => void) => {
    const tick = () => process.nextTick(fn);
    return () => {
      if (++n % realTurnEvery === 0) setImmediate(fn);
      else void SETTLED.then(tick);
    };
  };
  return Object.assign(() => new Promise<void>((resolve) => scheduler(resolve)()), { [AFTER_SETTLED]: scheduler });
}


/**
 * `settle` lets promise chains run between two timers: by default one turn of the real event loop
 * (a macrotask runs only after every microtask), which is all an in-memory system needs; real I/O
 * is not waited for, but gets its turn. `drainMicrotasks()` is the same without the turn, and faster.
 */
export function simulatedClock(opts: { start?: number; seed?: number; settle?: () => Promise<void> } = {}): SimulatedClock {
  let t = opts.start ?? 1_800_000_000_000;
  const random = seededRandom(opts.seed ?? 1);
  const settle: Settle = opts.settle ?? (() => new Promise<void>((resolve) => setImmediate(resolve)));
  // a binary heap on (at, seq)
  const heap: Scheduled[] = [];
  let seq = 0;
  const counts = { live: 0 };
  const less = (a: Scheduled, b: Scheduled) => a.at < b.at || (a.at === b.at && a.seq < b.seq);
  const push = (s: Scheduled) => {
    heap.push(s);
    let i = heap.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!less(heap[i]!, heap[p]!)) break;
      const x = heap[i]!; // (a swap without a destructuring array: one fewer allocation per level)
      heap[i] = heap[p]!;
      heap[p] = x;
      i = p;
    }
  };
  const pop = (): Scheduled | undefined => {
    const top = heap[0];
    const last = heap.pop();
    if (heap.length && last) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && less(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && less(heap[r]!, heap[m]!)) m = r;
        if (m === i) break;
        const x = heap[i]!;
        heap[i] = heap[m]!;
        heap[m] = x;
        i = m;
      }
    }
    return top;
  };
  /** The next timer due by `until`, taken off the heap with the time moved to it; undefined when none is. */
  const due = (until: number): Scheduled | undefined => {
    while (heap.length && heap[0]!.cancelled) pop();
    const next = heap[0];
    if (!next || next.at > until) return undefined;
    pop();
    counts.live--;
    next.cancelled = true;
    if (next.at > t) t = next.at;
    return next;
  };
  const runUntilAwaiting = async (until: number): Promise<void> => {
    await settle();
    for (let next = due(until); next; next = due(until)) {
      next.fn();
      await settle();
    }
    if (until > t && Number.isFinite(until)) t = until;
  };
  const clock: SimulatedClock = {
    // whole milliseconds, as Date.now(): stores and schemas take wall times as integers
    now: () => Math.floor(t),
    monotonic: () => t,
    setTimer(ms, fn) {
      const s = new Scheduled(t + Math.max(0, ms), seq++, fn, counts);
      counts.live++;
      push(s);
      return s;
    },
    sleep: (ms, signal) => sleepOn(clock, ms, signal),
    random,
    runUntil(until) {
      const scheduler = settle[AFTER_SETTLED];
      if (!scheduler) return runUntilAwaiting(until);
      // the same loop as runUntilAwaiting, each step called once the last timer's chains settled
      return new Promise<void>((resolve, reject) => {
        const step = (): void => {
          try {
            const next = due(until);
            if (!next) {
              if (until > t && Number.isFinite(until)) t = until;
              resolve();
              return;
            }
            next.fn();
          } catch (e) {
            reject(e);
            return;
          }
          again();
        };
        const again = scheduler(step);
        again();
      });
    },
    run: (ms) => clock.runUntil(t + ms),
    pending: () => counts.live,
  };
  return clock;
}
