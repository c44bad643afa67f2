import { unrecordedHolder } from '../lib/events/derive.js';
import { onLeaseChange, withWakes, type FunctionDeps } from '../lib/functions/core.js';
import { depsFromEnv, lazy } from '../lib/functions/env.js';
import { streamBatchHandler } from '../lib/functions/lambda.js';
import { leaseChange, type Change } from '../lib/functions/records.js';
import type { Lease } from '../lib/schemas/lease.js';

/**
 * A holder removed by hand (an operator's `update-item`, a third party's own write) is recorded as
 * the row's last holder, as every release records it, before the reconcile that may elect the next
 * leader: that leader's Leader Elected and Leader Changed name it (before: the holder before it, so
 * a change of leader went untold). Conditioned on the row as the record left it: the same revision
 * and term, and still vacant; a row moved on is left alone.
 */
async function recordRemovedHolder(deps: FunctionDeps, c: Change<Lease>): Promise<void> {
  const holder = c.held ? undefined : unrecordedHolder(c.old, c.new);
  if (holder === undefined) return;
  const { name, revision, fencingToken } = c.new!;
  await deps.coordinator.leases.updateIf({ name }, { set: { lastHolderIdentity: holder } }, { expression: '#rev = :rev AND #token = :token AND attribute_not_exists(#holder)', names: { '#token': 'fencingToken', '#holder': 'holderIdentity' }, values: { ':rev': revision, ':token': fencingToken } });
}

/** Leases' stream: holder changes become events; a release, a reported vacancy or a strategy change is reconciled at once. */
export const makeHandler = (deps: FunctionDeps) =>
  streamBatchHandler(deps, 'leaseStream', leaseChange, () => {
    // the batch's wakes go out as its records come, and are waited for once all are done: no election waits on IoT Core
    const run = withWakes(deps);
    return {
      record: async (c) => {
        await recordRemovedHolder(deps, c);
        await onLeaseChange(run.deps, c);
      },
      end: run.end,
    };
  });

export const handler = lazy(() => makeHandler(depsFromEnv('leaseStream')));
