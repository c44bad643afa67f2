/**
 * The push path's AWS side (issue 17): IoT Core's data endpoint, looked up when the stack deploys,
 * and the IoT resources the grants name (infra/grants.ts grants them, with the actions of
 * infra/access.ts). The topics are lib/schemas/push.ts's: the lease stream's function (and the
 * candidate stream's and election timer's, for a lease they wrote) publishes a wake of lease L on `conclave/<leases table>/lease/<L, URI-encoded>` (or `…/lease-hash/<sha-256>`
 * when that is too long), and on `conclave/<leases table>/process/<process>` for each process among
 * the lease's candidates; a worker process subscribes to `conclave/<leases table>/#`, or, given its
 * Session, to its own process topic (PushChannel's `session`).
 */
import { Annotations, ArnFormat, CfnParameter, Reference, Stack, Token, Tokenization, type CfnElement, type RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as cr from 'aws-cdk-lib/custom-resources';
import type { Construct, IConstruct } from 'constructs';
import { hashedPushTopic, MAX_PLAIN_CLIENT_ID_TABLE, plainPushTopic, processTopicPattern, pushRoot, pushTopic } from '../lib/schemas/push.js';
import { defaultTableNames } from '../lib/tables.js';
import { ENDPOINT_LOOKUP } from './access.js';
import { deployTimeLookup } from './lookup.js';
import { acknowledgeFinding } from './nag.js';

export interface IotDataEndpointOptions {
  readonly removalPolicy: RemovalPolicy;
  readonly logRetention: logs.RetentionDays;
  readonly encryptionKey: kms.IKey | undefined;
}

/**
 * IoT Core's data endpoint of the stack's account and region (`<id>-ats.iot.<region>.amazonaws.com`,
 * a token): iot:DescribeEndpoint (`iot:Data-ATS`), called by a custom resource when the stack is
 * created and at each update. The endpoint's prefix is the account's own and CloudFormation has no
 * resource or attribute that gives it, so it is looked up rather than asked for as a prop; the call
 * changes nothing, so there is nothing to undo on delete. The lookup is a deployTimeLookup
 * (infra/lookup.ts): aws-cdk-lib's one AwsCustomResource function per stack, on the Lambda
 * runtime's own SDK, with a role and a log group of its own when this lookup creates it.
 */
export function iotDataEndpoint(scope: Construct, id: string, options: IotDataEndpointOptions): string {
  const lookup = deployTimeLookup(scope, id, {
    resourceType: 'Custom::ConclaveIotEndpoint',
    call: {
      service: 'Iot',
      action: 'DescribeEndpoint',
      parameters: { endpointType: 'iot:Data-ATS' },
      physicalResourceId: cr.PhysicalResourceId.fromResponse('endpointAddress'),
      outputPaths: ['endpointAddress'],
    },
    statements: [new iam.PolicyStatement({ actions: [...ENDPOINT_LOOKUP], resources: ['*'] })],
    what: 'the IoT Core endpoint lookup',
    roleDescription: 'Conclave: looks up the IoT Core data endpoint at deploy time',
    ...options,
  });
  acknowledgeFinding(
    lookup,
    'AwsSolutions-IAM5[Resource::*]',
    'iot:DescribeEndpoint has no resource-level permissions (IAM allows only "*" for it): it reads the address of the account\'s IoT Core endpoint and changes nothing.',
  );
  return lookup.getResponseField('endpointAddress');
}

/** `arn:<partition>:iot:<region>:<account>:<kind>/<name>`, in the stack of `scope`. */
export function iotArn(scope: Construct, kind: 'client' | 'topic' | 'topicfilter', name: string): string {
  return Stack.of(scope).formatArn({ service: 'iot', resource: kind, resourceName: name, arnFormat: ArnFormat.SLASH_RESOURCE_NAME });
}

/**
 * Every wake topic of the deployment: the leases' (both forms) and the processes': what the lease
 * stream's function publishes on, and what a worker granted every lease receives and publishes on
 * (a hand-off's wake to its heir's process).
 */
export function allWakeTopics(leasesTable: string): string[] {
  return [`${pushRoot(leasesTable)}/lease/*`, `${pushRoot(leasesTable)}/lease-hash/*`, processTopicPattern(leasesTable)];
}

/**
 * The wake topics of `leaseNames` (every lease's and every process's when undefined). With the
 * leases table's name known at synth, exactly the topic pushTopic gives each lease; with a name
 * CloudFormation picks, the topic's length is not known yet, so both forms of each lease (neither is
 * a wildcard). A role granted named leases gets no process topic: a process topic carries any lease's
 * wakes (the grant cannot tell a process's leases), so it would receive wakes of leases not its own.
 */
export function wakeTopicsOf(leasesTable: string, leaseNames: readonly string[] | undefined): string[] {
  if (!leaseNames) return allWakeTopics(leasesTable);
  if (!Token.isUnresolved(leasesTable)) return leaseNames.map((name) => pushTopic(leasesTable, name));
  return leaseNames.flatMap((name) => [plainPushTopic(leasesTable, name), hashedPushTopic(leasesTable, name)]);
}

/**
 * The most characters `name` can have when the stack deploys: its length when known at synth; for a
 * token, its literal parts and each CfnParameter's bound (maxLength, its longest allowedValues);
 * undefined when a part has none (a parameter without one, another stack's export, an attribute).
 */
export function maxLengthOf(name: string): number | undefined {
  if (!Token.isUnresolved(name)) return name.length;
  const fragments = Tokenization.reverseString(name);
  let length = String(fragments.mapTokens({ mapToken: () => '' }).join({ join: (a, b) => `${a}${b}` }) ?? '').length;
  for (const token of fragments.tokens) {
    const param = Reference.isReference(token) && token.target instanceof CfnParameter ? token.target : undefined;
    const bounds = [param?.maxLength, ...(param?.allowedValues?.length ? [Math.max(...param.allowedValues.map((v) => v.length))] : [])].filter((b) => b !== undefined);
    if (!bounds.length) return undefined;
    length += Math.min(...bounds);
  }
  return length;
}

/**
 * Why the push path cannot take a leases table named by the token `leasesTable`, or undefined when
 * it can: PushChannel's client id prefix is `conclave-<name>:` up to MAX_PLAIN_CLIENT_ID_TABLE
 * characters of name and a hash of the name beyond (lib/schemas/push.ts pushClientIdPrefix), and a
 * grant cannot hash a name CloudFormation resolves at deploy time, so it names the plain form: right
 * only when the name cannot be longer. `room`: the characters a parameter of the prop may have.
 */
export function tokenLeasesTableIssue(leasesTable: string, room: number): string | undefined {
  if (!Token.isUnresolved(leasesTable)) return undefined;
  const max = maxLengthOf(leasesTable);
  if (max !== undefined && max <= MAX_PLAIN_CLIENT_ID_TABLE) return undefined;
  const what = max === undefined ? 'is a token with no bound on its length' : `lets the leases table's name be up to ${max} characters`;
  return `${what}: with the push path, a worker's client id is conclave-<leases table>:<uuid> for a name of at most ${MAX_PLAIN_CLIENT_ID_TABLE} characters (IoT Core allows 128), a hash of the name beyond, which grantWorker cannot compute from a name CloudFormation resolves at deploy time, so workers of a longer one could not connect. Give it from a CfnParameter with maxLength: ${room} (or allowedValues that short), or a name known at synth; or push: false`;
}

/**
 * The longest suffix CloudFormation puts after `<stack name>-<logical id>-` in a name it generates.
 * Documented only as "a unique physical ID" (Template Reference, "CloudFormation resource custom
 * naming": `MyStack-MyBucket-abcdefghijk1`, 12). Registry handlers (AWS::DynamoDB::GlobalTable,
 * what TableV2 makes) name with the CloudFormation CLI's IdentifierUtils (cloudformation-cli-java-plugin,
 * generateResourceIdentifier: 12 random characters, GUID_LENGTH, after a dash, the prefix cut to
 * fit); older types 12 or 13 as seen, e.g. `mystack-myqueue-1VF9BKQH5BJVI` (AWS::SQS::Queue's reference).
 * So 13, the larger: an upper bound.
 */
export const GENERATED_NAME_SUFFIX_MAX = 13;

/**
 * The most characters a name CloudFormation generates for resource `logicalId` of a stack whose name
 * has at most `stackName` characters: `<stack name>-<logical id>-<suffix>` (a stack name's `--` are
 * made `-`: never longer).
 */
export const generatedNameMaxLength = (stackName: number, logicalId: string): number => stackName + 1 + logicalId.length + 1 + GENERATED_NAME_SUFFIX_MAX;

/** CloudFormation's limit on a stack's name. */
const MAX_STACK_NAME = 128;

/**
 * A stack's name as CloudFormation gives it and its most characters: its own, known at synth; a
 * nested stack's, generated from its parent's and its resource's logical id; undefined when a part
 * is not known at synth.
 */
export function stackNameBound(stack: Stack): { name: string; max: number } | undefined {
  const parent = stack.nestedStackParent;
  const resource = stack.nestedStackResource;
  if (!parent || !resource) return Token.isUnresolved(stack.stackName) ? undefined : { name: stack.stackName, max: stack.stackName.length };
  const outer = stackNameBound(parent);
  const logicalId: unknown = parent.resolve(resource.logicalId);
  if (!outer || typeof logicalId !== 'string') return undefined;
  return { name: `${outer.name}-${logicalId}-<suffix>`, max: Math.min(MAX_STACK_NAME, generatedNameMaxLength(outer.max, logicalId)) };
}

/**
 * Warns at synth, on `scope`, when the leases table `table`, named by CloudFormation, may get a name
 * over MAX_PLAIN_CLIENT_ID_TABLE characters: its workers' client ids would then hold a hash of the
 * name, which the grant cannot compute at synth (it names the plain form), so IoT Core refuses their
 * connections and they poll. Judged at synth, after any logical id override, when the stack's name
 * (a nested stack's: its parent's and its logical id) and the table's logical id are known then.
 */
export function warnOfLongGeneratedName(scope: IConstruct, table: IConstruct): void {
  scope.node.addValidation({
    validate: () => {
      const stack = Stack.of(table);
      const stackName = stackNameBound(stack);
      const logicalId: unknown = stack.resolve((table.node.defaultChild as CfnElement).logicalId);
      if (!stackName || typeof logicalId !== 'string') return [];
      const max = generatedNameMaxLength(stackName.max, logicalId);
      if (max <= MAX_PLAIN_CLIENT_ID_TABLE) return [];
      // a warning: the fix for a deployed stack renames, so replaces, the tables
      Annotations.of(scope).addWarningV2(
        '@conclave/cdk:generatedTableNameTooLong',
        `the leases table's name is generated by CloudFormation, ${stackName.name}-${logicalId}-<suffix>: up to ${max} characters. With the push path, a name over ${MAX_PLAIN_CLIENT_ID_TABLE} characters gives workers client ids with its hash (conclave-:sha256:...:), which grantWorker cannot name, so their push connections are refused and they poll. Give the tables names: tablePrefix (at most ${MAX_PLAIN_CLIENT_ID_TABLE - defaultTableNames('').leases.length} characters) or tableNames.leases; on a stack already deployed, naming the tables replaces the tables (their leases and candidates are lost): turn the push path off instead (push: false), or keep polling`,
      );
      return [];
    },
  });
}
