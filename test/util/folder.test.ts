/**
 * makeFolder makes a folder with its missing parents, as `mkdir -p`, and fails where a folder cannot
 * be made: also where mkdir answers ENOENT under a parent that exists (/proc), on which Node's own
 * recursive mkdir never returns (that case runs `conclave-local` in a child process, in
 * test/local/conclave-local-bin.test.ts, so a hang fails the test instead of blocking the suite).
 */
import { existsSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeFolder } from '../../lib/util/folder.js';

describe('makeFolder', () => {
  const root = mkdtempSync(join(tmpdir(), 'conclave-folder-'));

  it('makes a folder and its missing parents, and takes one already there', () => {
    const dir = join(root, 'a', 'b', 'c');
    makeFolder(dir);
    expect(statSync(dir).isDirectory()).toBe(true);
    makeFolder(dir);
    makeFolder(join(root, 'a'));
    expect(statSync(dir).isDirectory()).toBe(true);
  });

  it('fails on a file in the way, at the folder or at a parent', () => {
    const file = join(root, 'file');
    writeFileSync(file, '');
    expect(() => makeFolder(file)).toThrow(/EEXIST/);
    expect(() => makeFolder(join(file, 'x', 'y'))).toThrow(/ENOTDIR/);
    expect(existsSync(join(file, 'x'))).toBe(false);
  });

  it.skipIf(!existsSync('/proc/self'))('fails naming the parent where mkdir answers ENOENT under a parent that exists (/proc)', () => {
    expect(() => makeFolder('/proc/conclave-no-such/x')).toThrow("/proc takes no new folders (mkdir '/proc/conclave-no-such' answered ENOENT)");
  });
});
