/**
 * The scopes `npm test` explores, in two files run side by side (test/model/model.test.ts the
 * elections, test/model/deletes.test.ts an operator's deletes and a suspended machine), shared with
 * test/model/run.ts.
 */
import { SMALL, type ModelConfig } from './election-model.js';
import { MAX_LEFT_TERMS } from '../../lib/schemas/identity.js';

export interface Scope {
  readonly name: string;
  readonly cfg: ModelConfig;
  /** Transitions from the start: elections, polls, writes landing, ticks, faults. */
  readonly depth: number;
}

/** The elections: timing, faults, clocks, sessions, cancels and kept stops, NoCoordination (test/model/model.test.ts). */
export const ELECTION_SCOPES: readonly Scope[] = [
  // stamp clocks at either end of ±maxClockErrorMs, and one jump within it, anywhere
  { name: 'two electors, clocks off by ±500 ms, one jump', cfg: { ...SMALL, stampOffsetsMs: [-500, 500], faults: 0, clockJumps: 1 }, depth: 6 },
  // one request slow, answered late or lost (and then maybe landing later), and the leader's work failing once
  { name: 'two electors, one slow or lost request, one work failure', cfg: { ...SMALL, stampOffsetsMs: [0], faults: 1, workFailures: 1 }, depth: 7 },
  { name: 'three electors (a successor and a second successor named)', cfg: { ...SMALL, electors: 3, stampOffsetsMs: [0], faults: 0 }, depth: 6 },
  // from a held lease naming a successor: a hand-off (the leader's work fails) and the heir leading from its read (issue 38, cut 2),
  // its stamp arithmetic with clocks at either end of ±maxClockErrorMs and a jump, or its confirmation slow or lost
  { name: 'a hand-off from a held lease, clocks off by ±250 ms (maxClockErrorMs 250), one jump', cfg: { ...SMALL, start: 'held', maxClockErrorMs: 250, stampOffsetsMs: [-250, 250], faults: 0, workFailures: 1, clockJumps: 1 }, depth: 7 },
  { name: 'a hand-off from a held lease, one slow or lost request', cfg: { ...SMALL, start: 'held', stampOffsetsMs: [0], faults: 1, workFailures: 1 }, depth: 7 },
  // eventually consistent reads answered with the row as it was up to 1 s before (any version since replaced), twice
  { name: 'two electors, two reads answered with older copies of the row', cfg: { ...SMALL, stampOffsetsMs: [0], faults: 0, staleReads: 2 }, depth: 7 },
  // run() cancelled: the leader leads on, hands over (or releases after stepping down), withdraws its candidacy, is gone
  { name: "a cancelled leader's step-down from a held lease, one older copy, one slow or lost request", cfg: { ...SMALL, start: 'held', stampOffsetsMs: [0], faults: 1, cancels: 1, staleReads: 1 }, depth: 7 },
  // the whole fleet cancelled (a deploy's SIGTERM to every worker): the leader hands over (or releases), and the heir, stopping
  // too, gives up what the lease names it for — a term handed to it released, its name as successor declined (step.ts leave)
  { name: 'a held lease, both electors cancelled', cfg: { ...SMALL, start: 'held', stampOffsetsMs: [0], faults: 0, cancels: 2 }, depth: 8 },
  // every process on a Session: the leader moves its term onto its session and renews the session instead; followers and the
  // coordinator judge the term by the session's row; a session ends (its leader takes the term off it, or onto the next one)
  { name: 'a held lease on sessions, one session ending', cfg: { ...SMALL, start: 'held', stampOffsetsMs: [0], faults: 0, sessions: true, sessionEnds: 1, maxTickUnits: 3 }, depth: 8 },
  { name: 'a held lease on sessions, clocks off by ±250 ms (maxClockErrorMs 250), one jump, one session ending', cfg: { ...SMALL, start: 'held', maxClockErrorMs: 250, stampOffsetsMs: [-250, 250], faults: 0, sessions: true, sessionEnds: 1, clockJumps: 1, maxTickUnits: 3 }, depth: 7 },
  { name: 'two electors on sessions, one slow or lost request (a session renewal answered or not), one session ending', cfg: { ...SMALL, stampOffsetsMs: [0], faults: 1, sessions: true, sessionEnds: 1 }, depth: 6 },
  // issue 36: a peer of the lease rewrites its `session` to its own session, or to one that does not exist
  { name: "a held lease on sessions, a peer rewriting the lease's session", cfg: { ...SMALL, start: 'held', stampOffsetsMs: [0], faults: 0, sessions: true, sessionRedirects: 1, maxTickUnits: 3 }, depth: 7 },
  // releaseOnCancel false: the leader cancelled leaves its term to run out, its process's Session running on (its other electors),
  // and names the term as left on its rows (leftTerms); a peer may point the row at its own session or a missing one, before or after
  { name: "a held lease on sessions, its leader stopped with releaseOnCancel false (its process's Session running on), a peer rewriting the lease's session", cfg: { ...SMALL, start: 'held', stampOffsetsMs: [0], faults: 0, sessions: true, cancels: 1, keptStops: true, sessionRedirects: 1, maxTickUnits: 3 }, depth: 7 },
  // …an operator moving the fencing token under it instead (its termToken kept): the name still matches the term (by termToken), and is
  // dropped once a consistent read of the lease shows the term no more; no row of the process vouches for it past its stamp
  { name: 'a held lease on sessions, its leader stopped with releaseOnCancel false, an operator moving the fencing token under its term', cfg: { ...SMALL, start: 'held', stampOffsetsMs: [0], faults: 0, sessions: true, cancels: 1, keptStops: true, tokenMoves: 1, maxTickUnits: 5 }, depth: 6 },
  // …its term on the session its process runs on taken off it as the elector stops (step.ts leave, its `kept` part: leavingKept): a
  // consistent read, a renewal conditioned on its token naming no session, stamped from the session's stamp no later than the stamp the
  // term was left at (depth 7 reaches a session renewal landing between the leave and the take-off: 25b5c34's defect, 498 ms past)
  { name: 'take-off: a held lease on sessions, its leader stopped with releaseOnCancel false taking its term off its session', cfg: { ...SMALL, start: 'held', stampOffsetsMs: [0], faults: 0, sessions: true, cancels: 1, keptStops: true, takeOffs: true, maxTickUnits: 3 }, depth: 7 },
  // …its read or its take-off slow, answered late or lost (a take-off unanswered may have landed: decided again from a new read, afterLeaving)
  { name: 'take-off, one slow or lost request: a held lease on sessions, its leader stopped with releaseOnCancel false taking its term off its session', cfg: { ...SMALL, start: 'held', stampOffsetsMs: [0], faults: 1, sessions: true, cancels: 1, keptStops: true, takeOffs: true, maxTickUnits: 3 }, depth: 6 },
  // …its process's other electors (not modelled) having left MAX_LEFT_TERMS terms of other leases: the kept stop's is one more than a
  // row names, so the process's session rows are held (step.ts holdsForLeft: none renewed, none started) until a name is dropped
  { name: 'past MAX_LEFT_TERMS: a held lease on sessions, its leader stopped with releaseOnCancel false, its process holding its session rows', cfg: { ...SMALL, start: 'held', stampOffsetsMs: [0], faults: 0, sessions: true, cancels: 1, keptStops: true, leftElsewhere: MAX_LEFT_TERMS, sessionEnds: 1, maxTickUnits: 3 }, depth: 6 },
  // a take in doubt (LeaderElector.putOnSession): the leader's renewal moving its term onto its session slow or lost, so the session's
  // renewals are held; cancelled, its leaving settles the doubt from a consistent read (step.ts leave, its `doubt` part: the term
  // there released, or the hold dropped) before the hold goes; its release and reads lost, late or refused as any request
  { name: 'a take in doubt: a held lease on sessions, its leader cancelled, one slow or lost request', cfg: { ...SMALL, start: 'held', stampOffsetsMs: [0], faults: 1, sessions: true, cancels: 1, maxTickUnits: 3 }, depth: 7 },
  // client-go's mode without a coordinator: every elector takes a vacant lease itself, by a write conditioned on the revision it read
  { name: 'NoCoordination: two electors, clocks off by ±500 ms, one jump', cfg: { ...SMALL, mode: 'NoCoordination', stampOffsetsMs: [-500, 500], faults: 0, clockJumps: 1 }, depth: 8 },
  { name: 'NoCoordination: two electors, one slow or lost request, one work failure, one cancel', cfg: { ...SMALL, mode: 'NoCoordination', stampOffsetsMs: [0], faults: 1, workFailures: 1, cancels: 1 }, depth: 8 },
  { name: 'NoCoordination: two electors on sessions, one slow or lost request, one session ending', cfg: { ...SMALL, mode: 'NoCoordination', stampOffsetsMs: [0], faults: 1, sessions: true, sessionEnds: 1 }, depth: 7 },
];

/** An operator's deletes of the lease row, and a machine suspended (test/model/deletes.test.ts). */
export const DELETE_SCOPES: readonly Scope[] = [
  // an operator deletes the row under the leading term: the lease stream holds the election for the deleted term (notBefore), a
  // function that reconciles the missing row first opens one awaiting the stream, the successor takes the row gone under its watch
  { name: "a held lease, an operator deleting its row", cfg: { ...SMALL, start: 'held', stampOffsetsMs: [0], faults: 0, deletes: 1, maxTickUnits: 4 }, depth: 10 },
  // …its term on its session: the stream holds the next election unmarked, marks the term ended on the session (read in the
  // answer to the holder's next session renewal), then holds it a lease duration
  // a machine suspended (its monotonic clock and timers still, it sends nothing) 1.25 s (a counted sleep inside the renew deadline:
  // the term stands, its deadline moved back), 3.25 s (across it) or 4.25 s (past the lease: the heir takes it meanwhile); lease 4 s, renew deadline 3 s
  { name: "a held lease, one machine suspended 1.25, 3.25 or 4.25 s (lease 4 s, renew deadline 3 s)", cfg: { ...SMALL, start: 'held', leaseDurationMs: 4_000, renewDeadlineMs: 3_000, stampOffsetsMs: [0], faults: 0, sleeps: 1, sleepUnits: [3, 7, 9], coordinator: { ...SMALL.coordinator, defaultLeaseDurationSeconds: 4 } }, depth: 7 },
  { name: 'a held lease on sessions, an operator deleting its row', cfg: { ...SMALL, start: 'held', stampOffsetsMs: [0], faults: 0, sessions: true, deletes: 1, maxTickUnits: 3 }, depth: 8 },
  // …its holder on no session, its row naming a session that does not exist (a peer's redirect, issue 36): the follower that
  // finds the row gone reads that session row and, none there, counts the row gone under its watch (seed 97467's tail; depth 10
  // reaches the successor's take: 1,403,556 states, 240 s, 2026-12-01)
  { name: 'a held lease on no session, its row naming a missing session, an operator deleting its row', cfg: { ...SMALL, start: 'held', stampOffsetsMs: [0], faults: 0, deletes: 1, heldSession: 'no-such-session', maxTickUnits: 4 }, depth: 8 },
];

/** Every scope CI explores, each to its depth. */
export const SCOPES: readonly Scope[] = [...ELECTION_SCOPES, ...DELETE_SCOPES];
