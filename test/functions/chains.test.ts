/**
 * The timer chains a process keeps (lib/functions/chains.ts): a whole fleet's holders going silent
 * at once gives every lease a term-end chain, and each send used to walk them all to forget those
 * whose time had passed (50,000 leases: 28 s of one tick's CPU). A send now looks only at the chains
 * due by then; which timers are sent, and when, is as before (the last test runs both side by side).
 */
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../lib/clock.js';
import type { ReconcileOutcome } from '../../lib/coordinator/reconcile.js';
import { Chains } from '../../lib/functions/chains.js';
import { afterReconcile, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import type { TermEndMessage, TimerMessage } from '../../lib/functions/timer.js';

const T0 = Date.UTC(2026, 11, 7);
const ACK_WINDOW_MS = 5_000;

describe('Chains', () => {
  it('a fleet of 20,000 chains: a send forgets those due by then, looking at those and one more, not at every chain kept (before: all 20,000 at each send)', () => {
    const chains = new Chains();
    for (let i = 0; i < 20_000; i++) chains.set(`lease-${i}`, 'k', T0 + 1_000 + i);
    chains.examined = 0;
    chains.dropDue(T0); // nothing due: the soonest alone is looked at
    expect(chains.examined).toBe(1);
    expect(chains.size).toBe(20_000);
    chains.examined = 0;
    chains.dropDue(T0 + 1_099); // 100 due
    expect(chains.examined).toBe(101);
    expect(chains.size).toBe(19_900);
    expect(chains.get('lease-99')).toBeUndefined();
    expect(chains.get('lease-100')).toEqual({ lease: 'lease-100', key: 'k', due: T0 + 1_100 });
    chains.dropDue(T0 + 21_000); // every one due: none kept
    expect(chains.size).toBe(0);
  });

  it('a chain its lease replaced: the older one\'s time passing does not forget the newer, and the newer is forgot at its own', () => {
    const chains = new Chains();
    chains.set('a', 'first', T0 + 10);
    chains.set('a', 'second', T0 + 100);
    chains.set('b', 'later', T0 + 5);
    chains.set('b', 'sooner', T0 + 1); // replaced by one due sooner
    chains.dropDue(T0 + 50);
    expect(chains.get('a')).toEqual({ lease: 'a', key: 'second', due: T0 + 100 });
    expect(chains.get('b')).toBeUndefined();
    chains.dropDue(T0 + 100);
    expect(chains.size).toBe(0);
  });

  it('one lease\'s chain replaced 10,000 times (each due further on): the replaced ones are not kept until their time, so a drop looks at a few entries, not 10,000', () => {
    const chains = new Chains();
    for (let i = 0; i < 10_000; i++) chains.set('a', `k${i}`, T0 + 1_000 + i);
    chains.examined = 0;
    chains.dropDue(T0 + 1_000_000);
    expect(chains.examined).toBeLessThanOrEqual(2 * 1 + 16 + 1);
    expect(chains.size).toBe(0);
  });
});

/** Deps whose timer queue records what it is given, as the reviewer's fleet test made them. */
function fakeDeps() {
  const sent: { message: TimerMessage | TermEndMessage; delayMs: number }[] = [];
  const d = {
    coordinator: { config: { ackWindowMs: ACK_WINDOW_MS, clockSkewMs: 1_000 } },
    timer: { schedule: async (message: TimerMessage | TermEndMessage, delayMs: number) => void sent.push({ message, delayMs }) },
    publish: async () => undefined,
    deadLetter: async () => undefined,
    ...observability('test', 'SILENT'),
  } as unknown as FunctionDeps;
  return { d, sent };
}

const silent = (lease: string, at: number, recheckAt: number) =>
  ({ lease, decision: { kind: 'leaveAlone', reason: 'leaderHealthy' }, before: undefined, after: undefined, pinged: [], invalidCandidates: [], attempts: 1, at, recheckAt }) as unknown as ReconcileOutcome;
const awaiting = (lease: string, at: number, id: string, deadline: number, awaitsStream: boolean) =>
  ({ lease, decision: { kind: 'awaitAcks', strategy: 'x', pending: [], election: { id, deadline, ...(awaitsStream ? { awaitsStream } : {}) } }, before: undefined, after: undefined, pinged: [], invalidCandidates: [], attempts: 1, at }) as unknown as ReconcileOutcome;

describe('afterReconcile: the timer chains', () => {
  it('every one of 5,000 holders silent at once: one term-end timer each; the next tick sends none (each chain goes on by itself); past the term end, a tick sends again', async () => {
    const { d, sent } = fakeDeps();
    const termEnd = T0 + 600_000;
    for (let i = 0; i < 5_000; i++) await afterReconcile(d, silent(`lease-${i}`, T0, termEnd), 'tick');
    expect(sent).toHaveLength(5_000);
    expect(sent[0]).toEqual({ message: { lease: 'lease-0', termEnd }, delayMs: 600_000 });
    for (let i = 0; i < 5_000; i++) await afterReconcile(d, silent(`lease-${i}`, T0 + 60_000, termEnd), 'tick');
    expect(sent).toHaveLength(5_000);
    for (let i = 0; i < 5_000; i++) await afterReconcile(d, silent(`lease-${i}`, termEnd, termEnd), 'tick');
    expect(sent).toHaveLength(10_000);
  });

  /**
   * The rule as it was (every chain walked at each send), here beside the real one, fed the same
   * seeded run of reconciles: term ends and elections' deadlines, ticks and landed timers, some
   * finishing out of order (`at` going back a little), on 30 leases whose chains come and go.
   */
  function reference() {
    const termEnds = new Map<string, { key: string; due: number }>();
    const deadlines = new Map<string, { key: string; due: number }>();
    const sent: { message: TimerMessage | TermEndMessage; delayMs: number }[] = [];
    const chain = (started: Map<string, { key: string; due: number }>, lease: string, key: string, due: number, at: number, reuse: boolean, message: TimerMessage | TermEndMessage, delayMs: number) => {
      if (reuse && started.get(lease)?.key === key && at < due) return;
      sent.push({ message, delayMs });
      for (const [l, c] of started) if (c.due <= at) started.delete(l);
      started.set(lease, { key, due });
    };
    return {
      sent,
      termEnd: (lease: string, at: number, termEnd: number, trigger: string) => chain(termEnds, lease, String(termEnd), termEnd, at, trigger !== 'term end', { lease, termEnd }, termEnd - at),
      election: (lease: string, at: number, id: string, deadline: number, awaitsStream: boolean, trigger: string) => {
        const dueMs = deadline - at;
        if (dueMs <= 0 && awaitsStream) return;
        chain(deadlines, lease, `${id}@${deadline}`, deadline, at, !trigger.startsWith('timer '), { lease, electionId: id, deadline }, dueMs > 0 ? dueMs : ACK_WINDOW_MS);
      },
    };
  }

  it.each([1, 2, 3])('seed %i: the same timers sent, with the same delays, as when every chain was walked at each send', async (seed) => {
    const random = seededRandom(seed);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
    const { d, sent } = fakeDeps();
    const want = reference();
    let at = T0;
    for (let step = 0; step < 4_000; step++) {
      at += Math.floor(random() * 4_000) - 1_000; // mostly on, now and then a reconcile that finished later than the next
      const lease = `lease-${Math.floor(random() * 30)}`;
      const due = T0 + pick([20, 40, 60, 80, 120, 200]) * 1_000 * (1 + Math.floor(step / 100));
      if (random() < 0.5) {
        const trigger = pick(['tick', 'term end', 'candidate stream']);
        want.termEnd(lease, at, due, trigger);
        await afterReconcile(d, silent(lease, at, due), trigger);
      } else {
        const id = pick(['e1', 'e2']);
        const awaitsStream = random() < 0.2;
        const trigger = pick(['tick', `timer ${id}`, 'lease stream']);
        want.election(lease, at, id, due, awaitsStream, trigger);
        await afterReconcile(d, awaiting(lease, at, id, due, awaitsStream), trigger);
      }
    }
    expect(want.sent.length).toBeGreaterThan(500); // (the run sends and reuses both)
    expect(want.sent.length).toBeLessThan(3_900);
    expect(sent).toEqual(want.sent);
  });
});
