/**
 * A folder made with its missing parents, as `mkdir -p` makes it.
 *
 * Not Node's `mkdirSync(dir, { recursive: true })`: where mkdir answers ENOENT under a parent that
 * exists (a pseudo file system such as /proc takes no new folders), Node's recursive mkdir tries
 * again for ever and never returns. Here that is an error naming the parent.
 */
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

export function makeFolder(dir: string): void {
  try {
    mkdirSync(dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' && statSync(dir).isDirectory()) return;
    const parent = dirname(dir);
    if (code !== 'ENOENT' || parent === dir) throw e;
    if (existsSync(parent)) throw new Error(`${parent} takes no new folders (mkdir '${dir}' answered ENOENT)`, { cause: e });
    makeFolder(parent);
    mkdirSync(dir);
  }
}
