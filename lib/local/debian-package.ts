/**
 * A system program the local system needs (Java for DynamoDB Local, HAProxy for the load-balancer
 * story and test): found, or installed from Debian's archive only when asked (never by default: a
 * published package installs no system package unless asked), or an error naming the install line.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** What is needed, and how to tell it is there. */
export interface SystemNeed<T> {
  /** The Debian package that provides it. */
  readonly pkg: string;
  /** The environment variable that, set to 1, lets Conclave install `pkg` (as root). */
  readonly installEnv: string;
  /** Who needs what, for messages: "DynamoDB Local needs Java 17 or newer". */
  readonly needs: string;
  /** How to get it on each system, a line each. */
  readonly howToGet: readonly string[];
  /** What is there now (undefined: nothing). */
  readonly probe: () => T | undefined;
  /** Why what was found will not do (undefined: it will). */
  readonly lacking: (found: T | undefined) => string | undefined;
  readonly error: new (message: string) => Error;
}

export interface EnsureOptions<T> {
  /** Install the Debian package when it is missing (as root only). @default process.env[installEnv] === '1' */
  install?: boolean;
  /** Who asks, for the line said before installing (e.g. "npm test"). */
  askedBy?: string;
  log?: (line: string) => void;
  /** Test hooks: what is found, whether this process is root, whether apt-get is there, and the install. */
  probe?: () => T | undefined;
  isRoot?: () => boolean;
  hasApt?: () => boolean;
  runInstall?: () => number | null;
}

/** Whether `path` is a file this process may execute. */
export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false; // absent or not executable: not this one
  }
}

/** The first executable named `name` in the directories of `path` (a PATH value); undefined when there is none. */
export function findOnPath(name: string, path = process.env['PATH'] ?? ''): string | undefined {
  return path
    .split(delimiter)
    .filter(Boolean)
    .map((d) => join(d, name))
    .find(isExecutable);
}

/** The shell line that installs `pkg` from Debian's archive. */
export const installCommand = (pkg: string): string => `apt-get update && apt-get install -y ${pkg}`;

/**
 * What `need` probes, made sure of: returned when it will do. Otherwise an error saying how to get
 * it on each system — unless installing was asked for (`install`, or `installEnv`=1), in which case,
 * as root, it installs the Debian package (saying so first), and otherwise gives the sudo command.
 */
export function ensureSystemNeed<T>(need: SystemNeed<T>, opts: EnsureOptions<T> = {}): T {
  const probe = opts.probe ?? need.probe;
  const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const command = installCommand(need.pkg);
  const found = probe();
  const why = need.lacking(found);
  if (why === undefined) return found!;
  const howToGet = `Install it:\n${need.howToGet.map((l) => `  ${l}`).join('\n')}\nthen run the command again.`;
  if (!(opts.install ?? process.env[need.installEnv] === '1')) {
    throw new need.error(`${need.needs} (${why}). ${howToGet} Or set ${need.installEnv}=1 to let Conclave install ${need.pkg} itself (Debian, as root).`);
  }
  // asked, but no Debian here (macOS, Fedora): the ways for each system, not an apt-get line that cannot run
  if (!(opts.hasApt ?? (() => findOnPath('apt-get') !== undefined))()) throw new need.error(`${need.needs} (${why}); this system has no apt-get to install ${need.pkg} with. ${howToGet}`);
  const isRoot = opts.isRoot ?? (() => typeof process.getuid === 'function' && process.getuid() === 0);
  if (!isRoot()) throw new need.error(`${need.needs} (${why}); installing it needs root. Run:\n  sudo sh -c '${command}'\nthen run the command again.`);
  log(`conclave: ${why}; ${opts.askedBy ?? `${need.installEnv}=1`} asks for it: installing ${need.pkg} from Debian (one time)...`);
  const run = opts.runInstall ?? (() => spawnSync('sh', ['-c', command], { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } }).status);
  const status = run();
  const after = probe();
  if (status !== 0) throw new need.error(`Installing ${need.pkg} failed (exit ${status}). Run this yourself and try again:\n  ${command}`);
  // installed, and still not found: it is not where it is looked for (installed somewhere PATH does not reach)
  const still = need.lacking(after);
  if (still !== undefined) throw new need.error(`${need.pkg} is installed, and still ${still}. ${howToGet}`);
  return after!;
}
