/**
 * The simulated world both simulations run on (`npm run sim`'s sim/world.ts and the SDK tests'
 * sim/harness.ts): one seeded simulated clock, the in-memory DynamoDB model on its time,
 * machines that each see that time through their own clock and reach the model through their own
 * network, and the push broker (sim/push.ts) they may connect to. What goes wrong between a
 * machine and DynamoDB is the network's: each simulation brings its own (sim/network.ts draws it
 * from the schedule; the SDK tests use a fixed latency and a fault of their choosing).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { sleepOn, simulatedClock, type Clock, type SimulatedClock, type Timer, type TimerOptions } from '../lib/clock.js';
import type { TableNames } from '../lib/schemas/config.js';
import { DynamoDBModel, type DynamoDBModelOptions, type ModelRequest } from './dynamodb-model/index.js';
import { defaultTableNames } from '../lib/tables.js';
import { SimBroker, type SimPush } from './push.js';
import type { PushFaults } from './schedule.js';

/**
 * A machine's view of the simulated time: its wall clock `offsetMs` off (change it: an NTP step),
 * its monotonic clock behind by `lostMs` (time it was suspended and did not count), its timers held
 * while the process is paused and dropped once it is dead. With a drift (`rate`, 1e-6 per ppm) its
 * oscillator runs 1 + rate times as fast as true time: its monotonic clock counts that much more
 * from the machine's start, its timers fire that much sooner, and its wall clock gains as much (on
 * top of its offset).
 */
export class MachineClock implements Clock {
  offsetMs = 0;
  lostMs = 0;
  /** The oscillator's rate error (0.0001 = 100 ppm fast; negative: slow). */
  rate = 0;
  /**
   * Its timers count down on its monotonic clock, as Node's do: time added to `lostMs` (a laptop's
   * suspend, which Linux's CLOCK_MONOTONIC does not count) puts off every timer not yet run by as
   * much, rather than running on resume those that came due meanwhile. Off by default, as the
   * worlds and tests written before it ran.
   */
  monotonicTimers = false;
  dead = false;
  /** True monotonic time at the machine's start: what the drift is counted from. */
  private readonly origin: number;
  /** What waits for the process to run again; undefined while it runs. */
  private held: (() => void)[] | undefined;
  constructor(private readonly base: SimulatedClock) {
    this.origin = base.monotonic();
  }
  // Whole ms, as Date.now(). Without drift exactly the base's reading plus the offset (not
  // origin + elapsed, which can differ in the last bit): a world without drift replays as it did
  // before drift was simulated.
  now(): number {
    return Math.floor(this.base.now() + this.offsetMs + (this.rate ? Math.round((this.base.monotonic() - this.origin) * this.rate) : 0));
  }
  monotonic(): number {
    return (this.rate ? this.origin + (this.base.monotonic() - this.origin) * (1 + this.rate) : this.base.monotonic()) - this.lostMs;
  }
  /** The monotonic clock with the time it lost to a suspend (`lostMs`) counted, as Linux's CLOCK_BOOTTIME; no NTP step (`offsetMs`) moves it. */
  sinceBoot(): number {
    return this.monotonic() + this.lostMs;
  }
  setTimer(ms: number, fn: () => void, opts?: TimerOptions): Timer {
    if (this.monotonicTimers) return this.onMonotonic(ms, fn, opts);
    let cancelled = false;
    // held while paused, it is off the base clock: a cancel then has to stop it here
    const run = () => {
      if (!cancelled) fn();
    };
    const timer = this.base.setTimer(this.rate ? ms / (1 + this.rate) : ms, () => this.gate(run), opts);
    return {
      cancel: () => {
        cancelled = true;
        timer.cancel();
      },
    };
  }
  /** A timer that runs `fn` once the monotonic clock reaches now + `ms`: lost time meanwhile puts it off. */
  private onMonotonic(ms: number, fn: () => void, opts?: TimerOptions): Timer {
    const due = this.monotonic() + ms;
    let lost = this.lostMs;
    let current: Timer;
    let cancelled = false;
    const arm = (wait: number) => void (current = this.base.setTimer(this.rate ? wait / (1 + this.rate) : wait, () => this.gate(fire), opts));
    // (once the process runs) due, unless time was lost since it was armed
    const fire = () => {
      if (cancelled) return;
      if (this.lostMs === lost) return fn();
      lost = this.lostMs;
      arm(Math.max(0, due - this.monotonic()));
    };
    arm(ms);
    return {
      cancel: () => {
        cancelled = true;
        current.cancel();
      },
    };
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }
  random(): number {
    return this.base.random();
  }
  get paused(): boolean {
    return this.held !== undefined;
  }
  /** The process stops running (SIGSTOP, a long GC pause): its timers wait until it resumes. */
  pause(): void {
    this.held ??= [];
  }
  resume(): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const fn of held) fn();
  }
  /** Runs `fn` now, or when the process resumes, or never (dead). */
  gate(fn: () => void): void {
    if (this.dead) return;
    if (this.held) this.held.push(fn);
    else fn();
  }
  /** Resolves while the process runs: now, when it resumes, or never (dead). */
  running(): Promise<void> {
    return new Promise((resolve) => this.gate(resolve));
  }
}

/** One simulated process: its clock, its own DynamoDB client (so its own server-clock samples), and a crash. */
export interface Machine {
  readonly name: string;
  readonly clock: MachineClock;
  readonly client: DynamoDBClient;
  /** The process is gone: none of its timers fire, and its network answers nothing. */
  kill(): void;
}

/** What stands between a machine and the model: each attempt of each request goes through it; `apply` is DynamoDB doing it. */
export type Network<M extends Machine> = (machine: M, req: ModelRequest, apply: () => unknown) => Promise<unknown>;

export interface SimWorldOptions {
  /** Simulated epoch ms the world starts at. */
  readonly start: number;
  /** Seeds the clock's random source (the SDK's jitter, its ids). */
  readonly seed: number;
  /** What runs between two timers (lib/clock.ts' simulatedClock). */
  readonly settle?: () => Promise<void>;
  /** The model's options but its clock, which is the world's true time. */
  readonly model?: Omit<DynamoDBModelOptions, 'now'>;
}

/** The clock, the model, the machines and the broker of one simulation. */
export class SimWorld {
  readonly clock: SimulatedClock;
  /** DynamoDB: its clock is the true (simulated) time, in whole ms as Date.now(). */
  readonly model: DynamoDBModel;
  readonly names: TableNames = defaultTableNames('sim');
  /** The push path, once startBroker() made one (a world across Regions has one per Region: `brokers`). */
  broker: SimBroker | undefined;
  /**
   * A world across Regions: each Region's IoT Core, by Region (IoT Core is per Region: a worker's
   * PushChannel connects to its own Region's endpoint, and each Region's functions publish to it).
   */
  readonly brokers = new Map<string, SimBroker>();

  constructor(o: SimWorldOptions) {
    this.clock = simulatedClock({ start: o.start, seed: o.seed, ...(o.settle ? { settle: o.settle } : {}) });
    this.model = new DynamoDBModel({ now: () => this.clock.now(), ...o.model });
  }

  /**
   * A machine named `name` (its client's name in the model's requests), its requests through
   * `network`, with `extra` (the network's state for it) on it. `backoff: false`: the client retries
   * without waiting (Lambda's functions in the simulator); else with the SDK's backoff on simulated time.
   */
  machine<X extends object>(name: string, network: Network<Machine & X>, extra: X, opts: { backoff?: boolean } = {}): Machine & X {
    const clock = new MachineClock(this.clock);
    const m: Machine & X = Object.assign(extra, {
      name,
      clock,
      client: this.model.client({
        name,
        intercept: (req: ModelRequest, apply: () => unknown) => network(m, req, apply),
        ...(opts.backoff === false ? {} : { backoff: (attempt: number) => this.clock.sleep(25 * 2 ** attempt) }), // the SDK's backoff, on simulated time
      }),
      kill: () => void (clock.dead = true),
    });
    return m;
  }

  /**
   * Starts the push broker (`region`'s, in a world across Regions): wakes delayed, lost and repeated
   * as `faults` say, drawn from `random`; `count` counts them.
   */
  startBroker(faults: PushFaults, random: () => number, count: (k: string) => void, region?: string): SimBroker {
    const broker = new SimBroker(this.clock, faults, random, count);
    if (region === undefined) this.broker = broker;
    else this.brokers.set(region, broker);
    return broker;
  }

  /** The broker a process or function in `region` reaches: its Region's (a world across Regions), else the world's one. */
  brokerOf(region: string | undefined): SimBroker | undefined {
    return region === undefined ? this.broker : this.brokers.get(region);
  }

  /**
   * `machine`'s connection to the broker (its Region's, given `region`): its wakes on its clock
   * (held while paused, none once dead); none reach it while `cutOff()`. `process()`: the process
   * topic it receives (its Session's), if any.
   */
  connect(machine: Machine, cutOff: () => boolean, process?: () => string | undefined, region?: string): SimPush {
    const broker = this.brokerOf(region);
    if (!broker) throw new Error(region === undefined ? 'start the broker first' : `start ${region}'s broker first`);
    const clock = machine.clock;
    return broker.connect({ setTimer: (ms, fn) => clock.setTimer(ms, fn), get dead() { return clock.dead; }, cutOff }, process);
  }
}
