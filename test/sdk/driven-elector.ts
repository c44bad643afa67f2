/**
 * NoCoordination electors on DynamoDB Local and a driven clock (test/proxy.ts drivenClock), at
 * client-go's timings, each term and fault noted: the real AWS SDK between them and DynamoDB, time
 * moved by the test. Shared by the tests of faults the real SDK brings (foreign-answers.test.ts,
 * credentials.test.ts).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { expect } from 'vitest';
import { maxFailingRequestsPerSecond } from '../../lib/sdk/faults.js';
import { LeaderElector } from '../../lib/sdk/index.js';
import type { TableNames } from '../../lib/schemas/config.js';
import type { drivenClock } from '../proxy.js';

export const CLIENT_GO = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;
/** The most tries of one kind in `ms` while each fails: one per retry period, and one more. */
export const bound = (ms: number) => Math.floor((ms / 1000) * maxFailingRequestsPerSecond(CLIENT_GO.retryPeriodMs)) + 1;

type Driven = ReturnType<typeof drivenClock>;
/** Who led when, on the driven clock's monotonic time. */
export type Terms = { who: string; from: number; to?: number }[];

/** A NoCoordination elector `id` of lease `lease` on `client` and `tables`, each term noted in `terms`, each fault in `errors`; `stop()` cancels it and waits for run() to resolve. */
export function drivenElector(tables: TableNames, id: string, lease: string, client: DynamoDBClient, c: Driven, terms: Terms, errors: Error[]) {
  const e = new LeaderElector({
    client,
    tables,
    clock: c.clock,
    clockSync: 'none', // stamped with the test's clock, not DynamoDB's (its Date headers are the machine's)
    leaseName: lease,
    identity: id,
    mode: 'NoCoordination',
    ...CLIENT_GO,
    onError: (x) => void errors.push(x),
    callbacks: {
      onStartedLeading: () => void terms.push({ who: id, from: c.clock.monotonic() }),
      onStoppedLeading: () => void (terms.findLast((x) => x.who === id)!.to = c.clock.monotonic()),
    },
  });
  const cancel = new AbortController();
  let settled: string | undefined;
  const running = e.run(cancel.signal).then(() => void (settled = 'resolved'), (x: unknown) => void (settled = `rejected: ${String(x)}`));
  return {
    e,
    settled: () => settled,
    stop: async () => {
      cancel.abort();
      await c.drive(() => settled !== undefined);
      await running;
    },
  };
}

/** `a` led once and its term ended by its renew deadline after `from` (its fault began), and `b`'s one term began after it: never two leaders at once. */
export function handedOver(terms: Terms, from: number, a = 'a', b = 'b'): void {
  const [ofA, ofB] = [terms.filter((x) => x.who === a), terms.filter((x) => x.who === b)];
  expect(ofA).toHaveLength(1);
  expect(ofA[0]!.to! - from).toBeLessThanOrEqual(CLIENT_GO.renewDeadlineMs);
  expect(ofB).toHaveLength(1);
  expect(ofB[0]!.from).toBeGreaterThanOrEqual(ofA[0]!.to!);
}
