/**
 * An onStoppedLeading that returns a promise (`async () => { await flushState(); }`, a user porting
 * from client-go, whose Run returns only once OnStoppedLeading has): the elector waits for it, bounded,
 * before the hand-over or release of the term and before run() resolves. Before, only its synchronous
 * part ran first: "5377 a stopped(cancelled) begin flush; 5393 a run() resolved; 5400 b started;
 * 6377 a flush done", and a process that exits after run() (as the README advises) cut the flush off.
 * On simulated time (sim/harness.ts).
 */
import { describe, expect, it } from 'vitest';
import type { LeaderCallbacks, StopReason } from '../../lib/sdk/elector.js';
import { STOP_BUDGET_MS } from '../../lib/sdk/faults.js';
import { Sim, type Machine, type SimElector } from '../../sim/harness.js';
import { HEIR_WAIT_MAX_MS } from '../../lib/sdk/step.js';
import { CLIENT_GO, CONFIG, L, leaders, onLeases } from './fault-group.js';

/** What happened, in true simulated ms, each named (`a stopped`, `a flushed`, `b started`, `a resolved`). */
type Events = Map<string, number[]>;
const note = (sim: Sim, events: Events, what: string) => events.set(what, [...(events.get(what) ?? []), sim.clock.monotonic()]);
const first = (events: Events, what: string): number => {
  const at = events.get(what)?.[0];
  if (at === undefined) throw new Error(`never: ${what}`);
  return at;
};
const told = (errors: readonly Error[]) => errors.filter((e) => /onStoppedLeading .* did not settle/.test(e.message));

/**
 * Three coordinated electors at client-go's timings whose onStoppedLeading flushes for `flushMs` on
 * its machine's clock (forever: never settles); `work` is each one's onStartedLeading. Returns them
 * once one leads with a successor named.
 */
async function flushing(flushMs: number, work: (id: string) => LeaderCallbacks['onStartedLeading'] = () => () => undefined) {
  const sim = await Sim.create({ config: CONFIG });
  sim.coordinator({ tickEveryMs: 1_000 });
  const events: Events = new Map();
  const errors = new Map<string, Error[]>();
  const reasons: StopReason[] = [];
  const start = (id: string, extra: { priority?: number } = {}) => {
    const machine: Machine = sim.machine();
    const list: Error[] = [];
    errors.set(id, list);
    const started = work(id);
    const callbacks: LeaderCallbacks = {
      onStartedLeading: (signal, term) => {
        note(sim, events, `${id} started`);
        return started(signal, term);
      },
      onStoppedLeading: async ({ reason }) => {
        reasons.push(reason);
        note(sim, events, `${id} stopped`);
        await (Number.isFinite(flushMs) ? machine.clock.sleep(flushMs) : new Promise(() => undefined));
        note(sim, events, `${id} flushed`);
      },
    };
    const e = sim.elector(id, { leaseName: L, ...CLIENT_GO, callbacks }, { machine, errors: list, ...extra });
    void e.done.then(() => note(sim, events, `${id} resolved`));
    return e;
  };
  const es = ['a', 'b', 'c'].map((id) => start(id));
  const leader = await sim.until('a leader', () => leaders(es)[0], 120_000);
  const held = await sim.until('a successor named', async () => (await sim.leases.read(L)).item?.successor, 120_000);
  const successor = es.find((e) => e.elector.options.identity === held)!;
  const id = (e: SimElector) => e.elector.options.identity;
  return { sim, es, leader, successor, events, reasons, id, start, errors: (e: SimElector) => errors.get(id(e))! };
}

/** When `by` wrote the lease handed to (or taken by) `heir` after `from`. */
const handedAt = (sim: Sim, by: SimElector, heir: string, from: number) => sim.leaseWrites.find((w) => w.at > from && w.by === by.machine.name && w.item?.['holderIdentity'] === heir)?.at;

describe('an async onStoppedLeading, a leader cancelled (SIGTERM)', () => {
  it('a flush of 1 s: the hand-over is written, the heir leads and run() resolves only once it has settled; nothing is told', async () => {
    const { sim, leader, successor, events, id, errors } = await flushing(1_000);
    await sim.run(3_000);
    const from = sim.clock.monotonic();
    leader.controller.abort();
    await sim.settle(leader.done, 'run() to resolve', 60_000);
    await sim.until('the heir leads', () => successor.elector.isLeader(), 30_000);
    await sim.run(2_000);
    const a = id(leader);
    const b = id(successor);
    const flushed = first(events, `${a} flushed`);
    expect(flushed - first(events, `${a} stopped`)).toBe(1_000);
    // before: a stopped 5377, a run() resolved 5393, b started 5400, a flushed 6377
    expect(first(events, `${a} resolved`)).toBeGreaterThanOrEqual(flushed);
    expect(first(events, `${b} started`)).toBeGreaterThanOrEqual(flushed);
    expect(handedAt(sim, leader, b, from)).toBeGreaterThanOrEqual(flushed); // handed over, after it
    expect(told(errors(leader))).toEqual([]);
  });

  it('one that never settles: the hand-over waits until the term\'s renew deadline at most, then goes on; onError is told once; run() resolves', async () => {
    const { sim, leader, successor, events, id, errors } = await flushing(Infinity);
    await sim.run(3_000);
    const from = sim.clock.monotonic();
    leader.controller.abort();
    await sim.settle(leader.done, 'run() to resolve', 60_000);
    await sim.until('the heir leads', () => successor.elector.isLeader(), 30_000);
    const a = id(leader);
    const stopped = first(events, `${a} stopped`);
    expect(events.get(`${a} flushed`)).toBeUndefined();
    // its renew deadline is at most renewDeadlineMs after the abort (its last renewal was before it)
    const handed = handedAt(sim, leader, id(successor), from)!;
    expect(handed).toBeGreaterThan(stopped);
    expect(handed).toBeLessThanOrEqual(from + CLIENT_GO.renewDeadlineMs + 100);
    const late = told(errors(leader));
    expect(late).toHaveLength(1); // before: none, nothing waited
    expect(late[0]!.message).toMatch(new RegExp(`^LeaderElector "${a}" of lease "job": onStoppedLeading \\(reason cancelled, term with fencing token \\d+\\) did not settle within \\d+ ms \\(the term's renew deadline\\): its hand-over or release of the term, and run\\(\\), went on without it`));
  });
});

describe('an async onStoppedLeading, then DynamoDB out of reach', () => {
  it("its wait is counted in the stop's wait on DynamoDB: run() resolves STOP_BUDGET_MS after the callback began, not after it settled (a review: with the heir's 15 s, uncounted, a stop took 35 s)", async () => {
    const { sim, leader, events, id, errors } = await flushing(3_000);
    await sim.run(3_000);
    const a = id(leader);
    // DynamoDB black-holed as the callback begins: the hand-over, the withdrawal and the release wait on it after the callback
    const at = () => events.get(`${a} stopped`);
    leader.controller.abort();
    await sim.until('it stopped', () => at() !== undefined, 30_000);
    leader.machine.swallow = () => true;
    await sim.settle(leader.done, 'run() to resolve', 60_000);
    const began = first(events, `${a} stopped`);
    const resolved = first(events, `${a} resolved`);
    // the callback's 3 s and the stop's requests share the stop's 10 s (before: 10 s after it settled, 13 s)
    expect(resolved - began).toBeLessThanOrEqual(STOP_BUDGET_MS);
    expect(resolved - began).toBeGreaterThanOrEqual(STOP_BUDGET_MS - 1_000);
    expect(errors(leader).filter((e) => /its stop left undone/.test(e.message))).toHaveLength(1);
    expect(told(errors(leader))).toEqual([]);
  });
});

describe('an async onStoppedLeading on a step-down that is not a stop', () => {
  it('preempted (an operator pins a better candidate): the hand-over to it waits for it (1 s)', async () => {
    const { sim, leader, events, id, reasons, start } = await flushing(1_000);
    await sim.run(3_000);
    const from = sim.clock.monotonic();
    const pinned = start('d', { priority: 10 });
    await sim.until('it yielded', () => reasons.includes('preempted'), 60_000);
    await sim.until('the pinned one leads', () => pinned.elector.isLeader(), 30_000);
    await sim.run(2_000);
    const flushed = first(events, `${id(leader)} flushed`);
    expect(first(events, 'd started')).toBeGreaterThanOrEqual(flushed); // before: 1 s before it
    expect(handedAt(sim, leader, 'd', from)).toBeGreaterThanOrEqual(flushed);
  });

  it('workFailed: the hand-over to the successor waits for it (1 s), so the successor never leads before it settled', async () => {
    // each term's work runs until its signal aborts, or fails when the test says (fail)
    const failWork = new Map<string, (e: Error) => void>();
    const { sim, leader, successor, events, id, reasons } = await flushing(1_000, (who) => (signal) =>
      new Promise<void>((resolve, reject) => {
        failWork.set(who, reject);
        signal.addEventListener('abort', () => resolve(), { once: true });
      }),
    );
    await sim.run(3_000);
    const from = sim.clock.monotonic();
    failWork.get(id(leader))!(new Error('work failed'));
    await sim.until('it stepped down', () => reasons.includes('workFailed'), 10_000);
    await sim.until('the heir leads', () => successor.elector.isLeader(), 30_000);
    await sim.run(2_000);
    const flushed = first(events, `${id(leader)} flushed`);
    expect(first(events, `${id(successor)} started`)).toBeGreaterThanOrEqual(flushed); // before: 1 s before it
    expect(handedAt(sim, leader, id(successor), from)).toBeGreaterThanOrEqual(flushed);
  });
});

describe('an async onStoppedLeading where nothing is written after it (renewDeadline, deposed)', () => {
  it('renewDeadline (DynamoDB out of reach): the elector goes on following while it runs (8 s), and run(), cancelled meanwhile, resolves only once it settled', async () => {
    const sim = await Sim.create({ config: CONFIG });
    const events: Events = new Map();
    const errors: Error[] = [];
    const machine = sim.machine();
    const callbacks: LeaderCallbacks = {
      onStartedLeading: () => void note(sim, events, 'started'),
      onStoppedLeading: async ({ reason }) => {
        note(sim, events, `stopped ${reason}`);
        await machine.clock.sleep(8_000);
        note(sim, events, 'flushed');
      },
    };
    const e = sim.elector('a', { leaseName: L, ...CLIENT_GO, mode: 'NoCoordination', callbacks }, { machine, errors });
    void e.done.then(() => note(sim, events, 'resolved'));
    await sim.until('it leads', () => e.elector.isLeader(), 60_000);
    machine.swallow = () => true;
    await sim.until('it stopped at its renew deadline', () => events.has('stopped renewDeadline'), 2 * CLIENT_GO.renewDeadlineMs);
    machine.swallow = undefined;
    const back = sim.clock.monotonic();
    await sim.run(7_000);
    expect(events.has('flushed')).toBe(false);
    // its follower's reads go on while the callback runs, answered: nothing holds its loop
    expect(machine.sent.filter((r) => r.at > back && r.ok).length).toBeGreaterThan(0);
    e.controller.abort();
    await sim.settle(e.done, 'run() to resolve', 60_000);
    await sim.run(2_000);
    expect(first(events, 'resolved')).toBeGreaterThanOrEqual(first(events, 'flushed')); // before: 2 s before it
    expect(told(errors).filter((x) => /reason renewDeadline/.test(x.message))).toEqual([]);
    // (a term it took again once DynamoDB answered, stopped by the cancel: its 8 s callback outlasts the stop's 10 s less the 3 s kept for its writes, told)
    expect(told(errors).every((x) => /reason cancelled, .* did not settle within \d+ ms \(the stop's 10 s on DynamoDB, less 3 s kept for its writes\)/.test(x.message))).toBe(true);
  });
});

describe('an async onStoppedLeading after the wait for the heir (a review of this change)', () => {
  it('a 60 s lease, a 9 s flush, DynamoDB black-holed as it returns: run() resolves within HEIR_WAIT_MAX_MS and the stop\'s 10 s, inside the 30 s before SIGKILL (before: 34 s)', async () => {
    const LONG = { leaseDurationMs: 60_000, renewDeadlineMs: 40_000, retryPeriodMs: 2_000 } as const;
    const sim = await Sim.create({ config: CONFIG });
    sim.coordinator({ tickEveryMs: 1_000 });
    const es = ['a', 'b', 'c'].map((id) => {
      const machine: Machine = sim.machine();
      const callbacks: LeaderCallbacks = {
        onStartedLeading: () => undefined,
        onStoppedLeading: async () => {
          await machine.clock.sleep(9_000);
          machine.swallow = () => true;
        },
      };
      return sim.elector(id, { leaseName: L, ...CLIENT_GO, ...LONG, callbacks }, { machine });
    });
    const leader = await sim.until('a leader', () => leaders(es)[0], 120_000);
    await sim.until('a successor named', async () => (await sim.leases.read(L)).item?.successor, 120_000);
    const renewals = () => leader.machine.sent.filter((r) => r.ok && onLeases(sim, r) && r.operation === 'UpdateItem').length;
    await sim.run(3 * leader.elector.renewIntervalMs);
    const n = renewals();
    await sim.until('a renewal', () => renewals() > n, 2 * leader.elector.renewIntervalMs);
    await sim.run(1_000); // just after a renewal: it leads on for its heir HEIR_WAIT_MAX_MS
    const from = sim.clock.monotonic();
    leader.controller.abort();
    await sim.settle(leader.done, 'run() to resolve', 120_000);
    expect(sim.clock.monotonic() - from).toBeLessThanOrEqual(HEIR_WAIT_MAX_MS + STOP_BUDGET_MS);
  });
});

describe("an async onStoppedLeading slower than the stop's wait (a review of this change)", () => {
  /** Coordinated electors on 60 s leases whose onStoppedLeading takes `flushMs`; `failAt`: each one's work rejects that long after the abort. */
  async function slowFlush(flushMs: number, failAt?: number) {
    const LONG = { leaseDurationMs: 60_000, renewDeadlineMs: 40_000, retryPeriodMs: 2_000 } as const;
    const sim = await Sim.create({ config: CONFIG });
    sim.coordinator({ tickEveryMs: 1_000 });
    const controllers = new Map<string, AbortController>();
    const es = ['a', 'b', 'c'].map((id) => {
      const machine: Machine = sim.machine();
      const callbacks: LeaderCallbacks = {
        onStartedLeading: async (signal) => {
          await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
        },
        onStoppedLeading: () => machine.clock.sleep(flushMs),
      };
      if (failAt !== undefined) {
        // the app's own pool closed at the SIGTERM: its work rejects while the leader leads on for its heir
        const sigterm = new AbortController();
        controllers.set(id, sigterm);
        // and DynamoDB out of reach from then on
        callbacks.onStartedLeading = () =>
          new Promise<void>((_, reject) =>
            sigterm.signal.addEventListener('abort', () =>
              void machine.clock.sleep(failAt).then(() => {
                machine.swallow = () => true;
                reject(new Error('pool closed'));
              }),
            ),
          );
      }
      return sim.elector(id, { leaseName: L, ...CLIENT_GO, ...LONG, callbacks }, { machine });
    });
    const leader = await sim.until('a leader', () => leaders(es)[0], 120_000);
    const heir = await sim.until('a successor named', async () => (await sim.leases.read(L)).item?.successor, 120_000);
    const renewals = () => leader.machine.sent.filter((r) => r.ok && onLeases(sim, r) && r.operation === 'UpdateItem').length;
    await sim.run(3 * leader.elector.renewIntervalMs);
    const n = renewals();
    await sim.until('a renewal', () => renewals() > n, 2 * leader.elector.renewIntervalMs);
    await sim.run(1_000);
    const from = sim.clock.monotonic();
    leader.controller.abort();
    controllers.get(leader.elector.options.identity)?.abort();
    await sim.settle(leader.done, 'run() to resolve', 120_000);
    const took = sim.clock.monotonic() - from;
    const handed = sim.leaseWrites.find((w) => w.at > from && w.by === leader.machine.name && w.item?.['holderIdentity'] === heir);
    return { took, handed, from };
  }

  it('a 20 s flush on a healthy DynamoDB: it is given up STOP_WRITES_MS before the stop\'s 10 s end, and the term is handed over (before: unsent, the heir waiting out the 60 s term)', async () => {
    const { took, handed } = await slowFlush(20_000);
    expect(handed).toBeDefined();
    expect(took).toBeLessThanOrEqual(HEIR_WAIT_MAX_MS + STOP_BUDGET_MS);
  });

  it("the work failing during the wait for the heir (a step-down while the stop is under way), DynamoDB then out of reach: the callback's wait is counted in the stop, run() within HEIR_WAIT_MAX_MS and its 10 s (before: 35 s)", async () => {
    const { took } = await slowFlush(60_000, 14_500);
    expect(took).toBeLessThanOrEqual(HEIR_WAIT_MAX_MS + STOP_BUDGET_MS);
  });
});
