/**
 * The model's state: its tables, their streams and the transaction tokens it remembers, with what
 * every operation shares — finding a table, choosing the version a read sees, checking a
 * condition and committing a write (with its stream record). The operations themselves, applied
 * synchronously, are in one file per family: items.ts, query.ts, scan.ts, batches.ts,
 * transactions.ts, control-plane.ts and ttl.ts. Each takes a command's input and returns its
 * output or throws the error DynamoDB would. No serialization and no SDK middleware: inputs are
 * validated and copied into the model's representation (values.ts), outputs copied out. The
 * client stand-in (client.ts) decides when an operation runs; there it runs at once.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { conditionalCheckFailed, tableNotFound, validationError } from './errors.js';
import { evalCondition } from './conditions.js';
import type { Condition, Parsed } from './expressions.js';
import type { Bindings } from './paths.js';
import type { ModelStream } from './streams.js';
import type { Entry, Table } from './table.js';
import { equalItems, exportItem, importMap, newMap, tooLarge, type Item } from './values.js';

/** What the engine needs from the model's options. */
export interface EngineOptions {
  now: () => number;
  random: () => number;
  staleReadMaxLagMs: number;
  streamShards: number;
  streamRetentionMs: number;
  region: string;
  checkItemSize: boolean;
}

/** The item a condition sees when there is none. */
export const EMPTY: Item = newMap();

/** A write worked out and checked, not yet applied. */
export interface Planned {
  table: Table;
  entry: Entry | undefined;
  pk: string;
  sk: string;
  key: Item;
  old: Item | undefined;
  next: Item | undefined;
}

/** One request's placeholders: names as given, values imported. */
export function bindings(names: Record<string, string> | undefined, values: Record<string, AttributeValue> | undefined): Bindings {
  return { names, values: values ? importMap(values as Record<string, unknown>) : EMPTY };
}

/** The tables, their streams, and what every operation on them shares. */
export class Engine {
  readonly tables = new Map<string, Table>();
  /** By ARN; a deleted table's stream stays readable until its records age out. */
  readonly streams = new Map<string, ModelStream>();
  /**
   * Transaction client tokens seen in the last ten minutes, oldest first, with the request's items
   * (transactions.ts compares a repeat's with them; a request's input is not changed once sent).
   */
  readonly tokens = new Map<string, { at: number; items: unknown }>();
  private seq = 0;
  private tokenSeq = 0;

  constructor(readonly o: EngineOptions) {}

  /** A transaction token no other client of this model has: what the SDK generates per request. */
  newClientToken(): string {
    return `model-token-${++this.tokenSeq}`;
  }

  /** The sequence number of the newest stream record of any table (0 before the first). */
  get lastSequence(): number {
    return this.seq;
  }

  table(name: string | undefined): Table {
    const t = name === undefined ? undefined : this.tables.get(name);
    if (!t) throw tableNotFound(String(name));
    return t;
  }

  /** When an eventually consistent read reads (undefined: the newest version). */
  readAt(consistent: boolean | undefined): number | undefined {
    if (consistent || this.o.staleReadMaxLagMs <= 0) return undefined;
    return this.o.now() - this.o.random() * this.o.staleReadMaxLagMs;
  }

  checkSize(item: Item): void {
    if (this.o.checkItemSize && tooLarge(item)) throw validationError('Item size has exceeded the maximum allowed size');
  }

  /** Applies a planned write: nothing at all when it changes nothing (no stream record either). */
  commit(p: Planned, byTtl = false): void {
    const { old, next } = p;
    if (old === undefined && next === undefined) return;
    if (old !== undefined && next !== undefined && equalItems(old, next)) return;
    const now = this.o.now();
    p.table.write(p.pk, p.sk, p.key, next, now, this.o.staleReadMaxLagMs);
    const stream = p.table.stream;
    if (stream) {
      stream.append(p.pk, {
        seq: ++this.seq,
        eventName: old === undefined ? 'INSERT' : next === undefined ? 'REMOVE' : 'MODIFY',
        keys: p.key,
        newImage: next,
        oldImage: old,
        at: now,
        byTtl,
      });
    }
  }

  /** Throws ConditionalCheckFailedException (with the item, when asked for) unless `cond` holds for `old`. */
  check(cond: Parsed<Condition> | undefined, old: Item | undefined, b: Bindings, rvOnFail: string | undefined): void {
    if (cond && !evalCondition(cond.ast, old ?? EMPTY, b)) throw conditionalCheckFailed(rvOnFail === 'ALL_OLD' && old ? exportItem(old) : undefined);
  }

  /** The table, key, placeholders and current item a single-item write names. */
  target(input: { TableName?: string; Key?: Record<string, AttributeValue>; ExpressionAttributeNames?: Record<string, string>; ExpressionAttributeValues?: Record<string, AttributeValue> }) {
    const t = this.table(input.TableName);
    const { key, pk, sk } = t.keyOf(input.Key);
    const b = bindings(input.ExpressionAttributeNames, input.ExpressionAttributeValues);
    const entry = t.entry(pk, sk);
    return { t, key, pk, sk, b, entry, old: entry?.item };
  }

  /** The write that deletes the item at `key` (a Delete in a batch or a transaction). */
  planDelete(t: Table, rawKey: Record<string, AttributeValue> | undefined): Planned {
    const { key, pk, sk } = t.keyOf(rawKey);
    const entry = t.entry(pk, sk);
    return { table: t, entry, pk, sk, key, old: entry?.item, next: undefined };
  }

  /** The write that puts `rawItem` (a PutItem, or a Put in a batch or a transaction): checked, not applied. */
  planPut(t: Table, rawItem: Record<string, AttributeValue> | undefined): Planned {
    if (!rawItem) throw validationError('One or more parameter values were invalid: Item must be given');
    const item = importMap(rawItem as Record<string, unknown>);
    const { key, pk, sk } = t.keyOfItem(item);
    t.checkIndexKeys(item);
    this.checkSize(item);
    const entry = t.entry(pk, sk);
    return { table: t, entry, pk, sk, key, old: entry?.item, next: item };
  }
}
