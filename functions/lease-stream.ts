import { onLeaseChange, type FunctionDeps } from '../lib/functions/core.js';
import { depsFromEnv, lazy } from '../lib/functions/env.js';
import { streamHandler } from '../lib/functions/lambda.js';
import { leaseChange } from '../lib/functions/records.js';

/** Leases' stream: holder changes become events; a release, a reported vacancy or a strategy change is reconciled at once. */
export const makeHandler = (deps: FunctionDeps) =>
  streamHandler(deps, 'leaseStream', leaseChange, async (c) => {
    await onLeaseChange(deps, c);
  });

export const handler = lazy(() => makeHandler(depsFromEnv('leaseStream')));
