/**
 * The election model-checked (issue 37, item 7): the real step (lib/sdk/step.ts decide), driven as
 * the shell drives it, in every state reachable within a bound in each small scope of
 * ./scopes.ts' ELECTION_SCOPES, keeps the invariants; the scopes reach what the invariants are
 * about (./goals.ts: so a pass is not vacuous); and the SDK's in-memory lock gives the model the
 * same states as its own rows. An operator's deletes and a suspended machine are checked in
 * ./deletes.test.ts, the planted bugs in ./plants.test.ts: files of their own, so they run side by
 * side. Figures for larger bounds: `npx tsx test/model/run.ts`.
 */
import { describe, expect, it } from 'vitest';
import { EXPLORE_GUARD_MS } from '../guards.js';
import { explore } from './explorer.js';
import { electionSpec, realProtocol, SMALL } from './election-model.js';
import { checkScopes, DELETE_GOALS, GOALS, shown } from './goals.js';
import { DELETE_SCOPES, ELECTION_SCOPES } from './scopes.js';
import { memoryTableRows } from './lease-rows.js';

describe('the election, model-checked', () => {
  checkScopes(
    ELECTION_SCOPES,
    Object.keys(GOALS).filter((g) => !DELETE_GOALS.has(g)),
    "a leader, a second term, a successor taking the lease, a hand-off, a late write, an heir leading from its read, an older copy, a cancelled leader stepping down and leaving the lease, a take in doubt, terms on sessions, a peer rewriting one, kept stops and NoCoordination's second term",
  );

  it('the two files split the goals between them: every goal is one of these scopes\' or the deletes\' (./deletes.test.ts)', () => {
    expect([...DELETE_GOALS].filter((g) => !(g in GOALS))).toEqual([]);
    expect(DELETE_SCOPES.length).toBeGreaterThan(0);
  });

  it("the SDK's in-memory lock (lib/sdk/lock.ts) gives the model the same states as the model's own rows", () => {
    const cfg = { ...SMALL, stampOffsetsMs: [0], faults: 1, workFailures: 1 };
    const own = explore(electionSpec(cfg), { maxDepth: 5 });
    const memory = explore(electionSpec(cfg, { ...realProtocol, rows: memoryTableRows() }), { maxDepth: 5 });
    expect(shown(memory)).toBeUndefined();
    expect({ states: memory.states, transitions: memory.transitions }).toEqual({ states: own.states, transitions: own.transitions });
  }, EXPLORE_GUARD_MS);

  it("…and so it does with terms moved onto sessions and off them (a renewal naming `session`, or null)", () => {
    const cfg = { ...SMALL, start: 'held' as const, stampOffsetsMs: [0], faults: 1, sessions: true, sessionEnds: 1, maxTickUnits: 3 };
    const own = explore(electionSpec(cfg), { maxDepth: 5 });
    const memory = explore(electionSpec(cfg, { ...realProtocol, rows: memoryTableRows() }), { maxDepth: 5 });
    expect(shown(memory)).toBeUndefined();
    expect({ states: memory.states, transitions: memory.transitions }).toEqual({ states: own.states, transitions: own.transitions });
  }, EXPLORE_GUARD_MS);
});
