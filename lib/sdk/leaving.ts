/**
 * A process that exits while one of its electors hands its lease over or releases it cuts that
 * write off, and the successor waits for the term to run out (up to a lease duration) instead of
 * leading at once. client-go's example exits in OnStoppedLeading, which client-go calls after its
 * release; here onStoppedLeading runs when the leader stops acting, before the write, so that no
 * successor leads before it has run. Each step-down whose write is in progress is noted here, and a
 * process that exits meanwhile says so on stderr, with the fix. So is each term an elector leads
 * (with releaseOnCancel): a process that exits while leading it (process.exit() in the leader's
 * work) never releases it, and its successor waits as long. The fix told is the caller's own: a
 * LeaderElector's is to await run(), a withLease (or tryWithLease) call's, which has no elector nor
 * run() in the caller's hands, to return from its function or abort its `signal` option and await it;
 * a runWithLeaderMigration call's (its electors electorStarter's), to abort its `signal` option and
 * await it.
 */

/** The call whose elector it is, when not a LeaderElector the caller made: withLease's (or tryWithLease's), or runWithLeaderMigration's, told of by that call's name (ElectorInternals.exits). */
export type ExitCall = 'withLease' | 'tryWithLease' | 'runWithLeaderMigration';

/** A call that runs a function of the caller's (withLease's, tryWithLease's), rather than controllers until its signal aborts. */
const runsAFunction = (call: ExitCall): boolean => call !== 'runWithLeaderMigration';

/** The step-downs in progress, each by the elector's name (e.g. `LeaderElector "w1" of lease "jobs"`). */
const inProgress = new Set<{ readonly who: string; readonly call: ExitCall | undefined }>();
/** The terms led now, each by its elector's name, its fencing token and when it runs out (LeaderElector's runsOut, read as the process exits). */
const led = new Set<{ readonly who: string; readonly token: number; readonly runsOut: () => string | undefined; readonly call: ExitCall | undefined }>();
let watching = false;

/** What a process that exits during `who`'s step-down prints; `call`: the withLease call whose elector it is, if any. */
export const exitedWhileLeaving = (who: string, call?: ExitCall): string =>
  `conclave: ${who}: the process exited before its step-down's write (the hand-over to its successor, or the release) was answered, so the successor waits for the term to run out (up to the lease duration) instead of leading at once. ` +
  (call
    ? runsAFunction(call)
      ? `Exit once ${call} has resolved (its function returned, or the signal given as its \`signal\` option aborted: await ${call}, then exit), not beside the abort`
      : `Exit once ${call} has resolved (abort the signal given as its \`signal\` option, await ${call}, then exit), not beside the abort`
    : 'Exit once run() has resolved (abort its signal, await elector.run(signal), then exit), not in onStoppedLeading nor beside the abort');

/** What a process that exits while `who` leads the term with fencing token `token` prints; `runsOut`: when the term runs out, as its elector last renewed it. */
export const exitedWhileLeading = (who: string, token: number, runsOut: string, call?: ExitCall): string =>
  `conclave: ${who}: the process exited while it led the term with fencing token ${token}, which was not released, so the successor waits for it to run out, ${runsOut}, instead of leading at once. ` +
  (call
    ? runsAFunction(call)
      ? `To end the process, return from ${call}'s function, or abort the signal given as its \`signal\` option, and await ${call} before exiting (as on SIGTERM): it releases the term; in the function, set process.exitCode and return rather than calling process.exit()`
      : `To end the process, abort the signal given as ${call}'s \`signal\` option and await ${call} before exiting (as on SIGTERM): it releases the term; in a controller, set process.exitCode and abort that signal rather than calling process.exit()`
    : "To end the process, abort run()'s signal and await elector.run(signal) before exiting (as on SIGTERM): it releases the term; in the leader's work, set process.exitCode and abort the signal rather than calling process.exit()");

/** One 'exit' listener for the process: 'exit' listeners run synchronously, and stderr on a file, TTY or pipe is written before the process ends. */
function watch(): void {
  if (watching) return;
  watching = true;
  process.on('exit', () => {
    const leaving = new Set<string>();
    for (const x of inProgress) {
      leaving.add(x.who);
      process.stderr.write(`${exitedWhileLeaving(x.who, x.call)}\n`);
    }
    // one line per elector: a term whose step-down is under way is told of as the step-down's
    for (const x of led) {
      if (leaving.has(x.who)) continue;
      let when: string | undefined;
      try {
        when = x.runsOut();
      } catch {
        // (its clock unreadable: said without the time)
      }
      process.stderr.write(`${exitedWhileLeading(x.who, x.token, when ?? 'a lease duration after its last renewal', x.call)}\n`);
    }
  });
}

/** Notes `who`'s step-down (of `call`'s elector, if any) as in progress until the function returned is called. */
export function leaving(who: string, call?: ExitCall): () => void {
  watch();
  const x = { who, call };
  inProgress.add(x);
  return () => void inProgress.delete(x);
}

/** Notes that `who` (`call`'s elector, if any) leads the term with fencing token `token` (it runs out as `runsOut` says) until the function returned is called. */
export function leadingTerm(who: string, token: number, runsOut: () => string | undefined, call?: ExitCall): () => void {
  watch();
  const x = { who, token, runsOut, call };
  led.add(x);
  return () => void led.delete(x);
}

/** The step-downs in progress now, by name (for tests). */
export const leavingNow = (): string[] => [...inProgress].map((x) => x.who);
