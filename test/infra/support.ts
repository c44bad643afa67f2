import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArnFormat, Validations, type App, type CfnResource, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import type { TableRole } from '../../infra/access.js';
import { checkedApp } from '../../infra/app/app.js';
import type { Conclave } from '../../infra/conclave.js';
import type { FunctionName } from '../../lib/wiring.js';
import { buildFunctions } from '../../scripts/build-functions.js';

export interface Synthesized<S extends Stack> {
  app: App;
  stack: S;
  template: Template;
  /** cdk.out/validation-report.json: cdk-nag's findings (none unacknowledged, or synth would have thrown). */
  report: ValidationReport;
  cleanup(): void;
}

/**
 * The functions' code, built from the sources into build/assets where the construct looks for it
 * (what `npm run build` does before a synth). Call it in a `beforeAll` of every file that creates
 * a Conclave: about half a second, and a bundle whose bytes did not change is not rewritten.
 */
export const buildAssets = async (): Promise<void> => {
  await buildFunctions();
};

/**
 * Builds a stack in an app checked as `cdk synth` checks it (cdk-nag AwsSolutions registered)
 * and synthesizes it into a temporary directory. Synth throws on any unacknowledged finding, unless
 * `expectFindings` (the report then holds them).
 */
export function synth<S extends Stack>(build: (app: App) => S, options: { expectFindings?: boolean } = {}): Synthesized<S> {
  const outdir = mkdtempSync(join(tmpdir(), 'conclave-cdk-'));
  const app = checkedApp({ outdir });
  const stack = build(app);
  let failed = false;
  try {
    app.synth();
  } catch (e) {
    // expectFindings: the findings are what the test reads (from the report); anything else still fails
    if (!options.expectFindings || !existsSync(join(outdir, 'validation-report.json'))) throw e;
    failed = true;
  }
  return {
    app,
    stack,
    // after failed checks, the template as written (fromStack would synthesize, and fail, again)
    template: failed ? Template.fromJSON(JSON.parse(readFileSync(join(outdir, stack.templateFile), 'utf8'))) : Template.fromStack(stack),
    report: JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as ValidationReport,
    cleanup: () => rmSync(outdir, { recursive: true, force: true }),
  };
}

/** What `fn` threw, or undefined when it returned: for a test that reads the error's fields. */
export function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
}

export interface ValidationReport {
  pluginReports: {
    pluginName: string;
    conclusion: string;
    violations?: { ruleName: string; violatingConstructs: { constructPath: string }[] }[];
    suppressedViolations?: { ruleName: string; acknowledgedId: string; acknowledgedAt: string; reason: string; violatingConstructs: { constructPath: string }[] }[];
  }[];
}

/** Findings nobody acknowledged, as `rule path`. */
export const unacknowledged = (r: ValidationReport): string[] =>
  r.pluginReports.flatMap((p) => (p.violations ?? []).flatMap((v) => v.violatingConstructs.map((c) => `${v.ruleName} ${c.constructPath}`)));

/** Acknowledged findings: where the acknowledgement was made, its id and its reason. */
export const acknowledged = (r: ValidationReport): { at: string; id: string; reason: string }[] => {
  const seen = new Map<string, { at: string; id: string; reason: string }>();
  for (const v of r.pluginReports.flatMap((p) => p.suppressedViolations ?? [])) seen.set(`${v.acknowledgedAt} ${v.acknowledgedId}`, { at: v.acknowledgedAt, id: v.acknowledgedId, reason: v.reason });
  return [...seen.values()];
};

/**
 * Findings acknowledged in construct metadata (Validations.ACKNOWLEDGED_RULES_METADATA_KEY, which
 * cdk-nag reads; infra/nag.ts writes it for finding ids aws-cdk-lib 2.258 cannot take), under `root`.
 */
export function metadataAcknowledgements(root: IConstruct): { at: string; id: string; reason: string }[] {
  return root.node.findAll().flatMap((c) =>
    c.node.metadata.filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY).flatMap((m) => Object.entries(m.data as Record<string, string>).map(([id, reason]) => ({ at: c.node.path, id, reason }))),
  );
}

export const logicalId = (stack: Stack, c: IConstruct): string => stack.getLogicalId(c.node.defaultChild as CfnResource);
export const getAtt = (id: string, attr = 'Arn') => ({ 'Fn::GetAtt': [id, attr] });

export interface Statement {
  Effect: string;
  Action: string[];
  Resource: unknown[];
  Condition?: Record<string, Record<string, unknown>>;
}

/** Every statement of every policy attached to the role (inline policies in AWS::IAM::Policy). */
export function statementsOf(template: Template, roleId: string): Statement[] {
  const policies = Object.values(template.findResources('AWS::IAM::Policy')).filter((p) =>
    (p['Properties'].Roles as unknown[]).some((r) => JSON.stringify(r) === JSON.stringify({ Ref: roleId })),
  );
  return policies.flatMap((p) =>
    (p['Properties'].PolicyDocument.Statement as Record<string, unknown>[]).map((s) => ({
      ...(s as unknown as Statement),
      Action: ([] as string[]).concat(s['Action'] as string | string[]),
      Resource: ([] as unknown[]).concat(s['Resource']),
    })),
  );
}

/** The actions a role may take on `resource`, sorted. */
export function actionsOn(statements: Statement[], resource: unknown): string[] {
  const key = JSON.stringify(resource);
  return [...new Set(statements.filter((s) => s.Resource.some((r) => JSON.stringify(r) === key)).flatMap((s) => s.Action))].sort();
}

/** Logical ids of what the construct made, for comparing references in the template. */
export function ids(stack: Stack, c: Conclave) {
  return {
    table: (r: TableRole) => logicalId(stack, c.tables[r]),
    fn: (n: FunctionName) => logicalId(stack, c.functions[n]),
    role: (n: FunctionName) => logicalId(stack, c.functions[n].role!),
    dlq: (n: FunctionName) => logicalId(stack, c.deadLetterQueues[n]!),
    timerQueue: logicalId(stack, c.timerQueue),
  };
}

/**
 * The rules of `template` whose targets dead-letter to a queue encrypted with the key `keyId`, and
 * the `aws:SourceArn` patterns for which the key's policy lets EventBridge (events.amazonaws.com)
 * encrypt (kms:GenerateDataKey and kms:Decrypt): EventBridge writes a rule's dead letters as
 * itself, not as a role CDK could grant (aws-cdk issue 20804).
 */
export function eventBridgeDeadLetterKeys(template: Template, keyId: string): { rules: string[]; allowedSourceArns: unknown[] } {
  const resources = template.toJSON()['Resources'] as Record<string, { Type: string; Properties: Record<string, any> }>;
  const encrypted = (queue: unknown) => {
    const id = (queue as { 'Fn::GetAtt'?: [string, string] })['Fn::GetAtt']?.[0];
    return id !== undefined && JSON.stringify(resources[id]?.Properties['KmsMasterKeyId']) === JSON.stringify({ 'Fn::GetAtt': [keyId, 'Arn'] });
  };
  const rules = Object.entries(resources)
    .filter(([, r]) => r.Type === 'AWS::Events::Rule' && (r.Properties['Targets'] as { DeadLetterConfig?: { Arn: unknown } }[] | undefined)?.some((x) => x.DeadLetterConfig && encrypted(x.DeadLetterConfig.Arn)))
    .map(([id]) => id)
    .sort();
  const statements = (resources[keyId]!.Properties['KeyPolicy'].Statement as { Effect: string; Principal?: { Service?: unknown }; Action: string | string[]; Condition?: Record<string, Record<string, unknown>> }[]).filter(
    (st) => st.Effect === 'Allow' && JSON.stringify(st.Principal?.Service) === '"events.amazonaws.com"' && ['kms:GenerateDataKey', 'kms:Decrypt'].every((a) => ([] as string[]).concat(st.Action).includes(a)),
  );
  return { rules, allowedSourceArns: statements.flatMap((st) => ([] as unknown[]).concat(st.Condition?.['ArnLike']?.['aws:SourceArn'] ?? st.Condition?.['ArnEquals']?.['aws:SourceArn'] ?? [])) };
}

/** Every rule of `stack`'s account and region, as an `aws:SourceArn` pattern in its template. */
export const anyRuleOf = (stack: Stack): unknown => stack.resolve(stack.formatArn({ service: 'events', resource: 'rule', resourceName: '*', arnFormat: ArnFormat.SLASH_RESOURCE_NAME }));
