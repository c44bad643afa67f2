import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { WorkerEvent } from '../history/schema.js';
import { systemClock } from '../clock.js';

// The lines' shape is history's (lib/history/worker-events.ts reads them); callers get it here too.
export type { WorkerEvent } from '../history/schema.js';

export interface WorkerSpec {
  identity: string;
  lease: string;
  emulationVersion: string;
  binaryVersion: string;
  priority?: number;
  timing?: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number; renewIntervalMs?: number };
  /** Another worker script that reads the same variables and prints the same lines (bench/baseline/worker.ts). @default the demo's worker, lib/local/demo/worker.ts */
  script?: string;
}

const WORKER = fileURLToPath(new URL('./demo/worker.ts', import.meta.url));

/** The workers this process started that have not exited. */
const living = new Set<WorkerProcess>();
/** Why no worker is started any more (stopEveryWorker), once told. */
let closed: string | undefined;

/**
 * Stops every worker this process started that still runs (SIGTERM: each steps down, releasing its
 * lease, and exits), and starts no more: one asked for after throws, saying `why`. `npm start`
 * told to stop mid-play (Ctrl-C, a kill, its terminal closed, its starter gone) stops its workers
 * so, while its DynamoDB Local still answers them, and leaves none running under init.
 */
export async function stopEveryWorker(why: string): Promise<void> {
  closed = why;
  await Promise.all([...living].map((w) => w.stop()));
}

/** A worker as a separate OS process, started with the demo's worker and watched through its stdout. */
export class WorkerProcess {
  readonly events: WorkerEvent[] = [];
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  /** The last 2,000 characters the worker wrote to stderr (why it exited, if it did). */
  stderrTail = '';
  private listeners = new Set<(e: WorkerEvent) => void>();

  /** `pushUrl`: the push broker's endpoint (LocalRuntime.pushEndpoint), given to the worker as CONCLAVE_PUSH_URL; without it the worker only polls. */
  constructor(readonly spec: WorkerSpec, env: { endpoint: string; tablePrefix: string; pushUrl?: string | undefined; extra?: Record<string, string> }) {
    if (closed !== undefined) throw new Error(`worker ${spec.identity} not started: this process stops its workers (${closed})`);
    const t = spec.timing;
    this.child = spawn(process.execPath, ['--import', 'tsx', spec.script ?? WORKER], {
      env: {
        ...process.env,
        CONCLAVE_ENDPOINT: env.endpoint,
        CONCLAVE_TABLE_PREFIX: env.tablePrefix,
        ...(env.pushUrl ? { CONCLAVE_PUSH_URL: env.pushUrl } : {}),
        // A local worker is no EC2 instance, even on one: only an ECS task the runtime gives it counts.
        AWS_EC2_METADATA_DISABLED: 'true',
        ...env.extra,
        LEASE: spec.lease,
        IDENTITY: spec.identity,
        EMULATION_VERSION: spec.emulationVersion,
        BINARY_VERSION: spec.binaryVersion,
        ...(spec.priority ? { PRIORITY: String(spec.priority) } : {}),
        ...(t ? { LEASE_DURATION_MS: String(t.leaseDurationMs), RENEW_DEADLINE_MS: String(t.renewDeadlineMs), RETRY_PERIOD_MS: String(t.retryPeriodMs) } : {}),
        ...(t?.renewIntervalMs ? { RENEW_INTERVAL_MS: String(t.renewIntervalMs) } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      if (!line.startsWith('{')) return;
      const e = JSON.parse(line) as WorkerEvent;
      this.events.push(e);
      for (const l of this.listeners) l(e);
    });
    // SDK warnings, not part of the story; the last of them kept for a worker that exits early
    this.child.stderr!.on('data', (d: Buffer) => (this.stderrTail = (this.stderrTail + d.toString('utf8')).slice(-2_000)));
    this.exited = new Promise((r) => this.child.on('exit', (code) => r(code)));
    living.add(this);
    void this.exited.then(() => living.delete(this));
  }

  get identity(): string {
    return this.spec.identity;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Leading now, by its own last started/stopped line. */
  get leading(): boolean {
    return this.alive && this.events.filter((e) => e.event === 'started' || e.event === 'stopped').at(-1)?.event === 'started';
  }

  on(listener: (e: WorkerEvent) => void): void {
    this.listeners.add(listener);
  }

  /** SIGTERM: the worker steps down, releases its lease, removes its candidacy and exits. */
  async stop(): Promise<void> {
    if (this.alive) this.child.kill('SIGTERM');
    await this.exited;
  }

  /** SIGKILL: a crash; nothing is released. A leader stops acting at this instant, so that is recorded. */
  async kill(): Promise<void> {
    if (!this.alive) return;
    const wasLeading = this.leading;
    const at = systemClock.now();
    this.child.kill('SIGKILL');
    await this.exited;
    if (wasLeading) this.events.push({ event: 'stopped', identity: this.identity, at, reason: 'killed' });
  }
}
