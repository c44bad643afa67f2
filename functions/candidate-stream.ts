import { onCandidateChange, type FunctionDeps } from '../lib/functions/core.js';
import { depsFromEnv, lazy } from '../lib/functions/env.js';
import { streamHandler } from '../lib/functions/lambda.js';
import { candidateChange } from '../lib/functions/records.js';

/** Candidates' stream: reconcile the leases whose candidates joined, left, changed rank or acknowledged a ping. */
export const makeHandler = (deps: FunctionDeps) =>
  streamHandler(deps, async (r) => {
    await onCandidateChange(deps, candidateChange(r)); // a malformed record throws: reported, retried, then dead-lettered
  });

export const handler = lazy(() => makeHandler(depsFromEnv('candidateStream')));
