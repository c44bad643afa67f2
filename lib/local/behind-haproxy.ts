/**
 * Worker processes standing for one lease behind HAProxy (issue 39): each worker (the demo's,
 * lib/local/demo/worker.ts) serves its application and the SDK's health check on ports of its own,
 * advertises its address, and takes the push path; HAProxy health-checks every worker's `/leader`,
 * so one address reaches whoever leads. A worker restarted under the same name comes back on the
 * same ports, as a pod of a StatefulSet would. The load-balancer test, benchmark and story use it.
 */
import type { Clock } from '../clock.js';
import { systemClock } from '../clock.js';
import { portToBindLater } from './dynamodb-local.js';
import { startHaproxy, type Haproxy, type HaproxyServer, type LeaderCheckSettings } from './haproxy.js';
import type { LocalRuntime } from './runtime.js';
import { WorkerProcess, type WorkerSpec } from './worker-process.js';

export interface BehindHaproxyOptions {
  lease: string;
  /** The workers' names, started in this order (with equal versions the first leads). @default w1, w2, w3 */
  identities?: readonly string[];
  timing: NonNullable<WorkerSpec['timing']>;
  /** Every worker's version. @default 1.30.0 */
  version?: string;
  settings?: LeaderCheckSettings;
  /** The haproxy binary (ensureHaproxy's); the caller asks for it. */
  binary: string;
  clock?: Clock;
  /** How long one wait may take (a worker's start, its registration) before it is called hung. @default 180 s */
  guardMs?: number;
}

interface Slot {
  identity: string;
  appPort: number;
  healthPort: number;
  worker?: WorkerProcess;
}

const serversOf = (slots: Map<string, Slot>): HaproxyServer[] => [...slots.values()].map((s) => ({ name: s.identity, host: '127.0.0.1', port: s.appPort, checkPort: s.healthPort }));

/** The workers and HAProxy in front of them. */
export class BehindHaproxy {
  private constructor(
    readonly rt: LocalRuntime,
    readonly haproxy: Haproxy,
    private readonly slots: Map<string, Slot>,
    private readonly o: BehindHaproxyOptions & { clock: Clock; guardMs: number },
    /** Every worker process started, in order (restarts included): their lines are the history. */
    readonly all: WorkerProcess[] = [],
  ) {}

  /** Picks the ports, starts HAProxy in front of them, then the workers one after another (each registered before the next). */
  static async start(rt: LocalRuntime, opts: BehindHaproxyOptions): Promise<BehindHaproxy> {
    const o = { ...opts, clock: opts.clock ?? systemClock, guardMs: opts.guardMs ?? 180_000 };
    const slots = new Map<string, Slot>();
    const taken = new Set<number>();
    for (const identity of o.identities ?? ['w1', 'w2', 'w3']) slots.set(identity, { identity, appPort: await portToBindLater(taken), healthPort: await portToBindLater(taken) });
    const servers = serversOf(slots);
    const haproxy = await startHaproxy({ servers, binary: o.binary, clock: o.clock, ...(o.settings ? { settings: o.settings } : {}) });
    const group = new BehindHaproxy(rt, haproxy, slots, o);
    try {
      for (const identity of slots.keys()) await group.startWorker(identity);
    } catch (e) {
      await group.stop();
      throw e;
    }
    return group;
  }

  /** Every worker as a server of HAProxy's configuration (for another HAProxy in front of the same workers). */
  get servers(): HaproxyServer[] {
    return serversOf(this.slots);
  }

  /** The address clients use. */
  get url(): string {
    return this.haproxy.url;
  }

  /** The live worker process of each name. */
  get workers(): WorkerProcess[] {
    return [...this.slots.values()].flatMap((s) => (s.worker?.alive ? [s.worker] : []));
  }

  /** The worker leading now, by its own last started/stopped line. */
  leader(): WorkerProcess | undefined {
    return this.workers.find((w) => w.leading);
  }

  /** Where a worker's application answers (its `advertise` address). */
  appUrl(identity: string): string {
    return `http://127.0.0.1:${this.slot(identity).appPort}`;
  }

  private slot(identity: string): Slot {
    const s = this.slots.get(identity);
    if (!s) throw new Error(`no worker "${identity}" behind this HAProxy (it has ${[...this.slots.keys()].join(', ')})`);
    return s;
  }

  /** Starts (or restarts) the worker of that name on its ports; resolves once its candidate row is its own. */
  async startWorker(identity: string): Promise<WorkerProcess> {
    const s = this.slot(identity);
    if (s.worker?.alive) throw new Error(`worker ${identity} is running already`);
    const version = this.o.version ?? '1.30.0';
    const w = new WorkerProcess(
      { identity, lease: this.o.lease, emulationVersion: version, binaryVersion: version, timing: this.o.timing },
      {
        endpoint: this.rt.endpoint,
        tablePrefix: this.rt.tables.leases.replace(/-leases$/, ''),
        pushUrl: this.rt.pushEndpoint,
        extra: { HTTP_HOST: '127.0.0.1', HTTP_PORT: String(s.appPort), HEALTH_PORT: String(s.healthPort) },
      },
    );
    s.worker = w;
    this.all.push(w);
    await this.waitFor(`worker ${identity} to register`, async () => {
      if (!w.alive) throw new Error(`worker ${identity} exited (${String(w.child.exitCode ?? w.child.signalCode)}) before it registered${w.stderrTail ? `: ${w.stderrTail.trim().split('\n').slice(-5).join(' | ')}` : ''}`);
      const instance = w.events.find((e) => e.event === 'ready')?.instance;
      return instance !== undefined && (await this.rt.deps.coordinator.candidates.read(this.o.lease, identity)).item?.identity === instance;
    });
    return w;
  }

  /**
   * Until one worker leads, HAProxy routes to someone, and the lease names a live successor: a
   * settled group, so a hand-off goes to a successor in one write.
   */
  async settled(): Promise<WorkerProcess> {
    return this.waitFor('a settled leader behind HAProxy', async () => {
      const leaders = this.workers.filter((w) => w.leading);
      const lease = (await this.rt.deps.coordinator.leases.read(this.o.lease)).item;
      const successor = lease?.successor;
      const ok = leaders.length === 1 && lease?.holderIdentity === leaders[0]!.identity && successor !== undefined && this.workers.some((w) => w.identity === successor) && (await this.haproxy.routed());
      return ok && leaders[0];
    });
  }

  /** Polls `probe` until it gives a value; a hang guard, not a budget. */
  async waitFor<T>(what: string, probe: () => Promise<T | undefined | false> | T | undefined | false): Promise<T> {
    const end = this.o.clock.monotonic() + this.o.guardMs;
    for (;;) {
      const v = await probe();
      if (v) return v;
      if (this.o.clock.monotonic() > end) throw new Error(`hung: still waiting for ${what} after ${this.o.guardMs / 1000} s`);
      await this.o.clock.sleep(20);
    }
  }

  /** Stops every worker (followers first, so a leader's hand-off is not to one stopping too), then HAProxy. */
  async stop(): Promise<void> {
    const ws = this.workers;
    await Promise.all(ws.filter((w) => !w.leading).map((w) => w.stop()));
    await Promise.all(ws.map((w) => w.stop()));
    await this.haproxy.stop();
  }
}
