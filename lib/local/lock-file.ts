/**
 * Lock files of local mode, each made whole or not at all and naming its holder's pid: the
 * checkpoints file's (lib/local/stream-checkpoints.ts, held for one merge). A lock whose holder is
 * gone (killed while it held it) is taken away, never one a live process holds. (The runtime's lock,
 * lib/local/runtime-lock.ts, is an item in DynamoDB Local; it uses `alive` here.)
 */
import { linkSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** A unique temp name per lock try in this process: two processes on one folder never share one either. */
let tries = 0;

/** Whether process `pid` runs on this machine (signal 0: no signal sent, only the check). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'; // there, someone else's
  }
}

/** The lock file's content (`<pid>.<n>`, then what the holder tells of itself), undefined once it is gone. */
export function lockContent(lock: string): string | undefined {
  try {
    return readFileSync(lock, 'utf8').trim();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/** A holder's token (`<pid>.<n>`), the first word of its lock's content. */
export const tokenOf = (content: string): string => content.split(/\s/)[0]!;
/** The pid a lock's content names. */
export const pidOf = (content: string): number => Number(tokenOf(content).split('.')[0]);

/**
 * One try at `lock`: made whole or not at all (its content, the token and `about`, written to a
 * file of our own, then hard-linked to the lock's name, which fails if one is there). Held: its
 * token. Else the holder's content, and whether that holder is gone: a process no longer running,
 * or this one's pid on a token `selfHolds` says this process does not hold (an earlier process's
 * that had its pid).
 */
export function tryLock(
  lock: string,
  selfHolds: (token: string) => boolean,
  about = '',
): { held: true; token: string } | { held: false; holder: string | undefined; stale: boolean } {
  const token = `${process.pid}.${++tries}`;
  const mine = `${lock}.${token}.tmp`;
  try {
    // inside the try: a write that fails (the disk full: ENOSPC) made the file all the same, empty or
    // cut short, and it is removed with the rest, never left beside the lock at every try
    writeFileSync(mine, `${token}${about ? ` ${about}` : ''}\n`);
    linkSync(mine, lock);
    return { held: true, token };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  } finally {
    rmSync(mine, { force: true });
  }
  const holder = lockContent(lock);
  if (holder === undefined) return { held: false, holder, stale: false }; // let go since: tried again at once
  const pid = pidOf(holder);
  const stale = !Number.isSafeInteger(pid) || pid <= 0 || (pid === process.pid ? !selfHolds(tokenOf(holder)) : !alive(pid));
  return { held: false, holder, stale };
}

/**
 * Takes away a lock left by a process that is gone (`holder`, its content as seen): moved aside
 * first, then looked at, so a lock another process took meanwhile (having taken the stale one away
 * itself) is put back, not deleted.
 */
export function breakStale(lock: string, holder: string): void {
  const aside = `${lock}.${process.pid}.${++tries}.stale`;
  try {
    renameSync(lock, aside);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return; // taken away by another process already
    throw e;
  }
  try {
    if (lockContent(aside) === holder) return;
    // a live holder's: back under the lock's name (unless a third process has locked it since)
    try {
      linkSync(aside, lock);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  } finally {
    rmSync(aside, { force: true });
  }
}

/** Lets go of `lock` if `token` still holds it (one taken away as stale and taken by another is left to it). */
export function unlock(lock: string, token: string): void {
  const now = lockContent(lock);
  if (now !== undefined && tokenOf(now) === token) rmSync(lock, { force: true });
}

/** `text` as a literal in a regular expression. */
const literally = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Removes the temp files beside `file` that processes now gone left behind: `<file>.<pid>.<n>.tmp`
 * (a lock's try, or a write made whole by a rename) and `<file>.<pid>.<n>.stale` (a stale lock moved
 * aside), each of a pid that no longer runs (killed mid-write, or a write that failed before these
 * were removed on failure). Only names of exactly that form: nobody else's files, and never one of a
 * live process (this one's included: it may be writing it now). Best effort: a folder that cannot be
 * read, or a file that cannot be removed, is left as it is. Returns the names removed.
 */
export function removeLeftTemps(file: string): string[] {
  const left = new RegExp(`^${literally(basename(file))}\\.(\\d+)\\.\\d+\\.(?:tmp|stale)$`);
  let names: string[];
  try {
    names = readdirSync(dirname(file));
  } catch {
    return [];
  }
  return names.filter((name) => {
    const pid = Number(left.exec(name)?.[1]);
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid || alive(pid)) return false;
    try {
      rmSync(join(dirname(file), name), { force: true });
      return true;
    } catch {
      return false;
    }
  });
}
