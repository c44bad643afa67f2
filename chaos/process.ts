/**
 * One chaos worker start-up as an OS process (chaos/worker.ts): its protocol lines read, the terms
 * it leads by its own history lines. The fleet (chaos/fleet.ts) starts and signals them; the
 * verdict's feed (chaos/verdict.ts) sums their lines.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { WorkerLine, type WorkerCommand, type WorkerEnvInput, type WorkerStart } from './protocol.js';
import type { WorkerPlan } from './schedule.js';

type SessionStats = Extract<WorkerLine, { type: 'session' }>['stats'];

/** What a process told as a marked command took effect: its session's stats, and the terms it led (lease → fencing token). */
export interface Told {
  stats: SessionStats;
  led: ReadonlyMap<string, number>;
}

/** How much of a process's stderr is kept, to tell why it died starting. */
const STDERR_TAIL = 2_000;

/** The worker program each process runs. */
export const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));

/** One worker start-up as an OS process. */
export class ChaosProcess {
  readonly child: ChildProcess;
  instances: Record<string, string> = {};
  /** Leases this process leads now (by its own history lines): the term's token and when it began. */
  readonly open = new Map<string, { fencingToken: number; mono: string; identity: string; instance: string }>();
  readonly ready: Promise<void>;
  /** Resolves once its code is loaded (a held process: waiting for its start). */
  readonly loaded: Promise<void>;
  /** Resolves once the process exited and its stdout was read to the end. */
  readonly closed: Promise<void>;
  alive = true;
  paused = false;
  /** Its session's stats as its last `session` line before its exit said (undefined: none yet). */
  session: SessionStats | undefined;
  /** How it exited (undefined: not yet). */
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** The last STDERR_TAIL characters it wrote to stderr. */
  private stderrTail = '';
  /** Resolves once it exited and its stderr was read to the end. */
  private readonly stderrRead: Promise<void>;
  private exiting = false;
  private lastMark = 0;
  /** Marked commands not yet taken: how each is answered. */
  private readonly marks = new Map<number, (t: Told | undefined) => void>();

  /**
   * `held`: the process loads its code, then waits for its environment (`start`): a restart that
   * starts it is not delayed by a boot.
   */
  constructor(
    readonly plan: WorkerPlan,
    env: WorkerEnvInput | 'held',
    onLine: (p: ChaosProcess, l: WorkerLine) => void,
    onBadLine: (text: string) => void,
  ) {
    this.child = spawn(process.execPath, ['--import', 'tsx', WORKER], { env: { ...process.env, ...(env === 'held' ? { CHAOS_HELD: 'true' } : env) }, stdio: ['pipe', 'pipe', 'pipe'] });
    let ready!: () => void;
    this.ready = new Promise((r) => (ready = r));
    let loaded!: () => void;
    this.loaded = new Promise((r) => (loaded = r));
    if (env !== 'held') loaded();
    const exited = new Promise<void>((r) =>
      this.child.on('exit', (code, signal) => {
        this.exit = { code, signal };
        r();
      }),
    );
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
      if (l.type === 'loaded') loaded();
      if (l.type === 'ready') {
        this.instances = l.instances;
        ready();
      }
      if (l.type === 'session') {
        this.exiting ||= l.final === true;
        // after its exit began, what the session did is its clean end
        if (!this.exiting) this.session = l.stats;
        if (l.mark !== undefined) {
          this.marks.get(l.mark)?.({ stats: this.session ?? l.stats, led: new Map([...this.open].map(([lease, t]) => [lease, t.fencingToken])) });
          this.marks.delete(l.mark);
        }
      }
      if (l.type === 'history') {
        if (l.record.event === 'started') this.open.set(l.record.lease, { fencingToken: l.record.fencingToken, mono: l.record.mono, identity: l.record.identity, instance: l.record.instance });
        else this.open.delete(l.record.lease);
      }
      onLine(this, l);
    });
    this.child.stderr!.on('data', (d: Buffer) => {
      this.stderrTail = (this.stderrTail + d.toString()).slice(-STDERR_TAIL);
      onBadLine(d.toString());
    });
    this.stderrRead = Promise.all([exited, new Promise<void>((r) => this.child.stderr!.on('close', () => r()))]).then(() => undefined);
    this.child.stdin!.on('error', () => undefined); // a killed worker's pipe
    this.closed = Promise.all([exited, eof]).then(() => {
      this.alive = false;
      for (const answer of this.marks.values()) answer(undefined);
      this.marks.clear();
    });
  }

  /**
   * Resolves once it is ready; rejects, naming it, how it exited and its stderr's tail, once it
   * exited without being ready (a worker that died starting never will be).
   */
  readyOrExited(): Promise<void> {
    const died = Promise.all([this.closed, this.stderrRead]).then(() => {
      const how = this.exit?.signal ? `signal ${this.exit.signal}` : `exit code ${this.exit?.code}`;
      throw new Error(`worker ${this.plan.identity} exited before it was ready (${how}); its stderr ends:\n${this.stderrTail.trimEnd() || '(nothing)'}`);
    });
    return Promise.race([this.ready, died]);
  }

  /** Starts a held process with `env`. */
  start(env: WorkerEnvInput): void {
    if (this.alive) this.child.stdin!.write(`${JSON.stringify({ start: env } satisfies WorkerStart)}\n`);
  }

  send(cmd: WorkerCommand): void {
    if (this.alive) this.child.stdin!.write(`${JSON.stringify(cmd)}\n`);
  }

  /**
   * Sends `cmd` marked: resolves with what the process told as it took effect (every line it wrote
   * before was read by then), or undefined if it exited without taking it.
   */
  sendMarked(cmd: Omit<WorkerCommand, 'mark'>): Promise<Told | undefined> {
    if (!this.alive) return Promise.resolve(undefined);
    const mark = ++this.lastMark;
    const told = new Promise<Told | undefined>((r) => this.marks.set(mark, r));
    this.send({ ...cmd, mark });
    return told;
  }
}
