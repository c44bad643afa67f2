/**
 * `conclave describe lease` says of each candidate what the coordinator knows of it, and names as
 * Best candidate the one it would pick (a new user's trial: a `kill -9`'d worker was listed "live"
 * and as Best candidate for the 30 minutes its row stays live, while the coordinator passed it over:
 * the last holder not seen since the term began, isDeparted, or one that let its ping pass,
 * passedOver). Rows on DynamoDB Local, read at a clock the test sets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideWithSuccession } from '../../lib/election/successor.js';
import { electionConfig } from '../../lib/schemas/config.js';
import { manualClock } from '../../lib/clock.js';
import { MIN, NOW, SEC, cand, lease } from '../fixtures.js';
import { cliHarness, type CliHarness } from './harness.js';

let h: CliHarness;
beforeAll(async () => {
  h = await cliHarness('cli-passed-over');
});
afterAll(() => h.t.drop());

const L = 'after-kill';
const state = (out: string, name: string) => out.split('\n').find((l) => new RegExp(`^ {2}[\\d-]+ +${name} `).test(l))?.trim().split(/\s{3,}/).at(-1);
const field = (out: string, f: string) => out.split('\n').find((l) => l.startsWith(`${f}:`))?.replace(/^[^:]+:\s+/, '');

describe('describe lease after a kill -9', () => {
  it('the killed last holder and a candidate that let its ping pass: passed over (may be dead), not live, and neither is the Best candidate (the holder is, as decide() judges)', async () => {
    // a (the oldest emulation) held the lease until it was killed; b took it a minute ago. c let a
    // ping pass 10 s ago; d is fresh.
    const held = lease('b', { name: L, acquireTime: NOW - MIN, renewTime: NOW, lastHolderIdentity: 'a' });
    const rows = [
      cand('a', '1.29.0', '1.29.0', { leaseName: L, renewTime: NOW - 3 * MIN }),
      cand('b', '1.30.0', '1.30.0', { leaseName: L }),
      cand('c', '1.29.0', '1.30.0', { leaseName: L, renewTime: NOW - 20 * SEC, pingTime: NOW - 10 * SEC, ackedPingTime: 0 }),
      cand('d', '1.31.0', '1.31.0', { leaseName: L }),
    ];
    await h.seedLease(held);
    for (const c of rows) await h.seedCandidate(c);
    const r = await h.run(['describe', 'lease', L], { clock: manualClock(NOW) });
    expect(r.code, r.err).toBe(0);
    // before: "live (renewed 3m ago)", and "Best candidate: a: older emulation version than b"
    expect(state(r.out, 'a')).toBe('last holder, not seen alive since this term began (renewed 3m ago): passed over (may be dead) until it renews or answers a ping');
    // before: "ignored its last ping: not preferred until it renews or answers when asked again, in 50s"
    expect(state(r.out, 'c')).toBe(`missed its ping at ${new Date(NOW - 10 * SEC).toISOString()} (10s ago): passed over (may be dead) until it renews or answers when asked again, in 50s`);
    expect(state(r.out, 'b')).toBe('holder, fresh');
    expect(state(r.out, 'd')).toBe('fresh');
    expect(field(r.out, 'Best candidate')).toBe('b: older emulation version than d (1.30.0 < 1.31.0)');
    // the coordinator's own decision keeps b, the best it would pick: no preemption for a nor c
    expect(decideWithSuccession(L, held, rows, NOW, electionConfig())).toMatchObject({ kind: 'setSuccessor', successor: { name: 'd' }, secondSuccessor: { name: 'c' } });
    expect(field(r.out, 'Next step')).toBe('designate d successor: it takes the lease at once if b stops renewing or releases; c second successor: it takes it a moment later if d has not');
  });
});
