/**
 * Malformed items — written straight into the tables, as a hand edit, an old version or another
 * tool might — through every read path of the stores and the coordinator: a single read is a
 * ValidationError naming the field; listings and the tick report the row apart and carry on; a
 * reconcile never decides on a row that does not parse. Never a TypeError.
 */
import { isDeepStrictEqual } from 'node:util';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrokenLeaseError, coordinatorDeps, reconcileAll, reconcileLease, type CoordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { CandidateItem } from '../../lib/schemas/candidate.js';
import { IdentityLeaseItem } from '../../lib/schemas/identity.js';
import { LeaseItem } from '../../lib/schemas/lease.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { testTables, type TestTables } from '../support.js';
import { RUNS, expectTypedOutcome, junk, mutate, mutations, type Mutation } from './support.js';

let t: TestTables;
let deps: CoordinatorDeps;
beforeAll(async () => {
  t = await testTables('fuzz-stores');
  deps = coordinatorDeps(t.client, t.names, { config: { ackWindowMs: 1_000 } });
});
afterAll(() => t.drop());

const now = Date.now();
const validLease = (name: string) => ({ name, holderIdentity: 'a', holderInstance: 'a_1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 1, fencingToken: 2, electedBy: 'coordinator', revision: 4 });
const validCandidate = (leaseName: string, name: string) => ({ leaseName, name, binaryVersion: '1.31.0', emulationVersion: '1.30.0', preferredStrategies: ['OldestEmulationVersion'], renewTime: now, createdAt: now - 1_000, identity: `${name}_1`, revision: 2 });
const validIdentity = (name: string) => ({ component: 'fuzz', name, holderIdentity: `${name}_1`, hostname: 'h', leaseDurationSeconds: 3_600, acquireTime: now, renewTime: now, revision: 1 });

/**
 * Junk a DynamoDB item holds as it is (no NaN, no undefined inside lists or maps): a value the write
 * would change (a map's undefined entry dropped) is not what the read's error is judged against.
 */
const storable: fc.Arbitrary<unknown> = junk.filter((v) => {
  try {
    return v !== undefined && isDeepStrictEqual(unmarshall(marshall({ v }, { removeUndefinedValues: true }))['v'], v);
  } catch {
    return false;
  }
});

const shapeOf = (s: { shape: Record<string, unknown> }) => s.shape as Record<string, import('zod').ZodType>;
let n = 0;

/** Writes `item` as is (PutItem: no schema between the test and the table); skips what DynamoDB itself refuses (5e-324, ""-keys). */
async function put(table: string, item: Record<string, unknown>) {
  try {
    await t.client.send(new PutItemCommand({ TableName: table, Item: marshall(item, { removeUndefinedValues: true }) }));
  } catch (e) {
    if ((e as Error).name !== 'ValidationException') throw e;
    fc.pre(false);
  }
}

describe('malformed rows in the tables', () => {
  it('leases: read is a ValidationError naming the field; reconcile refuses to decide; the tick reports the row and goes on', async () => {
    const shape = shapeOf(LeaseItem);
    const keys = Object.keys(shape).filter((k) => k !== 'name');
    await fc.assert(
      fc.asyncProperty(mutations(keys, storable), async (ms: Mutation[]) => {
        const name = `bad-lease-${n++}`;
        await put(t.names.leases, mutate(validLease(name), ms));
        await put(t.names.candidates, validCandidate(name, 'c1'));
        const read = await expectTypedOutcome(() => deps.leases.read(name), { shape, mutations: ms, strict: false });
        // a BrokenLeaseError carries the lease's ValidationError
        const rec = await expectTypedOutcome(() => reconcileLease(deps, name).catch((e: unknown) => Promise.reject(e instanceof BrokenLeaseError ? e.error : e)), { shape, mutations: ms, strict: false });
        expect(read === 'ok').toBe(rec === 'ok'); // a reconcile decides only on a lease that reads
      }),
      { numRuns: 40 },
    );
    const tick = await reconcileAll(deps);
    expect(tick.errors.filter((e) => e.error.name !== 'TooManyConflictsError')).toEqual([]); // the bad rows are `broken`, not errors
    expect(tick.broken.length).toBeGreaterThan(0);
  });

  it('candidates: read is a ValidationError; a listing and a reconcile leave the row out and name it', async () => {
    const shape = shapeOf(CandidateItem);
    const keys = Object.keys(shape).filter((k) => k !== 'leaseName' && k !== 'name');
    await fc.assert(
      fc.asyncProperty(mutations(keys, storable), async (ms: Mutation[]) => {
        const lease = `cand-lease-${n++}`;
        await put(t.names.candidates, validCandidate(lease, 'good'));
        await put(t.names.candidates, mutate(validCandidate(lease, 'bad'), ms));
        const read = await expectTypedOutcome(() => deps.candidates.read(lease, 'bad'), { shape, mutations: ms, strict: false });
        const list = await deps.candidates.list(lease);
        expect(list.candidates.map((c) => c.name).sort()).toEqual(read === 'ok' ? ['bad', 'good'] : ['good']);
        expect(list.invalid.map((i) => i.key['name'])).toEqual(read === 'ok' ? [] : ['bad']);
        for (const i of list.invalid) expect(i.error).toBeInstanceOf(ValidationError);
        const o = await reconcileLease(deps, lease);
        expect(o.invalidCandidates).toHaveLength(read === 'ok' ? 0 : 1);
        if (o.decision.kind === 'elect') expect(read === 'ok' || o.decision.winner === 'good').toBe(true);
      }),
      { numRuns: 40 },
    );
  });

  it('identity leases: read is a ValidationError naming the field', async () => {
    const shape = shapeOf(IdentityLeaseItem);
    const keys = Object.keys(shape).filter((k) => k !== 'component' && k !== 'name');
    await fc.assert(
      fc.asyncProperty(mutations(keys, storable), async (ms: Mutation[]) => {
        const name = `id-${n++}`;
        await put(t.names.identities, mutate(validIdentity(name), ms));
        await expectTypedOutcome(() => deps.identities.read('fuzz', name), { shape, mutations: ms, strict: false });
      }),
      { numRuns: 30 },
    );
    const tick = await reconcileAll(deps);
    expect(tick.invalid.length).toBeGreaterThan(0);
  });

  it('parseItem (no table): any object at all', () => {
    for (const [store, shape] of [
      [deps.leases, shapeOf(LeaseItem)],
      [deps.candidates, shapeOf(CandidateItem)],
      [deps.identities, shapeOf(IdentityLeaseItem)],
    ] as const) {
      fc.assert(
        fc.property(fc.oneof(fc.dictionary(fc.string({ maxLength: 8 }), junk, { maxKeys: 6 }), mutations(Object.keys(shape)).map((ms) => mutate(validLease('x'), ms))), (raw) => {
          try {
            store.parseItem(raw);
          } catch (e) {
            expect(e).toBeInstanceOf(ValidationError);
          }
        }),
        RUNS,
      );
    }
  });
});
