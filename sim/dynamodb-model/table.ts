/**
 * One table's items: partitions by partition key, items in a partition by sort key, and for each
 * item the versions an eventually consistent read may still return.
 *
 * Scan order is a stable hash of the partition key, then the sort key — as in DynamoDB, neither
 * insertion nor key order, so code cannot come to rely on either — and the same on every run.
 */
import type { AttributeDefinition, KeySchemaElement } from '@aws-sdk/client-dynamodb';
import { validationError } from './errors.js';
import { compareNumbers } from './numbers.js';
import { fnv1a, type ModelStream } from './streams.js';
import { compareUtf8, importValue, newMap, type AV, type Item } from './values.js';

/** The types a key attribute may have. */
export type KeyType = 'S' | 'N' | 'B';

/** A key attribute: its name and type (from AttributeDefinitions). */
export interface KeyDef {
  readonly name: string;
  readonly type: KeyType;
}

/** A global secondary index: its keys and what it projects. */
export interface IndexDef {
  readonly name: string;
  readonly arn: string;
  readonly hash: KeyDef;
  readonly range: KeyDef | undefined;
  readonly projection: 'KEYS_ONLY' | 'ALL' | 'INCLUDE';
  readonly include: readonly string[];
}

/** An older version of an item: what it was until `until` (epoch ms). */
export interface Version {
  readonly item: Item | undefined;
  readonly until: number;
}

/** The items under one partition key. */
export interface Partition {
  readonly pk: string;
  readonly hash: number;
  readonly entries: Map<string, Entry>;
  /** Entries in sort-key order, rebuilt after an entry comes or goes. */
  sorted: Entry[] | undefined;
}

/** One key's item, now and as it was. */
export interface Entry {
  readonly partition: Partition;
  readonly sk: string;
  /** The key attributes. */
  readonly key: Item;
  /** The item now (undefined: deleted, kept while a stale read may still see an older version). */
  item: Item | undefined;
  /** Older versions, oldest first, none older than the stale-read lag. */
  history: Version[] | undefined;
}

/** A key's encoding as a map key: the string, the canonical number, bytes as Latin-1. */
export function encodeKey(v: AV, type: KeyType): string {
  return type === 'S' ? v.S! : type === 'N' ? v.N! : String.fromCharCode(...v.B!);
}

/** The order of two encoded keys of one type: UTF-8 bytes, numbers, bytes. */
export function compareKeys(a: string, b: string, type: KeyType): number {
  return type === 'S' ? compareUtf8(a, b) : type === 'N' ? compareNumbers(a, b) : a < b ? -1 : a > b ? 1 : 0;
}

const valueType = (v: AV): string | undefined => (v.S !== undefined ? 'S' : v.N !== undefined ? 'N' : v.B !== undefined ? 'B' : undefined);

/** A key's position in scan order, for ExclusiveStartKey (which need not exist any more). */
interface Position {
  hash: number;
  pk: string;
  sk: string;
}

/** One table: its schema, items, TTL attribute and stream. */
export class Table {
  /** Key attribute names, partition key first. */
  readonly keyNames: readonly string[];
  ttlAttribute: string | undefined;
  /** Items that exist now. */
  itemCount = 0;
  private readonly partitions = new Map<string, Partition>();
  private order: Entry[] | undefined;
  /** Deleted entries kept for stale reads, oldest deletion first. */
  private readonly tombstones: Entry[] = [];

  constructor(
    readonly name: string,
    readonly arn: string,
    readonly hash: KeyDef,
    readonly range: KeyDef | undefined,
    readonly attributeDefinitions: readonly AttributeDefinition[],
    readonly keySchema: readonly KeySchemaElement[],
    readonly indexes: readonly IndexDef[],
    readonly createdAt: number,
    readonly stream: ModelStream | undefined,
  ) {
    this.keyNames = range ? [hash.name, range.name] : [hash.name];
  }

  index(name: string): IndexDef {
    const i = this.indexes.find((x) => x.name === name);
    if (!i) throw validationError(`The table does not have the specified index: ${name}`);
    return i;
  }

  /** Validates a request's Key: exactly the key attributes, of their types, not empty. */
  keyOf(raw: Record<string, unknown> | undefined): { key: Item; pk: string; sk: string } {
    if (raw === undefined || raw === null || typeof raw !== 'object') throw validationError('One of the required keys was not given a value');
    let n = 0;
    for (const k in raw) if (raw[k] !== undefined) n++;
    const key = newMap();
    const pk = this.keyPart(raw, this.hash, key);
    const sk = this.range ? this.keyPart(raw, this.range, key) : '';
    if (n !== this.keyNames.length) throw validationError('The number of conditions on the keys is invalid');
    return { key, pk, sk };
  }

  private keyPart(raw: Record<string, unknown>, def: KeyDef, into: Item): string {
    const r = raw[def.name];
    if (r === undefined) throw validationError('One of the required keys was not given a value');
    const v = importValue(r);
    if (valueType(v) !== def.type) throw validationError('One or more parameter values were invalid: Type mismatch for key');
    checkNotEmpty(v, def.name);
    into[def.name] = v;
    return encodeKey(v, def.type);
  }

  /** The key of a whole item (PutItem): its key attributes must be there, typed and non-empty. */
  keyOfItem(item: Item): { key: Item; pk: string; sk: string } {
    const key = newMap();
    const pk = Table.itemKeyPart(item, this.hash, key);
    const sk = this.range ? Table.itemKeyPart(item, this.range, key) : '';
    return { key, pk, sk };
  }

  /** One key attribute of a whole item, copied into `key`; its encoding. */
  private static itemKeyPart(item: Item, def: KeyDef, key: Item): string {
    const v = item[def.name];
    if (v === undefined) throw validationError(`One or more parameter values were invalid: Missing the key ${def.name} in the item`);
    if (valueType(v) !== def.type) throw validationError(`One or more parameter values were invalid: Type mismatch for key ${def.name} expected: ${def.type} actual: ${Object.keys(v)[0]}`);
    checkNotEmpty(v, def.name);
    key[def.name] = v;
    return encodeKey(v, def.type);
  }

  /** A written item's index keys must have the index's types and not be empty (absent is fine: indexes are sparse). */
  checkIndexKeys(item: Item): void {
    for (const i of this.indexes) {
      for (const def of i.range ? [i.hash, i.range] : [i.hash]) {
        const v = item[def.name];
        if (v === undefined) continue;
        if (valueType(v) !== def.type) throw validationError('One or more parameter values were invalid: Type mismatch for Index Key');
        if ((v.S ?? v.B)?.length === 0)
          throw validationError(
            'One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty string value.',
          );
      }
    }
  }

  entry(pk: string, sk: string): Entry | undefined {
    return this.partitions.get(pk)?.entries.get(sk);
  }

  partition(pk: string): Partition | undefined {
    return this.partitions.get(pk);
  }

  /** The version a read at `readAt` sees (undefined readAt: the current one). */
  static visible(e: Entry, readAt: number | undefined): Item | undefined {
    if (readAt === undefined || e.history === undefined) return e.item;
    for (const v of e.history) if (v.until > readAt) return v.item;
    return e.item;
  }

  /**
   * Makes `next` the item at (pk, sk) (undefined: delete). With a stale-read lag, the old version
   * is kept for that long, and a deleted item's entry with it.
   */
  write(pk: string, sk: string, key: Item, next: Item | undefined, now: number, lagMs: number): void {
    if (lagMs > 0) this.prune(now, lagMs);
    let e = this.entry(pk, sk); // looked up after pruning: a pruned entry is a new one
    if (e === undefined) {
      if (next === undefined) return;
      let p = this.partitions.get(pk);
      if (!p) {
        p = { pk, hash: fnv1a(pk), entries: new Map(), sorted: undefined };
        this.partitions.set(pk, p);
      }
      e = { partition: p, sk, key, item: undefined, history: undefined };
      p.entries.set(sk, e);
      p.sorted = undefined;
      this.order = undefined;
    }
    const old = e.item;
    if (lagMs > 0) {
      const h = (e.history ??= []);
      h.push({ item: old, until: now });
      const horizon = now - lagMs;
      let drop = 0;
      while (drop < h.length - 1 && h[drop]!.until <= horizon) drop++;
      if (drop) h.splice(0, drop);
    }
    e.item = next;
    this.itemCount += (next ? 1 : 0) - (old ? 1 : 0);
    if (next === undefined) {
      if (lagMs > 0) this.tombstones.push(e);
      else this.drop(e);
    }
  }

  private drop(e: Entry): void {
    const p = e.partition;
    if (p.entries.get(e.sk) !== e) return;
    p.entries.delete(e.sk);
    p.sorted = undefined;
    if (p.entries.size === 0) this.partitions.delete(p.pk);
    this.order = undefined;
  }

  /** Forgets deleted items no read can see any more. */
  prune(now: number, lagMs: number): void {
    const horizon = now - lagMs;
    while (this.tombstones.length) {
      const e = this.tombstones[0]!;
      const last = e.history?.at(-1);
      if (e.item === undefined && last && last.until > horizon) break;
      this.tombstones.shift();
      if (e.item === undefined) this.drop(e);
    }
  }

  /** A partition's entries in sort-key order. */
  sortedEntries(p: Partition): Entry[] {
    if (!p.sorted) {
      const r = this.range;
      p.sorted = [...p.entries.values()];
      if (r) p.sorted.sort((a, b) => compareKeys(a.sk, b.sk, r.type));
    }
    return p.sorted;
  }

  private comparePosition(a: Position, b: Position): number {
    if (a.hash !== b.hash) return a.hash - b.hash;
    if (a.pk !== b.pk) return a.pk < b.pk ? -1 : 1;
    return this.range ? compareKeys(a.sk, b.sk, this.range.type) : 0;
  }

  /** Every entry (deleted ones kept for stale reads included) in scan order. */
  scanOrder(): Entry[] {
    if (!this.order) {
      const parts = [...this.partitions.values()].sort((a, b) => a.hash - b.hash || (a.pk < b.pk ? -1 : a.pk > b.pk ? 1 : 0));
      this.order = parts.flatMap((p) => this.sortedEntries(p));
    }
    return this.order;
  }

  /** Where a scan resumes after `key` (ExclusiveStartKey): the index of the first entry past it. */
  scanIndexAfter(pk: string, sk: string): number {
    const order = this.scanOrder();
    const probe: Position = { hash: fnv1a(pk), pk, sk };
    let lo = 0;
    let hi = order.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const e = order[mid]!;
      if (this.comparePosition({ hash: e.partition.hash, pk: e.partition.pk, sk: e.sk }, probe) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Every entry, for TTL sweeps and index queries. */
  *allEntries(): Generator<Entry> {
    for (const p of this.partitions.values()) yield* p.entries.values();
  }
}

function checkNotEmpty(v: AV, name: string): void {
  if ((v.S ?? v.B)?.length === 0)
    throw validationError(`One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: ${name}`);
}
