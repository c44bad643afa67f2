import type { EventBridgeEvent } from 'aws-lambda';
import type { FunctionDeps } from '../lib/functions/core.js';
import { depsFromEnv, lazy } from '../lib/functions/env.js';
import { observed } from '../lib/functions/lambda.js';
import { onPlatformEvent } from '../lib/functions/platform.js';

/**
 * ECS "Task State Change" (STOPPED) and EC2 "Instance State-change Notification" (stopped,
 * terminated): end the terms held there at once. A malformed event throws a ValidationError, so
 * Lambda's asynchronous retries and then the dead-letter queue take it.
 */
export const makeHandler = (deps: FunctionDeps) => observed(deps, (event: EventBridgeEvent<string, unknown>) => onPlatformEvent(deps, event));

export const handler = lazy(() => makeHandler(depsFromEnv('platform')));
