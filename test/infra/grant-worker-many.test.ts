/**
 * grantWorker with many leaseNames (issue 38, item 5): the lists of leases (dynamodb:LeadingKeys,
 * wake topics) are split over statements, so the role's policies fit IAM as IAM counts them, grant
 * exactly what a short list grants, shape for shape, and stay free of cdk-nag findings; a role past
 * IAM's quotas fails synth with the fix.
 */
import { createRequire } from 'node:module';
import { NestedStack, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Conclave } from '../../infra/conclave.js';
import { IAM_POLICY_LIMITS, policyChars } from '../../infra/policy-size.js';
import { wakeTopicsOf } from '../../infra/push.js';
import { buildAssets, logicalId, synth, thrown, unacknowledged, type Synthesized } from './support.js';

beforeAll(buildAssets);

const MANY = Array.from({ length: 190 }, (_, k) => `orders-shard-${String(k).padStart(5, '0')}`);
const FEW = MANY.slice(0, 2);
const TABLE_PREFIX = 'prod';

type Doc = { Statement: Record<string, unknown>[] };

/** Every policy document attached to the role: its inline policy and the managed ones CDK split off. */
function policiesOf(template: Template, roleId: string): { type: string; doc: Doc }[] {
  const ref = JSON.stringify({ Ref: roleId });
  return Object.values(template.toJSON()['Resources'] as Record<string, { Type: string; Properties: { Roles?: unknown[]; PolicyDocument: Doc } }>)
    .filter((r) => (r.Type === 'AWS::IAM::Policy' || r.Type === 'AWS::IAM::ManagedPolicy') && (r.Properties.Roles ?? []).some((x) => JSON.stringify(x) === ref))
    .map((r) => ({ type: r.Type, doc: r.Properties.PolicyDocument }));
}

const asList = (v: unknown): unknown[] => ([] as unknown[]).concat(v);

/**
 * A statement with its lists of leases taken out: the shape (effect, actions, resources but the
 * leases' topics, conditions but the leases' keys), and the keys and topics it names.
 */
function split(st: Record<string, unknown>, topics: Set<string>): { shape: string; keys: string[]; topics: string[] } {
  const resolved = (r: unknown) => JSON.stringify(r);
  const resources = asList(st['Resource']);
  const named = resources.filter((r) => topics.has(topicOf(r)));
  const cond = structuredClone((st['Condition'] ?? {}) as Record<string, Record<string, unknown>>);
  const eq = cond['ForAllValues:StringEquals'];
  const keys = eq && Array.isArray(eq['dynamodb:LeadingKeys']) && (eq['dynamodb:LeadingKeys'] as string[]).every((k) => MANY.includes(k)) ? (eq['dynamodb:LeadingKeys'] as string[]) : [];
  if (keys.length) eq!['dynamodb:LeadingKeys'] = '<leases>';
  const shape = JSON.stringify({
    Effect: st['Effect'],
    Action: asList(st['Action']).sort(),
    Resource: named.length ? '<topics>' : resources.map(resolved).sort(),
    Condition: cond,
    // the worker's own session partition is named after its leases (sessionComponent): one each
  }).replace(/conclave-session:[a-z0-9]{16,}/g, 'conclave-session:<own>');
  return { shape, keys, topics: named.map(topicOf) };
}

/** The topic a resource names, from its Fn::Join (`…:topic/<topic>`); '' for any other resource. */
function topicOf(r: unknown): string {
  const parts = (r as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join']?.[1];
  const last = parts?.at(-1);
  return typeof last === 'string' && last.startsWith(':topic/') ? last.slice(':topic/'.length) : '';
}

function shapes(template: Template, roleId: string, names: readonly string[]) {
  const topics = new Set(wakeTopicsOf(`${TABLE_PREFIX}-leases`, names));
  const out = new Map<string, { keys: Set<string>; topics: Set<string> }>();
  for (const { doc } of policiesOf(template, roleId)) {
    for (const st of doc.Statement) {
      const s = split(st, topics);
      const entry = out.get(s.shape) ?? { keys: new Set<string>(), topics: new Set<string>() };
      for (const k of s.keys) entry.keys.add(k);
      for (const t of s.topics) entry.topics.add(t);
      out.set(s.shape, entry);
    }
  }
  return out;
}

describe('grantWorker with many leaseNames', () => {
  let s: Synthesized<Stack>;
  const roleIds = { many: '', few: '' };

  beforeAll(() => {
    s = synth((app) => {
      const stack = new Stack(app, 'Workers');
      const c = new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX });
      const many = new iam.Role(stack, 'ManyLeasesTask', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') });
      const few = new iam.Role(stack, 'FewLeasesTask', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') });
      c.grantWorker(many, { leaseNames: MANY, allComponents: true });
      c.grantWorker(few, { leaseNames: FEW, allComponents: true });
      roleIds.many = logicalId(stack, many);
      roleIds.few = logicalId(stack, few);
      return stack;
    });
  });
  afterAll(() => s?.cleanup());

  it(`names ${MANY.length} leases in policies that each fit IAM as IAM counts them, within the role's managed-policy quota`, () => {
    const policies = policiesOf(s.template, roleIds.many);
    const inline = policies.filter((p) => p.type === 'AWS::IAM::Policy').reduce((n, p) => n + policyChars(p.doc), 0);
    const managed = policies.filter((p) => p.type === 'AWS::IAM::ManagedPolicy').map((p) => policyChars(p.doc));
    expect(managed.length, 'the inline policy alone cannot hold them').toBeGreaterThan(0);
    expect(inline).toBeLessThanOrEqual(IAM_POLICY_LIMITS.inlineChars);
    for (const m of managed) expect(m).toBeLessThanOrEqual(IAM_POLICY_LIMITS.managedChars);
    expect(managed.length).toBeLessThanOrEqual(IAM_POLICY_LIMITS.managedPerRole);
  });

  it('grants every lease what it grants a short list, and nothing else (each list split, no statement added or widened)', () => {
    const many = shapes(s.template, roleIds.many, MANY);
    const few = shapes(s.template, roleIds.few, FEW);
    // the same statements but for the lists (the few role's resources are its own tables too)
    expect([...many.keys()].sort()).toEqual([...few.keys()].sort());
    for (const [shape, got] of many) {
      const short = few.get(shape)!;
      // a statement naming leases names them all, across its parts; one naming none names none
      expect(got.keys.size ? [...got.keys].sort() : [], shape).toEqual(short.keys.size ? [...MANY].sort() : []);
      expect(got.topics.size ? [...got.topics].sort() : [], shape).toEqual(short.topics.size ? wakeTopicsOf(`${TABLE_PREFIX}-leases`, MANY).sort() : []);
    }
    // and the split happened: more than one statement names leases' keys, and more than one topics
    const statements = policiesOf(s.template, roleIds.many).flatMap((p) => p.doc.Statement);
    expect(statements.filter((st) => JSON.stringify(st).includes(MANY[0]!)).length).toBeGreaterThan(1);
  });

  it('keeps the role free of cdk-nag findings', () => {
    expect(unacknowledged(s.report)).toEqual([]);
  });

  it('fails synth past IAM’s quotas, naming leaseNames and the fix', () => {
    const names = Array.from({ length: 400 }, (_, k) => `orders-shard-${String(k).padStart(5, '0')}`);
    expect(() =>
      synth((app) => {
        const stack = new Stack(app, 'TooMany');
        const c = new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX });
        c.grantWorker(new iam.Role(stack, 'Task', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') }), { leaseNames: names, allComponents: true });
        return stack;
      }),
    ).toThrow(/do not fit IAM: it needs \d+ managed policies .*leaseNames names 400 leases.*a role per cell.*allLeases: true/);
  });
});

describe('grantGetLeader with many leaseNames', () => {
  it('fails synth past IAM’s quotas, naming grantGetLeader’s leaseNames and the fix', () => {
    // about 3,000 names overflow the inline policy and IAM's 10 managed policies a role
    const names = Array.from({ length: 4000 }, (_, k) => `orders-shard-${String(k).padStart(5, '0')}`);
    expect(() =>
      synth((app) => {
        const stack = new Stack(app, 'TooManyReads');
        const c = new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX });
        c.grantGetLeader(new iam.Role(stack, 'Client', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') }), { leaseNames: names });
        return stack;
      }),
    ).toThrow(/do not fit IAM: it needs \d+ managed policies .*grantGetLeader's leaseNames names 4000 leases.*allLeases: true/);
  });
});

describe('an imported role (Role.fromRoleArn) with many leaseNames', () => {
  // CDK gives an imported role one inline policy and never splits it over managed policies
  it.each([
    ['grantWorker', 190, (c: Conclave, role: iam.IRole, names: string[]) => c.grantWorker(role, { leaseNames: names, allComponents: true })],
    ['grantGetLeader', 1000, (c: Conclave, role: iam.IRole, names: string[]) => c.grantGetLeader(role, { leaseNames: names })],
  ] as const)('%s of %i leases fails synth, naming the inline policy, the leases and the fix', (grant, count, give) => {
    const names = Array.from({ length: count }, (_, k) => `orders-shard-${String(k).padStart(5, '0')}`);
    expect(() =>
      synth((app) => {
        const stack = new Stack(app, 'Imported');
        const c = new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX });
        give(c, iam.Role.fromRoleArn(stack, 'Task', 'arn:aws:iam::123456789012:role/orders-task'), names);
        return stack;
      }),
    ).toThrow(new RegExp(`Imported/Task do not fit IAM: its inline policy is \\d+ characters .*${grant}'s leaseNames names ${count} leases.*imported role.*new iam.Role`));
  });
});

describe("a role with inline policies of its own (RoleProps.inlinePolicies)", () => {
  it('counts them with the grant: IAM allows 10,240 characters for all of a role’s inline policies together', () => {
    // a policy of the user's own of about 6,000 characters, and a grant that fills CDK's default policy
    const own = new iam.PolicyDocument({
      statements: Array.from({ length: 60 }, (_, k) => new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [`arn:aws:s3:::reports-bucket-${String(k).padStart(3, '0')}/daily.csv`] })),
    });
    const names = Array.from({ length: 60 }, (_, k) => `orders-shard-${String(k).padStart(5, '0')}`);
    expect(() =>
      synth((app) => {
        const stack = new Stack(app, 'OwnInline');
        const c = new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX });
        c.grantWorker(new iam.Role(stack, 'Task', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com'), inlinePolicies: { reports: own } }), { leaseNames: names, allComponents: true });
        return stack;
      }),
    ).toThrow(/OwnInline\/Task do not fit IAM: its inline policies are \d+ characters \(IAM allows 10240 for them together: \d+ of grants, the rest the role's own: reports\).*to a managed policy/);
  });

  // a review (2026-12-06): "grant each role fewer leases … or allLeases: true" was said of grants
  // that named one lease, or none (allLeases): only the role's own policies can give way there
  it.each([
    ['one lease', { leaseNames: ['nightly-report'], allComponents: true }],
    ['allLeases', { allLeases: true, allComponents: true }],
  ] as const)('over the limit by its own policies, granted %s: the error names no lease fix', (_, options) => {
    const own = new iam.PolicyDocument({
      statements: Array.from({ length: 100 }, (_, k) => new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [`arn:aws:s3:::reports-bucket-${String(k).padStart(3, '0')}/daily.csv`] })),
    });
    const error = thrown(() =>
      synth((app) => {
        const stack = new Stack(app, 'OwnInline');
        const c = new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX });
        c.grantWorker(new iam.Role(stack, 'Task', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com'), inlinePolicies: { reports: own } }), options);
        return stack;
      }),
    );
    const message = String((error as Error).message);
    expect(message).toMatch(/OwnInline\/Task do not fit IAM: its inline policies are \d+ characters.*Move the role's own inline policies to a managed policy \(iam\.ManagedPolicy\), which IAM counts apart\./);
    expect(message).not.toMatch(/fewer leases|allLeases: true instead/);
  });
});

describe('an IAM user or group as the grantee', () => {
  // IAM allows a user's inline policies 2,048 characters together, a group's 5,120; CDK splits neither
  it('grantWorker to a user fails synth, naming the user, the limit and the fix; grantGetLeader of a lease fits', () => {
    expect(() =>
      synth((app) => {
        const stack = new Stack(app, 'Users');
        const c = new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX });
        c.grantWorker(new iam.User(stack, 'OnPremWorker'), { leaseNames: ['nightly-report'], components: [] });
        return stack;
      }),
    ).toThrow(/Users\/OnPremWorker do not fit IAM: its inline policy is \d+ characters \(IAM allows 2048 a user\).*grant a role/);
    const s = synth((app) => {
      const stack = new Stack(app, 'Readers');
      const c = new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX });
      c.grantGetLeader(new iam.User(stack, 'Client'), { leaseNames: ['nightly-report'] });
      return stack;
    });
    s.cleanup();
  });

  // a review (2026-12-06): the error also said "grant each role fewer leases … or allLeases: true",
  // for one lease, and with allLeases already used: neither makes a worker's grant fit a user
  it.each([
    ['one lease', { leaseNames: ['nightly-report'], components: [] }],
    ['allLeases', { allLeases: true, components: [] }],
  ] as const)('grantWorker to a user (%s): the error says what works, a role, and nothing else', (_, options) => {
    const error = thrown(() =>
      synth((app) => {
        const stack = new Stack(app, 'Users');
        const c = new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX });
        c.grantWorker(new iam.User(stack, 'OnPremWorker'), options);
        return stack;
      }),
    );
    const message = String((error as Error).message);
    expect(message).toMatch(/Users\/OnPremWorker do not fit IAM: its inline policy is \d+ characters \(IAM allows 2048 a user\)\..*An IAM user's inline policies are limited to 2048 characters together, and grantWorker needs more, for any lease: grant a role instead \(a worker outside AWS assumes it, e\.g\. with IAM Roles Anywhere\)/);
    expect(message).not.toMatch(/fewer leases|allLeases: true instead/);
  });
});

describe('policies attached to the grantee apart from the grant (iam.Policy, iam.ManagedPolicy)', () => {
  // IAM counts a role's inline policies together, each AWS::IAM::Policy attached to it among them,
  // and each managed policy attached to it against its quota, however CDK attached them
  const reports = (k: number) => new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [`arn:aws:s3:::reports-bucket-${String(k).padStart(3, '0')}/daily.csv`] });
  const names = Array.from({ length: 60 }, (_, k) => `orders-shard-${String(k).padStart(5, '0')}`);
  it.each([
    ['new iam.Policy({ roles })', (stack: Stack, role: iam.Role, statements: iam.PolicyStatement[]) => new iam.Policy(stack, 'Reports', { roles: [role], statements })],
    ['role.attachInlinePolicy', (stack: Stack, role: iam.Role, statements: iam.PolicyStatement[]) => role.attachInlinePolicy(new iam.Policy(stack, 'Reports', { statements }))],
  ])('an inline policy attached by %s counts with the grant against 10,240 characters', (_, attach) => {
    expect(() =>
      synth((app) => {
        const stack = new Stack(app, 'Attached');
        const c = new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX });
        const role = new iam.Role(stack, 'Task', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') });
        attach(stack, role, Array.from({ length: 60 }, (_, k) => reports(k)));
        c.grantWorker(role, { leaseNames: names, allComponents: true });
        return stack;
      }),
    ).toThrow(/Attached\/Task do not fit IAM: its inline policies are \d+ characters \(IAM allows 10240 for them together: \d+ of grants, the rest the role's own: Attached\/Reports\).*to a managed policy/);
  });

  it("a user's attached inline policy counts with grantGetLeader against IAM's 2,048 a user", () => {
    expect(() =>
      synth((app) => {
        const stack = new Stack(app, 'UserAttached');
        const c = new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX });
        const user = new iam.User(stack, 'Client');
        user.attachInlinePolicy(new iam.Policy(stack, 'Reports', { statements: Array.from({ length: 15 }, (_, k) => reports(k)) }));
        c.grantGetLeader(user, { leaseNames: ['nightly-report'] });
        return stack;
      }),
    ).toThrow(/UserAttached\/Client do not fit IAM: its inline policies are \d+ characters \(IAM allows 2048 a user for them together: \d+ of grants, the rest its own: UserAttached\/Reports\).*grant a role/);
  });

  // IAM allows 10 managed policies a user and a group too (IAM and AWS STS quotas)
  it.each([
    ['user', (stack: Stack, managedPolicies: iam.IManagedPolicy[]) => new iam.User(stack, 'Client', { managedPolicies }), (p: iam.IUser) => ({ users: [p] })],
    ['group', (stack: Stack, managedPolicies: iam.IManagedPolicy[]) => new iam.Group(stack, 'Client', { managedPolicies }), (p: iam.IGroup) => ({ groups: [p] })],
  ] as const)("managed policies attached to a %s count against its 10: its own and those attached by their `users` or `groups`", (kind, make, attachTo) => {
    expect(() =>
      synth((app) => {
        const stack = new Stack(app, 'ManagedOf');
        const c = new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX });
        const who = make(stack, Array.from({ length: 9 }, (_, k) => iam.ManagedPolicy.fromManagedPolicyArn(stack, `Reports${k}`, `arn:aws:iam::123456789012:policy/reports-${k}`)));
        for (let k = 0; k < 2; k++) new iam.ManagedPolicy(stack, `Own${k}`, { ...(attachTo as (p: typeof who) => object)(who), statements: [reports(k)] });
        c.grantGetLeader(who, { leaseNames: ['nightly-report'] });
        return stack;
      }),
    ).toThrow(new RegExp(`ManagedOf/Client do not fit IAM: it needs 11 managed policies \\(IAM's default quota is 10 a ${kind}\\)`));
  });

  it("managed policies attached by their `roles` count against the role's 10", () => {
    expect(() =>
      synth((app) => {
        const stack = new Stack(app, 'AttachedManaged');
        const c = new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX });
        const role = new iam.Role(stack, 'Task', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') });
        for (let k = 0; k < 9; k++) new iam.ManagedPolicy(stack, `Own${k}`, { roles: [role], statements: [reports(k)] });
        c.grantWorker(role, { leaseNames: MANY, allComponents: true });
        return stack;
      }),
    ).toThrow(/AttachedManaged\/Task do not fit IAM: it needs 1\d managed policies \(IAM's default quota is 10 a role\)/);
  });
});

describe('policies attached to the role from another stack of the app', () => {
  // IAM counts a role's policies wherever in the app they were made: a policy in another stack
  // names the role by an import (Fn::ImportValue, a nested stack's parameter), not by its Ref
  const reports = (k: number) => new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [`arn:aws:s3:::reports-bucket-${String(k).padStart(3, '0')}/daily.csv`] });
  const names = Array.from({ length: 60 }, (_, k) => `orders-shard-${String(k).padStart(5, '0')}`);
  const role = (stack: Stack) => new iam.Role(stack, 'Task', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') });

  it("managed policies made in another stack count against the role's 10 (role in one stack, granted in another)", () => {
    expect(() =>
      synth((app) => {
        const roles = new Stack(app, 'Roles');
        const task = role(roles);
        const stack = new Stack(app, 'Election');
        const c = new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX });
        const others = new Stack(app, 'Reports');
        for (let k = 0; k < 9; k++) new iam.ManagedPolicy(others, `Own${k}`, { roles: [task], statements: [reports(k)] });
        c.grantWorker(task, { leaseNames: MANY, allComponents: true });
        return stack;
      }),
    ).toThrow(/Roles\/Task do not fit IAM: it needs 1\d managed policies \(IAM's default quota is 10 a role\)/);
  });

  it('an inline policy made in another stack counts with the grant against 10,240 characters', () => {
    expect(() =>
      synth((app) => {
        const stack = new Stack(app, 'Election');
        const c = new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX });
        const task = role(stack);
        new iam.Policy(new Stack(app, 'Reports'), 'Reports', { roles: [task], statements: Array.from({ length: 60 }, (_, k) => reports(k)) });
        c.grantWorker(task, { leaseNames: names, allComponents: true });
        return stack;
      }),
    ).toThrow(/Election\/Task do not fit IAM: its inline policies are \d+ characters \(IAM allows 10240 for them together: \d+ of grants, the rest the role's own: Reports\/Reports\)/);
  });

  it('an inline policy made in a nested stack counts with the grant', () => {
    expect(() =>
      synth((app) => {
        const stack = new Stack(app, 'Election');
        const c = new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX });
        const task = role(stack);
        new iam.Policy(new NestedStack(stack, 'Reports'), 'Reports', { roles: [task], statements: Array.from({ length: 60 }, (_, k) => reports(k)) });
        c.grantWorker(task, { leaseNames: names, allComponents: true });
        return stack;
      }),
    ).toThrow(/Election\/Task do not fit IAM: its inline policies are \d+ characters .*the rest the role's own: Election\/Reports\/Reports\)/);
  });

  it("a policy of another stack's role with the same logical id is not counted", () => {
    // the two roles' Refs are alike ({ Ref: Task… }): only the role each policy names counts
    const s = synth((app) => {
      const stack = new Stack(app, 'Election');
      const c = new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX });
      const task = role(stack);
      const others = new Stack(app, 'Reports');
      new iam.Policy(others, 'Reports', { roles: [role(others)], statements: Array.from({ length: 60 }, (_, k) => reports(k)) });
      for (let k = 0; k < 9; k++) new iam.ManagedPolicy(others, `Own${k}`, { roles: [others.node.findChild('Task') as iam.Role], statements: [reports(k)] });
      c.grantWorker(task, { leaseNames: names, allComponents: true });
      return stack;
    });
    s.cleanup();
  });
});

describe('a role made in this app, granted as an import of it (Role.fromRoleArn, fromRoleName)', () => {
  // IAM counts one role's inline policies together (10,240 characters), whichever construct of the
  // app made them: the role's own default policy and the one CDK gives an import of it (never split)
  const reports = (k: number) => new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [`arn:aws:s3:::reports-bucket-${String(k).padStart(3, '0')}/daily.csv`] });
  const names = Array.from({ length: 15 }, (_, k) => `orders-shard-${String(k).padStart(5, '0')}`);
  const env = { account: '123456789012', region: 'us-east-1' };
  /** The role, in stack Roles, with a policy of its own of about 5,900 characters. */
  const task = (roles: Stack, roleName?: string) => {
    const role = new iam.Role(roles, 'Task', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com'), ...(roleName ? { roleName } : {}) });
    for (let k = 0; k < 60; k++) role.addToPolicy(reports(k));
    return role;
  };
  const importedFix = /Election\/Imported do not fit IAM: its inline policies are \d+ characters \(IAM allows 10240 for them together: \d+ of grants, the rest the role's own: Roles\/Task\/DefaultPolicy\)\. grantWorker's leaseNames names 15 leases for this role\..* It imports Roles\/Task, a role made in this app, .*grant that role itself, whose statements CDK spreads over managed policies, or move the role's own inline policies to a managed policy/;

  it('imported by its name: the role’s own policy counts with the import’s, and the error says to grant the role itself', () => {
    expect(() =>
      synth((app) => {
        task(new Stack(app, 'Roles', { env }), 'orders-task');
        const stack = new Stack(app, 'Election', { env });
        new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX }).grantWorker(iam.Role.fromRoleArn(stack, 'Imported', 'arn:aws:iam::123456789012:role/orders-task'), { leaseNames: names, allComponents: true });
        return stack;
      }),
    ).toThrow(importedFix);
  });

  it('imported by its ARN (a reference to the role, its name generated)', () => {
    expect(() =>
      synth((app) => {
        const role = task(new Stack(app, 'Roles', { env }));
        const stack = new Stack(app, 'Election', { env });
        new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX }).grantWorker(iam.Role.fromRoleArn(stack, 'Imported', role.roleArn), { leaseNames: names, allComponents: true });
        return stack;
      }),
    ).toThrow(importedFix);
  });

  it('granted the role itself: a policy another part of the app gives an import of it counts', () => {
    expect(() =>
      synth((app) => {
        const stack = new Stack(app, 'Election', { env });
        const role = new iam.Role(stack, 'Task', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com'), roleName: 'orders-task' });
        const reporting = iam.Role.fromRoleName(new Stack(app, 'Reports', { env }), 'Task', 'orders-task');
        for (let k = 0; k < 60; k++) reporting.addToPrincipalPolicy(reports(k));
        new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX }).grantWorker(role, { leaseNames: Array.from({ length: 60 }, (_, k) => `orders-shard-${String(k).padStart(5, '0')}`), allComponents: true });
        return stack;
      }),
    ).toThrow(/Election\/Task do not fit IAM: its inline policies are \d+ characters \(IAM allows 10240 for them together: \d+ of grants, the rest the role's own: Reports\/Task\/Policy\)/);
  });

  it('a role of the same name in another account is another role: not counted', () => {
    const s = synth((app) => {
      task(new Stack(app, 'Roles', { env }), 'orders-task');
      const stack = new Stack(app, 'Election', { env });
      new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX }).grantWorker(iam.Role.fromRoleArn(stack, 'Imported', 'arn:aws:iam::210987654321:role/orders-task'), { leaseNames: names, allComponents: true });
      return stack;
    });
    s.cleanup();
  });
});

describe('a role CDK gives no statement (imported immutable, or of another account)', () => {
  // Role.fromRoleArn with mutable: false, or of an account other than the stack's, is an
  // ImmutableRole: CDK drops every statement granted to it and reports the grant as made
  const env = { account: '123456789012', region: 'us-east-1' };
  const warningsFor = (arn: string, mutable: boolean, give: (c: Conclave, role: iam.IRole) => void) => {
    const s = synth((app) => {
      const stack = new Stack(app, 'Election', { env });
      give(new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX }), iam.Role.fromRoleArn(stack, 'Imported', arn, { mutable }));
      return stack;
    });
    const found = Annotations.fromStack(s.stack).findWarning('*', Match.stringLikeRegexp('no statement')).map((w) => `${w.id} ${String(w.entry.data)}`);
    s.cleanup();
    return found;
  };
  const worker = (c: Conclave, role: iam.IRole) => c.grantWorker(role, { leaseNames: ['nightly-report'], allComponents: true });

  it.each([
    ['mutable: false', 'arn:aws:iam::123456789012:role/orders-task', false],
    ['of another account', 'arn:aws:iam::210987654321:role/orders-task', true],
  ] as const)('an imported role %s: synth warns that the grant added nothing, naming the role and the fix', (_, arn, mutable) => {
    expect(warningsFor(arn, mutable, worker)).toEqual([
      expect.stringMatching(/^\/Election\/Imported grantWorker added no statement to role orders-task \(Election\/Imported\): .*mutable: false.*another account.*AccessDenied.*IAM for workers.*grant a role made in this app, or one imported mutable from this stack's account/),
    ]);
    expect(warningsFor(arn, mutable, (c, role) => c.grantGetLeader(role, { leaseNames: ['nightly-report'] }))).toEqual([expect.stringMatching(/grantGetLeader added no statement to role orders-task /)]);
  });

  it('a mutable import of this account takes the statements, and no warning', () => {
    expect(warningsFor('arn:aws:iam::123456789012:role/orders-task', true, worker)).toEqual([]);
  });
});

/**
 * aws-iam loaded a second time (an app with two copies of aws-cdk-lib): its classes are not this
 * copy's, so `instanceof` fails; aws-cdk-lib's own checks (Role.isRole, Stack.of) still hold.
 */
function secondIam(): typeof iam {
  const require = createRequire(import.meta.url);
  void [iam.Role, iam.User, iam.Policy, iam.ManagedPolicy, iam.LazyRole];
  const loaded = Object.keys(require.cache).filter((k) => k.includes('/aws-cdk-lib/'));
  const first = Object.fromEntries(loaded.map((k) => [k, require.cache[k]]));
  for (const k of loaded) delete require.cache[k];
  const copy = require('aws-cdk-lib/aws-iam') as typeof iam;
  const classes = { Role: copy.Role, User: copy.User, LazyRole: copy.LazyRole, ServicePrincipal: copy.ServicePrincipal };
  Object.assign(require.cache, first);
  return classes as unknown as typeof iam;
}

describe('a role CDK does not see as this copy of iam.Role', () => {
  const overQuota = /Roles\/Task(\/Default)? do not fit IAM: it needs \d+ managed policies .*leaseNames names 400 leases.*a role per cell/;
  const names = Array.from({ length: 400 }, (_, k) => `orders-shard-${String(k).padStart(5, '0')}`);
  const grantTo = (role: (stack: Stack) => iam.IGrantable) => () =>
    synth((app) => {
      const stack = new Stack(app, 'Roles');
      new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX }).grantWorker(role(stack), { leaseNames: names, allComponents: true });
      return stack;
    });
  /** Synth's error: a role's, whose fix is not an imported role's (create the role in this app). */
  const asRole = (role: (stack: Stack) => iam.IGrantable) => {
    const message = String(thrown(grantTo(role)));
    expect(message).toMatch(overQuota);
    expect(message).not.toMatch(/imported role/);
  };

  it('a LazyRole (its role made when first granted) is checked as a role, not as an imported one', () => {
    asRole((stack) => new iam.LazyRole(stack, 'Task', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') }));
  });

  it('a role of a second copy of aws-cdk-lib is checked as a role, not as an imported one', () => {
    const copy = secondIam();
    asRole((stack) => new copy.Role(stack, 'Task', { assumedBy: new copy.ServicePrincipal('ecs-tasks.amazonaws.com') }));
  });

  it("a user of a second copy of aws-cdk-lib is checked against a user's limit", () => {
    const copy = secondIam();
    expect(() =>
      synth((app) => {
        const stack = new Stack(app, 'Users');
        new Conclave(stack, 'Conclave', { tablePrefix: TABLE_PREFIX }).grantWorker(new copy.User(stack, 'OnPremWorker'), { leaseNames: ['nightly-report'], components: [] });
        return stack;
      }),
    ).toThrow(/Users\/OnPremWorker do not fit IAM: its inline policy is \d+ characters \(IAM allows 2048 a user\).*grant a role/);
  });

  it('an immutable imported role (fromRoleArn, mutable: false) takes no statement, and fails nothing', () => {
    const s = grantTo((stack) => iam.Role.fromRoleArn(stack, 'Task', 'arn:aws:iam::123456789012:role/orders-task', { mutable: false }))();
    s.cleanup();
  });
});
