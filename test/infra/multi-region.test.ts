/**
 * Multi-Region strong consistency (issue 30, item 1): `regions` makes the tables DynamoDB global
 * tables with MRSC, created by the Conclave in the primary Region's stack; a ConclaveReplicaStack
 * in each other replica Region runs the same functions on that Region's replicas. Both shapes DynamoDB
 * offers (three replicas; two replicas and a witness), synthesized as `cdk synth` does (cdk-nag
 * registered), and the option's validation.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WORKER_ACCESS, type TableRole } from '../../infra/access.js';
import { Conclave, type ConclaveProps } from '../../infra/conclave.js';
import { ConclaveReplica, ConclaveReplicaStack } from '../../infra/replica.js';
import { ConclaveStack } from '../../infra/stack.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { defaultTableNames, TABLES, TTL_ATTRIBUTE } from '../../lib/tables.js';
import { ENV, wiring, type FunctionName } from '../../lib/wiring.js';
import { buildAssets, getAtt, logicalId, statementsOf, synth, thrown, unacknowledged, type Synthesized } from './support.js';

beforeAll(buildAssets);

const names = Object.keys(wiring) as FunctionName[];
const roles = Object.keys(TABLES) as TableRole[];
const PREFIX = 'acme';
const tableNames = defaultTableNames(PREFIX);
const ecsTaskRole = (scope: Stack, id: string) => new iam.Role(scope, id, { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') });

type Resources = Record<string, { Type: string; Properties: Record<string, any>; DeletionPolicy?: string }>;
const resourcesOf = (t: Template): Resources => t.toJSON()['Resources'];
const ofType = (r: Resources, type: string) => Object.entries(r).filter(([, v]) => v.Type === type);
/** Conclave's own functions (not aws-cdk-lib's custom resource provider): the ones with the leases table in their environment. */
const conclaveFunctions = (r: Resources) => ofType(r, 'AWS::Lambda::Function').filter(([, v]) => v.Properties['Environment']?.Variables?.[ENV.leasesTable] !== undefined);

/** The app of a multi-Region deployment: the primary's ConclaveStack, a ConclaveReplicaStack per other replica Region, a worker role in each. */
interface MultiRegionApp {
  primary: ConclaveStack;
  replicas: ConclaveReplicaStack[];
  workers: Map<Stack, iam.Role>;
  /** A worker granted no sessions and no components: a fleet on leases alone. */
  lean: Map<Stack, iam.Role>;
}

function multiRegionApp(app: App, regions: NonNullable<ConclaveProps['regions']>): MultiRegionApp {
  const primary = new ConclaveStack(app, 'Conclave', { env: { region: 'us-east-1' }, conclave: { tablePrefix: PREFIX, regions } });
  const workers = new Map<Stack, iam.Role>();
  const worker = ecsTaskRole(primary, 'Worker');
  primary.conclave.grantWorker(worker, { leaseNames: ['nightly-report'], components: ['scheduler'] });
  workers.set(primary, worker);
  const lean = new Map<Stack, iam.Role>();
  const leanWorker = ecsTaskRole(primary, 'LeanWorker');
  primary.conclave.grantWorker(leanWorker, { leaseNames: ['nightly-report'], components: [], sessions: false });
  lean.set(primary, leanWorker);
  const replicas = primary.conclave.otherReplicaRegions.map((region) => {
    const stack = new ConclaveReplicaStack(app, `Conclave-${region}`, { env: { region }, primary: primary.conclave });
    const role = ecsTaskRole(stack, 'Worker');
    stack.conclave.grantWorker(role, { leaseNames: ['nightly-report'], components: ['scheduler'] });
    workers.set(stack, role);
    const leanRole = ecsTaskRole(stack, 'LeanWorker');
    stack.conclave.grantWorker(leanRole, { leaseNames: ['nightly-report'], components: [], sessions: false });
    lean.set(stack, leanRole);
    return stack;
  });
  return { primary, replicas, workers, lean };
}

/** What every shape must synthesize: checked for the three replicas and for two replicas and a witness. */
function describeShape(title: string, regions: NonNullable<ConclaveProps['regions']>, expected: { replicas: string[]; witness?: string; others: string[] }) {
  describe(title, () => {
    let s: Synthesized<ConclaveStack>;
    let m: MultiRegionApp;
    let primary: Resources;
    beforeAll(() => {
      s = synth((app) => {
        m = multiRegionApp(app, regions);
        return m.primary;
      });
      primary = resourcesOf(s.template);
    });
    afterAll(() => s?.cleanup());

    it('synthesizes every stack with no cdk-nag finding', () => {
      expect(unacknowledged(s.report)).toEqual([]);
      expect(s.report.pluginReports.every((p) => p.conclusion === 'success')).toBe(true);
    });

    it("creates the three tables in the primary's stack as MRSC global tables: STRONG, a replica in each Region, the witness, no TTL, no LSI", () => {
      const tables = ofType(primary, 'AWS::DynamoDB::GlobalTable');
      expect(tables).toHaveLength(roles.length);
      for (const r of roles) {
        const [, table] = tables.find(([, v]) => v.Properties['TableName'] === tableNames[r])!;
        const p = table.Properties;
        expect(p['MultiRegionConsistency'], r).toBe('STRONG');
        expect((p['Replicas'] as { Region: string }[]).map((x) => x.Region).sort(), r).toEqual([...expected.replicas].sort());
        expect(p['GlobalTableWitnesses'], r).toEqual(expected.witness ? [{ Region: expected.witness }] : undefined);
        expect(p['TimeToLiveSpecification'], `${r}: MRSC does not support TTL`).toBeUndefined();
        expect(p['LocalSecondaryIndexes'], `${r}: MRSC does not support LSIs`).toBeUndefined();
        // a stream only where the declaration has one: MRSC needs none to replicate
        expect(p['StreamSpecification'], r).toEqual(TABLES[r].stream ? { StreamViewType: 'NEW_AND_OLD_IMAGES' } : undefined);
        for (const replica of p['Replicas'] as Record<string, unknown>[]) {
          expect(replica, `${r} ${String(replica['Region'])}`).toMatchObject({ PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true }, DeletionProtectionEnabled: true });
        }
        expect(table.DeletionPolicy).toBe('Retain');
      }
    });

    it('runs the five functions in each replica Region, on that Region’s tables, and in no other Region', () => {
      const stacks = [m.primary, ...m.replicas];
      expect(stacks.map((x) => x.region).sort()).toEqual([...expected.replicas].sort());
      for (const stack of stacks) {
        const fns = conclaveFunctions(resourcesOf(Template.fromStack(stack)));
        expect(fns, stack.stackName).toHaveLength(names.length);
        for (const [id, fn] of fns) {
          const vars = fn.Properties['Environment'].Variables as Record<string, unknown>;
          // the primary's table itself (a Ref), or by name the replica in this Region
          const table = (r: TableRole) => (stack === m.primary ? { Ref: logicalId(stack, m.primary.conclave.tables[r]) } : tableNames[r]);
          expect([vars[ENV.leasesTable], vars[ENV.candidatesTable], vars[ENV.identitiesTable]]).toEqual(roles.map(table));
        }
      }
      if (expected.witness) expect(stacks.map((x) => x.region)).not.toContain(expected.witness);
    });

    it("gives each other replica Region its own stack: after the primary's, on that Region's replicas, with its own bus, queue, schedule and outputs", () => {
      expect(m.replicas.map((x) => x.region)).toEqual(expected.others);
      for (const stack of m.replicas) {
        expect(stack.dependencies).toContain(m.primary);
        const t = Template.fromStack(stack);
        const r = resourcesOf(t);
        expect(ofType(r, 'AWS::DynamoDB::GlobalTable'), 'the tables are the primary stack\'s').toEqual([]);
        for (const type of ['AWS::Events::EventBus', 'AWS::SQS::Queue', 'AWS::Events::Rule', 'AWS::CloudWatch::Dashboard', 'AWS::SNS::Topic']) expect(ofType(r, type).length, type).toBeGreaterThan(0);
        t.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(1 minute)' });
        expect(Object.keys(t.toJSON()['Outputs']).sort()).toEqual(['AlarmTopicArn', 'CandidatesTable', 'DashboardName', 'EventBusName', 'IdentitiesTable', 'LeasesTable', 'PushEndpoint']);
        expect(t.toJSON()['Outputs']['LeasesTable'].Value).toBe(tableNames.leases);
      }
    });

    it("reads each stream in its own Region: the replica's stream ARN, looked up at deploy time, is the event source", () => {
      for (const stack of m.replicas) {
        const r = resourcesOf(Template.fromStack(stack));
        const lookups = ofType(r, 'Custom::ConclaveReplicaStream');
        const streamTables = roles.filter((x) => TABLES[x].stream);
        expect(lookups).toHaveLength(streamTables.length);
        for (const role of streamTables) {
          const [lookupId, lookup] = lookups.find(([, v]) => JSON.parse(v.Properties['Create']).parameters.TableName === tableNames[role])!;
          expect(JSON.parse(lookup.Properties['Create'])).toMatchObject({ service: 'DynamoDB', action: 'DescribeTable', outputPaths: ['Table.LatestStreamArn'] });
          const streamArn = getAtt(lookupId, 'Table.LatestStreamArn');
          const fn = names.find((n) => wiring[n].trigger.kind === 'stream' && (wiring[n].trigger as { table: string }).table === role)!;
          const mappings = ofType(r, 'AWS::Lambda::EventSourceMapping').filter(([, v]) => JSON.stringify(v.Properties['EventSourceArn']) === JSON.stringify(streamArn));
          expect(mappings, `${stack.region} ${role} → ${fn}`).toHaveLength(1);
          expect(mappings[0]![1].Properties['FunctionName']).toEqual({ Ref: logicalId(stack, stack.conclave.functions[fn]) });
          // the lookup may read that one table's description, in this Region
          const policy = ofType(r, 'AWS::IAM::Policy').find(([id]) => id.startsWith(`${lookupId.replace(/[0-9A-F]{8}$/, '')}CustomResourcePolicy`))!;
          expect(JSON.stringify(policy[1].Properties['PolicyDocument'].Statement)).toBe(
            JSON.stringify([{ Action: 'dynamodb:DescribeTable', Effect: 'Allow', Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, `:dynamodb:${stack.region}:`, { Ref: 'AWS::AccountId' }, `:table/${tableNames[role]}`]] } }]),
          );
        }
      }
    });

    it("grants workers in each Region that Region's replicas, and nothing only a transaction uses", () => {
      for (const [stack, role] of m.workers) {
        const t = Template.fromStack(stack);
        const st = statementsOf(t, logicalId(stack, role));
        const actions = new Set(st.flatMap((x) => x.Action));
        expect(actions.has('dynamodb:ConditionCheckItem'), stack.stackName).toBe(false);
        // and DescribeTable on the tables: the SDK's start-up check that they are MRSC (lib/sdk/multi-region.ts)
        expect([...actions].filter((a) => a.startsWith('dynamodb:')).sort()).toEqual(
          [...new Set([...Object.values(WORKER_ACCESS).flat(), 'dynamodb:DescribeTable'])].filter((a) => a !== 'dynamodb:ConditionCheckItem').sort(),
        );
        const describe = st.filter((x) => x.Action.includes('dynamodb:DescribeTable'));
        expect(describe.map((x) => x.Action)).toEqual([['dynamodb:DescribeTable']]);
        for (const table of [/[Ll]eases/, /[Cc]andidates/, /[Ii]dentities/]) expect(JSON.stringify(describe[0]!.Resource)).toMatch(table);
        // a worker granted no sessions and no components may describe the identities table too: a coordinated
        // multiRegion elector checks it (other workers' sessions vouch for terms); before, every start-up told it was unchecked
        const lean = statementsOf(t, logicalId(stack, m.lean.get(stack)!)).filter((x) => x.Action.includes('dynamodb:DescribeTable'));
        for (const table of [/[Ll]eases/, /[Cc]andidates/, /[Ii]dentities/]) expect(JSON.stringify(lean.flatMap((x) => x.Resource)), stack.stackName).toMatch(table);
        const tableArns = JSON.stringify(st.filter((x) => x.Action.some((a) => a.startsWith('dynamodb:'))).flatMap((x) => x.Resource));
        if (stack === m.primary) expect(tableArns).toContain('Fn::GetAtt');
        else {
          expect(tableArns).toContain(`:dynamodb:${stack.region}:`);
          for (const other of expected.replicas.filter((x) => x !== stack.region)) expect(tableArns).not.toContain(`:dynamodb:${other}:`);
        }
      }
    });
  });
}

describeShape('regions: three replicas', { replicas: ['us-east-1', 'us-east-2', 'us-west-2'] }, { replicas: ['us-east-1', 'us-east-2', 'us-west-2'], others: ['us-east-2', 'us-west-2'] });
describeShape('regions: two replicas and a witness', { replicas: ['us-east-1', 'us-east-2'], witness: 'us-west-2' }, { replicas: ['us-east-1', 'us-east-2'], witness: 'us-west-2', others: ['us-east-2'] });

describe('one Region (no `regions`): as before', () => {
  let s: Synthesized<Stack>;
  let worker!: iam.Role;
  beforeAll(() => {
    s = synth((app) => {
      const stack = new Stack(app, 'OneRegion');
      const c = new Conclave(stack, 'Conclave', { tablePrefix: PREFIX });
      worker = ecsTaskRole(stack, 'Worker');
      c.grantWorker(worker, { leaseNames: ['nightly-report'], components: ['scheduler'] });
      return stack;
    });
  });
  afterAll(() => s?.cleanup());

  it('has no MultiRegionConsistency, no replica elsewhere, no witness, and TTL on every table', () => {
    const tables = ofType(resourcesOf(s.template), 'AWS::DynamoDB::GlobalTable');
    expect(tables).toHaveLength(roles.length);
    for (const [, t] of tables) {
      expect(t.Properties['MultiRegionConsistency']).toBeUndefined();
      expect(t.Properties['GlobalTableWitnesses']).toBeUndefined();
      expect(t.Properties['Replicas']).toHaveLength(1);
      expect(t.Properties['TimeToLiveSpecification']).toEqual({ AttributeName: TTL_ATTRIBUTE, Enabled: true });
    }
    expect(JSON.stringify(s.template.toJSON())).not.toContain('MultiRegionConsistency');
  });

  it("grants the fence's ConditionCheckItem", () => {
    expect(statementsOf(s.template, logicalId(s.stack, worker)).flatMap((x) => x.Action)).toContain('dynamodb:ConditionCheckItem');
  });
});

describe('`regions` is validated when the construct is created', () => {
  const stackIn = (region?: string) => new Stack(new App(), 'Bad', region ? { env: { region } } : {});
  const cases: [string, () => Stack, ConclaveProps, string, RegExp][] = [
    ['two replicas without a witness', () => stackIn('us-east-1'), { tablePrefix: PREFIX, regions: { replicas: ['us-east-1', 'us-east-2'] } }, 'regions.replicas', /must name 3 Regions, not 2.*witness/],
    ['four replicas', () => stackIn('us-east-1'), { tablePrefix: PREFIX, regions: { replicas: ['us-east-1', 'us-east-2', 'us-west-2', 'us-west-1'] } }, 'regions.replicas', /must name 3 Regions, not 4/],
    ['three replicas and a witness', () => stackIn('eu-west-1'), { tablePrefix: PREFIX, regions: { replicas: ['eu-west-1', 'eu-west-2', 'eu-west-3'], witness: 'eu-central-1' } }, 'regions.replicas', /must name 2 Regions with a witness, not 3/],
    ['a witness that is also a replica', () => stackIn('us-east-1'), { tablePrefix: PREFIX, regions: { replicas: ['us-east-1', 'us-east-2'], witness: 'us-east-2' } }, 'regions.witness', /also a replica: the witness must be a third Region/],
    ['a Region listed twice', () => stackIn('us-east-1'), { tablePrefix: PREFIX, regions: { replicas: ['us-east-1', 'us-east-1', 'us-west-2'] } }, 'regions.replicas[1]', /twice/],
    ['a Region name that is none', () => stackIn('us-east-1'), { tablePrefix: PREFIX, regions: { replicas: ['us-east-1', 'US East', 'us-west-2'] } }, 'regions.replicas[1]', /AWS Region name/],
    ['an unknown field', () => stackIn('us-east-1'), { tablePrefix: PREFIX, regions: { replicas: ['us-east-1', 'us-east-2'], witnesses: ['us-west-2'] } as never }, 'regions.witnesses', /unknown option "witnesses" \(did you mean "witness"\?\)/],
    ["a stack whose Region is not a replica's", () => stackIn('us-west-1'), { tablePrefix: PREFIX, regions: { replicas: ['us-east-1', 'us-east-2', 'us-west-2'] } }, 'regions.replicas', /must include this stack's Region, us-west-1/],
    ['a stack in the witness Region', () => stackIn('us-west-2'), { tablePrefix: PREFIX, regions: { replicas: ['us-east-1', 'us-east-2'], witness: 'us-west-2' } }, 'regions.replicas', /the witness, which holds no table/],
    ['an environment-agnostic stack', () => stackIn(), { tablePrefix: PREFIX, regions: { replicas: ['us-east-1', 'us-east-2', 'us-west-2'] } }, 'regions', /explicit Region.*env: \{ region: 'us-east-1' \}/],
    ['tables CloudFormation names', () => stackIn('us-east-1'), { regions: { replicas: ['us-east-1', 'us-east-2', 'us-west-2'] } }, 'tablePrefix', /required with `regions`/],
    ['two of three tables named', () => stackIn('us-east-1'), { tableNames: { leases: 'a-leases', candidates: 'a-candidates' }, regions: { replicas: ['us-east-1', 'us-east-2', 'us-west-2'] } }, 'tablePrefix', /tableNames for all three/],
  ];
  it.each(cases)('rejects %s, naming the field and the fix', (_, stack, props, field, message) => {
    const error = thrown(() => new Conclave(stack(), 'Conclave', props));
    expect(error).toBeInstanceOf(ValidationError);
    const issue = (error as ValidationError).issues.find((i) => i.field === field);
    expect(issue, `${(error as Error).message}`).toBeDefined();
    expect(issue!.message).toMatch(message);
  });

  it('rejects a customer-managed key with `regions` (each Region would need its own)', () => {
    const stack = stackIn('us-east-1');
    const key = new kms.Key(stack, 'Key', { enableKeyRotation: true });
    expect(() => new Conclave(stack, 'Conclave', { tablePrefix: PREFIX, encryptionKey: key, regions: { replicas: ['us-east-1', 'us-east-2', 'us-west-2'] } })).toThrow(/encryptionKey: is not supported with `regions`/);
  });

  it("refuses Regions of two of DynamoDB's MRSC Region sets itself, naming the Region's field (not aws-cdk-lib's error)", () => {
    const error = thrown(() => new Conclave(stackIn('us-east-1'), 'Conclave', { tablePrefix: PREFIX, regions: { replicas: ['us-east-1', 'us-east-2', 'eu-west-1'] } }));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues).toEqual([{ field: 'regions.replicas[2]', message: expect.stringMatching(/is eu-west-1, of the EU Region set, but regions\.replicas\[0\] is us-east-1, of the US set.*use a Region of the US set \(us-east-1, us-east-2, us-west-2\)/) }]);
  });
});

describe('replicas added to the tables apart from `regions`', () => {
  // TableV2.addReplica on conclave.tables.*: without `regions`, a global table with multi-Region
  // eventual consistency (two Regions can each grant a lease); with it, a Region no ConclaveReplica
  // runs in, past MRSC's three
  const synthOf = (build: (app: App) => void) => () => {
    const outdir = mkdtempSync(join(tmpdir(), 'conclave-mr-'));
    try {
      const app = new App({ outdir });
      build(app);
      app.synth();
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  };
  it('fails synth for a replica of a single-Region Conclave, naming the table, `regions` and the fix', () => {
    expect(
      synthOf((app) => {
        const c = new Conclave(new Stack(app, 'One', { env: { region: 'us-east-1' } }), 'Conclave', { tablePrefix: PREFIX });
        c.tables.leases.addReplica({ region: 'us-west-2' });
      }),
    ).toThrow(/tables\.leases has a replica in us-west-2, but the Conclave has no `regions`.*eventual consistency.*give the Conclave `regions`.*remove the replica/);
  });
  it('says nothing of the replicas the construct makes, in one Region (an environment-agnostic stack too) or with `regions`', () => {
    expect(synthOf((app) => new Conclave(new Stack(app, 'Agnostic'), 'Conclave', { tablePrefix: PREFIX }))).not.toThrow();
    expect(synthOf((app) => multiRegionApp(app, { replicas: ['us-east-1', 'us-east-2'], witness: 'us-west-2' }))).not.toThrow();
  });
  it("fails synth for a replica in a Region `regions` does not name", () => {
    expect(
      synthOf((app) => {
        const { primary } = multiRegionApp(app, { replicas: ['us-east-1', 'us-east-2'], witness: 'us-west-2' });
        primary.conclave.tables.candidates.addReplica({ region: 'us-west-1' });
      }),
    ).toThrow(/tables\.candidates has a replica in us-west-1, which `regions\.replicas` does not name \(us-east-1, us-east-2\).*remove the replica/);
  });
});

describe('ConclaveReplica is validated against its primary', () => {
  const regions = { replicas: ['us-east-1', 'us-east-2'], witness: 'us-west-2' };
  const primaryIn = (app: App, props: ConclaveProps = { tablePrefix: PREFIX, regions }, env: { region: string; account?: string } = { region: 'us-east-1' }) =>
    new Conclave(new Stack(app, 'Primary', { env }), 'Conclave', props);
  const replicaError = (build: (app: App) => void): ValidationError => {
    const error = thrown(() => build(new App()));
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  };

  it.each([
    ['a primary in one Region', (app: App) => new ConclaveReplica(new Stack(app, 'R', { env: { region: 'us-east-2' } }), 'Conclave', { primary: primaryIn(app, {}) }), 'primary', /give it `regions`/],
    ['an environment-agnostic stack', (app: App) => new ConclaveReplica(new Stack(app, 'R'), 'Conclave', { primary: primaryIn(app) }), 'env.region', /must be explicit.*us-east-2/],
    ["the primary's own Region", (app: App) => new ConclaveReplica(new Stack(app, 'R', { env: { region: 'us-east-1' } }), 'Conclave', { primary: primaryIn(app) }), 'env.region', /the primary's own Region/],
    ['the witness Region', (app: App) => new ConclaveReplica(new Stack(app, 'R', { env: { region: 'us-west-2' } }), 'Conclave', { primary: primaryIn(app) }), 'env.region', /the witness Region/],
    ['a Region without a replica', (app: App) => new ConclaveReplica(new Stack(app, 'R', { env: { region: 'eu-west-1' } }), 'Conclave', { primary: primaryIn(app) }), 'env.region', /holds no replica/],
    [
      'a second replica in one Region',
      (app: App) => {
        const primary = primaryIn(app);
        new ConclaveReplica(new Stack(app, 'R1', { env: { region: 'us-east-2' } }), 'Conclave', { primary });
        new ConclaveReplica(new Stack(app, 'R2', { env: { region: 'us-east-2' } }), 'Conclave', { primary });
      },
      'env.region',
      /has a ConclaveReplica of this primary already/,
    ],
    [
      'another account',
      (app: App) => new ConclaveReplica(new Stack(app, 'R', { env: { region: 'us-east-2', account: '222222222222' } }), 'Conclave', { primary: primaryIn(app, undefined, { region: 'us-east-1', account: '111111111111' }) }),
      'env.account',
      /in one account/,
    ],
  ] as const)('rejects %s', (_, build, field, message) => {
    const error = replicaError(build);
    expect(error.fields).toContain(field);
    expect(error.issues.find((i) => i.field === field)!.message).toMatch(message);
  });

  it('fails synth while a replica Region has no ConclaveReplica, saying what to add', () => {
    const outdir = mkdtempSync(join(tmpdir(), 'conclave-mr-'));
    try {
      const app = new App({ outdir });
      primaryIn(app, { tablePrefix: PREFIX, regions: { replicas: ['us-east-1', 'us-east-2', 'us-west-2'] } });
      new ConclaveReplicaStack(app, 'Conclave-us-east-2', { env: { region: 'us-east-2' }, primary: (app.node.findChild('Primary').node.findChild('Conclave') as Conclave) });
      expect(() => app.synth()).toThrow(/regions\.replicas names us-west-2, but no ConclaveReplica runs there: add new ConclaveReplicaStack\(app, 'Conclave-us-west-2', \{ env: \{ region: 'us-west-2' \}/);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });
});
