import { onTimer, type FunctionDeps } from '../lib/functions/core.js';
import { depsFromEnv, lazy } from '../lib/functions/env.js';
import { queueHandler } from '../lib/functions/lambda.js';
import { parseTimerMessage } from '../lib/functions/timer.js';

/** An election's ack window ended: finish it with whoever answered. */
export const makeHandler = (deps: FunctionDeps) =>
  queueHandler(deps, async (r) => {
    await onTimer(deps, parseTimerMessage(r.body, `timer message ${r.messageId}`));
  });

export const handler = lazy(() => makeHandler(depsFromEnv('electionTimer')));
