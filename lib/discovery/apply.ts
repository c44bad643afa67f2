/**
 * A leader change applied to a lease's name, in fencing-token order, however the events arrive.
 *
 * EventBridge delivers at least once and in no order, Lambda retries, and two invocations for one
 * lease can run at once; the naming service (Cloud Map, Route 53) has no conditional write. So the
 * order lives in the discovery table (lib/discovery/state-store.ts), and every writer of the name
 * checks it after its call:
 *
 * 1. **Claim.** The change becomes the lease's state only if it is newer: a higher fencing token,
 *    or the same term's end after its beginning (a conditional UpdateItem). The claim also adds this
 *    invocation to the row's writers, with the time by which it is over (`until`).
 * 2. **Older or the same?** Then, if the row says its state was applied and nobody may be writing,
 *    nothing is done: an older event never touches the name. Otherwise (a writer still at work, or
 *    one that died after writing) this invocation joins the writers and sees the current state
 *    through, so a write that may have gone astray is corrected.
 * 3. **Hold a shared name.** A name other leases' writes can land on too (LeaderNaming sharedName:
 *    a Route 53 record of `Orders` is `orders`' too) is written only by the lease that holds it
 *    (DiscoveryStateStore.holdName). A lease whose name another holds writes nothing: a term's
 *    state is left unapplied (an error to log; the sweep tries it again), an end is seen through
 *    (the name shows nothing of this lease's: it passed on only once this lease's end was).
 * 4. **Write, then check.** Set the name to the row's state (nameStateOf), then settle: mark it
 *    applied and leave the writers, on the condition that the state is still the one written. If a
 *    newer state was claimed meanwhile, this invocation's write may have landed after that state's
 *    own: it writes the newer state and checks again.
 *
 * What holds: the row's state only moves forward. Every write to the name is followed by a check
 * of the state by its writer, so the last write in time is checked after it landed, and is the
 * state's at that check (a later claim would be followed by a later write). So once the invocations
 * for a lease have finished, the name shows the newest state claimed — the newest change delivered.
 * A change older than the applied state never writes (step 2).
 *
 * What remains: (a) while an invocation holding an older state is between its write and its check
 * (one naming-service call and one DynamoDB write), its write can show the older leader for that
 * long; (b) if it dies there, until its retry (Lambda retries a failed asynchronous invocation
 * after about 1 and 3 minutes) or the lease's next change: either finds its entry in `writers`
 * and writes the current state again; (c) the naming service must apply two calls on one name in
 * the order it accepted them (Route 53 applies a zone's change batches in order; Cloud Map's
 * RegisterInstance and DeregisterInstance on one instance, each waited for until its operation is
 * over: lib/discovery/cloud-map.ts), and DNS answers are cached for the
 * record's TTL (and a deleted record's absence for the zone's SOA TTL): docs/deploy.md.
 */
import { uniqueId, type Clock } from '../clock.js';
import type { LeaderChange } from './change.js';
import { nameStateOf, showName, type LeaderNaming, type NameState } from './naming.js';
import { stateOf, type DiscoveryRow, type DiscoveryStateStore } from './state-store.js';

/**
 * How long after its invocation's deadline a writer's call may still land: a call sent just before
 * the deadline and taken up by the service a little later. After that, its entry in `writers` is
 * removed by whoever settles next.
 */
export const WRITER_GRACE_MS = 60_000;

/**
 * How long a name several leases share (LeaderNaming sharedName) stays with the lease that held it
 * after its term's end was seen through with no term since: another lease that shares it is refused
 * until then, and takes it over after. Long beside a hand-off's gap, so a lease led again keeps its
 * name; an hour, so a lease renamed to end the clash frees its name within one.
 */
export const NAME_HANDOVER_IDLE_MS = 3_600_000;

/** Writes and checks per invocation before it gives up (and Lambda retries it): each extra round means a newer state was claimed meanwhile. */
export const MAX_ROUNDS = 5;

export interface DiscoveryDeps {
  readonly state: DiscoveryStateStore;
  readonly naming: LeaderNaming;
  readonly clock: Clock;
}

/**
 * What became of a change:
 * - `applied`: it was the newest; the name shows it (or a newer state claimed meanwhile);
 * - `caughtUp`: it was not newer, but a write to the name was unsettled, so the current state was written again;
 * - `stale`: an older state than the one applied: nothing was written;
 * - `duplicate`: the state it names is applied already (a redelivery): nothing was written;
 * - `refused`: the name is another lease's (a shared name that lease holds): nothing was written,
 *   and `refused` says why and what to do.
 */
export interface ApplyOutcome {
  readonly outcome: 'applied' | 'caughtUp' | 'stale' | 'duplicate' | 'refused';
  readonly refused?: string;
  /** The lease whose shared name this one took over (holdName), to write it from now on. */
  readonly takenFrom?: string;
  /** The state the name shows after it (`term 7`, `end 7`), and what that means. */
  readonly state: string;
  readonly name?: NameState;
  /** Writes to the naming service. */
  readonly writes: number;
}

/** Thrown when newer states kept being claimed for MAX_ROUNDS writes: the invocation fails, and its retry finishes. */
export class DiscoveryRaceError extends Error {
  override readonly name = 'DiscoveryRaceError';
  constructor(
    readonly lease: string,
    readonly rounds: number,
  ) {
    super(`lease "${lease}": a newer leader was claimed after each of ${rounds} writes to its name; the retry writes the newest`);
  }
}

/** A writer entry: `<until>/<id>`, `until` the epoch ms after which nothing this invocation sent can land. */
export const writerEntry = (deadline: number, id: string): string => `${deadline + WRITER_GRACE_MS}/${id}`;

/** The writers of `row` whose time is up at `now`. */
export const expiredWriters = (row: Pick<DiscoveryRow, 'writers'>, now: number): string[] => [...(row.writers ?? [])].filter((w) => Number(w.slice(0, w.indexOf('/'))) < now);

/** Whether an invocation that claimed nothing may leave the name alone: its state applied, and nobody writing. */
export const settled = (row: Pick<DiscoveryRow, 'applied' | 'writers'>): boolean => row.applied && (row.writers?.size ?? 0) === 0;

/**
 * Applies `change` to the lease's name (the steps above). `deadline`: the epoch ms by which this
 * invocation ends (Lambda's remaining time), on `deps.clock`.
 */
export async function applyLeaderChange(deps: DiscoveryDeps, change: LeaderChange, deadline: number): Promise<ApplyOutcome> {
  const me = writerEntry(deadline, uniqueId(deps.clock));
  const claim = await deps.state.claim(change, me, deps.clock.now());
  let row = claim.row;
  if (!claim.won) {
    const same = row.fencingToken === change.fencingToken && row.ended === (change.kind === 'ended');
    if (settled(row)) return { outcome: same ? 'duplicate' : 'stale', state: stateOf(row), writes: 0 };
    row = await deps.state.join(change.lease, me);
  }
  const shared = deps.naming.sharedName?.(change.lease);
  let held = shared === undefined;
  let takenFrom: string | undefined;
  for (let round = 1; ; round++) {
    // held after this writer is one of the lease's writers (the claim, or join): it cannot pass on before it leaves
    const hold = held ? undefined : await deps.state.holdName(shared!.name, change.lease, { given: shared!.given, idleBefore: deps.clock.now() - NAME_HANDOVER_IDLE_MS });
    if (hold && !hold.held) {
      const gone = [me, ...expiredWriters(row, deps.clock.now()).filter((w) => w !== me)];
      const refused = `its name ${shared!.name} is lease "${hold.heldBy}"'s too (DNS names ignore case), and "${hold.heldBy}" holds it: nothing is written for "${change.lease}" until a term of "${hold.heldBy}" has ended, with none since, ${NAME_HANDOVER_IDLE_MS / 60_000} minutes ago. Rename one of the two leases, or give leaderDiscovery.leaseNames the one to name`;
      if (!row.ended) {
        await deps.state.leave(change.lease, gone);
        return { outcome: 'refused', refused, state: stateOf(row), writes: 0 };
      }
      const s = await deps.state.settle(row, gone);
      if (s.settled) return { outcome: 'refused', refused, state: stateOf(row), writes: 0 };
      if (round >= MAX_ROUNDS) throw new DiscoveryRaceError(change.lease, round);
      row = s.row; // a newer state was claimed: held or not, as for it
      continue;
    }
    held = true;
    takenFrom ??= hold?.held ? hold.from : undefined;
    // within the invocation's time: a call still waiting at its end would be cut by Lambda's timeout
    const name = await showName(deps.naming, change.lease, nameStateOf(row, deps.naming), deadline - deps.clock.now());
    const s = await deps.state.settle(row, [me, ...expiredWriters(row, deps.clock.now()).filter((w) => w !== me)]);
    if (s.settled) return { outcome: claim.won ? 'applied' : 'caughtUp', state: stateOf(row), name, writes: round, ...(takenFrom !== undefined ? { takenFrom } : {}) };
    if (round >= MAX_ROUNDS) throw new DiscoveryRaceError(change.lease, round);
    row = s.row; // a newer state was claimed: this write may have landed after its writer's
  }
}
