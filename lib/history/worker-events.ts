import type { HistoryRecord, WorkerEvent } from './schema.js';

/**
 * The history of workers that print lib/local/demo/worker.ts's JSON lines (`npm start`'s): their
 * `started`/`stopped` lines carry wall-clock milliseconds rather than monotonic stamps. That is
 * good enough where every worker runs on this machine with an unskewed clock: the wall time in
 * ms stands in for the monotonic one. A kill recorded by WorkerProcess carries no token; it is the
 * token of the term it ended.
 */
export function historyFromWorkerEvents(lease: string, workers: readonly { identity: string; events: readonly WorkerEvent[] }[]): HistoryRecord[] {
  const out: HistoryRecord[] = [];
  for (const w of workers) {
    const instance = w.events.find((e) => e.event === 'ready')?.instance ?? `${w.identity}#${workers.indexOf(w)}`;
    let token: number | undefined;
    for (const e of w.events) {
      if (e.event !== 'started' && e.event !== 'stopped') continue;
      if (e.event === 'started') token = e.fencingToken;
      const fencingToken = e.fencingToken ?? token;
      if (fencingToken === undefined) continue; // a stop before any start: nothing to judge
      out.push({
        event: e.event,
        lease,
        identity: w.identity,
        instance,
        fencingToken,
        mono: (BigInt(e.at) * 1_000_000n).toString(),
        wall: e.at,
        ...(e.reason ? { reason: e.reason } : {}),
      });
    }
  }
  return out;
}
