import { onCandidateChange, withWakes, type FunctionDeps } from '../lib/functions/core.js';
import { depsFromEnv, lazy } from '../lib/functions/env.js';
import { streamBatchHandler } from '../lib/functions/lambda.js';
import { candidateRecord } from '../lib/functions/records.js';

/** Candidates' stream: reconcile the leases whose candidates joined, left, changed rank or acknowledged a ping. */
export const makeHandler = (deps: FunctionDeps) =>
  // a record that does not parse is dead-lettered at once with its content (no retry can read it),
  // but for the coordinator's own refusedSeen on a row already refused: it changes nothing else
  streamBatchHandler(deps, 'candidateStream', candidateRecord, () => {
    // a lease a reconcile wrote (the election's winner, a preemption) wakes its followers before the lease stream would
    const run = withWakes(deps);
    return {
      record: async (c) => {
        if (!('refusedSeenStamp' in c)) return void (await onCandidateChange(run.deps, c));
        deps.logger.info("the coordinator's refusedSeen on a candidate row the schema refuses, nothing else changed: handled, not dead-lettered (the row's own writes are)", { key: c.key, unchangedSince: new Date(c.seen.at).toISOString() });
      },
      end: run.end,
    };
  });

export const handler = lazy(() => makeHandler(depsFromEnv('candidateStream')));
