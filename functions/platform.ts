import type { Context, EventBridgeEvent } from 'aws-lambda';
import type { FunctionDeps } from '../lib/functions/core.js';
import { depsFromEnv, lazy } from '../lib/functions/env.js';
import { observed } from '../lib/functions/lambda.js';
import { deploymentOf, onPlatformEvent } from '../lib/functions/platform.js';

/**
 * ECS "Task State Change" (STOPPED) and EC2 "Instance State-change Notification" (stopped,
 * terminated): end the terms held there at once — only events from this function's own account
 * and region, and only terms that began before the event. A malformed event throws a
 * ValidationError, so Lambda's asynchronous retries and then the dead-letter queue take it.
 */
export const makeHandler = (deps: FunctionDeps) => observed(deps, (event: EventBridgeEvent<string, unknown>, context: Context) => onPlatformEvent(deps, event, deploymentOf(context)));

export const handler = lazy(() => makeHandler(depsFromEnv('platform')));
