/**
 * Whether the process that started this one is still there. `npx conclave-local` runs it under
 * `sh -c`, and a `kill <pid>` of npx reaches that shell, which (dash: Debian's, Ubuntu's) exits
 * without passing the signal on: conclave-local, re-parented to init, ran on, its DynamoDB Local
 * holding the port. Watched, its parent's exit stops it as a SIGTERM would.
 */
import { every, type Clock, type Timer } from '../clock.js';

/** How often the parent is looked at: a second (reading process.ppid costs a system call, nothing more). */
export const PARENT_CHECK_MS = 1_000;

/**
 * Calls `onGone` once, at the first look that finds this process's parent another than at the
 * start (its parent exited: init, or a subreaper, took it over). A parent that is init from the
 * start (a service, a container's entry point) never changes. The timer keeps no process alive.
 */
export function watchParent(clock: Pick<Clock, 'setTimer'>, onGone: (was: number, now: number) => void, ppid: () => number = () => process.ppid, everyMs = PARENT_CHECK_MS): Timer {
  const first = ppid();
  const timer = every(
    clock,
    everyMs,
    () => {
      const now = ppid();
      if (now === first) return;
      timer.cancel();
      onGone(first, now);
    },
    { background: true },
  );
  return timer;
}
