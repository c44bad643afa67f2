/**
 * The push path in the simulator: an MQTT broker on simulated time. Every wake (from the lease
 * stream's function or from a worker) reaches each connected process after a delay drawn from the
 * schedule, or is lost, or comes twice; outages take the connections down (every process's push
 * path goes not-live, and live again after). A frozen process gets its wakes when it runs again, a
 * dead or partitioned one never does — while it still believes itself connected, as a real client
 * does until its keep-alive notices.
 *
 * Topics as in IoT Core (lib/schemas/push.ts): a wake is published on its lease's topic and on the
 * topic of each process it is addressed to (wakeTopics: the lease's candidates' processes, or a
 * hand-off's heir); a connection opened for a process (its Session's, as PushChannel's `session`)
 * receives its process topic and the lease topics of watchers not of that process, and one opened
 * without receives every topic. Each topic a connection receives is a delivery of its own.
 *
 * IoT Core is per Region: a world across Regions has a broker in each (sim/machines.ts brokers), a
 * process connected to its own Region's and each Region's functions publishing to theirs, so a wake
 * never crosses Regions (a stopping leader's wake to an heir elsewhere reaches nobody). A lost
 * Region's broker is gone with it (lose()); a cut-off Region's still serves the processes there.
 */
import { seededRandom, type SimulatedClock, type Timer } from '../lib/clock.js';
import type { Push, Wake } from '../lib/sdk/push.js';
import { processOf } from '../lib/schemas/identity.js';
import { T0 } from './feed.js';
import { SLOW_PUBLISH_STREAM, type PushFaults, type SlowBroker } from './schedule.js';

/** One publish to a slow IoT Core (Schedule.slowBroker): how late it is answered and delivered, and whether it lands once its sender gave it up. */
export interface SlowPublish {
  readonly delayMs: number;
  readonly lands: boolean;
}

/**
 * A world's slow IoT Core: for a publish made now, its delay and whether it lands given up, while
 * the window is on (undefined outside it), drawn from a stream of its own (seed ^ SLOW_PUBLISH_STREAM),
 * one for every broker and function of the world, so that the run's stream is drawn as without it.
 */
export function slowPublishes(f: SlowBroker, seed: number, clock: SimulatedClock): () => SlowPublish | undefined {
  const r = seededRandom((seed ^ SLOW_PUBLISH_STREAM) >>> 0);
  return () => {
    const at = clock.now() - T0;
    if (at < f.at || at >= f.at + f.forMs) return undefined;
    return { delayMs: f.delayMs[0] + r() * (f.delayMs[1] - f.delayMs[0]), lands: r() < f.lands };
  };
}

/** What the broker needs of a process: its timers (held while frozen, dropped once dead) and whether the network reaches it. */
export interface PushProcess {
  setTimer(ms: number, fn: () => void): Timer;
  readonly dead: boolean;
  /** Whether the network is cut off for it now (a partition). */
  cutOff(): boolean;
}

export class SimBroker {
  private readonly sessions = new Set<SimPush>();
  private down = false;
  /** Its Region is lost: it delivers nothing, for good. */
  private lost = false;

  constructor(
    private readonly clock: SimulatedClock,
    private readonly faults: PushFaults,
    private readonly random: () => number,
    private readonly count: (k: string) => void,
  ) {
    for (const w of faults.outages) {
      clock.setTimer(w.from, () => this.setDown(true));
      clock.setTimer(w.to, () => this.setDown(false));
    }
  }

  /** A process's connection: live unless the broker is down; `process()`: the process topic it receives, if any (asked at each delivery: the Session is made after the connection). */
  connect(proc: PushProcess, process?: () => string | undefined): SimPush {
    const s = new SimPush(this, proc, process);
    this.sessions.add(s);
    return s;
  }

  get live(): boolean {
    return !this.down && !this.lost;
  }

  /** Its Region is lost: nothing published on it is delivered any more, and it never comes back. */
  lose(): void {
    this.lost = true;
  }

  /** A slow IoT Core (Schedule.slowBroker): a worker's publish made now is delivered this late, if it is slow (the functions' are slowed on their way: sim/functions.ts). */
  slowPublish: (() => SlowPublish | undefined) | undefined;

  /**
   * Publishes `wake` on its lease's topic, or, given `processes`, on the topic of each of them
   * (wakeTopics), delivering each to every connected process that receives it but `from`: late, lost
   * or twice, as the schedule draws; a worker's, while IoT Core is slow (`slowPublish`), after its delay.
   */
  publish(wake: Wake, from?: SimPush, processes?: readonly string[]): void {
    if (this.down || this.lost) return;
    // a worker publishes at QoS 0 and waits for nothing: a slow broker delivers it late, whatever its sender does meanwhile
    const slow = wake.by === 'worker' ? this.slowPublish?.() : undefined;
    if (slow) {
      this.count('fault:slowPublish:worker');
      this.clock.setTimer(slow.delayMs, () => this.deliver(wake, from, processes));
      return;
    }
    this.deliver(wake, from, processes);
  }

  private deliver(wake: Wake, from?: SimPush, processes?: readonly string[]): void {
    if (this.down || this.lost) return;
    this.count(`push:${wake.by}`);
    const to = processes && new Set(processes);
    for (const s of this.sessions) {
      if (s === from) continue;
      if (s.proc.dead) {
        this.sessions.delete(s);
        continue;
      }
      for (let n = s.topicsOf(wake.lease, to); n > 0; n--) {
        if (s.proc.cutOff() || this.random() < this.faults.loss) {
          this.count('fault:pushLost');
          continue;
        }
        const copies = this.random() < this.faults.duplicate ? 2 : 1;
        for (let c = 0; c < copies; c++) {
          const delay = this.faults.delayMs[0] + this.random() * (this.faults.delayMs[1] - this.faults.delayMs[0]);
          // a broker-side hop on the world's clock, then the process's own (held while it is frozen)
          this.clock.setTimer(delay, () => void s.proc.setTimer(0, () => s.deliver(wake)));
        }
      }
    }
  }

  /** Takes the broker down (every connection drops) or brings it back. */
  setDown(down: boolean): void {
    this.down = down;
    if (down) this.count('fault:pushOutage');
    for (const s of this.sessions) if (!s.proc.dead) s.proc.setTimer(0, () => s.changed());
  }
}

/** One process's view of the broker: the Push its electors are given. */
export class SimPush implements Push {
  private readonly watchers = new Map<string, Set<(w: Wake | undefined) => void>>();
  /** Lease topics received for watchers not of this connection's process → how many watch each. */
  private readonly leaseTopics = new Map<string, number>();

  constructor(
    private readonly broker: SimBroker,
    readonly proc: PushProcess,
    private readonly process: () => string | undefined = () => undefined,
  ) {}

  /** How many of the topics of a wake of `lease` (its lease topic, or the topics of `processes`) this connection receives. */
  topicsOf(lease: string, processes: ReadonlySet<string> | undefined): number {
    const own = this.process();
    if (own === undefined) return processes ? processes.size : 1; // every topic
    return processes ? (processes.has(own) ? 1 : 0) : this.leaseTopics.has(lease) ? 1 : 0;
  }

  healthy(): boolean {
    return this.broker.live && !this.proc.dead;
  }

  watch(lease: string, onWake: (w: Wake | undefined) => void, instance?: string): () => void {
    let set = this.watchers.get(lease);
    if (!set) this.watchers.set(lease, (set = new Set()));
    set.add(onWake);
    const own = this.process();
    const onLeaseTopic = own !== undefined && processOf(instance) !== own;
    if (onLeaseTopic) this.leaseTopics.set(lease, (this.leaseTopics.get(lease) ?? 0) + 1);
    let stopped = false;
    return () => {
      if (stopped) return;
      stopped = true;
      set.delete(onWake);
      if (!onLeaseTopic) return;
      const n = this.leaseTopics.get(lease)! - 1;
      if (n > 0) this.leaseTopics.set(lease, n);
      else this.leaseTopics.delete(lease);
    };
  }

  wake(lease: string, revision?: number, to?: string): void {
    if (this.proc.dead || this.proc.cutOff()) return;
    // as PushChannel: a heir's process topic only from a connection of a process (its role may publish there)
    const heir = this.process() !== undefined ? processOf(to) : undefined;
    const wake: Wake = { lease, by: 'worker', ...(revision !== undefined ? { revision } : {}) };
    this.broker.publish(wake, this);
    if (heir !== undefined) this.broker.publish(wake, this, [heir]);
  }

  deliver(w: Wake): void {
    for (const f of [...(this.watchers.get(w.lease) ?? [])]) f(w);
  }

  changed(): void {
    for (const set of [...this.watchers.values()]) for (const f of [...set]) f(undefined);
  }
}
