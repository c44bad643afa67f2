import { onRepublish, onTimer, type FunctionDeps } from '../lib/functions/core.js';
import { depsFromEnv, lazy } from '../lib/functions/env.js';
import { queueHandler } from '../lib/functions/lambda.js';
import { parseTimerQueueMessage } from '../lib/functions/timer.js';

/** An election's ack window ended: finish it with whoever answered. Or a silent holder's term ran out: judge the lease again. Or: events deferred by an EventBridge outage, to publish again. */
export const makeHandler = (deps: FunctionDeps) =>
  queueHandler(deps, async (r) => {
    const m = parseTimerQueueMessage(r.body, `timer message ${r.messageId}`);
    if (m.kind === 'republish') await onRepublish(deps, m.message);
    else await onTimer(deps, m.message);
  });

export const handler = lazy(() => makeHandler(depsFromEnv('electionTimer')));
