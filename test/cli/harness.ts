import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { inject } from 'vitest';
import type { Clock, ManualClock } from '../../lib/clock.js';
import type { Pace } from '../../lib/cli/context.js';
import { main } from '../../lib/cli/main.js';
import type { Candidate } from '../../lib/schemas/candidate.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { WAIT_GUARD_MS } from '../guards.js';
import { testTables, type TestTables } from '../support.js';

export interface Run {
  code: number;
  out: string;
  err: string;
}

export interface CliHarness {
  t: TestTables;
  leases: LeaseStore;
  candidates: CandidateStore;
  endpoint: string;
  /** The tables' prefix, for --table-prefix. */
  prefix: string;
  /** The global options that point at this file's tables. */
  target: string[];
  seedLease(l: Lease): Promise<Lease>;
  seedCandidate(c: Candidate): Promise<Candidate>;
  /** `conclave <target> …argv`, in-process. */
  run(argv: string[], io?: RunIO): Promise<Run>;
}

/**
 * What a run gets besides argv. `answer`: what the operator types at a confirmation, on a
 * terminal (stdin a TTY), once the question is shown (then stdin ends); without it stdin is not a
 * terminal (as under CI), and at its end.
 */
export interface RunIO {
  clock?: Clock;
  pace?: Pace;
  env?: Record<string, string | undefined>;
  answer?: string;
  /** What was typed at the terminal before the run, so before any question (type-ahead): not an answer. Only with `answer`. */
  typedAhead?: string;
  /** false: stderr, where the question goes, is not a terminal (redirected). @default true */
  promptIsTTY?: boolean;
}

/**
 * A pace that runs `steps` in turn instead of waiting (what happens meanwhile), records what it
 * was asked to wait, and advances `clock` by it when given. `stop` is Ctrl-C.
 */
export function scripted(steps: (() => unknown)[], clock?: ManualClock): Pace & { waits: number[]; stop: AbortController } {
  const stop = new AbortController();
  const waits: number[] = [];
  return {
    stop,
    waits,
    signal: stop.signal,
    async sleep(ms) {
      waits.push(ms);
      clock?.advance(ms);
      await steps.shift()?.();
    },
  };
}

/** Runs the CLI in-process with a given clock; output captured (a confirmation's question goes to err). */
export async function runMain(argv: string[], io: RunIO = {}): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const stdin = new PassThrough();
  if (io.answer === undefined) stdin.end();
  else if (io.typedAhead !== undefined) stdin.write(io.typedAhead);
  // typed once the question is shown, as an operator answers it; then stdin ends (a second question gets no answer)
  const typed = () => {
    if (io.answer !== undefined && !stdin.writableEnded) stdin.end(io.answer);
  };
  const code = await main(argv, {
    out: (s) => out.push(s),
    err: (s) => err.push(s),
    prompt: (q) => {
      err.push(q);
      typed();
    },
    color: false,
    env: io.env ?? {},
    stdin,
    stdinIsTTY: io.answer !== undefined,
    ...(io.promptIsTTY !== undefined ? { promptIsTTY: io.promptIsTTY } : {}),
    ...(io.clock ? { clock: io.clock } : {}),
    ...(io.pace ? { pace: io.pace } : {}),
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

export async function cliHarness(label: string): Promise<CliHarness> {
  const t = await testTables(label);
  const leases = new LeaseStore(t.client, t.names.leases);
  const candidates = new CandidateStore(t.client, t.names.candidates);
  const endpoint = inject('ddbEndpoint');
  const prefix = t.names.leases.replace(/-leases$/, '');
  const target = ['--endpoint', endpoint, '--table-prefix', prefix];
  return {
    t,
    leases,
    candidates,
    endpoint,
    prefix,
    target,
    // Seeded through the stores: revision 1, as a first write makes it.
    seedLease: ({ name, revision: _r, ...set }) => leases.write(LeaseStore.readOf(name, undefined), { set }),
    seedCandidate: ({ leaseName, name, revision: _r, ...set }) => candidates.write({ key: { leaseName, name }, item: undefined, revision: 0 }, { set }),
    run: (argv, io = {}) => runMain([...target, ...argv], io),
  };
}

/** The real bin, as a user runs it (Node 22: the one running vitest); only a hung one is stopped. */
export function bin(argv: string[], env: Record<string, string | undefined> = process.env): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, ['bin/conclave.mjs', ...argv], { encoding: 'utf8', timeout: WAIT_GUARD_MS, env: { ...env, NO_COLOR: '1' } });
}

/** The bin as a long-running child (events --follow, watch), stdout collected as it comes. */
export function binChild(argv: string[]) {
  const child = spawn(process.execPath, ['bin/conclave.mjs', ...argv], { env: { ...process.env, NO_COLOR: '1' } });
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    out: () => out,
    err: () => err,
    exited,
    /** Resolves once stdout matches, or rejects with what was printed when the child exits first. */
    until(pattern: RegExp): Promise<void> {
      // on each chunk of output (no polling), or the child's end (its output all read by then)
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (!pattern.test(out)) return;
          child.stdout.off('data', check);
          child.off('close', closed);
          resolve();
        };
        const closed = (code: number | null) => {
          child.stdout.off('data', check);
          if (pattern.test(out)) resolve();
          else reject(new Error(`exited ${code} before ${pattern}: ${out}\n${err}`));
        };
        if (child.exitCode !== null && child.stdout.readableEnded) return closed(child.exitCode);
        child.stdout.on('data', check);
        child.once('close', closed);
        check();
      });
    },
  };
}

/**
 * The bin with its stdout read by a reader that stops early, as `conclave … | head -<lines>` does:
 * reads `lines` lines (0: none), then closes its end of the pipe while the bin may still write.
 */
export async function binIntoClosedReader(argv: string[], lines: number): Promise<{ read: string[]; status: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  const child = spawn(process.execPath, ['bin/conclave.mjs', ...argv], { env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const ended = new Promise<{ status: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (status, signal) => resolve({ status, signal })));
  const read: string[] = [];
  if (lines > 0) {
    let carry = '';
    await new Promise<void>((resolve) => {
      const onData = (b: Buffer) => {
        const parts = (carry + b.toString()).split('\n');
        carry = parts.pop()!;
        read.push(...parts.slice(0, lines - read.length));
        if (read.length < lines) return;
        child.stdout.off('data', onData);
        resolve();
      };
      child.stdout.on('data', onData);
      child.stdout.once('end', () => resolve()); // fewer lines than asked: the reader closes at the end, as head does
    });
  }
  child.stdout.destroy(); // the reader goes away: the bin's next write fails with EPIPE
  return { read, ...(await ended), stderr };
}

/**
 * Runs `fn` with the process's environment holding no AWS_ variable but those of `env` (the AWS SDK
 * reads the process's own, not the CLI's `env`), then puts it back as it was.
 */
export async function withAwsEnv<T>(env: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved = { ...process.env };
  for (const k of Object.keys(process.env)) if (k.startsWith('AWS_')) delete process.env[k];
  Object.assign(process.env, env);
  try {
    return await fn();
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  }
}
