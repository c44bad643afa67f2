/** Scan, and the page both Scan and Query read: items in order, until Limit or 1 MB. */
import type { AttributeValue, ScanCommandInput, ScanCommandOutput } from '@aws-sdk/client-dynamodb';
import { evalCondition } from './conditions.js';
import { bindings, type Engine } from './engine.js';
import { UnsupportedByModelError, validationError } from './errors.js';
import { parseCondition, parseProjection, type Condition, type Parsed } from './expressions.js';
import { project, type Bindings, type Resolved } from './paths.js';
import { checkPlaceholders } from './placeholders.js';
import { LEGACY_SCAN, checkLimit, projectionPaths, unsupported } from './requests.js';
import { Table, type Entry } from './table.js';
import { exportItem, itemSize, type Item } from './values.js';

/** DynamoDB stops a Query or Scan page at 1 MB of items read. */
const PAGE_BYTES = 1024 * 1024;

/** What a page of a Query or Scan read: the visible items in order, until Limit or 1 MB. */
export function page(
  candidates: Iterable<{ entry: Entry; item: Item }>,
  limit: number,
  filter: Parsed<Condition> | undefined,
  proj: Resolved[] | undefined,
  b: Bindings,
  select: string | undefined,
  lastKey: (e: Entry, item: Item) => Record<string, AttributeValue>,
) {
  const items: Record<string, AttributeValue>[] = [];
  let scanned = 0;
  let count = 0;
  let bytes = 0;
  let last: Record<string, AttributeValue> | undefined;
  for (const { entry, item } of candidates) {
    scanned++;
    bytes += itemSize(item);
    if (!filter || evalCondition(filter.ast, item, b, 'FilterExpression')) {
      count++;
      if (select !== 'COUNT') items.push(exportItem(proj ? project(item, proj) : item));
    }
    if (scanned >= limit || bytes >= PAGE_BYTES) {
      last = lastKey(entry, item);
      break;
    }
  }
  return { ...(select === 'COUNT' ? {} : { Items: items }), Count: count, ScannedCount: scanned, ...(last ? { LastEvaluatedKey: last } : {}), $metadata: {} };
}

export function scan(engine: Engine, input: ScanCommandInput): ScanCommandOutput {
  unsupported(input, LEGACY_SCAN, 'Scan');
  if (input.IndexName !== undefined) throw new UnsupportedByModelError('Scan of an index');
  const filter = input.FilterExpression !== undefined ? parseCondition(input.FilterExpression, 'FilterExpression') : undefined;
  const proj = input.ProjectionExpression !== undefined ? parseProjection(input.ProjectionExpression) : undefined;
  checkPlaceholders(input.ExpressionAttributeNames, input.ExpressionAttributeValues, filter, proj);
  const limit = checkLimit(input.Limit);
  const segments = input.TotalSegments;
  const segment = input.Segment;
  if ((segments === undefined) !== (segment === undefined) || (segments !== undefined && (segments < 1 || segments > 1_000_000 || segment! < 0 || segment! >= segments)))
    throw validationError('The Segment parameter is required but was not present in the request when parameter TotalSegments is present, or it is out of range');
  const t = engine.table(input.TableName);
  const b = bindings(input.ExpressionAttributeNames, input.ExpressionAttributeValues);
  const readAt = engine.readAt(input.ConsistentRead);
  const order = t.scanOrder();
  const start = input.ExclusiveStartKey ? t.keyOf(input.ExclusiveStartKey) : undefined;
  const from = start ? t.scanIndexAfter(start.pk, start.sk) : 0;
  function* candidates() {
    for (let i = from; i < order.length; i++) {
      const e = order[i]!;
      if (segments !== undefined && Math.floor((e.partition.hash / 2 ** 32) * segments) !== segment) continue;
      const item = Table.visible(e, readAt);
      if (item) yield { entry: e, item };
    }
  }
  return page(candidates(), limit, filter, projectionPaths(proj, b), b, input.Select, (e) => exportItem(e.key)) as ScanCommandOutput;
}
