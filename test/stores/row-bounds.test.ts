/**
 * What a row of any size costs a reader. Found by a review (confirmed on DynamoDB Local): the parse
 * cache was keyed by a row's whole text and kept 1,024 rows a schema, so a worker rewriting lease
 * A's identityClaim with 385 KB of keys the schema drops (IAM judges a write's top-level names only)
 * left up to 2.3 MB in every follower at each rewrite (256 MB gone after ~105); such a row was valid;
 * and a refused row's key, 1,024 control characters, was copied whole into every message and log line.
 */
import { PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CandidateItem, MAX_CANDIDATE_ROW_BYTES, MAX_STRATEGIES } from '../../lib/schemas/candidate.js';
import { MAX_LABELS, MAX_MILLIS } from '../../lib/schemas/common.js';
import { LeaseItem, MAX_COMPLETED_RUNS, MAX_LEASE_ROW_BYTES } from '../../lib/schemas/lease.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import * as itemStore from '../../lib/stores/item-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
let leases: LeaseStore;
let candidates: CandidateStore;
beforeAll(async () => {
  t = await testTables('row-bounds');
  leases = new LeaseStore(t.client, t.names.leases);
  candidates = new CandidateStore(t.client, t.names.candidates);
});
afterAll(() => t.drop());

/** What the parse cache holds (its own accounting); absent before the fix: nothing was counted. */
const held = (): { rows: number; chars: number } => (itemStore as { parsedRowsHeld?: () => { rows: number; chars: number } }).parsedRowsHeld?.() ?? { rows: NaN, chars: NaN };

/** Lease `name` as a worker of it may write it: a valid row, its identityClaim carrying `extra` characters of keys the schema drops. */
async function writeClaim(name: string, extra: number, fill = 'x', i = 0): Promise<void> {
  const pad = Object.fromEntries(Array.from({ length: Math.ceil(extra / 10_000) }, (_, k) => [`pad${k}`, `${i}`.padEnd(Math.min(10_000, extra - k * 10_000), fill)]));
  await t.client.send(
    new UpdateItemCommand({
      TableName: t.names.leases,
      Key: marshall({ name }),
      UpdateExpression: 'SET leaseDurationSeconds = :d, leaseTransitions = :z, fencingToken = :t, identityClaim = :c ADD revision :one',
      ExpressionAttributeValues: marshall({ ':d': 15, ':z': 0, ':t': 1, ':c': { name: 'w', instance: 'i', of: 'o', at: 1, ...pad }, ':one': 1 }),
    }),
  );
}

describe('the parse cache', () => {
  it('holds one entry a row, however often it is rewritten: rewrites of a row replace its entry', async () => {
    const before = held();
    for (let i = 0; i < 40; i++) {
      await writeClaim('rewritten', 30_000, 'x', i);
      expect((await leases.read('rewritten', false)).item?.identityClaim?.name).toBe('w'); // a follower's poll
    }
    // before the fix: 40 rows of 30 KB each, never read again
    expect(held().rows).toBe(before.rows + 1);
    expect(held().chars - before.chars).toBeLessThan(64 * 1024);
    // unchanged since, it is parsed no more: the same item
    const first = await leases.read('rewritten', false);
    expect((await leases.read('rewritten', false)).item).toBe(first.item);
  });

  it('keeps no row of over 64 KB of text (control characters are 6 each in JSON): such a row is parsed at each read', async () => {
    await writeClaim('long', 30_000);
    await leases.read('long');
    const before = held();
    await writeClaim('long', 12_000, '\u0001'); // 12 KB stored, 72 KB of JSON text
    const a = await leases.read('long');
    const b = await leases.read('long');
    expect(b.item).toEqual(a.item);
    expect(b.item).not.toBe(a.item);
    // the row's earlier entry went with it
    expect(held().rows).toBe(before.rows - 1);
    expect(held().chars).toBeLessThan(before.chars);
  });

  it('keeps 8 MB of rows in all, the least recently read out', async () => {
    const names = Array.from({ length: 150 }, (_, i) => `many-${i}`);
    for (const n of names) {
      await writeClaim(n, 60_000); // each 60 KB of text: 9 MB in all
      await leases.read(n);
    }
    expect(held().chars).toBeLessThanOrEqual(8 * 1024 * 1024);
    expect(held().rows).toBeLessThan(150);
    const last = await leases.read(names.at(-1)!);
    expect((await leases.read(names.at(-1)!)).item).toBe(last.item);
  });
});

// a string of `n` characters of 3 bytes each in UTF-8: what a free-text field's limit allows at most
const wide = (n: number) => '\u0800'.repeat(n);
const T = MAX_MILLIS;
const TOKEN = Number.MAX_SAFE_INTEGER - 1;
const ecs = { kind: 'ecs', id: `arn:aws:ecs:us-east-1:123456789012:task/${wide(2048 - 40)}`, cluster: wide(2048), availabilityZone: wide(64) };

describe('a valid row is bounded in size', () => {
  it('every field of a lease or candidate row at its limit, 3 bytes a character, stays well within its kind’s bound', () => {
    const lease = {
      name: 'a'.repeat(253), minReader: 1, holderIdentity: wide(253), holderInstance: wide(512), holderAddress: wide(2048), holderPlatform: ecs, holderPlatformId: wide(2048),
      holderLoss: { holder: wide(253), fencingToken: TOKEN, source: 'aws.ecs', platformId: wide(2048), reason: wide(4096), at: T },
      lastHolderIdentity: wide(253), leaseDurationSeconds: 86_400, acquireTime: T, renewTime: T, leaseTransitions: TOKEN, strategy: 'S'.repeat(128),
      preferredLocations: Array.from({ length: 16 }, (_, i) => `${i}`.padEnd(64, 'z')), preferredHolder: wide(253), fencingToken: TOKEN, electedBy: 'coordinator',
      runs: Array.from({ length: MAX_COMPLETED_RUNS }, () => ({ window: wide(256), fencingToken: TOKEN, holder: wide(253), at: T })), electedStrategy: 'S'.repeat(128),
      election: { id: wide(512), startedAt: T, deadline: T, strategy: 'S'.repeat(128), holder: wide(253), departed: wide(253), notBefore: T, awaitsStream: true },
      successor: wide(253), successorInstance: wide(512), secondSuccessor: wide(253), secondSuccessorInstance: wide(512),
      vacancyReport: { by: wide(253), at: T, observedRevision: TOKEN }, identityClaim: { name: wide(253), instance: wide(512), of: wide(512), at: T }, session: 'a'.repeat(253),
      lastElectionFailure: { at: T, electionId: wide(512), reason: 'contradictoryStrategies', message: wide(2048) }, termToken: TOKEN, renewalMark: 2, revision: TOKEN,
    };
    const candidate = {
      leaseName: 'a'.repeat(253), name: 'a'.repeat(253), minReader: 1, binaryVersion: wide(256), emulationVersion: wide(256), priority: 2_147_483_647, priorityExpiresAt: T,
      preferredStrategies: Array.from({ length: MAX_STRATEGIES }, (_, i) => `S${i}`.padEnd(128, 'x')), renewTime: T, pingTime: T, ackedPingTime: T, createdAt: T,
      identity: wide(512), platform: ecs, address: wide(2048), location: { zone: wide(64), region: wide(64) },
      labels: Object.fromEntries(Array.from({ length: MAX_LABELS }, (_, i) => [`${i}`.padEnd(128, '\u0800'), wide(256)])), revision: TOKEN, expiresAt: Math.floor(T / 1000),
      session: 'a'.repeat(253), collectedAt: T, renewalMark: 2, standsDownUntil: T,
    };
    // every field there (a new one is added here too, and counted), each valid
    expect(Object.keys(lease).sort()).toEqual(Object.keys(LeaseItem.shape).sort());
    expect(Object.keys(candidate).sort()).toEqual(Object.keys(CandidateItem.shape).sort());
    expect(LeaseItem.safeParse(lease).success).toBe(true);
    expect(CandidateItem.safeParse(candidate).success).toBe(true);
    expect(itemStore.rowBytes(lease)).toBe(122_034);
    expect(itemStore.rowBytes(candidate)).toBe(98_971);
    // room for a later version's fields: half as much again
    expect(MAX_LEASE_ROW_BYTES).toBeGreaterThan(1.5 * 122_034);
    expect(MAX_CANDIDATE_ROW_BYTES).toBeGreaterThan(1.5 * 98_971);
  });

  it("a lease row over it (an identityClaim of 385 KB of keys the schema drops) is a ValidationError naming the row, its size and the bound", async () => {
    await writeClaim('oversize', 385_000);
    const e = await leases.read('oversize').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as ValidationError).fields).toEqual(['(root)']);
    expect((e as Error).message).toMatch(new RegExp(`^invalid lease "oversize" in table ${t.names.leases}: \\(root\\): is 385\\d{3} bytes: a valid lease row is at most ${MAX_LEASE_ROW_BYTES}$`));
    // refused as a row of a bad field is: by a scan too
    const scanned = [];
    for await (const page of leases.scan()) scanned.push(...page.filter((s) => s.row['name'] === 'oversize'));
    expect(scanned).toMatchObject([{ ok: false, invalid: { key: { name: 'oversize' } } }]);
  });

  it('a candidate row over it (location carrying 200 KB) is refused, its key and stamp as stored', async () => {
    const location = { zone: 'us-east-1a', ...Object.fromEntries(Array.from({ length: 20 }, (_, k) => [`x${k}`, 'y'.repeat(10_000)])) };
    const row = { leaseName: 'job', name: 'big', binaryVersion: '1.0.0', emulationVersion: '1.0.0', preferredStrategies: ['OldestEmulationVersion'], renewTime: 1.8e12, createdAt: 1.8e12, revision: 1, location };
    await t.client.send(new PutItemCommand({ TableName: t.names.candidates, Item: marshall(row) }));
    const list = await candidates.list('job');
    expect(list.candidates).toEqual([]);
    expect(list.invalid).toHaveLength(1);
    expect(list.invalid[0]!.error.message).toMatch(/^invalid candidate "job"\/"big" in table [^:]+: \(root\): is 200\d{3} bytes: a valid candidate row is at most 163840$/);
  });
});

describe('a key no valid row has', () => {
  const name = 'n'.padEnd(1_024, '\u0001');
  it('is cut in messages and in a refused row as JSON (a log line), and kept whole to address the row by', async () => {
    await t.client.send(new PutItemCommand({ TableName: t.names.candidates, Item: marshall({ leaseName: 'keys', name, renewTime: 1.8e12, revision: 1 }) }));
    const { invalid } = await candidates.list('keys');
    expect(invalid).toHaveLength(1);
    const [i] = invalid as [itemStore.InvalidItem];
    expect(i.key['name']).toBe(name); // the tick times and deletes it by it
    // before the fix: 6,170 characters each (1,024 control characters, 6 each in JSON)
    expect(JSON.stringify(i.key)).toBe(JSON.stringify({ leaseName: 'keys', name: `n${'\u0001'.repeat(63)}...(+960 chars)` }));
    expect(i.error.message.length).toBeLessThan(1_000);
    expect(i.error.message).toContain('...(+960 chars)');
    expect(candidates.describe({ leaseName: 'keys', name })).toBe(`candidate "keys"/${JSON.stringify(`n${'\u0001'.repeat(63)}...(+960 chars)`)} in table ${t.names.candidates}`);
  });

  it('but a key a valid row may have is shown whole', () => {
    const long = 'a'.repeat(253);
    expect(candidates.describe({ leaseName: long, name: 'b' })).toBe(`candidate "${long}"/"b" in table ${t.names.candidates}`);
  });
});
