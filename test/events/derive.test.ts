import { describe, expect, it } from 'vitest';
import type { Decision } from '../../lib/election/decide.js';
import { plan } from '../../lib/election/plan.js';
import { eventIdFor, eventsFromCandidateChange, eventsFromLeaseChange, unrecordedHolder } from '../../lib/events/derive.js';
import { DETAIL_SCHEMAS, type ConclaveEvent, type DetailType } from '../../lib/events/schemas.js';
import type { Candidate } from '../../lib/schemas/candidate.js';
import { fencingTokenFloor, nextFencingToken } from '../../lib/schemas/fencing-token.js';
import { electionConfig } from '../../lib/schemas/config.js';
import { LeaseItem, type Election, type Lease } from '../../lib/schemas/lease.js';
import { acquisition } from '../../lib/sdk/lock.js';
import { HOLDER_FIELDS } from '../../lib/schemas/platform.js';
import { handOverPatch, type LeasePatch } from '../../lib/stores/lease-store.js';
import { MIN, NOW, SEC, cand, lease } from '../fixtures.js';

const config = electionConfig();
const OEV = 'OldestEmulationVersion';
const NAME = 'component-A';
const iso = (ms: number) => new Date(ms).toISOString();
/** The token of a term begun at NOW over term 7 (or none): the clock's floor, far above 7. */
const TOKEN_AT_NOW = nextFencingToken(7, NOW);

/** A patch applied the way ItemStore applies it: undefined values are not written, revision +1. */
function applied(l: Lease | undefined, patch: LeasePatch): Lease {
  const set = Object.fromEntries(Object.entries(patch.set ?? {}).filter(([, v]) => v !== undefined));
  const next: Record<string, unknown> = { ...l, ...set, name: NAME, revision: (l?.revision ?? 0) + 1 };
  for (const k of patch.remove ?? []) if (!(k in set)) delete next[k];
  return LeaseItem.parse(next);
}

/** The lease after the coordinator carries out `d` at `now` (lib/election/plan.ts). */
const after = (l: Lease | undefined, d: Decision, now = NOW): Lease => applied(l, plan(d, l, now, config).lease!);

// The worker's writes (lib/stores/lease-store.ts, lib/sdk/elector.ts).
const renewed = (l: Lease, now = NOW + 2 * SEC): Lease => applied(l, { set: { renewTime: now, leaseDurationSeconds: 15 }, remove: ['vacancyReport'] });
const released = (l: Lease, now = NOW + 2 * SEC): Lease =>
  applied(l, { set: { renewTime: now, lastHolderIdentity: l.holderIdentity }, remove: ['holderIdentity', 'holderInstance', 'preferredHolder', 'vacancyReport'] });
const reported = (l: Lease, by = 'B'): Lease => applied(l, { set: { vacancyReport: { by, at: NOW, observedRevision: l.revision } } });
const selfAcquired = (l: Lease | undefined, who: string, now = NOW): Lease =>
  applied(l, {
    set: { holderIdentity: who, holderInstance: `${who}-1`, acquireTime: now, renewTime: now, leaseDurationSeconds: 15, leaseTransitions: l ? l.leaseTransitions + 1 : 0, fencingToken: nextFencingToken(l?.fencingToken, now), electedBy: 'self' },
    remove: ['election', 'preferredHolder', 'vacancyReport'],
  });

/** LeaseStore.endChangedTerm: the elector of `holder`'s term ends it on a row rewritten under it. */
const endedChanged = (l: Lease, holder: string, now = NOW + 2 * SEC): Lease =>
  applied(l, { set: { renewTime: now, lastHolderIdentity: holder }, remove: [...HOLDER_FIELDS, 'termToken', 'preferredHolder', 'vacancyReport'] });
/** A's term 7 (its token copy too), its holder rewritten to B by hand at `fencingToken`. */
const rewrittenToB = (fencingToken: number): Lease => lease('B', { holderInstance: 'B-1', fencingToken, termToken: 7, lastHolderIdentity: 'Z', acquireTime: NOW - 5 * MIN });

const election = (extra: Partial<Election> = {}): Election => ({ id: `${NAME}#13`, startedAt: NOW, deadline: NOW + 5 * SEC, strategy: OEV, ...extra });
const elect = (winner: string, e?: Election): Decision => ({ kind: 'elect', strategy: OEV, winner, winnerInstance: `${winner}-1`, acked: [winner], skewPrevented: false, ...(e ? { election: e } : {}) });
const open = (e: Election, vacancy?: 'noLease' | 'noHolder' | 'expired' | 'reported'): Decision => ({ kind: 'openElection', strategy: OEV, election: e, ping: ['B'], ...(vacancy ? { vacancy } : {}) });

/** A held by A, term 7, elected by the coordinator under OldestEmulationVersion. */
const heldByA = lease('A', { holderInstance: 'A-1', electedStrategy: OEV, acquireTime: NOW - 5 * MIN });
const expiredA = lease('A', { holderInstance: 'A-1', renewTime: NOW - MIN });
const releasedByA = released(heldByA);
const withElection = after(releasedByA, open(election(), 'noHolder'));
const reelecting = after(heldByA, open(election({ holder: 'A' })));

interface Row {
  name: string;
  old?: Lease;
  new?: Lease;
  /** The detail-types, in order, and what each detail must contain. */
  want: { type: DetailType; detail?: Record<string, unknown> }[];
}

const rows: Row[] = [
  // Nothing to tell.
  { name: 'renewal', old: heldByA, new: renewed(heldByA), want: [] },
  { name: 'renewal withdrawing a vacancy report', old: reported(heldByA), new: renewed(reported(heldByA)), want: [] },
  { name: 'vacancy report', old: heldByA, new: reported(heldByA), want: [] },
  { name: 'a vacant lease deleted', old: releasedByA, want: [] },
  { name: 'nothing before or after', want: [] },
  { name: 'election cancelled', old: reelecting, new: after(reelecting, { kind: 'cancelElection', strategy: OEV, election: reelecting.election!, why: 'holderIsBest' }), want: [] },
  {
    name: 'preferredHolder cleared',
    old: lease('A', { preferredHolder: 'B' }),
    new: after(lease('A', { preferredHolder: 'B' }), { kind: 'clearPreferredHolder', strategy: OEV, preferredHolder: 'B', why: 'holderIsBest' }),
    want: [],
  },
  { name: 'renewal while a preemption is pending', old: lease('A', { preferredHolder: 'B' }), new: renewed(lease('A', { preferredHolder: 'B' })), want: [] },
  { name: 'an operator sets the strategy', old: heldByA, new: applied(heldByA, { set: { strategy: 'NoCoordination' } }), want: [] },
  {
    name: 'a write that keeps the recorded failure',
    old: lease(undefined, { lastElectionFailure: { at: NOW - MIN, reason: 'noLiveCandidates', message: 'x' } }),
    new: applied(lease(undefined, { lastElectionFailure: { at: NOW - MIN, reason: 'noLiveCandidates', message: 'x' } }), { set: { strategy: OEV } }),
    want: [],
  },

  // New terms.
  {
    name: 'first-ever election: Elected, not Changed',
    new: after(undefined, elect('B')),
    want: [{ type: 'Leader Elected', detail: { holder: 'B', holderInstance: 'B-1', fencingToken: TOKEN_AT_NOW, leaseTransitions: 0, electedBy: 'coordinator', strategy: OEV } }],
  },
  {
    name: 'elected over an expired holder: Elected + Changed',
    old: expiredA,
    new: after(expiredA, elect('B')),
    want: [
      { type: 'Leader Elected', detail: { holder: 'B', previousHolder: 'A', fencingToken: TOKEN_AT_NOW, leaseTransitions: 4, electedBy: 'coordinator' } },
      { type: 'Leader Changed', detail: { previousHolder: 'A', holder: 'B', fencingToken: TOKEN_AT_NOW, electedBy: 'coordinator', strategy: OEV } },
    ],
  },
  {
    name: 'elected after a release: the previous holder comes from lastHolderIdentity',
    old: releasedByA,
    new: after(releasedByA, elect('B')),
    want: [{ type: 'Leader Elected', detail: { holder: 'B', previousHolder: 'A' } }, { type: 'Leader Changed', detail: { previousHolder: 'A', holder: 'B' } }],
  },
  {
    name: 'the same holder re-elected after a gap: Elected, not Changed',
    old: releasedByA,
    new: after(releasedByA, elect('A')),
    want: [{ type: 'Leader Elected', detail: { holder: 'A', previousHolder: 'A', fencingToken: TOKEN_AT_NOW } }],
  },
  {
    name: 'the same holder re-elected over its own expired term: Elected, not Changed',
    old: expiredA,
    new: after(expiredA, elect('A')),
    want: [{ type: 'Leader Elected', detail: { holder: 'A', previousHolder: 'A', fencingToken: TOKEN_AT_NOW } }],
  },
  {
    name: 'an election finished: Elected names it',
    old: withElection,
    new: after(withElection, elect('B', withElection.election)),
    want: [{ type: 'Leader Elected', detail: { electionId: withElection.election!.id, holder: 'B' } }, { type: 'Leader Changed' }],
  },
  {
    name: 'direct acquisition (fallback): electedBy self, the lease strategy',
    old: lease(undefined, { lastHolderIdentity: 'A', strategy: OEV }),
    new: selfAcquired(lease(undefined, { lastHolderIdentity: 'A', strategy: OEV }), 'C'),
    want: [
      { type: 'Leader Elected', detail: { holder: 'C', electedBy: 'self', strategy: OEV, fencingToken: TOKEN_AT_NOW } },
      { type: 'Leader Changed', detail: { previousHolder: 'A', holder: 'C', electedBy: 'self' } },
    ],
  },
  {
    name: 'a new term with an address: Elected and Changed carry it',
    old: lease('A', { holderInstance: 'A-1', holderAddress: 'http://10.0.0.1:8080', renewTime: NOW - MIN }),
    new: applied(selfAcquired(lease('A', { holderInstance: 'A-1', holderAddress: 'http://10.0.0.1:8080', renewTime: NOW - MIN }), 'C'), { set: { holderAddress: '10.0.0.3:8080' } }),
    want: [
      { type: 'Leader Elected', detail: { holder: 'C', previousHolder: 'A', address: '10.0.0.3:8080' } },
      { type: 'Leader Changed', detail: { previousHolder: 'A', holder: 'C', address: '10.0.0.3:8080' } },
    ],
  },
  {
    // a worker may not name electedStrategy (infra/access.ts), so its take leaves the coordinator's record of an earlier term
    name: 'direct acquisition after an operator set NoCoordination: the lease strategy, not the earlier term’s electedStrategy',
    old: lease('A', { holderInstance: 'A-1', electedStrategy: OEV, strategy: 'NoCoordination', renewTime: NOW - MIN }),
    new: selfAcquired(lease('A', { holderInstance: 'A-1', electedStrategy: OEV, strategy: 'NoCoordination', renewTime: NOW - MIN }), 'C'),
    want: [
      { type: 'Leader Elected', detail: { holder: 'C', electedBy: 'self', strategy: 'NoCoordination' } },
      { type: 'Leader Changed', detail: { previousHolder: 'A', holder: 'C', electedBy: 'self', strategy: 'NoCoordination' } },
    ],
  },
  {
    name: 'a successor takes over after an operator changed the strategy: the lease strategy',
    old: lease('A', { holderInstance: 'A-1', electedStrategy: OEV, strategy: 'NoCoordination', renewTime: NOW - MIN }),
    new: applied(selfAcquired(lease('A', { holderInstance: 'A-1', electedStrategy: OEV, strategy: 'NoCoordination', renewTime: NOW - MIN }), 'C'), { set: { electedBy: 'successor' } }),
    want: [{ type: 'Leader Elected', detail: { holder: 'C', electedBy: 'successor', strategy: 'NoCoordination' } }, { type: 'Leader Changed', detail: { strategy: 'NoCoordination' } }],
  },
  {
    name: 'direct acquisition of a new lease (NoCoordination): no strategy, no previous holder',
    new: selfAcquired(undefined, 'C'),
    want: [{ type: 'Leader Elected', detail: { holder: 'C', electedBy: 'self', fencingToken: TOKEN_AT_NOW } }],
  },

  // Preemption.
  {
    name: 'preemption requested',
    old: heldByA,
    new: after(heldByA, { kind: 'preempt', strategy: OEV, holder: 'A', preferredHolder: 'B' }),
    want: [{ type: 'Leader Preemption Requested', detail: { holder: 'A', preferredHolder: 'B', fencingToken: 7 } }],
  },
  {
    name: 'preemption found by a re-election: names it',
    old: reelecting,
    new: after(reelecting, { kind: 'preempt', strategy: OEV, holder: 'A', preferredHolder: 'B', election: reelecting.election! }),
    want: [{ type: 'Leader Preemption Requested', detail: { holder: 'A', preferredHolder: 'B', electionId: reelecting.election!.id, strategy: OEV } }],
  },
  {
    name: 'preferredHolder changed to another candidate',
    old: lease('A', { preferredHolder: 'B' }),
    new: after(lease('A', { preferredHolder: 'B' }), { kind: 'preempt', strategy: OEV, holder: 'A', preferredHolder: 'C' }),
    want: [{ type: 'Leader Preemption Requested', detail: { holder: 'A', preferredHolder: 'C' } }],
  },

  // Releases.
  {
    name: "the holder's release",
    old: heldByA,
    new: releasedByA,
    want: [{ type: 'Lease Released', detail: { previousHolder: 'A', fencingToken: 7, acquireTime: iso(NOW - 5 * MIN) } }],
  },
  {
    name: 'a release answering a preemption names the preferred holder',
    old: lease('A', { preferredHolder: 'B' }),
    new: released(lease('A', { preferredHolder: 'B' })),
    want: [{ type: 'Lease Released', detail: { previousHolder: 'A', preferredHolder: 'B' } }],
  },
  {
    // an operator's `aws dynamodb delete-item`: the term ended with the row (before: no event at all)
    name: 'a held lease deleted: Released, rowDeleted',
    old: lease('A', { holderInstance: 'A-1', electedStrategy: OEV, acquireTime: NOW - 5 * MIN, preferredHolder: 'B' }),
    want: [{ type: 'Lease Released', detail: { previousHolder: 'A', fencingToken: 7, acquireTime: iso(NOW - 5 * MIN), preferredHolder: 'B', rowDeleted: true } }],
  },
  {
    name: "an operator's release (holder removed by hand)",
    old: heldByA,
    new: applied(heldByA, { set: { lastHolderIdentity: 'A' }, remove: ['holderIdentity', 'holderInstance'] }),
    want: [{ type: 'Lease Released', detail: { previousHolder: 'A', fencingToken: 7 } }],
  },

  // A holder rewritten by hand (an operator's update-item), then ended by its own elector.
  { name: 'a holder rewritten by hand at the same token: nothing (no new term)', old: lease('A', { holderInstance: 'A-1', termToken: 7 }), new: applied(lease('A', { holderInstance: 'A-1', termToken: 7 }), { set: { holderIdentity: 'B', holderInstance: 'B-1' } }), want: [] },
  {
    name: 'a term rewritten at the same token, ended by its elector: Released names its own holder, not the name written over it',
    old: rewrittenToB(7),
    new: endedChanged(rewrittenToB(7), 'A'),
    want: [{ type: 'Lease Released', detail: { previousHolder: 'A', fencingToken: 7, acquireTime: iso(NOW - 5 * MIN) } }],
  },
  {
    name: 'a term rewritten at a lower token, ended by its elector: its own holder and token',
    old: rewrittenToB(5),
    new: endedChanged(rewrittenToB(5), 'A'),
    want: [{ type: 'Lease Released', detail: { previousHolder: 'A', fencingToken: 7 } }],
  },
  {
    // the rewrite raised the token: told then as B's term (Leader Elected, 9), so B's term ends here
    name: 'a term rewritten at a raised token, ended by its elector: the term the events told, B at 9',
    old: rewrittenToB(9),
    new: endedChanged(rewrittenToB(9), 'A'),
    want: [{ type: 'Lease Released', detail: { previousHolder: 'B', fencingToken: 9 } }],
  },
  {
    name: 'a holder removed by hand, an older last holder left on the row: the removed holder',
    old: lease('A', { termToken: 7, lastHolderIdentity: 'Z' }),
    new: applied(lease('A', { termToken: 7, lastHolderIdentity: 'Z' }), { remove: ['holderIdentity', 'holderInstance'] }),
    want: [{ type: 'Lease Released', detail: { previousHolder: 'A', fencingToken: 7 } }],
  },

  // Elections.
  {
    name: 'election opened on an expired lease: Started names the removed holder, no Released',
    old: expiredA,
    new: after(expiredA, open(election(), 'expired')),
    want: [{ type: 'Election Started', detail: { electionId: `${NAME}#13`, startedAt: iso(NOW), deadline: iso(NOW + 5 * SEC), strategy: OEV, reelection: false, previousHolder: 'A', vacancy: 'expired', fencingToken: 7 } }],
  },
  {
    name: 'election opened on a lease reported vacant',
    old: reported(expiredA),
    new: after(reported(expiredA), open(election(), 'reported')),
    want: [{ type: 'Election Started', detail: { previousHolder: 'A', vacancy: 'reported' } }],
  },
  {
    name: 'election opened on a released lease',
    old: releasedByA,
    new: withElection,
    want: [{ type: 'Election Started', detail: { reelection: false, vacancy: 'noHolder' } }],
  },
  {
    name: 'election opened where there was no lease',
    new: after(undefined, open(election({ id: `${NAME}#1` }), 'noLease')),
    // a new row's first token is its creation's clock floor, not 0 (fencing-token.ts)
    want: [{ type: 'Election Started', detail: { electionId: `${NAME}#1`, vacancy: 'noLease', fencingToken: fencingTokenFloor(NOW) } }],
  },
  {
    name: 're-election: the holder keeps leading',
    old: heldByA,
    new: reelecting,
    want: [{ type: 'Election Started', detail: { reelection: true, holder: 'A', fencingToken: 7 } }],
  },
  {
    name: 'election failed',
    old: withElection,
    new: after(withElection, { kind: 'failElection', strategy: OEV, failure: { at: NOW + 5 * SEC, electionId: withElection.election!.id, reason: 'noLiveCandidates', message: 'nobody answered' } }),
    // the token as the failure found it: the released term's (before the fix: none)
    want: [{ type: 'Election Failed', detail: { electionId: withElection.election!.id, reason: 'noLiveCandidates', message: 'nobody answered', strategy: OEV, fencingToken: 7 } }],
  },
  {
    name: 'failed again (a new at)',
    old: lease(undefined, { lastElectionFailure: { at: NOW - MIN, reason: 'contradictoryStrategies', message: 'x' } }),
    new: after(lease(undefined, { lastElectionFailure: { at: NOW - MIN, reason: 'contradictoryStrategies', message: 'x' } }), { kind: 'failElection', failure: { at: NOW, reason: 'contradictoryStrategies', message: 'y' } }),
    want: [{ type: 'Election Failed', detail: { reason: 'contradictoryStrategies', message: 'y', fencingToken: 7 } }],
  },
];

const EVENT_ID = 'c0ffee0000000000000000000001';
const derive = (r: Pick<Row, 'old' | 'new'>, eventID = EVENT_ID) => eventsFromLeaseChange({ eventID, at: NOW + 3 * SEC, oldLease: r.old, newLease: r.new });

describe('eventsFromLeaseChange', () => {
  it.each(rows)('$name', (row) => {
    const events = derive(row);
    expect(events.map((e) => e.detailType)).toEqual(row.want.map((w) => w.type));
    row.want.forEach((w, i) => {
      const e = events[i]!;
      expect(e.detail).toMatchObject({ id: eventIdFor(EVENT_ID, w.type), lease: NAME, time: iso(NOW + 3 * SEC), ...w.detail });
    });
  });

  it('a first-ever term names no previous holder', () => {
    const first = derive({ new: after(undefined, elect('B')) });
    expect(first[0]!.detail).not.toHaveProperty('previousHolder');
  });

  it('a direct acquisition over a coordinator’s term, no strategy set on the lease: none, not the earlier term’s electedStrategy', () => {
    const old = lease('A', { holderInstance: 'A-1', electedStrategy: OEV, renewTime: NOW - MIN });
    const taken = selfAcquired(old, 'C');
    expect(taken.electedStrategy).toBe(OEV); // left by the take (a worker may not name it)
    const events = derive({ old, new: taken });
    expect(events.map((e) => e.detailType)).toEqual(['Leader Elected', 'Leader Changed']);
    for (const e of events) expect(e.detail).not.toHaveProperty('strategy');
    // a successor, handed the lease with no strategy set: the one the coordinator last elected by (that named it)
    expect(derive({ old, new: applied(taken, { set: { electedBy: 'successor' } }) })[0]!.detail).toMatchObject({ strategy: OEV });
  });

  it('a new term without an address says none, even when the old image had one (never the previous holder\'s)', () => {
    const old = lease('A', { holderInstance: 'A-1', holderAddress: 'http://10.0.0.1:8080', renewTime: NOW - MIN });
    const { holderAddress, ...taken } = selfAcquired(old, 'C'); // a take that names no address of its own leaves none
    expect(holderAddress).toBe('http://10.0.0.1:8080');
    const events = derive({ old, new: taken });
    expect(events.map((e) => e.detailType)).toEqual(['Leader Elected', 'Leader Changed']);
    for (const e of events) expect(e.detail).not.toHaveProperty('address');
  });

  it('every derived detail validates against its zod schema, with no field the schema does not name', () => {
    for (const row of rows) {
      for (const e of derive(row)) {
        const parsed = DETAIL_SCHEMAS[e.detailType].safeParse(e.detail);
        expect(parsed.success, `${row.name}: ${e.detailType}`).toBe(true);
        expect(parsed.data, `${row.name}: ${e.detailType}`).toEqual(e.detail); // z.object strips unknown keys
        expect(Object.values(e.detail)).not.toContain(undefined);
      }
    }
  });

  it('ids are stable under redelivery and distinct within a record and across records', () => {
    const row = rows.find((r) => r.name.startsWith('elected over an expired holder'))!;
    const once = derive(row);
    expect(derive(row)).toEqual(once); // the same record delivered again: the same events, the same ids
    expect(once).toHaveLength(2);
    expect(new Set(once.map((e) => e.detail.id)).size).toBe(2);
    const other = derive(row, 'c0ffee0000000000000000000002');
    expect(other.map((e) => e.detail.id)).not.toContain(once[0]!.detail.id);
    // Every row: no id repeats within its record.
    for (const r of rows) {
      const ids = derive(r).map((e) => e.detail.id);
      expect(new Set(ids).size, r.name).toBe(ids.length);
    }
  });
});

describe('a term not chosen by the election open as it began', () => {
  const withSuccessor = (l: Lease): Lease => applied(l, { set: { successor: 'B', successorInstance: 'B-1' } });
  const electedOf = (old: Lease, neu: Lease) => derive({ old, new: neu }).find((e) => e.detailType === 'Leader Elected')!.detail;

  it('a hand-off during a re-election: Elected (successor) names no electionId (the patch removes the election it did not finish)', () => {
    const old = withSuccessor(reelecting);
    const handed = applied(old, handOverPatch({ holderIdentity: 'A', fencingToken: 7 }, { name: 'B', instance: 'B-1' }, NOW + SEC, 15, old.leaseTransitions, {}));
    expect(handed.election).toBeUndefined();
    const d = electedOf(old, handed);
    expect(d).toMatchObject({ holder: 'B', electedBy: 'successor', previousHolder: 'A' });
    expect(d).not.toHaveProperty('electionId');
  });

  it('a successor’s or a worker’s own take of a lease with a vacancy election open: no electionId', () => {
    for (const electedBy of ['successor', 'self'] as const) {
      const old = withSuccessor(withElection);
      const taken = applied(old, acquisition(old, { identity: 'B', instance: 'B-1', now: NOW + SEC, leaseDurationSeconds: 15, electedBy }));
      expect(taken.election, electedBy).toBeUndefined();
      const d = electedOf(old, taken);
      expect(d, electedBy).toMatchObject({ holder: 'B', electedBy });
      expect(d, electedBy).not.toHaveProperty('electionId');
    }
  });

  it('the coordinator electing the winner of that election still names it', () => {
    expect(electedOf(withElection, after(withElection, elect('B', withElection.election)))).toMatchObject({ electionId: withElection.election!.id, electedBy: 'coordinator' });
  });
});

/** Runs writes one after another, as stream records; returns the events of each. */
function sequence(start: Lease | undefined, steps: ((l: Lease | undefined) => Lease | undefined)[]): ConclaveEvent[][] {
  let cur = start;
  return steps.map((step, i) => {
    const next = step(cur);
    const events = eventsFromLeaseChange({ eventID: `record-${i}`, at: NOW + i * SEC, oldLease: cur, newLease: next });
    cur = next;
    return events;
  });
}
const types = (records: ConclaveEvent[][]) => records.map((r) => r.map((e) => e.detailType));
const changed = (records: ConclaveEvent[][]) => records.flat().filter((e) => e.detailType === 'Leader Changed');

describe('sequences of writes', () => {
  it('release, election, elect: exactly one Leader Changed, from the releaser to the winner', () => {
    const records = sequence(heldByA, [
      (l) => renewed(l!),
      (l) => released(l!),
      (l) => after(l, open(election({ id: `${NAME}#15` }), 'noHolder')),
      (l) => after(l, elect('B', l!.election)),
      (l) => renewed(l!),
    ]);
    expect(types(records)).toEqual([[], ['Lease Released'], ['Election Started'], ['Leader Elected', 'Leader Changed'], []]);
    expect(changed(records).map((e) => e.detail)).toMatchObject([{ previousHolder: 'A', holder: 'B', fencingToken: TOKEN_AT_NOW }]);
  });

  it('expiry, failed election, second election, elect: one Leader Changed; the ended term survives the failed round', () => {
    const records = sequence(expiredA, [
      (l) => after(l, open(election({ id: `${NAME}#13` }), 'expired')),
      (l) => after(l, { kind: 'failElection', strategy: OEV, failure: { at: NOW + 5 * SEC, electionId: `${NAME}#13`, reason: 'noLiveCandidates', message: 'nobody answered' } }),
      (l) => after(l, open(election({ id: `${NAME}#15`, startedAt: NOW + 9 * SEC, deadline: NOW + 14 * SEC }), 'noHolder')),
      (l) => after(l, elect('B', l!.election), NOW + 10 * SEC),
    ]);
    expect(types(records)).toEqual([['Election Started'], ['Election Failed'], ['Election Started'], ['Leader Elected', 'Leader Changed']]);
    expect(records[0]![0]!.detail).toMatchObject({ previousHolder: 'A', vacancy: 'expired' });
    // ordered by fencingToken as docs/deploy.md says: the failure with the ended term's token (its Election Started's), below the next term's
    const token = (e: ConclaveEvent) => (e.detail as { fencingToken?: number }).fencingToken;
    expect(records.slice(0, 3).map((r) => token(r[0]!))).toEqual([7, 7, 7]);
    expect(token(records[3]![0]!)).toBeGreaterThan(7);
    expect(changed(records).map((e) => e.detail)).toMatchObject([{ previousHolder: 'A', holder: 'B' }]);
  });

  it('preempt, release, direct elect: one request, one release, one change', () => {
    const records = sequence(heldByA, [
      (l) => after(l, { kind: 'preempt', strategy: OEV, holder: 'A', preferredHolder: 'B' }),
      (l) => renewed(l!),
      (l) => released(l!),
      (l) => after(l, elect('B'), NOW + 3 * SEC),
    ]);
    expect(types(records)).toEqual([['Leader Preemption Requested'], [], ['Lease Released'], ['Leader Elected', 'Leader Changed']]);
    expect(records[2]![0]!.detail).toMatchObject({ previousHolder: 'A', preferredHolder: 'B', fencingToken: 7 });
  });

  it('a re-election that keeps the holder: Started, then nothing; leadership never changes', () => {
    const records = sequence(heldByA, [
      (l) => after(l, open(election({ holder: 'A' }))),
      (l) => renewed(l!),
      (l) => after(l, { kind: 'cancelElection', strategy: OEV, election: l!.election!, why: 'holderIsBest' }),
    ]);
    expect(types(records)).toEqual([['Election Started'], [], []]);
  });
});

describe('unrecordedHolder: a holder removed without the row naming it its last (the lease stream records it)', () => {
  const byHand = applied(heldByA, { remove: ['holderIdentity'] });
  it.each([
    ['a release (it records its holder)', heldByA, released(heldByA), undefined],
    ['an election opened on the expired term (it records its holder)', expiredA, after(expiredA, open(election(), 'expired')), undefined],
    ["a rewritten term ended by its elector (it records the term's own holder)", rewrittenToB(7), endedChanged(rewrittenToB(7), 'A'), undefined],
    ["an operator's update-item REMOVE holderIdentity", { ...heldByA, lastHolderIdentity: 'Z' }, { ...byHand, lastHolderIdentity: 'Z' }, 'A'],
    ['the same on a first term (no last holder)', heldByA, byHand, 'A'],
    ['a vacant row written again (nobody removed)', byHand, renewed(byHand), undefined],
    ["a held row's delete (the lease stream's own handling records it)", heldByA, undefined, undefined],
  ] as const)('%s', (_, old, neu, want) => expect(unrecordedHolder(old, neu)).toBe(want));
});

describe('eventsFromCandidateChange', () => {
  const STALE = config.candidateStaleAfterMs;
  const joined = cand('B', '1.30.0', '1.31.0', { priority: 5, identity: 'B-1' });
  const stale = cand('B', '1.30.0', '1.31.0', { renewTime: NOW - STALE - SEC });
  interface CandRow {
    name: string;
    old?: Candidate;
    new?: Candidate;
    at?: number;
    atPrecisionMs?: number;
    want: { type: DetailType; detail?: Record<string, unknown> }[];
  }
  const candRows: CandRow[] = [
    {
      name: 'a row created: Joined',
      new: joined,
      want: [{ type: 'Candidate Joined', detail: { lease: NAME, candidate: 'B', emulationVersion: '1.30.0', binaryVersion: '1.31.0', priority: 5, identity: 'B-1', preferredStrategies: [OEV] } }],
    },
    { name: 'a renewal', old: joined, new: { ...joined, renewTime: NOW + MIN, revision: 2 }, want: [] },
    { name: 'an ack', old: { ...joined, pingTime: NOW }, new: { ...joined, pingTime: NOW, renewTime: NOW + SEC, revision: 2 }, want: [] },
    { name: 'a priority change', old: joined, new: { ...joined, priority: 9, revision: 2 }, want: [] },
    { name: 'a stale row deleted: Expired', old: stale, want: [{ type: 'Candidate Expired', detail: { candidate: 'B', lastRenewTime: iso(NOW - STALE - SEC), emulationVersion: '1.30.0' } }] },
    { name: 'a live row deleted (a worker withdrew)', old: joined, want: [] },
    { name: 'deleted exactly when it turns stale: not yet stale', old: cand('B', '1.30.0', '1.31.0', { renewTime: NOW - STALE }), want: [] },
    {
      name: 'deleted within the second it turned stale, at rounded down to the second',
      old: cand('B', '1.30.0', '1.31.0', { renewTime: NOW - STALE + 499 }),
      atPrecisionMs: 1000,
      want: [{ type: 'Candidate Expired' }],
    },
    // a candidate on a session renews its own row every few hours: its own stamp says nothing
    { name: 'a row on a session withdrawn, its own stamp hours old: nothing', old: { ...stale, session: 'all-01:session-x', renewTime: NOW - 5 * 3_600_000 }, want: [] },
    { name: 'a row the coordinator collected (its mark): Expired', old: { ...stale, session: 'all-01:session-x', collectedAt: NOW - SEC }, want: [{ type: 'Candidate Expired' }] },
    { name: 'a collected row on no session: Expired by its mark, however fresh its stamp', old: { ...joined, collectedAt: NOW - SEC }, want: [{ type: 'Candidate Expired' }] },
    { name: 'a row on a session deleted by its TTL: Expired', old: { ...joined, session: 'all-01:session-x', expiresAt: (NOW - SEC) / 1000 }, want: [{ type: 'Candidate Expired' }] },
  ];

  it.each(candRows)('$name', (row) => {
    const at = row.at ?? NOW;
    const events = eventsFromCandidateChange({ eventID: EVENT_ID, at, oldCandidate: row.old, newCandidate: row.new, staleAfterMs: STALE, ...(row.atPrecisionMs ? { atPrecisionMs: row.atPrecisionMs } : {}) });
    expect(events.map((e) => e.detailType)).toEqual(row.want.map((w) => w.type));
    row.want.forEach((w, i) => expect(events[i]!.detail).toMatchObject({ id: eventIdFor(EVENT_ID, w.type), lease: NAME, time: iso(at), ...w.detail }));
    for (const e of events) expect(DETAIL_SCHEMAS[e.detailType].parse(e.detail)).toEqual(e.detail);
  });
});
