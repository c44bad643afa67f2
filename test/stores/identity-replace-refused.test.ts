import { DeleteItemCommand, PutItemCommand, UpdateItemCommand, type DynamoDBClient, type UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WORKER_WRITES } from '../../infra/access.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { ConflictError } from '../../lib/stores/errors.js';
import { HeartbeatStore } from '../../lib/stores/identity-store.js';
import { NOW } from '../fixtures.js';
import { testTables, type TestTables } from '../support.js';

/**
 * HeartbeatStore.look and replaceRefused on DynamoDB Local: a heartbeat's take-over of its host's row
 * the schema refuses (lib/sdk/identity.ts), written over whole only while the row is as read.
 */
let t: TestTables;
let identities: HeartbeatStore;
/** Every UpdateItem the store sent, as sent. */
const updates: UpdateItemCommandInput[] = [];

beforeAll(async () => {
  t = await testTables('replace-refused');
  const recording = { send: (cmd: { input: unknown }, ...rest: unknown[]) => {
    if (cmd instanceof UpdateItemCommand) updates.push(cmd.input);
    return (t.client.send as (...a: unknown[]) => Promise<unknown>)(cmd, ...rest);
  } } as unknown as DynamoDBClient;
  identities = new HeartbeatStore(recording, t.names.identities);
});
afterAll(() => t.drop());

const mine = (name: string) => ({
  holderIdentity: `${name}_new`,
  hostname: 'node-1',
  leaseDurationSeconds: 3600,
  acquireTime: NOW,
  renewTime: NOW,
  labels: { component: 'worker', hostname: 'node-1' },
  expiresAt: NOW / 1000 + 7200,
});
/** A row the schema refuses (its hostname blanked by an operator), with `extra` over it. */
const put = async (name: string, extra: Record<string, unknown> = {}) => {
  const key = { component: 'worker', name };
  const row = { ...key, holderIdentity: `${name}_old`, hostname: '', leaseDurationSeconds: 3600, acquireTime: NOW - 60_000, renewTime: NOW - 10_000, labels: { component: 'worker', hostname: 'node-1', zone: 'a' }, revision: 7, ...extra };
  await t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall(row, { removeUndefinedValues: true }) }));
  const look = await identities.look(key.component, key.name);
  if (!('refused' in look)) throw new Error('the row was not refused');
  return { key, look: look.refused };
};

describe('HeartbeatStore.look and replaceRefused', () => {
  it('look returns a refused row as stored, naming its fields, where read() throws; a good row or none as read() does', async () => {
    const { key, look } = await put('look');
    expect(look.invalid.error.fields).toEqual(['hostname']);
    expect(look.row).toMatchObject({ hostname: '', revision: 7 });
    await expect(identities.read(key.component, key.name)).rejects.toBeInstanceOf(ValidationError);
    expect(await identities.look('worker', 'none')).toEqual({ read: { key: { component: 'worker', name: 'none' }, item: undefined, revision: 0 } });
    const written = await identities.replaceRefused(key, look.row, mine(key.name));
    expect(await identities.look(key.component, key.name)).toEqual({ read: await identities.read(key.component, key.name) });
    expect((await identities.read(key.component, key.name)).item).toEqual(written);
  });

  it('writes the row over whole: its set, the revision read plus one, every other attribute a worker may name removed', async () => {
    const { key, look } = await put('whole', { process: 'p-1' });
    const written = await identities.replaceRefused(key, look.row, mine(key.name));
    expect(written).toEqual({ ...key, ...mine(key.name), revision: 8 });
    expect(await identities.readRow(key.component, key.name)).toEqual(written); // no `zone` label, no `process`
  });

  it.each([
    ['a string', 'x'],
    ['absent', undefined],
    ['zero', 0],
  ])('a revision that is %s is written as 1', async (_how, revision) => {
    const { key, look } = await put(`revision-${String(revision)}`, { revision });
    expect((await identities.replaceRefused(key, look.row, mine(key.name))).revision).toBe(1);
  });

  it.each([
    ['renewed (its stamp moved)', 'SET renewTime = :v', { ':v': NOW }],
    ['taken by another start-up', 'SET holderIdentity = :v', { ':v': 'other_new' }],
    ['mended by an operator', 'SET hostname = :v', { ':v': 'node-1' }],
    ['relabelled (a map as read)', 'SET labels = :v', { ':v': { component: 'worker', hostname: 'node-1', zone: 'b' } }],
    ['given a revision it lacked', 'SET revision = :v', { ':v': 1 }],
  ])('a row changed since it was read (%s) is left as it is: a ConflictError', async (how, update, values) => {
    const { key, look } = await put(`changed-${how.split(' ')[0]}`, how.startsWith('given') ? { revision: undefined } : {});
    await t.client.send(new UpdateItemCommand({ TableName: t.names.identities, Key: marshall(key), UpdateExpression: update, ExpressionAttributeValues: marshall(values) }));
    const now = await identities.readRow(key.component, key.name);
    await expect(identities.replaceRefused(key, look.row, mine(key.name))).rejects.toBeInstanceOf(ConflictError);
    expect(await identities.readRow(key.component, key.name)).toEqual(now);
  });

  // a number a double cannot hold exactly (boto3's Decimal(time.time())): the condition names its
  // digits as stored, not the nearest double, which DynamoDB's own never equals (a review,
  // 2026-12-07, tenth: the take-over was refused at every try, and the heartbeat never started)
  it('a row holding numbers a double cannot hold exactly (at the top and nested) is taken over, and deleted as scanned', async () => {
    const digits = '1733550000000.1234567890123456789';
    const raw = async (name: string) => {
      const key = { component: 'worker', name };
      await t.client.send(
        new PutItemCommand({
          TableName: t.names.identities,
          Item: { ...marshall({ ...key, holderIdentity: `${name}_old`, hostname: '', leaseDurationSeconds: 3600, acquireTime: NOW - 60_000, revision: 3 }), renewTime: { N: digits }, leftTerms: { M: { l: { N: '0.10000000000000000000001' }, m: { L: [{ N: '1.00000000000000000001' }] } } } },
        }),
      );
      const look = await identities.look(key.component, key.name);
      if (!('refused' in look)) throw new Error('the row was not refused');
      return { key, look: look.refused };
    };
    const { key, look } = await raw('digits');
    expect(look.row['renewTime']).toBe(Number(digits)); // read as before: the nearest double
    expect((await identities.replaceRefused(key, look.row, mine(key.name))).holderIdentity).toBe('digits_new');
    const gone = await raw('digits-gone');
    expect(await identities.deleteRefused(gone.key, gone.look.row)).toBe(true);
    expect(await identities.readRow(gone.key.component, gone.key.name)).toBeUndefined();
  });

  it('a row deleted since it was read is not created again: a ConflictError', async () => {
    const { key, look } = await put('deleted');
    await t.client.send(new DeleteItemCommand({ TableName: t.names.identities, Key: marshall(key) }));
    await expect(identities.replaceRefused(key, look.row, mine(key.name))).rejects.toBeInstanceOf(ConflictError);
    expect(await identities.readRow(key.component, key.name)).toBeUndefined();
  });

  it("names only attributes a worker's grant lets it name (infra/access.ts), though the row has others", async () => {
    const { key, look } = await put('grant', { endedTerms: { l: 3 }, foreign: 'x', leftTerms: 'not a map' });
    updates.length = 0;
    await identities.replaceRefused(key, look.row, mine(key.name));
    const named = new Set([...Object.keys(updates[0]!.Key!), ...Object.values(updates[0]!.ExpressionAttributeNames ?? {})]);
    expect([...named].filter((a) => !WORKER_WRITES.identities[0].attributes.includes(a as never))).toEqual([]);
    expect(updates[0]!.ReturnValues).toBe('ALL_NEW');
    // what it may not name stays (a worker cannot remove it); what it may (leftTerms) is removed
    expect(await identities.readRow(key.component, key.name)).toMatchObject({ endedTerms: { l: 3 }, foreign: 'x' });
    expect(await identities.readRow(key.component, key.name)).not.toHaveProperty('leftTerms');
  });
});
