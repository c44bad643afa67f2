import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { Context, EventBridgeEvent } from 'aws-lambda';
import { discoveryDepsFromEnv, onDiscoveryEvent, type DiscoveryFunctionDeps } from '../lib/discovery/handler.js';
import { lazy } from '../lib/functions/observability.js';

/**
 * Leader Elected, Lease Released, Leader Lost and Election Started from the Conclave bus: the
 * lease's name (a Cloud Map instance or a Route 53 record) follows its leader, in fencing-token
 * order (lib/discovery/apply.ts). A failure throws: Lambda retries, then the dead-letter queue.
 */
export const makeHandler = (deps: DiscoveryFunctionDeps) =>
  middy((event: EventBridgeEvent<string, unknown>, context: Context) => onDiscoveryEvent(deps, event, context.getRemainingTimeInMillis()))
    .use(injectLambdaContext(deps.logger))
    .use(logMetrics(deps.metrics));

export const handler = lazy(() => makeHandler(discoveryDepsFromEnv()));
