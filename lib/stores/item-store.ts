import {
  DeleteItemCommand,
  GetItemCommand,
  UpdateItemCommand,
  paginateQuery,
  paginateScan,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { RowPatch } from '../schemas/common.js';
import { marshall, NumberValueImpl, unmarshall } from '@aws-sdk/util-dynamodb';
import { createHash } from 'node:crypto';
import type * as z from 'zod';
import { MAX_KEY, ValidationError, cut, issuesOf, parse, type FieldIssue } from '../schemas/validation.js';
import { ConflictError, isConditionFailed } from './errors.js';

/**
 * A row as DynamoDB holds it, unmarshalled. A number JavaScript cannot hold exactly (an integer past
 * 2^53, or past a double's range) stays a NumberValue of its digits, which every schema refuses
 * naming the field. unmarshall's own way threw on one with a fraction (12345678901234567890.5:
 * "can't be converted to BigInt") and gave a BigInt, which JSON cannot write, for a whole one: one
 * such row, written by any worker, failed the coordinator's scan and so its tick for every lease.
 */
export function rowOf(item: Record<string, AttributeValue>): Record<string, unknown> {
  let fraction = false;
  const row = unmarshall(item, { wrapNumbers: (d) => ((fraction ||= FRACTION.test(d)), exactOr(d)) });
  // kept beside it for asScanned, only for a row with a fraction (one a double may not hold: its nearest double is no condition on it)
  if (fraction) storedRows.set(row, unmarshall(item, { wrapNumbers: (d) => (FRACTION.test(d) ? NumberValueImpl.from(d) : exactOr(d)) }));
  return row;
}

/** A stored number's text that may have more digits than a double holds: a fraction, or an exponent. */
const FRACTION = /[.eE]/;
/** Rows rowOf gave that hold a fraction, by the same row with every fraction a NumberValue of its digits as stored. */
const storedRows = new WeakMap<object, Record<string, unknown>>();

/** A stored number as a number when JavaScript holds it exactly (a fraction as near as it can), else a NumberValue of its digits. */
function exactOr(digits: string): number | NumberValueImpl {
  const n = Number(digits);
  return Number.isFinite(n) && (!Number.isInteger(n) || Number.isSafeInteger(n)) ? n : NumberValueImpl.from(digits);
}

/** An item with a revision: every write is conditioned on the revision it read. */
export interface Revisioned {
  revision: number;
}

/** What a read returned: the item (absent when it does not exist) and the revision to write against. */
export interface Read<T> {
  readonly key: Record<string, string>;
  readonly item: T | undefined;
  /** 0 when the item does not exist: the next write then creates it, if nobody else did first. */
  readonly revision: number;
}

/**
 * A condition that each of `attributes` is still as stored in `row` (unmarshalled), whatever its
 * type; one absent then must be absent still. Placeholders `#a<i>`, `:a<i>`. A row as rowOf gave it
 * is conditioned on its numbers' digits as stored: a fraction's nearest double (1733550000000.1235
 * of 1733550000000.1234567890123456789) never equalled the stored number, and refused every write.
 */
export function asScanned(row: Readonly<Record<string, unknown>>, attributes: readonly string[]): { expression: string; names: Record<string, string>; values: Record<string, unknown> } {
  const names = Object.fromEntries(attributes.map((a, i) => [`#a${i}`, a]));
  const stored = storedRows.get(row) ?? row;
  const values = Object.fromEntries(attributes.flatMap((a, i) => (row[a] === undefined ? [] : [[`:a${i}`, stored[a]]])));
  const expression = attributes.map((a, i) => (row[a] === undefined ? `attribute_not_exists(#a${i})` : `#a${i} = :a${i}`)).join(' AND ');
  return { expression, names, values };
}

/** A change to one item: attributes to set and attributes to remove. Revision is handled here. */
/**
 * A change to an item (lib/schemas/common.ts RowPatch). `within`: keys to set inside map attributes
 * the item read has (ItemStore.write), part of the patch, so that whoever passes a patch on passes
 * them too (a store wrapped in a function of two arguments dropped a third one unseen: the hold of an
 * election a write of the revision alone, 3af2abd4).
 */
export type Patch<T> = RowPatch<T> & { within?: Within<T> };

/** Keys to set inside map attributes of an item, by attribute (Patch `within`). */
export type Within<T> = { [K in keyof T]?: { [P in keyof NonNullable<T[K]>]?: NonNullable<T[K]>[P] | undefined } };

/** A row that is in the table but does not match its schema: reported, never decided on (a candidate row is collected once stale, an identity row once expired, by a stamp that still parses). */
export interface InvalidItem {
  /** The row's key attributes, as stored. */
  readonly key: Record<string, unknown>;
  /** What is wrong with it, field by field. */
  readonly error: ValidationError;
}

/** A row read: parsed, or refused; either with the row as stored beside it (what can still be read of it: the tick digests a row it times, lib/coordinator/identity-scan.ts). */
export type Scanned<T> = { ok: true; item: T; row: Record<string, unknown> } | { ok: false; invalid: InvalidItem; row: Record<string, unknown> };

/** One of `total` parts of a table, as DynamoDB's parallel scan divides it (Segment, TotalSegments). */
export interface ScanSegment {
  /** 0 … total − 1. */
  readonly index: number;
  /** 1 … 1,000,000 (DynamoDB's most); 1 is the whole table. */
  readonly total: number;
}

export interface ScanOptions {
  /** Rows left out before parsing (by the raw, unmarshalled row). */
  readonly skip?: (raw: Record<string, unknown>) => boolean;
  /** @default the whole table */
  readonly segment?: ScanSegment;
}

/** A DynamoDB condition expression with its own placeholders. */
export interface Condition {
  expression: string;
  names?: Record<string, string>;
  values?: Record<string, unknown>;
}

export interface ItemStoreOptions<S extends z.ZodType> {
  client: DynamoDBClient;
  table: string;
  /** Key attribute names: [partition] or [partition, sort]. */
  keys: readonly [string] | readonly [string, string];
  schema: S;
  /** What an item is called in messages, e.g. `lease`. */
  kind: string;
  /** The most bytes a valid row takes (rowBytes; lib/schemas): a row over it is refused. @default none but DynamoDB's 400 KB */
  maxRowBytes?: number;
}

const RESERVED_SET = new Set(['revision']);
/**
 * Rows as DynamoDB returned them and what they parsed to: a row is parsed once per revision however
 * often it is read, by any store of the process — every follower polls an unchanged lease. One entry
 * per row (its kind, which one schema reads, table and key): a digest of its JSON text (revision
 * included: a write that leaves the revision alone, an operator's, is parsed again), the item, and
 * the text's length and the key's, the entry's size. The items are shared, and nothing changes them
 * (a write builds a new one). Kept by size: a row of over MAX_PARSED_ROW_TEXT is parsed at each read
 * and not kept, and past PARSED_ROWS_TEXT in all the least recently read go. (Keyed by the text
 * itself, 1,024 rows a schema, a worker rewriting one lease's identityClaim with 385 KB of extra
 * keys, which the schema drops, left 2.3 MB in every follower at each rewrite, read never again: 256
 * MB ran out after ~105.)
 */
const parsedRows = new Map<string, { readonly digest: string; readonly size: number; readonly item: unknown }>();
let parsedText = 0;
/** The longest row text kept parsed: far more than a lease or candidate row as its workers write it (a few KB). */
const MAX_PARSED_ROW_TEXT = 64 * 1024;
/** Row text kept parsed in all: more than the rows a process reads over and over. */
const PARSED_ROWS_TEXT = 8 * 1024 * 1024;

/** What the parsed rows' cache holds: its rows, and their text's characters (for tests). */
export const parsedRowsHeld = (): { rows: number; chars: number } => ({ rows: parsedRows.size, chars: parsedText });

/**
 * At least what DynamoDB counts a row (as rowOf gave it) at, by its "item size" rules: each name and
 * string in UTF-8, a number at most 21, a list, map or set 3 and 1 a member (a list's index counted
 * as a name).
 */
export function rowBytes(v: unknown): number {
  if (typeof v === 'string') return Buffer.byteLength(v);
  if (typeof v !== 'object' || v === null || v instanceof NumberValueImpl) return 21;
  if (ArrayBuffer.isView(v)) return v.byteLength;
  let n = 3;
  for (const [k, e] of Object.entries(v instanceof Set ? [...v] : v)) n += 1 + Buffer.byteLength(k) + rowBytes(e);
  return n;
}

/**
 * A key value as messages and logs show it (describe, InvalidItem as JSON): whole when it may be a
 * valid row's (a name: 253 printable characters at most), else cut to MAX_KEY. Uncut, 999 refused
 * candidate rows named with 1,024 control characters (6 each in JSON) made a 13.9 MB log line of
 * every reconcile of their lease.
 */
const shownKey = (v: unknown): unknown => (typeof v !== 'string' || /^[ -~]{0,253}$/.test(v) ? v : cut(v, MAX_KEY));

/**
 * `key`, written by JSON as `shown`: an InvalidItem's key holds the row's key as stored (the tick
 * times and deletes the row by it), and a log line shows it as messages do (shownKey). Its toJSON a
 * closure of these two alone: one made in tryParse held the whole row.
 */
const showing = (key: Record<string, unknown>, shown: Record<string, unknown>): Record<string, unknown> => Object.defineProperty(key, 'toJSON', { value: () => shown });

/**
 * Shared mechanics of the three stores: reads parsed by the item's zod schema, and writes
 * conditioned on the revision that was read, so no read-modify-write can lose an update.
 */
export class ItemStore<S extends z.ZodType<Revisioned>> {
  readonly table: string;
  protected readonly client: DynamoDBClient;
  private readonly keys: readonly string[];
  private readonly schema: S;
  private readonly kind: string;
  private readonly maxRowBytes: number | undefined;

  constructor(opts: ItemStoreOptions<S>) {
    this.client = opts.client;
    this.table = opts.table;
    this.keys = opts.keys;
    this.schema = opts.schema;
    this.kind = opts.kind;
    this.maxRowBytes = opts.maxRowBytes;
  }

  describe(key: Record<string, unknown>): string {
    return `${this.kind} ${this.keys.map((k) => JSON.stringify(shownKey(key[k]))).join('/')} in table ${this.table}`;
  }

  /** Parses a raw (unmarshalled) item; throws ValidationError naming the item and its bad fields, or, its fields valid, its size over maxRowBytes. */
  parseItem(raw: Record<string, unknown>): z.output<S> {
    const item = parse(this.schema, raw, () => this.describe(raw));
    const bytes = this.maxRowBytes ? rowBytes(raw) : 0;
    if (bytes > this.maxRowBytes!) throw new ValidationError(this.describe(raw), [{ field: '(root)', message: `is ${bytes} bytes: a valid ${this.kind} row is at most ${this.maxRowBytes}` }]);
    return item;
  }

  /**
   * The write edge of a write that is not built from a read (a renewal, a ping, a release): each
   * value set is checked against its field's schema before anything is sent, so no such write can
   * leave a row its readers refuse. Throws ValidationError naming the fields.
   */
  checkSet(key: Record<string, unknown>, set: Record<string, unknown>): void {
    const shape = (this.schema as unknown as { shape?: Record<string, z.ZodType> }).shape;
    if (!shape) return;
    const issues: FieldIssue[] = [];
    for (const [k, v] of Object.entries(set)) {
      const field = shape[k];
      if (!field) {
        issues.push({ field: k, message: `is not a field of a ${this.kind}` });
        continue;
      }
      const r = field.safeParse(v);
      if (!r.success) for (const i of issuesOf(r.error)) issues.push({ field: i.field === '(root)' ? k : `${k}.${i.field}`, message: i.message });
    }
    if (issues.length) throw new ValidationError(`write to ${this.describe(key)}`, issues);
  }

  protected tryParse(raw: Record<string, unknown>): Scanned<z.output<S>> {
    try {
      return { ok: true, item: this.parseItem(raw), row: raw };
    } catch (e) {
      if (!(e instanceof ValidationError)) throw e;
      const key = showing(Object.fromEntries(this.keys.map((k) => [k, raw[k]])), Object.fromEntries(this.keys.map((k) => [k, shownKey(raw[k])])));
      return { ok: false, invalid: { key, error: e }, row: raw };
    }
  }

  /**
   * Reads one item, strongly consistent unless `consistent` is false (half the read units; the copy
   * may be a moment old — for reads whose next write is conditioned anyway). A malformed item is a
   * ValidationError. `signal` abandons it (the request aborted).
   */
  async get(key: Record<string, string>, consistent = true, signal?: AbortSignal): Promise<Read<z.output<S>>> {
    const r = await this.client.send(new GetItemCommand({ TableName: this.table, Key: marshall(key), ConsistentRead: consistent }), signal && { abortSignal: signal });
    if (!r.Item) return { key, item: undefined, revision: 0 };
    const item = this.parseRow(r.Item);
    return { key, item, revision: item.revision };
  }

  /** The row at `key` as stored, unparsed (a consistent read; undefined: none): a row the schema refuses, read again whole to write against it (lib/coordinator/refused-session.ts). */
  async rowAt(key: Record<string, string>): Promise<Record<string, unknown> | undefined> {
    const r = await this.client.send(new GetItemCommand({ TableName: this.table, Key: marshall(key), ConsistentRead: true }));
    return r.Item && rowOf(r.Item);
  }

  /** Parses a row as DynamoDB returned it, once per content (parsedRows); throws ValidationError as parseItem does. */
  protected parseRow(row: Record<string, AttributeValue>): z.output<S> {
    const key = JSON.stringify([this.kind, this.table, ...this.keys.map((k) => row[k]?.S)]);
    const text = JSON.stringify(row);
    const was = parsedRows.get(key);
    if (was) (parsedRows.delete(key), (parsedText -= was.size)); // (kept again below, as the most recently read)
    const digest = text.length <= MAX_PARSED_ROW_TEXT && createHash('sha256').update(text).digest('base64');
    const item = was && was.digest === digest ? was.item : this.parseItem(rowOf(row));
    if (digest) {
      parsedRows.set(key, { digest, size: key.length + text.length, item });
      parsedText += key.length + text.length;
      for (const [k, e] of parsedRows) {
        if (parsedText <= PARSED_ROWS_TEXT) break;
        parsedRows.delete(k);
        parsedText -= e.size;
      }
    }
    return item as z.output<S>;
  }

  /**
   * Applies `patch` to the item that was read, if its revision is still the one read (or, for
   * revision 0, if it still does not exist). The resulting item is validated before anything is
   * written, so a bad patch writes nothing. Returns the item as written.
   *
   * `patch.within`: keys to set inside map attributes the item read has (an attribute the patch
   * neither sets nor removes), each written by its path (`election.notBefore`), so that the map's
   * other keys stay as stored: a key a newer writer put there, which this reader's schema dropped, is
   * not erased by a rewrite of the whole map from what this reader parsed.
   */
  async write(read: Read<z.output<S>>, patch: Patch<z.output<S>>): Promise<z.output<S>> {
    const set = Object.fromEntries(Object.entries(patch.set ?? {}).filter(([k, v]) => v !== undefined && !RESERVED_SET.has(k) && !this.keys.includes(k)));
    const remove = (patch.remove ?? []).filter((k) => !this.keys.includes(k) && !RESERVED_SET.has(k) && !(k in set));
    const merged: Record<string, unknown> = { ...(read.item as Record<string, unknown> | undefined), ...set, ...read.key, revision: read.revision + 1 };
    for (const k of remove) delete merged[k];
    const inner = Object.entries((patch.within ?? {}) as Record<string, Record<string, unknown> | undefined>).flatMap(([k, m]) => {
      const keys = Object.entries(m ?? {}).filter(([, v]) => v !== undefined);
      if (keys.length === 0) return [];
      const was = (read.item as Record<string, unknown> | undefined)?.[k];
      if (typeof was !== 'object' || was === null || Array.isArray(was) || k in set || (remove as readonly string[]).includes(k) || this.keys.includes(k) || RESERVED_SET.has(k)) {
        throw new Error(`write to ${this.describe(read.key)}: ${k} is set within only where the item read has it, and the patch leaves it`);
      }
      merged[k] = { ...was, ...Object.fromEntries(keys) };
      return [[k, keys] as const];
    });
    const next = this.parseItem(merged);

    const names: Record<string, string> = { '#rev': 'revision' };
    const values: Record<string, unknown> = { ':next': read.revision + 1 };
    const sets = ['#rev = :next'];
    Object.entries(set).forEach(([k, v], i) => {
      names[`#s${i}`] = k;
      values[`:s${i}`] = v;
      sets.push(`#s${i} = :s${i}`);
    });
    inner.forEach(([k, keys], i) => {
      names[`#m${i}`] = k;
      keys.forEach(([key, v], j) => {
        names[`#m${i}k${j}`] = key;
        values[`:m${i}k${j}`] = v;
        sets.push(`#m${i}.#m${i}k${j} = :m${i}k${j}`);
      });
    });
    const removes = remove.map((k, i) => {
      names[`#r${i}`] = k;
      return `#r${i}`;
    });
    let condition: string;
    if (read.revision === 0) {
      names['#pk'] = this.keys[0]!;
      condition = 'attribute_not_exists(#pk)';
    } else {
      values[':rev'] = read.revision;
      condition = '#rev = :rev';
      const same = read.item === undefined ? undefined : this.incarnation(read.item);
      if (same) {
        names['#inc'] = same.attribute;
        values[':inc'] = same.value;
        condition += ' AND #inc = :inc';
      }
    }
    await this.conditional(read.key, read.revision, () =>
      this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: marshall(read.key),
          UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
          ConditionExpression: condition,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: marshall(values, { removeUndefinedValues: true }),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      ),
    );
    return next;
  }

  /**
   * What a write or delete conditioned on a read requires besides its revision, to tell the row read
   * from one deleted and written again since, whose revisions start anew at 1: an attribute that never
   * takes the same value in two rows of one key (the leases' fencing token, an identity row's holder).
   * Undefined: the revision alone.
   */
  protected incarnation(_item: z.output<S>): { readonly attribute: string; readonly value: unknown } | undefined {
    return undefined;
  }

  /**
   * An update that does not depend on what was read (a ping, a heartbeat): `set` is applied and the
   * revision raised by one, if `condition` holds. Returns false when the condition did not hold.
   */
  async touch(key: Record<string, string>, set: Record<string, unknown>, condition: Condition): Promise<boolean> {
    return (await this.updateIf(key, { set }, condition)) !== undefined;
  }

  /**
   * Applies `patch` and raises the revision by one if the item exists and `condition` holds — for
   * writes guarded by ownership rather than by a read (a holder renewing or releasing its lease).
   * Returns the item as written, or undefined when the condition did not hold. `signal` abandons
   * the request when it aborts.
   */
  async updateIf(key: Record<string, string>, patch: { set?: Record<string, unknown>; remove?: readonly string[] }, condition: Condition, signal?: AbortSignal): Promise<z.output<S> | undefined> {
    const r = await this.updateOrRefusal(key, patch, condition, signal);
    return 'written' in r ? r.written : undefined;
  }

  /**
   * updateIf that tells a refusal's cause: the row as DynamoDB judged the condition against
   * (`ALL_OLD`, at no extra cost; undefined when there was no row), unparsed, as written.
   */
  async updateOrRefusal(key: Record<string, string>, patch: { set?: Record<string, unknown>; remove?: readonly string[] }, condition: Condition, signal?: AbortSignal): Promise<{ readonly written: z.output<S> } | { readonly refusedBy: Record<string, unknown> | undefined }> {
    this.checkSet(key, patch.set ?? {});
    const names: Record<string, string> = { '#rev': 'revision', '#pk': this.keys[0]!, ...condition.names };
    const values: Record<string, unknown> = { ':one': 1, ...condition.values };
    const sets = Object.entries(patch.set ?? {}).map(([k, v], i) => {
      names[`#t${i}`] = k;
      values[`:t${i}`] = v;
      return `#t${i} = :t${i}`;
    });
    const removes = (patch.remove ?? []).map((k, i) => {
      names[`#u${i}`] = k;
      return `#u${i}`;
    });
    try {
      const r = await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: marshall(key),
          UpdateExpression: `${sets.length ? `SET ${sets.join(', ')} ` : ''}${removes.length ? `REMOVE ${removes.join(', ')} ` : ''}ADD #rev :one`,
          ConditionExpression: `attribute_exists(#pk) AND (${condition.expression})`,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: marshall(values, { removeUndefinedValues: true }),
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
        { abortSignal: signal },
      );
      return { written: this.parseRow(r.Attributes ?? {}) };
    } catch (e) {
      if (!isConditionFailed(e)) throw e;
      const old = (e as { Item?: Record<string, AttributeValue> }).Item;
      return { refusedBy: old ? rowOf(old) : undefined };
    }
  }

  /** Deletes the item if it is still the one read: its revision, and its incarnation (above). */
  async delete(read: Read<z.output<S>>): Promise<void> {
    if (read.revision === 0) return;
    const same = read.item === undefined ? undefined : this.incarnation(read.item);
    await this.conditional(read.key, read.revision, () =>
      this.client.send(
        new DeleteItemCommand({
          TableName: this.table,
          Key: marshall(read.key),
          ConditionExpression: same ? '#rev = :rev AND #inc = :inc' : '#rev = :rev',
          ExpressionAttributeNames: { '#rev': 'revision', ...(same ? { '#inc': same.attribute } : {}) },
          ExpressionAttributeValues: marshall({ ':rev': read.revision, ...(same ? { ':inc': same.value } : {}) }),
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      ),
    );
  }

  /**
   * Leaves `seen` in attribute `attribute` of a row the schema refuses (the coordinator's sighting of
   * it, lib/coordinator/refused-session.ts), if every attribute is still as scanned (`row`, that
   * attribute's old value included): nothing else of the row changes, its
   * revision neither, so an owner's renewal conditioned on the row as it left it is not refused by
   * it. False when the row changed or is gone.
   */
  async markRefused(key: Record<string, string>, row: Record<string, unknown>, attribute: string, seen: unknown): Promise<boolean> {
    const others = Object.keys(row).filter((a) => a !== attribute);
    const c = asScanned(row, [...others, attribute]);
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: marshall(key),
          UpdateExpression: `SET #a${others.length} = :seen`,
          ConditionExpression: c.expression,
          ExpressionAttributeNames: c.names,
          ExpressionAttributeValues: marshall({ ...c.values, ':seen': seen }),
        }),
      );
      return true;
    } catch (e) {
      if (isConditionFailed(e)) return false;
      throw e;
    }
  }

  /**
   * Deletes a row the schema refuses if every attribute is still as scanned (`row`, all of them):
   * the coordinator's deletion of a refused row (a session row, an identity or candidate row whose stamp does not parse) it has seen unchanged long enough. False
   * when the row changed or is gone. (An attribute added since the scan is not seen: DynamoDB has no
   * condition on what a row does not name. A renewal changes attributes the row has: `renewTime`,
   * `revision`.)
   */
  async deleteRefused(key: Record<string, string>, row: Record<string, unknown>): Promise<boolean> {
    const c = asScanned(row, Object.keys(row));
    try {
      await this.client.send(new DeleteItemCommand({ TableName: this.table, Key: marshall(key), ConditionExpression: c.expression, ExpressionAttributeNames: c.names, ExpressionAttributeValues: marshall(c.values) }));
      return true;
    } catch (e) {
      if (isConditionFailed(e)) return false;
      throw e;
    }
  }

  /**
   * Deletes a row the schema refuses (a Scanned row that is not `ok`), if each of `attributes` is
   * still as stored in `row`, whatever its type (one absent then, absent still): a row rewritten
   * since the scan stays. False when it changed or is gone.
   */
  protected async deleteAsScanned(key: Record<string, string>, row: Record<string, unknown>, attributes: readonly string[]): Promise<boolean> {
    const c = asScanned(row, attributes);
    try {
      await this.client.send(
        new DeleteItemCommand({
          TableName: this.table,
          Key: marshall(key),
          ConditionExpression: c.expression,
          ExpressionAttributeNames: c.names,
          ...(Object.keys(c.values).length ? { ExpressionAttributeValues: marshall(c.values) } : {}),
        }),
      );
      return true;
    } catch (e) {
      if (isConditionFailed(e)) return false;
      throw e;
    }
  }

  /**
   * Every row under one partition key, strongly consistent, one parsed page at a time (as scan): a
   * reader keeps of them only what it needs (IdentityStore.processSessions, the CLI's session scan),
   * so a partition of any size costs it a page of memory. A worker may write any number of rows in
   * its own sessions' partition, each up to DynamoDB's 400 KB (lib/coordinator/identity-scan.ts).
   */
  async *queryPages(partition: string): AsyncGenerator<Scanned<z.output<S>>[]> {
    const pages = paginateQuery(
      { client: this.client },
      { TableName: this.table, KeyConditionExpression: '#pk = :pk', ExpressionAttributeNames: { '#pk': this.keys[0]! }, ExpressionAttributeValues: marshall({ ':pk': partition }), ConsistentRead: true },
    );
    for await (const r of pages) {
      // a loop, not Array.prototype.map: a refusal's stack, until formatted, holds the receivers of
      // the frames it was made in, and map's is the whole page as DynamoDB answered it
      const page: Scanned<z.output<S>>[] = [];
      for (const raw of r.Items ?? []) page.push(this.tryParse(rowOf(raw)));
      yield page;
    }
  }

  /**
   * Every item under one partition key, strongly consistent (queryPages), all of them kept: for a
   * caller that returns the whole partition (listIdentities). Malformed rows come back apart
   * (`invalid`), without the rows as stored.
   */
  async query(partition: string): Promise<{ items: z.output<S>[]; invalid: InvalidItem[] }> {
    const items: z.output<S>[] = [];
    const invalid: InvalidItem[] = [];
    for await (const page of this.queryPages(partition)) {
      for (const s of page) {
        if (s.ok) items.push(s.item);
        else invalid.push(s.invalid);
      }
    }
    return { items, invalid };
  }

  /**
   * Pages through the whole table (strongly consistent), or one segment of it (DynamoDB's parallel
   * scan: `segment` of `total`), one parsed page at a time. Rows `skip` picks out (by the raw,
   * unmarshalled row) are left out before parsing: rows of another kind that share the table would
   * otherwise each cost a ValidationError just to be thrown away.
   */
  async *scan(opts: ScanOptions = {}): AsyncGenerator<Scanned<z.output<S>>[]> {
    const { skip, segment } = opts;
    // a whole-table scan sends no segment parameters at all (the same requests as before segments existed)
    const part = segment && segment.total > 1 ? { Segment: segment.index, TotalSegments: segment.total } : {};
    for await (const r of paginateScan({ client: this.client }, { TableName: this.table, ConsistentRead: true, ...part })) {
      const page: Scanned<z.output<S>>[] = [];
      for (const item of r.Items ?? []) {
        const raw = rowOf(item);
        if (!skip?.(raw)) page.push(this.tryParse(raw));
      }
      yield page;
    }
  }

  /** Turns a lost condition into a ConflictError carrying the current item. */
  private async conditional(key: Record<string, unknown>, expected: number, send: () => Promise<unknown>): Promise<void> {
    try {
      await send();
    } catch (e) {
      if (isConditionFailed(e)) {
        const item = (e as { Item?: Record<string, AttributeValue> }).Item;
        throw new ConflictError(this.describe(key), expected, item ? rowOf(item) : undefined);
      }
      throw e;
    }
  }
}
