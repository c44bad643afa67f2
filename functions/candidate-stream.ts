import { onCandidateChange, type FunctionDeps } from '../lib/functions/core.js';
import { depsFromEnv, lazy } from '../lib/functions/env.js';
import { streamHandler } from '../lib/functions/lambda.js';
import { candidateChange } from '../lib/functions/records.js';

/** Candidates' stream: reconcile the leases whose candidates joined, left, changed rank or acknowledged a ping. */
export const makeHandler = (deps: FunctionDeps) =>
  // a record that does not parse is dead-lettered at once with its content (no retry can read it)
  streamHandler(deps, 'candidateStream', candidateChange, async (c) => {
    await onCandidateChange(deps, c);
  });

export const handler = lazy(() => makeHandler(depsFromEnv('candidateStream')));
