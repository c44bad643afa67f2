import { describe, expect, it } from 'vitest';
import { checkHistory, type CheckInput, type CheckOptionsInput, type Violation } from '../../lib/history/checker.js';
import { HistoryRecord, LedgerEntry, historyLine, readHistory, readJsonLines, type FaultWindow } from '../../lib/history/schema.js';
import { historyFromWorkerEvents } from '../../lib/history/worker-events.js';
import { ValidationError } from '../../lib/schemas/validation.js';

/** Seconds → a Mono stamp. */
const at = (s: number) => BigInt(Math.round(s * 1e9)).toString();
const L = 'reports';
const start = (who: string, token: number, s: number, lease = L): HistoryRecord => ({ event: 'started', lease, identity: who, instance: `${who}-1`, fencingToken: token, mono: at(s), wall: 0 });
const stop = (who: string, token: number, s: number, reason = 'renewDeadline', lease = L): HistoryRecord => ({ ...start(who, token, s, lease), event: 'stopped', reason });
const write = (who: string, token: number, s: number, extra: Partial<LedgerEntry> = {}): LedgerEntry => ({ lease: L, id: `${who}#${s}`, identity: who, instance: `${who}-1`, fencingToken: token, sentMono: at(s), zombie: false, ...extra });
const pause = (who: string, from: number, to: number): FaultWindow => ({ kind: 'pause', from: at(from), to: at(to), instances: [`${who}-1`] });
const deleted = (s: number, lease = L): FaultWindow => ({ kind: 'leaseDelete', lease, from: at(s), to: at(s) });

interface Row {
  name: string;
  input: Omit<CheckInput, 'end'> & { end?: CheckInput['end'] };
  options?: CheckOptionsInput;
  want: Violation['kind'][];
}

const workFailed = (who: string, s: number): FaultWindow => ({ kind: 'workFailed', lease: L, from: at(s), to: at(s), instances: [`${who}-1`] });
const tokenMoved = (s: number): FaultWindow => ({ kind: 'tokenMoved', lease: L, from: at(s), to: at(s) });
/** A Region lost for good at `s` (as sim/regions.ts records it), its survivors serving again at `serving` (undefined: never). */
const regionLost = (s: number, serving: number | undefined = s): FaultWindow => ({ kind: 'regionLoss', from: at(s), to: at(s), detail: 'us-east-1', ...(serving !== undefined ? { servingAgainAt: at(serving) } : {}) });
const window = (kind: string, from: number, to: number): FaultWindow => ({ kind, from: at(from), to: at(to) });

const rows: Row[] = [
  {
    name: 'stuck lease: the holder’s work failed and the next term began 2 s later: clean',
    input: { history: [start('a', 1, 0), stop('a', 1, 10, 'workFailed'), start('b', 2, 12)], faults: [workFailed('a', 10)] },
    want: [],
  },
  {
    name: 'stuck lease: the holder’s work failed and it kept the lease (a zombie leader)',
    input: { history: [start('a', 1, 0)], faults: [workFailed('a', 10)] },
    want: ['stuckLease'],
  },
  {
    name: 'stuck lease: the work that failed was a frozen start-up’s whose term had ended; the holder leads on: clean (regions seed 1010)',
    input: { history: [start('a', 1, 0), start('b', 2, 8), stop('a', 1, 10)], faults: [pause('a', 2, 10), workFailed('a', 10)] },
    want: [],
  },
  {
    name: 'stuck lease: a fencing token moved under the leader, which led on',
    input: { history: [start('a', 1, 0)], faults: [tokenMoved(10)] },
    want: ['stuckLease'],
  },
  {
    name: 'stuck lease: a fencing token moved, the leader stopped and the next term began: clean',
    input: { history: [start('a', 1, 0), stop('a', 1, 15, 'deposed'), start('b', 2, 16)], faults: [tokenMoved(10)] },
    want: [],
  },
  { name: 'one leader after another, tokens rising: clean', input: { history: [start('a', 1, 0), stop('a', 1, 5), start('b', 2, 6)] }, want: [] },
  { name: 'a second leader while the first still leads', input: { history: [start('a', 1, 0), start('b', 2, 3), stop('a', 1, 5)] }, want: ['overlap'] },
  { name: 'overlap within the allowed skew', input: { history: [start('a', 1, 0), stop('a', 1, 3.05), start('b', 2, 3)] }, options: { allowedSkewMs: 100 }, want: [] },
  {
    name: 'a frozen leader that stops as soon as it wakes: forgiven (fencing has to hold)',
    input: { history: [start('a', 1, 0), start('b', 2, 8), stop('a', 1, 10.2)], faults: [pause('a', 2, 10)] },
    want: [],
  },
  {
    name: 'a frozen leader that goes on leading after it woke',
    input: { history: [start('a', 1, 0), start('b', 2, 8), stop('a', 1, 14)], faults: [pause('a', 2, 10)] },
    want: ['overlap'],
  },
  // Review fifteen: the pause forgives only the older term's holder, frozen when the overlap began.
  {
    name: 'a start-up frozen before, awake again, begins a term over a live one and stops within a second: not forgiven',
    input: { history: [start('a', 5, 5), stop('a', 5, 40), start('b', 6, 20.5), stop('b', 6, 20.9)], faults: [pause('b', 0, 20)], end: { mono: at(45) } },
    want: ['overlap'],
  },
  {
    name: 'a start-up frozen before, awake again, begins a term over an older live one: not forgiven (whatever its token)',
    input: { history: [start('b', 5, 1), stop('b', 5, 40), start('a', 6, 3.2), stop('a', 6, 3.9)], faults: [pause('a', 0, 3)], end: { mono: at(45) } },
    want: ['overlap'],
  },
  {
    name: 'a leader frozen and woken before the next term began, leading on over it: not forgiven',
    input: { history: [start('a', 1, 0), start('b', 2, 8), stop('a', 1, 8.5)], faults: [pause('a', 2, 7.9)] },
    want: ['overlap'],
  },
  {
    name: 'an operator deleted the leader’s row; it stops at its next renewal, after the next term began: forgiven (fencing has to hold)',
    input: { history: [start('a', 1, 0), start('b', 2, 8.9), stop('a', 1, 9.1)], faults: [deleted(8)] },
    want: [],
  },
  {
    name: 'an operator deleted the leader’s row and it led on past its renew deadline (10 s)',
    input: { history: [start('a', 1, 0), start('b', 2, 8.9), stop('a', 1, 18.5)], faults: [deleted(8)] },
    want: ['overlap'],
  },
  {
    name: 'a delete of another lease’s row forgives nothing',
    input: { history: [start('a', 1, 0), start('b', 2, 8.9), stop('a', 1, 9.1)], faults: [deleted(8, 'other')] },
    want: ['overlap'],
  },
  {
    name: 'a delete after the overlap began forgives nothing',
    input: { history: [start('a', 1, 0), start('b', 2, 8.9), stop('a', 1, 9.1)], faults: [deleted(9)] },
    want: ['overlap'],
  },
  { name: 'a token reused by another holder', input: { history: [start('a', 3, 0), stop('a', 3, 1), start('b', 3, 2)] }, want: ['token'] },
  { name: 'a token going down', input: { history: [start('a', 3, 0), stop('a', 3, 1), start('b', 2, 2)] }, want: ['token'] },
  {
    name: 'the same start-up leading a term again after stopping it (a fence on the token cannot tell the two apart)',
    input: { history: [start('a', 3, 0), stop('a', 3, 1), start('a', 3, 1.5)] },
    want: ['token'],
  },
  {
    name: 'the same start-up leading again in a new term, with a higher token',
    input: { history: [start('a', 3, 0), stop('a', 3, 1), start('a', 4, 1.5)] },
    want: [],
  },
  {
    name: 'a deposed leader’s write accepted after the next term began',
    input: { history: [start('a', 1, 0), stop('a', 1, 5), start('b', 2, 6)], ledger: [write('a', 1, 4), write('a', 1, 7, { zombie: true })] },
    want: ['fencing'],
  },
  {
    name: 'a write in flight across the change is not judged',
    input: { history: [start('a', 1, 0), stop('a', 1, 6), start('b', 2, 6)], ledger: [write('a', 1, 5.9)] },
    want: [],
  },
  {
    name: 'an observation of the newer term is evidence too',
    input: { history: [start('a', 1, 0), stop('a', 1, 5), start('b', 2, 9)], ledger: [write('a', 1, 7, { zombie: true })], observations: [{ lease: L, fencingToken: 2, mono: at(6) }] },
    want: ['fencing'],
  },
  // Review fifteen: a write is recorded as it is sent; one sent outside its own term got past the SDK.
  {
    name: 'a write sent after its own term’s stop line, before any newer term',
    input: { history: [start('a', 1, 0), stop('a', 1, 10), start('b', 2, 20)], ledger: [write('a', 1, 15)] },
    want: ['outsideTerm'],
  },
  {
    name: 'a write sent before its own term began',
    input: { history: [start('a', 1, 1), stop('a', 1, 10)], ledger: [write('a', 1, 0.5)], end: { mono: at(12) } },
    want: ['outsideTerm'],
  },
  {
    name: 'a write sent at its term’s stop line, and one while its term is open at the end: clean',
    input: { history: [start('a', 1, 0), stop('a', 1, 10), start('b', 2, 20)], ledger: [write('a', 1, 10), write('b', 2, 50)] },
    want: [],
  },
  {
    name: 'the harness’s zombie write after the stop, accepted while no newer term began: judged by fencing alone (clean)',
    input: { history: [start('a', 1, 0), stop('a', 1, 10), start('b', 2, 20)], ledger: [write('a', 1, 15, { zombie: true })] },
    want: [],
  },
  {
    name: 'a lease the workers stood for that nobody ever led is leaderless',
    input: { history: [start('a', 1, 0)], leases: [L, 'other'], faults: [pause('a', 1, 3)], end: { mono: at(30) } },
    options: { healMs: 10_000 },
    want: ['leaderless'],
  },
  // Review fifteen: the leaderless rule counted only after the last heal; a late 1 s fault left a
  // 280 s spell before it unjudged.
  {
    name: 'a leaderless spell far from any fault, a short unrelated fault at its end',
    input: { history: [start('a', 1, 0), stop('a', 1, 120), start('b', 2, 401)], faults: [window('partition', 100, 101), window('dynamodb', 399, 400)], end: { mono: at(600) } },
    options: { healMs: 60_000 },
    want: ['leaderlessSpell'],
  },
  {
    name: 'a leaderless spell inside a fault and the bound after its heal: clean',
    input: { history: [start('a', 1, 0), stop('a', 1, 120), start('b', 2, 230)], faults: [window('partition', 110, 170)], end: { mono: at(300) } },
    options: { healMs: 60_000 },
    want: [],
  },
  {
    name: 'a world’s start-up is excused for the bound; a lease never led after it is a spell',
    input: { history: [start('a', 1, 50)], leases: [L, 'other'], end: { mono: at(200) } },
    options: { healMs: 60_000, healedAt: at(0), startedAt: at(0) },
    want: ['leaderless', 'leaderlessSpell'],
  },
  {
    name: 'a term still open at the end of the run is no contradiction: clean',
    input: { history: [start('a', 1, 0)] },
    want: [],
  },
  {
    name: 'a write under a term its writer never began',
    input: { history: [start('a', 1, 0)], ledger: [write('a', 4, 1)] },
    want: ['strayWrite'],
  },
  {
    name: 'a live worker whose candidate row is gone, another whose row a newer start-up took',
    input: {
      history: [],
      end: {
        mono: at(10),
        live: [
          { lease: L, identity: 'a', instance: 'a-1' },
          { lease: L, identity: 'b', instance: 'b-1' },
          { lease: L, identity: 'c', instance: 'c-1' },
        ],
        candidateRows: [
          { lease: L, name: 'b', identity: 'b-2' },
          { lease: L, name: 'c', identity: 'c-1' },
        ],
      },
    },
    want: ['lostCandidate', 'lostCandidate'],
  },
  {
    name: 'no leader for longer than healMs after the last fault healed',
    input: { history: [start('a', 1, 0), stop('a', 1, 2)], faults: [pause('a', 1, 3)], end: { mono: at(30) } },
    options: { healMs: 10_000 },
    want: ['leaderless', 'leaderlessSpell'],
  },
  // Issue 38: a Region lost for good, a quiet spell, then unrelated faults. The leaderless rule counts
  // only after the run's last heal (50 s here), so the 30 s with no leader after the loss went unjudged.
  {
    name: 'leaderless after a Region loss: no leader for longer than healMs after the survivors served, later faults unrelated',
    input: { history: [start('a', 1, 0), stop('a', 1, 10, 'killed'), start('b', 2, 40)], faults: [regionLost(10), window('coordinatorDown', 45, 50)] },
    options: { healMs: 10_000 },
    want: ['leaderlessAfterLoss', 'leaderlessSpell'],
  },
  {
    name: 'leaderless after a Region loss: a leader within healMs of the loss: clean',
    input: { history: [start('a', 1, 0), stop('a', 1, 10, 'killed'), start('b', 2, 18)], faults: [regionLost(10), window('coordinatorDown', 45, 50)] },
    options: { healMs: 10_000 },
    want: [],
  },
  {
    name: 'leaderless after a Region loss: counted from when the survivors served again (no quorum until 25 s): clean',
    input: { history: [start('a', 1, 0), stop('a', 1, 10, 'killed'), start('b', 2, 33)], faults: [regionLost(10, 25), window('regionCutOff', 5, 25)] },
    options: { healMs: 10_000 },
    want: [],
  },
  {
    name: 'leaderless after a Region loss: a fault under way at the loss, and one begun before the bound was due, move the start to their end: clean',
    input: { history: [start('a', 1, 0), stop('a', 1, 10, 'killed'), start('b', 2, 43)], faults: [regionLost(10), window('coordinatorDown', 5, 22), window('pause', 30, 35)] },
    options: { healMs: 10_000 },
    want: [],
  },
  {
    name: 'leaderless after a Region loss: a leader still missing healMs after the faults under way healed',
    input: { history: [start('a', 1, 0), stop('a', 1, 10, 'killed'), start('b', 2, 47)], faults: [regionLost(10), window('coordinatorDown', 5, 22), window('pause', 30, 35), window('dynamodb', 60, 65)], end: { mono: at(80) } },
    options: { healMs: 10_000 },
    want: ['leaderlessAfterLoss'],
  },
  {
    name: 'leaderless after a Region loss: a strike heals nothing, so it does not move the start',
    input: { history: [start('a', 1, 0), stop('a', 1, 10, 'killed'), start('b', 2, 28)], faults: [regionLost(10), tokenMoved(15), window('coordinatorDown', 45, 50)] },
    options: { healMs: 10_000, stuckMs: 60_000 },
    want: ['leaderlessAfterLoss'],
  },
  {
    name: 'leaderless after a Region loss: survivors that never served again elect nobody; not judged',
    input: { history: [start('a', 1, 0), stop('a', 1, 10, 'killed')], faults: [regionLost(10, undefined)] },
    options: { healMs: 60_000 },
    want: [],
  },
  {
    name: 'leaderless after a Region loss: the run ended before the bound was due; not judged',
    input: { history: [start('a', 1, 0), stop('a', 1, 10, 'killed')], faults: [regionLost(10)], end: { mono: at(15) } },
    options: { healMs: 10_000 },
    want: [],
  },
  {
    name: 'leaderless after a Region loss: a lease held only by short-lived runs is passed over',
    input: { history: [start('a', 1, 0), stop('a', 1, 10, 'killed'), start('b', 2, 40), stop('b', 2, 41)], faults: [regionLost(10), window('coordinatorDown', 45, 50)] },
    options: { healMs: 10_000, episodicLeases: [L] },
    want: [],
  },
  {
    name: 'a lease held only by short-lived runs (withLease) is leaderless between them by design',
    input: { history: [start('a', 1, 0), stop('a', 1, 2)], faults: [pause('a', 1, 3)], end: { mono: at(30) } },
    options: { healMs: 10_000, episodicLeases: [L] },
    want: [],
  },
  {
    name: 'two runs each completing one run-once window (two windows): clean',
    input: { history: [start('a', 1, 0), stop('a', 1, 2), start('b', 2, 3), stop('b', 2, 4)], ledger: [write('a', 1, 1, { window: 'w1' }), write('b', 2, 3.5, { window: 'w2' })], end: { mono: at(5) } },
    want: [],
  },
  {
    name: 'a run-once window completed twice',
    input: { history: [start('a', 1, 0), stop('a', 1, 2), start('b', 2, 3), stop('b', 2, 4)], ledger: [write('a', 1, 1, { window: 'w1' }), write('b', 2, 3.5, { window: 'w1' })], end: { mono: at(5) } },
    want: ['runOnce'],
  },
  {
    name: 'a leader soon after the heal',
    input: { history: [start('a', 1, 0), stop('a', 1, 2), start('b', 2, 5)], faults: [pause('a', 1, 3)], end: { mono: at(30) } },
    options: { healMs: 10_000 },
    want: [],
  },
  {
    name: 'a new term with no fault after quietFrom is a spurious change',
    input: { history: [start('a', 1, 0), stop('a', 1, 20), start('b', 2, 20.5)], end: { mono: at(30) } },
    options: { quietFrom: at(5) },
    want: ['spuriousChange'],
  },
  {
    name: 'a history that contradicts itself',
    input: { history: [stop('a', 1, 1), start('b', 2, 2), start('b', 3, 3)] },
    want: ['record', 'record'],
  },
];

describe('history checker', () => {
  it.each(rows)('$name', ({ input, options, want }) => {
    const v = checkHistory({ end: { mono: at(60) }, ...input }, options);
    expect(v.violations.map((x) => x.kind).sort()).toEqual([...want].sort());
    expect(v.ok).toBe(want.length === 0);
  });

  it('figures: leaderless time after the heal is summed over gaps; changes and zombie writes are counted', () => {
    const v = checkHistory(
      {
        history: [start('a', 1, 0), stop('a', 1, 12), start('b', 2, 14), stop('b', 2, 20), start('a', 3, 21)],
        ledger: [write('a', 1, 1), write('a', 1, 12.5, { zombie: true })],
        faults: [pause('b', 5, 10)],
        end: { mono: at(30) },
      },
      { healMs: 5_000 },
    );
    expect(v.ok).toBe(true);
    expect(v.figures).toMatchObject({ terms: 3, holderChanges: 2, ledgerWrites: 2, zombieWritesAccepted: 1, worstLeaderlessAfterHealMs: 3_000 });
  });

  it('figures: Region losses judged, and the longest wait for a leader after one; the violation names the lease, the Region and the start', () => {
    const v = checkHistory(
      { history: [start('a', 1, 0), stop('a', 1, 10, 'killed'), start('b', 2, 40)], faults: [regionLost(10, 12), window('coordinatorDown', 45, 50)], end: { mono: at(60) } },
      { healMs: 10_000 },
    );
    expect(v.figures).toMatchObject({ lossesJudged: 1, worstLeaderlessAfterLossMs: 28_000 });
    // and the spell 10–40 s: 18 s of it excused by no fault (the loss healed at 12 s, + 10 s)
    expect(v.violations.map((x) => x.kind)).toEqual(['leaderlessSpell', 'leaderlessAfterLoss']);
    expect(v.figures.worstUnexcusedLeaderlessMs).toBe(18_000);
    expect(v.violations.filter((x) => x.kind === 'leaderlessAfterLoss')).toEqual([
      {
        kind: 'leaderlessAfterLoss',
        lease: L,
        lost: 'us-east-1',
        leaderlessMs: 28_000,
        message: 'reports: 28.0 s without a leader after us-east-1 was lost at 10.000 s, counted from 12.000 s (its survivors served again; at most 10 s allowed)',
      },
    ]);
  });

  it('bad lines are ValidationErrors naming the line and field; lines round-trip', () => {
    const r = start('a', 1, 0);
    expect(readHistory(historyLine(r) + '\n' + historyLine(stop('a', 1, 1)))).toHaveLength(2);
    expect(() => readHistory(`${historyLine(r)}{"event":"started"`)).toThrow(/line 2/);
    const e = (() => {
      try {
        readJsonLines(HistoryRecord, JSON.stringify({ ...r, mono: -1 }), 'history');
      } catch (err) {
        return err;
      }
    })();
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as ValidationError).fields).toEqual(['mono']);
  });

  it('npm start’s worker lines become a history (wall ms as the clock, a kill takes the token of its term)', () => {
    const h = historyFromWorkerEvents(L, [
      {
        identity: 'w1',
        events: [
          { event: 'ready', identity: 'w1', at: 1, instance: 'w1_x' },
          { event: 'started', identity: 'w1', at: 1000, fencingToken: 4 },
          { event: 'stopped', identity: 'w1', at: 2000, reason: 'killed' },
        ],
      },
    ]);
    expect(h).toEqual([
      { event: 'started', lease: L, identity: 'w1', instance: 'w1_x', fencingToken: 4, mono: '1000000000', wall: 1000 },
      { event: 'stopped', lease: L, identity: 'w1', instance: 'w1_x', fencingToken: 4, mono: '2000000000', wall: 2000, reason: 'killed' },
    ]);
  });
});
