/**
 * The model's contract: every case runs on DynamoDB Local and on the model (sim/dynamodb-model)
 * and must give the same outcome — returned items, error classes and names, cancellation codes,
 * stream records — never compared by message text. A behaviour the simulator relies on is pinned
 * here first; when DynamoDB Local and the model disagree, this file is where it shows.
 *
 * Known differences:
 * - TTL (run on the model only: see the TTL case): DynamoDB Local deletes expired items on its own
 *   schedule (seconds alone, minutes or more in the full suite), and its REMOVE
 *   records say eventName `UNKNOWN_TO_SDK_VERSION` with no userIdentity; DynamoDB (and the model)
 *   say `REMOVE` with userIdentity { type: 'Service', principalId: 'dynamodb.amazonaws.com' }.
 * - Reserved words: DynamoDB Local accepts CONVERT and SIZE as bare attribute names; they are on
 *   DynamoDB's documented list, which the model follows.
 * - ApproximateCreationDateTime: DynamoDB Local rounds it down to the minute, DynamoDB and the
 *   model to the second (not compared).
 */
import {
  BatchGetItemCommand,
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  type AttributeValue,
  type QueryCommandInput,
  type ScanCommandOutput,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../../lib/clock.js';
import { FencingError, fencedTransactWrite } from '../../lib/sdk/fencing.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { RESERVED_WORDS } from '../../sim/dynamodb-model/reserved-words.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { ConflictError } from '../../lib/stores/errors.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { LeaseStore, type LeaseRead, type Term } from '../../lib/stores/lease-store.js';
import { NOW, cand } from '../fixtures.js';
import { VALIDATION, change, localEngine, modelEngine, outcome, streamRecords, type Outcome, type TestEngine } from './engines.js';

const S = (s: string): AttributeValue => ({ S: s });
const N = (n: number | string): AttributeValue => ({ N: String(n) });
const CCF = { error: 'ConditionalCheckFailedException', class: 'ConditionalCheckFailedException', service: true } as const;
const CANCELED = { error: 'TransactionCanceledException', class: 'TransactionCanceledException', service: true } as const;
const NOT_FOUND = { error: 'ResourceNotFoundException', class: 'ResourceNotFoundException', service: true } as const;

/** A TTL no engine's clock reaches during a run (DynamoDB Local's TTL runs on the machine's clock). */
const FAR_FUTURE_SECONDS = 4_102_444_800; // 2100-01-01

/** A TTL in epoch seconds, `s` from the engine's now. */
const ttlIn = (e: TestEngine, s: number) => N(Math.floor(e.now() / 1000) + s);

const ENGINES = [
  ['DynamoDB Local', localEngine],
  ['model', modelEngine],
] as const;

describe.each(ENGINES)('%s', (kind, make) => {
  let e: TestEngine;
  let L: string; // leases: key `name`, GSI byHolderPlatform (keys only), stream
  let C: string; // candidates: key `leaseName` + `name`, stream
  let I: string; // identities: key `component` + `name`, no stream
  let NUMS: string; // pk + numeric n, keys-only stream
  const send = (cmd: { input: unknown }) => outcome(e.client.send(cmd as never));
  const lk = (name: string) => ({ name: S(name) });

  beforeAll(async () => {
    e = await make('contract');
    ({ leases: L, candidates: C, identities: I, nums: NUMS } = e.names);
    // TTL first, so DynamoDB Local's sweeper has had time by the last test
    const row = (name: string, expiresAt: AttributeValue) => e.client.send(new PutItemCommand({ TableName: C, Item: { leaseName: S('ttl'), name: S(name), expiresAt } }));
    await row('expired', ttlIn(e, -60));
    await row('future', ttlIn(e, 3600));
    await row('ancient', ttlIn(e, -6 * 365 * 86_400)); // more than five years ago: DynamoDB ignores it
    await row('not-a-number', S('soon'));
  });
  afterAll(() => e?.drop());

  describe('UpdateItem', () => {
    it('creates with attribute_not_exists; a second create fails, carrying the item with ALL_OLD', async () => {
      const create = (rv?: 'ALL_OLD') =>
        send(
          new UpdateItemCommand({
            TableName: L,
            Key: lk('u-create'),
            UpdateExpression: 'SET #rev = :one, #h = :h',
            ConditionExpression: 'attribute_not_exists(#pk)',
            ExpressionAttributeNames: { '#rev': 'revision', '#h': 'holderIdentity', '#pk': 'name' },
            ExpressionAttributeValues: { ':one': N(1), ':h': S('a') },
            ReturnValues: 'ALL_NEW',
            ...(rv ? { ReturnValuesOnConditionCheckFailure: rv } : {}),
          }),
        );
      const item = { name: S('u-create'), revision: N(1), holderIdentity: S('a') };
      expect(await create('ALL_OLD')).toEqual({ ok: { Attributes: item } });
      expect(await create('ALL_OLD')).toEqual({ ...CCF, item });
      expect(await create()).toEqual(CCF);
    });

    it('a condition on a missing item fails without an item, even with ALL_OLD', async () => {
      expect(
        await send(
          new UpdateItemCommand({
            TableName: L,
            Key: lk('u-missing'),
            UpdateExpression: 'SET x = :one',
            ConditionExpression: 'attribute_exists(x)',
            ExpressionAttributeValues: { ':one': N(1) },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        ),
      ).toEqual(CCF);
    });

    it('computes from the item as it was: if_not_exists, − and +, ADD (the renewal mark flips 1, 2, 1)', async () => {
      const flip = () =>
        send(
          new UpdateItemCommand({
            TableName: L,
            Key: lk('u-flip'),
            UpdateExpression: 'SET #m = :three - if_not_exists(#m, :two), c = if_not_exists(c, :zero) + :one ADD #rev :one',
            ExpressionAttributeNames: { '#m': 'renewalMark', '#rev': 'revision' },
            ExpressionAttributeValues: { ':three': N(3), ':two': N(2), ':zero': N(0), ':one': N(1) },
            ReturnValues: 'UPDATED_NEW',
          }),
        );
      expect(await flip()).toEqual({ ok: { Attributes: { renewalMark: N(1), c: N(1), revision: N(1) } } });
      expect(await flip()).toEqual({ ok: { Attributes: { renewalMark: N(2), c: N(2), revision: N(2) } } });
      expect(await flip()).toEqual({ ok: { Attributes: { renewalMark: N(1), c: N(3), revision: N(3) } } });
      // (a + b) is an operand; a + b - c is not
      expect(await send(new UpdateItemCommand({ TableName: L, Key: lk('u-flip'), UpdateExpression: 'SET c = (c + :one)', ExpressionAttributeValues: { ':one': N(1) }, ReturnValues: 'UPDATED_NEW' }))).toEqual({
        ok: { Attributes: { c: N(4) } },
      });
      expect(await send(new UpdateItemCommand({ TableName: L, Key: lk('u-flip'), UpdateExpression: 'SET c = c + :one - :one', ExpressionAttributeValues: { ':one': N(1) } }))).toEqual(VALIDATION);
    });

    it('refuses arithmetic on what is missing or not a number, and ADD to a string', async () => {
      await e.client.send(new PutItemCommand({ TableName: L, Item: { name: S('u-arith'), s: S('x'), n: N(1) } }));
      const upd = (expr: string) => send(new UpdateItemCommand({ TableName: L, Key: lk('u-arith'), UpdateExpression: expr, ExpressionAttributeValues: { ':one': N(1) } }));
      expect(await upd('SET n = nope + :one')).toEqual(VALIDATION);
      expect(await upd('SET n = s + :one')).toEqual(VALIDATION);
      expect(await upd('ADD s :one')).toEqual(VALIDATION);
      expect(await send(new GetItemCommand({ TableName: L, Key: lk('u-arith'), ConsistentRead: true }))).toEqual({ ok: { Item: { name: S('u-arith'), s: S('x'), n: N(1) } } });
    });

    it('REMOVE, and what UPDATED_OLD, UPDATED_NEW and ALL_OLD return', async () => {
      await e.client.send(new PutItemCommand({ TableName: L, Item: { name: S('u-rv'), x: N(1), y: N(1), z: N(1) } }));
      const upd = (expr: string, rv: 'UPDATED_OLD' | 'UPDATED_NEW' | 'ALL_OLD' | 'NONE') =>
        send(new UpdateItemCommand({ TableName: L, Key: lk('u-rv'), UpdateExpression: expr, ExpressionAttributeValues: { ':two': N(2) }, ReturnValues: rv }));
      expect(await upd('SET x = :two REMOVE y', 'UPDATED_OLD')).toEqual({ ok: { Attributes: { x: N(1), y: N(1) } } });
      expect(await upd('SET y = :two REMOVE x', 'UPDATED_NEW')).toEqual({ ok: { Attributes: { y: N(2) } } });
      expect(await upd('SET w = :two', 'UPDATED_OLD')).toEqual({ ok: {} });
      expect(await upd('SET w = :two', 'ALL_OLD')).toEqual({ ok: { Attributes: { name: S('u-rv'), y: N(2), z: N(1), w: N(2) } } });
      expect(await upd('SET w = :two', 'NONE')).toEqual({ ok: {} });
    });

    it('an update of a missing item creates it (its key alone when it only removes)', async () => {
      expect(await send(new UpdateItemCommand({ TableName: L, Key: lk('u-upsert'), UpdateExpression: 'REMOVE x', ReturnValues: 'ALL_NEW' }))).toEqual({ ok: { Attributes: { name: S('u-upsert') } } });
      expect(await send(new GetItemCommand({ TableName: L, Key: lk('u-upsert'), ConsistentRead: true }))).toEqual({ ok: { Item: { name: S('u-upsert') } } });
      expect(await send(new UpdateItemCommand({ TableName: L, Key: lk('u-upsert2'), ReturnValues: 'ALL_OLD' }))).toEqual({ ok: {} });
      expect(await send(new GetItemCommand({ TableName: L, Key: lk('u-upsert2') }))).toEqual({ ok: { Item: { name: S('u-upsert2') } } });
    });

    it('updates nested paths: maps, list indexes, list_append, sets', async () => {
      await e.client.send(
        new PutItemCommand({ TableName: L, Item: { name: S('u-doc'), l: { L: [N(1), N(2), N(3)] }, m: { M: { a: N(1), in: { M: { x: S('y') } } } }, ss: { SS: ['a', 'b'] }, ns: { NS: ['1', '2'] } } }),
      );
      const upd = (expr: string, values?: Record<string, AttributeValue>, names?: Record<string, string>) =>
        send(new UpdateItemCommand({ TableName: L, Key: lk('u-doc'), UpdateExpression: expr, ExpressionAttributeValues: values, ExpressionAttributeNames: names }));
      expect(await upd('SET m.b = :one, m.#in.z = :one', { ':one': N(1) }, { '#in': 'in' })).toEqual({ ok: {} });
      expect(await upd('SET l[10] = :nine', { ':nine': N(9) })).toEqual({ ok: {} }); // past the end: appended
      expect(await upd('REMOVE l[0], l[2]')).toEqual({ ok: {} }); // both indexes as in the old list
      expect(await upd('SET l = list_append(:f, l)', { ':f': { L: [S('f')] } })).toEqual({ ok: {} });
      expect(await upd('ADD ss :c, ns :three', { ':c': { SS: ['c', 'a'] }, ':three': { NS: ['3'] } })).toEqual({ ok: {} });
      expect(await upd('DELETE ss :ab', { ':ab': { SS: ['a', 'b', 'zz'] } })).toEqual({ ok: {} });
      expect(await upd('SET nope.x = :one', { ':one': N(1) })).toEqual(VALIDATION);
      expect(await upd('SET l2 = list_append(l2, :f)', { ':f': { L: [S('f')] } })).toEqual(VALIDATION);
      expect(await upd('ADD ss :n', { ':n': { NS: ['3'] } })).toEqual(VALIDATION);
      expect(await send(new GetItemCommand({ TableName: L, Key: lk('u-doc'), ConsistentRead: true }))).toEqual({
        ok: {
          Item: {
            name: S('u-doc'),
            l: { L: [S('f'), N(2), N(9)] },
            m: { M: { a: N(1), b: N(1), in: { M: { x: S('y'), z: N(1) } } } },
            ss: { SS: ['c'] },
            ns: { NS: expect.arrayContaining(['1', '2', '3']) },
          },
        },
      });
      expect(await send(new GetItemCommand({ TableName: L, Key: lk('u-doc'), ProjectionExpression: 'l[1], l[0], m.#in.x, nope', ExpressionAttributeNames: { '#in': 'in' } }))).toEqual({
        ok: { Item: { l: { L: [S('f'), N(2)] }, m: { M: { in: { M: { x: S('y') } } } } } },
      });
      expect(await send(new GetItemCommand({ TableName: L, Key: lk('u-doc'), ProjectionExpression: 'm, m.a' }))).toEqual(VALIDATION);
    });

    it('keeps numbers canonical and exact, to 38 digits', async () => {
      const big = '12345678901234567890123456789012345678';
      await e.client.send(new PutItemCommand({ TableName: L, Item: { name: S('u-num'), a: N('01.500'), b: N('-0'), c: N('1e3'), d: N('-0.000120'), big: N(big) } }));
      expect(await send(new GetItemCommand({ TableName: L, Key: lk('u-num'), ConsistentRead: true }))).toEqual({
        ok: { Item: { name: S('u-num'), a: N('1.5'), b: N('0'), c: N('1000'), d: N('-0.00012'), big: N(big) } },
      });
      const upd = (expr: string, values: Record<string, AttributeValue>) =>
        send(new UpdateItemCommand({ TableName: L, Key: lk('u-num'), UpdateExpression: expr, ExpressionAttributeValues: values, ReturnValues: 'UPDATED_NEW' }));
      expect(await upd('SET s = :a + :b', { ':a': N('0.1'), ':b': N('0.2') })).toEqual({ ok: { Attributes: { s: N('0.3') } } });
      expect(await upd('SET s = :a - :b', { ':a': N('1'), ':b': N('1800000000000.25') })).toEqual({ ok: { Attributes: { s: N('-1799999999999.25') } } });
      expect(await upd('SET big = big + :half', { ':half': N('0.5') })).toEqual(VALIDATION);
      expect(await send(new PutItemCommand({ TableName: L, Item: { name: S('u-num2'), x: N('abc') } }))).toEqual(VALIDATION);
    });
  });

  describe('conditions', () => {
    beforeAll(async () => {
      await e.client.send(
        new PutItemCommand({
          TableName: L,
          Item: { name: S('c-item'), n: N(5), s: S('é😀'), l: { L: [N(1), S('x')] }, m: { M: { a: N(1) } }, ss: { SS: ['a', 'b'] }, t: { BOOL: true }, z: { NULL: true } },
        }),
      );
    });
    const check = (expr: string, values: Record<string, AttributeValue> = {}) =>
      send(
        new UpdateItemCommand({
          TableName: L,
          Key: lk('c-item'),
          UpdateExpression: 'SET q = :q',
          ConditionExpression: expr,
          ExpressionAttributeValues: { ':q': N(1), ...values },
        }),
      );
    const holds: [string, Record<string, AttributeValue>, boolean][] = [
      ['nope <> :one', { ':one': N(1) }, true], // a missing attribute is unequal to anything
      ['nope = :one', { ':one': N(1) }, false],
      ['n < :s', { ':s': S('9') }, false], // different types never compare
      ['n <> :s', { ':s': S('5') }, true],
      ['NOT nope = :one', { ':one': N(1) }, true],
      ['n > :ten', { ':ten': N(10) }, false], // numbers compare as numbers
      ['n = :five', { ':five': N('5.0') }, true],
      ['n IN (:one, :five)', { ':one': N(1), ':five': N(5) }, true],
      ['n BETWEEN :one AND :five', { ':one': N(1), ':five': N(5) }, true],
      ['n BETWEEN :six AND :nine', { ':six': N(6), ':nine': N(9) }, false],
      ['size(s) = :three', { ':three': N(3) }, true], // UTF-16 code units
      ['size(l) = :two AND size(m) = :one AND size(ss) = :two', { ':two': N(2), ':one': N(1) }, true],
      ['size(nope) = :zero', { ':zero': N(0) }, false],
      ['contains(s, :e) AND contains(ss, :a) AND contains(l, :one)', { ':e': S('é'), ':a': S('a'), ':one': N(1) }, true],
      ['contains(ss, :c)', { ':c': S('c') }, false],
      ['attribute_type(n, :N) AND attribute_type(t, :BOOL) AND attribute_type(z, :NULL)', { ':N': S('N'), ':BOOL': S('BOOL'), ':NULL': S('NULL') }, true],
      ['attribute_type(m, :N)', { ':N': S('N') }, false],
      ['l[0] = :one AND m.a = :one AND l[1] = :x', { ':one': N(1), ':x': S('x') }, true],
      ['begins_with(s, :e)', { ':e': S('é') }, true],
      ['n = :one OR n = :five AND n = :one', { ':one': N(1), ':five': N(5) }, false], // AND binds tighter
      ['(n = :one OR n = :five) AND NOT n = :one', { ':one': N(1), ':five': N(5) }, true],
      ['attribute_exists(m.a) AND attribute_not_exists(m.b) AND attribute_not_exists(l[5])', {}, true],
    ];
    it.each(holds)('%s', async (expr, values, want) => {
      expect(await check(expr, values)).toEqual(want ? { ok: {} } : CCF);
    });

    it('refuses what DynamoDB refuses in a condition', async () => {
      expect(await check('if_not_exists(n, :one) = :one', { ':one': N(1) })).toEqual(VALIDATION);
      expect(await check('n BETWEEN :nine AND :one', { ':nine': N(9), ':one': N(1) })).toEqual(VALIDATION);
      expect(await check('n BETWEEN :nine AND :s', { ':nine': N(9), ':s': S('1') })).toEqual(VALIDATION);
      expect(await check('attribute_type(n, :x)', { ':x': S('X') })).toEqual(VALIDATION);
      expect(await check('n = n')).toEqual(VALIDATION);
      expect(await check('n = = :one', { ':one': N(1) })).toEqual(VALIDATION);
      expect(await check('nosuchfunction(n)')).toEqual(VALIDATION);
      expect(await check('n = :one AND', { ':one': N(1) })).toEqual(VALIDATION);
    });
  });

  describe('validation', () => {
    it('refuses placeholders used but not defined, defined but not used, and empty maps', async () => {
      const upd = (p: { names?: Record<string, string>; values?: Record<string, AttributeValue>; cond?: string }) =>
        send(
          new UpdateItemCommand({
            TableName: L,
            Key: lk('v-ph'),
            UpdateExpression: 'SET #x = :y',
            ExpressionAttributeNames: p.names,
            ExpressionAttributeValues: p.values,
            ...(p.cond ? { ConditionExpression: p.cond } : {}),
          }),
        );
      expect(await upd({ names: { '#x': 'x' } })).toEqual(VALIDATION); // :y undefined
      expect(await upd({ values: { ':y': N(1) } })).toEqual(VALIDATION); // #x undefined
      expect(await upd({ names: { '#x': 'x', '#z': 'z' }, values: { ':y': N(1) } })).toEqual(VALIDATION);
      expect(await upd({ names: { '#x': 'x' }, values: { ':y': N(1), ':z': N(2) } })).toEqual(VALIDATION);
      expect(await upd({ names: { '#x': 'x' }, values: { ':y': N(1), ':z': N(2) }, cond: 'attribute_exists(#x) OR #x <> :z' })).toEqual({ ok: {} });
      expect(await send(new UpdateItemCommand({ TableName: L, Key: lk('v-ph'), UpdateExpression: 'REMOVE x', ExpressionAttributeValues: {} }))).toEqual(VALIDATION);
      expect(await send(new GetItemCommand({ TableName: L, Key: lk('v-ph'), ExpressionAttributeNames: { '#a': 'a' } }))).toEqual(VALIDATION);
    });

    it('refuses a reserved word as a bare attribute name, not behind a placeholder', async () => {
      const upd = (expr: string, names?: Record<string, string>) =>
        send(new UpdateItemCommand({ TableName: L, Key: lk('v-reserved'), UpdateExpression: expr, ExpressionAttributeNames: names, ExpressionAttributeValues: { ':v': S('x') } }));
      expect(await upd('SET status = :v')).toEqual(VALIDATION);
      expect(await upd('SET #s = :v', { '#s': 'status' })).toEqual({ ok: {} });
      expect(await upd('SET renewTime2 = :v')).toEqual({ ok: {} });
    });

    it('refuses a bad key: missing, mistyped, extra, empty; and an update of a key or index key', async () => {
      const get = (Key: Record<string, AttributeValue>) => send(new GetItemCommand({ TableName: L, Key }));
      expect(await get({})).toEqual(VALIDATION);
      expect(await get({ name: N(1) })).toEqual(VALIDATION);
      expect(await get({ name: S('a'), x: S('y') })).toEqual(VALIDATION);
      expect(await get({ name: S('') })).toEqual(VALIDATION);
      expect(await send(new GetItemCommand({ TableName: C, Key: { leaseName: S('a') } }))).toEqual(VALIDATION);
      const upd = (expr: string, values?: Record<string, AttributeValue>, names?: Record<string, string>) =>
        send(new UpdateItemCommand({ TableName: L, Key: lk('v-key'), UpdateExpression: expr, ExpressionAttributeValues: values, ExpressionAttributeNames: names }));
      expect(await upd('SET #n = :v', { ':v': S('v-key') }, { '#n': 'name' })).toEqual(VALIDATION);
      expect(await upd('SET x = :v REMOVE x', { ':v': S('a') })).toEqual(VALIDATION); // overlapping paths
      expect(await upd('SET holderPlatformId = :v', { ':v': N(1) })).toEqual(VALIDATION); // the GSI's key is a string
      expect(await upd('SET holderPlatformId = :v', { ':v': S('') })).toEqual(VALIDATION);
      expect(await upd('SET x = :a SET y = :a', { ':a': S('a') })).toEqual(VALIDATION);
      expect(await send(new PutItemCommand({ TableName: L, Item: { x: S('no key') } }))).toEqual(VALIDATION);
      expect(await send(new PutItemCommand({ TableName: L, Item: { name: S('v-set'), ss: { SS: [] } } }))).toEqual(VALIDATION);
      expect(await send(new PutItemCommand({ TableName: L, Item: { name: S('v-set'), ss: { SS: ['a', 'a'] } } }))).toEqual(VALIDATION);
      expect(await send(new GetItemCommand({ TableName: L, Key: lk('v-key') }))).toEqual({ ok: {} }); // nothing was written
    });

    it('a missing table is ResourceNotFoundException', async () => {
      const T = `${L}-nope`;
      expect(await send(new GetItemCommand({ TableName: T, Key: lk('a') }))).toEqual(NOT_FOUND);
      expect(await send(new UpdateItemCommand({ TableName: T, Key: lk('a'), UpdateExpression: 'REMOVE x' }))).toEqual(NOT_FOUND);
      expect(await send(new ScanCommand({ TableName: T }))).toEqual(NOT_FOUND);
      expect(await send(new TransactWriteItemsCommand({ TransactItems: [{ Put: { TableName: T, Item: { name: S('a') } } }] }))).toEqual(NOT_FOUND);
    });
  });

  describe('PutItem and DeleteItem', () => {
    it('PutItem replaces, returns the old item with ALL_OLD, refuses ALL_NEW, honours a condition', async () => {
      const put = (Item: Record<string, AttributeValue>, rest: object = {}) => send(new PutItemCommand({ TableName: L, Item, ...rest }));
      expect(await put({ name: S('p-1'), a: N(1) }, { ReturnValues: 'ALL_OLD' })).toEqual({ ok: {} });
      expect(await put({ name: S('p-1'), b: N(2) }, { ReturnValues: 'ALL_OLD' })).toEqual({ ok: { Attributes: { name: S('p-1'), a: N(1) } } });
      expect(await put({ name: S('p-1') }, { ReturnValues: 'ALL_NEW' })).toEqual(VALIDATION);
      expect(await put({ name: S('p-1') }, { ConditionExpression: 'attribute_not_exists(#n)', ExpressionAttributeNames: { '#n': 'name' }, ReturnValuesOnConditionCheckFailure: 'ALL_OLD' })).toEqual({
        ...CCF,
        item: { name: S('p-1'), b: N(2) },
      });
    });

    it('DeleteItem deletes only when the condition holds; ALL_OLD returns what was deleted', async () => {
      await e.client.send(new PutItemCommand({ TableName: L, Item: { name: S('d-1'), revision: N(3) } }));
      const del = (rev: number, rest: object = {}) =>
        send(new DeleteItemCommand({ TableName: L, Key: lk('d-1'), ConditionExpression: '#rev = :rev', ExpressionAttributeNames: { '#rev': 'revision' }, ExpressionAttributeValues: { ':rev': N(rev) }, ...rest }));
      expect(await del(2, { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' })).toEqual({ ...CCF, item: { name: S('d-1'), revision: N(3) } });
      expect(await del(3, { ReturnValues: 'ALL_OLD' })).toEqual({ ok: { Attributes: { name: S('d-1'), revision: N(3) } } });
      expect(await del(3, { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' })).toEqual(CCF);
      expect(await send(new DeleteItemCommand({ TableName: L, Key: lk('d-1'), ReturnValues: 'ALL_OLD' }))).toEqual({ ok: {} });
    });
  });

  describe('TransactWriteItems', () => {
    const update = (name: string) => ({ Update: { TableName: L, Key: lk(name), UpdateExpression: 'ADD #rev :one', ExpressionAttributeNames: { '#rev': 'revision' }, ExpressionAttributeValues: { ':one': N(1) } } });
    const checkRev = (name: string, rev: number, rv?: 'ALL_OLD') => ({
      ConditionCheck: {
        TableName: L,
        Key: lk(name),
        ConditionExpression: '#rev = :rev',
        ExpressionAttributeNames: { '#rev': 'revision' },
        ExpressionAttributeValues: { ':rev': N(rev) },
        ...(rv ? { ReturnValuesOnConditionCheckFailure: rv } : {}),
      },
    });

    it('a failed ConditionCheck cancels everything: a code per item, the item on the failing one', async () => {
      await e.client.send(new PutItemCommand({ TableName: L, Item: { name: S('t-fence'), revision: N(7) } }));
      const tx = (rv?: 'ALL_OLD') => send(new TransactWriteItemsCommand({ TransactItems: [update('t-a'), update('t-b'), checkRev('t-fence', 6, rv)] }));
      expect(await tx('ALL_OLD')).toEqual({ ...CANCELED, reasons: [{ Code: 'None' }, { Code: 'None' }, { Code: 'ConditionalCheckFailed', Item: { name: S('t-fence'), revision: N(7) } }] });
      expect(await tx()).toEqual({ ...CANCELED, reasons: [{ Code: 'None' }, { Code: 'None' }, { Code: 'ConditionalCheckFailed' }] });
      expect(await send(new GetItemCommand({ TableName: L, Key: lk('t-a'), ConsistentRead: true }))).toEqual({ ok: {} });
      expect(await send(new TransactWriteItemsCommand({ TransactItems: [update('t-a'), update('t-b'), checkRev('t-fence', 7)] }))).toEqual({ ok: {} });
      expect(await send(new GetItemCommand({ TableName: L, Key: lk('t-b'), ConsistentRead: true }))).toEqual({ ok: { Item: { name: S('t-b'), revision: N(1) } } });
    });

    it('Put, Update and Delete together; each on the stream, the ConditionCheck not', async () => {
      await e.client.send(new PutItemCommand({ TableName: C, Item: { leaseName: S('t-st'), name: S('gone') } }));
      expect(
        await send(
          new TransactWriteItemsCommand({
            TransactItems: [
              { Put: { TableName: C, Item: { leaseName: S('t-st'), name: S('new') }, ConditionExpression: 'attribute_not_exists(leaseName)' } },
              { Update: { TableName: C, Key: { leaseName: S('t-st'), name: S('upd') }, UpdateExpression: 'SET v = :v', ExpressionAttributeValues: { ':v': N(1) } } },
              { Delete: { TableName: C, Key: { leaseName: S('t-st'), name: S('gone') } } },
              { ConditionCheck: { TableName: C, Key: { leaseName: S('t-st'), name: S('absent') }, ConditionExpression: 'attribute_not_exists(leaseName)' } },
            ],
          }),
        ),
      ).toEqual({ ok: {} });
      const mine = (await streamRecords(e, C)).filter((r) => r.dynamodb?.Keys?.['leaseName']?.S === 't-st').map(change);
      expect(mine).toEqual([
        { eventName: 'INSERT', keys: { leaseName: S('t-st'), name: S('gone') }, new: { leaseName: S('t-st'), name: S('gone') } },
        { eventName: 'INSERT', keys: { leaseName: S('t-st'), name: S('new') }, new: { leaseName: S('t-st'), name: S('new') } },
        { eventName: 'INSERT', keys: { leaseName: S('t-st'), name: S('upd') }, new: { leaseName: S('t-st'), name: S('upd'), v: N(1) } },
        { eventName: 'REMOVE', keys: { leaseName: S('t-st'), name: S('gone') }, old: { leaseName: S('t-st'), name: S('gone') } },
      ]);
    });

    it('refuses two operations on one item, and an empty transaction', async () => {
      expect(await send(new TransactWriteItemsCommand({ TransactItems: [update('t-dup'), checkRev('t-dup', 1)] }))).toEqual(VALIDATION);
      expect(await send(new TransactWriteItemsCommand({ TransactItems: [] }))).toEqual(VALIDATION);
    });

    it('fencedTransactWrite (lib/sdk/fencing.ts) writes in its term and writes nothing once deposed', async () => {
      const term: Term = { holderIdentity: 'w1', fencingToken: 4 };
      await e.client.send(new PutItemCommand({ TableName: L, Item: { name: S('t-lease'), holderIdentity: S('w1'), fencingToken: N(4) } }));
      const write = (n: number, t: Term) => fencedTransactWrite(e.client, { table: L, leaseName: 't-lease', term: t }, { TransactItems: [{ Put: { TableName: NUMS, Item: { pk: S('fenced'), n: N(n) } } }] });
      await write(1, term);
      await expect(write(2, { ...term, fencingToken: 3 })).rejects.toBeInstanceOf(FencingError);
      expect(await send(new QueryCommand({ TableName: NUMS, KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': S('fenced') } }))).toEqual({
        ok: { Items: [{ pk: S('fenced'), n: N(1) }], Count: 1, ScannedCount: 1 },
      });
    });
  });

  describe('reads', () => {
    const sortKeys = ['b', 'a', 'é', 'Z', '10', '9', '😀', '\uFFFD'];
    const byteOrder = ['10', '9', 'Z', 'a', 'b', 'é', '\uFFFD', '😀']; // UTF-8 bytes: U+FFFD (EF BF BD) before 😀 (F0 9F…)
    beforeAll(async () => {
      for (const name of sortKeys) await e.client.send(new PutItemCommand({ TableName: C, Item: { leaseName: S('q'), name: S(name), v: N(1) } }));
      for (const n of ['10', '9', '-1', '1.5', '100']) await e.client.send(new PutItemCommand({ TableName: NUMS, Item: { pk: S('q'), n: N(n) } }));
    });
    const query = (input: Partial<QueryCommandInput>) =>
      send(new QueryCommand({ TableName: C, KeyConditionExpression: 'leaseName = :p', ExpressionAttributeValues: { ':p': S('q') }, ...input } as QueryCommandInput));
    const names = (o: Outcome) => ('ok' in o ? (o.ok['Items'] as Record<string, AttributeValue>[]).map((i) => i['name']?.S ?? i['n']?.N) : o);

    it('GetItem: consistent or not, and projected', async () => {
      expect(await send(new GetItemCommand({ TableName: C, Key: { leaseName: S('q'), name: S('a') }, ConsistentRead: true }))).toEqual({ ok: { Item: { leaseName: S('q'), name: S('a'), v: N(1) } } });
      expect(await send(new GetItemCommand({ TableName: C, Key: { leaseName: S('q'), name: S('a') } }))).toEqual({ ok: { Item: { leaseName: S('q'), name: S('a'), v: N(1) } } });
      expect(await send(new GetItemCommand({ TableName: C, Key: { leaseName: S('q'), name: S('a') }, ProjectionExpression: 'v' }))).toEqual({ ok: { Item: { v: N(1) } } });
      expect(await send(new GetItemCommand({ TableName: C, Key: { leaseName: S('q'), name: S('zzz') } }))).toEqual({ ok: {} });
    });

    it('Query: sort keys in UTF-8 byte order, numbers in numeric order, either direction', async () => {
      expect(names(await query({ ConsistentRead: true }))).toEqual(byteOrder);
      expect(names(await query({ ScanIndexForward: false }))).toEqual([...byteOrder].reverse());
      expect(names(await send(new QueryCommand({ TableName: NUMS, KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': S('q') } })))).toEqual(['-1', '1.5', '9', '10', '100']);
      expect(
        names(await send(new QueryCommand({ TableName: NUMS, KeyConditionExpression: 'pk = :p AND n BETWEEN :a AND :b', ExpressionAttributeValues: { ':p': S('q'), ':a': N(1), ':b': N(10) } }))),
      ).toEqual(['1.5', '9', '10']);
      expect(names(await query({ KeyConditionExpression: 'leaseName = :p AND begins_with(#n, :a)', ExpressionAttributeNames: { '#n': 'name' }, ExpressionAttributeValues: { ':p': S('q'), ':a': S('1') } }))).toEqual(['10']);
      expect(names(await query({ KeyConditionExpression: 'leaseName = :p AND #n > :a', ExpressionAttributeNames: { '#n': 'name' }, ExpressionAttributeValues: { ':p': S('q'), ':a': S('b') } }))).toEqual([
        'é',
        '\uFFFD',
        '😀',
      ]);
      expect(await query({ ExpressionAttributeValues: { ':p': S('nobody') } })).toEqual({ ok: { Items: [], Count: 0, ScannedCount: 0 } });
    });

    it('Query pages with Limit: LastEvaluatedKey after each full page, even the one that ends the partition', async () => {
      for (const forward of [true, false]) {
        const seen: string[] = [];
        let start: Record<string, AttributeValue> | undefined;
        let pages = 0;
        do {
          const o = await query({ Limit: 3, ScanIndexForward: forward, ...(start ? { ExclusiveStartKey: start } : {}) });
          if (!('ok' in o)) throw new Error(JSON.stringify(o));
          seen.push(...(names(o) as string[]));
          start = o.ok['LastEvaluatedKey'] as Record<string, AttributeValue> | undefined;
          if (start) expect(Object.keys(start).sort()).toEqual(['leaseName', 'name']);
          pages++;
        } while (start);
        expect(seen).toEqual(forward ? byteOrder : [...byteOrder].reverse());
        expect(pages).toBe(3);
      }
      const exact = await query({ Limit: 8 });
      expect(exact).toMatchObject({ ok: { Count: 8, LastEvaluatedKey: { leaseName: S('q'), name: S('😀') } } });
      // a start key that no longer exists still says where to resume
      expect(names(await query({ ExclusiveStartKey: { leaseName: S('q'), name: S('aa') } }))).toEqual(['b', 'é', '\uFFFD', '😀']);
    });

    it('Query with a filter: Count after it, ScannedCount before it; no key attribute in the filter', async () => {
      expect(await query({ FilterExpression: 'v = :two', ExpressionAttributeValues: { ':p': S('q'), ':two': N(2) } })).toEqual({ ok: { Items: [], Count: 0, ScannedCount: 8 } });
      expect(await query({ FilterExpression: '#n = :a', ExpressionAttributeNames: { '#n': 'name' }, ExpressionAttributeValues: { ':p': S('q'), ':a': S('a') } })).toEqual(VALIDATION);
    });

    it('refuses key conditions DynamoDB refuses', async () => {
      const kc = (expr: string, values: Record<string, AttributeValue> = { ':p': S('q') }) => query({ KeyConditionExpression: expr, ExpressionAttributeValues: values });
      expect(await kc('leaseName > :p')).toEqual(VALIDATION);
      expect(await kc('leaseName = :p OR leaseName = :p')).toEqual(VALIDATION);
      expect(await kc('leaseName = :p AND v = :p')).toEqual(VALIDATION);
      expect(await kc('leaseName = :p', { ':p': N(1) })).toEqual(VALIDATION);
      expect(await kc('#n = :p', { ':p': S('q') })).toEqual(VALIDATION); // #n is not defined
    });

    it('Query on the GSI byHolderPlatform: keys only, and never consistent', async () => {
      for (const [name, platform] of [
        ['g-1', 'task-1'],
        ['g-2', 'task-1'],
        ['g-3', 'task-2'],
      ] as const) {
        await e.client.send(new PutItemCommand({ TableName: L, Item: { name: S(name), holderPlatformId: S(platform), holderIdentity: S('w'), revision: N(1) } }));
      }
      const q = (platform: string, rest: object = {}) =>
        send(new QueryCommand({ TableName: L, IndexName: 'byHolderPlatform', KeyConditionExpression: '#p = :p', ExpressionAttributeNames: { '#p': 'holderPlatformId' }, ExpressionAttributeValues: { ':p': S(platform) }, ...rest }));
      const r = await q('task-1');
      if (!('ok' in r)) throw new Error(JSON.stringify(r));
      expect((r.ok['Items'] as Record<string, AttributeValue>[]).map((i) => unmarshall(i)).sort((a, b) => (a['name'] < b['name'] ? -1 : 1))).toEqual([
        { name: 'g-1', holderPlatformId: 'task-1' },
        { name: 'g-2', holderPlatformId: 'task-1' },
      ]);
      expect(r.ok['Count']).toBe(2);
      expect(await q('task-1', { ConsistentRead: true })).toEqual(VALIDATION);
      const paged = await q('task-1', { Limit: 1 });
      expect(paged).toMatchObject({ ok: { Count: 1 } });
      expect(Object.keys(('ok' in paged && (paged.ok['LastEvaluatedKey'] as object)) || {}).sort()).toEqual(['holderPlatformId', 'name']);
      expect((await new LeaseStore(e.client, L).heldOnPlatform('task-1')).sort()).toEqual(['g-1', 'g-2']);
      expect(await send(new QueryCommand({ TableName: L, IndexName: 'nope', KeyConditionExpression: 'x = :p', ExpressionAttributeValues: { ':p': S('a') } }))).toEqual(VALIDATION);
    });

    it('Scan pages with Limit: each item once; a page ends at Limit even when the table does', async () => {
      const all = async (limit?: number) => {
        const items: string[] = [];
        let start: Record<string, AttributeValue> | undefined;
        let pages = 0;
        do {
          const r: ScanCommandOutput = await e.client.send(new ScanCommand({ TableName: NUMS, ConsistentRead: true, ...(limit ? { Limit: limit } : {}), ...(start ? { ExclusiveStartKey: start } : {}) }));
          expect(r.Count).toBe(r.Items!.length);
          if (limit && r.LastEvaluatedKey) expect(r.ScannedCount).toBe(limit);
          items.push(...r.Items!.map((i) => `${i['pk']!.S}/${i['n']!.N}`));
          start = r.LastEvaluatedKey;
          pages++;
        } while (start);
        return { items, pages };
      };
      const whole = await all();
      const paged = await all(2);
      expect(paged.items.sort()).toEqual([...whole.items].sort());
      expect(new Set(paged.items).size).toBe(paged.items.length);
      expect(paged.pages).toBe(Math.floor(whole.items.length / 2) + 1);
      const exact = await e.client.send(new ScanCommand({ TableName: NUMS, Limit: whole.items.length }));
      expect(exact.LastEvaluatedKey).toBeDefined();
      expect(await send(new ScanCommand({ TableName: NUMS, ExclusiveStartKey: exact.LastEvaluatedKey }))).toEqual({ ok: { Items: [], Count: 0, ScannedCount: 0 } });
      const filtered = await e.client.send(new ScanCommand({ TableName: NUMS, FilterExpression: 'pk = :q', ExpressionAttributeValues: { ':q': S('q') } }));
      expect([filtered.Count, filtered.ScannedCount]).toEqual([5, whole.items.length]);
    });

    it('BatchGetItem: found items come back, missing ones do not; duplicate keys are refused', async () => {
      const r = await send(
        new BatchGetItemCommand({ RequestItems: { [C]: { Keys: [{ leaseName: S('q'), name: S('a') }, { leaseName: S('q'), name: S('nope') }, { leaseName: S('q'), name: S('b') }], ConsistentRead: true } } }),
      );
      if (!('ok' in r)) throw new Error(JSON.stringify(r));
      expect((r.ok['Responses'] as Record<string, Record<string, AttributeValue>[]>)[C]!.map((i) => i['name']!.S).sort()).toEqual(['a', 'b']);
      expect(r.ok['UnprocessedKeys']).toEqual({});
      expect(await send(new BatchGetItemCommand({ RequestItems: { [C]: { Keys: [{ leaseName: S('q'), name: S('a') }, { leaseName: S('q'), name: S('a') }] } } }))).toEqual(VALIDATION);
    });
  });

  describe('streams', () => {
    it('INSERT, MODIFY, REMOVE in order with old and new images; nothing for a failed condition or a write that changes nothing', async () => {
      const key = { leaseName: S('st'), name: S('a') };
      const upd = (expr: string, values: Record<string, AttributeValue>, cond?: string) =>
        e.client.send(new UpdateItemCommand({ TableName: C, Key: key, UpdateExpression: expr, ExpressionAttributeValues: values, ...(cond ? { ConditionExpression: cond } : {}) })).catch((x: unknown) => x);
      await e.client.send(new PutItemCommand({ TableName: C, Item: { ...key, v: N(1) } }));
      await upd('SET v = :two', { ':two': N(2) });
      await upd('SET v = :two', { ':two': N(2) }); // no change
      await upd('SET v = :three', { ':three': N(3), ':nine': N(9) }, 'v = :nine'); // refused
      await e.client.send(new DeleteItemCommand({ TableName: C, Key: key }));
      await e.client.send(new DeleteItemCommand({ TableName: C, Key: key })); // nothing to delete
      const mine = (await streamRecords(e, C)).filter((r) => r.dynamodb?.Keys?.['leaseName']?.S === 'st');
      expect(mine.map(change)).toEqual([
        { eventName: 'INSERT', keys: key, new: { ...key, v: N(1) } },
        { eventName: 'MODIFY', keys: key, new: { ...key, v: N(2) }, old: { ...key, v: N(1) } },
        { eventName: 'REMOVE', keys: key, old: { ...key, v: N(2) } },
      ]);
      const seqs = mine.map((r) => BigInt(r.dynamodb!.SequenceNumber!));
      expect(seqs).toEqual([...seqs].sort((a, b) => (a < b ? -1 : 1)));
      expect(mine.every((r) => r.eventSource === 'aws:dynamodb' && r.dynamodb?.StreamViewType === 'NEW_AND_OLD_IMAGES' && typeof r.dynamodb.ApproximateCreationDateTime === 'number')).toBe(true);
    });

    it('a KEYS_ONLY stream carries the keys and no image', async () => {
      await e.client.send(new PutItemCommand({ TableName: NUMS, Item: { pk: S('ko'), n: N(1), x: S('y') } }));
      const mine = (await streamRecords(e, NUMS)).filter((r) => r.dynamodb?.Keys?.['pk']?.S === 'ko');
      expect(mine.map(change)).toEqual([{ eventName: 'INSERT', keys: { pk: S('ko'), n: N(1) } }]);
    });
  });

  describe('the stores (lib/stores) on this engine', () => {
    const newLease = { leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 0 };

    it('LeaseStore: create, conflicting create, stale write with the current item, renew and release a term', async () => {
      const leases = new LeaseStore(e.client, L);
      const r0 = await leases.read('s-lease');
      expect(await leases.write(r0, { set: newLease })).toMatchObject({ name: 's-lease', revision: 1 });
      await expect(leases.write(r0, { set: newLease })).rejects.toBeInstanceOf(ConflictError);
      const r1 = await leases.read('s-lease');
      const held = await leases.write(r1, { set: { holderIdentity: 'w1', fencingToken: 1, renewTime: NOW } });
      const stale = await leases.write(r1, { set: { holderIdentity: 'w2' } }).catch((x: unknown) => x);
      expect(stale).toBeInstanceOf(ConflictError);
      expect((stale as ConflictError).current).toEqual(held);
      const term: Term = { holderIdentity: 'w1', fencingToken: 1 };
      expect(await leases.renewTerm('s-lease', term, NOW + 1000, 15)).toMatchObject({ renewTime: NOW + 1000, renewalMark: 1, revision: 3 });
      expect(await leases.renewTerm('s-lease', term, NOW + 2000, 15)).toMatchObject({ renewalMark: 2, revision: 4 });
      // a renewal stamped before the row's (one that landed late, or a stamp clock that moved back)
      // never moves renewTime back: in its own term it is sent again just after the row's stamp
      expect(await leases.renewTerm('s-lease', term, NOW + 1500, 15)).toMatchObject({ renewTime: NOW + 2001, renewalMark: 1, revision: 5 });
      // …and one stamped at the row's own stamp (an heir's confirmation at the giver's millisecond) moves it on too
      expect(await leases.renewTerm('s-lease', term, NOW + 2001, 15)).toMatchObject({ renewTime: NOW + 2002, renewalMark: 2, revision: 6 });
      expect(await leases.renewTerm('s-lease', { ...term, fencingToken: 0 }, NOW + 3000, 15)).toBeUndefined();
      expect(await leases.renewTerm('s-lease', { ...term, fencingToken: 0 }, NOW + 1000, 15)).toBeUndefined(); // not its term: no second try
      expect((await leases.read('s-lease')).item).toMatchObject({ renewTime: NOW + 2002, revision: 6 });
      const released = await leases.releaseTerm('s-lease', term, NOW + 3000);
      expect(released).toMatchObject({ lastHolderIdentity: 'w1', revision: 7 });
      expect(released && 'holderIdentity' in released).toBe(false);
      expect(await leases.releaseTerm('s-lease', term, NOW + 4000)).toBeUndefined();
      await leases.delete(await leases.read('s-lease'));
      expect((await leases.read('s-lease')).item).toBeUndefined();
    });

    it('LeaseStore.handOver: a new term for the designated successor in one write, only in the holder’s term and only while the lease names that successor', async () => {
      const leases = new LeaseStore(e.client, L);
      const held = await leases.write(await leases.read('h-lease'), {
        set: { ...newLease, holderIdentity: 'w1', holderInstance: 'w1_a', fencingToken: 5, renewTime: NOW, acquireTime: NOW, successor: 'w2', successorInstance: 'w2_a', preferredHolder: 'w2' },
      });
      const term: Term = { holderIdentity: 'w1', fencingToken: 5 };
      const heir = { name: 'w2', instance: 'w2_a' };
      expect(await leases.handOver('h-lease', { ...term, fencingToken: 4 }, heir, NOW + 1000, 5, held.leaseTransitions)).toBeUndefined(); // not its term
      expect(await leases.handOver('h-lease', term, { ...heir, instance: 'w2_b' }, NOW + 1000, 5, held.leaseTransitions)).toBeUndefined(); // another process of that name
      expect(await leases.handOver('h-lease', term, { ...heir, name: 'w3' }, NOW + 1000, 5, held.leaseTransitions)).toBeUndefined(); // not the successor
      const platform = { kind: 'ecs', id: 'arn:aws:ecs:eu-west-1:000000000000:task/c/1', cluster: 'c' } as const;
      const given = await leases.handOver('h-lease', term, { ...heir, platform }, NOW + 1000, 5, held.leaseTransitions);
      expect(given).toMatchObject({ holderIdentity: 'w2', holderInstance: 'w2_a', holderPlatformId: platform.id, acquireTime: NOW + 1000, renewTime: NOW + 1000, leaseDurationSeconds: 5, electedBy: 'successor', lastHolderIdentity: 'w1', leaseTransitions: 1, termToken: given!.fencingToken, revision: held.revision + 1 });
      expect(given!.fencingToken).toBeGreaterThan(5);
      for (const gone of ['successor', 'successorInstance', 'preferredHolder'] as const) expect(given).not.toHaveProperty(gone);
      // the heir confirms by renewing its term; the old holder can neither renew nor hand it over again
      expect(await leases.renewTerm('h-lease', { holderIdentity: 'w2', fencingToken: given!.fencingToken }, NOW + 1100, 15)).toMatchObject({ leaseDurationSeconds: 15 });
      expect(await leases.renewTerm('h-lease', term, NOW + 1200, 15)).toBeUndefined();
      expect(await leases.handOver('h-lease', term, heir, NOW + 1200, 5, held.leaseTransitions)).toBeUndefined();
      // an eventually consistent read returns the row too (at most a moment old on DynamoDB)
      expect((await leases.read('h-lease', false)).item?.holderIdentity).toBeDefined();
    });

    it('CandidateStore and IdentityStore: list, ping, renew, touch', async () => {
      const candidates = new CandidateStore(e.client, C);
      for (const name of ['c1', 'c2']) await candidates.write(await candidates.read('s-cands', name), { set: cand(name, '1.30.0', '1.30.0', { leaseName: 's-cands', revision: 0 }) });
      expect((await candidates.list('s-cands')).candidates.map((c) => c.name)).toEqual(['c1', 'c2']);
      expect(await candidates.ping('s-cands', 'c1', NOW + 10)).toBe(true);
      expect(await candidates.ping('s-cands', 'c1', NOW + 10)).toBe(false); // already pinged for this election
      expect(await candidates.renew('s-cands', 'c1', NOW - 5)).toBe(true); // the answer to a ping is never refused
      expect(await candidates.renew('s-cands', 'c1', NOW - 6)).toBe(false);
      expect(await candidates.renew('s-cands', 'gone', NOW + 20)).toBe(false);
      expect((await candidates.read('s-cands', 'c1')).item).toMatchObject({ pingTime: NOW + 10, ackedPingTime: NOW + 10, renewTime: NOW - 5, revision: 3 });
      // a ping taken back (its election closed early): only that ping, and only while unanswered
      expect(await candidates.withdrawPing('s-cands', 'c1', NOW + 10)).toBe(false); // answered
      expect(await candidates.ping('s-cands', 'c2', NOW + 20)).toBe(true);
      expect(await candidates.withdrawPing('s-cands', 'c2', NOW + 19)).toBe(false); // another ping
      expect(await candidates.withdrawPing('s-cands', 'c2', NOW + 20)).toBe(true);
      expect((await candidates.read('s-cands', 'c2')).item).not.toHaveProperty('pingTime');
      const identities = new IdentityStore(e.client, I);
      const id = { holderIdentity: 'proc-1', hostname: 'h', leaseDurationSeconds: 10, acquireTime: NOW, renewTime: NOW };
      await identities.write(await identities.read('comp', 'i1'), { set: id });
      expect(await identities.touch({ component: 'comp', name: 'i1' }, { renewTime: NOW + 1 }, { expression: '#h = :h', names: { '#h': 'holderIdentity' }, values: { ':h': 'proc-1' } })).toBe(true);
      expect(await identities.touch({ component: 'comp', name: 'i1' }, { renewTime: NOW + 2 }, { expression: '#h = :h', names: { '#h': 'holderIdentity' }, values: { ':h': 'proc-2' } })).toBe(false);
      expect((await identities.query('comp')).items).toEqual([{ component: 'comp', name: 'i1', ...id, renewTime: NOW + 1, revision: 2 }]);
    });

    it('IdentityStore.renewSession: a refusal by its own renewal whose answer was lost is told apart from a foreign write (ALL_OLD on refusal)', async () => {
      const identities = new IdentityStore(e.client, I);
      const row = { holderIdentity: 's-lost', hostname: 'h', leaseDurationSeconds: 15, acquireTime: NOW, renewTime: NOW };
      await identities.write(await identities.read('sess', 's-lost'), { set: row });
      const seen = await identities.read('sess', 's-lost');
      // a renewal that lands; its answer is dropped: the owner still holds `seen`
      expect(await identities.renewSession(seen, NOW + 5_000, undefined, [NOW + 5_000])).toMatchObject({ kind: 'renewed', row: { renewTime: NOW + 5_000, revision: 2 } });
      // the next, against `seen`: refused, and the row is the lost renewal's
      expect(await identities.renewSession(seen, NOW + 6_500, undefined, [NOW + 5_000, NOW + 6_500])).toEqual({ kind: 'landedUnanswered', row: { component: 'sess', name: 's-lost', ...row, renewTime: NOW + 5_000, revision: 2 } });
      // a stamp this owner never sent: someone else's write
      expect(await identities.renewSession(seen, NOW + 6_500, undefined, [NOW + 6_500])).toEqual({ kind: 'refused' });
      // the same stamp, but another attribute moved (a longer duration written by another worker): refused
      await e.client.send(new UpdateItemCommand({ TableName: I, Key: marshall({ component: 'sess', name: 's-lost' }), UpdateExpression: 'SET leaseDurationSeconds = :d', ExpressionAttributeValues: marshall({ ':d': 3600 }) }));
      expect(await identities.renewSession(seen, NOW + 6_500, undefined, [NOW + 5_000])).toEqual({ kind: 'refused' });
      // the row gone: refused
      await e.client.send(new DeleteItemCommand({ TableName: I, Key: marshall({ component: 'sess', name: 's-lost' }) }));
      expect(await identities.renewSession(seen, NOW + 6_500, undefined, [NOW + 5_000])).toEqual({ kind: 'refused' });
    });

    it("IdentityStore.renewSession with the terms its process left (leftTerms): written with the stamp, conditioned on the map as the owner last wrote it (a map equal in any key order), removed once empty; a peer's write of it refuses the next renewal", async () => {
      const identities = new IdentityStore(e.client, I);
      const row = { holderIdentity: 's-left', hostname: 'h', leaseDurationSeconds: 15, acquireTime: NOW, renewTime: NOW };
      await identities.write(await identities.read('sess', 's-left'), { set: row });
      const a = { token: 7, instance: 'w0_1@p', stamp: NOW };
      const b = { token: 9, instance: 'w0_2@p', stamp: NOW + 1 };
      const r1 = await identities.renewSession(await identities.read('sess', 's-left'), NOW + 5_000, undefined, [NOW + 5_000], { 'job-1': a });
      expect(r1).toMatchObject({ kind: 'renewed', row: { renewTime: NOW + 5_000, leftTerms: { 'job-1': a } } });
      // the next, against that row (its map as written), names one more
      const r2 = await identities.renewSession(await identities.read('sess', 's-left'), NOW + 10_000, undefined, [NOW + 10_000], { 'job-2': b, 'job-1': a });
      expect(r2).toMatchObject({ kind: 'renewed', row: { renewTime: NOW + 10_000, leftTerms: { 'job-1': a, 'job-2': b } } });
      // its answer lost: the next against the row before it is told its own landed write
      const before = { key: { component: 'sess', name: 's-left' }, item: (r1 as Extract<typeof r1, { kind: 'renewed' }>).row, revision: 2 };
      expect(await identities.renewSession(before, NOW + 11_000, undefined, [NOW + 10_000, NOW + 11_000], { 'job-2': b }, [{ 'job-1': a, 'job-2': b }])).toMatchObject({ kind: 'landedUnanswered', row: { renewTime: NOW + 10_000 } });
      // one dropped, then none: the attribute goes
      expect(await identities.renewSession(await identities.read('sess', 's-left'), NOW + 15_000, undefined, [NOW + 15_000], { 'job-2': b })).toMatchObject({ kind: 'renewed', row: { leftTerms: { 'job-2': b } } });
      const r5 = await identities.renewSession(await identities.read('sess', 's-left'), NOW + 20_000, undefined, [NOW + 20_000], {});
      expect(r5.kind).toBe('renewed');
      expect((r5 as { row: object }).row).not.toHaveProperty('leftTerms');
      // a peer writes a term as left on the owner's row: the owner's next renewal is refused (its session ends)
      const seen = await identities.read('sess', 's-left');
      await e.client.send(new UpdateItemCommand({ TableName: I, Key: marshall({ component: 'sess', name: 's-left' }), UpdateExpression: 'SET leftTerms = :m', ExpressionAttributeValues: marshall({ ':m': { 'job-3': { token: 1, instance: 'x@p', stamp: NOW } } }) }));
      expect(await identities.renewSession(seen, NOW + 25_000, undefined, [NOW + 25_000])).toEqual({ kind: 'refused' });
      // and one that changes a left term's stamp under a map the owner wrote
      await e.client.send(new DeleteItemCommand({ TableName: I, Key: marshall({ component: 'sess', name: 's-left' }) }));
      await identities.write(await identities.read('sess', 's-left'), { set: { ...row, leftTerms: { 'job-1': a } } });
      const mine = await identities.read('sess', 's-left');
      await e.client.send(new UpdateItemCommand({ TableName: I, Key: marshall({ component: 'sess', name: 's-left' }), UpdateExpression: 'SET leftTerms.#j.stamp = :s', ExpressionAttributeNames: { '#j': 'job-1' }, ExpressionAttributeValues: marshall({ ':s': NOW + 60_000 }) }));
      expect(await identities.renewSession(mine, NOW + 5_000, undefined, [NOW + 5_000], { 'job-1': a })).toEqual({ kind: 'refused' });
    });
  });

  describe('TTL', () => {
    // The model only. DynamoDB Local sweeps TTL on its own schedule over every table of the
    // instance: alone it deletes within seconds, but in the whole suite (hundreds of tables, two
    // busy cores) it did not reach this one within two minutes, twice. The model follows AWS's
    // documented TTL behaviour; the REMOVE record's shape is the stream contract checked above.
    it.runIf(kind === 'model')('deletes items whose TTL has passed (but not more than five years ago), each with a REMOVE record', async () => {
      const left = async () =>
        ((await e.client.send(new QueryCommand({ TableName: C, KeyConditionExpression: 'leaseName = :p', ExpressionAttributeValues: { ':p': S('ttl') }, ConsistentRead: true }))).Items ?? []).map((i) => i['name']!.S).sort();
      expect(e.model!.sweepTtl().map((d) => d.key)).toEqual([{ leaseName: S('ttl'), name: S('expired') }]);
      expect(await left()).toEqual(['ancient', 'future', 'not-a-number']);
      const removed = (await streamRecords(e, C)).filter((r) => r.dynamodb?.Keys?.['leaseName']?.S === 'ttl' && !r.dynamodb.NewImage);
      expect(removed.map((r) => ({ keys: r.dynamodb?.Keys, old: r.dynamodb?.OldImage }))).toEqual([
        { keys: { leaseName: S('ttl'), name: S('expired') }, old: { leaseName: S('ttl'), name: S('expired'), expiresAt: expect.objectContaining({ N: expect.any(String) }) } },
      ]);
      expect(removed[0]!.eventName).toBe('REMOVE');
      // the identity, as Lambda hands it over (toLambdaRecord, used above, does not copy it)
      expect(e.model!.stream(C).records().find((r) => r.dynamodb?.Keys?.['name']?.S === 'expired' && r.eventName === 'REMOVE')).toMatchObject({
        userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' },
      });
    });
  });
});

describe('one script of store operations, on both engines', () => {
  let local: TestEngine;
  let model: TestEngine;
  beforeAll(async () => {
    [local, model] = await Promise.all([localEngine('script'), modelEngine('script')]);
  });
  afterAll(async () => {
    await Promise.all([local?.drop(), model?.drop()]);
  });

  /** 150 seeded steps of the stores' writes, many from stale reads: every answer and the final rows and streams are compared. */
  async function run(e: TestEngine) {
    const r = seededRandom(16);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
    const leases = new LeaseStore(e.client, e.names.leases);
    const candidates = new CandidateStore(e.client, e.names.candidates);
    const identities = new IdentityStore(e.client, e.names.identities);
    const reads: LeaseRead[] = [];
    const log: unknown[] = [];
    const names = ['l1', 'l2', 'l3'];
    const holders = ['w1', 'w2', 'w3'];
    const record = async (what: string, f: () => Promise<unknown>) => {
      try {
        log.push([what, await f()]);
      } catch (x) {
        if (x instanceof ConflictError) log.push([what, 'ConflictError', x.current]);
        else if (x instanceof FencingError) log.push([what, 'FencingError']);
        else if (x instanceof ValidationError) log.push([what, 'ValidationError', x.fields]);
        else throw x;
      }
    };
    for (let step = 0; step < 150; step++) {
      const t = NOW + step * 1000;
      const name = pick(names);
      const holder = pick(holders);
      const op = Math.floor(r() * 10);
      const fresh = await leases.read(name);
      reads.push(fresh);
      const read = r() < 0.35 ? pick(reads.filter((x) => x.key['name'] === name)) : fresh;
      const token = (read.item?.fencingToken ?? 0) + 1;
      switch (op) {
        case 0:
        case 1:
          await record(`write ${name}`, () =>
            leases.write(
              read,
              read.item
                ? pick([
                    { set: { holderIdentity: holder, fencingToken: token, acquireTime: t, renewTime: t, holderPlatformId: `task-${holder}` } },
                    { remove: ['holderIdentity', 'holderPlatformId'] as const },
                    { set: { preferredHolder: holder } },
                  ])
                : { set: { leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 0 } },
            ),
          );
          break;
        case 2:
          await record(`renew ${name}`, () => leases.renewTerm(name, { holderIdentity: read.item?.holderIdentity ?? holder, fencingToken: read.item?.fencingToken ?? 0 }, t, 15));
          break;
        case 3:
          await record(`release ${name}`, () => leases.releaseTerm(name, { holderIdentity: read.item?.holderIdentity ?? holder, fencingToken: read.item?.fencingToken ?? 0 }, t));
          break;
        case 4:
          await record(`delete ${name}`, () => leases.delete(read));
          break;
        case 5: {
          const c = pick(holders);
          await record(`candidate ${name}/${c}`, async () => {
            const cr = await candidates.read(name, c);
            return candidates.write(cr, { set: cr.item ? { renewTime: t } : cand(c, '1.30.0', pick(['1.30.0', '1.31.0']), { leaseName: name, renewTime: t, createdAt: t }) });
          });
          break;
        }
        case 6:
          await record(`ping ${name}/${holder}`, () => candidates.ping(name, holder, t));
          await record(`renew candidate ${name}/${holder}`, () => candidates.renew(name, holder, t - Math.floor(r() * 3000), FAR_FUTURE_SECONDS + step));
          break;
        case 7:
          await record(`list ${name}`, () => candidates.list(name));
          await record(`held on task-${holder}`, async () => (await leases.heldOnPlatform(`task-${holder}`)).sort());
          break;
        case 8:
          await record(`fenced ${name}`, async () => {
            const term = { holderIdentity: holder, fencingToken: read.item?.fencingToken ?? 0 };
            await fencedTransactWrite(e.client, { table: e.names.leases, leaseName: name, term }, { TransactItems: [{ Put: { TableName: e.names.nums, Item: { pk: S(name), n: N(step) } } }] });
            return 'written';
          });
          break;
        case 9:
          await record(`identity ${holder}`, async () => {
            const ir = await identities.read('comp', holder);
            return identities.write(ir, { set: { holderIdentity: `${holder}-p`, hostname: 'h', leaseDurationSeconds: 10, acquireTime: ir.item?.acquireTime ?? t, renewTime: t } });
          });
          break;
      }
    }
    const sorted = (o: Record<string, unknown>) => JSON.stringify(Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1))));
    const rows = async (table: string) => ((await e.client.send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items ?? []).map((i) => sorted(unmarshall(i))).sort();
    const streams = async (table: string) => (await streamRecords(e, table)).map(change);
    return {
      log: JSON.parse(JSON.stringify(log)) as unknown[],
      rows: { leases: await rows(e.names.leases), candidates: await rows(e.names.candidates), identities: await rows(e.names.identities), nums: await rows(e.names.nums) },
      streams: { leases: await streams(e.names.leases), candidates: await streams(e.names.candidates), nums: await streams(e.names.nums) },
    };
  }

  it('gives the same answers, leaves the same rows and the same stream records', async () => {
    const onLocal = await run(local);
    const onModel = await run(model);
    expect(onModel.log).toEqual(onLocal.log);
    expect(onModel.rows).toEqual(onLocal.rows);
    expect(onModel.streams).toEqual(onLocal.streams);
    // the script did exercise what it is for: lost races, deposed writers, and writes that went through
    const answers = onLocal.log.map((x) => (x as unknown[])[1]);
    expect(answers).toEqual(expect.arrayContaining(['ConflictError', 'FencingError', 'written', true, false, null]));
  });
});

describe("DynamoDB's reserved words", () => {
  let local: TestEngine;
  beforeAll(async () => {
    local = await localEngine('words');
  });
  afterAll(() => local?.drop());

  it('DynamoDB Local refuses each word of the model\'s list as a bare name, but CONVERT and SIZE', async () => {
    const accepted: string[] = [];
    const words = [...RESERVED_WORDS];
    for (let i = 0; i < words.length; i += 32) {
      await Promise.all(
        words.slice(i, i + 32).map(async (w) => {
          const o = await outcome(local.client.send(new UpdateItemCommand({ TableName: local.names.nums, Key: { pk: S('w'), n: N(1) }, UpdateExpression: `SET ${w.toLowerCase()} = :v`, ExpressionAttributeValues: { ':v': S('x') } })));
          if ('ok' in o) accepted.push(w);
          else expect(o).toEqual(VALIDATION);
        }),
      );
    }
    expect(accepted.sort()).toEqual(['CONVERT', 'SIZE']);
  });
});
