/**
 * A follower whose candidate row is gone while the lease row was made anew (local mode started
 * again: its tables dropped and made again under running workers; a table restored on AWS) stands
 * again at once, not at its candidacy's next renewal, up to 10 minutes on. A reviewer found the
 * follower that did not see the lease row missing (its reads fell elsewhere: the push path reads a
 * quiet lease every 30–60 s) not a candidate for minutes: `Successor: -`, unelectable, until its own
 * vacancy report. It now renews at the first read that shows the lease row made anew (its revision
 * below the one read before, its term later) or no longer naming it successor: that renewal
 * registers the row again. In steady state it sends nothing more. On DynamoDB Local, the real
 * coordinator in-process, and a driven clock (test/proxy.ts drivenClock).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { every } from '../../lib/clock.js';
import { coordinatorDeps, reconcileLease } from '../../lib/coordinator/reconcile.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { createTables, deleteTables } from '../../lib/local/tables.js';
import { LeaderElector } from '../../lib/sdk/index.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { drivenClock, inFlight } from '../proxy.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('cand-anew')));
afterAll(async () => t.drop());

const L = 'anew';
const CLIENT_GO = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;
/** The candidacy's default renew interval: what the row came back at before. */
const RENEW_INTERVAL_MS = 10 * 60_000;
/** How long b reads nothing after the tables are made anew (its reads fail): on the push path a quiet follower reads every 30–60 s. */
const AWAY_MS = 30_000;
/** How often the test looks at the rows (driven clock). */
const LOOK_MS = 1_000;
/**
 * b's row is back at its first read of the lease once its reads work again: the renewal goes out
 * with that read's answer (requests take no time on the driven clock), seen at the test's next look.
 * That read comes at most a failed read's longest backoff (four retry periods, a tenth more) after
 * its reads work again. Far below the 10 minutes of before (a renewIntervalMs).
 */
const FAILED_READ_BACKOFF_MS = 4 * CLIENT_GO.retryPeriodMs * 1.1;

/** The requests `client` sends: when (driven clock), which operation, on which table. */
function counted(client: DynamoDBClient, now: () => number, failing: () => boolean) {
  const sent: { at: number; op: string; table: string }[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      sent.push({ at: now(), op: context.commandName ?? '', table: (args.input as { TableName?: string }).TableName ?? '' });
      if (failing()) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8000'), { code: 'ECONNREFUSED' });
      return next(args);
    },
    { step: 'initialize', name: 'counted' },
  );
  return sent;
}

describe('the tables made anew under two running workers', () => {
  it('the follower that finds the lease row already made again registers its candidacy at that read; in steady state it sends no request to the candidates table', async () => {
    // the test's own looks go through a client of their own, counted busy too: the driven clock
    // waits for their answers, so what a look saw is what was there at its time (a busy machine
    // answering a look late once let the clock run on past it: CI saw b's row 1.35 s late)
    const [aClient, bClient, coordinatorClient, lookClient] = [0, 1, 2, 3].map(() => localClient(inject('ddbEndpoint')));
    const busy = [aClient, bClient, coordinatorClient, lookClient].map((x) => inFlight(x!));
    const c = drivenClock(() => busy.some((x) => x()));
    let bAway = false;
    const aSent = counted(aClient!, () => c.clock.monotonic(), () => false);
    const bSent = counted(bClient!, () => c.clock.monotonic(), () => bAway);
    // the coordinator, its tick every second on the driven clock (stands in for the streams and the timer)
    const deps = coordinatorDeps(coordinatorClient!, t.names, { clock: c.clock, config: { ackWindowMs: 500, electedLeaseDurationSeconds: 15 } });
    let ticking = false;
    const tick = every(c.clock, 1_000, () => {
      if (ticking) return;
      ticking = true;
      void reconcileLease(deps, L)
        .catch(() => undefined) // the tables gone for a moment
        .finally(() => (ticking = false));
    });
    const start = (id: string, version: string, client: DynamoDBClient) => {
      const e = new LeaderElector({ client, tables: t.names, clock: c.clock, clockSync: 'none', leaseName: L, identity: id, platform: 'none', ...CLIENT_GO, candidacy: { emulationVersion: version, binaryVersion: version }, onError: () => undefined, callbacks: { onStartedLeading: () => undefined } });
      const stop = new AbortController();
      let ended = false;
      void e.run(stop.signal).finally(() => (ended = true));
      return { e, stop: () => (stop.abort(), () => ended) };
    };
    const a = start('a', '1.30.0', aClient!);
    const b = start('b', '1.31.0', bClient!);
    const leases = new LeaseStore(lookClient!, t.names.leases);
    const candidates = new CandidateStore(lookClient!, t.names.candidates);
    // what the test looks at, read on the driven clock every second (its own client: not counted in aSent/bSent)
    let lease: Lease | undefined;
    let names: string[] = [];
    const look = every(c.clock, LOOK_MS, () => {
      void leases.read(L).then((r) => (lease = r.item), () => undefined);
      void candidates.list(L).then((r) => (names = r.candidates.map((x) => x.name).sort()), () => undefined);
    });
    await c.drive(() => a.e.isLeader() && lease?.holderIdentity === 'a' && lease.successor === 'b' && names.join() === 'a,b');

    // steady state: a minute with no request of either worker to the candidates table (below their 10-minute renewal)
    const quietFrom = c.clock.monotonic();
    await c.drive(() => c.clock.monotonic() >= quietFrom + 60_000);
    const onCandidates = (sent: typeof aSent, from: number) => sent.filter((s) => s.at >= from && s.table === t.names.candidates);
    expect(onCandidates(aSent, quietFrom)).toEqual([]);
    expect(onCandidates(bSent, quietFrom)).toEqual([]);
    const bLeaseReads = bSent.filter((s) => s.at >= quietFrom && s.table === t.names.leases).length;
    expect(bLeaseReads).toBeGreaterThan(0);

    // local mode started again on --port: its tables dropped and made again, every row gone. b reads
    // nothing for AWAY_MS; a stands again meanwhile and the coordinator elects it, naming no successor
    bAway = true;
    await deleteTables(t.client, t.names);
    await createTables(t.client, t.names, { ttl: false });
    const anew = c.clock.monotonic();
    await c.drive(() => c.clock.monotonic() >= anew + AWAY_MS);
    expect(lease).toMatchObject({ holderIdentity: 'a' });
    expect(lease?.successor).toBeUndefined();
    expect(names).toEqual(['a']);
    bAway = false;
    const back = c.clock.monotonic();
    // before: b's row came back only at its candidacy's renewal, up to RENEW_INTERVAL_MS on
    const bRead = () => bSent.find((s) => s.at >= back && s.table === t.names.leases)?.at;
    await c.drive(() => bRead() !== undefined);
    expect(bRead()! - back).toBeLessThanOrEqual(FAILED_READ_BACKOFF_MS);
    await c.drive(() => names.includes('b') || c.clock.monotonic() >= back + RENEW_INTERVAL_MS);
    expect(names).toEqual(['a', 'b']);
    expect(c.clock.monotonic() - bRead()!).toBeLessThanOrEqual(LOOK_MS);
    // the registration itself went out with that read's answer, at its time on the driven clock
    const bRegistered = bSent.find((s) => s.at >= back && s.table === t.names.candidates)?.at;
    expect(bRegistered! - bRead()!).toBe(0);
    // …and it is named the successor again
    await c.drive(() => lease?.successor === 'b' || c.clock.monotonic() >= back + 60_000);
    expect(lease).toMatchObject({ holderIdentity: 'a', successor: 'b' });

    // steady again: nothing more to the candidates table
    const again = c.clock.monotonic() + 1;
    await c.drive(() => c.clock.monotonic() >= again + 60_000);
    expect(onCandidates(aSent, again)).toEqual([]);
    expect(onCandidates(bSent, again)).toEqual([]);

    tick.cancel();
    look.cancel();
    const ended = [a.stop(), b.stop()];
    await c.drive(() => ended.every((x) => x()));
    for (const x of [aClient, bClient, coordinatorClient, lookClient]) x!.destroy();
  });
});
