import { spawnSync } from 'node:child_process';

/** The Debian package that gives DynamoDB Local the Java it needs. */
export const JAVA_PACKAGE = 'openjdk-17-jre-headless';
const MIN_JAVA_MAJOR = 17;
const INSTALL_COMMAND = `apt-get update && apt-get install -y ${JAVA_PACKAGE}`;

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

/**
 * Makes sure Java 17+ is on PATH. As root it installs Debian's JRE (the only registry this
 * project may reach besides npm); otherwise it stops with the exact command to run.
 */
export function ensureJava(log: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): number {
  const found = javaMajorVersion();
  if (found !== undefined && found >= MIN_JAVA_MAJOR) return found;
  const why = found === undefined ? 'no `java` on PATH' : `java ${found} is too old`;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot) {
    throw new JavaMissingError(
      `DynamoDB Local needs Java ${MIN_JAVA_MAJOR} or newer (${why}). Install it with:\n  sudo sh -c '${INSTALL_COMMAND}'\nthen run the command again.`,
    );
  }
  log(`conclave: ${why}; installing ${JAVA_PACKAGE} from Debian (one time)…`);
  const r = spawnSync('sh', ['-c', INSTALL_COMMAND], { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  const after = javaMajorVersion();
  if (r.status !== 0 || after === undefined || after < MIN_JAVA_MAJOR) {
    throw new JavaMissingError(
      `Installing ${JAVA_PACKAGE} failed (exit ${r.status}). Run this yourself and try again:\n  ${INSTALL_COMMAND}`,
    );
  }
  return after;
}
