import { spawnSync } from 'node:child_process';

/** The Debian package that gives DynamoDB Local the Java it needs. */
export const JAVA_PACKAGE = 'openjdk-17-jre-headless';
const MIN_JAVA_MAJOR = 17;
const INSTALL_COMMAND = `apt-get update && apt-get install -y ${JAVA_PACKAGE}`;
/** Set to 1 to let Conclave install Java (Debian's JRE, as root) when it is missing. */
export const INSTALL_JAVA_ENV = 'CONCLAVE_INSTALL_JAVA';

export class JavaMissingError extends Error {
  override readonly name = 'JavaMissingError';
}

/** The major version `java -version` reports, or undefined when there is no java on PATH. */
export function javaMajorVersion(): number | undefined {
  const r = spawnSync('java', ['-version'], { encoding: 'utf8' });
  if (r.error) return undefined;
  // `openjdk version "17.0.15" 2025-04-15` or the old `java version "1.8.0_392"`
  const m = /version "(\d+)(?:\.(\d+))?/.exec(`${r.stderr}${r.stdout}`);
  if (!m) return undefined;
  const major = Number(m[1]);
  return major === 1 ? Number(m[2]) : major;
}

/** How to get Java 17 on each system, for a message. */
export function howToGetJava(): string {
  return [
    `  Debian/Ubuntu: sudo sh -c '${INSTALL_COMMAND}'`,
    '  Fedora/RHEL:   sudo dnf install java-17-openjdk-headless',
    '  macOS:         brew install openjdk@17   (then put $(brew --prefix openjdk@17)/bin on PATH)',
    '  Windows:       winget install Microsoft.OpenJDK.17',
  ].join('\n');
}

export interface EnsureJavaOptions {
  /**
   * Install Debian's JRE when Java is missing (as root only). Never by default: a published package
   * installs no system package unless asked. @default process.env.CONCLAVE_INSTALL_JAVA === '1'
   */
  install?: boolean;
  /** Who asks, for the line said before installing (e.g. "npm test"). */
  askedBy?: string;
  log?: (line: string) => void;
  /** Test hooks: the Java found, whether this process is root, and the install. */
  probe?: () => number | undefined;
  isRoot?: () => boolean;
  runInstall?: () => number | null;
}

/**
 * Makes sure Java 17+ is on PATH. Without it: a JavaMissingError saying how to get Java 17 on
 * Linux, macOS and Windows — unless installing was asked for (`install`, or CONCLAVE_INSTALL_JAVA=1),
 * in which case, as root, it installs Debian's JRE (saying so first), and otherwise gives the sudo
 * command.
 */
export function ensureJava(opts: EnsureJavaOptions = {}): number {
  const probe = opts.probe ?? javaMajorVersion;
  const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const found = probe();
  if (found !== undefined && found >= MIN_JAVA_MAJOR) return found;
  const why = found === undefined ? 'no `java` on PATH' : `java ${found} is too old`;
  const install = opts.install ?? process.env[INSTALL_JAVA_ENV] === '1';
  if (!install) {
    throw new JavaMissingError(
      `DynamoDB Local needs Java ${MIN_JAVA_MAJOR} or newer (${why}). Install it:\n${howToGetJava()}\n` +
        `then run the command again. Or set ${INSTALL_JAVA_ENV}=1 to let Conclave install ${JAVA_PACKAGE} itself (Debian, as root).`,
    );
  }
  const isRoot = opts.isRoot ?? (() => typeof process.getuid === 'function' && process.getuid() === 0);
  if (!isRoot()) {
    throw new JavaMissingError(`DynamoDB Local needs Java ${MIN_JAVA_MAJOR} or newer (${why}); installing it needs root. Run:\n  sudo sh -c '${INSTALL_COMMAND}'\nthen run the command again.`);
  }
  log(`conclave: ${why}; ${opts.askedBy ?? INSTALL_JAVA_ENV + '=1'} asks for it: installing ${JAVA_PACKAGE} from Debian (one time)…`);
  const run = opts.runInstall ?? (() => spawnSync('sh', ['-c', INSTALL_COMMAND], { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } }).status);
  const status = run();
  const after = probe();
  if (status !== 0 || after === undefined || after < MIN_JAVA_MAJOR) {
    throw new JavaMissingError(`Installing ${JAVA_PACKAGE} failed (exit ${status}). Run this yourself and try again:\n  ${INSTALL_COMMAND}`);
  }
  return after;
}
