import { DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coordinatorDeps, type CoordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../lib/local/dynamodb-local.js';
import { manualClock } from '../../lib/clock.js';
import { LeaderElector } from '../../lib/sdk/elector.js';
import { FencingError, fencedTransactWrite } from '../../lib/sdk/fencing.js';
import { nextFencingToken } from '../../lib/schemas/fencing-token.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { inject } from 'vitest';
import type { LeaderElectorOptions } from '../../lib/sdk/elector.js';
import { FAST, Log, coordinatorLoop, startElector, waitFor, type RunningElector } from './harness.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
let deps: CoordinatorDeps;
let n = 0;
const lease = () => `job-${++n}`;
const ACK_MS = 500;

beforeAll(async () => {
  t = await testTables('elector');
  // short elections: the test drives the coordinator in-process every 100 ms
  deps = coordinatorDeps(t.client, t.names, { config: { ackWindowMs: ACK_MS, electedLeaseDurationSeconds: 2 } });
});
afterAll(() => t.drop());

const leaders = (es: RunningElector[]) => es.filter((e) => e.elector.isLeader());
const stopAll = (es: RunningElector[]) => Promise.all(es.map((e) => e.stop()));

describe('LeaderElector options', () => {
  const base = () => ({ leaseName: 'x', identity: 'w', client: t.client, callbacks: { onStartedLeading: () => undefined }, candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' } });

  it.each([
    { opts: { renewDeadlineMs: 2_000 }, field: 'renewDeadlineMs' },
    { opts: { retryPeriodMs: 1_500 }, field: 'retryPeriodMs' },
    { opts: { leaseDurationMs: 500, renewDeadlineMs: 400, retryPeriodMs: 100 }, field: 'leaseDurationMs' },
    { opts: { identity: '' }, field: 'identity' },
    { opts: { mode: 'Racing' }, field: 'mode' },
  ])('rejects $field', ({ opts, field }) => {
    const make = () => new LeaderElector({ ...base(), ...FAST, ...(opts as object) });
    expect(make).toThrow(ValidationError);
    try {
      make();
    } catch (e) {
      expect((e as ValidationError).fields).toEqual([field]);
    }
  });

  it('has client-go’s defaults', () => {
    const e = new LeaderElector(base());
    expect(e.options).toMatchObject({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, releaseOnCancel: true, mode: 'coordinated' });
  });

  it('rejects bad candidacy at construction, naming the field', () => {
    const make = () => new LeaderElector({ ...base(), candidacy: { emulationVersion: '1.31.0', binaryVersion: '1.30.0' } });
    expect(make).toThrow(/candidacy\.emulationVersion: must be ≤ binaryVersion 1\.30\.0/);
  });
});

describe('coordinated election', () => {
  it('three electors elect exactly one leader, and every one of them hears of it', async () => {
    const L = lease();
    const log = new Log();
    const coord = coordinatorLoop(deps, L);
    const es = ['a', 'b', 'c'].map((id, i) => startElector(t, log, id, { leaseName: L }, { versions: [`1.3${i}.0`, '1.32.0'] }));
    try {
      await waitFor('a leader', () => leaders(es).length === 1);
      // keep watching for a few renewals: never two
      for (let i = 0; i < 20; i++) {
        expect(leaders(es).length).toBeLessThanOrEqual(1);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(leaders(es).map((e) => e.elector.options.identity)).toEqual(['a']);
      await waitFor('all to hear', () => ['a', 'b', 'c'].every((who) => log.of('newLeader', who).some((e) => e.leader === 'a')));
      expect(log.maxConcurrentLeaders()).toBe(1);
      expect(coord.errors).toEqual([]);
    } finally {
      await stopAll(es);
      await coord.stop();
    }
  });

  it('a leader gone without releasing is replaced after its term; with release, at once', async () => {
    const L = lease();
    const log = new Log();
    const coord = coordinatorLoop(deps, L);
    // the first leader does not release; the ones after it do (options are fixed at construction)
    const es = [startElector(t, log, 'a', { leaseName: L, releaseOnCancel: false })];
    try {
      const first = await waitFor('a leader', () => leaders(es)[0]);
      es.push(...['b', 'c'].map((id) => startElector(t, log, id, { leaseName: L, releaseOnCancel: true })));
      await Promise.all(es.map((e) => e.elector.ready)); // b and c stand
      expect(leaders(es)).toEqual([first]); // same versions: the oldest candidate keeps the lease
      const t0 = performance.now();
      await first.stop(); // no release: the others must wait out the term
      const lastTerm = (await deps.leases.read(L)).item!;
      expect(lastTerm.holderIdentity).toBe(first.elector.options.identity);
      const second = await waitFor('a second leader', () => leaders(es)[0], 20_000);
      const crashFailover = performance.now() - t0;
      // not before the old term, counted from its last renewal, had run out (same machine, one clock) …
      const next = (await deps.leases.read(L)).item!;
      expect(next.holderIdentity).toBe(second.elector.options.identity);
      expect(next.acquireTime!).toBeGreaterThanOrEqual(lastTerm.renewTime! + lastTerm.leaseDurationSeconds * 1000);
      // … and with no waiting beyond it: term + one poll + an election, with ample slack for a loaded machine
      expect(crashFailover).toBeLessThan(FAST.leaseDurationMs + FAST.retryPeriodMs + ACK_MS + 10_000);

      // now a graceful hand-off: release on cancel
      const t1 = performance.now();
      await second.stop();
      await waitFor('a third leader', () => leaders(es)[0]);
      const handoff = performance.now() - t1;
      expect(handoff).toBeLessThan(FAST.leaseDurationMs); // did not wait for expiry
      expect(log.maxConcurrentLeaders()).toBe(1);
      const tokens = log.of('started').map((e) => e.token!);
      expect(tokens).toEqual([...tokens].sort((x, y) => x - y));
      expect(new Set(tokens).size).toBe(tokens.length);
    } finally {
      await stopAll(es);
      await coord.stop();
    }
  });

  it.each([
    { name: 'an older emulation version', joiner: { versions: ['1.29.0', '1.31.0'] as [string, string] } },
    { name: 'a higher priority', joiner: { versions: ['1.31.0', '1.31.0'] as [string, string], priority: 10 } },
  ])('a better candidate ($name) joins: the holder stops, releases, and the better one leads (not the old successor)', async ({ joiner }) => {
    const L = lease();
    const log = new Log();
    const coord = coordinatorLoop(deps, L);
    const a = startElector(t, log, 'a', { leaseName: L }, { versions: ['1.30.0', '1.31.0'] });
    await a.elector.ready; // a stands first: the coordinator's first election cannot pick c alone
    const c = startElector(t, log, 'c', { leaseName: L }, { versions: ['1.30.0', '1.32.0'] });
    let b: RunningElector | undefined;
    try {
      await waitFor('a to lead with c as its successor', async () => a.elector.isLeader() && (await deps.leases.read(L)).item?.successor === 'c');
      b = startElector(t, log, 'b', { leaseName: L }, joiner);
      await waitFor('b to lead', () => b!.elector.isLeader());
      expect(a.elector.isLeader()).toBe(false);
      expect(log.of('started').map((e) => e.who)).toEqual(['a', 'b']); // no detour through c
      const stoppedA = log.entries.findIndex((e) => e.who === 'a' && e.what === 'stopped');
      const startedB = log.entries.findIndex((e) => e.who === 'b' && e.what === 'started');
      expect(stoppedA).toBeGreaterThanOrEqual(0);
      expect(log.entries[stoppedA]!.reason).toBe('preempted');
      expect(stoppedA).toBeLessThan(startedB);
      expect(a.signals[0]!.aborted).toBe(true);
    } finally {
      await a.stop();
      await c.stop();
      await b?.stop();
      await coord.stop();
    }
  });
});

describe('safety of a leader that cannot renew', () => {
  it('renewal failures (injected through SDK middleware) abort the leader’s signal before its term can expire', async () => {
    const L = lease();
    const log = new Log();
    const coord = coordinatorLoop(deps, L);
    const faulty = new DynamoDBClient({ endpoint: inject('ddbEndpoint'), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, maxAttempts: 1 });
    let failRenewals = false;
    faulty.middlewareStack.add(
      (next, context) => async (args) => {
        if (failRenewals && context.commandName === 'UpdateItemCommand') throw Object.assign(new Error('injected: service unavailable'), { name: 'ServiceUnavailable' });
        return next(args);
      },
      { step: 'initialize', name: 'injectRenewFaults' },
    );
    const a = startElector(t, log, 'a', { leaseName: L }, { client: faulty });
    try {
      await waitFor('a to lead', () => a.elector.isLeader());
      await new Promise((r) => setTimeout(r, 600));
      failRenewals = true;
      const signal = a.signals[0]!;
      const abortedAt = await waitFor('the signal to abort', () => signal.aborted && Date.now(), 10_000);
      const held = (await deps.leases.read(L)).item!;
      const expiresAt = held.renewTime! + held.leaseDurationSeconds * 1000;
      expect(held.holderIdentity).toBe('a');
      expect(signal.reason).toBe('renewDeadline');
      expect(abortedAt).toBeLessThan(expiresAt); // stopped acting while the term still stood
      expect(a.elector.healthy()).toBe(true); // it stepped down, so it is not stuck
    } finally {
      await a.stop();
      await coord.stop();
      faulty.destroy();
    }
  });
});

describe('health (client-go healthz adaptor)', () => {
  it('a leader whose term ran out without it stepping down is unhealthy; a follower is healthy', async () => {
    const L = lease();
    const clock = manualClock(Date.now());
    const e = new LeaderElector({ leaseName: L, identity: 'h', tables: t.names, mode: 'NoCoordination', ...FAST, healthToleranceMs: 500, client: t.client, clock, clockSync: 'none', callbacks: { onStartedLeading: () => undefined } });
    expect(e.healthy()).toBe(true);
    const stop = new AbortController();
    const done = e.run(stop.signal);
    try {
      await waitFor('h to lead', () => e.isLeader());
      expect(e.fencingToken).toBe(nextFencingToken(undefined, clock.now())); // a new lease: the clock's floor
      expect(e.leader).toBe('h');
      expect(e.healthy()).toBe(true);
      clock.advance(FAST.leaseDurationMs + 500); // the term and the tolerance, no more: still healthy
      expect(e.healthy()).toBe(true);
      clock.advance(1);
      expect(e.healthy()).toBe(false);
      expect(e.healthy(10_000)).toBe(true); // a caller's own tolerance
    } finally {
      stop.abort();
      await done;
    }
  });
});

describe('fencing', () => {
  it('a deposed (or paused) leader’s fenced write fails and leaves the target unchanged', async () => {
    const L = lease();
    const log = new Log();
    const coord = coordinatorLoop(deps, L);
    const target = `${t.names.leases}`; // any table works; the leases table is at hand
    const key = { name: `${L}-state` };
    await t.client.send(new PutItemCommand({ TableName: target, Item: marshall({ ...key, v: 0, leaseDurationSeconds: 1, leaseTransitions: 0, fencingToken: 0, revision: 1 }) }));
    const put = (v: number) => ({ TransactItems: [{ Update: { TableName: target, Key: marshall(key), UpdateExpression: 'SET v = :v', ExpressionAttributeValues: marshall({ ':v': v }) } }] });
    const a = startElector(t, log, 'a', { leaseName: L }, { versions: ['1.30.0', '1.30.0'] });
    let b: RunningElector | undefined;
    try {
      await waitFor('a to lead', () => a.elector.isLeader());
      const oldTerm = { holderIdentity: 'a', fencingToken: a.elector.fencingToken! };
      await a.elector.fencedWrite(put(1));
      b = startElector(t, log, 'b', { leaseName: L }, { versions: ['1.29.0', '1.30.0'] });
      await waitFor('b to lead', () => b!.elector.isLeader());
      // the deposed elector refuses at once
      await expect(a.elector.fencedWrite(put(2))).rejects.toBeInstanceOf(FencingError);
      // a paused ex-leader still holding its old term is refused by DynamoDB itself
      const err = await fencedTransactWrite(t.client, { table: t.names.leases, leaseName: L, term: oldTerm }, put(3)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(FencingError);
      expect((err as FencingError).message).toMatch(new RegExp(`fencing token ${oldTerm.fencingToken} refused`));
      const now = await t.client.send(new GetItemCommand({ TableName: target, Key: marshall(key), ConsistentRead: true }));
      expect(unmarshall(now.Item!)['v']).toBe(1);
      // the new leader's fenced write goes through
      await b.elector.fencedWrite(put(4));
      const after = await t.client.send(new GetItemCommand({ TableName: target, Key: marshall(key), ConsistentRead: true }));
      expect(unmarshall(after.Item!)['v']).toBe(4);
    } finally {
      await a.stop();
      await b?.stop();
      await coord.stop();
    }
  });
});

describe('succession: the designated successor takes a vacant lease itself', () => {
  /** Three electors elected by the coordinator, which is then stopped once the lease names a successor. */
  async function electedThenCoordinatorDown(L: string, log: Log, opts: Partial<LeaderElectorOptions> = {}) {
    const coord = coordinatorLoop(deps, L);
    const es = ['a', 'b', 'c'].map((id) => startElector(t, log, id, { leaseName: L, fallbackAfterMs: 60_000, ...opts }));
    const leader = await waitFor('a leader', () => leaders(es)[0]);
    const held = await waitFor('a successor on the lease', async () => {
      const l = (await deps.leases.read(L)).item;
      return l?.successor ? l : undefined;
    });
    await coord.stop(); // from here on only the workers act: no election can happen
    const successor = es.find((e) => e.elector.options.identity === held.successor)!;
    expect(successor).not.toBe(leader);
    expect(held.successorInstance).toBe(successor.elector.instance);
    return { es, leader, successor, held };
  }

  it('a leader gone without releasing: the successor leads once the term has run out, with no coordinator and long before the fallback', async () => {
    const L = lease();
    const log = new Log();
    const { es, leader, successor, held } = await electedThenCoordinatorDown(L, log, { releaseOnCancel: false });
    try {
      await leader.stop();
      const lastTerm = (await deps.leases.read(L)).item!;
      expect(lastTerm.holderIdentity).toBe(leader.elector.options.identity);
      await waitFor('the successor leading', () => successor.elector.isLeader(), 10_000);
      const l = (await deps.leases.read(L)).item!;
      expect(l).toMatchObject({ holderIdentity: successor.elector.options.identity, holderInstance: successor.elector.instance, electedBy: 'successor' });
      expect(l.fencingToken).toBeGreaterThan(held.fencingToken);
      expect(l.acquireTime!).toBeGreaterThanOrEqual(lastTerm.renewTime! + lastTerm.leaseDurationSeconds * 1000); // not before the term had run out
      expect(l.successor).toBeUndefined(); // the coordinator names the next one
      expect(leaders(es)).toEqual([successor]);
      expect(log.maxConcurrentLeaders()).toBe(1);
    } finally {
      await stopAll(es);
    }
  });

  it('a released lease: the successor takes it at its next poll, with no coordinator', async () => {
    const L = lease();
    const log = new Log();
    const { es, leader, successor } = await electedThenCoordinatorDown(L, log, { releaseOnCancel: true });
    try {
      const t0 = performance.now();
      await leader.stop();
      await waitFor('the successor leading', () => successor.elector.isLeader(), 5_000);
      expect(performance.now() - t0).toBeLessThan(FAST.leaseDurationMs); // did not wait out a term
      expect((await deps.leases.read(L)).item).toMatchObject({ holderIdentity: successor.elector.options.identity, electedBy: 'successor' });
      expect(log.maxConcurrentLeaders()).toBe(1);
    } finally {
      await stopAll(es);
    }
  });

  it('the successor gone too: the others do not take the lease, they report the vacancy (after the successor’s turn) for an election', async () => {
    const L = lease();
    const log = new Log();
    const { es, leader, successor, held } = await electedThenCoordinatorDown(L, log, { releaseOnCancel: false });
    const other = es.find((e) => e !== leader && e !== successor)!;
    try {
      await successor.stop();
      await leader.stop();
      const reported = await waitFor('a vacancy report', async () => (await deps.leases.read(L)).item?.vacancyReport, 10_000);
      expect(reported.by).toBe(other.elector.options.identity);
      await new Promise((r) => setTimeout(r, 4 * FAST.retryPeriodMs));
      expect(other.elector.isLeader()).toBe(false);
      expect((await deps.leases.read(L)).item).toMatchObject({ holderIdentity: held.holderIdentity, fencingToken: held.fencingToken });
      // the coordinator back: it elects the one left (the departed holder is not waited for)
      const coord = coordinatorLoop(deps, L);
      try {
        await waitFor('the last worker leading', () => other.elector.isLeader(), 10_000);
        const l = (await deps.leases.read(L)).item!;
        expect(l.electedBy).toBe('coordinator');
        expect(l.fencingToken).toBeGreaterThan(held.fencingToken);
      } finally {
        await coord.stop();
      }
    } finally {
      await stopAll(es);
    }
  });
});

describe('without the coordinator', () => {
  it('fallback: a lease vacant for fallbackAfter is acquired directly (electedBy self), by one worker', async () => {
    const L = lease();
    const log = new Log();
    const es = ['a', 'b', 'c'].map((id) => startElector(t, log, id, { leaseName: L, fallbackAfterMs: 1_500 }));
    try {
      const leader = await waitFor('a self-elected leader', () => leaders(es)[0], 10_000);
      const l = (await deps.leases.read(L)).item!;
      expect(l).toMatchObject({ holderIdentity: leader.elector.options.identity, electedBy: 'self', fencingToken: nextFencingToken(undefined, l.acquireTime!) });
      await new Promise((r) => setTimeout(r, 1_000));
      expect(leaders(es)).toHaveLength(1);
      expect(log.maxConcurrentLeaders()).toBe(1);
    } finally {
      await stopAll(es);
    }
  });

  it('NoCoordination electors beside coordinated ones never make two holders', async () => {
    const L = lease();
    const log = new Log();
    const coord = coordinatorLoop(deps, L);
    const es = [
      startElector(t, log, 'plain-1', { leaseName: L, mode: 'NoCoordination', releaseOnCancel: false }),
      startElector(t, log, 'coord-1', { leaseName: L, releaseOnCancel: false }),
      startElector(t, log, 'plain-2', { leaseName: L, mode: 'NoCoordination', releaseOnCancel: false }),
      startElector(t, log, 'coord-2', { leaseName: L, releaseOnCancel: false }),
    ];
    const live = [...es];
    try {
      // kill the leader twice, whoever it is; the rest must agree on one holder at a time
      for (let round = 0; round < 2; round++) {
        const leader = await waitFor('a leader', () => leaders(live)[0], 20_000);
        live.splice(live.indexOf(leader), 1);
        await leader.stop();
      }
      await waitFor('a third leader', () => leaders(live)[0], 20_000);
      expect(log.maxConcurrentLeaders()).toBe(1);
      const tokens = log.of('started').map((e) => e.token!);
      expect(new Set(tokens).size).toBe(tokens.length);
    } finally {
      await stopAll(live);
      await coord.stop();
    }
  });
});

describe('a broken lease row (one the schema refuses)', () => {
  it('a follower never takes it and keeps polling, reporting each poll to onError; once the row is repaired it leads', async () => {
    const L = lease();
    // A vacant lease with a 0-second term, written by hand: a NoCoordination worker would take a vacant lease at once.
    await t.client.send(new PutItemCommand({ TableName: t.names.leases, Item: marshall({ name: L, leaseDurationSeconds: 0, leaseTransitions: 0, fencingToken: 4, revision: 2 }) }));
    const log = new Log();
    const errors: Error[] = [];
    const plain = startElector(t, log, 'plain', { leaseName: L, mode: 'NoCoordination' }, { errors });
    const coordinated = startElector(t, log, 'coord', { leaseName: L, fallbackAfterMs: 300 }, { errors });
    try {
      await waitFor('several polls reported', () => errors.filter((e) => e instanceof ValidationError).length >= 6, 10_000);
      expect(errors.every((e) => e instanceof ValidationError && e.fields.includes('leaseDurationSeconds'))).toBe(true);
      expect(log.of('started')).toEqual([]);
      const raw = await t.client.send(new GetItemCommand({ TableName: t.names.leases, Key: marshall({ name: L }) }));
      expect(unmarshall(raw.Item!)).toMatchObject({ leaseDurationSeconds: 0, fencingToken: 4, revision: 2 }); // nobody wrote over it

      // repaired in place (the field set right): the polls pick it up; the term's token continues from the row's
      await t.client.send(new PutItemCommand({ TableName: t.names.leases, Item: marshall({ name: L, leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 4, revision: 3 }) }));
      const started = await waitFor('a leader after the repair', () => log.of('started')[0], 10_000);
      expect(started.token).toBeGreaterThan(4);
    } finally {
      await stopAll([plain, coordinated]);
    }
  });

  it('a leader whose row turns broken stops acting by its renew deadline, keeps running, and reports it', async () => {
    const L = lease();
    const log = new Log();
    const errors: Error[] = [];
    const e = startElector(t, log, 'solo', { leaseName: L, mode: 'NoCoordination', releaseOnCancel: false }, { errors });
    try {
      await waitFor('leading', () => e.elector.isLeader());
      const row = unmarshall((await t.client.send(new GetItemCommand({ TableName: t.names.leases, Key: marshall({ name: L }) }))).Item!);
      await t.client.send(new PutItemCommand({ TableName: t.names.leases, Item: marshall({ ...row, leaseTransitions: -1 }) }));
      await waitFor('stepped down', () => log.of('stopped', 'solo')[0], 10_000);
      expect(log.of('stopped', 'solo')[0]!.reason).toBe('renewDeadline');
      await waitFor('still polling after stepping down', () => errors.filter((x) => x instanceof ValidationError).length >= 8, 10_000);
      expect(e.elector.isLeader()).toBe(false);
    } finally {
      await e.stop();
    }
  });
});
