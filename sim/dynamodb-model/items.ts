/** The single-item operations: GetItem, PutItem, UpdateItem, DeleteItem. */
import type {
  DeleteItemCommandInput,
  DeleteItemCommandOutput,
  GetItemCommandInput,
  GetItemCommandOutput,
  PutItemCommandInput,
  PutItemCommandOutput,
  UpdateItemCommandInput,
  UpdateItemCommandOutput,
} from '@aws-sdk/client-dynamodb';
import { bindings, type Engine } from './engine.js';
import { parseCondition, parseProjection, parseUpdate } from './expressions.js';
import { copyMap, project, type Bindings } from './paths.js';
import { checkPlaceholders } from './placeholders.js';
import { LEGACY_GET, LEGACY_UPDATE, LEGACY_WRITE, RV_ALL, RV_OLD, projectionPaths, returnValues, unsupported } from './requests.js';
import { Table } from './table.js';
import { prepareUpdate, runUpdate, type PreparedUpdate } from './updates.js';
import { exportItem, newMap, type Item } from './values.js';

export function getItem(engine: Engine, input: GetItemCommandInput): GetItemCommandOutput {
  unsupported(input, LEGACY_GET, 'GetItem');
  const proj = input.ProjectionExpression !== undefined ? parseProjection(input.ProjectionExpression) : undefined;
  checkPlaceholders(input.ExpressionAttributeNames, undefined, proj);
  const paths = proj ? projectionPaths(proj, bindings(input.ExpressionAttributeNames, undefined)) : undefined;
  const t = engine.table(input.TableName);
  const { pk, sk } = t.keyOf(input.Key);
  const entry = t.entry(pk, sk);
  const item = entry && Table.visible(entry, engine.readAt(input.ConsistentRead));
  if (!item) return { $metadata: {} };
  return { Item: exportItem(paths ? project(item, paths) : item), $metadata: {} };
}

export function putItem(engine: Engine, input: PutItemCommandInput): PutItemCommandOutput {
  unsupported(input, LEGACY_WRITE, 'PutItem');
  const rv = returnValues(input.ReturnValues, RV_OLD);
  const cond = input.ConditionExpression !== undefined ? parseCondition(input.ConditionExpression) : undefined;
  checkPlaceholders(input.ExpressionAttributeNames, input.ExpressionAttributeValues, cond);
  const t = engine.table(input.TableName);
  const b = bindings(input.ExpressionAttributeNames, input.ExpressionAttributeValues);
  const p = engine.planPut(t, input.Item);
  engine.check(cond, p.old, b, input.ReturnValuesOnConditionCheckFailure);
  engine.commit(p);
  return rv === 'ALL_OLD' && p.old ? { Attributes: exportItem(p.old), $metadata: {} } : { $metadata: {} };
}

/** The attributes an update named, as they are in `item` (UPDATED_OLD, UPDATED_NEW); undefined when none is there. */
function pick(item: Item | undefined, prepared: PreparedUpdate | undefined): Item | undefined {
  if (!item || !prepared) return undefined;
  const out = newMap();
  let any = false;
  for (const k of prepared.touched) {
    if (item[k] === undefined) continue;
    out[k] = item[k]!;
    any = true;
  }
  return any ? out : undefined;
}

export function updateItem(engine: Engine, input: UpdateItemCommandInput): UpdateItemCommandOutput {
  unsupported(input, LEGACY_UPDATE, 'UpdateItem');
  const rv = returnValues(input.ReturnValues, RV_ALL);
  const upd = input.UpdateExpression !== undefined ? parseUpdate(input.UpdateExpression) : undefined;
  const cond = input.ConditionExpression !== undefined ? parseCondition(input.ConditionExpression) : undefined;
  checkPlaceholders(input.ExpressionAttributeNames, input.ExpressionAttributeValues, upd, cond);
  const { t, key, pk, sk, b, entry, old } = engine.target(input);
  const prepared = upd ? prepareUpdate(upd, b, t.keyNames) : undefined;
  engine.check(cond, old, b, input.ReturnValuesOnConditionCheckFailure);
  const next = updatedItem(engine, t, prepared, old, key, b);
  engine.commit({ table: t, entry, pk, sk, key, old, next });
  const attrs = rv === 'ALL_NEW' ? next : rv === 'ALL_OLD' ? old : rv === 'UPDATED_NEW' ? pick(next, prepared) : rv === 'UPDATED_OLD' ? pick(old, prepared) : undefined;
  return attrs ? { Attributes: exportItem(attrs), $metadata: {} } : { $metadata: {} };
}

/** The item an update makes of `old` (absent: of its key), checked as a write: index keys and size. */
export function updatedItem(engine: Engine, t: Table, prepared: PreparedUpdate | undefined, old: Item | undefined, key: Item, b: Bindings): Item {
  const next = prepared ? runUpdate(prepared, old, key, b) : copyMap(old ?? key);
  t.checkIndexKeys(next);
  engine.checkSize(next);
  return next;
}

export function deleteItem(engine: Engine, input: DeleteItemCommandInput): DeleteItemCommandOutput {
  unsupported(input, LEGACY_WRITE, 'DeleteItem');
  const rv = returnValues(input.ReturnValues, RV_OLD);
  const cond = input.ConditionExpression !== undefined ? parseCondition(input.ConditionExpression) : undefined;
  checkPlaceholders(input.ExpressionAttributeNames, input.ExpressionAttributeValues, cond);
  const { t, key, pk, sk, b, entry, old } = engine.target(input);
  engine.check(cond, old, b, input.ReturnValuesOnConditionCheckFailure);
  engine.commit({ table: t, entry, pk, sk, key, old, next: undefined });
  return rv === 'ALL_OLD' && old ? { Attributes: exportItem(old), $metadata: {} } : { $metadata: {} };
}
