import { onCandidateChange, withWakes, type FunctionDeps } from '../lib/functions/core.js';
import { depsFromEnv, lazy } from '../lib/functions/env.js';
import { streamBatchHandler } from '../lib/functions/lambda.js';
import { candidateChange } from '../lib/functions/records.js';

/** Candidates' stream: reconcile the leases whose candidates joined, left, changed rank or acknowledged a ping. */
export const makeHandler = (deps: FunctionDeps) =>
  // a record that does not parse is dead-lettered at once with its content (no retry can read it)
  streamBatchHandler(deps, 'candidateStream', candidateChange, () => {
    // a lease a reconcile wrote (the election's winner, a preemption) wakes its followers before the lease stream would
    const run = withWakes(deps);
    return { record: async (c) => void (await onCandidateChange(run.deps, c)), end: run.end };
  });

export const handler = lazy(() => makeHandler(depsFromEnv('candidateStream')));
