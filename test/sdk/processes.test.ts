import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { createTables } from '../../lib/local/tables.js';
import { defaultTableNames } from '../../lib/tables.js';
import { coordinatorLoop, waitFor } from './harness.js';

// Steady timings (the failover's speed is not what this test asserts): a term outlives a busy
// machine's stall, so the process picked as leader still leads when it is killed
// (the renewal interval too: by default a coordinated leader renews 2 retry periods before its deadline)
const LEASE_MS = 8_000;
const RENEW_DEADLINE_MS = 6_000;
const RETRY_MS = 500;
const RENEW_INTERVAL_MS = 2_000;
// pings are answered at a follower's next poll: a window of four polls, so a busy machine's late
// poll does not leave a live candidate passed over as one that ignored its ping
const ACK_MS = 2_000;

interface Event {
  event: string;
  identity: string;
  at: number;
  fencingToken?: number;
  reason?: string;
  leader?: string;
}

interface Worker {
  identity: string;
  child: ChildProcess;
  events: Event[];
  exited: Promise<number | null>;
}

const prefix = `t-procs-${process.pid}`;
const tables = defaultTableNames(prefix);
let client: ReturnType<typeof localClient>;

function startWorker(identity: string, emulationVersion: string): Worker {
  const child = spawn(process.execPath, ['--import', 'tsx', 'lib/local/demo/worker.ts'], {
    env: {
      ...process.env,
      CONCLAVE_ENDPOINT: inject('ddbEndpoint'),
      CONCLAVE_TABLE_PREFIX: prefix,
      LEASE: 'reports',
      IDENTITY: identity,
      EMULATION_VERSION: emulationVersion,
      BINARY_VERSION: '1.31.0',
      LEASE_DURATION_MS: String(LEASE_MS),
      RENEW_DEADLINE_MS: String(RENEW_DEADLINE_MS),
      RENEW_INTERVAL_MS: String(RENEW_INTERVAL_MS),
      RETRY_PERIOD_MS: String(RETRY_MS),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const events: Event[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line.startsWith('{')) events.push(JSON.parse(line) as Event);
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { identity, child, events, exited };
}

beforeAll(async () => {
  client = localClient(inject('ddbEndpoint'));
  await createTables(client, tables);
});
afterAll(() => client.destroy());

describe('three worker processes', () => {
  // Real processes on real time: outcomes only (who leads, with which token, how they exit); how
  // fast a failover is, is asserted on simulated time in test/sdk/elector.test.ts.
  it('the leader is SIGKILLed: another process leads, with a higher fencing token, and only one', async () => {
    const deps = coordinatorDeps(client, tables, { config: { ackWindowMs: ACK_MS, electedLeaseDurationSeconds: 2 } });
    // the lease as each coordinator pass left it, and the candidates at the end: what a failure below is told with
    const seen: string[] = [];
    let lastLine = '';
    const coord = coordinatorLoop(deps, 'reports', 100, async () => {
      const l = (await deps.leases.read('reports')).item;
      const line = l ? JSON.stringify({ holder: l.holderIdentity, token: l.fencingToken, successor: l.successor, second: l.secondSuccessor, last: l.lastHolderIdentity, preferred: l.preferredHolder, election: l.election?.id, acquired: l.acquireTime }) : '';
      if (line !== lastLine) seen.push(`${Date.now()} ${(lastLine = line)}`);
    });
    const story = async () => `lease revisions seen:\n${seen.join('\n')}\ncandidates: ${JSON.stringify((await deps.candidates.list('reports')).candidates.map((c) => ({ name: c.name, renewTime: c.renewTime, pingTime: c.pingTime, ackedPingTime: c.ackedPingTime })))}\nworkers: ${JSON.stringify(workers.map((w) => [w.identity, w.events.map((e) => [e.at, e.event, e.leader ?? e.reason ?? e.fencingToken])]))}`;
    const workers = [startWorker('w1', '1.30.0'), startWorker('w2', '1.30.0'), startWorker('w3', '1.31.0')];
    try {
      const started = (w: Worker, after = 0) => w.events.filter((e) => e.event === 'started' && e.at > after);
      const leading = (w: Worker) => w.events.filter((e) => e.event === 'started' || e.event === 'stopped').at(-1)?.event === 'started';
      // whoever registered first may lead for a moment; the oldest emulation version must end up leading
      // settled: an oldest-emulation leader whose row names the other oldest as successor, no election (a liveness check) open
      const { first, token, oldest } = await waitFor('an oldest-emulation leader process, the other oldest its successor', async () => {
        const w = workers.find((x) => x.identity !== 'w3' && leading(x));
        const l = w && (await deps.leases.read('reports')).item;
        const other = w?.identity === 'w1' ? 'w2' : 'w1';
        const t = w && started(w).at(-1)!.fencingToken!;
        return w && l?.holderIdentity === w.identity && l.fencingToken === t && l.successor === other && !l.election && leading(w) ? { first: w, token: t!, oldest: other } : undefined;
      }).catch(async (e: Error) => {
        throw new Error(`${e.message}\n${await story()}`);
      });
      // the row agrees as it is killed (a failure here names a term lost before the kill, not the failover)
      expect((await deps.leases.read('reports')).item, `${first.identity} still holds the term it leads`).toMatchObject({ holderIdentity: first.identity, fencingToken: token, successor: oldest });

      const killedAt = Date.now(); // a stamp to order the workers' lines by (one machine, one clock), not a duration
      first.child.kill('SIGKILL');
      await first.exited;
      const others = workers.filter((w) => w !== first);
      const next = await waitFor('a new leader process', () => others.find((w) => started(w, killedAt).length > 0));
      expect(started(next, killedAt)[0]!.fencingToken).toBeGreaterThan(token);
      // The oldest, named successor, takes the term as it runs out; but a busy machine may starve it
      // past the coordinator's vacancy and its ping's window, and the election then passes it over
      // for the other: that one leads until the coordinator preempts it for the oldest, as it answers.
      // So the first new leader may be either; the oldest must end up leading, never beside another.
      const winner = others.find((w) => w.identity === oldest)!;
      const bystander = others.find((w) => w !== winner)!;
      await waitFor(`${oldest} leading, the row agreeing`, async () => {
        const l = (await deps.leases.read('reports')).item;
        return leading(winner) && l?.holderIdentity === oldest && l.fencingToken === started(winner).at(-1)!.fencingToken;
      }).catch(async (e: Error) => {
        throw new Error(`${e.message}\nkilled ${first.identity} at ${killedAt}\n${await story()}`);
      });
      // Exactly one leader at a time: not judged after a fixed sleep, but once the other process has
      // seen the oldest as leader and it has renewed through two retry periods (the other polled
      // meanwhile and, seeing the lease held, must not have taken it).
      const term = (await deps.leases.read('reports')).item!;
      await waitFor('the bystander to see the new leader, and two renewals', async () => {
        const l = (await deps.leases.read('reports')).item;
        const seen = bystander.events.some((e) => e.event === 'newLeader' && e.leader === oldest && e.at > killedAt);
        return seen && l?.holderIdentity === oldest && l.renewTime! >= term.renewTime! + 2 * RETRY_MS;
      });
      // the lines since the kill, in time order (one machine, one clock): never two leading at once,
      // each new term on a higher token, and the oldest's the last
      const lines = others.flatMap((w) => w.events.filter((e) => (e.event === 'started' || e.event === 'stopped') && e.at > killedAt)).sort((a, b) => a.at - b.at || (a.event === 'stopped' ? -1 : 1)); // the same millisecond: a leader stops before it lets go
      const leadingNow = new Set<string>();
      for (const e of lines) {
        if (e.event === 'started') expect([...leadingNow], `${e.identity} started beside another\n${await story()}`).toEqual([]);
        if (e.event === 'started') leadingNow.add(e.identity);
        else leadingNow.delete(e.identity);
      }
      const tokens = others.flatMap((w) => started(w, killedAt)).map((e) => e.fencingToken!);
      expect(new Set(tokens).size).toBe(tokens.length);
      expect(started(winner, killedAt).at(-1)!.fencingToken).toBe(Math.max(...tokens));

      // graceful stop of the rest: they release and exit 0
      for (const w of others) w.child.kill('SIGTERM');
      expect(await Promise.all(others.map((w) => w.exited))).toEqual([0, 0]);
      // its term after the kill (at start-up it may have led for a moment and been preempted)
      expect(winner.events.filter((e) => e.event === 'stopped' && e.at > killedAt).at(-1)?.reason).toBe('cancelled');
    } finally {
      for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
      await coord.stop();
    }
  });
});
