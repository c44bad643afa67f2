import type { LocalEcsTask } from './ecs-task.js';
import type { LocalRuntime } from './runtime.js';
import { WorkerProcess, type WorkerSpec } from './worker-process.js';

/**
 * A worker process running as a local "ECS task": the SDK finds its task through the metadata
 * endpoint the runtime serves, and its exit becomes ECS's STOPPED event for the platform function
 * (unless `platformSignal` is false: then its lease has to run out, as without the signal). Its
 * task reports `zone` as its Availability Zone (default `local-1a`): the worker's location. It
 * connects to the runtime's push broker, as a task given the stack output PushEndpoint would,
 * unless `push` is false or the runtime has none.
 */
export async function startEcsWorker(rt: LocalRuntime, spec: WorkerSpec, opts: { platformSignal?: boolean; signalDelayMs?: number; zone?: string; push?: boolean } = {}): Promise<WorkerProcess & { task: LocalEcsTask }> {
  const task = await rt.ecsTask({ signal: opts.platformSignal ?? true, ...(opts.signalDelayMs !== undefined ? { delayMs: opts.signalDelayMs } : {}), ...(opts.zone !== undefined ? { zone: opts.zone } : {}) });
  const pushUrl = opts.push === false ? undefined : rt.pushEndpoint;
  const worker = new WorkerProcess(spec, { endpoint: rt.endpoint, tablePrefix: rt.tables.leases.replace(/-leases$/, ''), pushUrl, extra: task.env });
  task.attach(worker.child);
  return Object.assign(worker, { task });
}
