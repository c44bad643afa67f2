import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { readPlatformEvent } from '../platform/signals.js';
import { vacateStoppedHolder, type VacateOutcome } from '../platform/vacate.js';
import type { Deployment } from '../wiring.js';
import type { FunctionDeps } from './core.js';
import { METRIC } from './metrics.js';

export interface PlatformResult {
  /** Why nothing was looked up (a state that is not final), else undefined. */
  ignored?: string;
  platformId?: string;
  outcomes: VacateOutcome[];
}

/**
 * The account and region a function runs in, from its own ARN (Lambda's context; local mode's
 * lambdaContext says where local mode runs).
 */
export function deploymentOf(context: Pick<Context, 'invokedFunctionArn'>): Deployment {
  const [, , , region, account] = context.invokedFunctionArn.split(':');
  if (!region || !account) throw new Error(`cannot tell the account and region from the function ARN "${context.invokedFunctionArn}"`);
  return { account, region };
}

/**
 * A platform event: when a task or instance has stopped for good, every term held on it ends at
 * once (the lease stream then starts the next election and tells "Leader Lost"). Only an event from
 * the deployment's own account and region (`here`) counts — the rules already match only those;
 * this holds if one is forwarded or invoked by hand — and only for a term that began before it
 * (vacateStoppedHolder).
 */
export async function onPlatformEvent(deps: FunctionDeps, raw: unknown, here: Deployment): Promise<PlatformResult> {
  const signal = readPlatformEvent(raw);
  if ('ignored' in signal) {
    deps.logger.debug('platform event ignored', { lease: '(none)', why: signal.ignored });
    return { ignored: signal.ignored, outcomes: [] };
  }
  const stop = signal.stop;
  if (stop.account !== here.account || stop.region !== here.region) {
    const ignored = `the event comes from account ${stop.account ?? '(none)'} in region ${stop.region ?? '(none)'}, not from this deployment's (${here.account} in ${here.region})`;
    deps.logger.warn('platform event from another account or region ignored', { lease: '(none)', account: stop.account, region: stop.region, platformId: stop.platformId, event: stop.eventId, why: ignored });
    return { ignored, outcomes: [] };
  }
  const outcomes = await vacateStoppedHolder(deps.coordinator, stop, deps.coordinator.clock.now());
  for (const o of outcomes) {
    if (o.outcome === 'vacated') {
      // the successor the row names takes the vacancy the moment it reads it: told now, not a stream hop later
      deps.wakes?.send(o.lease, o.revision);
      deps.logger.info('holder lost: term ended', { lease: o.lease, holder: o.holder, fencingToken: o.fencingToken, platformId: stop.platformId, reason: stop.reason, event: stop.eventId });
      deps.metrics.addMetric(METRIC.leadersLost, MetricUnit.Count, 1);
    } else if (o.outcome === 'broken') deps.logger.warn('platform event: the lease row does not match the schema, left alone (the tick counts it broken)', { lease: o.lease, why: o.why, platformId: stop.platformId, event: stop.eventId });
    else if (o.outcome === 'beforeTerm') deps.logger.info('platform event: not after the term began, left alone', { lease: o.lease, why: o.why, platformId: stop.platformId, event: stop.eventId });
    else deps.logger.info('platform event: lease moved on, left alone', { lease: o.lease, why: o.why, platformId: stop.platformId, event: stop.eventId });
  }
  if (!outcomes.length) deps.logger.debug('platform event: no lease held there', { lease: '(none)', platformId: stop.platformId, event: stop.eventId });
  return { platformId: stop.platformId, outcomes };
}
