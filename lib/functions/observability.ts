/**
 * What every function's Lambda side shares and nothing else: Powertools Logger and Metrics, and a
 * handler built on first use. Apart from lib/functions/env.ts so that a function of its own
 * (functions/leader-discovery.ts) bundles these without the coordinator's code.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { FunctionDeps } from './core.js';
import { NAMESPACE, SERVICE } from './metrics.js';

/**
 * Observability for one function: Powertools Logger and Metrics (embedded metric format). Most
 * stream batches change nothing worth a metric, so Metrics' "no application metrics" warning
 * is dropped; its other warnings stay warnings.
 */
export function observability(functionName: string, logLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT'): Pick<FunctionDeps, 'logger' | 'metrics'> {
  const logger = new Logger({ serviceName: SERVICE, ...(logLevel ? { logLevel } : {}) });
  const metricsLogger = {
    trace: (...a: unknown[]) => logger.trace(String(a[0])),
    debug: (...a: unknown[]) => logger.debug(String(a[0])),
    info: (...a: unknown[]) => logger.info(String(a[0])),
    error: (...a: unknown[]) => logger.error(String(a[0])),
    warn: (...a: unknown[]) => (String(a[0]).startsWith('No application metrics') ? undefined : logger.warn(String(a[0]))),
  };
  return { logger, metrics: new Metrics({ namespace: NAMESPACE, serviceName: SERVICE, defaultDimensions: { function: functionName }, logger: metricsLogger }) };
}

/** A handler built on first use, so importing a handler module never needs its environment. */
export function lazy<H extends (...args: never[]) => unknown>(make: () => H): H {
  let built: H | undefined;
  return ((...args: Parameters<H>) => (built ??= make())(...args)) as H;
}
