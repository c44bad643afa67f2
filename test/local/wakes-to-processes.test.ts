/**
 * Wakes addressed to processes (issue 38, item 5; docs/architecture.md, "Wake-ups"), end to end on
 * the local runtime: DynamoDB Local, the real lease-stream poller and handler, the real wake batch
 * (its candidates Query) and IoTDataPlaneClient publishing to the local broker, and workers each
 * with a Session and a PushChannel given that Session. The tick is off (every 10 min).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { startLocalRuntime, type LocalRuntime } from '../../lib/local/runtime.js';
import { processOf } from '../../lib/schemas/identity.js';
import type { Wake } from '../../lib/schemas/push.js';
import { PushChannel } from '../../lib/sdk/push-channel.js';
import { Session } from '../../lib/sdk/session.js';
import type { ElectorInternals } from '../../lib/sdk/elector.js';
import { localClient } from '../../lib/stores/client.js';
import { Log, startElector, waitFor, type RunningElector } from '../sdk/harness.js';

/** Session timings that fit FAST's (lease 2 s, renew deadline 1.5 s, retry 250 ms). */
const SESSION = { renewIntervalMs: 600, retryPeriodMs: 150, renewDeadlineMs: 1_200, maxLeaseDurationMs: 2_000 } as const;
/**
 * For the hand-off tests: a term that outlives a busy machine's stall. With FAST's 1.5 s renew
 * deadline, a first term confirmed late is given back, its successor takes it, and the leader the
 * test picked is no longer leading when it stops (no hand-off, so no wake to wait for).
 */
const STEADY = { elector: { leaseDurationMs: 8_000, renewDeadlineMs: 6_000, retryPeriodMs: 500 }, session: { renewIntervalMs: 2_000, retryPeriodMs: 300, renewDeadlineMs: 5_000, maxLeaseDurationMs: 8_000 } } as const;

interface Proc {
  id: string;
  session: Session;
  channel: PushChannel;
  /** Wakes of the watched leases reaching this process, as a watcher of its own process sees them. */
  wakes: Wake[];
  electors: RunningElector[];
  stop: AbortController;
  runs: Promise<void>[];
}

const started: { rt: LocalRuntime; procs: Proc[]; clients: DynamoDBClient[] }[] = [];

async function world(opts: { decorateWake?: 'leaseTopicOnly'; steady?: boolean } = {}) {
  const rt = await startLocalRuntime({
    endpoint: inject('ddbEndpoint'),
    prefix: `wtp-${randomUUID().slice(0, 8)}`,
    dir: mkdtempSync(join(tmpdir(), 'conclave-wtp-')),
    tickEveryMs: 600_000,
    logLevel: 'SILENT',
    // a lost wake: the stream's publishes to process topics never happen (the lease topic still does)
    ...(opts.decorateWake ? { decorate: (deps) => ({ ...deps, ...(deps.wake ? { wake: ((w) => (lease: string, revision: number | undefined) => w(lease, revision))(deps.wake) } : {}) }) } : {}),
  });
  const env = { rt, procs: [] as Proc[], clients: [] as DynamoDBClient[] };
  started.push(env);
  const log = new Log();
  const t = { client: rt.client, names: rt.tables };
  /** A process: its Session, its PushChannel given that Session, and one elector per lease (`client`: the electors', to break it). */
  const proc = async (id: string, leases: string[], client = rt.client, internals?: ElectorInternals): Promise<Proc> => {
    const stop = new AbortController();
    const session = new Session({ client, tables: rt.tables, ...(opts.steady ? STEADY.session : SESSION), onError: () => undefined });
    const channel = new PushChannel({ endpoint: rt.pushEndpoint!, tables: rt.tables, session, onError: () => undefined });
    const p: Proc = { id, session, channel, wakes: [], electors: [], stop, runs: [session.run(stop.signal), channel.run(stop.signal)] };
    env.procs.push(p);
    await Promise.all([session.ready, channel.ready]);
    for (const lease of leases) {
      channel.watch(lease, (w) => void (w && p.wakes.push(w)), `probe_0@${session.process}`);
      p.electors.push(startElector({ ...t, client }, log, id, { leaseName: lease, push: channel, session, ...(opts.steady ? STEADY.elector : {}) }, internals ? { internals } : {}));
    }
    return p;
  };
  /** A leader leading now (its elector says so) of a row naming a successor among `procs`, and that successor's process. */
  const leaderAndHeir = (lease: string, procs: Proc[]) =>
    waitFor('a leader leading, and a successor named', async () => {
      const l = (await rt.deps.coordinator.leases.read(lease)).item;
      const leader = procs.find((p) => p.id === l?.holderIdentity);
      const heir = procs.find((p) => p.session.process === processOf(l?.successorInstance));
      return l && !l.election && leader?.electors[0]!.elector.isLeader() && heir && heir !== leader ? { lease: l, leader, heir } : undefined;
    });
  return { rt, log, proc, env, leaderAndHeir };
}

afterEach(async () => {
  for (const { rt, procs, clients } of started.splice(0)) {
    for (const p of procs) await Promise.all(p.electors.map((e) => e.stop()));
    for (const p of procs) p.stop.abort();
    await Promise.all(procs.flatMap((p) => p.runs));
    for (const c of clients) c.destroy();
    await rt.stop();
  }
});

describe('wakes addressed to processes (local runtime, DynamoDB Local)', () => {
  it("each process subscribes to its own topic alone; the lease stream's wakes reach every candidate's process on it, and a hand-off's wake reaches the heir's", async () => {
    const LEASE = 'reports';
    const { rt, log, proc, leaderAndHeir } = await world({ steady: true });
    const procs = [await proc('a', [LEASE]), await proc('b', [LEASE]), await proc('c', [LEASE])];
    // one subscription a connection: three processes, three topic filters, each its own process's
    expect(rt.pushBroker!.stats().subscriptions).toBe(3);
    const { lease, leader, heir } = await leaderAndHeir(LEASE, procs);
    // the stream's wakes of the lease's changes went to each candidate's process topic
    await waitFor("a stream wake on every process's own topic", () => procs.every((p) => p.wakes.some((w) => w.by === 'stream')));

    expect(heir.id).toBe(lease.successor);
    const before = heir.wakes.length;
    const starts = log.of('started', heir.id).length;
    await leader.electors[0]!.stop(); // hands the term to its heir, and wakes the heir's process
    expect(log.of('stopped', leader.id).at(-1)).toMatchObject({ reason: 'cancelled', token: lease.fencingToken });
    await waitFor('the heir leads', () => log.of('started', heir.id).length > starts);
    await waitFor("the leader's own wake on the heir's topic", () => heir.wakes.slice(before).some((w) => w.by === 'worker' && w.lease === LEASE));
    expect(rt.pushBroker!.stats().subscriptions).toBe(3);
  });

  it("a leader that cannot hand over releases, and its wake reaches the process of the successor the vacated row names (it takes the vacancy)", async () => {
    const LEASE = 'ledger';
    const { rt, log, proc, leaderAndHeir } = await world({ steady: true });
    // every elector's lock reads no heir's candidate row: a hand-over is never made, the leader releases instead
    let handOvers = 0;
    const noHeirRow: ElectorInternals = {
      lock: (l) => ({
        ...l,
        candidate: async () => ({ item: undefined }),
        handOver: (term, h) => {
          handOvers++;
          return l.handOver(term, h);
        },
      }),
    };
    const procs = [await proc('a', [LEASE], rt.client, noHeirRow), await proc('b', [LEASE], rt.client, noHeirRow)];
    const { lease, leader, heir } = await leaderAndHeir(LEASE, procs);
    const before = heir.wakes.length;
    const starts = log.of('started', heir.id).length;
    await leader.electors[0]!.stop();
    expect(log.of('stopped', leader.id).at(-1)).toMatchObject({ reason: 'cancelled', token: lease.fencingToken });
    await waitFor('the successor leads', () => log.of('started', heir.id).length > starts);
    await waitFor("the leader's release wake on the successor's topic", () => heir.wakes.slice(before).some((w) => w.by === 'worker' && w.lease === LEASE));
    // it was a release, not a hand-over
    expect(handOvers).toBe(0);
  });

  it("a process standing for many leases holds one subscription; a watcher not of its process hears its lease topic on the deployment's subscription, held in its place", async () => {
    const leases = Array.from({ length: 8 }, (_, i) => `job-${i}`);
    const { rt, log, proc } = await world();
    const p = await proc('w', leases);
    await waitFor('every lease led', () => p.electors.every((e) => e.elector.isLeader()));
    // 60 more leases watched by electors of this process: still the one subscription (IoT Core allows 50)
    const stops = Array.from({ length: 60 }, (_, i) => p.channel.watch(`more-${i}`, () => undefined, `x_${i}@${p.session.process}`));
    expect(rt.pushBroker!.stats().subscriptions).toBe(1);
    await waitFor("every lease's stream wake on the process topic", () => leases.every((l) => p.wakes.some((w) => w.lease === l && w.by === 'stream')));
    // an elector on no session (or another one) is not addressed through this process: it hears its
    // lease's topic, on the deployment's subscription held in place of the process topic (still one)
    const heard: string[] = [];
    const stranger = p.channel.watch('elsewhere', (w) => void (w && heard.push(w.lease)), 'y_1');
    await waitFor('a wake on its lease topic heard', () => (p.channel.wake('elsewhere'), heard.length > 0));
    await waitFor('one subscription again', () => rt.pushBroker!.stats().subscriptions === 1);
    stranger();
    for (const s of stops) s();
  });

  it('a lost wake degrades to the poll: with no wake on any process topic, the successor of a crashed leader still takes over', async () => {
    const LEASE = 'nightly';
    // steady: a's term is not given back before the crash (a release or an end of a term wakes the
    // successor's process, which would put a wake on b's topic that this test says never comes)
    const { rt, log, proc, env } = await world({ decorateWake: 'leaseTopicOnly', steady: true });
    // the first process's electors talk to DynamoDB through a client that can be cut: its crash
    let cut = false;
    const breakable = localClient(rt.endpoint);
    env.clients.push(breakable);
    breakable.middlewareStack.add((next) => async (args) => {
      if (cut) throw new Error('the process is gone');
      return next(args);
    }, { step: 'initialize', name: 'crash' });
    const a = await proc('a', [LEASE], breakable);
    await waitFor('a leads', () => log.of('started', 'a').length > 0);
    const b = await proc('b', [LEASE]);
    await waitFor('b named successor', async () => (await rt.deps.coordinator.leases.read(LEASE)).item?.successor === 'b');
    // a leads the term it started, up to the crash: nothing of its own ended a term before it
    const aTerm = a.electors[0]!.elector.fencingToken;
    expect((await rt.deps.coordinator.leases.read(LEASE)).item, 'a still holds its term').toMatchObject({ holderIdentity: 'a', fencingToken: aTerm, successor: 'b' });
    expect(log.of('stopped', 'a')).toEqual([]);
    expect(b.wakes).toEqual([]);
    cut = true;
    a.stop.abort(); // its channel and session go too: no hand-off, no wake of its own
    await waitFor('b leads after the lease ran out', () => log.of('started', 'b').length > 0);
    // nothing reached b's process topic: the stream published on the lease topic alone, which it does not subscribe to
    expect(b.wakes).toEqual([]);
    expect(b.channel.healthy()).toBe(true);
  });
});
