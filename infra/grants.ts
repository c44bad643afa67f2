/**
 * IAM from the lists in infra/access.ts and nothing else: each function's access, a worker's, and
 * the key policy CloudWatch Logs needs for a customer-managed key.
 */
import { Annotations, ArnFormat, DefaultTokenResolver, Reference, Stack, StringConcat, Token, TokenComparison, Tokenization, type IPostProcessor, type IResolvable, type IResolveContext } from 'aws-cdk-lib';
import type * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct, type IConstruct } from 'constructs';
import { PUSH_CLIENT_ID_PREFIX, plainPushClientIdPrefix, processTopicPattern, pushClientIdPrefix, pushSubscription } from '../lib/schemas/push.js';
import { SESSION_COMPONENT } from '../lib/schemas/session-partition.js';
import type { FunctionName } from '../lib/wiring.js';
import { FUNCTION_ACCESS, KEY_READ, KEY_WRITE, WAKE_PUBLISH, WORKER_ACCESS, WORKER_PUSH_ACCESS, WORKER_TRANSACTION_ONLY, WORKER_WRITES, type FunctionAccess, type TableAccess, type TableRole, type WriteScope } from './access.js';
import { acknowledgeFinding, nagResource } from './nag.js';
import { allWakeTopics, iotArn, wakeTopicsOf } from './push.js';
import { IAM_POLICY_LIMITS, policyChars } from './policy-size.js';
import type { ConclaveTableRefs } from './tables.js';

/** Every identities partition that holds session rows, as IAM `StringLike` patterns (lib/schemas/session-partition.ts sessionComponent). */
export const SESSION_PARTITIONS = [SESSION_COMPONENT, `${SESSION_COMPONENT}:*`] as const;

/** What the grants are on. */
export interface GrantTargets {
  /** The tables in the grant's Region: the tables themselves, or their replicas there. */
  readonly tables: ConclaveTableRefs;
  readonly encryptionKey: kms.IKey | undefined;
  readonly eventBus: events.IEventBus;
  readonly timerQueue: sqs.IQueue;
  /**
   * The push path, when the deployment has one: wake topics are named after the leases table (its
   * name as given, when it is known at synth). @default none: no IoT grants
   */
  readonly push?: { readonly leasesTable: string } | undefined;
}

/** Exactly FUNCTION_ACCESS: the actions each function calls, on the tables it calls them on. */
export function grantFunctionAccess(name: FunctionName, fn: lambda.IFunction, on: GrantTargets): void {
  const access: (typeof FUNCTION_ACCESS)[FunctionName] = FUNCTION_ACCESS[name];
  const tables: TableAccess = access.tables;
  for (const role of Object.keys(tables) as TableRole[]) {
    const actions = tables[role];
    // the table's ARN only: TableV2.grant would add its indexes (`/index/*`) too
    if (actions?.length) iam.Grant.addToPrincipal({ grantee: fn, actions: [...actions], resourceArns: [on.tables[role].tableArn] });
  }
  if (on.encryptionKey) {
    on.encryptionKey.grant(fn, ...KEY_READ, ...KEY_WRITE);
    acknowledgeKeyWildcards(fn.role!, 'the KMS actions aws-cdk-lib grants for a key-encrypted table and queue.');
  }
  for (const q of (access as FunctionAccess).indexQueries ?? []) {
    iam.Grant.addToPrincipal({ grantee: fn, actions: ['dynamodb:Query'], resourceArns: [`${on.tables[q.table].tableArn}/index/${q.index}`] });
  }
  if (access.publishEvents) on.eventBus.grantPutEventsTo(fn);
  if (access.scheduleTimer) on.timerQueue.grantSendMessages(fn);
  if (access.publishWakes && on.push) {
    // every lease's wakes, both topic forms (lib/schemas/push.ts): the function wakes whatever lease changed
    const topics = allWakeTopics(on.push.leasesTable).map((t) => iotArn(fn, 'topic', t));
    iam.Grant.addToPrincipal({ grantee: fn, actions: [...WAKE_PUBLISH], resourceArns: topics });
    acknowledgeWildcards(fn.role!, topics, `iot:Publish on this deployment's wake topics only (conclave/<leases table>/lease/..., .../lease-hash/... and .../process/...): the function wakes the followers of whichever lease changed, on its topic and on its candidates' processes' topics.`);
  }
}

/**
 * The push path's grants for a worker (WORKER_PUSH_ACCESS): its connection with a client id of this
 * deployment (pushClientIdPrefix of the leases table: `conclave-<leases table>:…`), its subscription
 * to every wake of the deployment, and Receive and Publish on the wake topics of its own leases
 * (`leaseNames`, the same scope as the tables'; undefined: every lease). A worker granted every
 * lease may also subscribe to a process topic (`…/process/…`: PushChannel's `session`), and
 * receive and publish on them; IAM names a role, not a process, so the grant is the deployment's
 * process topics, not the one of the connecting process — a process topic carries nothing its role
 * could not already receive on the lease topics (every lease's wakes).
 */
export function grantWorkerPush(grantee: iam.IGrantable, leaseNames: readonly string[] | undefined, on: { readonly scope: Construct; readonly leasesTable: string }): iam.Grant {
  const arn = (kind: Parameters<typeof iotArn>[1], name: string) => iotArn(on.scope, kind, name);
  const clients = [arn('client', `${clientIdPrefixOf(on.leasesTable)}*`)];
  const topics = wakeTopicsOf(on.leasesTable, leaseNames).map((t) => arn('topic', t));
  const grants = [
    iam.Grant.addToPrincipal({ grantee, actions: [...WORKER_PUSH_ACCESS.client], resourceArns: clients }),
    iam.Grant.addToPrincipal({ grantee, actions: [...WORKER_PUSH_ACCESS.topicfilter], resourceArns: [arn('topicfilter', pushSubscription(on.leasesTable)), ...(leaseNames ? [] : [arn('topicfilter', processTopicPattern(on.leasesTable))])] }),
    // the topics of many leases in statements of their own: a statement is never split over policies
    ...chunked(topics).map((part) => iam.Grant.addToPrincipal({ grantee, actions: [...WORKER_PUSH_ACCESS.topic], resourceArns: part })),
  ];
  // the findings these wildcards raise are this grant's to explain, on the role it adds them to
  const principal = grantee.grantPrincipal;
  if (Construct.isConstruct(principal)) {
    acknowledgeWildcards(principal, clients, `iot:Connect with this deployment's client ids only, ${PUSH_CLIENT_ID_PREFIX}<leases table>:... (PushChannel's default is that prefix and a random uuid, one id per connection, unknown before it connects).`);
    acknowledgeWildcards(principal, topics, `iot:Receive and iot:Publish on this deployment's wake topics (conclave/<leases table>/lease/..., .../lease-hash/... and .../process/...): the worker was granted every lease (allLeases).`);
    if (!leaseNames) acknowledgeWildcards(principal, [arn('topicfilter', processTopicPattern(on.leasesTable))], `iot:Subscribe to a process topic of this deployment (conclave/<leases table>/process/<process>): its Session's id, unknown before the process starts; the worker was granted every lease (allLeases).`);
  }
  return grants.reduce((a, b) => a.combine(b));
}

/**
 * The client id prefix of a deployment, as the grant names it: pushClientIdPrefix of the leases
 * table's name when it is known at synth; with a name CloudFormation picks (a token), its plain
 * form, `conclave-<name>:` (IAM cannot hash a name it only learns at deploy time: a name given as a
 * token is bounded within MAX_PLAIN_CLIENT_ID_TABLE characters, or the construct refused it,
 * tokenLeasesTableIssue; a generated name that long needs tablePrefix or tableNames: docs/deploy.md).
 */
function clientIdPrefixOf(leasesTable: string): string {
  return Token.isUnresolved(leasesTable) ? plainPushClientIdPrefix(leasesTable) : pushClientIdPrefix(leasesTable);
}

/**
 * cdk-nag's AwsSolutions-IAM5 for each wildcard action of KEY_WRITE (`kms:ReEncrypt*`,
 * `kms:GenerateDataKey*`), acknowledged on `scope`; `why` ends the reason. By acknowledgeFinding:
 * the finding id has two `::` (`AwsSolutions-IAM5[Action::kms:ReEncrypt*]`), which
 * `Validations.acknowledge` refuses on aws-cdk-lib 2.258, the floor of the peer range.
 */
export function acknowledgeKeyWildcards(scope: Construct, why: string): void {
  for (const action of KEY_WRITE.filter((a) => a.endsWith('*'))) {
    acknowledgeFinding(scope, `AwsSolutions-IAM5[Action::${action}]`, `${action} on the one customer-managed key only (the resource is the key's ARN): ${why}`);
  }
}

/** cdk-nag's AwsSolutions-IAM5 for each of `arns` with a wildcard, acknowledged on `scope` with `reason`. */
function acknowledgeWildcards(scope: Construct, arns: readonly string[], reason: string): void {
  for (const arn of arns.filter((a) => a.includes('*'))) acknowledgeFinding(scope, `AwsSolutions-IAM5[Resource::${nagResource(scope, arn)}]`, reason);
}

/**
 * WORKER_ACCESS on the tables; with `scope`, each table's partitions are kept to the given keys by
 * `dynamodb:LeadingKeys` (undefined: every partition but those `except` names, as IAM
 * `StringLike` patterns; empty: no access to that table; `like`: the given keys are `StringLike`
 * patterns too, as the shards of a worker's sessions granted every lease); UpdateItem only with the attributes and
 * return values of WORKER_WRITES; with a key, the KMS actions a key-encrypted table needs. On
 * tables with multi-Region strong consistency (`multiRegion`), not WORKER_TRANSACTION_ONLY.
 * DescribeTable is apart: grantDescribeTables.
 */
export function grantWorkerAccess(
  grantee: iam.IGrantable,
  scope: Readonly<Record<TableRole, readonly string[] | undefined>>,
  on: Pick<GrantTargets, 'tables' | 'encryptionKey'> & { readonly multiRegion?: boolean },
  except: Partial<Readonly<Record<TableRole, readonly string[]>>> = {},
  like = false,
): iam.Grant {
  const roles = (Object.keys(WORKER_ACCESS) as TableRole[]).filter((role) => scope[role]?.length !== 0);
  const grants = roles.flatMap((role) => {
    const keys = scope[role];
    // Null = false: the request must name its partition keys, so the ForAllValues test can never pass vacuously
    type Conditions = Record<string, Record<string, unknown>>;
    const excluded = !keys && except[role]?.length ? except[role] : undefined;
    const present: Conditions = keys || excluded ? { Null: { 'dynamodb:LeadingKeys': 'false' } } : {};
    // every partition but the excluded ones (a Deny would also refuse what another grant allows)
    const notLike: Conditions = excluded ? { 'ForAllValues:StringNotLike': { 'dynamodb:LeadingKeys': [...excluded] } } : {};
    const grant = (actions: readonly string[], conditions: Conditions) =>
      iam.Grant.addToPrincipal({ grantee, actions: [...actions], resourceArns: [on.tables[role].tableArn], ...(Object.keys(conditions).length ? { conditions } : {}) });
    // reads, deletes and the fence's condition check: kept to the partitions only
    const transactionOnly: readonly string[] = on.multiRegion ? ((WORKER_TRANSACTION_ONLY as TableAccess)[role] ?? []) : [];
    const others = WORKER_ACCESS[role].filter((a) => a !== 'dynamodb:UpdateItem' && !transactionOnly.includes(a));
    const writes: readonly WriteScope[] = WORKER_WRITES[role];
    // many keys: the same statements once for each part of the list (every request names one
    // partition key, so the parts together allow exactly what the whole list did)
    return (keys ? chunked(keys) : [undefined]).flatMap((part) => {
      const leading: Record<string, unknown> = part ? { 'dynamodb:LeadingKeys': [...part] } : {};
      const equal = like ? {} : leading;
      const patterns: Conditions = like && part ? { 'ForAllValues:StringLike': leading } : {};
      return [
        grant(others, { ...(part && !like ? { 'ForAllValues:StringEquals': leading } : {}), ...patterns, ...notLike, ...present }),
        // writes: also kept to the attributes (and answers) the SDK's writes use, one statement per kind of write
        ...writes.map((w) =>
          grant(['dynamodb:UpdateItem'], {
            'ForAllValues:StringEquals': { ...equal, 'dynamodb:Attributes': [...w.attributes] },
            ...patterns,
            ...notLike,
            ...present,
            ...returnValuesCondition(w.returnValues),
          }),
        ),
      ];
    });
  });
  if (on.encryptionKey) {
    grants.push(on.encryptionKey.grant(grantee, ...KEY_READ, ...KEY_WRITE));
    // as for the push path's wildcards: this grant's findings, acknowledged on the role it adds them to
    const principal = grantee.grantPrincipal;
    if (Construct.isConstruct(principal)) acknowledgeKeyWildcards(principal, 'the KMS actions a key-encrypted table needs, granted by grantWorker.');
  }
  return grants.reduce((a, b) => a.combine(b));
}

/**
 * `dynamodb:ReturnValues` kept to `values`. A request that names no ReturnValues (DynamoDB returns
 * nothing: NONE) carries no such key, and `StringEquals` on a key the request lacks never matches:
 * where NONE is listed the key is tested only if there (`StringEqualsIfExists`, as AWS's own
 * examples test it: "Using IAM policy conditions for fine-grained access control"), so a write that
 * leaves it out is let through; where it is not (a renewal, which reads its row back: ALL_NEW),
 * `StringEquals`, so the request must name one listed. Absent is NONE either way.
 */
function returnValuesCondition(values: readonly string[]): Record<string, Record<string, string[]>> {
  return { [values.includes('NONE') ? 'StringEqualsIfExists' : 'StringEquals']: { 'dynamodb:ReturnValues': [...values] } };
}

/**
 * DescribeTable of `roles`' tables, one statement: the tables' metadata (status, key schema,
 * stream, replicas, approximate size), no row, so no `dynamodb:LeadingKeys` (DescribeTable has no
 * item-level keys); aws-cdk-lib's own table grants (grantReadData, grantWriteData) include it too.
 * The SDK sends it where a table is not found (DynamoDB answers a table still being created as one
 * missing: lib/sdk/options.ts TableWait), so a worker's start-up and getLeader wait for a table
 * being made and reject at once for one that is not there, instead of trying for 60 s; and, with
 * `multiRegion`, once per start-up, to check that the tables are MRSC, not MREC
 * (lib/sdk/multi-region.ts; no DescribeGlobalTable: the SDK sends it only for a table DescribeTable
 * lists no replicas of, and these tables are MRSC, their replicas listed).
 */
export function grantDescribeTables(grantee: iam.IGrantable, roles: readonly TableRole[], on: Pick<GrantTargets, 'tables'>): iam.Grant {
  return iam.Grant.addToPrincipal({ grantee, actions: ['dynamodb:DescribeTable'], resourceArns: roles.map((role) => on.tables[role].tableArn) });
}

/**
 * Characters of lease names (or topic ARNs) one statement names at most. CDK moves statements past
 * a role's inline policy into managed "overflow" policies but never splits a statement, so one
 * statement naming every lease would outgrow IAM's 6,144 characters a managed policy at about 70
 * names; in parts of this size the statements pack into the role's policies. (The
 * `@aws-cdk/aws-iam:minimizePolicies` flag merges statements that differ only in their resources
 * again, but only up to 2,000 characters each, CDK's MAX_MERGE_SIZE; statements whose conditions
 * differ, as the parts of a `dynamodb:LeadingKeys` list do, it never merges.)
 */
export const STATEMENT_LIST_CHARS = 3_000;

/**
 * `items` in consecutive parts of at most STATEMENT_LIST_CHARS characters as a policy counts them
 * (quotes and comma; an unresolved ARN as CDK's own estimate of 150), at least one item a part.
 */
export function chunked(items: readonly string[]): string[][] {
  const parts: string[][] = [];
  let part: string[] = [];
  let chars = 0;
  for (const item of items) {
    const size = (Token.isUnresolved(item) ? 150 : item.length) + 3;
    if (part.length && chars + size > STATEMENT_LIST_CHARS) {
      parts.push(part);
      part = [];
      chars = 0;
    }
    part.push(item);
    chars += size;
  }
  if (part.length || !parts.length) parts.push(part);
  return parts;
}

/** The grants that name a role's leases, as the check's message names them. */
export type LeaseGrant = 'grantWorker' | 'grantGetLeader';

const CHECKED = new WeakMap<IConstruct, Map<LeaseGrant, number>>();

/** The IAM identity a grant adds to: a role, user or group made in this app, or a role imported. */
interface Identity {
  readonly kind: 'role' | 'imported' | 'user' | 'group';
  readonly construct: IConstruct;
}

const KIND_OF: Readonly<Record<string, Identity['kind']>> = { 'AWS::IAM::Role': 'role', 'AWS::IAM::User': 'user', 'AWS::IAM::Group': 'group' };

/** The CloudFormation type of `c` (a CfnResource of any copy of aws-cdk-lib), if it is a resource. */
const cfnTypeOf = (c: IConstruct | undefined): string | undefined => {
  const type = (c as { cfnResourceType?: unknown } | undefined)?.cfnResourceType;
  return typeof type === 'string' ? type : undefined;
};

/**
 * The identity `principal` is, judged by the resource CDK makes for it, not by its class (a role of
 * a second copy of aws-cdk-lib is no instance of this copy's iam.Role): a role, user or group made
 * in this app; the role a LazyRole makes (reading its roleArn makes it); a role imported
 * (Role.fromRoleArn: one inline policy, its child `Policy`, never split over managed policies).
 * Anything else is no identity a grant adds policies to.
 */
function identityOf(principal: iam.IPrincipal): Identity | undefined {
  if (!Construct.isConstruct(principal)) return undefined;
  const kind = KIND_OF[cfnTypeOf(principal.node.defaultChild) ?? ''];
  if (kind) return { kind, construct: principal };
  const p = principal as Partial<iam.IRole> & IConstruct;
  if (typeof p.roleArn !== 'string' || typeof p.addManagedPolicy !== 'function') return undefined;
  const made = p.node.defaultChild;
  if (made && iam.Role.isRole(made)) return { kind: 'role', construct: made };
  return { kind: 'imported', construct: p };
}

/**
 * A reference resolved to the construct it names (its path and attribute), the same from any stack:
 * resolved as CloudFormation gets it, another stack's role is an Fn::ImportValue (a nested stack's,
 * a parameter) and two stacks' roles of one id are both `{ Ref: <same logical id> }`.
 */
class ReferenceMarks extends DefaultTokenResolver {
  constructor() {
    super(new StringConcat());
  }
  override resolveToken(t: IResolvable, context: IResolveContext, post: IPostProcessor): unknown {
    return Reference.isReference(t) ? `<${t.target.node.path}.${t.displayName}>` : super.resolveToken(t, context, post);
  }
}

const referenceMarks = (scope: IConstruct, v: unknown): unknown => Tokenization.resolve(v, { scope, resolver: new ReferenceMarks(), preparing: false });

/** Whether `c` is a role imported into the app (Role.fromRoleArn, fromRoleName): identityOf's `imported`. */
const isImportedRole = (c: IConstruct): boolean => identityOf(c as unknown as iam.IPrincipal)?.kind === 'imported';

/**
 * The role made in this app (its AWS::IAM::Role) that an imported role is: the one its ARN is a
 * reference to (`Role.fromRoleArn(scope, id, role.roleArn)`), or the one whose name (`roleName`)
 * it names, unless the import's ARN is of another account than the role's stack.
 */
function madeRoleOf(imported: IConstruct): iam.CfnRole | undefined {
  const { roleArn, roleName, env } = imported as unknown as iam.IRole;
  const arn = referenceMarks(imported, roleArn);
  const name = Token.isUnresolved(roleName) ? undefined : roleName;
  for (const c of imported.node.root.node.findAll()) {
    if (cfnTypeOf(c) !== 'AWS::IAM::Role') continue;
    const role = c as iam.CfnRole;
    if (arn === `<${role.node.path}.Arn>`) return role;
    const stack = Stack.of(role);
    if (name !== undefined && stack.resolve(role.roleName) === name && Token.compareStrings(env.account, stack.account) !== TokenComparison.DIFFERENT) return role;
  }
  return undefined;
}

/**
 * The constructs that stand for `identity`'s IAM role, user or group in this app, each naming it in
 * a policy's `roles` its own way: the identity; for a role made in the app, every import of it; for
 * an import of a role made in the app, that role (`made`) and its other imports. IAM counts the
 * policies of them all as one role's.
 */
function sameIdentity(identity: Identity): { made: IConstruct | undefined; names: IConstruct[] } {
  const { kind, construct } = identity;
  if (kind === 'user' || kind === 'group') return { made: construct.node.defaultChild, names: [construct] };
  const made = kind === 'role' ? (construct.node.defaultChild as IConstruct) : madeRoleOf(construct);
  if (!made) return { made: undefined, names: [construct] };
  const role = made.node.scope ?? made; // the L2 role, whose roleName is the one its own policies give
  const imports = construct.node.root.node.findAll().filter((c) => c !== construct && c !== role && isImportedRole(c) && madeRoleOf(c) === made);
  return { made, names: [...new Set([construct, role, ...imports])] };
}

/** A policy resource attached to an identity: the L2 policy it belongs to, and its size as IAM counts it. */
interface AttachedPolicy {
  readonly policy: IConstruct;
  readonly chars: number;
}

/**
 * The app's policies attached to `identity`, however they were attached: AWS::IAM::Policy (the
 * grants' default policy, an iam.Policy given `roles`, attachInlinePolicy) and AWS::IAM::ManagedPolicy
 * (CDK's overflow policies, an iam.ManagedPolicy given `roles`) whose Roles, Users or Groups name it,
 * in any stack of the app (referenceMarks: a policy in another stack names the role by an import),
 * by any of the constructs that stand for it (sameIdentity: a role made in the app and its imports).
 * A policy with no statement is never deployed.
 */
function policiesAttachedTo(identity: Identity, standsFor: readonly IConstruct[]): { inline: AttachedPolicy[]; managed: AttachedPolicy[] } {
  const { kind, construct } = identity;
  const prop = kind === 'user' ? 'users' : kind === 'group' ? 'groups' : 'roles';
  const nameOf = (c: IConstruct) => (kind === 'user' ? (c as iam.IUser).userName : kind === 'group' ? (c as iam.IGroup).groupName : (c as iam.IRole).roleName);
  const keys = new Set(standsFor.map((c) => JSON.stringify(referenceMarks(c, nameOf(c)))));
  const found = { inline: [] as AttachedPolicy[], managed: [] as AttachedPolicy[] };
  for (const c of construct.node.root.node.findAll()) {
    const type = cfnTypeOf(c);
    if (type !== 'AWS::IAM::Policy' && type !== 'AWS::IAM::ManagedPolicy') continue;
    const stack = Stack.of(c);
    const names = referenceMarks(c, (c as unknown as Record<string, unknown>)[prop]) as unknown[] | undefined;
    if (!names?.some((n) => keys.has(JSON.stringify(n)))) continue;
    const doc = stack.resolve((c as unknown as { policyDocument: unknown }).policyDocument) as { Statement?: unknown[] } | undefined;
    if (!doc?.Statement?.length) continue;
    found[type === 'AWS::IAM::Policy' ? 'inline' : 'managed'].push({ policy: c.node.scope ?? c, chars: policyChars(doc) });
  }
  return found;
}

/**
 * Fails synth, rather than the deploy, when a role grantWorker or grantGetLeader granted outgrows
 * IAM's quotas (IAM_POLICY_LIMITS: its inline policy, a managed policy, 10 managed policies a role),
 * counted as policyChars counts them once CDK has split the role's policy (its inline policies
 * together, the role's own `inlinePolicies` and any iam.Policy attached to it included, as IAM counts
 * them; the managed policies attached by their `roles` too, policiesAttachedTo); an imported role's one
 * inline policy, which CDK never splits, against the inline limit. The error names the grants, the
 * leases each named for the role, and the fix. A role made in the app and its imports
 * (Role.fromRoleArn of its ARN or its name: sameIdentity) are one role to IAM: their policies are
 * counted together, whichever is granted. A user's or a group's one inline policy, which CDK
 * never splits either, is checked against IAM's smaller limits for them, and its managed policies
 * (its own, and those attached by their `users` or `groups`) against its 10.
 */
export function checkRolePolicySizes(grantee: iam.IGrantable, leaseNames: readonly string[] | undefined, by: LeaseGrant): void {
  const identity = identityOf(grantee.grantPrincipal);
  if (!identity) return;
  const role = identity.construct;
  // users and groups: CDK gives them one inline policy, never split, under smaller limits than a role's
  const kind = identity.kind === 'user' || identity.kind === 'group' ? identity.kind : undefined;
  const imported = identity.kind === 'imported';
  const seen = CHECKED.get(role);
  if (seen) {
    seen.set(by, (seen.get(by) ?? 0) + (leaseNames?.length ?? 0));
    return;
  }
  const granted = new Map<LeaseGrant, number>([[by, leaseNames?.length ?? 0]]);
  CHECKED.set(role, granted);
  role.node.addValidation({
    validate: () => {
      // the role's resource, made in this app: the identity's own, or the one an imported role is
      const { made, names } = sameIdentity(identity);
      const stack = Stack.of(made ?? role);
      const policies = policiesAttachedTo(identity, names);
      // the grants' policy: CDK's default policy of the role, user or group (an imported role's `Policy`)
      const grants = role.node.tryFindChild(imported ? 'Policy' : 'DefaultPolicy');
      const fromGrants = policies.inline.filter((p) => p.policy === grants).reduce((n, p) => n + p.chars, 0);
      // IAM counts a role's inline policies together: the role's own (RoleProps.inlinePolicies) and
      // those attached to it apart from the grants (iam.Policy's `roles`, attachInlinePolicy) too
      const ownInline = !made || kind ? [] : ((stack.resolve((made as iam.CfnRole).policies) as { policyName: string; policyDocument: unknown }[] | undefined) ?? []);
      const own = [...ownInline.map((p) => ({ name: p.policyName, chars: policyChars(p.policyDocument) })), ...policies.inline.filter((p) => p.policy !== grants).map((p) => ({ name: p.policy.node.path, chars: p.chars }))];
      const inlineChars = fromGrants + own.reduce((n, p) => n + p.chars, 0);
      const inlineLimit = kind === 'user' ? IAM_POLICY_LIMITS.userInlineChars : kind === 'group' ? IAM_POLICY_LIMITS.groupInlineChars : IAM_POLICY_LIMITS.inlineChars;
      const allows = kind ? `${inlineLimit} a ${kind}` : `${inlineLimit}`;
      const inlineWhat = own.length
        ? `its inline policies are ${inlineChars} characters (IAM allows ${allows} for them together: ${fromGrants} of grants, the rest ${kind ? 'its' : "the role's"} own: ${own.map((p) => p.name).join(', ')})`
        : `its inline policy is ${inlineChars} characters (IAM allows ${allows})`;
      // managed policies: those CDK split the role's policy into (OverflowPolicy<n>), those attached
      // by their own `roles`, and the role's managedPolicyArns
      const overflow = policies.managed.filter((p) => p.policy.node.scope === made?.node.scope);
      // (a user's or a group's own: UserProps/GroupProps managedPolicies, addManagedPolicy)
      const attached = made ? (stack.resolve((made as iam.CfnRole | iam.CfnUser | iam.CfnGroup).managedPolicyArns) as unknown[] | undefined) : undefined;
      const managed = made ? policies.managed.length + (attached?.length ?? 0) : 0;
      const managedLimit = kind === 'user' ? IAM_POLICY_LIMITS.managedPerUser : kind === 'group' ? IAM_POLICY_LIMITS.managedPerGroup : IAM_POLICY_LIMITS.managedPerRole;
      const largest = Math.max(0, ...overflow.map((p) => p.chars));
      const over = [
        ...(inlineChars > inlineLimit ? [inlineWhat] : []),
        ...(largest > IAM_POLICY_LIMITS.managedChars ? [`a managed policy is ${largest} characters (IAM allows ${IAM_POLICY_LIMITS.managedChars})`] : []),
        ...(managed > managedLimit ? [`it needs ${managed} managed policies (IAM's default quota is ${managedLimit} a ${kind ?? 'role'})`] : []),
      ];
      if (!over.length) return [];
      const named = [...granted].filter(([, n]) => n > 0);
      const what = named.length ? named.map(([g, n]) => `${g}'s leaseNames names ${n} lease${n === 1 ? '' : 's'} for this ${kind ?? 'role'}`).join('; ') : `${[...granted.keys()].join(' and ')} adds to its policies`;
      const head = `The policies of ${kind ?? 'role'} ${role.node.path} do not fit IAM: ${over.join('; ')}. ${what}.`;
      const aRole = 'grant a role instead (a worker outside AWS assumes it, e.g. with IAM Roles Anywhere)';
      if (kind === 'user') {
        // only a role fits: the smallest grant (one lease, or allLeases) is already past a user's limit
        const grants = [...granted.keys()];
        const smallest = fromGrants > inlineLimit && named.every(([, n]) => n <= 1);
        const why = smallest
          ? `An IAM user's inline policies are limited to ${inlineLimit} characters together, and ${grants.join(' and ')} need${grants.length === 1 ? 's' : ''} more, for any lease`
          : 'IAM gives a user far less room than a role, and CDK never splits its policy';
        return [`${head} ${why}: ${aRole}.`];
      }
      // what works, each only where it does: fewer leases, or allLeases, only for grants that name more than one
      const fixes: string[] = [];
      if (imported) {
        fixes.push(
          made
            ? `It imports ${made.node.scope?.node.path ?? made.node.path}, a role made in this app, and CDK never splits an imported role's policy: grant that role itself, whose statements CDK spreads over managed policies`
            : 'It is an imported role, whose policy CDK never splits: create the role in this app (new iam.Role), whose statements CDK spreads over managed policies',
        );
      }
      if (own.length && !kind && inlineChars > IAM_POLICY_LIMITS.inlineChars) fixes.push(`${fixes.length ? 'move' : 'Move'} the role's own inline policies to a managed policy (iam.ManagedPolicy), which IAM counts apart`);
      if (kind) fixes.push(`IAM gives a ${kind} far less room than a role, and CDK never splits its policy: ${aRole}`);
      if (named.some(([, n]) => n > 1)) fixes.push("grant each role fewer leases (a role per cell of processes, each naming its cell's leases: docs/deploy.md)", 'grant every lease with allLeases: true instead of leaseNames');
      if (!fixes.length) fixes.push('Give the role fewer policies of its own, or spread its grants over several roles (a role per Conclave, or per cell of processes)');
      fixes[0] = fixes[0]![0]!.toUpperCase() + fixes[0]!.slice(1);
      return [`${head} ${fixes.join(', or ')}.`];
    },
  });
}

const WARNED = new WeakMap<IConstruct, Set<LeaseGrant>>();

/**
 * Warns at synth when `by` added nothing to `grantee`: an imported role CDK gives no policy
 * (Role.fromRoleArn with `mutable: false`, or of another account than the stack's, or
 * withoutPolicyUpdates()) drops every statement granted to it and reports the grant as made, so
 * the worker would be refused at run time. A warning, not an error: such a role is managed
 * elsewhere on purpose, and its own policies may already allow what the grant names.
 */
export function warnIfNothingGranted(grantee: iam.IGrantable, by: LeaseGrant): void {
  const identity = identityOf(grantee.grantPrincipal);
  if (identity?.kind !== 'imported' || identity.construct.node.tryFindChild('Policy')) return;
  const role = identity.construct;
  const warned = WARNED.get(role) ?? new Set<LeaseGrant>();
  if (warned.has(by)) return;
  WARNED.set(role, warned.add(by));
  const name = (role as unknown as iam.IRole).roleName;
  const named = Token.isUnresolved(name) ? role.node.path : `${name} (${role.node.path})`;
  Annotations.of(role).addWarningV2(
    '@conclave/cdk:grantToImmutableRole',
    `${by} added no statement to role ${named}: it was imported immutable (Role.fromRoleArn with mutable: false, a role of another account than this stack's, or withoutPolicyUpdates()), and CDK drops what is granted to such a role. Its calls are refused (AccessDenied) unless the role's own policies, managed where the role is, allow what ${by} grants (docs/deploy.md, IAM for workers): grant a role made in this app, or one imported mutable from this stack's account (Role.fromRoleArn's default).`,
  );
}

/**
 * What getLeader reads: GetItem of the leases' rows (kept to `leaseNames` by `dynamodb:LeadingKeys`;
 * undefined: every lease), and of every process's session row (grantSessionReads), which judges a
 * term held on a session, with the Query of those partitions: a term whose named row does not vouch
 * for its holder is judged by its holder's own process's sessions (IdentityStore.processSessions);
 * DescribeTable of those two tables (grantDescribeTables: a table still being created is waited
 * for); with a key, the KMS actions a read of a key-encrypted table needs.
 */
export function grantLeaderReads(grantee: iam.IGrantable, leaseNames: readonly string[] | undefined, on: Pick<GrantTargets, 'tables' | 'encryptionKey'>): iam.Grant {
  const leases = (leaseNames ? chunked(leaseNames) : [undefined]).map((part) =>
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['dynamodb:GetItem'],
      resourceArns: [on.tables.leases.tableArn],
      ...(part ? { conditions: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [...part] }, Null: { 'dynamodb:LeadingKeys': 'false' } } } : {}),
    }),
  );
  const grants = [...leases, grantSessionReads(grantee, on, { query: true }), grantDescribeTables(grantee, ['leases', 'identities'], on)];
  if (on.encryptionKey) grants.push(on.encryptionKey.grant(grantee, ...KEY_READ));
  return grants.reduce((a, b) => a.combine(b));
}

/**
 * Reads of every process's session row (GetItem on the identities partitions SESSION_PARTITIONS):
 * a follower judges a lease held on a session by its holder's session, whoever's grant wrote it.
 * `query`: their Query too (getLeader: a holder's own process's sessions; grantGetLeader's and
 * grantWorker's, so a worker calling getLeader is not refused it). No write: a worker writes only
 * its own grant's session partition (grantWorkerAccess).
 */
export function grantSessionReads(grantee: iam.IGrantable, on: Pick<GrantTargets, 'tables'>, opts: { query?: boolean } = {}): iam.Grant {
  return iam.Grant.addToPrincipal({
    grantee,
    actions: opts.query ? ['dynamodb:GetItem', 'dynamodb:Query'] : ['dynamodb:GetItem'],
    resourceArns: [on.tables.identities.tableArn],
    conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [...SESSION_PARTITIONS] }, Null: { 'dynamodb:LeadingKeys': 'false' } },
  });
}

/**
 * The key-policy statements `key` did not take, by sid: an imported key (kms.Key.fromKeyArn,
 * fromLookup) has no policy in this app, and its addToResourcePolicy adds nothing, silently. The
 * Conclave construct warns of them (warnOfKeyPolicy).
 */
const NOT_ADDED = new WeakMap<kms.IKey, Map<string, iam.PolicyStatement>>();

/** `statement` added to `key`'s policy, or, where the key has none here (imported), kept for warnOfKeyPolicy. */
export function addKeyStatement(key: kms.IKey, statement: iam.PolicyStatement): void {
  if (key.addToResourcePolicy(statement).statementAdded) return;
  const missing = NOT_ADDED.get(key) ?? new Map<string, iam.PolicyStatement>();
  missing.set(statement.sid ?? JSON.stringify(statement.toStatementJson()), statement);
  NOT_ADDED.set(key, missing);
}

/** Id of the warning warnOfKeyPolicy adds. */
const IMPORTED_KEY_WARNING = '@conclave/cdk:importedKeyPolicy';

/**
 * Warns at synth when `key` took none of the key-policy statements the construct added to it
 * (an imported key, whose policy is managed where the key is): without them the service each
 * names cannot use the key, and fails at run time (CloudWatch Logs cannot write the functions' log
 * groups; EventBridge cannot write a rule's dead letters to its key-encrypted queue, and drops
 * them). The warning quotes each statement, `${AWS::AccountId}` and such for what the deploy fills
 * in, to add to the key's policy where the key is managed.
 */
export function warnOfKeyPolicy(scope: Construct, key: kms.IKey): void {
  const missing = [...(NOT_ADDED.get(key)?.values() ?? [])];
  if (!missing.length) return;
  const stack = Stack.of(scope);
  const quoted = missing.map((st) => JSON.stringify(readableIntrinsics(stack.resolve(st.toStatementJson()))));
  Annotations.of(scope).addWarningV2(
    IMPORTED_KEY_WARNING,
    `encryptionKey is imported (kms.Key.fromKeyArn or fromLookup): its key policy is not changed from this app, so the ${missing.length === 1 ? 'statement' : `${missing.length} statements`} Conclave needs on it ${missing.length === 1 ? 'was' : 'were'} not added. Add ${missing.length === 1 ? 'it' : 'them'} to the key's policy where the key is managed (docs/deploy.md, "Use the construct in your own stack"), or the service each names cannot use the key (\${AWS::AccountId} and such: this deployment's own values): ${quoted.join(' ')}`,
  );
}

/** A resolved template value with Ref and Fn::Join written out as text (`${AWS::AccountId}`), for a message. */
function readableIntrinsics(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(readableIntrinsics);
  if (v === null || typeof v !== 'object') return v;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  if (keys.length === 1 && typeof o['Ref'] === 'string') return `\${${o['Ref']}}`;
  const join = o['Fn::Join'];
  if (keys.length === 1 && Array.isArray(join)) {
    const [delimiter, parts] = join as [string, unknown[]];
    return parts.map((p) => readableIntrinsics(p)).map((p) => (typeof p === 'string' ? p : JSON.stringify(p))).join(delimiter);
  }
  return Object.fromEntries(keys.map((k) => [k, readableIntrinsics(o[k])]));
}

/**
 * EventBridge may use the key to write the dead letters of this stack's rules to their dead-letter
 * queues, which are encrypted with it: EventBridge sends them as itself (the service), not as a
 * role a grant could name, and aws-cdk-lib's targets add the queue policy only, not the key's
 * (aws-cdk issues 20804, 33169). Key policy, kept to the rules of the stack's account and region
 * (not each rule's ARN: the rule depends on its function, whose role's policy names the key); an
 * imported key's policy is not changed from here, and must allow it itself (warnOfKeyPolicy). (Called again, the same
 * statement: the key's policy keeps one.)
 */
export function allowEventBridgeToUse(scope: Construct, key: kms.IKey): void {
  const stack = Stack.of(scope);
  addKeyStatement(
    key,
    new iam.PolicyStatement({
      sid: 'AllowEventBridgeForConclaveDeadLetterQueues',
      principals: [new iam.ServicePrincipal('events.amazonaws.com')],
      actions: ['kms:GenerateDataKey', 'kms:Decrypt'],
      resources: ['*'],
      conditions: { ArnLike: { 'aws:SourceArn': stack.formatArn({ service: 'events', resource: 'rule', resourceName: '*', arnFormat: ArnFormat.SLASH_RESOURCE_NAME }) } },
    }),
  );
}

/** CloudWatch Logs may use the key for this stack's log groups (it is not a grant: logs needs key policy; an imported key's: warnOfKeyPolicy). */
export function allowLogsToUse(scope: Construct, key: kms.IKey): void {
  const stack = Stack.of(scope);
  addKeyStatement(
    key,
    new iam.PolicyStatement({
      sid: 'AllowCloudWatchLogsForConclaveLogGroups',
      principals: [new iam.ServicePrincipal(`logs.${stack.region}.amazonaws.com`)],
      actions: ['kms:Encrypt*', 'kms:Decrypt*', 'kms:ReEncrypt*', 'kms:GenerateDataKey*', 'kms:Describe*'],
      resources: ['*'],
      conditions: { ArnLike: { 'kms:EncryptionContext:aws:logs:arn': stack.formatArn({ service: 'logs', resource: 'log-group', resourceName: '*', arnFormat: ArnFormat.COLON_RESOURCE_NAME }) } },
    }),
  );
}
