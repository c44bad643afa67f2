import { spawnSync } from 'node:child_process';
import { ensureSystemNeed, installCommand, type EnsureOptions } from './debian-package.js';

/** The Debian package that gives DynamoDB Local the Java it needs. */
export const JAVA_PACKAGE = 'openjdk-17-jre-headless';
const MIN_JAVA_MAJOR = 17;
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

/** How to get Java 17 on each system, a line each. */
const HOW_TO_GET_JAVA = [
  `Debian/Ubuntu: sudo sh -c '${installCommand(JAVA_PACKAGE)}'`,
  'Fedora/RHEL:   sudo dnf install java-17-openjdk-headless',
  'macOS:         brew install openjdk@17   (then put $(brew --prefix openjdk@17)/bin on PATH)',
  'Windows:       winget install Microsoft.OpenJDK.17',
];

/** How to get Java 17 on each system, for a message. */
export function howToGetJava(): string {
  return HOW_TO_GET_JAVA.map((l) => `  ${l}`).join('\n');
}

/** Options of ensureJava: install when asked, and test hooks (the Java major version found). */
export type EnsureJavaOptions = EnsureOptions<number>;

/**
 * Makes sure Java 17+ is on PATH. Without it: a JavaMissingError saying how to get Java 17 on
 * Linux, macOS and Windows — unless installing was asked for (`install`, or CONCLAVE_INSTALL_JAVA=1),
 * in which case, as root, it installs Debian's JRE (saying so first), and otherwise gives the sudo
 * command.
 */
export function ensureJava(opts: EnsureJavaOptions = {}): number {
  return ensureSystemNeed(
    {
      pkg: JAVA_PACKAGE,
      installEnv: INSTALL_JAVA_ENV,
      needs: `DynamoDB Local needs Java ${MIN_JAVA_MAJOR} or newer`,
      howToGet: HOW_TO_GET_JAVA,
      probe: javaMajorVersion,
      lacking: (v) => (v === undefined ? 'no `java` on PATH' : v < MIN_JAVA_MAJOR ? `java ${v} is too old` : undefined),
      error: JavaMissingError,
    },
    opts,
  );
}
