/**
 * A follower judging a term off the session row its lease names (the row gone, or another
 * process's: judgedOffNamed) judges it by its holder's own process's sessions (ownSessionRead,
 * LeaseLock.processSession). A row there the schema refuses that may be that process's own session
 * (mayBeProcessSession) makes the term judged by nobody, as the coordinator's tick, the CLI and
 * getLeader judge it (docs/safety.md, "A refused row among the holder's own process's sessions"):
 * the follower keeps following, takes nothing and reports nothing, as on a refused named row. A
 * session row it reads by name that the schema refuses (the one its lease names, or its holder's own
 * process's row found by that query) fails its poll the same way, with the same BrokenSessionError.
 *
 * On DynamoDB Local with simulated time: the follower's real step (lib/sdk/step.ts followerStep),
 * its effects carried through the real lock (dynamoLeaseLock, SessionReader) the way the elector's
 * shell carries them (lib/sdk/elector.ts carry), each poll at a monotonic time the test sets.
 */
import { DeleteItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionKey } from '../../lib/schemas/identity.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { dynamoLeaseLock, SessionReader, type LeaseLock } from '../../lib/sdk/lock.js';
import { FOLLOWING, followerStep, type FollowerEvent, type FollowerState, type Moment } from '../../lib/sdk/step.js';
import { BrokenSessionError } from '../../lib/stores/errors.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { MIN, NOW, SEC } from '../fixtures.js';
import { testTables, type TestTables } from '../support.js';
import { carryFollowerEffect, stepSettings } from './step-fixtures.js';

let t: TestTables;
let leases: LeaseStore;
let identities: IdentityStore;
beforeAll(async () => {
  t = await testTables('follower-refused');
  leases = new LeaseStore(t.client, t.names.leases);
  identities = new IdentityStore(t.client, t.names.identities);
});
afterAll(() => t?.drop());

/** Monotonic time of the follower's first poll; DynamoDB's time is NOW then. */
const M0 = 1_000_000;

/** Lease `name` held by a1 of process `process` (15 s long, token 7), on session `session`, its own stamp a minute old (a holder on a session does not move it). */
const heldBy = (name: string, process: string, session: string, extra: Partial<Lease> = {}) =>
  leases.write(LeaseStore.readOf(name, undefined), {
    set: { holderIdentity: 'a1', holderInstance: `a1_1@${process}`, session, acquireTime: NOW - 10 * MIN, renewTime: NOW - MIN, leaseDurationSeconds: 15, leaseTransitions: 1, fencingToken: 7, ...extra },
  });
/** A readable session row of process `process`, renewed at `renewTime`. */
const readableSession = (name: string, process: string, renewTime: number) =>
  identities.write({ key: sessionKey(name), item: undefined, revision: 0 }, { set: { holderIdentity: `${name}_1`, process, hostname: 'web-9', leaseDurationSeconds: 15, acquireTime: NOW - 10 * MIN, renewTime } });
/** Session row `name` of process `process` as a writer of another shape keeps it (its host name a number: the schema refuses it), renewed at `renewTime`. */
const refusedSession = (name: string, process: string, renewTime: number, revision: number) =>
  t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall({ ...sessionKey(name), holderIdentity: `${name}_1`, process, hostname: 5, leaseDurationSeconds: 15, acquireTime: NOW - 10 * MIN, renewTime, revision }) }));

/**
 * A follower of lease `leaseName` (identity b, instance b-1, on no session; client-go's timings),
 * its step fed by the lock on DynamoDB Local as the elector's shell feeds it. `poll(ms)`: one poll
 * `ms` after the first, carried out to its end; what it wrote, and the fault it ended on (the shell
 * reports it and polls again), are returned.
 */
function follower(leaseName: string) {
  const s = stepSettings('b', { leaseName, candidate: false, sessionFallbackMs: 78_000 });
  let mono = M0;
  const lock: LeaseLock = dynamoLeaseLock(leaseName, leases, new CandidateStore(t.client, t.names.candidates), new SessionReader(t.client, t.names.identities, { monotonic: () => mono }));
  let state: FollowerState = FOLLOWING;
  const moment = (): Moment => ({ now: mono, clock: { ok: true, errorMs: 5 }, offset: NOW - M0, jumps: 0 });
  const carry = carryFollowerEffect(lock, s, () => NOW + mono - M0);
  return {
    async poll(ms: number): Promise<{ readonly took: boolean; readonly reported: boolean; readonly fault: unknown }> {
      mono = M0 + ms;
      let took = false;
      let reported = false;
      let next: FollowerEvent | undefined = { kind: 'poll', pushLive: false };
      try {
        while (next) {
          const out = followerStep(s, state, next, moment());
          state = out.state;
          next = undefined;
          for (const f of out.effects) {
            if (f.kind === 'lead') took = true;
            if (f.kind === 'reportVacancy') reported = true;
            next = (await carry(f)) ?? next;
          }
        }
      } catch (fault) {
        return { took, reported, fault };
      }
      return { took, reported, fault: undefined };
    },
  };
}

/** What a follower's polls came to, each 2 s from `fromMs` to `toMs` (stopping once it took the lease), the holder renewing its refused row (if any) before each. */
async function polls(f: ReturnType<typeof follower>, fromMs: number, toMs: number, renew: (ms: number) => Promise<unknown>) {
  const out: { ms: number; took: boolean; reported: boolean; fault: unknown }[] = [];
  for (let ms = fromMs; ms <= toMs; ms += 2 * SEC) {
    await renew(ms);
    const p = await f.poll(ms);
    out.push({ ms, ...p });
    if (p.took) break;
  }
  return { moves: out.filter((p) => p.took || p.reported).map(({ ms, took, reported }) => ({ ms, ...(took ? { took } : {}), ...(reported ? { reported } : {}) })), faults: out.map((p) => p.fault) };
}

describe("a follower judging a term off its named row, a row of its holder's process's partitions that the schema refuses (it may be its own session): judged by nobody, as the coordinator's tick, the CLI and getLeader judge it", () => {
  const SUCCESSOR = { successor: 'b', successorInstance: 'b-1' };

  /**
   * Lease `lease` held by a1 of process `process` off its named row (gone), that process's session
   * kept renewed by a writer of another shape (the schema refuses it), and, if `stale`, an ended
   * session of that process beside it, readable and not yet collected: for 100 s, polled every
   * 2 s, the follower neither takes nor reports, each poll failing on a BrokenSessionError naming
   * that row, the lease row as it was.
   */
  async function judgedByNobody(lease: string, process: string, extra: Partial<Lease>, stale: boolean): Promise<void> {
    const live = `s-${process}-live`;
    if (stale) await readableSession(`s-${process}-old`, process, NOW - 5 * MIN);
    await heldBy(lease, process, `s-${lease}-gone`, extra); // the row it names is gone (collected, or a peer's redirect)
    const before = (await leases.read(lease)).item!;
    const f = follower(lease);
    let revision = 3;
    const seen = await polls(f, 0, 100 * SEC, (ms) => refusedSession(live, process, NOW + ms - SEC, revision++));
    expect(seen.moves).toEqual([]);
    for (const fault of seen.faults) {
      expect(fault).toBeInstanceOf(BrokenSessionError);
      expect((fault as BrokenSessionError).key).toEqual(sessionKey(live));
      expect((fault as BrokenSessionError).message).toMatch(new RegExp(`^a follower of lease "${lease}": the term of a1 \\(fencing token 7\\) is held on session "${live}", whose row on the identities table "${t.names.identities}" does not match the schema \\(hostname: .*followers wait`));
    }
    expect((await leases.read(lease)).item).toEqual(before);
  }

  it("the successor, a stale readable row of that process beside it, neither takes nor reports for 100 s while the holder renews that row; each poll fails on a BrokenSessionError naming it (before: taken at 16,000 ms, judged by the stale row)", () =>
    judgedByNobody('own-refused-successor', 'pr1', SUCCESSOR, true));

  it("a follower that is no successor, a stale readable row of that process beside it, neither reports nor takes for 100 s (before: reported vacant at 16,000 ms and taken at 26,000 ms, the report unanswered: the coordinator judges the term by nobody)", () =>
    judgedByNobody('own-refused-follower', 'pr2', {}, true));

  it("the successor, no readable row of that process, neither takes nor reports for 100 s (before: taken at 80,000 ms, by the fallback: sessionFallbackMs)", () =>
    judgedByNobody('own-refused-only', 'pr3', SUCCESSOR, false));

  it("once that row is gone (the tick collects it once expired by its stamp, or an operator's delete), the term is judged again: by the stale row, taken a lease duration on", async () => {
    const [lease, process] = ['own-refused-repaired', 'pr4'];
    const live = `s-${process}-live`;
    await readableSession(`s-${process}-old`, process, NOW - 5 * MIN);
    await heldBy(lease, process, `s-${lease}-gone`, SUCCESSOR);
    await refusedSession(live, process, NOW - 2 * SEC, 3);
    const f = follower(lease);
    expect((await polls(f, 0, 20 * SEC, async () => undefined)).moves).toEqual([]);
    await t.client.send(new DeleteItemCommand({ TableName: t.names.identities, Key: marshall(sessionKey(live)) }));
    const after = await polls(f, 22 * SEC, 60 * SEC, async () => undefined);
    expect(after.moves).toEqual([{ ms: 38 * SEC, took: true }]);
    expect(after.faults.every((e) => e === undefined)).toBe(true);
  });

  it('a row the schema refuses there that names another process by a string is no bar (a readable row so written is not its own either): judged by the stale row, taken at 16,000 ms, as before', async () => {
    const [lease, process] = ['other-refused', 'pr5'];
    await readableSession(`s-${process}-old`, process, NOW - 5 * MIN);
    await refusedSession('s-p9-live', 'p9', NOW - 2 * SEC, 3);
    await heldBy(lease, process, `s-${lease}-gone`, SUCCESSOR);
    const seen = await polls(follower(lease), 0, 30 * SEC, async () => undefined);
    expect(seen.moves).toEqual([{ ms: 16 * SEC, took: true }]);
    expect(seen.faults.every((e) => e === undefined)).toBe(true);
  });
});

describe("a follower reading by name a session row the schema refuses (the one its lease names, or its holder's own process's row found before): reported as a BrokenSessionError naming the lease, the term, the row and the repair, as a refused row among its holder's process's sessions is", () => {
  const SUCCESSOR = { successor: 'b', successorInstance: 'b-1' };

  /** Each fault a BrokenSessionError of lease `lease`'s term (a1, token 7) naming session row `row` and the command that deletes it. */
  function expectBroken(faults: readonly unknown[], lease: string, row: string): void {
    for (const fault of faults) {
      // the store's plain ValidationError before, naming neither the lease, the term nor the repair
      expect(fault).toBeInstanceOf(BrokenSessionError);
      const e = fault as BrokenSessionError;
      expect(e.term).toEqual({ lease, holderIdentity: 'a1', fencingToken: 7, session: row });
      expect(e.key).toEqual(sessionKey(row));
      expect(e.table).toBe(t.names.identities);
      expect(e.repair).toBe(`aws dynamodb delete-item --table-name ${t.names.identities} --key '${JSON.stringify({ component: { S: sessionKey(row).component }, name: { S: sessionKey(row).name } })}'`);
      expect(e.message).toMatch(new RegExp(`^a follower of lease "${lease}": the term of a1 \\(fencing token 7\\) is held on session "${row}", whose row on the identities table "${t.names.identities}" does not match the schema \\(hostname: .*followers wait`));
      expect(e.message).toContain(e.repair);
      expect(e.issues).toEqual([expect.objectContaining({ field: 'hostname' })]); // still the store's refusal (a ValidationError)
    }
  }

  it.each([
    ['the successor', 'named-refused-successor', 'pn1', SUCCESSOR],
    ['a follower that is no successor', 'named-refused-follower', 'pn2', {}],
  ] as const)('%s of a term held on a session whose row the schema refuses neither takes nor reports for 100 s while the holder renews that row; each poll fails on a BrokenSessionError naming it', async (_, lease, process, extra) => {
    const live = `s-${process}-live`;
    await heldBy(lease, process, live, extra);
    const before = (await leases.read(lease)).item!;
    let revision = 3;
    const seen = await polls(follower(lease), 0, 100 * SEC, (ms) => refusedSession(live, process, NOW + ms - SEC, revision++));
    expect(seen.moves).toEqual([]);
    expect(seen.faults).toHaveLength(51);
    expectBroken(seen.faults, lease, live);
    expect((await leases.read(lease)).item).toEqual(before);
  });

  it("the successor of a term judged off its named row (gone) by its holder's own process's row, found by the query and read by name at the next polls, once that row is refused: neither takes nor reports for 100 s; each poll fails on a BrokenSessionError naming that row", async () => {
    const [lease, process] = ['own-read-refused', 'pn3'];
    const own = `s-${process}-own`;
    await heldBy(lease, process, `s-${lease}-gone`, SUCCESSOR);
    const before = (await leases.read(lease)).item!;
    const f = follower(lease);
    // found by the process's query, readable and renewed: the term is live by it
    await readableSession(own, process, NOW - SEC);
    expect(await f.poll(0)).toEqual({ took: false, reported: false, fault: undefined });
    // then kept renewed by a writer of another shape: read by name while the query's finding holds
    // (a lease duration, ownSessionRead), queried again after, where the refused row bars it (21c0ed0)
    let revision = 3;
    const seen = await polls(f, 2 * SEC, 100 * SEC, (ms) => refusedSession(own, process, NOW + ms - SEC, revision++));
    expect(seen.moves).toEqual([]);
    expect(seen.faults).toHaveLength(50);
    expectBroken(seen.faults, lease, own);
    expect((await leases.read(lease)).item).toEqual(before);
  });

  it("the successor of a term on no session whose lease row named a session (a peer's write), the lease row then found gone and that session row refused: neither takes nor reports; the poll fails on a BrokenSessionError naming the row, the last term and the lease", async () => {
    const lease = 'gone-named-refused';
    const named = `s-${lease}-peer`;
    // a1 on no session (its instance names no process) renews its lease row itself; a peer wrote `session` on it
    await leases.write(LeaseStore.readOf(lease, undefined), {
      set: { holderIdentity: 'a1', holderInstance: 'a1-1', session: named, acquireTime: NOW - 10 * MIN, renewTime: NOW - SEC, leaseDurationSeconds: 15, leaseTransitions: 1, fencingToken: 7, ...SUCCESSOR },
    });
    const f = follower(lease);
    // no such session row: the term is judged by its own stamp, live
    expect(await f.poll(0)).toEqual({ took: false, reported: false, fault: undefined });
    // then the lease row is deleted (an operator), and the row it named written by a writer of another shape
    await refusedSession(named, 'pn4', NOW, 1);
    await t.client.send(new DeleteItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }) }));
    // the row found gone, the session the last term named is read before the term counts as vanished (offSessionRead)
    const gone = await f.poll(2 * SEC);
    expect(gone.took).toBe(false);
    expect(gone.reported).toBe(false);
    // before: the store's plain ValidationError ("invalid identity lease …"), naming neither the lease, the term nor the repair
    expectBroken([gone.fault], lease, named);
    expect((await leases.read(lease)).item).toBeUndefined();
  });
});
