/**
 * Java, asked not taken (issue 29): the published packages install no system package unless the
 * user asks (CONCLAVE_INSTALL_JAVA=1, or `installJava`); the repository's own npm start and npm test
 * ask on the user's behalf and say so. Without Java and without asking, the error says how to get
 * Java 17 on Linux, macOS and Windows.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ensureJava, INSTALL_JAVA_ENV, JavaMissingError } from '../../lib/local/java.js';

const saved = process.env[INSTALL_JAVA_ENV];
afterEach(() => {
  if (saved === undefined) delete process.env[INSTALL_JAVA_ENV];
  else process.env[INSTALL_JAVA_ENV] = saved;
});

function world(o: { java?: number; root: boolean; installs?: boolean }) {
  let java = o.java;
  const calls: string[] = [];
  return {
    calls,
    opts: {
      probe: () => java,
      isRoot: () => o.root,
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
    expect(ensureJava({ ...w.opts, install: true })).toBe(21);
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
    expect(() => ensureJava(world({ java: 11, root: true }).opts)).toThrow(/java 11 is too old/);
  });

  it('asked by CONCLAVE_INSTALL_JAVA=1, as root: says so, then installs', () => {
    process.env[INSTALL_JAVA_ENV] = '1';
    const w = world({ root: true });
    expect(ensureJava(w.opts)).toBe(17);
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
});
