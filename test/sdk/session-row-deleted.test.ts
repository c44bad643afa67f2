/**
 * A live session row deleted under its leader's term (an operator's delete-item, or a peer of the
 * same grant), on DynamoDB Local: real Sessions and LeaderElectors, the coordinator driven
 * in-process. Real time, so outcomes only (one leader throughout, the session's end told, a new
 * session, a leader back); how fast, at every point of the renewal cycle, is asserted on simulated
 * time in test/sdk/session.test.ts ("a live session row deleted under its leader's term").
 */
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../lib/clock.js';
import { coordinatorDeps, reconcileAll } from '../../lib/coordinator/reconcile.js';
import { sessionKey } from '../../lib/schemas/identity.js';
import { Session } from '../../lib/sdk/session.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { testTables, type TestTables } from '../support.js';
import { Log, STEADY, coordinatorLoop, startElector, waitFor, type RunningElector } from './harness.js';

/** Session timings that fit STEADY's electors (renew deadline 6 s > 5 s + 0.3 s). */
const SESSION = { renewIntervalMs: 2_000, retryPeriodMs: 300, renewDeadlineMs: 5_000, maxLeaseDurationMs: 8_000 } as const;
const LEASE = 'session-deleted';

let t: TestTables;
beforeAll(async () => {
  t = await testTables('session-deleted');
});
afterAll(() => t?.drop());

interface Proc {
  id: string;
  session: Session;
  elector: RunningElector;
  errors: Error[];
  stop: AbortController;
  running: Promise<void>;
}

describe("a live session row deleted under its leader's term, on DynamoDB Local", () => {
  it("its term older than a lease duration (the lease's own stamp over: the tick judges it by that stamp once the row is gone): the holder stops before any other leads; its session ends at its next renewal saying its row was deleted, a new one starts, and a leader is back", async () => {
    // the tick, driven in-process: a pass over every lease after each reconcile of this one (one
    // lease's reconcile leaves a term whose named row is gone to its followers' fallback)
    const deps = coordinatorDeps(t.client, t.names, { config: { ackWindowMs: 2_000, electedLeaseDurationSeconds: 8 } });
    const coord = coordinatorLoop(deps, LEASE, 100, async () => void (await reconcileAll(deps)));
    const log = new Log(); // entries in their order: who led when is the log's order, not a clock's
    const procs: Proc[] = [];
    try {
      for (const id of ['a', 'b']) {
        const errors: Error[] = [];
        const session = new Session({ client: t.client, tables: t.names, prefix: id, ...SESSION, onError: (e) => errors.push(e) });
        const stop = new AbortController();
        const running = session.run(stop.signal);
        await session.ready;
        const elector = startElector(t, log, id, { leaseName: LEASE, session, ...STEADY }, { errors });
        procs.push({ id, session, elector, errors, stop, running });
      }
      const leases = new LeaseStore(t.client, t.names.leases);
      const onSession = async () => {
        const l = (await leases.read(LEASE)).item;
        const p = procs.find((x) => x.session.name !== undefined && x.session.name === l?.session);
        return p?.elector.elector.isLeader() ? p : undefined;
      };
      const holder = await waitFor('a leader holding the lease on its session', onSession);
      // a holder on its session never moves the lease's own stamp: once over, only the session row vouches for the term
      await waitFor("the lease's own stamp over", async () => (await leases.read(LEASE)).item!.renewTime! + STEADY.leaseDurationMs + 2_000 < systemClock.now() && (await onSession()) === holder);
      await t.client.send(new DeleteItemCommand({ TableName: t.names.identities, Key: marshall(sessionKey(holder.session.name!)) }));

      await waitFor("the holder's session ended", () => holder.session.stats.ended >= 1);
      await waitFor('a leader on a session again', onSession);
      // one leader throughout: the holder's stop came before any other's start
      expect(log.maxConcurrentLeaders()).toBe(1);
      // (every message shown if not: a fresh-clone CI run on a busy machine once missed it)
      expect(holder.errors.map((e) => e.message)).toContainEqual(expect.stringMatching(/^Session .+ ended: its row is not as this process last saw it \(changed or deleted by someone else, or collected\); its electors renew their leases themselves until a new session starts/));
      expect(holder.session.stats).toMatchObject({ foreignWrites: 1, ended: 1, started: 2 });
      const key = sessionKey(holder.session.name!);
      expect((await new IdentityStore(t.client, t.names.identities).read(key.component, key.name)).item).toMatchObject({ process: holder.session.process });
    } finally {
      for (const p of procs) await p.elector.stop();
      for (const p of procs) p.stop.abort();
      await Promise.all(procs.map((p) => p.running));
      await coord.stop();
    }
  });
});
