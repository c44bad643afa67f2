/**
 * `regions` and DynamoDB's MRSC Region sets: the three Regions of an MRSC global table (replicas
 * and witness) are all of one set (the DynamoDB API Reference, CreateGlobalTableWitnessGroupMemberAction:
 * US us-east-1, us-east-2, us-west-2; EU eu-west-1, eu-west-2, eu-west-3, eu-central-1; AP
 * ap-northeast-1, ap-northeast-2, ap-northeast-3). Conclave checks it in its own schema, with a
 * ValidationError naming `regions.replicas[i]` or `regions.witness` (before: aws-cdk-lib's
 * TableV2 refused, with an error of its own class naming no Conclave field); aws-cdk-lib's check
 * stays a second line, and agrees on every Region Conclave accepts.
 */
import { App, Stack } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { Conclave, type ConclaveProps } from '../../infra/conclave.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { buildAssets, thrown } from './support.js';

beforeAll(buildAssets);

const SETS = {
  US: ['us-east-1', 'us-east-2', 'us-west-2'],
  EU: ['eu-west-1', 'eu-west-2', 'eu-west-3', 'eu-central-1'],
  AP: ['ap-northeast-1', 'ap-northeast-2', 'ap-northeast-3'],
};
const stackIn = (region: string) => new Stack(new App(), 'S', { env: { region } });
const conclaveIn = (region: string, regions: NonNullable<ConclaveProps['regions']>) => new Conclave(stackIn(region), 'Conclave', { tablePrefix: 'acme', regions });
/** aws-cdk-lib's own MRSC check, on a bare TableV2 (primary: the stack's Region). */
const tableV2In = (region: string, replicas: string[], witness?: string) =>
  new dynamodb.TableV2(stackIn(region), 'T', {
    partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
    multiRegionConsistency: dynamodb.MultiRegionConsistency.STRONG,
    replicas: replicas.map((r) => ({ region: r })),
    ...(witness ? { witnessRegion: witness } : {}),
  });

describe("Conclave's MRSC Region sets", () => {
  it.each(Object.entries(SETS))('accepts three Regions of the %s set, and so does aws-cdk-lib, with each as the primary', (_, set) => {
    for (const primary of set) {
      const [a, b] = set.filter((r) => r !== primary);
      expect(() => conclaveIn(primary, { replicas: [primary, a!, b!] })).not.toThrow();
      expect(() => conclaveIn(primary, { replicas: [primary, a!], witness: b! })).not.toThrow();
      expect(() => tableV2In(primary, [a!, b!])).not.toThrow();
      expect(() => tableV2In(primary, [a!], b!)).not.toThrow();
    }
  });

  const sets = /US \(us-east-1, us-east-2, us-west-2\); EU \(eu-west-1, eu-west-2, eu-west-3, eu-central-1\); AP \(ap-northeast-1, ap-northeast-2, ap-northeast-3\)/;
  const cases: [string, string, NonNullable<ConclaveProps['regions']>, { field: string; message: RegExp }[]][] = [
    ['a replica of another set', 'us-east-1', { replicas: ['us-east-1', 'us-east-2', 'eu-west-1'] }, [{ field: 'regions.replicas[2]', message: /is eu-west-1, of the EU Region set, but regions\.replicas\[0\] is us-east-1, of the US set.*use a Region of the US set \(us-east-1, us-east-2, us-west-2\)/ }]],
    ['a witness of another set', 'us-east-1', { replicas: ['us-east-1', 'us-east-2'], witness: 'eu-west-1' }, [{ field: 'regions.witness', message: /is eu-west-1, of the EU Region set.*use a Region of the US set/ }]],
    ['a witness in no set', 'us-east-1', { replicas: ['us-east-1', 'us-east-2'], witness: 'us-west-1' }, [{ field: 'regions.witness', message: new RegExp(`is us-west-1, in none of DynamoDB's MRSC Region sets, ${sets.source}: use a Region of the US set`) }]],
    ['a primary (the stack\'s Region) in no set', 'ap-south-1', { replicas: ['ap-south-1', 'ap-northeast-1', 'ap-northeast-2'] }, [{ field: 'regions.replicas[0]', message: /is ap-south-1, in none of DynamoDB's MRSC Region sets.*use a Region of the AP set \(ap-northeast-1, ap-northeast-2, ap-northeast-3\), as regions\.replicas\[1\] \(ap-northeast-1\) is/ }]],
    ['three Regions of three sets', 'us-east-1', { replicas: ['us-east-1', 'eu-west-1', 'ap-northeast-1'] }, [
      { field: 'regions.replicas[1]', message: /is eu-west-1, of the EU Region set.*US set/ },
      { field: 'regions.replicas[2]', message: /is ap-northeast-1, of the AP Region set.*US set/ },
    ]],
    ['Regions of another partition', 'us-gov-west-1', { replicas: ['us-gov-west-1', 'us-gov-east-1', 'us-east-1'] }, [
      { field: 'regions.replicas[0]', message: /is us-gov-west-1, in none/ },
      { field: 'regions.replicas[1]', message: /is us-gov-east-1, in none/ },
    ]],
    ['three Regions in no set', 'sa-east-1', { replicas: ['sa-east-1', 'ca-central-1'], witness: 'me-south-1' }, [
      { field: 'regions.replicas[0]', message: /in none.*pick all three Regions from one set/ },
      { field: 'regions.replicas[1]', message: /in none.*pick all three Regions from one set/ },
      { field: 'regions.witness', message: /in none.*pick all three Regions from one set/ },
    ]],
  ];
  it.each(cases)("refuses %s with Conclave's ValidationError naming each Region's field, the set and the fix", (_, here, regions, want) => {
    const error = thrown(() => conclaveIn(here, regions));
    expect(error).toBeInstanceOf(ValidationError);
    const issues = (error as ValidationError).issues;
    expect(issues.map((i) => i.field)).toEqual(want.map((w) => w.field));
    want.forEach((w, i) => expect(issues[i]!.message).toMatch(w.message));
  });

  it('refuses, as aws-cdk-lib does (its check stays a second line), each Region outside the sets it knows', () => {
    expect(() => tableV2In('us-east-1', ['us-east-2'], 'us-west-1')).toThrow(/same region set/);
    expect(() => tableV2In('ap-south-1', ['ap-northeast-1', 'ap-northeast-2'])).toThrow(/not supported for MRSC/);
    expect(() => tableV2In('us-east-1', ['us-east-2', 'eu-west-1'])).toThrow(/same region set/);
  });
});
