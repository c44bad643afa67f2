/**
 * A leader's work whose fencedItemWrite is refused by the item's own fence while the lease still
 * names its term: the item carries a higher token no read of this lease shows (another lease's, or
 * an operator's). README's worker rethrows the FencingError, and the term ends (deposed) as for any
 * refusal of its own; but this one is told to onError, once per term, saying what to do (fence an
 * item by one lease only), and the elector takes the lease again only after a failed start's
 * backoff (a review, 2026-12-07, thirteenth: it took the lease again a retry period later, each new
 * term's work meeting the same item, in a silent loop). On simulated time, and on DynamoDB Local.
 */
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaderElector, LeaderWorkError, type LeaderElectorOptions } from '../../lib/sdk/elector.js';
import { FencingError } from '../../lib/sdk/fencing.js';
import type { TableNames } from '../../lib/schemas/config.js';
import { Sim } from '../../sim/harness.js';
import { testTables, type TestTables } from '../support.js';
import { CLIENT_GO, L } from './fault-group.js';
import { FAST, waitFor } from './harness.js';

/** A token above any term's (a time in microseconds): another lease's, or one an operator made up. */
const FOREIGN_TOKEN = 9e15;
const TOLD = /LeaderElector "a" of lease ".*": its work \(onStartedLeading, term with fencing token (\d+)\) stopped on a fencedItemWrite refused by the item's own fence \(.*the item was written with fencing token 9000000000000000.*\), while the lease, as last read, was still in this term: .*another lease .*Fence each item by one lease only/;

/** README's worker: writes its item fenced by its term, and stops (rethrows) when refused. */
const worker = (names: TableNames, starts: { token: number; at: number }[], now: () => number): LeaderElectorOptions['callbacks'] => ({
  async onStartedLeading(signal, term) {
    starts.push({ token: term.fencingToken, at: now() });
    await term.fencedItemWrite({ put: { TableName: names.candidates, Item: marshall({ leaseName: 'app', name: 'x', by: term.fencingToken }) } }).catch((e: unknown) => {
      if (e instanceof FencingError) throw e; // the term is over: stop
    });
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  },
});
const foreignItem = (names: TableNames) => new PutItemCommand({ TableName: names.candidates, Item: marshall({ leaseName: 'app', name: 'x', fence: FOREIGN_TOKEN }) });

describe("a fencedItemWrite refused by the item's own fence while the lease names the term", () => {
  it('on simulated time: each term ends deposed and is told once, naming its token; the retakes back off (a retry period, doubling to four)', async () => {
    const sim = await Sim.create({});
    const errors: Error[] = [];
    const stopped: string[] = [];
    const starts: { token: number; at: number }[] = [];
    await sim.client.send(foreignItem(sim.names));
    const e = sim.elector('a', { leaseName: L, mode: 'NoCoordination', ...CLIENT_GO, callbacks: { ...worker(sim.names, starts, () => sim.clock.monotonic()), onStoppedLeading: ({ reason }) => void stopped.push(reason) } }, { errors });
    await sim.until('five terms started', () => starts.length >= 5, 120_000);
    const told = errors.filter((x) => TOLD.test(x.message));
    // before the fix: nothing told, and a term every retry period (2 s)
    expect(told.map((x) => Number(TOLD.exec(x.message)![1]))).toEqual(starts.slice(0, 4).map((s) => s.token));
    expect(told.every((x) => x.cause instanceof FencingError)).toBe(true);
    expect(errors.filter((x) => x instanceof LeaderWorkError)).toEqual([]);
    expect(stopped.slice(0, 4)).toEqual(['deposed', 'deposed', 'deposed', 'deposed']);
    const gaps = starts.slice(1).map((s, i) => s.at - starts[i]!.at);
    expect(gaps[0]).toBeGreaterThanOrEqual(CLIENT_GO.retryPeriodMs);
    expect(gaps[1]).toBeGreaterThanOrEqual(2 * CLIENT_GO.retryPeriodMs);
    expect(gaps[2]).toBeGreaterThanOrEqual(4 * CLIENT_GO.retryPeriodMs);
    expect(gaps[3]).toBeGreaterThanOrEqual(4 * CLIENT_GO.retryPeriodMs);
    await e.stop();
  });

  describe('on DynamoDB Local', () => {
    let t: TestTables;
    beforeAll(async () => {
      t = await testTables('item-fence-above');
    });
    afterAll(() => t?.drop());

    it("the first term's end is told before the next term starts, once per term, the item's fence and the fix named", async () => {
      await t.client.send(foreignItem(t.names));
      const errors: Error[] = [];
      const starts: { token: number; at: number }[] = [];
      const elector = new LeaderElector({ leaseName: 'item-fence', identity: 'a', client: t.client, tables: t.names, mode: 'NoCoordination', platform: 'none', ...FAST, onError: (x) => void errors.push(x), callbacks: worker(t.names, starts, () => 0) });
      const stop = new AbortController();
      const running = elector.run(stop.signal);
      await waitFor('a second term started', () => starts.length >= 2);
      stop.abort();
      await running;
      const told = errors.filter((x) => TOLD.test(x.message));
      // before the fix: []
      expect(told.length).toBeGreaterThanOrEqual(1);
      expect(told.map((x) => Number(TOLD.exec(x.message)![1]))).toEqual(starts.slice(0, told.length).map((s) => s.token));
      expect(told.length).toBeLessThanOrEqual(starts.length);
      expect(errors.filter((x) => x instanceof LeaderWorkError)).toEqual([]);
    });
  });
});
