/**
 * cdk-nag findings the construct answers for itself: the wildcards its own grants need, each
 * acknowledged where it arises, by its exact finding id, with the reason (cdk-nag is not a
 * dependency of @conclave/cdk: an app that does not run it sees only construct metadata).
 */
import { Stack, Validations } from 'aws-cdk-lib';
import type { Construct, IConstruct } from 'constructs';

/**
 * Acknowledges one cdk-nag finding, by its exact id (`AwsSolutions-IAM5[Resource::arn:…]`), on
 * `scope` and everything under it: the acknowledged-rules metadata entry cdk-nag 3 reads
 * (Validations.ACKNOWLEDGED_RULES_METADATA_KEY). Not `Validations.acknowledge`: aws-cdk-lib 2.258,
 * the floor of the construct's peer range, refuses an id with more than one `::`, and a finding on
 * an ARN has several. cdk-nag then never reports the finding (validation-report.json does not list
 * it); the reason stays in the construct's metadata (manifest.json).
 */
export function acknowledgeFinding(scope: IConstruct, id: string, reason: string): void {
  scope.node.addMetadata(Validations.ACKNOWLEDGED_RULES_METADATA_KEY, { [id]: reason });
}

/**
 * An ARN as cdk-nag names it in a finding id: the resolved value with each reference flattened to
 * `<LogicalId>` or `<LogicalId.Attribute>` and joins concatenated (cdk-nag's flattenCfnReference;
 * @conclave/cdk does not depend on cdk-nag). Resolved in `scope`'s stack: a role in another stack
 * than the tables sees an import there instead, and must acknowledge its wildcards itself.
 */
export function nagResource(scope: Construct, arn: string): string {
  const visit = (n: unknown): string => {
    if (typeof n === 'string') return n.replace(/\$\{/g, '<').replace(/\}/g, '>');
    const o = (n ?? {}) as Record<string, unknown>;
    if (Array.isArray(o['Fn::Join'])) {
      const [delimiter, items] = o['Fn::Join'] as [string, unknown[]];
      return items.map(visit).join(delimiter);
    }
    if (Array.isArray(o['Fn::GetAtt'])) return `<${visit(o['Fn::GetAtt'][0])}.${visit(o['Fn::GetAtt'][1])}>`;
    if ('Ref' in o) return `<${visit(o['Ref'])}>`;
    return JSON.stringify(n);
  };
  return visit(Stack.of(scope).resolve(arn));
}
