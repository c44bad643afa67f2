/**
 * Two Conclaves in one app, as a user adds them: two in one stack and one in another stack. Each
 * has its own tables and nothing of one is named like the other's; table names given twice in one
 * account and Region (CloudFormation would fail the deploy on the second) fail synth naming the prop.
 */
import { App, NestedStack, RemovalPolicy, Stack, Stage, Token } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { Template } from 'aws-cdk-lib/assertions';
import * as route53 from 'aws-cdk-lib/aws-route53';
import * as servicediscovery from 'aws-cdk-lib/aws-servicediscovery';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Conclave, type ConclaveProps } from '../../infra/conclave.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { buildAssets, synth, thrown, unacknowledged, type Synthesized } from './support.js';

beforeAll(buildAssets);

/** Each resource type's own name (not a reference to another's), as CloudFormation takes it. */
const NAMED: Readonly<Record<string, string>> = {
  'AWS::DynamoDB::GlobalTable': 'TableName',
  'AWS::SQS::Queue': 'QueueName',
  'AWS::Events::Rule': 'Name',
  'AWS::Events::EventBus': 'Name',
  'AWS::CloudWatch::Alarm': 'AlarmName',
  'AWS::CloudWatch::Dashboard': 'DashboardName',
  'AWS::Lambda::Function': 'FunctionName',
  'AWS::Logs::LogGroup': 'LogGroupName',
  'AWS::SNS::Topic': 'TopicName',
  'AWS::IAM::Role': 'RoleName',
  'AWS::IoT::TopicRule': 'RuleName',
};

/** Physical names given in a template, as `Type value` (names left to CloudFormation are not). */
function physicalNames(t: Template): string[] {
  const resources = t.toJSON()['Resources'] as Record<string, { Type: string; Properties?: Record<string, unknown> }>;
  return Object.values(resources).flatMap((r) => {
    const name = NAMED[r.Type] && r.Properties?.[NAMED[r.Type]!];
    return name === undefined ? [] : [`${r.Type} ${JSON.stringify(name)}`];
  });
}

describe('two Conclaves in one stack, and one in another stack of the app', () => {
  let s: Synthesized<Stack>;
  let other: Stack;
  const c: Conclave[] = [];

  beforeAll(() => {
    s = synth((app) => {
      const stack = new Stack(app, 'Platform', { env: { account: '123456789012', region: 'eu-west-1' } });
      c.push(new Conclave(stack, 'Orders', { tablePrefix: 'orders', removalPolicy: RemovalPolicy.DESTROY }));
      c.push(new Conclave(stack, 'Billing', { removalPolicy: RemovalPolicy.DESTROY }));
      other = new Stack(app, 'Other', { env: { account: '123456789012', region: 'eu-west-1' } });
      c.push(new Conclave(other, 'Conclave', { removalPolicy: RemovalPolicy.DESTROY }));
      return stack;
    });
  });
  afterAll(() => s?.cleanup());

  it('synthesizes with no cdk-nag finding, each with its own three tables', () => {
    expect(unacknowledged(s.report)).toEqual([]);
    const tables = c.flatMap((x) => Object.values(x.tables));
    expect(new Set(tables).size).toBe(9);
    expect(Object.keys(s.template.findResources('AWS::DynamoDB::GlobalTable'))).toHaveLength(6);
  });

  it('names nothing twice in the account and Region', () => {
    const names = [...physicalNames(s.template), ...physicalNames(Template.fromStack(other))];
    expect(names.filter((n, i) => names.indexOf(n) !== i)).toEqual([]);
  });

  // a review (2026-12-06): every metric had the dimensions { service, function } alone, so two
  // deployments in an account and Region published one metric: a LeaderlessLeases alarm (Minimum)
  // never fired while the other published 0, a stopped coordinator went unnoticed beside the
  // other's data points, BrokenLeases and ElectionFailures fired in both
  it("alarm on metrics of their own: each custom metric names its deployment (the leases table's name)", () => {
    const [orders, billing] = [c[0]!, c[1]!];
    const [a, b] = [customMetricsOf(s.template, orders.node.id), customMetricsOf(s.template, billing.node.id)];
    // LeaderlessLeases, BrokenLeases, ReconcileFailures, EventsUnpublished: one metric each;
    // ElectionFailures: one a function; the errors alarms of the three batch functions: the records
    // each reported failed
    expect(a.length).toBe(4 + 5 + 3);
    expect(b.length).toBe(a.length);
    expect(a.filter((m) => b.includes(m))).toEqual([]);
    for (const [x, metrics] of [[orders, a], [billing, b]] as const) {
      const deployment = JSON.stringify(s.stack.resolve(x.tables.leases.tableName));
      for (const m of metrics) expect(m).toContain(` deployment=${deployment} `);
    }
  });

  it("graph the per-lease metrics of their own deployment on their dashboards (SEARCH names the deployment)", () => {
    for (const x of [c[0]!, c[1]!]) {
      const body = dashboardBody(s.stack, x);
      const searches = body.match(/SEARCH\([^)]*\)/g) ?? [];
      expect(searches).toHaveLength(3);
      const deployment = Token.isUnresolved(x.tables.leases.tableName) ? '${leases table}' : x.tables.leases.tableName;
      for (const q of searches) expect(q).toContain(`deployment=\\"${deployment}\\"`);
    }
  });
});

/**
 * The custom metrics (namespace Conclave) the alarms of the Conclave with id `id` watch, each as
 * `name dimension=value …` (values as CloudFormation gets them, as JSON).
 */
function customMetricsOf(t: Template, id: string): string[] {
  const alarms = Object.entries(t.findResources('AWS::CloudWatch::Alarm')).filter(([logicalId]) => logicalId.startsWith(id));
  type Metric = { Namespace: string; MetricName: string; Dimensions?: { Name: string; Value: unknown }[] };
  const shown = (m: Metric) => [m.MetricName, ...(m.Dimensions ?? []).map((d) => `${d.Name}=${JSON.stringify(d.Value)}`).sort()].join(' ');
  return alarms.flatMap(([, a]) => {
    const p = a['Properties'] as Metric & { Metrics?: { MetricStat?: { Metric: Metric } }[] };
    const metrics = p.Metrics ? p.Metrics.flatMap((m) => (m.MetricStat ? [m.MetricStat.Metric] : [])) : [p];
    return metrics.filter((m) => m.Namespace === 'Conclave').map(shown);
  });
}

/** The dashboard's body as a string, each reference to the leases table of `c` written `${leases table}`. */
function dashboardBody(stack: Stack, c: Conclave): string {
  const leases = JSON.stringify(stack.resolve(c.tables.leases.tableName));
  const join = stack.resolve((c.dashboard.node.defaultChild as { dashboardBody?: unknown }).dashboardBody) as unknown;
  const text = (v: unknown): string =>
    typeof v === 'string' ? v : v && typeof v === 'object' && 'Fn::Join' in v ? (v['Fn::Join'] as [string, unknown[]])[1].map(text).join((v['Fn::Join'] as [string, unknown[]])[0]) : JSON.stringify(v) === leases ? '${leases table}' : JSON.stringify(v);
  return text(join);
}

describe('one stack deployed twice in an account and Region, under two stack names (a stage in each: svc-dev, svc-staging)', () => {
  const stage = (stackName?: string) => {
    const stack = new Stack(new App(), 'Svc', { env: { account: '123456789012', region: 'eu-west-1' }, ...(stackName ? { stackName } : {}) });
    new Conclave(stack, 'Conclave', { removalPolicy: RemovalPolicy.DESTROY });
    return Template.fromStack(stack);
  };

  it('names nothing the same in both (the event bus was named from the construct path alone: the second create failed)', () => {
    const dev = physicalNames(stage('svc-dev'));
    const staging = physicalNames(stage('svc-staging'));
    expect(dev.filter((n) => staging.includes(n))).toEqual([]);
    expect(dev.filter((n) => n.startsWith('AWS::Events::EventBus'))).toEqual(['AWS::Events::EventBus "svcdevConclaveBus1462FAA3"']);
  });

  it("a stack named as CDK names it keeps the bus name it always had: no bus replaced on upgrade (its id; in a Stage, as CDK Pipelines deploy; in a Stage in a Stage)", () => {
    expect(physicalNames(stage()).filter((n) => n.startsWith('AWS::Events::EventBus'))).toEqual(['AWS::Events::EventBus "SvcConclaveBusCFF90E87"']);
    // a review of the fix: Names.uniqueResourceName renamed (so replaced) the bus of every staged stack, whose name is not its id
    const staged = (...stages: string[]) => {
      const app = new App();
      const scope = stages.reduce<Construct>((s, id) => new Stage(s, id), app);
      const stack = new Stack(scope, 'Svc', { env: { account: '123456789012', region: 'eu-west-1' } });
      new Conclave(stack, 'Conclave', { removalPolicy: RemovalPolicy.DESTROY });
      return physicalNames(Template.fromStack(stack)).filter((n) => n.startsWith('AWS::Events::EventBus'));
    };
    // the names 43343d51 gave them
    expect(staged('Prod')).toEqual(['AWS::Events::EventBus "ProdSvcConclaveBus98F4D6B0"']);
    expect(staged('Pipeline', 'Prod')).toEqual([expect.stringMatching(/^AWS::Events::EventBus "PipelineProdSvcConclaveBus[0-9A-F]{8}"$/)]);
  });

  // a review (2026-12-06, seventh): a nested stack's name is a token, which counted as "named by
  // CDK": the bus was named from the path alone, SvcElectionConclaveBusF5F65B4B in both stages, and
  // the second deploy failed
  it('a Conclave in a nested stack: its bus is named from the name of the stack it is nested in', () => {
    const nested = (stackName?: string, depth = 1) => {
      const svc = new Stack(new App(), 'Svc', { env: { account: '123456789012', region: 'eu-west-1' }, ...(stackName ? { stackName } : {}) });
      let scope: Stack = svc;
      for (let i = 0; i < depth; i++) scope = new NestedStack(scope, i === 0 ? 'Election' : `Inner${i}`);
      new Conclave(scope, 'Conclave', { removalPolicy: RemovalPolicy.DESTROY });
      return physicalNames(Template.fromStack(scope)).filter((n) => n.startsWith('AWS::Events::EventBus'));
    };
    const [dev, staging] = [nested('svc-dev'), nested('svc-staging')];
    expect(dev).toEqual([expect.stringMatching(/^AWS::Events::EventBus "svcdevElectionConclaveBus[0-9A-F]{8}"$/)]);
    expect(staging).toEqual([expect.stringMatching(/^AWS::Events::EventBus "svcstagingElectionConclaveBus[0-9A-F]{8}"$/)]);
    // two levels down: still the top stack's name
    expect(nested('svc-dev', 2)).toEqual([expect.stringMatching(/^AWS::Events::EventBus "svcdevElectionInner1ConclaveBus[0-9A-F]{8}"$/)]);
    // in a stack named as CDK names it: the name it always had (no bus replaced on upgrade)
    expect(nested()).toEqual(['AWS::Events::EventBus "SvcElectionConclaveBusF5F65B4B"']);
  });
});

/** Building the app fails synth with a ValidationError naming `field`, its message matching `message`. */
const refused = (build: (app: App) => void, field: string, message: RegExp) => {
  const error = thrown(() => build(new App()));
  expect(error).toBeInstanceOf(ValidationError);
  expect((error as ValidationError).fields).toContain(field);
  expect((error as ValidationError).message).toMatch(message);
};
const env = { account: '123456789012', region: 'eu-west-1' };

describe('table names given twice', () => {
  it('in one Conclave: refused, naming the second table', () => {
    refused((app) => new Conclave(new Stack(app, 'S'), 'C', { tableNames: { leases: 'acme', candidates: 'acme' } }), 'tableNames.candidates', /leases table's name too/);
  });

  // a review (2026-12-06): the field was `candidates`, which names no prop
  it("in one Conclave, a name in tableNames that tablePrefix gives another table: refused, naming the field as written", () => {
    const fields = (props: ConclaveProps) => {
      const error = thrown(() => new Conclave(new Stack(new App(), 'S'), 'C', props));
      expect(error).toBeInstanceOf(ValidationError);
      return (error as ValidationError).issues;
    };
    expect(fields({ tablePrefix: 'p', tableNames: { candidates: 'p-leases' } })).toEqual([{ field: 'tableNames.candidates', message: expect.stringMatching(/leases table's name too \(p-leases: tablePrefix's <prefix>-leases\)/) }]);
    expect(fields({ tablePrefix: 'p', tableNames: { leases: 'p-candidates' } })).toEqual([{ field: 'tableNames.leases', message: expect.stringMatching(/candidates table's name too \(p-candidates/) }]);
  });

  it('by two Conclaves of one stack: refused, naming the prop and the other Conclave', () => {
    refused(
      (app) => {
        const stack = new Stack(app, 'S');
        new Conclave(stack, 'A', { tablePrefix: 'acme' });
        new Conclave(stack, 'B', { tablePrefix: 'acme' });
      },
      'tablePrefix',
      /S\/A/,
    );
  });

  it('by two stacks in one account and Region: refused; in two accounts: taken', () => {
    const twice = (second: ConclaveProps, account: string) => (app: App) => {
      new Conclave(new Stack(app, 'One', { env }), 'C', { tablePrefix: 'acme' });
      new Conclave(new Stack(app, 'Two', { env: { ...env, account } }), 'C', second);
    };
    refused(twice({ tableNames: { identities: 'acme-identities' } }, env.account), 'tableNames.identities', /One\/C/);
    expect(() => twice({ tablePrefix: 'acme' }, '210987654321')(new App())).not.toThrow();
  });
});

describe('leader discovery and tables of stacks with no env, taken twice (a review of the construct, 2026-12-05)', () => {
  it("the discovery table <prefix>-discovery: refused, as the other tables are (only CloudFormation's own check warned, in one template)", () => {
    const all = (p: string) => ({ leases: `${p}-l`, candidates: `${p}-c`, identities: `${p}-i` });
    refused(
      (app) => {
        const ns = new servicediscovery.HttpNamespace(new Stack(app, 'Net', { env }), 'Ns', { name: 'acme' });
        new Conclave(new Stack(app, 'One', { env }), 'C', { tablePrefix: 'team', tableNames: all('one'), leaderDiscovery: { cloudMap: { namespace: ns, serviceName: 'one' } } });
        new Conclave(new Stack(app, 'Two', { env }), 'C', { tablePrefix: 'team', tableNames: all('two'), leaderDiscovery: { cloudMap: { namespace: ns, serviceName: 'two' } } });
      },
      'tablePrefix',
      /the table team-discovery, which the Conclave One\/C names too, in the same account and Region/,
    );
  });

  it('one Cloud Map service name in one namespace: refused, naming serviceName and the default (the deploy failed)', () => {
    refused(
      (app) => {
        const stack = new Stack(app, 'S', { env });
        const ns = new servicediscovery.HttpNamespace(stack, 'Ns', { name: 'acme' });
        new Conclave(stack, 'A', { tablePrefix: 'a', leaderDiscovery: { cloudMap: { namespace: ns } } });
        new Conclave(stack, 'B', { tablePrefix: 'b', leaderDiscovery: { cloudMap: { namespace: ns } } });
      },
      'leaderDiscovery.cloudMap.serviceName',
      /the Cloud Map service conclave-leader in namespace acme, which the Conclave S\/A names too: give each Conclave a serviceName of its own .*the default is conclave-leader/,
    );
  });

  it("one Route 53 record in one zone: refused (each would replace the other's leader there); another record: taken", () => {
    const zone = (stack: Stack) => route53.HostedZone.fromHostedZoneAttributes(stack, 'Zone', { hostedZoneId: 'Z0123456789ABCDEFGHIJ', zoneName: 'example.com' });
    const two = (second: string) => (app: App) => {
      new Conclave(new Stack(app, 'One', { env }), 'C', { tablePrefix: 'a', leaderDiscovery: { route53: { hostedZone: zone(new Stack(app, 'Z1', { env })), recordName: '{lease}.leader' } } });
      new Conclave(new Stack(app, 'Two', { env }), 'C', { tablePrefix: 'b', leaderDiscovery: { route53: { hostedZone: zone(new Stack(app, 'Z2', { env })), recordName: second } } });
    };
    refused(two('{lease}.leader.example.com'), 'leaderDiscovery.route53.recordName', /the record \{lease\}\.leader\.example\.com, which the Conclave One\/C names too: give each Conclave a recordName of its own/);
    expect(() => two('{lease}.other')(new App())).not.toThrow();
    // two zones of one name made in the app (one per account, say): two records, not one (a review: refused)
    expect(() => {
      const app = new App();
      for (const [name, account] of [['Dev', '111111111111'], ['Prod', '222222222222']] as const) {
        const stack = new Stack(app, name, { env: { account, region: 'eu-west-1' } });
        new Conclave(stack, 'C', { tablePrefix: 'a', leaderDiscovery: { route53: { hostedZone: new route53.PublicHostedZone(stack, 'Zone', { zoneName: 'example.com' }), recordName: '{lease}.leader' } } });
      }
    }).not.toThrow();
  });

  it('one table prefix in two stacks with no env: a warning naming both (the second deploy fails where both go to one account and Region), no error (they may not)', () => {
    const app = new App();
    new Conclave(new Stack(app, 'One'), 'C', { tablePrefix: 'x' });
    const second = new Conclave(new Stack(app, 'Two'), 'C', { tablePrefix: 'x' });
    const warnings = second.node.metadata.filter((m) => m.type === 'aws:cdk:warning').map((m) => String(m.data));
    expect(warnings.filter((w) => /names the table x-leases, which the Conclave One\/C names too, in a stack whose account or Region is not known at synth/.test(w))).toHaveLength(1);
  });
});

