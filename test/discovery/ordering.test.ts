/**
 * A lease's name follows its leader in fencing-token order however the events arrive
 * (lib/discovery/apply.ts): the order is kept by conditional writes on DynamoDB Local (real
 * conditions), the name is a Cloud Map instance on the fake Cloud Map (test/discovery/fake-aws.ts),
 * whose writes a test holds back to put them in the order it wants.
 */
import { randomUUID } from 'node:crypto';
import { GetItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DISCOVERY_ACCESS } from '../../infra/access.js';
import { manualClock, seededRandom, type ManualClock } from '../../lib/clock.js';
import { applyLeaderChange, DiscoveryRaceError, MAX_ROUNDS, WRITER_GRACE_MS, type DiscoveryDeps } from '../../lib/discovery/apply.js';
import type { LeaderChange } from '../../lib/discovery/change.js';
import { cloudMapNaming } from '../../lib/discovery/cloud-map.js';
import type { LeaderNaming } from '../../lib/discovery/naming.js';
import { DiscoveryStateStore, type DiscoveryRow } from '../../lib/discovery/state-store.js';
import { DISCOVERY_TABLE } from '../../lib/discovery/wiring.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { createTable, deleteTable } from '../../lib/stores/table-admin.js';
import { fakeAws, type FakeAws, type RecordedCall } from './fake-aws.js';

const T0 = Date.UTC(2026, 0, 1, 12);
/** An invocation's deadline: 30 s on (the function's timeout). */
const deadline = (clock: ManualClock) => clock.now() + 30_000;

let aws: FakeAws;
let client: DynamoDBClient;
/** The state store's own client: what it sends is recorded. */
let storeClient: DynamoDBClient;
let table: string;
/** The DynamoDB operations the state store sent, as IAM actions. */
const dynamoActions = new Set<string>();

beforeAll(async () => {
  aws = await fakeAws();
  client = localClient(inject('ddbEndpoint'));
  storeClient = localClient(inject('ddbEndpoint'));
  storeClient.middlewareStack.add((next, context) => (args) => {
    dynamoActions.add(`dynamodb:${String(context.commandName).replace(/Command$/, '')}`);
    return next(args);
  }, { step: 'initialize', name: 'recordActions' });
  table = `t-discovery-${randomUUID().slice(0, 8)}`;
  await createTable(client, table, DISCOVERY_TABLE);
});
afterAll(async () => {
  await deleteTable(client, table);
  client.destroy();
  storeClient.destroy();
  await aws?.close();
});

const began = (lease: string, fencingToken: number, holder: string, address?: string): LeaderChange => ({ kind: 'began', lease, fencingToken, holder, address, eventId: `e-${fencingToken}-began` });
const ended = (lease: string, fencingToken: number): LeaderChange => ({ kind: 'ended', lease, fencingToken, why: 'released', eventId: `e-${fencingToken}-ended` });

/** A fresh lease, and deps on the shared table and fake Cloud Map. */
function setup(naming?: (base: LeaderNaming) => LeaderNaming) {
  const lease = `jobs-${randomUUID().slice(0, 8)}`;
  const clock = manualClock(T0);
  const base = cloudMapNaming(aws.cloudMap(), aws.serviceId);
  const deps: DiscoveryDeps = { state: new DiscoveryStateStore(storeClient, table), naming: naming ? naming(base) : base, clock };
  /** What the name shows: the leader's holder and token, or undefined. */
  const name = () => {
    const i = aws.instances.get(lease);
    return i && { holder: i['holder'], fencingToken: Number(i['fencingToken']) };
  };
  const row = async (): Promise<DiscoveryRow | undefined> => {
    const out = await client.send(new GetItemCommand({ TableName: table, Key: { lease: { S: lease } }, ConsistentRead: true }));
    return out.Item && (unmarshall(out.Item) as DiscoveryRow);
  };
  const writes = () => aws.calls.filter((c) => c.input['InstanceId'] === lease && c.action !== 'servicediscovery:GetInstance').length;
  return { lease, clock, deps, name, row, writes };
}

/** Holds the first write `matches` picks at the service until `release()`; `arrived` resolves when it is held. */
function hold(matches: (c: RecordedCall) => boolean) {
  let release!: () => void;
  let arrived!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const arrival = new Promise<void>((r) => (arrived = r));
  let taken = false;
  const previous = aws.beforeWrite;
  aws.beforeWrite = async (c) => {
    if (!taken && matches(c)) {
      taken = true;
      arrived();
      await released;
    }
    await previous?.(c);
  };
  return { arrived: arrival, release: () => release(), done: () => (aws.beforeWrite = previous) };
}
const tokenOf = (lease: string, token: number) => (c: RecordedCall) => c.input['InstanceId'] === lease && (c.input['Attributes'] as Record<string, string> | undefined)?.['fencingToken'] === String(token);

describe('events one after another', () => {
  it('in order: each new term points the name at its leader; a release clears it', async () => {
    const s = setup();
    expect(await applyLeaderChange(s.deps, began(s.lease, 1, 'w1', '10.0.0.1:8080'), deadline(s.clock))).toMatchObject({ outcome: 'applied', state: 'term 1', writes: 1 });
    expect(s.name()).toEqual({ holder: 'w1', fencingToken: 1 });
    await applyLeaderChange(s.deps, began(s.lease, 2, 'w2', '10.0.0.2:8080'), deadline(s.clock));
    expect(s.name()).toEqual({ holder: 'w2', fencingToken: 2 });
    expect(await applyLeaderChange(s.deps, ended(s.lease, 2), deadline(s.clock))).toMatchObject({ outcome: 'applied', state: 'end 2' });
    expect(s.name()).toBeUndefined();
    await applyLeaderChange(s.deps, began(s.lease, 3, 'w3', 'http://10.0.0.3:8080/'), deadline(s.clock));
    expect(s.name()).toEqual({ holder: 'w3', fencingToken: 3 });
    expect(await s.row()).toMatchObject({ fencingToken: 3, ended: false, holder: 'w3', address: 'http://10.0.0.3:8080/', applied: true, eventId: 'e-3-began' });
    expect((await s.row())!.writers).toBeUndefined(); // every writer left
  });

  it('out of order: an older term delivered after a newer one writes nothing', async () => {
    const s = setup();
    await applyLeaderChange(s.deps, began(s.lease, 5, 'w5', '10.0.0.5:8080'), deadline(s.clock));
    const before = s.writes();
    expect(await applyLeaderChange(s.deps, began(s.lease, 4, 'w4', '10.0.0.4:8080'), deadline(s.clock))).toEqual({ outcome: 'stale', state: 'term 5', writes: 0 });
    expect(s.writes()).toBe(before);
    expect(s.name()).toEqual({ holder: 'w5', fencingToken: 5 });
  });

  it('a release of an older term after a newer leader is ignored; only the current term’s end clears the name', async () => {
    const s = setup();
    await applyLeaderChange(s.deps, began(s.lease, 1, 'w1', '10.0.0.1:8080'), deadline(s.clock));
    await applyLeaderChange(s.deps, began(s.lease, 2, 'w2', '10.0.0.2:8080'), deadline(s.clock));
    expect(await applyLeaderChange(s.deps, ended(s.lease, 1), deadline(s.clock))).toMatchObject({ outcome: 'stale' });
    expect(s.name()).toEqual({ holder: 'w2', fencingToken: 2 });
    await applyLeaderChange(s.deps, ended(s.lease, 2), deadline(s.clock));
    expect(s.name()).toBeUndefined();
  });

  it('a term’s end delivered before its beginning: the beginning, late, does not bring the ended leader back', async () => {
    const s = setup();
    await applyLeaderChange(s.deps, began(s.lease, 6, 'w6', '10.0.0.6:8080'), deadline(s.clock));
    await applyLeaderChange(s.deps, ended(s.lease, 7), deadline(s.clock)); // term 7's end, before its Leader Elected
    expect(s.name()).toBeUndefined();
    expect(await applyLeaderChange(s.deps, began(s.lease, 7, 'w7', '10.0.0.7:8080'), deadline(s.clock))).toMatchObject({ outcome: 'stale', state: 'end 7' });
    expect(s.name()).toBeUndefined();
  });

  it('a duplicate delivery (a retry, EventBridge at least once) writes nothing', async () => {
    const s = setup();
    await applyLeaderChange(s.deps, began(s.lease, 2, 'w2', '10.0.0.2:8080'), deadline(s.clock));
    const before = s.writes();
    expect(await applyLeaderChange(s.deps, began(s.lease, 2, 'w2', '10.0.0.2:8080'), deadline(s.clock))).toEqual({ outcome: 'duplicate', state: 'term 2', writes: 0 });
    await applyLeaderChange(s.deps, ended(s.lease, 2), deadline(s.clock));
    expect(await applyLeaderChange(s.deps, ended(s.lease, 2), deadline(s.clock))).toMatchObject({ outcome: 'duplicate' });
    expect(s.writes()).toBe(before + 1);
  });

  it('a leader that advertised no address clears the name: the previous leader’s is wrong', async () => {
    const s = setup();
    await applyLeaderChange(s.deps, began(s.lease, 1, 'w1', '10.0.0.1:8080'), deadline(s.clock));
    expect(await applyLeaderChange(s.deps, began(s.lease, 2, 'w2'), deadline(s.clock))).toMatchObject({ outcome: 'applied', name: { kind: 'clear', why: expect.stringMatching(/no address/) } });
    expect(s.name()).toBeUndefined();
  });
});

describe('deliveries at once', () => {
  it('an older term’s write that lands after the newer term’s is put right by its own writer', async () => {
    const s = setup();
    const held = hold(tokenOf(s.lease, 1));
    try {
      const older = applyLeaderChange(s.deps, began(s.lease, 1, 'w1', '10.0.0.1:8080'), deadline(s.clock));
      await held.arrived; // claimed term 1; its write is at the service, not applied yet
      expect(await applyLeaderChange(s.deps, began(s.lease, 2, 'w2', '10.0.0.2:8080'), deadline(s.clock))).toMatchObject({ outcome: 'applied', writes: 1 });
      expect(s.name()).toEqual({ holder: 'w2', fencingToken: 2 });
      held.release(); // term 1's write lands now, after term 2's
      expect(await older).toMatchObject({ outcome: 'applied', state: 'term 2', writes: 2 });
      expect(s.name()).toEqual({ holder: 'w2', fencingToken: 2 });
      expect(await s.row()).toMatchObject({ fencingToken: 2, applied: true });
      expect((await s.row())!.writers).toBeUndefined();
    } finally {
      held.done();
    }
  });

  it('while a write is in flight, a duplicate or older delivery writes the current state too, never its own', async () => {
    const s = setup();
    const held = hold(tokenOf(s.lease, 3));
    try {
      const first = applyLeaderChange(s.deps, began(s.lease, 3, 'w3', '10.0.0.3:8080'), deadline(s.clock));
      await held.arrived;
      // term 3 claimed, unapplied, its writer at work: a redelivery, and term 2 late, join it
      const again = await applyLeaderChange(s.deps, began(s.lease, 3, 'w3', '10.0.0.3:8080'), deadline(s.clock));
      const late = await applyLeaderChange(s.deps, began(s.lease, 2, 'w2', '10.0.0.2:8080'), deadline(s.clock));
      expect([again.outcome, late.outcome]).toEqual(['caughtUp', 'caughtUp']);
      expect(s.name()).toEqual({ holder: 'w3', fencingToken: 3 });
      held.release();
      expect(await first).toMatchObject({ outcome: 'applied', state: 'term 3' });
      expect(s.name()).toEqual({ holder: 'w3', fencingToken: 3 });
    } finally {
      held.done();
    }
  });

  it('an invocation that died after its older write is put right by its retry (its writer entry stays until then)', async () => {
    // the first invocation dies right after its write reached the service: no check, no settle
    const s = setup((base) => ({ ...base, point: async (l, t) => { await base.point(l, t); if (t.fencingToken === 1) throw new Error('invocation died'); } }));
    const held = hold(tokenOf(s.lease, 1));
    let older: Promise<unknown>;
    try {
      older = applyLeaderChange(s.deps, began(s.lease, 1, 'w1', '10.0.0.1:8080'), deadline(s.clock)).catch((e: unknown) => e);
      await held.arrived;
      await applyLeaderChange(s.deps, began(s.lease, 2, 'w2', '10.0.0.2:8080'), deadline(s.clock));
      held.release();
      expect(await older).toMatchObject({ message: 'invocation died' });
    } finally {
      held.done();
    }
    expect(s.name()).toEqual({ holder: 'w1', fencingToken: 1 }); // the window: term 1's write landed last, and nobody checked it
    const row = await s.row();
    expect(row).toMatchObject({ fencingToken: 2, applied: true });
    expect([...(row!.writers ?? [])]).toHaveLength(1); // the dead writer's entry

    // Lambda retries the failed invocation a minute later: the same event, now older than the state
    s.clock.advance(60_000);
    const plain = cloudMapNaming(aws.cloudMap(), aws.serviceId);
    const retry = await applyLeaderChange({ ...s.deps, naming: plain }, began(s.lease, 1, 'w1', '10.0.0.1:8080'), deadline(s.clock));
    expect(retry).toMatchObject({ outcome: 'caughtUp', state: 'term 2', writes: 1 });
    expect(s.name()).toEqual({ holder: 'w2', fencingToken: 2 });
    // the dead writer's entry outlives its invocation by WRITER_GRACE_MS: a minute after, it is still there
    expect([...((await s.row())!.writers ?? [])]).toHaveLength(1);

    // once its time is up, whoever settles next removes it, and older events write nothing again
    s.clock.advance(30_000 + WRITER_GRACE_MS);
    await applyLeaderChange({ ...s.deps, naming: plain }, began(s.lease, 1, 'w1', '10.0.0.1:8080'), deadline(s.clock));
    expect((await s.row())!.writers).toBeUndefined();
    expect(await applyLeaderChange({ ...s.deps, naming: plain }, began(s.lease, 1, 'w1', '10.0.0.1:8080'), deadline(s.clock))).toMatchObject({ outcome: 'stale', writes: 0 });
  });

  it('gives up after MAX_ROUNDS writes when a newer leader is claimed after each (its retry finishes)', async () => {
    const s = setup();
    let token = 1;
    // every write of this invocation is followed, before its check, by a newer term's claim
    const racing: LeaderNaming = {
      ...s.deps.naming,
      point: async (l, t) => {
        await s.deps.naming.point(l, t);
        token += 1;
        await s.deps.state.claim(began(l, token, `w${token}`, `10.0.0.${token}:80`), `${s.clock.now() + 1}/other-${token}`, s.clock.now());
      },
    };
    const e = await applyLeaderChange({ ...s.deps, naming: racing }, began(s.lease, 1, 'w1', '10.0.0.1:80'), deadline(s.clock)).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(DiscoveryRaceError);
    expect((e as DiscoveryRaceError).rounds).toBe(MAX_ROUNDS);
    // the state moved on to the last claim; the retry writes it
    s.clock.advance(60_000);
    expect(await applyLeaderChange(s.deps, began(s.lease, 1, 'w1', '10.0.0.1:80'), deadline(s.clock))).toMatchObject({ outcome: 'caughtUp', state: `term ${token}` });
    expect(s.name()).toEqual({ holder: `w${token}`, fencingToken: token });
  });

  it('any number of deliveries, duplicated, in any order, at once: the name ends at the newest state delivered', async () => {
    const change = fc.record({ token: fc.integer({ min: 1, max: 6 }), end: fc.boolean(), advertised: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(fc.array(change, { minLength: 1, maxLength: 10 }), fc.integer(), async (list, seed) => {
        const s = setup();
        const random = seededRandom(seed);
        // each write waits a random number of turns of the event loop: the calls land in any order
        const previous = aws.beforeWrite;
        aws.beforeWrite = async () => {
          for (let i = Math.floor(random() * 8); i > 0; i--) await new Promise((r) => setImmediate(r));
        };
        try {
          const changes = list.map((c) => (c.end ? ended(s.lease, c.token) : began(s.lease, c.token, `w${c.token}`, c.advertised ? `10.0.0.${c.token}:8080` : undefined)));
          // an address is the term's own: the first delivery of a term decides it for its duplicates
          const addressOf = new Map<number, string | undefined>();
          const deliveries = changes.map((c) => (c.kind === 'began' ? { ...c, address: addressOf.has(c.fencingToken) ? addressOf.get(c.fencingToken) : (addressOf.set(c.fencingToken, c.address), c.address) } : c));
          const outcomes = await Promise.all(deliveries.map((c) => applyLeaderChange(s.deps, c, deadline(s.clock))));
          const newest = deliveries.reduce((a, b) => (b.fencingToken > a.fencingToken || (b.fencingToken === a.fencingToken && b.kind === 'ended') ? b : a));
          const want = newest.kind === 'began' && newest.address !== undefined ? { holder: newest.holder, fencingToken: newest.fencingToken } : undefined;
          expect(s.name()).toEqual(want);
          expect(await s.row()).toMatchObject({ fencingToken: newest.fencingToken, ended: newest.kind === 'ended', applied: true });
          expect((await s.row())!.writers).toBeUndefined();
          expect(outcomes.filter((o) => o.outcome === 'applied').length).toBeGreaterThanOrEqual(1);
        } finally {
          aws.beforeWrite = previous;
        }
      }),
      { numRuns: 25, seed: 39 },
    );
  });
});

it('calls DynamoDB and Cloud Map with the actions the construct grants, and no other (infra/access.ts DISCOVERY_ACCESS)', () => {
  // (and the sweep's Scan of the table: test/discovery/sweep.test.ts; a Route 53 record's hold taken over, a ConditionCheckItem: case-collision.test.ts)
  expect([...dynamoActions, 'dynamodb:Scan', 'dynamodb:ConditionCheckItem'].sort()).toEqual([...DISCOVERY_ACCESS.table].sort());
  expect([...new Set(aws.calls.map((c) => c.action))].sort()).toEqual([...DISCOVERY_ACCESS.cloudMap, ...DISCOVERY_ACCESS.cloudMapOperations].sort());
});
