/**
 * Values CloudFormation cannot give a template, read when the stack deploys: one AWS SDK call by
 * aws-cdk-lib's AwsCustomResource (the IoT Core data endpoint, infra/push.ts; a replica's stream
 * ARN, infra/replica.ts).
 */
import { Stack, Validations, type RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as cr from 'aws-cdk-lib/custom-resources';
import type { Construct } from 'constructs';

export interface DeployTimeLookupOptions {
  /** The custom resource's type, `Custom::…`. */
  readonly resourceType: string;
  /** The call, made when the stack is created and at each update (it must change nothing). */
  readonly call: cr.AwsSdkCall;
  /** What the call needs, on what. */
  readonly statements: iam.PolicyStatement[];
  /** What the lookup is, for the provider function's role and its cdk-nag acknowledgement, e.g. `the IoT Core endpoint lookup`. */
  readonly what: string;
  /** The provider's role's description, when this lookup creates the provider. */
  readonly roleDescription: string;
  readonly removalPolicy: RemovalPolicy;
  readonly logRetention: logs.RetentionDays;
  readonly encryptionKey: kms.IKey | undefined;
}

/**
 * One SDK call at deploy time, on the Lambda runtime's own SDK (installLatestAwsSdk: false: no
 * download at deploy time), by aws-cdk-lib's one AwsCustomResource function per stack. When this
 * lookup creates that function, it gets a role (`<id>LookupRole`) and a log group
 * (`<id>LookupLogs`) of its own, as Conclave's functions do (no AWSLambdaBasicExecutionRole);
 * a later lookup in the same stack uses that function as it is.
 */
export function deployTimeLookup(scope: Construct, id: string, options: DeployTimeLookupOptions): cr.AwsCustomResource {
  // the stack's one provider function, if another AwsCustomResource made it first: ours uses it as it is
  const providerId = `AWS${cr.AwsCustomResource.PROVIDER_FUNCTION_UUID.replace(/-/g, '')}`;
  const shared = Stack.of(scope).node.tryFindChild(providerId) !== undefined;
  let own: { role: iam.Role; logGroup: logs.LogGroup } | undefined;
  if (!shared) {
    const role = new iam.Role(scope, `${id}LookupRole`, { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'), description: options.roleDescription });
    const logGroup = new logs.LogGroup(scope, `${id}LookupLogs`, { retention: options.logRetention, removalPolicy: options.removalPolicy, ...(options.encryptionKey ? { encryptionKey: options.encryptionKey } : {}) });
    logGroup.grantWrite(role);
    own = { role, logGroup };
  }
  const lookup = new cr.AwsCustomResource(scope, id, {
    resourceType: options.resourceType,
    onUpdate: options.call, // onCreate is the same call; every update looks again
    policy: cr.AwsCustomResourcePolicy.fromStatements(options.statements),
    installLatestAwsSdk: false,
    ...(own ?? {}),
  });
  const provider = Stack.of(scope).node.tryFindChild(providerId);
  if (!shared && provider) {
    // newer aws-cdk-lib runs it on the newest Node.js (no finding); 2.258, the floor of the peer range, on Node.js 22
    Validations.of(provider).acknowledge({
      id: 'AwsSolutions::AwsSolutions-L1',
      reason: `aws-cdk-lib's AwsCustomResource provider (${options.what}): aws-cdk-lib chooses its runtime, not Conclave, and it runs only while the stack deploys.`,
    });
  }
  return lookup;
}
