/**
 * How many lease names one role can be granted (issue 38, item 5): synthesizes the Conclave
 * construct with `grantWorker(role, { leaseNames })` for growing numbers of names and prints the
 * policies CDK attaches to the role (it moves statements past the inline policy's room into managed
 * "overflow" policies) and each one's characters without white space as IAM counts them, the
 * template's joins resolved for account 123456789012 in us-east-1. IAM's quotas: a role's inline
 * policies 10,240 characters together, a managed policy 6,144, 10 managed policies per role by
 * default (20 at most). A statement is never split: one naming every lease's wake topic grows
 * with the names.
 *
 *   npx tsx bench/scale-iam.ts [--leases 1,10,30,100,300]
 */
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Conclave } from '../infra/conclave.js';
import { buildFunctions } from '../scripts/build-functions.js';

const REFS: Record<string, string> = { 'AWS::Partition': 'aws', 'AWS::Region': 'us-east-1', 'AWS::AccountId': '123456789012', 'AWS::URLSuffix': 'amazonaws.com' };

/** The template's Fn::Join and pseudo-parameter Refs as strings (a Ref to a resource: a 40-character stand-in). */
function resolve(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(resolve);
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if ('Ref' in o) return REFS[String(o['Ref'])] ?? 'x'.repeat(40);
    if ('Fn::GetAtt' in o) return 'x'.repeat(80);
    if ('Fn::Join' in o) {
      const [sep, parts] = o['Fn::Join'] as [string, unknown[]];
      return parts.map((p) => String(resolve(p))).join(sep);
    }
    return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, resolve(x)]));
  }
  return v;
}

const i = process.argv.indexOf('--leases');
const sizes = (i >= 0 ? process.argv[i + 1]! : '1,10,30,100,300').split(',').map(Number);
await buildFunctions();
for (const n of sizes) {
  const stack = new Stack(new App(), 'Workers');
  const conclave = new Conclave(stack, 'Conclave', { tablePrefix: 'prod' });
  const role = new iam.Role(stack, 'Task', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') });
  conclave.grantWorker(role, { leaseNames: Array.from({ length: n }, (_, k) => `orders-shard-${String(k).padStart(5, '0')}`), allComponents: true });
  const roleId = stack.getLogicalId(role.node.defaultChild as iam.CfnRole);
  const size = (doc: unknown) => JSON.stringify(resolve(doc)).replace(/\s/g, '').length;
  let inline = 0;
  const managed: number[] = [];
  for (const r of Object.values<{ Type: string; Properties: { Roles?: unknown[]; PolicyDocument: unknown } }>(Template.fromStack(stack).toJSON()['Resources'])) {
    if (!JSON.stringify(r.Properties?.Roles ?? []).includes(roleId)) continue;
    if (r.Type === 'AWS::IAM::Policy') inline += size(r.Properties.PolicyDocument);
    if (r.Type === 'AWS::IAM::ManagedPolicy') managed.push(size(r.Properties.PolicyDocument));
  }
  const over = managed.filter((m) => m > 6_144).length;
  process.stdout.write(`${JSON.stringify({ leases: n, inlineChars: inline, managedPolicies: managed.length, managedChars: managed, overManagedLimit: over, fits: inline <= 10_240 && over === 0 && managed.length <= 10 })}\n`);
}
