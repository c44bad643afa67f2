/**
 * Multi-Region strong consistency (MRSC, DynamoDB global tables): the option's shape and the
 * checks that need the stack.
 */
import { Stack, Token } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import type { FieldIssue } from '../lib/schemas/validation.js';

/**
 * The Regions of a Conclave with multi-Region strong consistency (ConclaveProps `regions`).
 * DynamoDB runs an MRSC global table in exactly three Regions of one Region set: three
 * `replicas`, or two `replicas` and a `witness`.
 */
export interface ConclaveRegions {
  /**
   * The Regions holding a replica of each table, e.g. `['us-east-1', 'us-east-2', 'us-west-2']`:
   * three, or two with a `witness`. The stack of the `Conclave` must be in one of them; each of
   * the others needs a `ConclaveReplica` (or `ConclaveReplicaStack`).
   */
  readonly replicas: readonly string[];
  /**
   * A third Region that takes part in every write's quorum but holds no table to read or write:
   * no functions run there and workers cannot use it. It must not be one of `replicas`.
   * @default no witness: three replicas
   */
  readonly witness?: string;
}

/**
 * What the stack must be for `regions` (the option's own shape is settings.ts's RegionsSchema):
 * an explicit Region, one of the replicas (the tables are created there and replicated to the
 * others). The issues name `field` (e.g. `regions`).
 */
export function regionIssues(scope: IConstruct, regions: ConclaveRegions, field: string): FieldIssue[] {
  const here = Stack.of(scope).region;
  if (Token.isUnresolved(here)) {
    return [
      {
        field,
        message: `needs a stack with an explicit Region, one of the replicas (env: { region: '${regions.replicas[0]}' }): the tables are created in the stack's Region and replicated to the others`,
      },
    ];
  }
  if (!regions.replicas.includes(here)) {
    return [
      {
        field: `${field}.replicas`,
        message: `must include this stack's Region, ${here}, where the tables are created (${regions.witness === here ? 'it is the witness, which holds no table' : `replicas: ${regions.replicas.join(', ')}`}); or deploy the stack to one of the replicas' Regions`,
      },
    ];
  }
  return [];
}
