import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { readPlatformEvent } from '../platform/signals.js';
import { vacateStoppedHolder, type VacateOutcome } from '../platform/vacate.js';
import type { FunctionDeps } from './core.js';
import { METRIC } from './metrics.js';

export interface PlatformResult {
  /** Why nothing was looked up (a state that is not final), else undefined. */
  ignored?: string;
  platformId?: string;
  outcomes: VacateOutcome[];
}

/**
 * A platform event: when a task or instance has stopped for good, every term held on it ends at
 * once (the lease stream then starts the next election and tells "Leader Lost").
 */
export async function onPlatformEvent(deps: FunctionDeps, raw: unknown): Promise<PlatformResult> {
  const signal = readPlatformEvent(raw);
  if ('ignored' in signal) {
    deps.logger.debug('platform event ignored', { lease: '(none)', why: signal.ignored });
    return { ignored: signal.ignored, outcomes: [] };
  }
  const stop = signal.stop;
  const outcomes = await vacateStoppedHolder(deps.coordinator, stop, deps.coordinator.clock.now());
  for (const o of outcomes) {
    if (o.outcome === 'vacated') {
      deps.logger.info('holder lost: term ended', { lease: o.lease, holder: o.holder, fencingToken: o.fencingToken, platformId: stop.platformId, reason: stop.reason, event: stop.eventId });
      deps.metrics.addMetric(METRIC.leadersLost, MetricUnit.Count, 1);
    } else deps.logger.info('platform event: lease moved on, left alone', { lease: o.lease, why: o.why, platformId: stop.platformId, event: stop.eventId });
  }
  if (!outcomes.length) deps.logger.debug('platform event: no lease held there', { lease: '(none)', platformId: stop.platformId, event: stop.eventId });
  return { platformId: stop.platformId, outcomes };
}
