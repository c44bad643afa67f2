import { onLeaseChange, withWakes, type FunctionDeps } from '../lib/functions/core.js';
import { depsFromEnv, lazy } from '../lib/functions/env.js';
import { streamBatchHandler } from '../lib/functions/lambda.js';
import { leaseChange } from '../lib/functions/records.js';

/** Leases' stream: holder changes become events; a release, a reported vacancy or a strategy change is reconciled at once. */
export const makeHandler = (deps: FunctionDeps) =>
  streamBatchHandler(deps, 'leaseStream', leaseChange, () => {
    // the batch's wakes go out as its records come, and are waited for once all are done: no election waits on IoT Core
    const run = withWakes(deps);
    return { record: async (c) => void (await onLeaseChange(run.deps, c)), end: run.end };
  });

export const handler = lazy(() => makeHandler(depsFromEnv('leaseStream')));
