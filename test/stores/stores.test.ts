import { PutItemCommand, ReplicatedWriteConflictException, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Decision } from '../../lib/election/decide.js';
import { plan } from '../../lib/election/plan.js';
import { electionConfig } from '../../lib/schemas/config.js';
import { fencingTokenFloor, nextFencingToken } from '../../lib/schemas/fencing-token.js';
import { MAX_ENDED_TERMS } from '../../lib/schemas/identity.js';
import { sessionKey } from '../../lib/schemas/session-partition.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { CandidacyStore, CandidateStore } from '../../lib/stores/candidate-store.js';
import { ConflictError, EndedTermsFullError } from '../../lib/stores/errors.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { NOW, cand } from '../fixtures.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
let leases: LeaseStore;
let candidates: CandidateStore;
let identities: IdentityStore;

beforeAll(async () => {
  t = await testTables('stores');
  leases = new LeaseStore(t.client, t.names.leases);
  candidates = new CandidateStore(t.client, t.names.candidates);
  identities = new IdentityStore(t.client, t.names.identities);
});
afterAll(() => t.drop());

const newLease = { leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 0 };

describe('LeaseStore', () => {
  it('creates at revision 1 and raises the revision on every write', async () => {
    const r0 = await leases.read('create');
    expect(r0).toMatchObject({ item: undefined, revision: 0 });
    const l1 = await leases.write(r0, { set: newLease });
    expect(l1).toMatchObject({ name: 'create', revision: 1 });
    const l2 = await leases.write(await leases.read('create'), { set: { holderIdentity: 'a' } });
    expect(l2.revision).toBe(2);
    expect((await leases.read('create')).item).toEqual(l2);
  });

  it('a second create of the same lease is a conflict, not an overwrite', async () => {
    const r0 = await leases.read('twice');
    await leases.write(r0, { set: { ...newLease, holderIdentity: 'first' } });
    await expect(leases.write(r0, { set: { ...newLease, holderIdentity: 'second' } })).rejects.toBeInstanceOf(ConflictError);
    expect((await leases.read('twice')).item?.holderIdentity).toBe('first');
  });

  it('a write against a stale revision loses, carries the current item, and changes nothing', async () => {
    await leases.write(await leases.read('stale'), { set: newLease });
    const old = await leases.read('stale');
    await leases.write(old, { set: { holderIdentity: 'winner' } });
    const err = await leases.write(old, { set: { holderIdentity: 'loser' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).current).toMatchObject({ holderIdentity: 'winner', revision: 2 });
    expect((err as ConflictError).message).toMatch(/changed since revision 1 was read \(now revision 2\)/);
    expect((await leases.read('stale')).item).toMatchObject({ holderIdentity: 'winner', revision: 2 });
  });

  it('a write read from a deleted row is refused by the row written again at the same revision (its fencing token differs)', async () => {
    // a held term, read by a follower at revision 3…
    await leases.write(await leases.read('aba'), { set: newLease });
    await leases.write(await leases.read('aba'), { set: { holderIdentity: 'a', holderInstance: 'a#1', fencingToken: 5_000 } });
    await leases.write(await leases.read('aba'), { set: { successor: 'b', successorInstance: 'b#1' } });
    const read = await leases.read('aba');
    expect(read.revision).toBe(3);
    // …an operator deletes the row, and the coordinator writes it again: an election, up to revision 3
    await leases.delete(read);
    await leases.write(await leases.read('aba'), { set: newLease });
    await leases.write(await leases.read('aba'), { set: { preferredLocations: [] } });
    const again = await leases.write(await leases.read('aba'), { set: { preferredLocations: ['us-east-1'] } });
    expect(again).toMatchObject({ revision: 3, fencingToken: 0 });
    // the follower's take of the deleted term, conditioned on what it read, lands on nothing
    const err = await leases.write(read, { set: { holderIdentity: 'b', holderInstance: 'b#1', fencingToken: 6_000, electedBy: 'successor' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect((await leases.read('aba')).item).toEqual(again);
    // (a read of the row as it is now still writes)
    await expect(leases.write(await leases.read('aba'), { set: { preferredLocations: [] } })).resolves.toMatchObject({ revision: 4 });
  });

  it("a write read from a row that never had a term is refused by the row written again at the same revision (each row's first token is its creation's clock floor)", async () => {
    // the coordinator creates the row for an election (lib/election/plan.ts), and a worker reads it at revision 1…
    const opening = (at: number): Decision => ({ kind: 'openElection', strategy: 'OldestEmulationVersion', election: { id: `never#${at}`, startedAt: at, deadline: at + 5_000, strategy: 'OldestEmulationVersion' }, ping: [], vacancy: 'noLease' });
    const first = await leases.write(await leases.read('never'), plan(opening(NOW), undefined, NOW, electionConfig({})).lease!);
    expect(first).toMatchObject({ revision: 1, fencingToken: fencingTokenFloor(NOW) });
    const read = await leases.read('never');
    // …a term is elected on it, an operator deletes it, and the coordinator writes it again for the next election
    await leases.write(read, { set: { holderIdentity: 'a', holderInstance: 'a#1', fencingToken: nextFencingToken(first.fencingToken, NOW + 1_000) }, remove: ['election'] });
    await leases.delete(await leases.read('never'));
    const again = await leases.write(await leases.read('never'), plan(opening(NOW + 3_000), undefined, NOW + 3_000, electionConfig({})).lease!);
    expect(again).toMatchObject({ revision: 1, fencingToken: fencingTokenFloor(NOW + 3_000) });
    // the fallback's take read from the first row, conditioned on revision 1 and its token, lands on nothing
    // (with both rows at token 0 it would land, past the election held for the deleted term)
    const err = await leases.write(read, { set: { holderIdentity: 'b', holderInstance: 'b#1', fencingToken: nextFencingToken(read.item?.fencingToken, NOW + 500), electedBy: 'self' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect((await leases.read('never')).item).toEqual(again);
  });

  it('removes attributes', async () => {
    await leases.write(await leases.read('rm'), { set: { ...newLease, holderIdentity: 'a', preferredHolder: 'b' } });
    const after = await leases.write(await leases.read('rm'), { remove: ['holderIdentity', 'preferredHolder'] });
    expect(after.holderIdentity).toBeUndefined();
    const read = await leases.read('rm');
    expect(read.item).toEqual(after);
    expect(read.item && 'preferredHolder' in read.item).toBe(false);
  });

  it('a patch that would make the item invalid writes nothing and names the field', async () => {
    await leases.write(await leases.read('bad-patch'), { set: newLease });
    const read = await leases.read('bad-patch');
    const err = await leases.write(read, { set: { fencingToken: -1 } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).fields).toEqual(['fencingToken']);
    expect((await leases.read('bad-patch')).item).toEqual(read.item);
    // creating without the required fields is refused the same way
    const err2 = await leases.write(await leases.read('incomplete'), { set: { holderIdentity: 'a' } }).catch((e: unknown) => e);
    expect((err2 as ValidationError).fields.sort()).toEqual(['fencingToken', 'leaseDurationSeconds', 'leaseTransitions']);
    expect((await leases.read('incomplete')).item).toBeUndefined();
  });

  it('deletes only at the revision read', async () => {
    await leases.write(await leases.read('del'), { set: newLease });
    const r1 = await leases.read('del');
    await leases.write(r1, { set: { holderIdentity: 'x' } });
    await expect(leases.delete(r1)).rejects.toBeInstanceOf(ConflictError);
    await leases.delete(await leases.read('del'));
    expect((await leases.read('del')).item).toBeUndefined();
  });

  it('a malformed item is a typed error naming each bad field', async () => {
    await t.client.send(new PutItemCommand({ TableName: t.names.leases, Item: marshall({ name: 'malformed', leaseDurationSeconds: 'fifteen', leaseTransitions: 0, revision: 3 }) }));
    const err = await leases.read('malformed').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).fields.sort()).toEqual(['fencingToken', 'leaseDurationSeconds']);
    expect((err as Error).message).toMatch(/lease "malformed" in table .*leaseDurationSeconds/);
  });

  it('a row read again is parsed again whenever its content changed, even at the same revision', async () => {
    // rows are parsed once per content (ItemStore.parseRow): a write that leaves the revision alone
    // (a session row's endedTerms mark, an operator's PutItem) must not be answered from the first parse
    const put = (item: Record<string, unknown>) => t.client.send(new PutItemCommand({ TableName: t.names.leases, Item: marshall(item) }));
    await put({ name: 'same-revision', ...newLease, holderIdentity: 'a', revision: 4 });
    const first = await leases.read('same-revision');
    expect(first.item?.holderIdentity).toBe('a');
    expect((await leases.read('same-revision')).item).toEqual(first.item);
    await put({ name: 'same-revision', ...newLease, holderIdentity: 'b', revision: 4 });
    expect((await leases.read('same-revision')).item).toMatchObject({ holderIdentity: 'b', revision: 4 });
    await put({ name: 'same-revision', ...newLease, leaseDurationSeconds: 0, revision: 4 });
    const err = await leases.read('same-revision').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).fields).toEqual(['leaseDurationSeconds']);
    await put({ name: 'same-revision', ...newLease, holderIdentity: 'a', revision: 4 });
    expect((await leases.read('same-revision')).item).toEqual(first.item);
  });

  it('an unchanged row is parsed once; one changed in place at the same revision is parsed again', async () => {
    // ItemStore.parseRow keeps each row's item under its key and revision, and serves it only while
    // the row is the same attribute by attribute: an operator's UpdateItem raises no revision
    await leases.write(await leases.read('in-place'), { set: { ...newLease, holderIdentity: 'a', election: { id: 'e1', startedAt: NOW, deadline: NOW + 3000, strategy: 'OldestEmulationVersion' } } });
    const first = await leases.read('in-place');
    expect((await leases.read('in-place')).item).toBe(first.item); // reused, not parsed again
    const operator = (update: string, values?: Record<string, unknown>) =>
      t.client.send(new UpdateItemCommand({ TableName: t.names.leases, Key: marshall({ name: 'in-place' }), UpdateExpression: update, ...(values ? { ExpressionAttributeValues: marshall(values) } : {}) }));
    await operator('SET holderIdentity = :b', { ':b': 'b' });
    const moved = await leases.read('in-place');
    expect(moved).toMatchObject({ revision: first.revision, item: { holderIdentity: 'b' } });
    await operator('SET election.deadline = :d', { ':d': NOW + 9000 }); // inside a map
    expect((await leases.read('in-place')).item?.election?.deadline).toBe(NOW + 9000);
    await operator('REMOVE election');
    expect((await leases.read('in-place')).item?.election).toBeUndefined();
  });

  it('a session row marked in place is read with its marks (markTermEnded leaves the revision alone)', async () => {
    const key = sessionKey('s-marks');
    await identities.write({ key, item: undefined, revision: 0 }, { set: { hostname: 'h', leaseDurationSeconds: 15, acquireTime: NOW, renewTime: NOW, holderIdentity: 'w_1' } });
    const before = await identities.read(key.component, key.name);
    expect(before.item?.endedTerms).toBeUndefined();
    expect(await identities.markTermEnded('s-marks', 'job-1', 7, judge(NOW))).toBe(true);
    expect(await identities.markTermEnded('s-marks', 'job-2', 9, judge(NOW))).toBe(true); // a second mark inside the map
    const after = await identities.read(key.component, key.name);
    expect(after).toMatchObject({ revision: before.revision, item: { endedTerms: { 'job-1': 7, 'job-2': 9 } } });
  });

  // the lease stream's function judges at `now` with the default clock-skew margin
  const judge = (now: number) => ({ now, skewMs: 1_000 });
  const session = async (name: string) => {
    const key = sessionKey(name);
    await identities.write({ key, item: undefined, revision: 0 }, { set: { hostname: 'h', leaseDurationSeconds: 15, acquireTime: NOW, renewTime: NOW, holderIdentity: 'w_1' } });
    return { key, row: async () => (await identities.read(key.component, key.name)).item!, renew: async (at: number) => identities.renewSession(await identities.read(key.component, key.name), at) };
  };

  it("a mark another Region was writing at that moment (a multi-Region table's lost race) is read again, not thrown: the other Region's mark stands", async () => {
    const s = await session('s-regions');
    // this Region's client: its first mark is refused as MRSC refuses a write racing another
    // Region's (ReplicatedWriteConflictException, not applied), while that Region's lease stream
    // function marks the same end
    const here = localClient(inject('ddbEndpoint'));
    let refusedOnce = false;
    here.middlewareStack.add(
      (next) => async (args) => {
        if (!refusedOnce && (args.input as { UpdateExpression?: string }).UpdateExpression?.includes('#ended')) {
          refusedOnce = true;
          expect(await identities.markTermEnded('s-regions', 'job-1', 7, judge(NOW))).toBe(true); // the other Region's
          throw new ReplicatedWriteConflictException({ message: 'One or more items in this request are being modified by a request in another Region', $metadata: { httpStatusCode: 400 } });
        }
        return next(args);
      },
      { step: 'initialize' },
    );
    try {
      // before: the conflict was thrown, and the lease stream's function held the next election
      // its longest hold (unmarkedHoldMs), waiting on a retry of the record to cut it
      expect(await new IdentityStore(here, t.names.identities).markTermEnded('s-regions', 'job-1', 7, judge(NOW))).toBe(false);
      expect(refusedOnce).toBe(true);
      expect((await s.row()).endedTerms).toEqual({ 'job-1': 7 });
    } finally {
      here.destroy();
    }
  });

  it('a full map of marks its owner has not read is never started afresh: the next mark is refused, to be retried', async () => {
    const s = await session('s-full');
    // a scripted `release --force` over the process's leases, inside one session renewal: all but
    // the last two marked already (by a function of before stamps: a row of then)
    const earlier = Object.fromEntries(Array.from({ length: MAX_ENDED_TERMS - 1 }, (_, i) => [`job-${i}`, i + 1]));
    await t.client.send(new UpdateItemCommand({ TableName: t.names.identities, Key: marshall(s.key), UpdateExpression: 'SET endedTerms = :m', ExpressionAttributeValues: marshall({ ':m': earlier }) }));
    expect(await identities.markTermEnded('s-full', 'job-last', 1, judge(NOW + 1_000))).toBe(true);
    await expect(identities.markTermEnded('s-full', 'job-over', 1, judge(NOW + 1_000))).rejects.toBeInstanceOf(EndedTermsFullError);
    expect((await s.row()).endedTerms).toEqual({ ...earlier, 'job-last': 1 }); // none dropped before the owner read them
    expect(await identities.markTermEnded('s-full', 'job-0', 2, judge(NOW + 1_000))).toBe(true); // a later end of a lease in the map still fits
    // the owner renews (it reads them all), but a renewal whose answer was lost would look the same: still kept
    expect((await s.renew(NOW + 5_000)).kind).toBe('renewed');
    expect((await s.renew(NOW + 16_000)).kind).toBe('renewed'); // a lease duration and the skew margin: not beyond
    await expect(identities.markTermEnded('s-full', 'job-over', 1, judge(NOW + 16_000))).rejects.toBeInstanceOf(EndedTermsFullError);
    // its stamps beyond: it has certainly read them (or its session ended first); the retried mark lands
    expect((await s.renew(NOW + 16_001)).kind).toBe('renewed');
    expect(await identities.markTermEnded('s-full', 'job-over', 1, judge(NOW + 16_001))).toBe(true);
    expect(Object.keys((await s.row()).endedTerms!)).toHaveLength(MAX_ENDED_TERMS - 32 + 1); // at most 32 dropped per mark
  });

  it('marks the owner has certainly read are dropped at the next mark: the row stays small', async () => {
    const s = await session('s-small');
    for (const [i, l] of ['job-1', 'job-2', 'job-3'].entries()) expect(await identities.markTermEnded('s-small', l, 7, judge(NOW + i))).toBe(true);
    const marks = async (r: { row: () => Promise<{ endedTerms?: object; endedTermStamps?: object }> }) => { const x = await r.row(); return [x.endedTerms, x.endedTermStamps]; };
    expect(await marks(s)).toEqual([{ 'job-1': 7, 'job-2': 7, 'job-3': 7 }, { 'job-1': NOW, 'job-2': NOW, 'job-3': NOW }]);
    for (const at of [NOW + 5_000, NOW + 10_000, NOW + 15_000, NOW + 20_000]) expect((await s.renew(at)).kind).toBe('renewed');
    expect(await identities.markTermEnded('s-small', 'job-4', 8, judge(NOW + 20_000))).toBe(true);
    expect(await marks(s)).toEqual([{ 'job-4': 8 }, { 'job-4': NOW + 20_000 }]);
    // a row of before stamps: its marks stamped when first seen, dropped a lease duration after that
    const o = await session('s-old');
    await t.client.send(new UpdateItemCommand({ TableName: t.names.identities, Key: marshall(o.key), UpdateExpression: 'SET endedTerms = :m', ExpressionAttributeValues: marshall({ ':m': { old: 3 } }) }));
    expect((await o.renew(NOW + 20_000)).kind).toBe('renewed');
    expect(await identities.markTermEnded('s-old', 'job-1', 1, judge(NOW + 20_000))).toBe(true);
    expect(await marks(o)).toEqual([{ old: 3, 'job-1': 1 }, { old: NOW + 20_000, 'job-1': NOW + 20_000 }]);
  });

  it('a session over by the judge\'s clock keeps none of its marks: a full map of a process gone takes the next', async () => {
    const s = await session('s-gone');
    const earlier = Object.fromEntries(Array.from({ length: MAX_ENDED_TERMS }, (_, i) => [`job-${i}`, 1]));
    await t.client.send(new UpdateItemCommand({ TableName: t.names.identities, Key: marshall(s.key), UpdateExpression: 'SET endedTerms = :m, endedTermStamps = :s', ExpressionAttributeValues: marshall({ ':m': earlier, ':s': Object.fromEntries(Object.keys(earlier).map((l) => [l, NOW])) }) }));
    expect(await identities.canMarkTermEnded('s-gone', 'job-next', judge(NOW + 16_000))).toBe(false);
    await expect(identities.markTermEnded('s-gone', 'job-next', 1, judge(NOW + 16_000))).rejects.toBeInstanceOf(EndedTermsFullError);
    expect(await identities.markTermEnded('s-gone', 'job-next', 1, judge(NOW + 16_001))).toBe(true);
    expect((await s.row()).endedTerms?.['job-next']).toBe(1);
    // a mark without a stamp (a function of before stamps marked after) goes too
    const o = await session('s-gone-old');
    await t.client.send(new UpdateItemCommand({ TableName: t.names.identities, Key: marshall(o.key), UpdateExpression: 'SET endedTerms = :m, endedTermStamps = :s', ExpressionAttributeValues: marshall({ ':m': { a: 1, b: 1 }, ':s': { a: NOW } }) }));
    expect(await identities.canMarkTermEnded('s-gone-old', 'c', judge(NOW + 16_001))).toBe(true);
    expect(await identities.markTermEnded('s-gone-old', 'c', 1, judge(NOW + 16_001))).toBe(true);
    const after = await o.row();
    expect([after.endedTerms, after.endedTermStamps]).toEqual([{ c: 1 }, { c: NOW }]);
  });

  it('a map started afresh by a function of before the refusal (a rolling deployment) leaves stamps without marks: dropped, the row stays readable', async () => {
    const s = await session('s-reset');
    const earlier = Object.fromEntries(Array.from({ length: MAX_ENDED_TERMS }, (_, i) => [`job-${i}`, 1]));
    await t.client.send(new UpdateItemCommand({ TableName: t.names.identities, Key: marshall(s.key), UpdateExpression: 'SET endedTerms = :m, endedTermStamps = :s', ExpressionAttributeValues: marshall({ ':m': earlier, ':s': Object.fromEntries(Object.keys(earlier).map((l) => [l, NOW])) }) }));
    // the old function's mark of a full map: SET endedTerms = { its lease }, the stamps left as they were
    await t.client.send(new UpdateItemCommand({ TableName: t.names.identities, Key: marshall(s.key), UpdateExpression: 'SET endedTerms = :m', ConditionExpression: 'size(endedTerms) = :n', ExpressionAttributeValues: marshall({ ':m': { 'job-old': 4 }, ':n': MAX_ENDED_TERMS }) }));
    // (before: the next mark stamped itself and job-old beside the 512 left over: 514 stamps, a row no reader could parse)
    expect(await identities.markTermEnded('s-reset', 'job-new', 1, judge(NOW + 1_000))).toBe(true);
    const row = await s.row();
    expect(row.endedTerms).toEqual({ 'job-old': 4, 'job-new': 1 });
    expect(Object.keys(row.endedTermStamps!)).toEqual(expect.arrayContaining(['job-old', 'job-new']));
    expect(Object.keys(row.endedTermStamps!).length).toBeLessThanOrEqual(MAX_ENDED_TERMS);
    // the rest go a few at each mark: a stamp beside each mark only
    const left = async () => { const r = await s.row(); return Object.keys(r.endedTermStamps!).length - Object.keys(r.endedTerms!).length; };
    for (let i = 0; (await left()) > 0; i++) expect(await identities.markTermEnded('s-reset', `job-next-${i}`, 1, judge(NOW + 1_000))).toBe(true);
    expect(Object.keys((await s.row()).endedTermStamps!).sort()).toEqual(Object.keys((await s.row()).endedTerms!).sort());
    expect((await s.renew(NOW + 5_000)).kind).toBe('renewed');
  });

  it('scans every page, keeping malformed rows apart', async () => {
    const seen: string[] = [];
    let invalid = 0;
    for await (const page of leases.scan()) for (const s of page) s.ok ? seen.push(s.item.name) : invalid++;
    expect(seen).toEqual(expect.arrayContaining(['create', 'twice', 'stale', 'rm']));
    expect(invalid).toBe(1);
  });
});

describe('CandidateStore', () => {
  const put = async (c = cand('c1', '1.0.0', '1.0.0')) => candidates.write({ key: { leaseName: c.leaseName, name: c.name }, item: undefined, revision: 0 }, { set: c });

  it('lists a lease’s candidates consistently and reports malformed rows apart', async () => {
    await put(cand('c1', '1.0.0', '1.0.0'));
    await put(cand('c2', '1.1.0', '1.1.0'));
    await t.client.send(new PutItemCommand({ TableName: t.names.candidates, Item: marshall({ leaseName: 'component-A', name: 'broken', binaryVersion: 1, revision: 1 }) }));
    const list = await candidates.list('component-A');
    expect(list.candidates.map((c) => c.name).sort()).toEqual(['c1', 'c2']);
    expect(list.invalid).toHaveLength(1);
    expect(list.invalid[0]!.key).toEqual({ leaseName: 'component-A', name: 'broken' });
    expect(list.invalid[0]!.error.fields).toEqual(expect.arrayContaining(['binaryVersion', 'emulationVersion', 'renewTime']));
  });

  it('ping stamps pingTime once per election, never on a gone candidate, and does not race an ack', async () => {
    expect(await candidates.ping('component-A', 'c1', NOW + 100)).toBe(true);
    expect(await candidates.ping('component-A', 'c1', NOW + 100)).toBe(false); // already pinged for this election
    expect(await candidates.ping('component-A', 'nobody', NOW + 100)).toBe(false); // never creates a row
    expect((await candidates.read('component-A', 'nobody')).item).toBeUndefined();
    const before = await candidates.read('component-A', 'c1');
    expect(await candidates.renew('component-A', 'c1', NOW + 200)).toBe(true); // the ack
    const after = (await candidates.read('component-A', 'c1')).item!;
    expect(after).toMatchObject({ pingTime: NOW + 100, renewTime: NOW + 200, revision: before.revision + 1 });
    expect(await candidates.renew('component-A', 'c1', NOW + 150)).toBe(false); // never moves renewTime back
  });

  it("a stand-down's mark: set and taken off on its own start-up's row alone, no renewal (renewTime and renewalMark as they were)", async () => {
    const own = new CandidacyStore(t.client, t.names.candidates);
    await put(cand('c3', '1.0.0', '1.0.0', { identity: 'c3_1' }));
    expect(await own.renew('component-A', 'c3', NOW + 100)).toBe(true); // a renewal sets the renewal mark
    const before = (await candidates.read('component-A', 'c3')).item!;
    expect(await own.markStandsDown('component-A', 'c3', 'c3_2', NOW + 600_000)).toBe(false); // another start-up's row
    expect(await own.markStandsDown('component-A', 'nobody', 'c3_1', NOW + 600_000)).toBe(false); // never creates a row
    expect((await candidates.read('component-A', 'nobody')).item).toBeUndefined();
    expect(await own.markStandsDown('component-A', 'c3', 'c3_1', NOW + 600_000)).toBe(true);
    const marked = (await candidates.read('component-A', 'c3')).item!;
    expect(marked).toEqual({ ...before, standsDownUntil: NOW + 600_000, revision: before.revision + 1 });
    expect(await own.markStandsDown('component-A', 'c3', 'c3_2', undefined)).toBe(false); // nor taken off by another
    expect(await own.markStandsDown('component-A', 'c3', 'c3_1', undefined)).toBe(true);
    expect((await candidates.read('component-A', 'c3')).item).toEqual({ ...before, revision: before.revision + 2 });
    expect(await own.markStandsDown('component-A', 'c3', 'c3_1', undefined)).toBe(false); // none left to take off
  });

  it('a stale write to a candidate loses', async () => {
    const r = await candidates.read('component-A', 'c2');
    await candidates.write(r, { set: { priority: 10 } });
    await expect(candidates.write(r, { set: { priority: 20 } })).rejects.toBeInstanceOf(ConflictError);
    expect((await candidates.read('component-A', 'c2')).item?.priority).toBe(10);
  });
});

describe('IdentityStore', () => {
  it('lists one component with a query and deletes at the revision read', async () => {
    const base = { hostname: 'h', leaseDurationSeconds: 3600, acquireTime: NOW, renewTime: NOW };
    await identities.write({ key: { component: 'api', name: 'api-1' }, item: undefined, revision: 0 }, { set: { ...base, holderIdentity: 'api-1_a' } });
    await identities.write({ key: { component: 'api', name: 'api-2' }, item: undefined, revision: 0 }, { set: { ...base, holderIdentity: 'api-2_a' } });
    await identities.write({ key: { component: 'sched', name: 'sched-1' }, item: undefined, revision: 0 }, { set: { ...base, holderIdentity: 'sched-1_a' } });
    const { items } = await identities.query('api');
    expect(items.map((i) => i.name).sort()).toEqual(['api-1', 'api-2']);
    const r = await identities.read('api', 'api-1');
    await identities.write(r, { set: { renewTime: NOW + 10_000 } });
    await expect(identities.delete(r)).rejects.toBeInstanceOf(ConflictError);
    expect((await identities.read('api', 'api-1')).item).toBeDefined();
  });

  it("a delete or write read from one holder's row is refused by another holder's row written anew at the same revision", async () => {
    const key = { component: 'reborn', name: 'reborn-1' };
    const base = { hostname: 'h', leaseDurationSeconds: 3600, acquireTime: NOW, renewTime: NOW };
    await identities.write({ key, item: undefined, revision: 0 }, { set: { ...base, holderIdentity: 'reborn-1_old' } });
    const old = await identities.read(key.component, key.name);
    await identities.delete(old); // gone (collected, an operator's delete, its own landed delete) …
    const newer = await identities.write({ key, item: undefined, revision: 0 }, { set: { ...base, holderIdentity: 'reborn-1_new' } }); // … and written anew: revision 1 again
    expect(newer.revision).toBe(old.revision);
    await expect(identities.delete(old)).rejects.toBeInstanceOf(ConflictError);
    await expect(identities.write(old, { set: { renewTime: NOW + 1 } })).rejects.toBeInstanceOf(ConflictError);
    expect((await identities.read(key.component, key.name)).item).toEqual(newer);
  });
});

describe("IdentityStore's writes to a session row the schema refuses (lib/coordinator/refused-session.ts)", () => {
  it('markRefused sets its one attribute and deleteRefused deletes, each only while every attribute scanned (of any type) is as it was; the revision untouched', async () => {
    const key = sessionKey('s-refused-types');
    const row = { ...key, holderIdentity: 's-refused-types', hostname: null, flag: true, list: [1, 'a', { x: null }], tags: new Set(['a', 'b']), endedTerms: { l: 3 }, renewTime: NOW, revision: 4 };
    await t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall(row) }));
    const scanned = async () => {
      for await (const page of identities.scan()) for (const s of page) if (!s.ok && s.invalid.key['name'] === key.name) return s.row;
      throw new Error('row not found');
    };
    const before = await scanned();
    expect(await identities.markRefused(key, before, 'refusedSeen', { at: NOW, digest: 'd' })).toBe(true);
    const stamped = await scanned();
    expect(stamped).toEqual({ ...before, refusedSeen: { at: NOW, digest: 'd' } }); // (revision 4 still)
    // as scanned before the stamp (absent then, there now): refused
    expect(await identities.markRefused(key, before, 'refusedSeen', { at: NOW + 1, digest: 'd' })).toBe(false);
    // renewed since (a nested attribute changed): refused
    await t.client.send(new UpdateItemCommand({ TableName: t.names.identities, Key: marshall(key), UpdateExpression: 'SET endedTerms.l = :n', ExpressionAttributeValues: marshall({ ':n': 4 }) }));
    expect(await identities.deleteRefused(key, stamped)).toBe(false);
    expect(await identities.deleteRefused(key, await scanned())).toBe(true);
    expect(await identities.deleteRefused(key, stamped)).toBe(false); // gone
  });
});
