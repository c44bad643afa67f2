/** Time to live: UpdateTimeToLive, DescribeTimeToLive, and the sweep that deletes expired items. */
import type { AttributeValue, DescribeTimeToLiveCommandInput, DescribeTimeToLiveCommandOutput, UpdateTimeToLiveCommandInput, UpdateTimeToLiveCommandOutput } from '@aws-sdk/client-dynamodb';
import type { Engine } from './engine.js';
import { validationError } from './errors.js';
import { exportItem } from './values.js';

/** TTL leaves items expired more than five years ago alone. */
const TTL_MAX_AGE_MS = 5 * 365 * 86_400_000;

export function updateTimeToLive(engine: Engine, input: UpdateTimeToLiveCommandInput): UpdateTimeToLiveCommandOutput {
  const t = engine.table(input.TableName);
  const spec = input.TimeToLiveSpecification;
  if (!spec?.AttributeName || spec.Enabled === undefined) throw validationError('TimeToLiveSpecification needs AttributeName and Enabled');
  if (spec.Enabled && t.ttlAttribute !== undefined) throw validationError('TimeToLive is already enabled');
  if (!spec.Enabled && t.ttlAttribute === undefined) throw validationError('TimeToLive is already disabled');
  t.ttlAttribute = spec.Enabled ? spec.AttributeName : undefined;
  return { TimeToLiveSpecification: { Enabled: spec.Enabled, AttributeName: spec.AttributeName }, $metadata: {} };
}

export function describeTimeToLive(engine: Engine, input: DescribeTimeToLiveCommandInput): DescribeTimeToLiveCommandOutput {
  const t = engine.table(input.TableName);
  return {
    TimeToLiveDescription: t.ttlAttribute !== undefined ? { TimeToLiveStatus: 'ENABLED', AttributeName: t.ttlAttribute } : { TimeToLiveStatus: 'DISABLED' },
    $metadata: {},
  };
}

/**
 * Deletes every item whose TTL attribute (a number, epoch seconds) is in the past — but not more
 * than five years in the past, which DynamoDB leaves alone — each with a REMOVE record carrying
 * DynamoDB's service identity. Returns the keys deleted.
 */
export function sweepTtl(engine: Engine, tables?: readonly string[]): { table: string; key: Record<string, AttributeValue> }[] {
  const now = engine.o.now();
  const out: { table: string; key: Record<string, AttributeValue> }[] = [];
  for (const t of engine.tables.values()) {
    const attr = t.ttlAttribute;
    if (attr === undefined || (tables && !tables.includes(t.name))) continue;
    for (const e of [...t.allEntries()]) {
      const n = e.item?.[attr]?.N;
      if (n === undefined) continue;
      const at = Number(n) * 1000;
      if (!(at < now) || at < now - TTL_MAX_AGE_MS) continue;
      engine.commit({ table: t, entry: e, pk: e.partition.pk, sk: e.sk, key: e.key, old: e.item, next: undefined }, true);
      out.push({ table: t.name, key: exportItem(e.key) });
    }
  }
  return out;
}
