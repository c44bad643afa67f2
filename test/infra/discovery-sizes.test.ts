/**
 * leaderDiscovery.leaseNames go into the discovery rule's event pattern and the function's
 * environment, whose sizes AWS checks only at deploy time (a review, 2026-12-06, seventh: 150 names
 * synthesized, and the deploy failed). Measured at synth as they deploy: over Lambda's 4 KB,
 * refused naming the field; over EventBridge's default 2,048 characters, a warning.
 */
import { App, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as servicediscovery from 'aws-cdk-lib/aws-servicediscovery';
import { beforeAll, describe, expect, it } from 'vitest';
import { Conclave } from '../../infra/conclave.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { buildAssets, logicalId, thrown } from './support.js';

beforeAll(buildAssets);

/** `n` lease names of 25 characters. */
const many = (n: number) => Array.from({ length: n }, (_, i) => `orders-service-shard-${String(i).padStart(4, '0')}`);

/** A Conclave (tablePrefix acme, in eu-west-1) whose discovery follows `leaseNames` in Cloud Map. */
function build(leaseNames: string[]) {
  const stack = new Stack(new App(), 'Disc', { env: { region: 'eu-west-1' } });
  const ns = new servicediscovery.HttpNamespace(stack, 'Ns', { name: 'conclave' });
  const c = new Conclave(stack, 'C', { tablePrefix: 'acme', leaderDiscovery: { leaseNames, cloudMap: { namespace: ns } } });
  return { stack, c };
}

/**
 * The template's `value` as JSON, each value CloudFormation fills in written at its most characters
 * (the test's own count): the account 12, the leases table's ARN with a partition of 16 and an
 * account of 12, the Cloud Map service's id 64; the tables' names as given.
 */
function measured(stack: Stack, c: Conclave, value: unknown): number {
  const leases = logicalId(stack, c.tables.leases);
  const service = logicalId(stack, c.leaderDiscovery!.service!);
  const arn = `arn:${'p'.repeat(16)}:dynamodb:eu-west-1:${'1'.repeat(12)}:table/acme-leases`;
  const d = c.leaderDiscovery!;
  const named: [unknown, string][] = [
    [{ Ref: 'AWS::AccountId' }, '1'.repeat(12)],
    [{ 'Fn::GetAtt': [leases, 'Arn'] }, arn],
    [{ 'Fn::GetAtt': [service, 'Id'] }, 's'.repeat(64)],
    [{ Ref: leases }, 'acme-leases'],
    [{ Ref: logicalId(stack, c.tables.identities) }, 'acme-identities'],
    [{ Ref: logicalId(stack, d.table) }, 'acme-discovery'],
  ];
  const text = named.reduce((t, [intrinsic, v]) => t.split(JSON.stringify(intrinsic)).join(JSON.stringify(v)), JSON.stringify(value));
  expect(text).not.toMatch(/"(Ref|Fn::)/);
  return Buffer.byteLength(text);
}

describe('leaderDiscovery.leaseNames too many for AWS', () => {
  it("150 names (the review's): refused naming leaderDiscovery.leaseNames, the limit and the fix", () => {
    const error = thrown(() => build(many(150)));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).fields).toEqual(['leaderDiscovery.leaseNames']);
    expect((error as ValidationError).message).toMatch(/environment of up to \d+ bytes.*over Lambda's limit of 4096 bytes.*leave leaseNames out to follow every lease/);
  });

  it('at the limit: the most names whose environment fits synthesize, one more is refused; the size is the deployed one', () => {
    // the most names that fit, found by trying: the check is exact, not a guessed count
    let n = 110;
    while (n < 400 && thrown(() => build(many(n + 1))) === undefined) n++;
    const { stack, c } = build(many(n));
    const fn = Template.fromStack(stack).toJSON()['Resources'][logicalId(stack, c.leaderDiscovery!.fn)];
    const env = measured(stack, c, fn.Properties.Environment.Variables);
    expect(env).toBeLessThanOrEqual(4096);
    // one more name: `\"orders-service-shard-0000\",` in the JSON of the JSON list, 25 + 5 bytes
    expect(env + 30).toBeGreaterThan(4096);
    const error = thrown(() => build(many(n + 1)));
    expect((error as ValidationError).message).toContain(`environment of up to ${env + 30} bytes`);
  });

  it("over EventBridge's default quota (2,048 characters) but within 4,096: a warning with the pattern's deployed size", () => {
    const { stack, c } = build(many(80));
    const rule = Template.fromStack(stack).toJSON()['Resources'][logicalId(stack, c.leaderDiscovery!.rule)];
    const pattern = measured(stack, c, rule.Properties.EventPattern);
    expect(pattern).toBeGreaterThan(2048);
    const warnings = Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp('discoveryEventPatternSize'));
    expect(warnings.map((w) => String(w.entry.data))).toEqual([expect.stringContaining(`event pattern of up to ${pattern} characters, over EventBridge's default quota of 2048`)]);
    // a few names: neither
    const few = build(many(3));
    expect(Annotations.fromStack(few.stack).findWarning('*', Match.stringLikeRegexp('discoveryEventPatternSize'))).toEqual([]);
  });
});
