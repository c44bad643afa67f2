/**
 * Workloads, the scheduled job: as a Lambda function on a schedule would run it from a worker
 * process — an invocation every cronEveryMs (each worker at its own phase), each one withLease on
 * CRON_LEASE with a run-once window per period; a run writes to the ledger, fenced, while it
 * works, then completes its window with one more ledger entry in the marker's transaction.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { every } from '../lib/clock.js';
import { ledgerAppend, ledgerWrite } from '../lib/history/ledger.js';
import { FencingError } from '../lib/sdk/fencing.js';
import { LeaseLostError, tryWithLeaseWith, type LeaseTerm } from '../lib/sdk/with-lease.js';
import { electorInternals } from './bugs.js';
import { ns, T0 } from './feed.js';
import { CRON_LEASE, type WorldContext } from './settings.js';
import type { Proc } from './proc.js';

/** What the world's scheduled jobs share: invocations so far (each names its run). */
export interface JobsState {
  invocations: number;
}

/** Invokes the scheduled job from `proc` (worker `i`) every cronEveryMs, from its phase on. */
export function scheduleJobs(c: WorldContext, state: JobsState, proc: Proc, i: number, client: DynamoDBClient): void {
  const { settings } = c;
  const pc = proc.machine.clock;
  const invoke = () => {
    if (pc.dead || proc.stop.signal.aborted) return;
    const n = ++state.invocations;
    invokeJob(c, proc, client, `${proc.identity}-r${n}`); // a Lambda request id: one per invocation
  };
  const phase = ((i + 1) * settings.cronEveryMs) / (settings.workers + 1);
  pc.setTimer(phase, () => {
    invoke();
    every(pc, settings.cronEveryMs, invoke);
  });
}

/** One invocation: withLease on CRON_LEASE, run once in this period's window. */
function invokeJob(c: WorldContext, proc: Proc, client: DynamoDBClient, identity: string): void {
  const { world, feed, settings } = c;
  const clock = world.clock;
  const pc = proc.machine.clock;
  const instance = `${identity}_run`;
  const window = `period-${Math.floor((clock.now() - T0) / settings.cronEveryMs)}`;
  proc.cronRuns.set(instance, undefined);
  // (the run inline, helpers at module level: tsx names every named closure each time it is made)
  // a planted bug goes into the run's elector too (sim/bugs.ts)
  const planted = electorInternals(c.plant, { client, leasesTable: world.names.leases, wallNow: () => pc.now() }) ?? {};
  const job = tryWithLeaseWith(
    planted,
    CRON_LEASE,
    async (signal: AbortSignal, term: LeaseTerm) => {
      const token = term.fencingToken;
      proc.cronRuns.set(instance, token);
      feed.started({ lease: CRON_LEASE, identity, instance, fencingToken: token }, Math.max(0, Math.round(pc.now())));
      feed.log(`${identity} runs ${CRON_LEASE} for ${window} (token ${token})`);
      let writes = 0;
      // (the work inline, not in a function of its own: a seed replays exactly only while each run takes the same turns of the event loop)
      try {
        const until = clock.monotonic() + settings.cronWorkMs;
        while (!signal.aborted && clock.monotonic() < until) {
          try {
            const e = ledgerEntry(c, instance, identity, token, String(++writes));
            await (c.multiRegion ? term.fencedItemWrite(ledgerAppend(feed.ledgerTable, e)) : term.fencedWrite(ledgerWrite(feed.ledgerTable, e)));
            feed.count('cron:fenced:accepted');
          } catch (e) {
            feed.count(e instanceof FencingError ? 'cron:fenced:refused' : 'cron:fenced:error');
          }
          await pc.sleep(settings.writeEveryMs, signal);
        }
        signal.throwIfAborted();
        if (c.multiRegion) {
          // no transactions: the window is marked first, then its completion appended (fenced), so at most one lands
          await term.complete();
          await term.fencedItemWrite(ledgerAppend(feed.ledgerTable, ledgerEntry(c, instance, identity, token, 'done', window)));
        } else await term.complete(ledgerWrite(feed.ledgerTable, ledgerEntry(c, instance, identity, token, 'done', window)).TransactItems!);
      } finally {
        runStopped(c, proc, instance, identity, token, signal.aborted ? String(signal.reason instanceof LeaseLostError ? signal.reason.reason : 'aborted') : 'returned');
      }
    },
    {
      client,
      clock: pc,
      tables: world.names,
      identity,
      mode: 'NoCoordination',
      ...(c.multiRegion ? { multiRegion: true } : {}),
      runOnce: { window },
      // a SIGTERM ends the run too: the process gives the lease up before it exits
      signal: proc.stop.signal,
      waitMs: settings.leaseDurationMs,
      leaseDurationMs: settings.leaseDurationMs,
      renewDeadlineMs: settings.renewDeadlineMs,
      retryPeriodMs: settings.retryPeriodMs,
      onError() {
        feed.count('workerErrors');
        if (c.brokenAlarms) throw new Error('the alarm is down');
      },
    },
  )
    .then(
      (r) => void feed.count(`cron:${r.status}`),
      (e: unknown) => void feed.count(`cron:${(e as Error).name ?? 'error'}`),
    )
    .finally(() => proc.cronRuns.delete(instance));
  proc.jobs.add(job);
  void job.finally(() => proc.jobs.delete(job));
}

/** A run of the job ended now (its process alive and the run not ended before). */
function runStopped(c: WorldContext, proc: Proc, instance: string, identity: string, token: number, reason: string): void {
  const pc = proc.machine.clock;
  if (pc.dead || !proc.cronRuns.has(instance)) return;
  proc.cronRuns.delete(instance);
  c.feed.stopped({ lease: CRON_LEASE, identity, instance, fencingToken: token }, Math.max(0, Math.round(pc.now())), reason);
  c.feed.log(`${identity} stops running ${CRON_LEASE} (${reason})`);
}

/** A ledger entry of the run: its `id`th write, or its completion of `window`. */
function ledgerEntry(c: WorldContext, instance: string, identity: string, token: number, id: string, window?: string) {
  return { lease: CRON_LEASE, id: `${instance}#${id}`, identity, instance, fencingToken: token, sentMono: ns(c.world.clock.monotonic()), zombie: false, ...(window === undefined ? {} : { window }) };
}
