/**
 * A hand-off split into its parts (bench/handoff-trace.ts): the parts follow one another and add up
 * to SIGTERM → new leader, whoever woke the successor; a step not traced is left out, not invented.
 */
import { describe, expect, it } from 'vitest';
import { describeParts, handoffParts, type TraceLine } from '../../bench/handoff-trace.js';

const T0 = 1_000_000;
const line = (identity: string, at: number, step: TraceLine['step'], extra: Partial<TraceLine> = {}): TraceLine => ({ event: 'trace', identity, at: T0 + at, step, ...extra });
const ddb = (identity: string, command: string, table: string, sent: number, done: number, failed?: string): TraceLine =>
  line(identity, done, 'ddb', { command, table, sent: T0 + sent, done: T0 + done, ...(failed ? { failed } : {}) });

const leader = [
  line('w1', -500, 'wakeReceived', { by: 'stream' }), // before the SIGTERM: not this hand-off's
  line('w1', 1, 'sigterm'),
  ddb('w1', 'GetItem', 'leases', 2, 9),
  ddb('w1', 'GetItem', 'candidates', 10, 16),
  ddb('w1', 'UpdateItem', 'leases', 17, 25),
  line('w1', 25, 'wakeSent'),
  ddb('w1', 'DeleteItem', 'candidates', 40, 48),
];

describe('hand-off parts', () => {
  it('the leader wrote and woke, the successor read and confirmed: every part, adding up to the whole', () => {
    const successor = [line('w2', 27, 'wakeReceived', { by: 'worker' }), ddb('w2', 'GetItem', 'leases', 27, 33), ddb('w2', 'UpdateItem', 'leases', 34, 41), line('w2', 60, 'wakeReceived', { by: 'stream' })];
    const h = handoffParts(T0, T0 + 43, leader, successor)!;
    expect(h.parts).toEqual({ signal: 1, prepare: 16, write: 8, wake: 2, read: 6, take: 8, started: 2 });
    expect(Object.values(h.parts).reduce((a, b) => a + b, 0)).toBe(43);
    expect(h).toMatchObject({ wokenBy: 'worker', leaderReads: 2, successorWrote: true });
    expect(h.timeline[0]).toBe('L sigterm 1');
    expect(h.timeline).toContain('S wakeReceived by worker 27');
  });

  it('a failed write is not the hand-over, and a successor that found it by polling has no wake part', () => {
    const withFailure = [...leader.slice(0, 4), ddb('w1', 'UpdateItem', 'leases', 17, 20, 'ConditionalCheckFailedException'), ddb('w1', 'UpdateItem', 'leases', 21, 29)];
    const successor = [ddb('w2', 'GetItem', 'leases', 200, 206), ddb('w2', 'UpdateItem', 'leases', 207, 214)];
    const h = handoffParts(T0, T0 + 215, withFailure, successor)!;
    expect(h.parts).toEqual({ signal: 1, prepare: 20, write: 8, read: 177, take: 8, started: 1 });
    expect(h.wokenBy).toBe('none');
  });

  it('a poll that saw the hand-over before any wake came: the read it acted on, woken by nobody', () => {
    const successor = [ddb('w2', 'GetItem', 'leases', 24, 30), ddb('w2', 'UpdateItem', 'leases', 31, 38), line('w2', 33, 'wakeReceived', { by: 'stream' })];
    const h = handoffParts(T0, T0 + 40, leader, successor)!;
    expect(h.parts).toEqual({ signal: 1, prepare: 16, write: 8, read: 5, take: 8, started: 2 });
    expect(h.wokenBy).toBe('none');
  });

  it('a wake published beside the write (cut 3): the read it sent lands after the write, the wake part is 0 and the parts still add up', () => {
    const early = [...leader.slice(0, 4), line('w1', 17, 'wakeSent'), ddb('w1', 'UpdateItem', 'leases', 17, 25), line('w1', 25, 'wakeSent')];
    const successor = [line('w2', 20, 'wakeReceived', { by: 'worker' }), ddb('w2', 'GetItem', 'leases', 20, 28), line('w2', 27, 'wakeReceived', { by: 'worker' })];
    const h = handoffParts(T0, T0 + 30, early, successor)!;
    expect(h.parts).toEqual({ signal: 1, prepare: 16, write: 8, wake: 0, read: 3, started: 2 });
    expect(Object.values(h.parts).reduce((a, b) => a + b, 0)).toBe(30);
    expect(h).toMatchObject({ wokenBy: 'worker', wokenEarly: true, successorWrote: false });
    expect(describeParts([h]).at(-1)).toBe("woken by the leader's wake in 1 (before its write was answered in 1), the stream's in 0, by a poll in 0 of 1 runs");
  });

  it('an early wake whose read came before the write landed: the read acted on is the one the wake after the write sent', () => {
    const early = [...leader.slice(0, 4), line('w1', 17, 'wakeSent'), ddb('w1', 'UpdateItem', 'leases', 17, 25), line('w1', 25, 'wakeSent')];
    const successor = [line('w2', 18, 'wakeReceived', { by: 'worker' }), ddb('w2', 'GetItem', 'leases', 18, 22), line('w2', 27, 'wakeReceived', { by: 'worker' }), ddb('w2', 'GetItem', 'leases', 27, 33)];
    const h = handoffParts(T0, T0 + 35, early, successor)!;
    expect(h.parts).toEqual({ signal: 1, prepare: 16, write: 8, wake: 2, read: 6, started: 2 });
    expect(h.wokenEarly).toBe(false);
  });

  it('no signal traced: nothing to split', () => {
    expect(handoffParts(T0, T0 + 50, [], [])).toBeUndefined();
  });

  it('medians and p99 per part, and who woke the successor', () => {
    const successor = [line('w2', 27, 'wakeReceived', { by: 'worker' }), ddb('w2', 'GetItem', 'leases', 27, 33), ddb('w2', 'UpdateItem', 'leases', 34, 41)];
    const h = handoffParts(T0, T0 + 43, leader, successor)!;
    const lines = describeParts([h, h]);
    expect(lines[0]).toBe('signal   median 1 ms, p99 1 ms');
    expect(lines.at(-1)).toBe("woken by the leader's wake in 2, the stream's in 0, by a poll in 0 of 2 runs");
  });
});
