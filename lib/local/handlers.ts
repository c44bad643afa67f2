/**
 * The handler modules local mode runs, by function name: the same files Lambda runs (the wiring's
 * `entry`, which the construct bundles), imported by literal paths so that the import graph
 * (scripts/import-graph.ts, and so the @conclave/testing package) shows which files local mode
 * needs. `satisfies` keeps the names those of the wiring; test/local/handlers.test.ts checks each
 * path against its `entry`.
 */
import type { Context } from 'aws-lambda';
import type { FunctionDeps } from '../functions/core.js';
import type { FunctionName } from '../wiring.js';

/** A handler module: its handler built with the dependencies given (local ones here). */
export interface HandlerModule {
  // `never`: each handler takes its own trigger's event type
  makeHandler(deps: FunctionDeps): (event: never, context: Context) => Promise<unknown>;
}

export const handlerModules = {
  coordinator: () => import('../../functions/coordinator.js'),
  candidateStream: () => import('../../functions/candidate-stream.js'),
  leaseStream: () => import('../../functions/lease-stream.js'),
  electionTimer: () => import('../../functions/election-timer.js'),
  platform: () => import('../../functions/platform.js'),
} as const satisfies Record<FunctionName, () => Promise<HandlerModule>>;

/** The handler of function `name`, taking whatever its trigger delivers (the runtime passes exactly that). */
export async function loadHandler(name: FunctionName, deps: FunctionDeps): Promise<(event: unknown, context: Context) => Promise<unknown>> {
  const mod: HandlerModule = await handlerModules[name]();
  return mod.makeHandler(deps) as (event: unknown, context: Context) => Promise<unknown>;
}
