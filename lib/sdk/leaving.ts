/**
 * A process that exits while one of its electors hands its lease over or releases it cuts that
 * write off, and the successor waits for the term to run out (up to a lease duration) instead of
 * leading at once. client-go's example exits in OnStoppedLeading, which client-go calls after its
 * release; here onStoppedLeading runs when the leader stops acting, before the write, so that no
 * successor leads before it has run. Each step-down whose write is in progress is noted here, and a
 * process that exits meanwhile says so on stderr, with the fix.
 */

/** The step-downs in progress, each by the elector's name (e.g. `LeaderElector "w1" of lease "jobs"`). */
const inProgress = new Set<{ readonly who: string }>();
let watching = false;

/** What a process that exits during `who`'s step-down prints. */
export const exitedWhileLeaving = (who: string): string =>
  `conclave: ${who}: the process exited before its step-down's write (the hand-over to its successor, or the release) was answered, so the successor waits for the term to run out (up to the lease duration) instead of leading at once. ` +
  'Exit once run() has resolved (abort its signal, await elector.run(signal), then exit), not in onStoppedLeading nor beside the abort';

/** Notes `who`'s step-down as in progress until the function returned is called. */
export function leaving(who: string): () => void {
  if (!watching) {
    watching = true;
    // 'exit' listeners run synchronously: stderr on a file, TTY or pipe is written before the process ends
    process.on('exit', () => {
      for (const x of inProgress) process.stderr.write(`${exitedWhileLeaving(x.who)}\n`);
    });
  }
  const x = { who };
  inProgress.add(x);
  return () => void inProgress.delete(x);
}

/** The step-downs in progress now, by name (for tests). */
export const leavingNow = (): string[] => [...inProgress].map((x) => x.who);
