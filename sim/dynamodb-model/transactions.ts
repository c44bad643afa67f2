/**
 * TransactWriteItems: every condition checked first, then every write applied, or none; a client
 * token makes a repeat within ten minutes a no-op (and a different request with it an error).
 */
import type { AttributeValue, CancellationReason, TransactWriteItem, TransactWriteItemsCommandInput, TransactWriteItemsCommandOutput } from '@aws-sdk/client-dynamodb';
import { evalCondition } from './conditions.js';
import { EMPTY, bindings, type Engine, type Planned } from './engine.js';
import { idempotentParameterMismatch, transactionCanceled, validationError } from './errors.js';
import { parseCondition, parseUpdate } from './expressions.js';
import { updatedItem } from './items.js';
import { checkPlaceholders } from './placeholders.js';
import { prepareUpdate } from './updates.js';
import { exportItem } from './values.js';

/** A transaction's client token is remembered this long. */
const TOKEN_TTL_MS = 10 * 60_000;

function fingerprint(items: unknown): string {
  return JSON.stringify(items, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v));
}

export function transactWriteItems(engine: Engine, input: TransactWriteItemsCommandInput): TransactWriteItemsCommandOutput {
  const items = input.TransactItems ?? [];
  if (items.length === 0) throw validationError("1 validation error detected: Value '[]' at 'transactItems' failed to satisfy constraint: Member must have length greater than or equal to 1");
  if (items.length > 100) throw validationError(`1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to 100`);
  const now = engine.o.now();
  const token = input.ClientRequestToken;
  if (token !== undefined) {
    pruneTokens(engine, now);
    const seen = engine.tokens.get(token);
    if (seen) {
      // compared only when a token comes again (a retry, a duplicate): most never do
      if (seen.items !== items && fingerprint(seen.items) !== fingerprint(items)) throw idempotentParameterMismatch();
      return { $metadata: {} }; // already applied: DynamoDB answers again and changes nothing
    }
  }
  const ids = new Set<string>();
  const plans = items.map((ti) => {
    const plan = planTransactItem(engine, ti);
    const id = `${plan.table.name}\u0000${plan.pk}\u0000${plan.sk}`;
    if (ids.has(id)) throw validationError('Transaction request cannot include multiple operations on one item');
    ids.add(id);
    return plan;
  });
  let failed = false;
  const reasons: CancellationReason[] = plans.map((p) => {
    try {
      const old = p.entry?.item;
      if (p.cond && !evalCondition(p.cond.ast, old ?? EMPTY, p.b)) {
        failed = true;
        return { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed', ...(p.rvOnFail === 'ALL_OLD' && old ? { Item: exportItem(old) } : {}) };
      }
      p.old = old;
      p.next = p.kind === 'Put' ? p.next : p.kind === 'Delete' ? undefined : p.kind === 'Update' ? updatedItem(engine, p.table, p.update, old, p.key, p.b) : old;
      return { Code: 'None' };
    } catch (e) {
      if (!(e instanceof Error && e.name === 'ValidationException')) throw e;
      failed = true;
      return { Code: 'ValidationError', Message: e.message };
    }
  });
  if (failed) throw transactionCanceled(reasons);
  for (const p of plans) if (p.kind !== 'ConditionCheck') engine.commit(p);
  if (token !== undefined) engine.tokens.set(token, { at: now, items });
  return { $metadata: {} };
}

function pruneTokens(engine: Engine, now: number): void {
  for (const [t, v] of engine.tokens) {
    if (now - v.at < TOKEN_TTL_MS) break; // insertion order is time order
    engine.tokens.delete(t);
  }
}

const KINDS = ['ConditionCheck', 'Put', 'Update', 'Delete'] as const;

function planTransactItem(engine: Engine, ti: TransactWriteItem) {
  let kind: (typeof KINDS)[number] | undefined;
  let kinds = 0;
  for (const k of KINDS)
    if (ti[k] !== undefined) {
      kind ??= k;
      kinds++;
    }
  if (kinds !== 1 || kind === undefined) throw validationError('TransactItems can only contain one of ConditionCheck, Put, Update or Delete');
  const x = ti[kind]! as {
    TableName?: string;
    Key?: Record<string, AttributeValue>;
    Item?: Record<string, AttributeValue>;
    UpdateExpression?: string;
    ConditionExpression?: string;
    ExpressionAttributeNames?: Record<string, string>;
    ExpressionAttributeValues?: Record<string, AttributeValue>;
    ReturnValuesOnConditionCheckFailure?: string;
  };
  if (kind === 'ConditionCheck' && x.ConditionExpression === undefined) throw validationError('The ConditionExpression of a ConditionCheck must be given');
  if (kind === 'Update' && x.UpdateExpression === undefined) throw validationError('The UpdateExpression of an Update must be given');
  const upd = kind === 'Update' ? parseUpdate(x.UpdateExpression!) : undefined;
  const cond = x.ConditionExpression !== undefined ? parseCondition(x.ConditionExpression) : undefined;
  checkPlaceholders(x.ExpressionAttributeNames, x.ExpressionAttributeValues, upd, cond);
  const t = engine.table(x.TableName);
  const b = bindings(x.ExpressionAttributeNames, x.ExpressionAttributeValues);
  const base: Planned = kind === 'Put' ? engine.planPut(t, x.Item) : engine.planDelete(t, x.Key);
  // spelt out, not spread: one shape for every plan
  return {
    table: base.table,
    entry: base.entry,
    pk: base.pk,
    sk: base.sk,
    key: base.key,
    old: base.old,
    next: base.next,
    kind,
    cond,
    b,
    update: upd ? prepareUpdate(upd, b, t.keyNames) : undefined,
    rvOnFail: x.ReturnValuesOnConditionCheckFailure,
  };
}
