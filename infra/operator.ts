/**
 * `grantOperator`: what the `conclave` CLI (lib/cli) sends to a deployed system's tables, and
 * nothing else. aws-cdk-lib's `grantReadWriteData` grants PutItem, BatchWriteItem and DeleteItem
 * besides, and its actions on `index/*` too, which cdk-nag (AwsSolutions-IAM5) refuses.
 */
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import { KEY_READ, KEY_WRITE, type TableRole } from './access.js';
import { acknowledgeKeyWildcards, SESSION_PARTITIONS } from './grants.js';
import type { ConclaveTableRefs } from './tables.js';

/**
 * The actions the CLI's commands send, per table (docs/cli.md, IAM for the CLI):
 * - leases: GetItem (every command reads a lease by name; a scan is preceded by one), Scan (`get
 *   leases`, `watch`, a name no row has, `describe lease`'s look for the leases held on a session
 *   row), UpdateItem (`set-strategy`, `set-locations`, `release`);
 * - candidates: GetItem, Query (one lease's candidates), Scan (`get candidates`, a name no row
 *   has), UpdateItem (`set-priority`, `preempt`);
 * - identities, session partitions only (SESSION_PARTITIONS): GetItem and Query (a term held on a
 *   session is judged by its session rows), UpdateItem (`release` marks the term ended on its
 *   holder's session row);
 * - DescribeTable of the three (a table still being created is waited for, not reported missing).
 * No PutItem, DeleteItem, BatchWriteItem, no index, no table administration (CreateTable,
 * DeleteTable, UpdateTimeToLive: local mode's, lib/local), and no ListTables (on `*`: it only names
 * the tables there when a table is not found, lib/cli/errors.ts, and its absence is told as nothing).
 */
export const OPERATOR_ACCESS = {
  leases: ['dynamodb:GetItem', 'dynamodb:Scan', 'dynamodb:UpdateItem'],
  candidates: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:Scan', 'dynamodb:UpdateItem'],
  identities: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
} as const satisfies Record<TableRole, readonly string[]>;

/** `grantOperator` of `Conclave` and `ConclaveReplica`, on the tables of one Region. */
export function grantOperatorIn(grantee: iam.IGrantable, on: { readonly tables: ConclaveTableRefs; readonly encryptionKey: kms.IKey | undefined }): iam.Grant {
  const arn = (role: TableRole) => on.tables[role].tableArn;
  const grants = [
    iam.Grant.addToPrincipal({ grantee, actions: [...OPERATOR_ACCESS.leases], resourceArns: [arn('leases')] }),
    iam.Grant.addToPrincipal({ grantee, actions: [...OPERATOR_ACCESS.candidates], resourceArns: [arn('candidates')] }),
    // the session rows only: the CLI reads no identity lease of a component, and writes only a session row's end-of-term mark
    iam.Grant.addToPrincipal({
      grantee,
      actions: [...OPERATOR_ACCESS.identities],
      resourceArns: [arn('identities')],
      conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [...SESSION_PARTITIONS] }, Null: { 'dynamodb:LeadingKeys': 'false' } },
    }),
    iam.Grant.addToPrincipal({ grantee, actions: ['dynamodb:DescribeTable'], resourceArns: (['leases', 'candidates', 'identities'] as const).map(arn) }),
  ];
  if (on.encryptionKey) {
    grants.push(on.encryptionKey.grant(grantee, ...KEY_READ, ...KEY_WRITE));
    // the findings of this grant's wildcard actions, acknowledged on the role it adds them to
    const principal = grantee.grantPrincipal;
    if (Construct.isConstruct(principal)) acknowledgeKeyWildcards(principal, 'the KMS actions reading and writing a key-encrypted table needs, granted by grantOperator.');
  }
  return grants.reduce((a, b) => a.combine(b));
}
