/**
 * HAProxy in front of local workers (issue 39): Debian's `haproxy`, asked for, not taken (as Java
 * is for DynamoDB Local, lib/local/java.ts), and a run of it on loopback with a configuration
 * written per run: every worker a server, `GET /leader` its health check, so only the leader is
 * routed to (Patroni's pattern).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createConnection, isIPv4, isIPv6 } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as z from 'zod';
import { systemClock, type Clock } from '../clock.js';
import { parse, shown } from '../schemas/validation.js';
import { portToBindLater } from './dynamodb-local.js';
import { ensureSystemNeed, findOnPath, installCommand, isExecutable, type EnsureOptions } from './debian-package.js';

/** The Debian package that gives the load-balancer story, test and benchmark their HAProxy. */
export const HAPROXY_PACKAGE = 'haproxy';
/** Set to 1 to let Conclave install HAProxy (Debian's package, as root) when it is missing. */
export const INSTALL_HAPROXY_ENV = 'CONCLAVE_INSTALL_HAPROXY';
/** Where Debian puts the binary: /usr/sbin is not on every user's PATH. */
const DEBIAN_BINARY = '/usr/sbin/haproxy';

export class HaproxyMissingError extends Error {
  override readonly name = 'HaproxyMissingError';
}

/** The haproxy binary: the first on PATH, else Debian's /usr/sbin/haproxy; undefined when there is none. */
export function findHaproxy(path = process.env['PATH'] ?? ''): string | undefined {
  return findOnPath('haproxy', path) ?? (isExecutable(DEBIAN_BINARY) ? DEBIAN_BINARY : undefined);
}

/** How to get HAProxy on each system, a line each. */
const HOW_TO_GET_HAPROXY = [`Debian/Ubuntu: sudo sh -c '${installCommand(HAPROXY_PACKAGE)}'`, 'Fedora/RHEL:   sudo dnf install haproxy', 'macOS:         brew install haproxy'];

/** How to get HAProxy on each system, for a message. */
export function howToGetHaproxy(): string {
  return HOW_TO_GET_HAPROXY.map((l) => `  ${l}`).join('\n');
}

/** Options of ensureHaproxy: install when asked, and test hooks (the binary found). */
export type EnsureHaproxyOptions = EnsureOptions<string>;

/**
 * The haproxy binary, made sure of. Without it: a HaproxyMissingError naming the install line —
 * unless installing was asked for (`install`, or CONCLAVE_INSTALL_HAPROXY=1), in which case, as
 * root, it installs Debian's package (saying so first), and otherwise gives the sudo command.
 */
export function ensureHaproxy(opts: EnsureHaproxyOptions = {}): string {
  return ensureSystemNeed(
    {
      pkg: HAPROXY_PACKAGE,
      installEnv: INSTALL_HAPROXY_ENV,
      needs: 'The load balancer in front of the local workers is HAProxy',
      howToGet: HOW_TO_GET_HAPROXY,
      probe: () => findHaproxy(),
      lacking: (b) => (b === undefined ? `no \`haproxy\` on PATH or at ${DEBIAN_BINARY}` : undefined),
      error: HaproxyMissingError,
    },
    opts,
  );
}

/** How HAProxy checks and routes; every field states the HAProxy setting it becomes. */
export const LeaderCheckSettingsSchema = z.strictObject({
  /** `inter`: how often each worker's `/leader` is asked. */
  intervalMs: z.number().int().min(10, 'must be at least 10 ms'),
  /** `rise`: answers of 200 in a row that make a worker routed to. 1: a 200 is the leader's own word that it leads now. */
  rise: z.number().int().min(1),
  /** `fall`: failed checks in a row that stop routing to a worker. */
  fall: z.number().int().min(1),
  /**
   * `fastinter`: how soon a worker is checked again after a request it failed (a 5xx or no answer:
   * `observe layer7 error-limit 1 on-error fastinter`), and between checks while it goes up or down.
   */
  fastIntervalMs: z.number().int().min(10, 'must be at least 10 ms'),
  /**
   * `downinter`: how often a worker counted down (a follower) is asked. A follower that becomes the
   * leader is routed to at its next check, so this bounds a hand-off's wait for HAProxy; a check is
   * a GET on loopback or the LAN, cheap at this rate.
   */
  downIntervalMs: z.number().int().min(10, 'must be at least 10 ms'),
  /** `timeout check`: a check unanswered this long fails. */
  checkTimeoutMs: z.number().int().min(1),
  /** `retries`: how often HAProxy itself tries a request again (`retry-on conn-failure empty-response 503`, `option redispatch 1`: on another routed worker when there is one); a request not GET, HEAD or OPTIONS not after a connection closed unanswered (its backend's `retry-on conn-failure 503`). */
  retries: z.number().int().min(0),
  /** The `Retry-After` (seconds) on every 503 a client gets: when it should try once more. */
  retryAfterSeconds: z.number().int().min(1),
});
export type LeaderCheckSettings = z.infer<typeof LeaderCheckSettingsSchema>;

/**
 * The settings the test, the benchmark and `npm start`'s story run with: a check every 250 ms, a
 * single 200 to route to a new leader, two failed checks to stop (50 ms apart after a failed
 * request), a follower asked every 50 ms (so a new leader's first 200 comes soon), one second for
 * the client's retry.
 */
export const LEADER_CHECK: LeaderCheckSettings = { intervalMs: 250, rise: 1, fall: 2, fastIntervalMs: 50, downIntervalMs: 50, checkTimeoutMs: 1_000, retries: 2, retryAfterSeconds: 1 };

/** A host name: labels of letters, digits, "-" and "_", dot-separated (a trailing dot allowed), the last not all digits (that reads as an IPv4 address). */
const HOST_NAME = /^(?=.{1,253}\.?$)(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\.)*(?![0-9]+\.?$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\.?$/;

/** `host` without the brackets of an IPv6 literal: as the state file holds it (as `show servers state` writes it). */
const bare = (host: string): string => host.replace(/^\[(.*)\]$/, '$1');

/** `host` as a `server` line holds it, before `:port`: an IPv6 literal in brackets. */
const serverHost = (host: string): string => (isIPv6(bare(host)) ? `[${bare(host)}]` : host);

/** One worker behind HAProxy: its application's port, and the port its health check (`serveHealth`) answers on. */
export const HaproxyServerSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'must be letters, digits, "_", "." or "-" (an HAProxy server name)'),
  /**
   * An IP address (127.0.0.1, ::1 or [::1]) or a host name (worker-1.internal). Written into the
   * `server` line and the state file as it is, word by word: anything else (`127.0.0.1 weight 0`)
   * would be read as more of the line, such as a setting that undoes every server starting down.
   */
  host: z
    .string()
    .refine((h) => isIPv4(h) || isIPv6(bare(h)) || HOST_NAME.test(h), {
      error: (issue) =>
        `must be an IP address (127.0.0.1, ::1) or a host name (worker-1.internal), not ${shown(issue.input)}: HAProxy reads the server line word by word, so a space or another sign would be read as more of it; give the address alone`,
    }),
  port: z.number().int().min(1).max(65_535),
  checkPort: z.number().int().min(1).max(65_535),
});
export type HaproxyServer = z.infer<typeof HaproxyServerSchema>;

/** The path on HAProxy's own address that answers 200 while some worker is routed to, else 503 (`monitor-uri`). */
export const MONITOR_PATH = '/haproxy/leader';
const BACKEND = 'leader';
/** The backend of requests that may change something (not GET, HEAD or OPTIONS): retried after a 503 or a failed connection only. */
const CHANGES_BACKEND = 'leader-changes';

/**
 * HAProxy's configuration: a frontend on 127.0.0.1:`port`, one backend with every worker as a server
 * health-checked by `GET /leader` on its check port (200 only on the leader), and MONITOR_PATH.
 * `stateFile`: where serversDownState is written, so that every server starts down.
 */
export function haproxyConfig(o: { port: number; servers: readonly HaproxyServer[]; settings?: LeaderCheckSettings; statsSocket?: string; stateFile: string }): string {
  const s = parse(LeaderCheckSettingsSchema, o.settings ?? LEADER_CHECK, 'HAProxy settings');
  const servers = o.servers.map((v) => parse(HaproxyServerSchema, v, 'HAProxy server'));
  return [
    'global',
    '  maxconn 1024',
    // HAProxy counts a server it has not checked yet as up: for the first moments after a start or
    // a reload (its first checks are spread over `fastinter`) it routed to followers. Every server
    // starts down instead (HAProxy 2.6 has no `init-state down`, 3.1's), from this file ...
    `  server-state-file ${o.stateFile}`,
    // ... and each gets its first check at once, so the leader is routed to at its first 200
    // wherever it is in the list (not spread over `inter`, the interval of a server down)
    '  max-spread-checks 1ms',
    // read-only runtime API (`show servers state`): which workers are routed to (Haproxy.up)
    ...(o.statsSocket ? [`  stats socket ${o.statsSocket} mode 600 level user`] : []),
    'defaults',
    '  load-server-state-from-file global',
    '  mode http',
    '  timeout connect 1s',
    '  timeout client 30s',
    '  timeout server 30s',
    `  timeout check ${s.checkTimeoutMs}ms`,
    'frontend clients',
    `  bind 127.0.0.1:${o.port}`,
    // for a client or an upstream load balancer: is anyone routed to behind this address?
    `  monitor-uri ${MONITOR_PATH}`,
    `  monitor fail if { nbsrv(${BACKEND}) lt 1 }`,
    // HAProxy's own 502 (each try's connection closed unanswered: a worker exiting after a hand-off,
    // the only one routed to until the new leader's check) is a refusal too: 503. A worker's own
    // 502, a response it sent (marked here), passes as it is
    '  http-response set-var(txn.answered) bool(true)',
    '  http-after-response set-status 503 if { status 502 } !{ var(txn.answered) -m found }',
    // a 503 (nobody routed to, or a worker that is not the leader) says when to try again
    `  http-after-response set-header Retry-After ${s.retryAfterSeconds} if { status 503 }`,
    // a request that may change something (not GET, HEAD or OPTIONS) to servers of their own (below)
    `  use_backend ${CHANGES_BACKEND} unless METH_GET || METH_OPTIONS`,
    `  default_backend ${BACKEND}`,
    `backend ${BACKEND}`,
    '  option httpchk GET /leader',
    '  http-check expect status 200',
    // a request a worker fails (a 5xx, or no answer) brings its next check forward to `fastinter`,
    // and the check decides: a worker that stepped down (503) or died fails it and is out after
    // `fall` checks; the application's own 500 leaves the leader in, as its `/leader` still answers
    // 200 (`on-error mark-down` would take the only leader out at its first 500). A 503 or a dead
    // connection is retried on another routed worker, if any. A worker counted down is asked every
    // `downinter`: a new leader waited up to `inter` for its first check as one, the hand-off's tail
    `  default-server inter ${s.intervalMs}ms fastinter ${s.fastIntervalMs}ms downinter ${s.downIntervalMs}ms rise ${s.rise} fall ${s.fall} observe layer7 error-limit 1 on-error fastinter`,
    '  retry-on conn-failure empty-response 503',
    `  retries ${s.retries}`,
    '  option redispatch 1',
    ...servers.map((v) => `  server ${v.name} ${serverHost(v.host)}:${v.port} check port ${v.checkPort}`),
    // The same workers, each routed to as its check above says (`track`), for a request that may
    // change something: retried after a worker's 503 (not the leader: nothing done) or a connection
    // that failed (no worker saw it), never after one closed unanswered (`empty-response`): a POST a
    // worker carried out before closing (a leader exiting after its hand-off, a crash) ran again on
    // the next routed worker, in the new term, where its fencing token is valid too
    `backend ${CHANGES_BACKEND}`,
    '  retry-on conn-failure 503',
    `  retries ${s.retries}`,
    '  option redispatch 1',
    ...servers.map((v) => `  server ${v.name} ${serverHost(v.host)}:${v.port} track ${BACKEND}/${v.name}`),
    '',
  ].join('\n');
}

/**
 * The server state file (`show servers state`'s format, version 1) that haproxyConfig's
 * `server-state-file` names: every server of the backend stopped (srv_op_state 0), at the address
 * and ports of its `server` line (HAProxy takes them from this file). A line HAProxy cannot read is
 * skipped with a warning, and that server starts up.
 */
export function serversDownState(servers: readonly HaproxyServer[]): string {
  const rows = servers.map((v, i) => {
    const { name, host, port, checkPort } = parse(HaproxyServerSchema, v, 'HAProxy server');
    // be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight
    // srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state
    // srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl
    // srv_check_port srv_check_addr srv_agent_addr srv_agent_port; matched by backend and server name
    return `1 ${BACKEND} ${i + 1} ${name} ${bare(host)} 0 0 1 1 0 1 0 0 6 0 0 0 - ${port} - 0 ${checkPort} - - 0`;
  });
  return ['1', ...rows, ''].join('\n');
}

/** A running HAProxy (startHaproxy). */
export interface Haproxy {
  /** The address clients use, `http://127.0.0.1:<port>`: whoever leads answers behind it. */
  readonly url: string;
  readonly port: number;
  /** `url` + MONITOR_PATH. */
  readonly monitorUrl: string;
  /** The configuration it runs. */
  readonly config: string;
  readonly pid: number | undefined;
  /** Whether some worker is routed to now (MONITOR_PATH answers 200). */
  routed(): Promise<boolean>;
  /** Whether HAProxy routes to the server of that name now (its runtime API's `show servers state`). */
  up(server: string): Promise<boolean>;
  /** How many client requests HAProxy has sent to the server of that name (its `stot` in `show stat`; health checks not counted). */
  sentTo(server: string): Promise<number>;
  stop(): Promise<void>;
}

/**
 * How long a GET of MONITOR_PATH may go unanswered: HAProxy answers it itself, asking no worker, so
 * one this slow is a hung HAProxy (routed() says false; startHaproxy's start timeout can fire).
 */
const MONITOR_TIMEOUT_MS = 5_000;

/** A GET's status, or undefined when nothing answered: not listening (yet), or no answer within `timeoutMs` on `clock`. */
function statusOf(url: string, clock: Clock, timeoutMs = MONITOR_TIMEOUT_MS): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = request(url, { agent: false }, (res) => {
      timer.cancel();
      res.resume();
      resolve(res.statusCode);
    });
    const timer = clock.setTimer(timeoutMs, () => req.destroy());
    req.on('error', () => {
      timer.cancel();
      resolve(undefined);
    });
    req.end();
  });
}

/** One command's answer from HAProxy's runtime API on `socket`; a hang guard bounds the wait. */
function runtimeApi(socket: string, command: string, clock: Clock, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const conn = createConnection(socket);
    const timer = clock.setTimer(timeoutMs, () => conn.destroy(new Error(`haproxy's runtime API did not answer "${command}" within ${timeoutMs} ms`)));
    conn.on('data', (b: Buffer) => (out += b.toString()));
    conn.on('error', (e) => {
      timer.cancel();
      reject(e);
    });
    conn.on('end', () => {
      timer.cancel();
      resolve(out);
    });
    conn.end(`${command}\n`);
  });
}

/**
 * Whether `show servers state`'s answer has `server` running: its srv_op_state (the sixth field)
 * is 2 (SRV_ST_RUNNING; 0 is stopped). A worker on its way down (failed checks under `fall`) still runs.
 */
function serverUp(state: string, server: string): boolean {
  const row = state.split('\n').map((l) => l.trim().split(/\s+/)).find((f) => !f[0]?.startsWith('#') && f[3] === server);
  if (!row) throw new Error(`haproxy's runtime API has no server "${server}" in:\n${state}`);
  return row[5] === '2';
}

/** The `stot` (sessions sent to it, health checks not counted) of `server` in `show stat`'s CSV. */
function sessionsTo(csv: string, server: string): number {
  const [header, ...rows] = csv.split('\n').filter((l) => l.trim() !== '');
  const names = header!.replace(/^# /, '').split(',');
  const row = rows.map((l) => l.split(',')).find((f) => f[names.indexOf('pxname')] === BACKEND && f[names.indexOf('svname')] === server);
  if (!row) throw new Error(`haproxy's runtime API has no server "${server}" in:\n${csv}`);
  return Number(row[names.indexOf('stot')]);
}

/**
 * `command` run so that it is killed when this process dies, however it dies: on Linux under
 * `setpriv --pdeathsig KILL` (util-linux), which execs it with the parent-death signal set. A
 * SIGKILLed `npm start` left HAProxy running for good, on its port, reparented to init (process.on('exit')
 * runs for no signal). Elsewhere, or without setpriv, as it is.
 */
export function withParentDeath(command: readonly string[]): [string, string[]] {
  if (process.platform === 'linux' && spawnSync('setpriv', ['--version'], { stdio: 'ignore' }).status === 0) return ['setpriv', ['--pdeathsig', 'KILL', '--', ...command]];
  return [command[0]!, command.slice(1)];
}

/**
 * Runs HAProxy in the foreground (`-db`) with haproxyConfig, on a free loopback port, until stop();
 * resolves once its frontend answers. The binary: `haproxy`, from ensureHaproxy (the caller asks).
 */
export async function startHaproxy(o: {
  servers: readonly HaproxyServer[];
  settings?: LeaderCheckSettings;
  binary?: string;
  clock?: Clock;
  startTimeoutMs?: number;
  /** Called once HAProxy is spawned, before it listens, with the address clients will use (a test sends from then on). */
  onSpawn?: (url: string) => void;
}): Promise<Haproxy> {
  const binary = o.binary ?? ensureHaproxy();
  const clock = o.clock ?? systemClock;
  // bound by HAProxy a moment later: never a port the kernel may hand out meanwhile, nor one its
  // servers were given, which they bind later still (BehindHaproxy starts its workers after it)
  const port = await portToBindLater(new Set(o.servers.flatMap((v) => [v.port, v.checkPort])), () => clock.random());
  const dir = mkdtempSync(join(tmpdir(), 'conclave-haproxy-'));
  const file = join(dir, 'haproxy.cfg');
  const socket = join(dir, 'haproxy.sock');
  const stateFile = join(dir, 'servers-down.state');
  const config = haproxyConfig({ port, servers: o.servers, statsSocket: socket, stateFile, ...(o.settings ? { settings: o.settings } : {}) });
  writeFileSync(stateFile, serversDownState(o.servers));
  writeFileSync(file, config);
  const child = spawn(...withParentDeath([binary, '-db', '-f', file]), { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => {
    stderr = (stderr + b.toString()).slice(-4000);
  });
  let exited: number | null | undefined;
  const gone = new Promise<void>((r) =>
    child.on('exit', (code) => {
      exited = code;
      r();
    }),
  );
  const killOnExit = () => child.kill('SIGKILL');
  process.on('exit', killOnExit);
  const stop = async () => {
    process.off('exit', killOnExit);
    if (exited === undefined) child.kill('SIGTERM');
    const timer = clock.setTimer(3_000, killOnExit);
    await gone;
    timer.cancel();
    rmSync(dir, { recursive: true, force: true });
  };
  const url = `http://127.0.0.1:${port}`;
  const monitorUrl = `${url}${MONITOR_PATH}`;
  o.onSpawn?.(url);
  const deadline = clock.monotonic() + (o.startTimeoutMs ?? 60_000);
  for (;;) {
    if (exited !== undefined) {
      await stop();
      throw new Error(`haproxy exited with code ${exited} before answering:\n${stderr}\nits configuration:\n${config}`);
    }
    if ((await statusOf(monitorUrl, clock, Math.max(1, Math.min(MONITOR_TIMEOUT_MS, deadline - clock.monotonic())))) !== undefined) break;
    if (clock.monotonic() > deadline) {
      await stop();
      throw new Error(`haproxy did not answer on ${url} within its start timeout:\n${stderr}`);
    }
    await clock.sleep(50);
  }
  const up = async (server: string) => serverUp(await runtimeApi(socket, `show servers state ${BACKEND}`, clock), server);
  const sentTo = async (server: string) => sessionsTo(await runtimeApi(socket, 'show stat', clock), server);
  return { url, port, monitorUrl, config, pid: child.pid, routed: async () => (await statusOf(monitorUrl, clock)) === 200, up, sentTo, stop };
}
