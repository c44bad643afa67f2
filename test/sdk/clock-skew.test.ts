/**
 * Worker clocks that lie (issue 15, item 4): a worker's wall clock 30 s slow, 30 s fast, or stepped
 * by NTP while it runs, against a coordinator and a DynamoDB Local that keep the real time. The
 * coordinator judges expiry and acknowledgements from what the workers write, so these run the
 * real SDK, the real coordinator and real tables: only the workers' clocks are off.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { systemClock, type Clock } from '../../lib/clock.js';
import { coordinatorDeps, type CoordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../lib/local/dynamodb-local.js';
import { LeaseCandidate } from '../../lib/sdk/candidate.js';
import { IdentityLeaseHeartbeat } from '../../lib/sdk/identity.js';
import { serverClockOf } from '../../lib/sdk/server-clock.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { testTables, type TestTables } from '../support.js';
import { FAST, Log, coordinatorLoop, startElector, waitFor, type RunningElector } from './harness.js';

let t: TestTables;
let deps: CoordinatorDeps;
let n = 0;
const lease = () => `skew-${++n}`;
const ACK_MS = 500;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  t = await testTables('clock-skew');
  // Pure KEP elections (no successor): a vacancy always goes through the coordinator's judgement.
  deps = coordinatorDeps(t.client, t.names, { config: { ackWindowMs: ACK_MS, electedLeaseDurationSeconds: 2, succession: false } });
});
afterAll(() => t.drop());

/** A machine's clock: its wall clock `offset` ms off (changed at will: an NTP step), its monotonic clock true. */
function machineClock(offsetMs: number): Clock & { offsetMs: number } {
  const c = {
    ...systemClock,
    offsetMs,
    now: () => Date.now() + c.offsetMs,
    monotonic: () => performance.now(),
  };
  return c;
}

/** A worker's own DynamoDB client (a process of its own); `kill()` makes it a crashed process: nothing it sends arrives. */
function ownClient() {
  const client = new DynamoDBClient({ endpoint: inject('ddbEndpoint'), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, maxAttempts: 1 });
  let dead = false;
  client.middlewareStack.add(
    (next) => async (args) => {
      if (dead) throw Object.assign(new Error('injected: the process is gone'), { name: 'ProcessGone' });
      return next(args);
    },
    { step: 'initialize', name: 'crash' },
  );
  return {
    client,
    kill() {
      dead = true;
    },
  };
}

const stopAll = (es: (RunningElector | undefined)[]) => Promise.all(es.map((e) => e?.stop()));

describe('worker clocks 30 s off, and stepped (the coordinator keeps the real time)', () => {
  it('30 s slow: the leader renews and is never deposed; the coordinator sees fresh renewals', async () => {
    const L = lease();
    const log = new Log();
    const coord = coordinatorLoop(deps, L);
    const slow = ownClient();
    const s = startElector(t, log, 's', { leaseName: L, clock: machineClock(-30_000) }, { client: slow.client });
    try {
      await waitFor('s to lead', () => s.elector.isLeader(), 5_000);
      await sleep(3 * FAST.leaseDurationMs); // three terms' worth of renewals
      expect(log.of('stopped', 's')).toEqual([]);
      expect(log.of('started', 's')).toHaveLength(1);
      const l = (await deps.leases.read(L)).item!;
      expect(l).toMatchObject({ holderIdentity: 's', electedBy: 'coordinator' }); // elected, not taken by the fallback after its acks went unheard
      expect(s.elector.stats).toMatchObject({ clockSynced: true, clockSkewPreventions: expect.any(Number) });
      expect(Math.abs(s.elector.stats.clockOffsetMs! - 30_000)).toBeLessThan(1_000); // it knows its wall clock is 30 s behind
      expect(Math.abs(l.renewTime! - Date.now())).toBeLessThan(FAST.retryPeriodMs + 1_000);
      expect(coord.errors).toEqual([]);
    } finally {
      await stopAll([s]);
      await coord.stop();
      slow.client.destroy();
    }
  });

  it('30 s fast: once it died it is not counted alive; the next election passes it over within seconds', async () => {
    const L = lease();
    const log = new Log();
    const coord = coordinatorLoop(deps, L);
    const fast = ownClient();
    // f ranks first (the oldest emulation version): a live f would win every election
    const f = startElector(t, log, 'f', { leaseName: L, clock: machineClock(30_000), releaseOnCancel: false }, { client: fast.client, versions: ['1.29.0', '1.31.0'] });
    let b: RunningElector | undefined;
    try {
      await waitFor('f to lead', () => f.elector.isLeader());
      b = startElector(t, log, 'b', { leaseName: L }, { versions: ['1.30.0', '1.31.0'] });
      await b.elector.ready;
      await sleep(ACK_MS + 200); // f's own stamps are no longer fresh by the real time
      fast.kill(); // f crashes: no renewal, no release, no withdrawal
      const died = performance.now();
      await waitFor('b to lead', () => b!.elector.isLeader(), 30_000);
      // b waits out f's term (2 s), reports it, and one election (one ack window) makes it leader;
      // f's rows claim it renewed 30 s into the future and must not count
      expect(performance.now() - died).toBeLessThan(FAST.leaseDurationMs + 4_000);
      const l = (await deps.leases.read(L)).item!;
      expect(l.holderIdentity).toBe('b');
      expect(coord.errors).toEqual([]);
    } finally {
      await stopAll([f, b]);
      await coord.stop();
      fast.client.destroy();
    }
  });

  it('stepped back 30 s by NTP: its acknowledgements still count at once', async () => {
    const L = lease();
    const log = new Log();
    let coord = coordinatorLoop(deps, L);
    const a = startElector(t, log, 'a', { leaseName: L }, { versions: ['1.30.0', '1.31.0'] });
    let b: RunningElector | undefined;
    try {
      await waitFor('a to lead', () => a.elector.isLeader());
      // The coordinator pauses while b joins, so b's registration is no longer fresh when it looks:
      // b must answer a ping to be preferred.
      await coord.stop();
      const clock = machineClock(0);
      const own = ownClient();
      b = startElector(t, log, 'b', { leaseName: L, clock }, { client: own.client, versions: ['1.29.0', '1.31.0'] });
      await b.elector.ready;
      await sleep(ACK_MS + 200);
      clock.offsetMs = -30_000; // NTP steps b's clock back 30 s
      coord = coordinatorLoop(deps, L);
      // b ranks first: a re-election pings it, it answers, a is preempted and b leads
      await waitFor('b to lead', () => b!.elector.isLeader(), 8_000);
      expect(a.elector.isLeader()).toBe(false);
      expect(log.maxConcurrentLeaders()).toBe(1);
    } finally {
      await stopAll([a, b]);
      await coord.stop();
    }
  });
});

describe('every time the SDK writes is DynamoDB’s, whatever the wall clock says', () => {
  it('a LeaseCandidate 30 s slow and an IdentityLeaseHeartbeat 30 s fast write the real time; so does a stepped one', async () => {
    const slow = machineClock(-30_000);
    const fast = machineClock(30_000);
    const c = new LeaseCandidate({ leaseName: lease(), name: 'c', tables: t.names, client: t.client, clock: slow, emulationVersion: '1.30.0', binaryVersion: '1.31.0' });
    const h = new IdentityLeaseHeartbeat({ client: t.client, tables: t.names, component: 'skewed', hostname: 'h1', clock: fast });
    const stop = new AbortController();
    const runs = [c.run(stop.signal), h.run(stop.signal)];
    try {
      const [row, beat] = await Promise.all([c.ready, h.ready]);
      expect(Math.abs(row.renewTime - Date.now())).toBeLessThan(1_500);
      expect(Math.abs(beat.renewTime - Date.now())).toBeLessThan(1_500);
      await sleep(600); // a second response, half a second on, narrows the estimate
      slow.offsetMs = +45_000; // and now a step of 75 s
      await c.renew();
      await h.renewNow();
      expect(Math.abs((await new CandidateStore(t.client, t.names.candidates).read(c.leaseName, 'c')).item!.renewTime - Date.now())).toBeLessThan(1_000);
      expect(Math.abs((await new IdentityStore(t.client, t.names.identities).read('skewed', h.name)).item!.renewTime - Date.now())).toBeLessThan(1_000);
    } finally {
      stop.abort();
      await Promise.all(runs);
    }
  });
});

describe('beyond the bound: a worker that cannot tell DynamoDB’s time does not lead', () => {
  /** A client whose responses lose their Date header (a proxy that strips it). */
  function dateless() {
    const client = new DynamoDBClient({ endpoint: inject('ddbEndpoint'), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
    serverClockOf(client, systemClock); // the SDK's middleware first: the one added after it runs inside it
    client.middlewareStack.add(
      (next) => async (args) => {
        const out = await next(args);
        const headers = (out.response as { headers: Record<string, string> }).headers;
        delete headers['date'];
        return out;
      },
      { step: 'deserialize', priority: 'low', name: 'stripDate' },
    );
    return client;
  }

  it('no Date header: it stays a follower, counts clock skew preventions and says why; with clockSync none it leads', async () => {
    const L = lease();
    const log = new Log();
    const errors: Error[] = [];
    const coord = coordinatorLoop(deps, L);
    const client = dateless();
    const n = startElector(t, log, 'n', { leaseName: L, mode: 'NoCoordination' }, { client, errors });
    let trusting: RunningElector | undefined;
    try {
      await sleep(FAST.leaseDurationMs + 3 * FAST.retryPeriodMs);
      expect(n.elector.isLeader()).toBe(false);
      expect(n.elector.stats).toMatchObject({ clockSynced: false, clockErrorMs: undefined, clockOffsetMs: undefined });
      expect(n.elector.stats.clockSkewPreventions).toBeGreaterThan(1);
      const skew = errors.filter((e) => e.name === 'ClockSkewError');
      expect(skew).toHaveLength(1); // once per spell, not once per poll
      expect(skew[0]!.message).toMatch(/no response with a Date header yet.*clockSync: 'none'/);
      await n.stop();
      trusting = startElector(t, log, 'trusting', { leaseName: L, mode: 'NoCoordination', clockSync: 'none' }, { client });
      await waitFor('the trusting one to lead', () => trusting!.elector.isLeader(), 5_000);
      expect(trusting.elector.stats).toMatchObject({ clockSynced: true, clockSkewPreventions: 0 });
    } finally {
      await stopAll([n, trusting]);
      await coord.stop();
      client.destroy();
    }
  });

  it('its measurement of DynamoDB’s time jumps (the machine was suspended: its monotonic clock stood still): a leader stops at once', async () => {
    const L = lease();
    const log = new Log();
    const errors: Error[] = [];
    let lost = 0;
    const clock = { ...systemClock, monotonic: () => performance.now() - lost };
    const own = ownClient();
    const a = startElector(t, log, 'a', { leaseName: L, mode: 'NoCoordination', clock }, { client: own.client, errors });
    try {
      await waitFor('a to lead', () => a.elector.isLeader());
      lost = 20_000; // 20 s this machine's monotonic clock did not count
      await waitFor('a to stop', () => !a.elector.isLeader(), 2 * FAST.retryPeriodMs + 1_000);
      expect(log.of('stopped', 'a')[0]?.reason).toBe('renewDeadline');
      const jumped = Number(/jumped by (\d+) ms/.exec(errors.find((e) => e.name === 'ClockSkewError')?.message ?? '')?.[1]);
      expect(jumped).toBeGreaterThan(20_000 - 2_000); // the 20 s it did not count, less the samples' width
      expect(a.elector.stats.clockSkewPreventions).toBeGreaterThan(0);
      // once two responses agree again it may lead again
      await waitFor('a to lead again', () => a.elector.isLeader(), 10_000);
    } finally {
      await stopAll([a]);
      own.client.destroy();
    }
  });
});
