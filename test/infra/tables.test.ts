import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { ConclaveTables } from '../../infra/tables.js';
import { TABLES, TTL_ATTRIBUTE } from '../../lib/tables.js';

describe('ConclaveTables', () => {
  it('creates the tables local mode creates, from the same declaration', () => {
    const stack = new Stack(new App(), 'T');
    new ConclaveTables(stack, 'Tables');
    const template = Template.fromStack(stack);
    const tables = Object.values(template.findResources('AWS::DynamoDB::GlobalTable'));
    expect(tables).toHaveLength(3);
    for (const t of Object.values(TABLES)) {
      const keys = [{ AttributeName: t.partitionKey, KeyType: 'HASH' }, ...('sortKey' in t ? [{ AttributeName: t.sortKey, KeyType: 'RANGE' }] : [])];
      const match = tables.find((r) => JSON.stringify(r.Properties.KeySchema) === JSON.stringify(keys));
      expect(match, `table keyed ${JSON.stringify(keys)}`).toBeDefined();
      expect(match!.Properties).toMatchObject({ BillingMode: 'PAY_PER_REQUEST', TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true } });
      expect(match!.Properties.StreamSpecification?.StreamViewType).toBe(t.stream ? 'NEW_AND_OLD_IMAGES' : undefined);
      expect(match!.Properties.Replicas[0]).toMatchObject({ PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true }, DeletionProtectionEnabled: true });
      expect(match!.DeletionPolicy).toBe('Retain');
      const indexes: readonly { name: string; partitionKey: string }[] = 'indexes' in t ? t.indexes : [];
      expect(match!.Properties.GlobalSecondaryIndexes ?? []).toEqual(
        indexes.map((i) => ({ IndexName: i.name, KeySchema: [{ AttributeName: i.partitionKey, KeyType: 'HASH' }], Projection: { ProjectionType: 'KEYS_ONLY' } })),
      );
    }
  });
});
