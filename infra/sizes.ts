/**
 * The sizes AWS checks at deploy time, measured at synth: a function's environment (Lambda: 4 KB)
 * and a rule's event pattern (EventBridge: 2,048 characters, a quota raisable to 4,096). A value
 * CloudFormation fills in at deploy time (a table's generated name, an ARN, the account) counts at
 * the most characters it can have, so a template measured within a limit deploys within it.
 */
import { CfnResource, Stack, Token } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { generatedNameMaxLength, stackNameBound } from './push.js';

/** Lambda's limit on a function's environment variables, all of them, in bytes. */
export const MAX_ENVIRONMENT_BYTES = 4096;
/** EventBridge's limit on an event pattern, in characters: the default quota, and the most it can be raised to. */
export const EVENT_PATTERN_QUOTA = { default: 2048, max: 4096 } as const;

/** The most characters of a Region's code (the longest today, us-isof-south-1, has 15). */
const MAX_REGION = 20;
/** The most characters of a partition (aws-us-gov: 10). */
const MAX_PARTITION = 16;
/** A DynamoDB table's name: at most 255 characters. */
const MAX_TABLE_NAME = 255;
/** A Cloud Map service's id (srv- and 16 characters), with room to spare. */
const MAX_SERVICE_ID = 64;
/** An id CloudFormation returns for a resource this file does not know: as long as a table's name. */
const MAX_OTHER = 255;

/** The most characters the name of the table `logicalId` of `stack` can have: the name given, or the one CloudFormation generates. */
function tableNameMax(stack: Stack, resource: CfnResource | undefined, logicalId: string): number {
  const given: unknown = resource && stack.resolve((resource as unknown as { tableName?: unknown }).tableName);
  if (typeof given === 'string') return given.length;
  const stackName = stackNameBound(stack);
  return Math.min(MAX_TABLE_NAME, generatedNameMaxLength(stackName?.max ?? 128, logicalId));
}

/** `value` (resolved in `stack`) with each CloudFormation intrinsic in it replaced by a string of the most characters its value can have. */
function stretched(stack: Stack, value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => stretched(stack, v));
  if (value === null || typeof value !== 'object') return value;
  const o = value as Record<string, unknown>;
  const keys = Object.keys(o);
  const resourceOf = (id: string) => stack.node.findAll().find((c): c is CfnResource => CfnResource.isCfnResource(c) && stack.resolve(c.logicalId) === id);
  const x = (n: number) => 'x'.repeat(n);
  if (keys.length === 1 && keys[0] === 'Ref' && typeof o['Ref'] === 'string') {
    const ref = o['Ref'];
    if (ref === 'AWS::AccountId') return x(12);
    if (ref === 'AWS::Region') return x(MAX_REGION);
    if (ref === 'AWS::Partition') return x(MAX_PARTITION);
    const r = resourceOf(ref);
    if (r && r.cfnResourceType.startsWith('AWS::DynamoDB::')) return x(tableNameMax(stack, r, ref));
    return x(MAX_OTHER);
  }
  if (keys.length === 1 && keys[0] === 'Fn::GetAtt' && Array.isArray(o['Fn::GetAtt'])) {
    const [id, attribute] = o['Fn::GetAtt'] as [string, string];
    const r = resourceOf(id);
    if (r && r.cfnResourceType.startsWith('AWS::DynamoDB::') && attribute === 'Arn') {
      const region = Token.isUnresolved(stack.region) ? MAX_REGION : stack.region.length;
      return x(`arn::dynamodb::${'0'.repeat(12)}:table/`.length + MAX_PARTITION + region + tableNameMax(stack, r, id));
    }
    if (r && r.cfnResourceType === 'AWS::ServiceDiscovery::Service' && attribute === 'Id') return x(MAX_SERVICE_ID);
    return x(MAX_OTHER);
  }
  if (keys.length === 1 && keys[0] === 'Fn::Join' && Array.isArray(o['Fn::Join'])) {
    const [sep, parts] = o['Fn::Join'] as [string, unknown[]];
    return parts.map((p) => stretched(stack, p)).join(sep);
  }
  if (keys.length === 1 && keys[0]!.startsWith('Fn::')) return x(MAX_OTHER);
  return Object.fromEntries(keys.map((k) => [k, stretched(stack, o[k])]));
}

/** The most bytes `value` (tokens in it, as `scope`'s stack resolves them) has as JSON once deployed. */
export function deployedJsonBytes(scope: IConstruct, value: unknown): number {
  const stack = Stack.of(scope);
  return Buffer.byteLength(JSON.stringify(stretched(stack, stack.resolve(value))), 'utf8');
}
