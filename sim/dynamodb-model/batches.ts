/** BatchGetItem and BatchWriteItem: up to 100 reads, up to 25 writes, each applied on its own. */
import type { AttributeValue, BatchGetItemCommandInput, BatchGetItemCommandOutput, BatchWriteItemCommandInput, BatchWriteItemCommandOutput } from '@aws-sdk/client-dynamodb';
import { bindings, type Engine, type Planned } from './engine.js';
import { validationError } from './errors.js';
import { parseProjection } from './expressions.js';
import { project } from './paths.js';
import { checkPlaceholders } from './placeholders.js';
import { LEGACY_GET, projectionPaths, unsupported } from './requests.js';
import { Table } from './table.js';
import { exportItem } from './values.js';

export function batchGetItem(engine: Engine, input: BatchGetItemCommandInput): BatchGetItemCommandOutput {
  const requests = Object.entries(input.RequestItems ?? {});
  if (requests.length === 0) throw validationError("1 validation error detected: Value null at 'requestItems' failed to satisfy constraint: Member must not be null");
  const total = requests.reduce((n, [, r]) => n + (r.Keys?.length ?? 0), 0);
  if (total > 100) throw validationError('Too many items requested for the BatchGetItem call');
  const plans = requests.map(([name, r]) => {
    unsupported(r, LEGACY_GET, 'BatchGetItem');
    const proj = r.ProjectionExpression !== undefined ? parseProjection(r.ProjectionExpression) : undefined;
    checkPlaceholders(r.ExpressionAttributeNames, undefined, proj);
    if (!r.Keys?.length) throw validationError("1 validation error detected: Value '[]' at 'requestItems.keys' failed to satisfy constraint: Member must have length greater than or equal to 1");
    const t = engine.table(name);
    const seen = new Set<string>();
    const keys = r.Keys.map((k) => {
      const key = t.keyOf(k);
      const id = `${key.pk}\u0000${key.sk}`;
      if (seen.has(id)) throw validationError('Provided list of item keys contains duplicates');
      seen.add(id);
      return key;
    });
    return { name, t, r, keys, proj: projectionPaths(proj, bindings(r.ExpressionAttributeNames, undefined)) };
  });
  const Responses: Record<string, Record<string, AttributeValue>[]> = {};
  for (const { name, t, r, keys, proj } of plans) {
    const readAt = engine.readAt(r.ConsistentRead);
    const out: Record<string, AttributeValue>[] = [];
    for (const k of keys) {
      const e = t.entry(k.pk, k.sk);
      const item = e && Table.visible(e, readAt);
      if (item) out.push(exportItem(proj ? project(item, proj) : item));
    }
    Responses[name] = out;
  }
  return { Responses, UnprocessedKeys: {}, $metadata: {} };
}

export function batchWriteItem(engine: Engine, input: BatchWriteItemCommandInput): BatchWriteItemCommandOutput {
  const requests = Object.entries(input.RequestItems ?? {});
  const total = requests.reduce((n, [, r]) => n + r.length, 0);
  if (total === 0) throw validationError("1 validation error detected: Value null at 'requestItems' failed to satisfy constraint: Member must not be null");
  if (total > 25) throw validationError('Too many items requested for the BatchWriteItem call');
  const plans: Planned[] = [];
  for (const [name, writes] of requests) {
    const t = engine.table(name);
    const seen = new Set<string>();
    for (const w of writes) {
      if ((w.PutRequest === undefined) === (w.DeleteRequest === undefined)) throw validationError('Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes');
      const p: Planned = w.PutRequest ? engine.planPut(t, w.PutRequest.Item) : engine.planDelete(t, w.DeleteRequest!.Key);
      const id = `${p.pk}\u0000${p.sk}`;
      if (seen.has(id)) throw validationError('Provided list of item keys contains duplicates');
      seen.add(id);
      plans.push(p);
    }
  }
  for (const p of plans) {
    p.entry = p.table.entry(p.pk, p.sk);
    p.old = p.entry?.item;
    engine.commit(p);
  }
  return { UnprocessedItems: {}, $metadata: {} };
}
