/**
 * A policy document's size as IAM counts it (characters without white space), from the document
 * as CloudFormation would get it: its joins resolved, pseudo parameters given stand-in values
 * (account 123456789012, us-east-1) and a reference to a resource a stand-in of fixed length. Used
 * by grantWorker's check of the role it grants (infra/grants.ts), by bench/scale-iam.ts and by the
 * infra tests, so the three count alike.
 */

/** IAM's quotas on a role's (a user's, a group's) identity policies (IAM and AWS STS quotas). */
export const IAM_POLICY_LIMITS = {
  /** A role's inline policies together. */
  inlineChars: 10_240,
  /** A user's inline policies together. */
  userInlineChars: 2_048,
  /** A group's inline policies together. */
  groupInlineChars: 5_120,
  /** One managed policy. */
  managedChars: 6_144,
  /** Managed policies attached to a role: the default quota (more on request). */
  managedPerRole: 10,
  /** Managed policies attached to a user: the default quota (20 at most, on request). */
  managedPerUser: 10,
  /** Managed policies attached to a group. */
  managedPerGroup: 10,
} as const;

const PSEUDO: Readonly<Record<string, string>> = { 'AWS::Partition': 'aws', 'AWS::Region': 'us-east-1', 'AWS::AccountId': '123456789012', 'AWS::URLSuffix': 'amazonaws.com' };

/**
 * The template's Fn::Join and pseudo-parameter Refs as strings; a Ref to a resource becomes 40
 * characters, an Fn::GetAtt 80 (a table's ARN in a long Region and a long name is about 80).
 */
export function resolveForSize(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(resolveForSize);
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if ('Ref' in o) return PSEUDO[String(o['Ref'])] ?? 'x'.repeat(40);
    if ('Fn::GetAtt' in o) return 'x'.repeat(80);
    if ('Fn::Join' in o) {
      const [sep, parts] = o['Fn::Join'] as [string, unknown[]];
      return parts.map((p) => String(resolveForSize(p))).join(sep);
    }
    return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, resolveForSize(x)]));
  }
  return v;
}

/** Characters of a template's policy document as IAM counts them: resolved (resolveForSize), without white space. */
export const policyChars = (doc: unknown): number => JSON.stringify(resolveForSize(doc)).replace(/\s/g, '').length;
