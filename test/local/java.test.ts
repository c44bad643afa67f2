/**
 * Java, asked not taken (issue 29): the published packages install no system package unless the
 * user asks (CONCLAVE_INSTALL_JAVA=1, or `installJava`); the repository's own npm start and npm test
 * ask on the user's behalf and say so. Without Java and without asking, the error says how to get
 * Java 17 on Linux, macOS and Windows.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureJava, findJava, INSTALL_JAVA_ENV, JavaMissingError, type JavaSearch } from '../../lib/local/java.js';

const saved = process.env[INSTALL_JAVA_ENV];
afterEach(() => {
  if (saved === undefined) delete process.env[INSTALL_JAVA_ENV];
  else process.env[INSTALL_JAVA_ENV] = saved;
});

/** A machine whose `java` on PATH is Java `java` (undefined: none), as findJava would report it. */
function world(o: { java?: number; root: boolean; installs?: boolean; apt?: boolean }) {
  let java = o.java;
  const calls: string[] = [];
  const search = (): JavaSearch => {
    const onPath = java === undefined ? undefined : { path: '/usr/bin/java', major: java };
    return { ...(onPath ? { onPath } : {}), ...(onPath && onPath.major >= 17 ? { use: onPath } : {}) };
  };
  return {
    calls,
    opts: {
      probe: search,
      isRoot: () => o.root,
      hasApt: () => o.apt !== false,
      runInstall: () => {
        calls.push('install');
        if (o.installs !== false) java = 17;
        return o.installs === false ? 100 : 0;
      },
      log: (l: string) => calls.push(l),
    },
  };
}

describe('ensureJava', () => {
  it('Java 17 or newer: nothing to do', () => {
    const w = world({ java: 21, root: true });
    expect(ensureJava({ ...w.opts, install: true })).toEqual({ path: '/usr/bin/java', major: 21 });
    expect(w.calls).toEqual([]);
  });

  it('missing, not asked — even as root: installs nothing, and says how to get Java 17 on each system and how to ask', () => {
    delete process.env[INSTALL_JAVA_ENV];
    const w = world({ root: true });
    expect(() => ensureJava(w.opts)).toThrow(JavaMissingError);
    expect(w.calls).toEqual([]);
    let message = '';
    try {
      ensureJava(w.opts);
    } catch (e) {
      message = (e as Error).message;
    }
    for (const hint of ['Debian/Ubuntu: sudo sh -c', 'Fedora/RHEL', 'macOS:         brew install openjdk@17', 'Windows:       winget install Microsoft.OpenJDK.17', 'CONCLAVE_INSTALL_JAVA=1']) expect(message).toContain(hint);
  });

  it('too old counts as missing', () => {
    delete process.env[INSTALL_JAVA_ENV];
    expect(() => ensureJava(world({ java: 11, root: true }).opts)).toThrow(/the java on PATH \(\/usr\/bin\/java\) is Java 11, and none of 17 or newer is in JAVA_HOME or \/usr\/lib\/jvm/);
  });

  it('asked by CONCLAVE_INSTALL_JAVA=1, as root: says so, then installs', () => {
    process.env[INSTALL_JAVA_ENV] = '1';
    const w = world({ root: true });
    expect(ensureJava(w.opts)).toMatchObject({ major: 17 });
    expect(w.calls).toEqual([expect.stringMatching(/CONCLAVE_INSTALL_JAVA=1 asks for it: installing openjdk-17-jre-headless/), 'install']);
  });

  it("asked on the user's behalf by the repository's npm test: says who asked", () => {
    delete process.env[INSTALL_JAVA_ENV];
    const w = world({ root: true });
    ensureJava({ ...w.opts, install: true, askedBy: 'npm test' });
    expect(w.calls[0]).toMatch(/npm test asks for it/);
  });

  it('asked, not root: the sudo command; a failed install: the command to run', () => {
    expect(() => ensureJava({ ...world({ root: false }).opts, install: true })).toThrow(/needs root.*sudo sh -c/s);
    expect(() => ensureJava({ ...world({ root: true, installs: false }).opts, install: true })).toThrow(/Installing openjdk-17-jre-headless failed \(exit 100\)/);
  });

  it('asked where there is no apt-get (macOS, Fedora): how to get Java on each system, not an apt-get line', () => {
    const w = world({ root: false, apt: false });
    expect(() => ensureJava({ ...w.opts, install: true })).toThrow(/no apt-get to install openjdk-17-jre-headless with\. Install it:\n.*macOS: +brew install openjdk@17/s);
    expect(w.calls).toEqual([]);
  });

  it('installed, and still too old on PATH (installed where it is not looked for): says so, not "failed (exit 0)"', () => {
    const w = world({ java: 11, root: true });
    w.opts.runInstall = () => (w.calls.push('install'), 0); // java on PATH stays 11
    expect(() => ensureJava({ ...w.opts, install: true })).toThrow(/openjdk-17-jre-headless is installed, and still the java on PATH \(\/usr\/bin\/java\) is Java 11/);
  });
});

describe('findJava', () => {
  // executables that answer -version as a JDK does (on stderr), in a folder of this test's own
  const root = mkdtempSync(join(tmpdir(), 'conclave-java-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const fakeJava = (dir: string, version: string): string => {
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'java');
    writeFileSync(file, `#!/bin/sh\necho 'openjdk version "${version}" 2025-01-01' >&2\n`);
    chmodSync(file, 0o755);
    return file;
  };
  const old = fakeJava(join(root, 'old', 'bin'), '11.0.2');
  const jvm = join(root, 'jvm');
  const j17 = fakeJava(join(jvm, 'java-17-openjdk', 'bin'), '17.0.9');
  const j21 = fakeJava(join(jvm, 'java-21-openjdk', 'bin'), '21.0.1');
  fakeJava(join(jvm, 'java-8-openjdk', 'bin'), '1.8.0_392');

  it("an older java first on PATH, Java 17+ installed beside it: runs the newest there, and names PATH's (before: apt-get at every start, then 'failed (exit 0)')", () => {
    expect(findJava({ path: join(root, 'old', 'bin'), jvmDir: jvm, javaHome: '' })).toEqual({ use: { path: j21, major: 21 }, onPath: { path: old, major: 11 } });
    const logged: string[] = [];
    expect(ensureJava({ probe: () => findJava({ path: join(root, 'old', 'bin'), jvmDir: jvm, javaHome: '' }), log: (l) => void logged.push(l) })).toEqual({ path: j21, major: 21 });
    expect(logged).toEqual([`conclave: the java on PATH (${old}) is Java 11: DynamoDB Local runs ${j21} (Java 21)`]);
  });

  it('JAVA_HOME before the JVM folder; a java of 17 or newer on PATH before both', () => {
    expect(findJava({ path: join(root, 'old', 'bin'), jvmDir: jvm, javaHome: join(jvm, 'java-17-openjdk') }).use).toEqual({ path: j17, major: 17 });
    expect(findJava({ path: join(jvm, 'java-17-openjdk', 'bin'), jvmDir: jvm, javaHome: '' })).toEqual({ use: { path: j17, major: 17 }, onPath: { path: j17, major: 17 } });
    expect(findJava({ path: join(root, 'none'), jvmDir: join(root, 'none'), javaHome: '' })).toEqual({});
  });
});
