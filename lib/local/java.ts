import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ensureSystemNeed, findOnPath, installCommand, isExecutable, type EnsureOptions } from './debian-package.js';

/** The Debian package that gives DynamoDB Local the Java it needs. */
export const JAVA_PACKAGE = 'openjdk-17-jre-headless';
const MIN_JAVA_MAJOR = 17;
/** Set to 1 to let Conclave install Java (Debian's JRE, as root) when it is missing. */
export const INSTALL_JAVA_ENV = 'CONCLAVE_INSTALL_JAVA';
/** The executable's file name: `java.exe` on Windows (the PATH search looks for files by name). */
const JAVA_EXE = process.platform === 'win32' ? 'java.exe' : 'java';
/** Where Debian, Ubuntu and Fedora install their JVMs, a folder each (`<jvm>/bin/java`). */
export const JVM_DIR = '/usr/lib/jvm';

export class JavaMissingError extends Error {
  override readonly name = 'JavaMissingError';
}

/** A java executable and the major version it reports. */
export interface JavaBinary {
  readonly path: string;
  readonly major: number;
}

/**
 * What the search for Java found: the one DynamoDB Local runs (`use`: the first of Java 17 or
 * newer), and the `java` on PATH (told by name when it is too old and nothing else will do).
 */
export interface JavaSearch {
  readonly use?: JavaBinary;
  readonly onPath?: JavaBinary;
}

/** The major version `java -version` reports, or undefined when `java` (a path, or the name on PATH) does not run. */
export function javaMajorVersion(java = 'java'): number | undefined {
  const r = spawnSync(java, ['-version'], { encoding: 'utf8' });
  if (r.error) return undefined;
  // `openjdk version "17.0.15" 2025-04-15` or the old `java version "1.8.0_392"`
  const m = /version "(\d+)(?:\.(\d+))?/.exec(`${r.stderr}${r.stdout}`);
  if (!m) return undefined;
  const major = Number(m[1]);
  return major === 1 ? Number(m[2]) : major;
}

/** Where to look: the environment's PATH and JAVA_HOME, and the JVM folder. Test hooks. */
export interface JavaPlaces {
  readonly path?: string;
  readonly javaHome?: string;
  readonly jvmDir?: string;
}

/**
 * Java 17 or newer: the `java` on PATH; failing that (missing, or older), `$JAVA_HOME/bin/java`,
 * then the newest under /usr/lib/jvm (a JRE installed beside an older default: `apt-get install`
 * leaves PATH's `java` as it was, and so did `npm start`, asking apt-get again at every start).
 */
export function findJava(places: JavaPlaces = {}): JavaSearch {
  const probe = (path: string): JavaBinary | undefined => {
    const major = javaMajorVersion(path);
    return major === undefined ? undefined : { path, major };
  };
  const onPathFile = findOnPath(JAVA_EXE, places.path ?? process.env['PATH'] ?? '');
  const onPath = onPathFile === undefined ? undefined : probe(onPathFile);
  const ok = (b: JavaBinary | undefined): b is JavaBinary => b !== undefined && b.major >= MIN_JAVA_MAJOR;
  if (ok(onPath)) return { use: onPath, onPath };
  const home = places.javaHome ?? process.env['JAVA_HOME'];
  const homeJava = home ? join(home, 'bin', JAVA_EXE) : undefined;
  const fromHome = homeJava && isExecutable(homeJava) ? probe(homeJava) : undefined;
  if (ok(fromHome)) return { use: fromHome, ...(onPath ? { onPath } : {}) };
  const dir = places.jvmDir ?? JVM_DIR;
  let jvms: string[] = [];
  try {
    jvms = readdirSync(dir).map((d) => join(dir, d, 'bin', 'java')).filter(isExecutable);
  } catch {
    // no JVM folder (macOS, Windows): nothing more to look at
  }
  const found = jvms.map(probe).filter(ok).sort((a, b) => b.major - a.major)[0];
  return { ...(found ? { use: found } : {}), ...(onPath ? { onPath } : {}) };
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

/** Options of ensureJava: install when asked, and test hooks (what the search finds). */
export type EnsureJavaOptions = EnsureOptions<JavaSearch>;

/**
 * The Java 17+ DynamoDB Local runs (findJava). Without one: a JavaMissingError naming the `java` on
 * PATH and its version if there is one, and saying how to get Java 17 on Linux, macOS and Windows —
 * unless installing was asked for (`install`, or CONCLAVE_INSTALL_JAVA=1), in which case, as root on
 * Debian, it installs Debian's JRE (saying so first), and otherwise gives the sudo command. One
 * found off PATH is run by its path, and said so once.
 */
export function ensureJava(opts: EnsureJavaOptions = {}): JavaBinary {
  const found = ensureSystemNeed(
    {
      pkg: JAVA_PACKAGE,
      installEnv: INSTALL_JAVA_ENV,
      needs: `DynamoDB Local needs Java ${MIN_JAVA_MAJOR} or newer`,
      howToGet: HOW_TO_GET_JAVA,
      probe: findJava,
      lacking: (s) =>
        s?.use !== undefined
          ? undefined
          : s?.onPath !== undefined
            ? `the java on PATH (${s.onPath.path}) is Java ${s.onPath.major}, and none of ${MIN_JAVA_MAJOR} or newer is in JAVA_HOME or ${JVM_DIR}`
            : `no java on PATH, in JAVA_HOME or in ${JVM_DIR}`,
      error: JavaMissingError,
    },
    opts,
  );
  const use = found.use!;
  if (found.onPath?.path !== use.path) {
    const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
    log(`conclave: ${found.onPath ? `the java on PATH (${found.onPath.path}) is Java ${found.onPath.major}` : 'no java on PATH'}: DynamoDB Local runs ${use.path} (Java ${use.major})`);
  }
  return use;
}
