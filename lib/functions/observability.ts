/**
 * What every function's Lambda side shares and nothing else: Powertools Logger and Metrics, and a
 * handler built on first use. Apart from lib/functions/env.ts so that a function of its own
 * (functions/leader-discovery.ts) bundles these without the coordinator's code.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { ENV } from '../function-env.js';
import type { FunctionDeps } from './core.js';
import { DIMENSION, NAMESPACE, SERVICE } from './metrics.js';

/**
 * Observability for one function: Powertools Logger and Metrics (embedded metric format). Most
 * stream batches change nothing worth a metric, so Metrics' "no application metrics" warning
 * is dropped; its other warnings stay warnings. Every metric has the dimensions `service`,
 * `function` and `deployment` (DIMENSION): `deployment` is the leases table's name, read from the
 * environment the construct sets (CONCLAVE_LEASES_TABLE) unless given; without one (a test's
 * stand-in deps), the metrics have no `deployment`.
 */
export function observability(
  functionName: string,
  logLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT',
  deployment: string | undefined = process.env[ENV.leasesTable],
): Pick<FunctionDeps, 'logger' | 'metrics'> {
  const logger = new Logger({ serviceName: SERVICE, ...(logLevel ? { logLevel } : {}) });
  const metricsLogger = {
    trace: (...a: unknown[]) => logger.trace(String(a[0])),
    debug: (...a: unknown[]) => logger.debug(String(a[0])),
    info: (...a: unknown[]) => logger.info(String(a[0])),
    error: (...a: unknown[]) => logger.error(String(a[0])),
    warn: (...a: unknown[]) => (String(a[0]).startsWith('No application metrics') ? undefined : logger.warn(String(a[0]))),
  };
  return { logger, metrics: new Metrics({ namespace: NAMESPACE, serviceName: SERVICE, defaultDimensions: { [DIMENSION.function]: functionName, ...(deployment ? { [DIMENSION.deployment]: deployment } : {}) }, logger: metricsLogger }) };
}

/** A handler built on first use, so importing a handler module never needs its environment. */
export function lazy<H extends (...args: never[]) => unknown>(make: () => H): H {
  let built: H | undefined;
  return ((...args: Parameters<H>) => (built ??= make())(...args)) as H;
}
