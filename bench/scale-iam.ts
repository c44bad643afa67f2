/**
 * How many lease names one role can be granted (issue 38, item 5): synthesizes the Conclave
 * construct with `grantWorker(role, { leaseNames })` for growing numbers of names and prints the
 * policies CDK attaches to the role (it moves statements past the inline policy's room into managed
 * "overflow" policies) and each one's characters without white space as IAM counts them, the
 * template's joins resolved for account 123456789012 in us-east-1. IAM's quotas: a role's inline
 * policies 10,240 characters together, a managed policy 6,144, 10 managed policies per role by
 * default (20 at most), counted by infra/policy-size.ts as grantWorker's own check counts them.
 * CDK never splits a statement; grantWorker names the leases in parts (infra/grants.ts chunked). A
 * size past the role's room fails synth: printed as `fits: false` with the error.
 *
 *   npx tsx bench/scale-iam.ts [--leases 1,10,30,100,300]
 */
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Conclave } from '../infra/conclave.js';
import { IAM_POLICY_LIMITS, policyChars } from '../infra/policy-size.js';
import { buildFunctions } from '../scripts/build-functions.js';

const i = process.argv.indexOf('--leases');
const sizes = (i >= 0 ? process.argv[i + 1]! : '1,10,30,100,300').split(',').map(Number);
await buildFunctions();
for (const n of sizes) {
  const stack = new Stack(new App(), 'Workers');
  const conclave = new Conclave(stack, 'Conclave', { tablePrefix: 'prod' });
  const role = new iam.Role(stack, 'Task', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') });
  conclave.grantWorker(role, { leaseNames: Array.from({ length: n }, (_, k) => `orders-shard-${String(k).padStart(5, '0')}`), allComponents: true });
  const roleId = stack.getLogicalId(role.node.defaultChild as iam.CfnRole);
  let template: Record<string, unknown>;
  try {
    template = Template.fromStack(stack).toJSON();
  } catch (e) {
    // grantWorker's check (infra/grants.ts checkRolePolicySizes) refuses a role that outgrows IAM
    process.stdout.write(`${JSON.stringify({ leases: n, fits: false, synth: (e as Error).message.split('\n').find((l) => l.includes('do not fit IAM'))?.trim() ?? (e as Error).message })}\n`);
    continue;
  }
  const size = policyChars;
  let inline = 0;
  const managed: number[] = [];
  for (const r of Object.values<{ Type: string; Properties: { Roles?: unknown[]; PolicyDocument: unknown } }>(template['Resources'] as Record<string, { Type: string; Properties: { Roles?: unknown[]; PolicyDocument: unknown } }>)) {
    if (!JSON.stringify(r.Properties?.Roles ?? []).includes(roleId)) continue;
    if (r.Type === 'AWS::IAM::Policy') inline += size(r.Properties.PolicyDocument);
    if (r.Type === 'AWS::IAM::ManagedPolicy') managed.push(size(r.Properties.PolicyDocument));
  }
  const over = managed.filter((m) => m > IAM_POLICY_LIMITS.managedChars).length;
  process.stdout.write(`${JSON.stringify({ leases: n, inlineChars: inline, managedPolicies: managed.length, managedChars: managed, overManagedLimit: over, fits: inline <= IAM_POLICY_LIMITS.inlineChars && over === 0 && managed.length <= IAM_POLICY_LIMITS.managedPerRole })}\n`);
}
