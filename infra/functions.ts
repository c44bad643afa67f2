/**
 * One function of lib/wiring.ts as Lambda runs it: the pre-built code (infra/assets.ts), the
 * wiring's memory and timeout, its own role and log group.
 */
import { Duration, type RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { wiring, type FunctionName, type FunctionWiring } from '../lib/wiring.js';
import { acknowledgeFinding } from './nag.js';
import { ARCHITECTURE, ASSET_HANDLER, functionCode, RUNTIME, type AssetName } from './assets.js';

/** `candidateStream` → `CandidateStream`: the construct ids (and so logical ids) of a function's resources. */
export const pascal = (s: string): string => s[0]!.toUpperCase() + s.slice(1);

export interface ConclaveFunctionOptions {
  readonly environment: Record<string, string>;
  readonly removalPolicy: RemovalPolicy;
  readonly logRetention: logs.RetentionDays;
  readonly encryptionKey: kms.IKey | undefined;
  /** What Lambda does with a recursive loop through the function (its own queue). @default Lambda's: Terminate */
  readonly recursiveLoop?: lambda.RecursiveLoop;
}

export function conclaveFunction(scope: Construct, name: FunctionName, options: ConclaveFunctionOptions): lambda.Function {
  return builtFunction(scope, name, wiring[name], options);
}

/** What a function is built from: lib/wiring.ts's declaration, or an optional function's (lib/discovery/wiring.ts). */
export type FunctionDeclaration = Pick<FunctionWiring, 'entry' | 'timeoutSeconds' | 'memoryMb' | 'reservedConcurrency'>;

/** A function of pre-built code (infra/assets.ts) as `w` declares it, with its own role and log group. */
export function builtFunction(scope: Construct, name: AssetName, w: FunctionDeclaration, options: ConclaveFunctionOptions): lambda.Function {
  const id = pascal(name);
  // Its own role and log group: least privilege per function, and no AWSLambdaBasicExecutionRole (logs:* on *).
  const role = new iam.Role(scope, `${id}Role`, { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'), description: `Conclave ${name} function` });
  const logGroup = new logs.LogGroup(scope, `${id}Logs`, { retention: options.logRetention, removalPolicy: options.removalPolicy, ...(options.encryptionKey ? { encryptionKey: options.encryptionKey } : {}) });
  logGroup.grantWrite(role);
  const fn = new lambda.Function(scope, id, {
    description: `Conclave ${name} (${w.entry})`,
    code: functionCode(name),
    handler: ASSET_HANDLER,
    runtime: RUNTIME,
    architecture: ARCHITECTURE,
    memorySize: w.memoryMb,
    timeout: Duration.seconds(w.timeoutSeconds),
    role,
    logGroup,
    environment: options.environment,
    ...(w.reservedConcurrency !== undefined ? { reservedConcurrentExecutions: w.reservedConcurrency } : {}),
    ...(options.recursiveLoop ? { recursiveLoop: options.recursiveLoop } : {}),
  });
  // an aws-cdk-lib newer than the one a release is tested with knows a newer Node.js than RUNTIME
  // (2.278: Node.js 26), and cdk-nag asks for it: the bundles run on the runtime they are built and
  // tested for, and a release moves them on
  acknowledgeFinding(fn, 'AwsSolutions-L1', `Conclave's functions run on ${RUNTIME.name}, the runtime their bundles are built and tested for; a release of @conclave/cdk moves them to a newer one.`);
  return fn;
}
