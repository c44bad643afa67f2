import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import type { ConclaveEvent } from '../../lib/events/schemas.js';
import type { TestTables } from '../support.js';

/** The functions' deps on `t`, on a manual clock from `start` (an ack window of 5 s), the events they publish collected in `events`. */
export function publishingDeps(t: TestTables, start: number) {
  const clock = manualClock(start);
  const events: ConclaveEvent[] = [];
  const d: FunctionDeps = {
    coordinator: coordinatorDeps(t.client, t.names, { clock, config: { ackWindowMs: 5_000 } }),
    timer: { schedule: async () => undefined },
    publish: async (list) => void events.push(...list),
    deadLetter: async () => undefined,
    ...observability('test', 'SILENT'),
  };
  return { clock, d, events };
}

/** A publisher's clock whose backoff takes no time and whose bound (PUBLISH_WITHIN_MS) never comes: for a bus that answers. */
export const instantClock = { sleep: async (): Promise<void> => undefined, setTimer: () => ({ cancel: () => undefined }) };
