/**
 * One chaos worker start-up as an OS process (chaos/worker.ts): its protocol lines read, the terms
 * it leads by its own history lines. The fleet (chaos/fleet.ts) starts and signals them; the
 * verdict's feed (chaos/verdict.ts) sums their lines.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { WorkerLine, type WorkerCommand, type WorkerEnvInput } from './protocol.js';
import type { WorkerPlan } from './schedule.js';

/** The worker program each process runs. */
export const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));

/** One worker start-up as an OS process. */
export class ChaosProcess {
  readonly child: ChildProcess;
  instances: Record<string, string> = {};
  /** Leases this process leads now (by its own history lines): the term's token and when it began. */
  readonly open = new Map<string, { fencingToken: number; mono: string; identity: string; instance: string }>();
  readonly ready: Promise<void>;
  /** Resolves once the process exited and its stdout was read to the end. */
  readonly closed: Promise<void>;
  alive = true;
  paused = false;

  constructor(
    readonly plan: WorkerPlan,
    env: WorkerEnvInput,
    onLine: (p: ChaosProcess, l: WorkerLine) => void,
    onBadLine: (text: string) => void,
  ) {
    this.child = spawn(process.execPath, ['--import', 'tsx', WORKER], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let ready!: () => void;
    this.ready = new Promise((r) => (ready = r));
    const exited = new Promise<void>((r) => this.child.on('exit', () => r()));
    const lines = createInterface({ input: this.child.stdout! });
    const eof = new Promise<void>((r) => lines.on('close', () => r()));
    lines.on('line', (text) => {
      let parsed: ReturnType<typeof WorkerLine.safeParse>;
      try {
        parsed = WorkerLine.safeParse(JSON.parse(text));
      } catch {
        return onBadLine(text);
      }
      if (!parsed.success) return onBadLine(text);
      const l = parsed.data;
      if (l.type === 'ready') {
        this.instances = l.instances;
        ready();
      }
      if (l.type === 'history') {
        if (l.record.event === 'started') this.open.set(l.record.lease, { fencingToken: l.record.fencingToken, mono: l.record.mono, identity: l.record.identity, instance: l.record.instance });
        else this.open.delete(l.record.lease);
      }
      onLine(this, l);
    });
    this.child.stderr!.on('data', (d: Buffer) => onBadLine(d.toString()));
    this.child.stdin!.on('error', () => undefined); // a killed worker's pipe
    this.closed = Promise.all([exited, eof]).then(() => {
      this.alive = false;
    });
  }

  send(cmd: WorkerCommand): void {
    if (this.alive) this.child.stdin!.write(`${JSON.stringify(cmd)}\n`);
  }
}
