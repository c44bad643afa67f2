/**
 * etcd for the hand-off baseline (issue 38, item 3: "hand-off faster than etcd's"): Debian's
 * `etcd-server` (the `etcd` binary) and `etcd-client` (`etcdctl`), asked for, not taken (as HAProxy
 * is, lib/local/haproxy.ts); a single-member etcd on loopback with a fresh data directory, and
 * `etcdctl elect` campaigners watched through their output. etcd's own tool is the campaigner: its
 * `elect` is the client library's election (concurrency.Election), and SIGTERM makes it resign.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import * as z from 'zod';
import { systemClock, type Clock } from '../lib/clock.js';
import { ensureSystemNeed, findOnPath, installCommand, type EnsureOptions } from '../lib/local/debian-package.js';
import { freePort } from '../lib/local/dynamodb-local.js';
import { parse } from '../lib/schemas/validation.js';
import { percentile, summarize, type Summary } from './stats.js';

/** The Debian packages: `etcd-server` gives the `etcd` binary, `etcd-client` gives `etcdctl`. */
export const ETCD_PACKAGES = 'etcd-server etcd-client';
/** Set to 1 to let the bench install etcd (Debian's packages, as root) when it is missing. */
export const INSTALL_ETCD_ENV = 'CONCLAVE_INSTALL_ETCD';

export class EtcdMissingError extends Error {
  override readonly name = 'EtcdMissingError';
}

/** The two binaries the baseline runs. */
export interface EtcdBinaries {
  etcd: string;
  etcdctl: string;
}

/** Each binary: the first of its name on PATH (Debian puts both in /usr/bin). */
export function findEtcd(path = process.env['PATH'] ?? ''): Partial<EtcdBinaries> {
  const etcd = findOnPath('etcd', path);
  const etcdctl = findOnPath('etcdctl', path);
  return { ...(etcd ? { etcd } : {}), ...(etcdctl ? { etcdctl } : {}) };
}

/** How to get etcd on each system, a line each. */
const HOW_TO_GET_ETCD = [`Debian/Ubuntu: sudo sh -c '${installCommand(ETCD_PACKAGES)}'`, 'Fedora/RHEL:   sudo dnf install etcd', 'macOS:         brew install etcd'];

/** Why what was found will not do: the binaries missing, by name (undefined: both are there). */
export function etcdLacking(found: Partial<EtcdBinaries> | undefined): string | undefined {
  const missing = (['etcd', 'etcdctl'] as const).filter((b) => !found?.[b]);
  return missing.length ? `no ${missing.map((b) => `\`${b}\``).join(' and no ')} on PATH` : undefined;
}

/**
 * etcd's binaries, made sure of. Without them: an EtcdMissingError naming the install line — unless
 * installing was asked for (`install`, or CONCLAVE_INSTALL_ETCD=1), in which case, as root, it
 * installs Debian's packages (saying so first), and otherwise gives the sudo command.
 */
export function ensureEtcd(opts: EnsureOptions<Partial<EtcdBinaries>> = {}): EtcdBinaries {
  return ensureSystemNeed(
    {
      pkg: ETCD_PACKAGES,
      installEnv: INSTALL_ETCD_ENV,
      needs: "The hand-off's etcd baseline runs etcd and etcdctl",
      howToGet: HOW_TO_GET_ETCD,
      probe: () => findEtcd(),
      lacking: etcdLacking,
      error: EtcdMissingError,
    },
    opts,
  ) as EtcdBinaries;
}

/** A GET or POST on loopback: status and body, or undefined when nothing answered. */
function http(url: string, body?: string): Promise<{ status: number; body: string } | undefined> {
  return new Promise((resolve) => {
    const req = request(url, { method: body === undefined ? 'GET' : 'POST', agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', () => resolve(undefined)); // not listening (yet), or gone
    req.end(body);
  });
}

/** etcd's `/health` answer. */
const HealthSchema = z.object({ health: z.enum(['true', 'false']) });

/**
 * How many watchers etcd serves now, from its Prometheus text (`etcd_debugging_mvcc_watcher_total`):
 * each campaigner that waits for the one before it to go holds one watch, so the election is in
 * place when the count has risen by the waiting campaigners.
 */
export function watcherCount(metrics: string): number {
  const m = /^etcd_debugging_mvcc_watcher_total (\d+(?:\.\d+)?(?:e[+-]?\d+)?)$/m.exec(metrics);
  if (!m) throw new Error('etcd /metrics has no etcd_debugging_mvcc_watcher_total line: is this etcd 3.4 or newer?');
  return Number(m[1]);
}

/** A running single-member etcd (startEtcd). */
export interface Etcd {
  /** Its client URL, `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly dataDir: string;
  readonly binaries: EtcdBinaries;
  /** `etcd --version`'s first line, e.g. `etcd Version: 3.4.23`. */
  readonly version: string;
  /** Watchers it serves now (watcherCount of its /metrics). */
  watchers(): Promise<number>;
  /** Stops it and removes its data directory; safe to call twice. */
  stop(): Promise<void>;
}

/**
 * A single-member etcd on loopback: free client and peer ports, a fresh data directory in a temp
 * directory (removed by stop(), and on a failed start); resolves once `/health` answers true.
 */
export async function startEtcd(o: { binaries: EtcdBinaries; clock?: Clock; startTimeoutMs?: number }): Promise<Etcd> {
  const clock = o.clock ?? systemClock;
  const clientPort = await freePort();
  let peerPort = await freePort();
  while (peerPort === clientPort) peerPort = await freePort();
  const version = (await output(o.binaries.etcd, ['--version'])).split('\n')[0]!.trim();
  const dir = mkdtempSync(join(tmpdir(), 'conclave-etcd-'));
  const dataDir = join(dir, 'data');
  const url = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const child = spawn(
    o.binaries.etcd,
    ['--name', 'bench', '--data-dir', dataDir, '--listen-client-urls', url, '--advertise-client-urls', url, '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer, '--initial-cluster', `bench=${peer}`, '--initial-cluster-state', 'new', '--logger', 'zap', '--log-level', 'warn'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (b: Buffer) => {
    stderr = (stderr + b.toString()).slice(-4000);
  });
  let exited: number | null | undefined;
  const gone = new Promise<void>((r) => {
    child.on('exit', (code) => {
      exited = code;
      r();
    });
    // it could not be started at all (no 'exit' follows)
    child.on('error', (e) => {
      stderr += `\n${e.message}`;
      exited = null;
      r();
    });
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.on('exit', killOnExit);
  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      process.off('exit', killOnExit);
      if (exited === undefined) child.kill('SIGTERM');
      const timer = clock.setTimer(5_000, killOnExit);
      await gone;
      timer.cancel();
      rmSync(dir, { recursive: true, force: true });
    })());
  const deadline = clock.monotonic() + (o.startTimeoutMs ?? 60_000);
  for (;;) {
    if (exited !== undefined) {
      await stop();
      throw new Error(`etcd exited with code ${exited} before it was healthy:\n${stderr}`);
    }
    const h = await http(`${url}/health`);
    if (h?.status === 200 && parse(HealthSchema, JSON.parse(h.body), `etcd ${url}/health`).health === 'true') break;
    if (clock.monotonic() > deadline) {
      await stop();
      throw new Error(`etcd was not healthy on ${url} within its start timeout:\n${stderr}`);
    }
    await clock.sleep(50);
  }
  const watchers = async () => {
    const r = await http(`${url}/metrics`);
    if (r?.status !== 200) throw new Error(`etcd's ${url}/metrics did not answer (${r ? `status ${r.status}` : 'no answer'})`);
    return watcherCount(r.body);
  };
  return { url, dataDir, binaries: o.binaries, version, watchers, stop };
}

/** A program's stdout (and stderr), for a version line. */
function output(binary: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout!.on('data', (b: Buffer) => (text += b.toString()));
    child.stderr!.on('data', (b: Buffer) => (text += b.toString()));
    child.on('error', reject);
    child.on('exit', () => resolve(text));
  });
}

/**
 * What `etcdctl -w json elect` prints once elected: the Get of its own election key, one JSON line
 * (a GetResponse; keys and values base64).
 */
const ElectedOutputSchema = z.object({
  header: z.object({ revision: z.number().int().min(1) }),
  kvs: z
    .array(z.object({ key: z.base64(), value: z.base64(), create_revision: z.number().int().min(1) }))
    .length(1, 'must hold exactly the campaigner’s own key (is this `etcdctl -w json elect` output?)'),
});

/** A campaigner's election, as it printed it. */
export interface Elected {
  /** Its key, `<election>/<lease id in hex>`. */
  key: string;
  /** The value it campaigned with. */
  proposal: string;
  /** Its key's create revision: campaigners are elected in this order. */
  createRevision: number;
  /** The store's revision when it read its key (after the one before it was deleted). */
  revision: number;
}

/**
 * One line of `etcdctl -w json elect <election> <proposal>`'s output, read: the campaigner was
 * elected in `election`. A line that is not that output is an error naming what is wrong.
 */
export function parseElected(line: string, election: string): Elected {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    throw new Error(`etcdctl elect printed a line that is not JSON (run it with -w json): ${JSON.stringify(line.slice(0, 200))}`);
  }
  const out = parse(ElectedOutputSchema, raw, 'etcdctl elect output');
  const kv = out.kvs[0]!;
  const key = Buffer.from(kv.key, 'base64').toString('utf8');
  if (!key.startsWith(`${election}/`)) throw new Error(`etcdctl elect printed key "${key}", not one of election "${election}" (expected "${election}/<lease id>")`);
  return { key, proposal: Buffer.from(kv.value, 'base64').toString('utf8'), createRevision: kv.create_revision, revision: out.header.revision };
}

/**
 * One `etcdctl elect` process: it campaigns in `election` with `proposal`, prints its key once
 * elected and holds it; SIGTERM makes it resign (delete its key) and exit, or, still campaigning,
 * withdraw. When it was elected is when its line reached this process (this machine's clock): a
 * pipe's hop and etcdctl's own read of its key after the election later than the election itself.
 */
export class EtcdCampaigner {
  readonly child: ChildProcess;
  /** When its process exited (this machine's clock). */
  readonly exited: Promise<number>;
  private electedAs: (Elected & { at: number }) | undefined;
  private failure: Error | undefined;
  private stderr = '';
  private readonly waiters = new Set<() => void>();

  constructor(
    readonly proposal: string,
    readonly election: string,
    o: { etcd: Pick<Etcd, 'url' | 'binaries'>; clock?: Clock },
  ) {
    const clock = o.clock ?? systemClock;
    this.child = spawn(o.etcd.binaries.etcdctl, ['--endpoints', o.etcd.url, '-w', 'json', 'elect', election, proposal], { env: { ...process.env, ETCDCTL_API: '3' }, stdio: ['ignore', 'pipe', 'pipe'] });
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const at = clock.now();
      if (this.electedAs || this.failure) return;
      try {
        this.electedAs = { ...parseElected(line, election), at };
      } catch (e) {
        this.failure = e as Error;
      }
      this.wake();
    });
    this.child.stderr!.on('data', (b: Buffer) => {
      this.stderr = (this.stderr + b.toString()).slice(-2000);
    });
    this.exited = new Promise((resolve) => {
      const ended = (why: string) => {
        const at = clock.now();
        if (!this.electedAs && !this.failure) this.failure = new Error(`etcdctl elect ${proposal} ${why} before it was elected: ${this.stderr.trim() || 'no output'}`);
        this.wake();
        resolve(at);
      };
      this.child.on('exit', () => ended(`exited (${this.child.exitCode ?? this.child.signalCode})`));
      // it could not be started at all (no 'exit' follows)
      this.child.on('error', (e) => ended(`could not start (${e.message})`));
    });
  }

  private wake(): void {
    for (const w of this.waiters) w();
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Its election once it printed it; undefined while it campaigns. */
  get elected(): (Elected & { at: number }) | undefined {
    return this.electedAs;
  }

  /** Resolves with its election; rejects if it exits first, prints something else, or `timeoutMs` passes. */
  waitElected(timeoutMs: number, clock: Clock = systemClock): Promise<Elected & { at: number }> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.electedAs) done(() => resolve(this.electedAs!));
        else if (this.failure) done(() => reject(this.failure!));
      };
      const timer = clock.setTimer(timeoutMs, () => done(() => reject(new Error(`etcdctl elect ${this.proposal} was not elected within ${timeoutMs} ms`))));
      const done = (f: () => void) => {
        timer.cancel();
        this.waiters.delete(check);
        f();
      };
      this.waiters.add(check);
      check();
    });
  }

  /** SIGTERM (resign, or withdraw), then SIGKILL after `graceMs`; resolves when it has exited. */
  async stop(graceMs = 5_000, clock: Clock = systemClock): Promise<number> {
    if (this.alive) this.child.kill('SIGTERM');
    const timer = clock.setTimer(graceMs, () => this.child.kill('SIGKILL'));
    const at = await this.exited;
    timer.cancel();
    return at;
  }
}

/** Both systems' hand-offs summarized, p99 included (nearest rank), and the ratios of Conclave's to etcd's. */
export interface VersusEtcd {
  conclave: (Summary & { p99: number }) | undefined;
  etcd: (Summary & { p99: number }) | undefined;
  /** Conclave's median ÷ etcd's (below 1: Conclave hands off faster); undefined unless both ran. */
  medianRatio: number | undefined;
  p99Ratio: number | undefined;
}

/** A summary with the nearest-rank p99; undefined for no samples. */
export const withP99 = (xs: readonly number[]): (Summary & { p99: number }) | undefined => (xs.length ? { ...summarize(xs), p99: percentile(xs, 99) } : undefined);

export function versusEtcd(conclaveMs: readonly number[], etcdMs: readonly number[]): VersusEtcd {
  const conclave = withP99(conclaveMs);
  const etcd = withP99(etcdMs);
  const both = conclave && etcd;
  return { conclave, etcd, medianRatio: both ? conclave.median / etcd.median : undefined, p99Ratio: both ? conclave.p99 / etcd.p99 : undefined };
}
