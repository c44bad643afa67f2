/**
 * The baseline lock Conclave is benchmarked against must itself be a correct client-go-style lock,
 * or the comparison means nothing: one holder at a time, a release passes the lock on, and a
 * leader that cannot renew stops before anyone else takes the lock. (How fast is for bench/.)
 */
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BaselineElector } from '../../bench/baseline/lock.js';
import { createBaselineTable } from '../../bench/baseline/table.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { Log, waitFor } from '../sdk/harness.js';

// Steady timings: a term outlives a busy machine's stall, so a leader's term ends only where the test ends it (its stop, its partition)
const TIMING = { leaseDurationMs: 8_000, renewDeadlineMs: 6_000, retryPeriodMs: 500 } as const;
const table = `t-baseline-${randomUUID().slice(0, 8)}`;
const clients: DynamoDBClient[] = [];

beforeAll(async () => {
  const c = localClient(inject('ddbEndpoint'));
  clients.push(c);
  await createBaselineTable(c, table);
});
afterAll(() => clients.forEach((c) => c.destroy()));

/** A contender with its own client; `partition()` makes every request it sends fail. */
function contender(log: Log, name: string, identity: string) {
  const client = localClient(inject('ddbEndpoint'));
  clients.push(client);
  let partitioned = false;
  client.middlewareStack.add(
    (next) => async (args) => {
      if (partitioned) throw Object.assign(new Error('network partition (test)'), { name: 'NetworkingError' });
      return next(args);
    },
    { step: 'initialize', name: 'partition' },
  );
  const elector = new BaselineElector(
    { table, name, identity, ...TIMING },
    {
      client,
      callbacks: {
        onStartedLeading: (_s, { leaseTransitions }) => log.add({ who: identity, what: 'started', token: leaseTransitions }),
        onStoppedLeading: ({ reason, leaseTransitions }) => log.add({ who: identity, what: 'stopped', reason, token: leaseTransitions }),
      },
      onError: () => undefined, // the partition's failures are the point of the test
    },
  );
  const controller = new AbortController();
  const done = elector.run(controller.signal);
  return {
    identity,
    elector,
    partition: () => (partitioned = true),
    stop: async () => {
      controller.abort();
      await done;
    },
  };
}

describe('baseline client-go-style lock on DynamoDB Local', () => {
  it('one holder at a time: a released lock passes on, a partitioned leader stops before another takes over', async () => {
    const log = new Log();
    const lock = `lock-${randomUUID().slice(0, 8)}`;
    const all = ['a', 'b', 'c'].map((id) => contender(log, lock, id));
    try {
      const first = await waitFor('a first leader', () => all.find((x) => x.elector.isLeader()));

      // Release on cancel: the record is left without a holder, and a follower takes it.
      await first.stop();
      expect(log.of('stopped', first.identity)).toEqual([expect.objectContaining({ reason: 'cancelled', token: 0 })]); // it led its first term until the stop
      const second = await waitFor('a second leader', () => all.find((x) => x !== first && x.elector.isLeader()));

      // A leader that cannot reach DynamoDB: it stops at its renew deadline, the last one waits out
      // the term it observed, and only then leads.
      second.partition();
      const third = await waitFor('a third leader', () => all.find((x) => x !== first && x !== second && log.of('started', x.identity).length > 0));
      const stopped = log.of('stopped', second.identity)[0]!;
      expect(stopped.reason).toBe('renewDeadline');
      expect(stopped.at).toBeLessThan(log.of('started', third.identity)[0]!.at);
      expect(log.maxConcurrentLeaders()).toBe(1);
      expect(log.of('started').map((s) => s.token)).toEqual([0, 1, 2]); // leaseTransitions +1 per new holder
    } finally {
      await Promise.all(all.map((x) => x.stop()));
    }
  });
});
