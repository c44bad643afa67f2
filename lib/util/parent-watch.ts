/**
 * Whether the process that started this one is still there. `npx conclave-local` runs it under
 * `sh -c`, and `npm start` runs `sh -c 'tsx lib/local/start.ts'`; a `kill <pid>` of npx or npm
 * reaches that shell, which (dash: Debian's, Ubuntu's) exits without passing the signal on: the
 * process, re-parented to init, ran on, its DynamoDB Local holding the port. Watched, its starter's
 * exit stops it as a SIGTERM would. So does the CLI's command that runs until interrupted (`npx
 * conclave watch`, which ran on under init, retrying a DynamoDB Local long gone). Here, under both
 * local mode and the CLI; below the clock, so its timers are taken as the clock's (ParentWatchClock).
 */
import { readFileSync } from 'node:fs';

/** The clock's timers (lib/clock.ts' Clock.setTimer, a `background` one keeping no process alive), as taken here. */
export interface ParentWatchClock {
  setTimer(ms: number, fn: () => void, opts?: { readonly background?: boolean }): { cancel(): void };
}

/** How often the parent is looked at: a second (reading process.ppid costs a system call, nothing more). */
export const PARENT_CHECK_MS = 1_000;

/** The parent of process `pid`, from /proc (Linux); undefined where that cannot be read (gone, or no /proc). */
export function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // pid (name) state ppid …: the name may hold spaces and parentheses, so read after its last ')'
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isInteger(ppid) ? ppid : undefined;
  } catch {
    return undefined;
  }
}

/** Whether this process is the child tsx's CLI runs a script in (`tsx file.ts`): its preflight is required first. */
const underTsxCli = (execArgv: readonly string[] = process.execArgv) => execArgv.some((a) => /[\\/]tsx[\\/]dist[\\/]preflight\.c?js$/.test(a));

/**
 * The process whose exit means nobody runs this one any more: its parent; under tsx's CLI, the
 * CLI's parent. `npm start` is `sh -c 'tsx lib/local/start.ts'`, and the CLI runs the script in a
 * child of its own: a kill of npm ends the shell, and the CLI, re-parented to init, stays (it
 * passes on SIGINT and SIGTERM alone), so the script's own parent never changes. Where /proc
 * cannot be read, the parent.
 */
export function starterOf(ppid: number = process.ppid, execArgv: readonly string[] = process.execArgv, parent: (pid: number) => number | undefined = parentOf): number {
  // the CLI itself gone (killed): the script's parent changes, which tells it as well (0 for init's parent)
  return underTsxCli(execArgv) ? (parent(ppid) ?? ppid) : ppid;
}

/**
 * Calls `onGone` once, at the first look that finds this process's starter (starterOf: its parent,
 * or under tsx's CLI the CLI's) another than at the start (it exited: init, or a subreaper, took
 * its child over). A starter that is init from the start (a service, a container's entry point)
 * never changes. The timer keeps no process alive.
 */
export function watchParent(clock: ParentWatchClock, onGone: (was: number, now: number) => void, ppid: () => number = () => starterOf(), everyMs = PARENT_CHECK_MS): { cancel(): void } {
  const first = ppid();
  let cancelled = false;
  const look = (): { cancel(): void } =>
    clock.setTimer(
      everyMs,
      () => {
        if (cancelled) return;
        const now = ppid();
        if (now === first) {
          timer = look();
          return;
        }
        cancelled = true;
        onGone(first, now);
      },
      { background: true },
    );
  let timer = look();
  return {
    cancel() {
      cancelled = true;
      timer.cancel();
    },
  };
}

/**
 * From now on, a failed write to this process's stdout or stderr (EPIPE, EIO) is ignored: nobody may
 * read them any more (its starter gone, its terminal closed), and a stop under way must not end
 * half-way on an error event nobody handles.
 */
export function outputUnread(): void {
  for (const s of [process.stdout, process.stderr]) if (s.listenerCount('error') === 0) s.on('error', () => undefined);
}
