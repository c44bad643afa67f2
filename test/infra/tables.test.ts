import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
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

  // Deletion protection follows the policy where the policy keeps a table in use, and is off where
  // the policy lets CloudFormation delete one: with DESTROY, and on the rollback of the deploy that
  // created a table under RETAIN_ON_UPDATE_OR_DELETE (RetainExceptOnCreate), which a protected
  // table would refuse (nobody, CloudFormation included, deletes one), failing the rollback.
  it.each([
    { policy: RemovalPolicy.RETAIN, deletionPolicy: 'Retain', updateReplacePolicy: 'Retain', protectedFromDeletion: true },
    { policy: RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE, deletionPolicy: 'RetainExceptOnCreate', updateReplacePolicy: 'Retain', protectedFromDeletion: false },
    { policy: RemovalPolicy.DESTROY, deletionPolicy: 'Delete', updateReplacePolicy: 'Delete', protectedFromDeletion: false },
  ])('removalPolicy $policy: DeletionPolicy $deletionPolicy, UpdateReplacePolicy $updateReplacePolicy, deletion protection $protectedFromDeletion', ({ policy, deletionPolicy, updateReplacePolicy, protectedFromDeletion }) => {
    const stack = new Stack(new App(), 'T');
    new ConclaveTables(stack, 'Tables', { removalPolicy: policy });
    const tables = Object.values(Template.fromStack(stack).findResources('AWS::DynamoDB::GlobalTable'));
    expect(tables).toHaveLength(3);
    for (const t of tables) {
      expect(t).toMatchObject({ DeletionPolicy: deletionPolicy, UpdateReplacePolicy: updateReplacePolicy });
      expect(t.Properties.Replicas.map((r: { DeletionProtectionEnabled?: boolean }) => r.DeletionProtectionEnabled)).toEqual([protectedFromDeletion]);
    }
  });
});
