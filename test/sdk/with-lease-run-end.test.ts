/**
 * How a withLease run ends, on simulated time (sim/harness.ts): the function's signal aborts once
 * the run is over, in every outcome (work it left running stops before the next run holds the
 * lease); a `complete()` that landed before the function threw has marked the window; and a write
 * refused by an item's own fence, while the run still holds its term, is told as that.
 */
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { FencingError } from '../../lib/sdk/fencing.js';
import { LeaseLostError, withLease, type WithLeaseOptions } from '../../lib/sdk/with-lease.js';
import { LATENCY_MS, Sim, type Machine } from '../../sim/harness.js';
import { FAST } from './harness.js';

const L = 'nightly';
const RTT_MS = 2 * LATENCY_MS;
const opts = (sim: Sim, m: Machine, identity: string, extra: Partial<WithLeaseOptions> = {}): WithLeaseOptions => ({ client: m.client, clock: m.clock, tables: sim.names, identity, mode: 'NoCoordination', platform: 'none', ...FAST, onError: () => undefined, ...extra });

describe("the function's signal once the run is over", () => {
  it('fn rejects through Promise.all while a task beside it watches its signal: the signal aborts as the lease is given up (LeaseLostError, the error its cause), and the task never works while the next run holds the lease', async () => {
    const sim = await Sim.create();
    const a = sim.machine();
    let seen: { signal: AbortSignal; held: () => boolean } | undefined;
    let steps = 0;
    let whileBHeld = 0;
    let bHolds = false;
    // an unfenced side effect each step (an email, an API call), for as long as the signal lets it
    const beside = async (signal: AbortSignal) => {
      while (!signal.aborted && steps < 200) {
        steps++;
        if (bHolds) whileBHeld++;
        await a.clock.sleep(50);
      }
    };
    const failed = new Error('part one failed');
    const ra = await sim.settle(withLease(L, async (signal, term) => {
      seen = { signal, held: () => term.held() };
      await Promise.all([a.clock.sleep(100).then(() => Promise.reject(failed)), beside(signal)]);
    }, opts(sim, a, 'a')).catch((e: unknown) => e), 'a');
    expect(ra).toBe(failed);
    expect(seen!.held()).toBe(false);
    // it was false for good: held() and signal.aborted disagreed
    expect(seen!.signal.aborted).toBe(true);
    const reason = seen!.signal.reason as LeaseLostError;
    expect(reason).toBeInstanceOf(LeaseLostError);
    expect(reason).toMatchObject({ reason: 'cancelled', leaseName: L, cause: failed });
    expect(reason.message).toMatch(/was given up by withLease .*the run is over, the call rejecting with Error: part one failed/);
    const rb = await sim.settle(withLease(L, async () => {
      bHolds = true;
      await sim.clock.sleep(2_000);
      bHolds = false;
      return 'b ran';
    }, opts(sim, sim.machine(), 'b')), 'b');
    expect(rb).toMatchObject({ status: 'ran', value: 'b ran' });
    expect(whileBHeld).toBe(0); // it was 40 of 43
  });

  it('fn returns, a task it started still watching its signal: the signal aborts before the call resolves (no cause)', async () => {
    const sim = await Sim.create();
    const a = sim.machine();
    let signalOf: AbortSignal | undefined;
    let stoppedAt: number | undefined;
    const r = await sim.settle(withLease(L, (signal) => {
      signalOf = signal;
      void (async () => {
        while (!signal.aborted) await a.clock.sleep(10);
        stoppedAt = sim.elapsed;
      })();
      return 'done';
    }, opts(sim, a, 'a')), 'a');
    expect(r).toMatchObject({ status: 'ran', value: 'done' });
    expect(signalOf!.aborted).toBe(true);
    expect(signalOf!.reason).toMatchObject({ name: 'LeaseLostError', reason: 'cancelled', message: expect.stringMatching(/the run is over, the function having returned/) as unknown });
    expect((signalOf!.reason as Error).cause).toBeUndefined();
    await sim.until('the task to stop', () => stoppedAt !== undefined);
  });

  it("the caller's cancel came first: the signal keeps the cancel's reason", async () => {
    const sim = await Sim.create();
    const a = sim.machine();
    const cancel = new AbortController();
    let signalOf: AbortSignal | undefined;
    const r = await sim.settle(withLease(L, (signal) => {
      signalOf = signal;
      cancel.abort(new Error('out of time'));
      return 'done';
    }, opts(sim, a, 'a', { signal: cancel.signal })), 'a');
    expect(r).toMatchObject({ status: 'ran' });
    expect(signalOf!.reason).toMatchObject({ message: 'out of time' });
  });
});

describe('a complete() that landed, then fn threw', () => {
  it('the call rejects with fn’s error and the window is marked: the retry skips it (as documented now; it said the window stays open)', async () => {
    const sim = await Sim.create();
    const failed = new Error('post-processing failed');
    const r1 = await sim.settle(withLease(L, async (_s, term) => {
      await term.complete();
      throw failed;
    }, opts(sim, sim.machine(), 'a', { runOnce: { window: 'w1' } })).catch((e: unknown) => e), 'a');
    expect(r1).toBe(failed);
    const r2 = await sim.settle(withLease(L, () => 'retry ran', opts(sim, sim.machine(), 'b', { runOnce: { window: 'w1' } })), 'b');
    expect(r2).toMatchObject({ status: 'skipped', window: 'w1', run: { holder: 'a' } });
  });
});

describe("a fencedItemWrite refused by the item's own fence while the run still holds its term", () => {
  it('an item carrying a higher token of another lease: the call rejects with LeaseLostError saying the item’s fence refused the write, not "another holder took the lease"', async () => {
    const sim = await Sim.create();
    const a = sim.machine();
    const item = { TableName: sim.names.candidates, Item: marshall({ leaseName: 'job-output', name: 'x', by: 'a' }) };
    let heldAfter: boolean | undefined;
    let refusal: unknown;
    const p = withLease(L, async (_signal, term) => {
      // the item is also written under another lease, whose token is higher (the documented misuse)
      await sim.client.send(new PutItemCommand({ TableName: sim.names.candidates, Item: marshall({ leaseName: 'job-output', name: 'x', by: 'other-lease', fence: term.fencingToken + 1_000_000 }) }));
      refusal = await term.fencedItemWrite({ put: item }).catch((e: unknown) => e);
      // the elector read its lease at once: the term is still this run's
      await a.clock.sleep(4 * RTT_MS);
      heldAfter = term.held();
      return 'caught';
    }, opts(sim, a, 'a', { runOnce: { window: 'w' } }));
    const r = await sim.settle(p, 'run', 60_000).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(FencingError);
    expect(heldAfter).toBe(true);
    expect(r).toBeInstanceOf(LeaseLostError);
    expect(r).toMatchObject({ reason: 'deposed', cause: refusal });
    expect((r as Error).message).toMatch(/a fencedItemWrite of the function was refused by the item's own fence .*the run-once window w is not marked.*another lease \(tokens of different leases do not compare/);
    expect((r as Error).message).not.toMatch(/another holder took the lease/);
  });
});
