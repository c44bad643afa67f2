import type { Context, EventBridgeEvent } from 'aws-lambda';
import { withWakes, type FunctionDeps } from '../lib/functions/core.js';
import { depsFromEnv, lazy } from '../lib/functions/env.js';
import { observed } from '../lib/functions/lambda.js';
import { deploymentOf, onPlatformEvent } from '../lib/functions/platform.js';

/**
 * ECS "Task State Change" (STOPPED) and EC2 "Instance State-change Notification" (stopped,
 * terminated): end the terms held there at once — only events from this function's own account
 * and region, and only terms that began before the event. A malformed event throws a
 * ValidationError, so Lambda's asynchronous retries and then the dead-letter queue take it.
 */
export const makeHandler = (deps: FunctionDeps) =>
  observed(deps, async (event: EventBridgeEvent<string, unknown>, context: Context) => {
    // each term ended wakes its lease at once; the invocation waits for the wakes before it answers
    const run = withWakes(deps);
    try {
      return await onPlatformEvent(run.deps, event, deploymentOf(context));
    } finally {
      await run.end(context.getRemainingTimeInMillis?.());
    }
  });

export const handler = lazy(() => makeHandler(depsFromEnv('platform')));
