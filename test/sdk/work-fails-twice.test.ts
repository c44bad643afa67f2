/**
 * The best candidate (oldest emulation version) whose leader work fails soon after each start: after
 * its second failed start in a row it stands down until its candidacy's own renewal (README, "When the
 * work fails"), so a healthy worker leads meanwhile. A reviewer (2026-12-07, ninth) found it took the
 * lease a third time within seconds: the stand-again left from its first failure (its term taken back
 * since) renewed its candidate row at the first read of the healthy worker's term, the coordinator
 * preempted that term within a millisecond of its start, and the failing worker started again after
 * its backoff (~8 s with no working leader). On DynamoDB Local, the real coordinator in-process on a
 * tick, and a driven clock (test/proxy.ts drivenClock).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { every } from '../../lib/clock.js';
import { coordinatorDeps, reconcileLease } from '../../lib/coordinator/reconcile.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { LeaderElector } from '../../lib/sdk/index.js';
import { drivenClock, inFlight } from '../proxy.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('fails-twice')));
afterAll(async () => t.drop());

const L = 'fails-twice';
const CLIENT_GO = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;
/** The failing worker's candidacy renews every minute (10 by default): the test waits for one. */
const RENEW_INTERVAL_MS = 60_000;
/** a's work rejects this long after each start (the reviewer's worker). */
const FAILS_AFTER_MS = 3_000;

describe('a best candidate whose work fails at every start, and a healthy newer worker', () => {
  it('after its second failed start in a row, the healthy worker leads, and is not preempted for it, until its candidacy renews its row on its own; then it stands again', async () => {
    const [aClient, bClient, coordinatorClient] = [0, 1, 2].map(() => localClient(inject('ddbEndpoint')));
    const busy = [aClient, bClient, coordinatorClient].map((x) => inFlight(x!));
    const c = drivenClock(() => busy.some((x) => x()));
    const now = () => c.clock.monotonic();
    // the coordinator's tick every 2 s on the driven clock (the reviewer's local mode: stands in for the streams and the timer)
    const deps = coordinatorDeps(coordinatorClient!, t.names, { clock: c.clock, config: { ackWindowMs: 5_000, electedLeaseDurationSeconds: 5 } });
    let ticking = false;
    const tick = every(c.clock, 2_000, () => {
      if (ticking) return;
      ticking = true;
      void reconcileLease(deps, L).finally(() => (ticking = false));
    });
    const log: { at: number; who: string; what: 'started' | 'stopped'; reason?: string }[] = [];
    // a's candidate writes: its registration, then each renewal on its timer (every RENEW_INTERVAL_MS from it), and any it is asked for
    const candidateWrites: number[] = [];
    aClient!.middlewareStack.add(
      (next, context) => async (args) => {
        const table = (args.input as { TableName?: string }).TableName;
        if (table === t.names.candidates && ['PutItemCommand', 'UpdateItemCommand'].includes(context.commandName ?? '')) candidateWrites.push(now());
        return next(args);
      },
      { step: 'initialize', name: 'candidateWrites' },
    );
    const start = (id: 'a' | 'b', version: string, client: DynamoDBClient) => {
      const e = new LeaderElector({
        client,
        tables: t.names,
        clock: c.clock,
        clockSync: 'none',
        leaseName: L,
        identity: id,
        platform: 'none',
        ...CLIENT_GO,
        candidacy: { emulationVersion: version, binaryVersion: version, renewIntervalMs: RENEW_INTERVAL_MS },
        onError: () => undefined,
        callbacks: {
          onStartedLeading: async () => {
            log.push({ at: now(), who: id, what: 'started' });
            if (id !== 'a') return;
            await c.clock.sleep(FAILS_AFTER_MS);
            throw new Error('boom later');
          },
          onStoppedLeading: ({ reason }) => void log.push({ at: now(), who: id, what: 'stopped', reason }),
        },
      });
      const stop = new AbortController();
      let ended = false;
      void e.run(stop.signal).finally(() => (ended = true));
      return { e, stop: () => (stop.abort(), () => ended) };
    };
    const of = (who: string, what: 'started' | 'stopped', from = -Infinity) => log.filter((x) => x.who === who && x.what === what && x.at >= from);

    // a alone: its first failure, then the coordinator elects it back and it leads again after its backoff
    const a = start('a', '1.29.0', aClient!);
    await c.drive(() => of('a', 'started').length >= 2);
    const registeredAt = candidateWrites[0]!;
    // the healthy newer worker joins; a's work fails a second time in a row
    const b = start('b', '1.30.0', bClient!);
    await c.drive(() => of('a', 'stopped').length >= 2);
    const secondFailure = of('a', 'stopped')[1]!;
    expect(secondFailure.reason).toBe('workFailed');
    // a's candidacy renews its row on its own next at registeredAt + k · RENEW_INTERVAL_MS
    const renewalDue = registeredAt + Math.ceil((secondFailure.at - registeredAt) / RENEW_INTERVAL_MS) * RENEW_INTERVAL_MS;
    expect(renewalDue - secondFailure.at).toBeGreaterThan(20_000); // room to see a loop (before the fix: a third start ~5 s on)
    await c.drive(() => now() >= renewalDue);
    const before = (xs: { at: number }[]) => xs.filter((x) => x.at < renewalDue);
    // until then b led from a's second failure on: started once, never stopped; a neither started again nor renewed its row
    expect(before(of('b', 'started', secondFailure.at)).length).toBe(1); // before the fix: b started, was preempted within 1 ms, and started again after a's third failure
    expect(before(of('b', 'stopped', secondFailure.at))).toEqual([]);
    expect(before(of('a', 'started', secondFailure.at))).toEqual([]);
    expect(candidateWrites.filter((x) => x > secondFailure.at && x < renewalDue)).toEqual([]);

    // its candidacy's renewal stands it again: the coordinator preempts for it, and it leads (and fails) once more
    await c.drive(() => of('a', 'started', renewalDue).length >= 1 || now() >= renewalDue + 30_000);
    expect(candidateWrites.filter((x) => x > secondFailure.at)[0]).toBe(renewalDue);
    expect(of('a', 'started', renewalDue)[0]!.at - renewalDue).toBeLessThan(15_000);
    expect(of('a', 'started', renewalDue).length).toBe(1);
    expect(of('b', 'stopped', secondFailure.at).map((x) => x.reason)).toEqual(['preempted']);

    tick.cancel();
    const ended = [a.stop(), b.stop()];
    await c.drive(() => ended.every((x) => x()));
    for (const x of [aClient, bClient, coordinatorClient]) x!.destroy();
  });
});
