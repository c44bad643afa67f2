/**
 * Fencing tokens never go back for a lease name (issue 15): not when the lease row is deleted (an
 * operator, a script, a TTL mistake), not when the table is restored from point-in-time recovery
 * (the row comes back as it was). A store downstream that keeps "the highest token seen" must
 * accept the next leader, and no restored old term may come out on top. Every writer that raises
 * the token is driven here: the coordinator's election against DynamoDB Local (its conditional
 * writes, on a manual clock); a direct acquisition (NoCoordination; the fallback takes the same
 * path) and the designated successor's takeover with real LeaderElectors on simulated time over
 * the DynamoDB model (sim/harness.ts).
 *
 * A restore is played by putting back the raw item read earlier: that is what PITR does to a row.
 */
import { DeleteItemCommand, GetItemCommand, PutItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { manualClock, type ManualClock } from '../lib/clock.js';
import { coordinatorDeps, reconcileLease, type CoordinatorDeps } from '../lib/coordinator/reconcile.js';
import { eventJsonSchemas } from '../lib/events/json-schema.js';
import { parseEvent } from '../lib/events/schemas.js';
import { HistoryRecord } from '../lib/history/schema.js';
import { FencingToken, MAX_FENCING_TOKEN, nextFencingToken } from '../lib/schemas/fencing-token.js';
import { LeaseItem } from '../lib/schemas/lease.js';
import { Sim } from '../sim/harness.js';
import { testTables, type TestTables } from './support.js';

const T0 = Date.UTC(2026, 2, 1);
/** clockSkewMs's default: the writers' clocks may differ by this much. */
const SKEW_MS = 1_000;
let t: TestTables;
let seq = 0;

beforeAll(async () => {
  t = await testTables('tokens');
});
afterAll(() => t.drop());

const rawLeaseOn = async (client: DynamoDBClient, table: string, name: string) => (await client.send(new GetItemCommand({ TableName: table, Key: { name: { S: name } }, ConsistentRead: true }))).Item!;
const deleteLeaseOn = (client: DynamoDBClient, table: string, name: string) => client.send(new DeleteItemCommand({ TableName: table, Key: { name: { S: name } } }));
const restoreLeaseOn = (client: DynamoDBClient, table: string, item: Record<string, AttributeValue>) => client.send(new PutItemCommand({ TableName: table, Item: item }));
const rawLease = (name: string) => rawLeaseOn(t.client, t.names.leases, name);
const deleteLease = (name: string) => deleteLeaseOn(t.client, t.names.leases, name);
const restoreLease = (item: Record<string, AttributeValue>) => restoreLeaseOn(t.client, t.names.leases, item);

describe('the coordinator’s elections', () => {
  let clock: ManualClock;
  let deps: CoordinatorDeps;
  let L: string;
  beforeEach(() => {
    clock = manualClock(T0);
    deps = coordinatorDeps(t.client, t.names, { clock });
    L = `coord-${++seq}`;
  });

  async function stand(name: string) {
    const now = clock.now();
    const read = await deps.candidates.read(L, name);
    await deps.candidates.write(read, { set: { emulationVersion: '1.30.0', binaryVersion: '1.30.0', preferredStrategies: ['OldestEmulationVersion'], renewTime: now, createdAt: read.item?.createdAt ?? now } });
  }
  /** One election of `name` (the only candidate, renewed just now): its token. */
  async function elect(name = 'w'): Promise<number> {
    await stand(name);
    const o = await reconcileLease(deps, L);
    expect(o.decision).toMatchObject({ kind: 'elect', winner: name });
    const l = (await deps.leases.read(L)).item!;
    expect(l.holderIdentity).toBe(name);
    return l.fencingToken;
  }
  /** The holder's term ends (as `conclave release` or the SDK's release ends it). */
  async function release() {
    const l = (await deps.leases.read(L)).item!;
    expect(await deps.leases.releaseTerm(L, { holderIdentity: l.holderIdentity!, fencingToken: l.fencingToken }, clock.now())).toBeDefined();
  }

  it('a deleted row: the next election’s token is above every token before', async () => {
    const before = await elect();
    await deleteLease(L);
    clock.advance(SKEW_MS + 1);
    expect(await elect()).toBeGreaterThan(before);
  });

  it('a deleted row, one millisecond later on the same clock', async () => {
    const tokens = [await elect()];
    await release();
    tokens.push(await elect());
    await deleteLease(L);
    clock.advance(1);
    expect(await elect()).toBeGreaterThan(Math.max(...tokens));
  });

  it('a row restored to an earlier term: the next election’s token is above every token issued since', async () => {
    const tokens = [await elect()];
    const snapshot = await rawLease(L); // the point in time the table is restored to
    for (let i = 0; i < 3; i++) {
      clock.advance(10_000);
      await release();
      tokens.push(await elect());
    }
    expect(tokens).toEqual([...tokens].sort((x, y) => x - y)); // strictly increasing all along
    expect(new Set(tokens).size).toBe(tokens.length);
    clock.advance(5 * 60_000); // a restore takes minutes
    await restoreLease(snapshot);
    expect((await deps.leases.read(L)).item).toMatchObject({ holderIdentity: 'w', fencingToken: tokens[0] });
    await release(); // the restore procedure (docs/deploy.md): end the restored terms
    expect(await elect()).toBeGreaterThan(Math.max(...tokens));
  });
});

describe('direct acquisitions (NoCoordination, the fallback)', () => {
  // The workers' own clocks, as in production (the SDK may correct them by the server's: its
  // estimate is only as good as the Date header's second, so the next acquisition waits S out).
  let sim: Sim;
  const L = 'direct';
  beforeEach(async () => {
    sim = await Sim.create();
  });
  const raw = () => rawLeaseOn(sim.client, sim.names.leases, L);

  /** A NoCoordination worker takes the (vacant) lease, returns its token and releases it. */
  async function leadOnce(identity: string): Promise<number> {
    const e = sim.elector(identity, { leaseName: L, mode: 'NoCoordination' });
    await sim.until(`${identity} leading`, () => e.elector.isLeader());
    const token = e.elector.fencingToken!;
    await e.stop(); // releases the lease
    return token;
  }

  it('a deleted row: the next acquisition’s token is above the last one', async () => {
    const before = await leadOnce('a');
    await deleteLeaseOn(sim.client, sim.names.leases, L);
    await sim.run(SKEW_MS + 1);
    expect(await leadOnce('b')).toBeGreaterThan(before);
  });

  it('a row restored to an earlier term: the next acquisition’s token is above every token issued since', async () => {
    const tokens = [await leadOnce('a')];
    const snapshot = await raw();
    for (const next of ['b', 'c']) tokens.push(await leadOnce(next));
    await sim.run(SKEW_MS + 1);
    await restoreLeaseOn(sim.client, sim.names.leases, snapshot);
    expect(await leadOnce('d')).toBeGreaterThan(Math.max(...tokens));
  });
});

describe('the designated successor’s takeover', () => {
  it('a row restored to the term before the successor’s: a designated successor takes it again with a token above the successor’s', async () => {
    const L = 'succ';
    const sim = await Sim.create({ config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } });
    const coord = sim.coordinator();
    const es = ['a', 'b', 'c'].map((id) => sim.elector(id, { leaseName: L, fallbackAfterMs: 60_000 }));
    await sim.until('a leader', () => es.find((e) => e.elector.isLeader()));
    const held = await sim.until('a successor on the lease', async () => {
      const l = (await sim.leases.read(L)).item;
      return l?.successor ? l : undefined;
    });
    coord.stop(); // only the workers act from here on
    const snapshot = await rawLeaseOn(sim.client, sim.names.leases, L); // the point in time the table is restored to
    const leader = es.find((e) => e.elector.options.identity === held.holderIdentity)!;
    const successor = es.find((e) => e.elector.options.identity === held.successor)!;
    await leader.stop(); // releases: the successor takes the lease
    await sim.until('the successor leading', () => successor.elector.isLeader(), 10_000);
    const mine = successor.elector.fencingToken!;
    expect(mine).toBeGreaterThan(held.fencingToken);

    await restoreLeaseOn(sim.client, sim.names.leases, snapshot); // the old leader's term again, naming the same successor
    // the successor's renewal fails (the term is not its own), it stops; the restored term then
    // runs out unrenewed (its holder is gone) and one of the two it names as successors takes the
    // lease: the second (issue 38) when it watched the restored term from before the restore, the
    // successor's own watch having begun only when it was deposed
    const who = successor.elector.options.identity;
    const named = [held.successor, held.secondSuccessor].filter((n): n is string => n !== undefined);
    await sim.until('a designated successor leading again', async () => {
      const l = (await sim.leases.read(L)).item;
      return l?.holderIdentity !== undefined && named.includes(l.holderIdentity) && l.fencingToken > mine && es.find((e) => e.elector.options.identity === l.holderIdentity)!.elector.isLeader();
    }, 15_000);
    expect(sim.log.of('stopped', who)[0]!.reason).toBe('deposed');
    const again = (await sim.leases.read(L)).item!;
    expect(again).toMatchObject({ electedBy: 'successor' });
    expect(again.fencingToken).toBeGreaterThan(mine);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
  });
});

describe('nextFencingToken: max(previous + 1, the writer’s clock in ms × 1000)', () => {
  const LAST_SAFE_MS = Math.floor(Number.MAX_SAFE_INTEGER / 1000); // 2255-06-05T23:47:34.740Z
  it.each([
    { name: 'no row yet: the floor', previous: undefined, now: T0, want: T0 * 1000 },
    { name: 'a row from before this scheme (small tokens): the floor', previous: 41, now: T0, want: T0 * 1000 },
    { name: 'a restored row (an old token): the floor', previous: (T0 - 3_600_000) * 1000 + 3, now: T0, want: T0 * 1000 },
    { name: 'a second acquisition in the same millisecond: +1', previous: T0 * 1000, now: T0, want: T0 * 1000 + 1 },
    { name: 'a writer whose clock is behind the last one’s: +1', previous: (T0 + 800) * 1000, now: T0, want: (T0 + 800) * 1000 + 1 },
    { name: 'a clock that reads sub-milliseconds: whole milliseconds', previous: undefined, now: T0 + 0.75, want: T0 * 1000 },
    { name: 'a clock stuck in 1970 (no RTC): still +1', previous: 5, now: 12, want: 12_000 },
    { name: 'the last millisecond whose floor is a safe integer', previous: undefined, now: LAST_SAFE_MS, want: LAST_SAFE_MS * 1000 },
  ])('$name', ({ previous, now, want }) => {
    expect(nextFencingToken(previous, now)).toBe(want);
    expect(Number.isSafeInteger(want)).toBe(true);
  });

  it('stays a safe integer until 2255, and refuses a clock past that', () => {
    expect(new Date(LAST_SAFE_MS).toISOString()).toBe('2255-06-05T23:47:34.740Z');
    expect(() => nextFencingToken(undefined, LAST_SAFE_MS + 1)).toThrow(/is the clock right/);
    // the previous token's +1, not the clock, is what overflows here (test/functions/fencing-token-max.test.ts)
    expect(() => nextFencingToken(Number.MAX_SAFE_INTEGER, T0)).toThrow(/previous 9007199254740991.*the previous token leaves no room/);
  });

  it('every schema that carries a token takes one from the floor, up to MAX_FENCING_TOKEN (one below MAX_SAFE_INTEGER: its next is still safe) and no further', () => {
    const token = nextFencingToken(undefined, T0);
    expect(MAX_FENCING_TOKEN).toBe(Number.MAX_SAFE_INTEGER - 1);
    expect(FencingToken.parse(MAX_FENCING_TOKEN)).toBe(MAX_FENCING_TOKEN);
    expect(FencingToken.safeParse(Number.MAX_SAFE_INTEGER).success).toBe(false);
    expect(LeaseItem.parse({ name: 'x', leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: token, revision: 1 }).fencingToken).toBe(token);
    const elected = parseEvent('Leader Elected', { id: 'e', lease: 'x', time: new Date(T0).toISOString(), holder: 'w', fencingToken: token, leaseTransitions: 0 });
    expect(elected.detail).toMatchObject({ fencingToken: token });
    expect(HistoryRecord.parse({ event: 'started', lease: 'x', identity: 'w', instance: 'w_1', fencingToken: token, mono: '1', wall: T0 }).fencingToken).toBe(token);
    const json = eventJsonSchemas()['Leader Elected'] as { properties: Record<string, { maximum?: number }> };
    expect(json.properties['fencingToken']!.maximum).toBe(MAX_FENCING_TOKEN);
  });
});
