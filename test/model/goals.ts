/**
 * The goals the model check must reach (so a pass is not vacuous), and the check of a file's scopes:
 * every state within each scope's depth keeps the invariants, and the scopes reach their goals.
 * Shared by test/model/model.test.ts and test/model/deletes.test.ts, two files so they run side by side.
 */
import { expect, it } from 'vitest';
import { EXPLORE_GUARD_MS } from '../guards.js';
import { explore, type Exploration } from './explorer.js';
import { electionSpec, type ModelConfig, type World } from './election-model.js';
import type { Scope } from './scopes.js';
import { processOf } from '../../lib/schemas/instance.js';
import { MAX_LEFT_TERMS } from '../../lib/schemas/identity.js';
import { holdsForLeft } from '../../lib/sdk/step.js';

/** What the scopes must reach, each in some scope: else the invariants held over too little. */
export const GOALS: Record<string, (w: World) => boolean> = {
  'a leader': (w) => w.electors.some((e) => e.state.lead !== undefined),
  'a second term, by another elector': (w) => w.electors.filter((e) => e.state.ledToken >= 0).length >= 2,
  'the successor takes the lease (a takeover or a hand-off)': (w) => w.row?.electedBy === 'successor' && w.row.lastHolderIdentity !== undefined && w.row.holderIdentity !== w.row.lastHolderIdentity,
  // a hand-off's first term is short (a third of the lease, 1 s here); a takeover's is the lease's own (2 s)
  'a hand-off': (w) => w.row?.electedBy === 'successor' && w.row.leaseDurationSeconds === 1 && w.row.lastHolderIdentity !== undefined && w.row.holderIdentity !== w.row.lastHolderIdentity,
  'a late write landing after its sender gave up': (w) => w.orphans.length > 0,
  'an heir leading a hand-over from its read, before confirming it': (w) => w.electors.some((e) => e.state.lead !== undefined && e.busy?.req.kind === 'renew' && e.busy.then.kind === 'answer' && e.busy.then.rest.some((n) => n.k === 'led')),
  'a read answered with an older copy of the row': (w) => w.copies > 0,
  'a cancelled leader leading on until its hand-over is due': (w) => w.electors.some((e) => e.cancel !== undefined && e.state.lead !== undefined && e.busy?.req.kind === 'sleep'),
  // (the look itself, readHeir, is answered at once: candidate rows are read as they are)
  "a cancelled leader leading on in slices, its heir's candidate row read after the slice": (w) => w.electors.some((e) => e.cancel !== undefined && e.state.lead !== undefined && e.busy?.req.kind === 'sleep' && e.busy.then.kind === 'answer' && e.busy.then.rest[0]?.k === 'checkHeir'),
  "a cancelled leader that found its heir's candidate row gone reading the lease for the heir named now": (w) => w.electors.some((e) => e.cancel !== undefined && e.state.lead !== undefined && e.busy?.req.kind === 'read' && e.busy.then.kind === 'answer' && e.busy.then.rest.some((n) => n.k === 'leadOn' && n.gone !== undefined)),
  'a cancelled leader handing its term over, and the heir leading': (w) => w.electors.some((e) => e.cancel?.phase === 'gone' && e.cancel.led?.handed === true) && w.electors.some((e) => e.cancel === undefined && e.state.lead !== undefined),
  'a cancelled leader releasing its term after stepping down': (w) => w.electors.some((e) => e.cancel?.phase === 'leaving' && e.cancel.led?.handed === false && e.busy?.req.kind === 'release' && e.state.leaving?.reads === 0),
  'a cancelled follower declining succession (depart)': (w) => w.electors.some((e) => e.cancel?.phase === 'leaving' && e.busy?.then.kind === 'leavingWritten' && e.busy.req.kind === 'write'),
  'a cancelled follower releasing a term handed to it as it stopped (depart)': (w) => w.electors.some((e) => e.cancel?.phase === 'leaving' && !e.cancel.led && e.busy?.req.kind === 'release' && w.row?.holderInstance === e.instance),
  // the leaving's loop (step.ts leave, afterLeaving): a write refused or unanswered, decided again from a new read
  "a stopping elector's leaving decided again from a new read after its write was refused or went unanswered": (w) => w.electors.some((e) => e.busy?.then.kind === 'leavingRead' && e.state.leaving?.part === 'lease' && (e.state.leaving.reads >= 1 || e.cancel?.phase === 'leaving' && e.cancel.led !== undefined)),
  // a take in doubt (the model's `held`): a write naming a session timed out, its elector stopping and reading the lease to settle it
  'a write onto a session in doubt, its session held, settled by its stopping elector from a consistent read (leave: doubt)': (w) => w.electors.some((e) => e.held !== undefined && e.state.leaving?.part === 'doubt' && e.busy?.then.kind === 'leavingRead'),
  'a term held on its leader\'s session': (w) => w.row?.session !== undefined && w.electors.some((e) => e.state.lead?.session !== undefined),
  'a session ended under its leader': (w) => w.electors.some((e) => e.session?.name === null && e.state.lead !== undefined),
  'a term moved onto the next session after one ended': (w) => w.electors.some((e) => e.session !== undefined && e.session.gen > 1 && e.session.name !== null && e.state.lead?.session === e.session.name),
  "a session renewal's answer on its way while its process leads": (w) => w.electors.some((e) => e.session?.late !== undefined && e.state.lead?.session === e.session.name),
  'a term held on a session taken by another once the session stopped': (w) => w.takenFromSession === true,
  "an operator's delete under a leading term": (w) => w.row === undefined && w.electors.some((e) => e.state.lead !== undefined && w.deletedTokens.includes(e.state.lead.term.fencingToken)),
  'the election held for a deleted term (notBefore)': (w) => w.row?.election?.notBefore !== undefined,
  'a new term on the row written again after a delete': (w) => w.deletedTokens.length > 0 && w.row?.holderIdentity !== undefined && !w.deletedTokens.includes(w.row.fencingToken),
  "a session-held term's end marked on its session, its holder stopped": (w) => w.sessionRows.some((r) => r.endedTerms !== undefined) && w.deletedTokens.length > 0 && w.electors.every((e) => e.state.lead === undefined),
  'the successor taking the row gone under its watch': (w) => w.deletedTokens.length > 0 && w.row?.electedBy === 'successor' && w.row.revision === 1,
  'a second term without a coordinator (NoCoordination)': (w) => w.candidates.length === 0 && w.electors.filter((e) => e.state.ledToken >= 0).length >= 2,
  "a leader's sleep counted against its renew deadline, the term standing": (w) => w.electors.some((e) => e.sleep?.counted === true && e.state.lead !== undefined),
  "the heir taking the lease while its leader's machine sleeps": (w) => w.electors.some((e) => e.sleep?.asleep === true && e.state.lead !== undefined && w.row?.holderIdentity !== undefined && w.row.holderIdentity !== e.name),
  'a request landed while its sender slept, answered after it woke': (w) => w.electors.some((e) => e.sleep?.asleep === false && (e.busy?.landed !== undefined || e.background.some((o) => o.landed !== undefined))),
  // (the holder on no session: its row's `session` a peer's; the follower read the named session row, found none, and counts the row gone under its watch)
  "a row gone under a term a peer pointed at a missing session, its holder on none, counted as gone under the follower's watch": (w) => w.electors.some((e) => e.state.vanished !== undefined) && w.pendingDeletes.some((d) => d.old.session !== undefined && processOf(d.old.holderInstance) === undefined),
  // releaseOnCancel false (keptStops): the stopped leader's term named as left on its process's rows, which its Session renews on
  "a kept term named as left (leftTerms) on its process's session row, its elector gone": (w) => w.sessionRows.some((r) => r.leftTerms !== undefined) && w.electors.some((e) => e.cancel?.phase === 'gone'),
  "a kept term whose row a peer pointed at a session not its process's, ended once it ran out (its process's session renewed on)": (w) => w.keptRedirectEnded === true,
  // …an operator's move of the fencing token under a kept term (its termToken kept), and the Session's drop of a name once the lease shows its term no more
  "a fencing token moved under a term its elector left to run out (termToken kept), the name still on its process's rows": (w) => w.electors.some((e) => e.session?.left !== undefined && w.row?.holderInstance === e.session.left.instance && w.row.termToken === e.session.left.token && w.row.fencingToken !== w.row.termToken),
  "a left term's name dropped by its process's Session once a consistent read of the lease showed the term no more": (w) => w.electors.some((e) => e.leftTerm !== undefined && e.session?.left === undefined),
  // …the take-off (takeOffs): the kept term off its session, and decided again from a new read once the take-off went unanswered
  "a kept term taken off its session by its stopped elector (leavingKept)": (w) => w.keptTakenOff === true,
  "a kept term's take-off decided again from a new read after it went unanswered (afterLeaving)": (w) => w.electors.some((e) => e.busy?.then.kind === 'leavingRead' && e.state.leaving?.part === 'kept' && e.state.leaving.reads >= 1),
  // …the hold past MAX_LEFT_TERMS (leftElsewhere): held, then lifted once a name was dropped and a row renewed naming the kept term
  "a process's session rows held, more terms left than a row names (MAX_LEFT_TERMS), its elector gone": (w) => w.electors.some((e) => e.cancel?.phase === 'gone' && e.session !== undefined && holdsForLeft((e.session.others ?? 0) + (e.session.left ? 1 : 0))),
  "a hold past MAX_LEFT_TERMS lifted once a name was dropped, a row of its process renewed naming the kept term": (w) => w.electors.some((e) => e.session?.left !== undefined && e.session.others === MAX_LEFT_TERMS - 1 && w.sessionRows.some((r) => r.process === e.process && r.leftTerms !== undefined && r.renewTime > e.session!.left!.stamp)),
  "a lease's session rewritten by a peer under its holder": (w) => w.row?.session !== undefined && w.row.holderInstance !== undefined && !w.row.session.startsWith(`${processOf(w.row.holderInstance)}-`),
};

/**
 * The goals only an operator's delete or a suspended machine reaches (test/model/deletes.test.ts'
 * scopes, DELETE_SCOPES); the elections' scopes (model.test.ts) reach every other one.
 */
export const DELETE_GOALS: ReadonlySet<string> = new Set([
  "an operator's delete under a leading term",
  'the election held for a deleted term (notBefore)',
  'a new term on the row written again after a delete',
  "a session-held term's end marked on its session, its holder stopped",
  'the successor taking the row gone under its watch',
  "a leader's sleep counted against its renew deadline, the term standing",
  "the heir taking the lease while its leader's machine sleeps",
  'a request landed while its sender slept, answered after it woke',
  "a row gone under a term a peer pointed at a missing session, its holder on none, counted as gone under the follower's watch",
]);

function exploreNoting(cfg: ModelConfig, depth: number, reached: Set<string>): Exploration<World> {
  const spec = electionSpec(cfg);
  // (the goals not reached yet, made once: each state is tested against these only, dropped as they are reached)
  let pending = Object.entries(GOALS).filter(([goal]) => !reached.has(goal));
  return explore(
    {
      ...spec,
      check: (w) => {
        let hit = false;
        for (const [goal, test] of pending)
          if (test(w)) {
            reached.add(goal);
            hit = true;
          }
        if (hit) pending = pending.filter(([goal]) => !reached.has(goal));
        return spec.check(w);
      },
    },
    { maxDepth: depth },
  );
}

/** A violation's message and the trace to it, or undefined. */
export const shown = (r: Exploration<World>) => (r.violation ? `${r.violation.message}\n  ${r.violation.trace.map((t) => t.label).join('\n  ')}` : undefined);

/**
 * The tests of `scopes` (inside a describe): each scope explored, every state within its depth
 * keeping the invariants; then the goals `goals` names reached, each by some scope of these.
 */
export function checkScopes(scopes: readonly Scope[], goals: readonly string[], what: string): void {
  const reached = new Set<string>();
  /** The scopes explored so far in this run (a run filtered with -t explores the rest for the goals). */
  const explored = new Set<string>();

  it.each(scopes)('$name: every state within $depth steps keeps the invariants', ({ name, cfg, depth }) => {
    const r = exploreNoting(cfg, depth, reached);
    explored.add(name);
    expect(shown(r)).toBeUndefined();
    expect(r.complete).toBe(true);
    expect(r.depth).toBe(depth);
  }, EXPLORE_GUARD_MS);

  it(`the scopes reach ${what}`, () => {
    for (const s of scopes) if (!explored.has(s.name)) exploreNoting(s.cfg, s.depth, reached); // those a -t filter left out
    expect(goals.filter((g) => !reached.has(g))).toEqual([]);
  }, EXPLORE_GUARD_MS);
}
