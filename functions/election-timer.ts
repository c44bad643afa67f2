import { onMarkEnded, onRepublish, onTimer, withWakes, type FunctionDeps } from '../lib/functions/core.js';
import { depsFromEnv, lazy } from '../lib/functions/env.js';
import { queueBatchHandler } from '../lib/functions/lambda.js';
import { parseTimerQueueMessage } from '../lib/functions/timer.js';

/** An election's ack window ended: finish it with whoever answered. Or a silent holder's term ran out: judge the lease again. Or: an ended term's mark the lease stream could not write yet. Or: events deferred by an EventBridge outage, to publish again. */
export const makeHandler = (deps: FunctionDeps) =>
  queueBatchHandler(deps, () => {
    // the winner of an election finished here hears of it at once, not a stream hop later
    const run = withWakes(deps);
    return {
      record: async (r) => {
        const m = parseTimerQueueMessage(r.body, `timer message ${r.messageId}`);
        if (m.kind === 'republish') await onRepublish(run.deps, m.message);
        else if (m.kind === 'markEnded') await onMarkEnded(run.deps, m.message);
        else await onTimer(run.deps, m.message);
      },
      end: run.end,
    };
  });

export const handler = lazy(() => makeHandler(depsFromEnv('electionTimer')));
