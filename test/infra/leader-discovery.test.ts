/**
 * ConclaveProps `leaderDiscovery` synthesized (infra/discovery.ts): the function on the bus's
 * leader-change events, its table, rule, dead-letter queue and alarms, and grants of exactly
 * DISCOVERY_ACCESS on the one Cloud Map service or hosted zone, cdk-nag clean. The Route 53 grant is
 * judged request by request: the requests the function's Route 53 code sends (to the fake Route 53
 * of test/discovery/fake-aws.ts) against the synthesized policy, as IAM evaluates its conditions.
 */
import { App, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Annotations, Match, type Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as route53 from 'aws-cdk-lib/aws-route53';
import * as servicediscovery from 'aws-cdk-lib/aws-servicediscovery';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DISCOVERY_ACCESS } from '../../infra/access.js';
import { Conclave, type ConclaveProps } from '../../infra/conclave.js';
import { parseAddress } from '../../lib/discovery/address.js';
import type { LeaderTarget } from '../../lib/discovery/naming.js';
import { route53Naming } from '../../lib/discovery/route53.js';
import { DISCOVERY_DETAIL_TYPES, DISCOVERY_ENV, DISCOVERY_FUNCTION, DISCOVERY_SWEEP_LEFT_METRIC } from '../../lib/discovery/wiring.js';
import { NAMESPACE, SERVICE } from '../../lib/functions/metrics.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { fakeAws, type FakeAws, type RecordedCall } from '../discovery/fake-aws.js';
import { globMatches, resolveArn } from './iam.js';
import { anyRuleOf, buildAssets, eventBridgeDeadLetterKeys, getAtt, logicalId, metadataAcknowledgements, statementsOf, synth, thrown, unacknowledged, type Statement, type Synthesized } from './support.js';

beforeAll(buildAssets);

const ZONE_ID = 'Z0123456789ABCDEFGHIJ';
const ZONE = 'internal.example.com';
const importedZone = (stack: Stack) => route53.HostedZone.fromHostedZoneAttributes(stack, 'Zone', { hostedZoneId: ZONE_ID, zoneName: ZONE });
/** The role's statements but its log group's and the dead-letter queue's (CDK's, for the destination and the rule). */
const ownStatements = (t: Template, roleId: string) => statementsOf(t, roleId).filter((s) => !s.Action.every((a) => a.startsWith('logs:') || a.startsWith('sqs:')));

function discoveryIds(stack: Stack, c: Conclave) {
  const d = c.leaderDiscovery!;
  return { fn: logicalId(stack, d.fn), role: logicalId(stack, d.fn.role!), table: logicalId(stack, d.table), dlq: logicalId(stack, d.deadLetterQueue), rule: logicalId(stack, d.rule) };
}

describe('leaderDiscovery with Cloud Map, one lease, a customer-managed key', () => {
  let s: Synthesized<Stack>;
  let t: Template;
  let c: Conclave;
  let id: ReturnType<typeof discoveryIds>;
  let nsId: string;
  let keyId: string;
  let reader: iam.Role;
  let readerId: string;
  let resources: Record<string, { Type: string; Properties: Record<string, any>; DeletionPolicy?: string }>;

  beforeAll(() => {
    s = synth((app) => {
      const stack = new Stack(app, 'CloudMap', { env: { region: 'eu-west-1' } });
      const ns = new servicediscovery.HttpNamespace(stack, 'Namespace', { name: 'conclave.internal' });
      const key = new kms.Key(stack, 'Key', { enableKeyRotation: true });
      c = new Conclave(stack, 'Conclave', { tablePrefix: 'acme', encryptionKey: key, leaderDiscovery: { leaseNames: ['nightly-report'], cloudMap: { namespace: ns } } });
      // what grantGetLeader gives a reader of the same lease: the sweep's reads
      reader = new iam.Role(stack, 'Reader', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
      c.grantGetLeader(reader, { leaseNames: ['nightly-report'] });
      readerId = logicalId(stack, reader);
      nsId = logicalId(stack, ns);
      keyId = logicalId(stack, key);
      return stack;
    });
    t = s.template;
    id = discoveryIds(s.stack, c);
    resources = t.toJSON()['Resources'];
  });
  afterAll(() => s?.cleanup());

  it('synthesizes cdk-nag clean; the only acknowledgements on its role are the key grant’s KMS wildcards and GetOperation’s `*` (and on its function, its runtime)', () => {
    expect(unacknowledged(s.report)).toEqual([]);
    const mine = metadataAcknowledgements(s.stack).filter((a) => a.at.includes('/Discovery/'));
    expect(mine.map((a) => `${a.at} ${a.id}`).sort()).toEqual([
      'CloudMap/Conclave/Discovery/DeadLetters AwsSolutions::AwsSolutions-SQS3', // the queue is itself the dead-letter queue
      'CloudMap/Conclave/Discovery/LeaderDiscovery AwsSolutions-L1', // as each of Conclave's functions (push.test.ts)
      'CloudMap/Conclave/Discovery/LeaderDiscoveryRole AwsSolutions-IAM5[Action::kms:GenerateDataKey*]',
      'CloudMap/Conclave/Discovery/LeaderDiscoveryRole AwsSolutions-IAM5[Action::kms:ReEncrypt*]',
      'CloudMap/Conclave/Discovery/LeaderDiscoveryRole AwsSolutions-IAM5[Resource::*]', // servicediscovery:GetOperation: IAM scopes it to no resource
    ]);
    for (const a of mine) expect(a.reason.length, a.id).toBeGreaterThan(40);
  });

  it('keeps the Cloud Map service as the tables are kept (RETAIN by default): AWS deletes no service with instances, and the stack deleted it, after the function that registers them (the delete failed)', () => {
    const services = Object.values(resources).filter((r) => r.Type === 'AWS::ServiceDiscovery::Service');
    expect(services).toHaveLength(1);
    expect(services[0]!.DeletionPolicy).toBe('Retain');
  });

  it("lets EventBridge use the key for the rule's dead-letter queue (as its rule, this account's and region's)", () => {
    const { rules, allowedSourceArns } = eventBridgeDeadLetterKeys(t, keyId);
    expect(rules).toContain(logicalId(s.stack, c.leaderDiscovery!.rule));
    expect(allowedSourceArns).toEqual([anyRuleOf(s.stack)]);
  });

  it('creates an API-only Cloud Map service in the namespace (no DNS records: no Route 53 access needed)', () => {
    const services = Object.values(t.findResources('AWS::ServiceDiscovery::Service'));
    expect(services).toHaveLength(1);
    expect(services[0]!['Properties']).toMatchObject({ Name: 'conclave-leader', NamespaceId: getAtt(nsId, 'Id'), Type: 'HTTP' });
    expect(services[0]!['Properties'].DnsConfig).toBeUndefined();
  });

  it('gives the function its table, the service and the leases, and runs it on the bundle built for it', () => {
    const fn = resources[id.fn]!.Properties;
    const serviceId = Object.keys(t.findResources('AWS::ServiceDiscovery::Service'))[0]!;
    expect(fn['Environment'].Variables).toEqual({
      [DISCOVERY_ENV.table]: { Ref: id.table },
      [DISCOVERY_ENV.cloudMapServiceId]: getAtt(serviceId, 'Id'),
      [DISCOVERY_ENV.leases]: '["nightly-report"]',
      // the sweep's reads (getLeader)
      [DISCOVERY_ENV.leasesTable]: s.stack.resolve(c.tables.leases.tableName),
      [DISCOVERY_ENV.identitiesTable]: s.stack.resolve(c.tables.identities.tableName),
      [DISCOVERY_ENV.leasesTableArn]: s.stack.resolve(c.tables.leases.tableArn),
      [DISCOVERY_ENV.electionConfig]: JSON.stringify({ clockSkewMs: c.config.clockSkewMs }),
    });
    expect(fn).toMatchObject({ Handler: 'index.handler', Runtime: 'nodejs24.x', Architectures: ['arm64'], Timeout: DISCOVERY_FUNCTION.timeoutSeconds, MemorySize: DISCOVERY_FUNCTION.memoryMb });
    expect(fn['Role']).toEqual(getAtt(id.role));
    expect(resources[id.role]!.Properties['ManagedPolicyArns']).toBeUndefined(); // no AWSLambdaBasicExecutionRole
  });

  it('invokes it from a rule on the Conclave bus for the leader-change events of its leases, from this account', () => {
    const rule = resources[id.rule]!.Properties;
    expect(rule['EventBusName']).toEqual({ Ref: logicalId(s.stack, c.eventBus as never) });
    // its resources: this deployment's leases table, which its events carry (another Conclave on a shared bus named its leaders here)
    expect(rule['EventPattern']).toEqual({ source: ['conclave'], 'detail-type': [...DISCOVERY_DETAIL_TYPES], account: [{ Ref: 'AWS::AccountId' }], resources: [s.stack.resolve(c.tables.leases.tableArn)], detail: { lease: ['nightly-report'] } });
    expect(rule['Targets']).toEqual([
      expect.objectContaining({ Arn: getAtt(id.fn), DeadLetterConfig: { Arn: getAtt(id.dlq) }, RetryPolicy: { MaximumRetryAttempts: 8, MaximumEventAgeInSeconds: DISCOVERY_FUNCTION.maxEventAgeSeconds } }),
    ]);
    t.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: id.fn },
      MaximumRetryAttempts: DISCOVERY_FUNCTION.retryAttempts,
      MaximumEventAgeInSeconds: DISCOVERY_FUNCTION.maxEventAgeSeconds,
      DestinationConfig: { OnFailure: { Destination: getAtt(id.dlq) } },
    });
  });

  it('runs it once a minute for the sweep (a term over with no event), not retried: the next sweep makes up a missed one', () => {
    const sweeps = Object.values(t.findResources('AWS::Events::Rule')).filter((r) => r['Properties'].ScheduleExpression === 'rate(1 minute)' && JSON.stringify(r['Properties'].Targets).includes(id.fn));
    expect(sweeps).toHaveLength(1);
    expect(sweeps[0]!['Properties'].Targets).toEqual([expect.objectContaining({ Arn: getAtt(id.fn), RetryPolicy: { MaximumRetryAttempts: 0 } })]);
  });

  it("grants the sweep getLeader's reads of its leases, as grantGetLeader grants a reader", () => {
    const key = (x: Statement) => JSON.stringify({ Action: [...x.Action].sort(), Resource: x.Resource, Condition: x.Condition });
    const mine = new Set(ownStatements(t, id.role).map(key));
    const readerSt = ownStatements(t, readerId);
    expect(readerSt.length).toBeGreaterThan(0);
    for (const x of readerSt) expect(mine.has(key(x)), key(x)).toBe(true);
  });

  it('grants UpdateItem and Scan on its table, RegisterInstance and DeregisterInstance on the one service, GetOperation (on `*`: IAM names no operation), the key: nothing else, no other wildcard resource', () => {
    const serviceId = Object.keys(t.findResources('AWS::ServiceDiscovery::Service'))[0]!;
    // (the sweep's reads, as a reader's: the test above)
    const read = new Set(ownStatements(t, readerId).map((x) => JSON.stringify({ Action: [...x.Action].sort(), Resource: x.Resource, Condition: x.Condition })));
    const st = ownStatements(t, id.role).filter((x) => !read.has(JSON.stringify({ Action: [...x.Action].sort(), Resource: x.Resource, Condition: x.Condition })));
    // (the key's actions twice: the grant's, and the dead-letter queue's for the failure destination)
    const grants = [...new Set(st.flatMap((x) => x.Action.map((a) => `${a} ${JSON.stringify(x.Resource)}`)))].sort();
    expect(grants).toEqual(
      [
        ...DISCOVERY_ACCESS.table.map((a) => `${a} ${JSON.stringify([getAtt(id.table)])}`),
        ...DISCOVERY_ACCESS.cloudMap.map((a) => `${a} ${JSON.stringify([getAtt(serviceId)])}`),
        ...DISCOVERY_ACCESS.cloudMapOperations.map((a) => `${a} ${JSON.stringify(['*'])}`),
        ...['kms:Decrypt', 'kms:DescribeKey', 'kms:Encrypt', 'kms:ReEncrypt*', 'kms:GenerateDataKey*'].map((a) => `${a} ${JSON.stringify([getAtt(keyId)])}`),
      ].sort(),
    );
    for (const x of st) expect(x.Condition, x.Action.join()).toBeUndefined();
  });

  it('keeps its table as the Conclave’s: named after the prefix, keyed by lease, on demand, point-in-time recovery, the key, retained with deletion protection', () => {
    const table = resources[id.table]!;
    expect(table.DeletionPolicy).toBe('Retain');
    expect(table.Properties).toMatchObject({
      TableName: 'acme-discovery',
      KeySchema: [{ AttributeName: 'lease', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
      Replicas: [{ Region: 'eu-west-1', PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true }, DeletionProtectionEnabled: true, SSESpecification: { KMSMasterKeyId: getAtt(keyId) } }],
    });
    expect(table.Properties['StreamSpecification']).toBeUndefined();
  });

  it("alarms on a dead letter, on failing invocations, and on sweeps leaving names unjudged in five of six minutes (the function's own metric), shown on the dashboard", () => {
    const d = c.leaderDiscovery!;
    t.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: NAMESPACE,
      MetricName: DISCOVERY_SWEEP_LEFT_METRIC,
      // as the function's Metrics publish it (lib/functions/observability.ts: service, the function's name, and its deployment: the leases table's name)
      Dimensions: [{ Name: 'deployment', Value: s.stack.resolve(c.tables.leases.tableName) }, { Name: 'function', Value: DISCOVERY_FUNCTION.name }, { Name: 'service', Value: SERVICE }],
      Statistic: 'Sum',
      Period: 60,
      Threshold: 1,
      EvaluationPeriods: 6,
      DatapointsToAlarm: 5,
      TreatMissingData: 'notBreaching',
    });
    expect(JSON.stringify(Object.values(t.findResources('AWS::CloudWatch::Dashboard'))[0]!['Properties'].DashboardBody)).toContain(logicalId(s.stack, d.alarms.namesUnswept));
    t.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'ApproximateNumberOfMessagesVisible', Dimensions: [{ Name: 'QueueName', Value: getAtt(id.dlq, 'QueueName') }], Threshold: 1, EvaluationPeriods: 1 });
    t.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: 'Errors', Dimensions: [{ Name: 'FunctionName', Value: { Ref: id.fn } }], Threshold: 1, EvaluationPeriods: 2 });
    const body = JSON.stringify(Object.values(t.findResources('AWS::CloudWatch::Dashboard'))[0]!['Properties'].DashboardBody);
    expect(body).toContain('Leader discovery');
    expect(body).toContain(logicalId(s.stack, d.alarms.deadLetters));
  });
});

/** IAM's view of one Route 53 request: action, the zone, and the ChangeResourceRecordSets condition keys. */
function route53Context(call: RecordedCall): { action: string; keys: Record<string, string[]> } {
  if (call.action !== 'route53:ChangeResourceRecordSets') return { action: call.action, keys: {} };
  const changes = call.input['changes'] as { action: string; record: { name: string; type: string } }[];
  const set = (f: (c: (typeof changes)[number]) => string) => [...new Set(changes.map(f))];
  return {
    action: call.action,
    keys: {
      'route53:ChangeResourceRecordSetsNormalizedRecordNames': set((c) => c.record.name.toLowerCase().replace(/\.$/, '')),
      'route53:ChangeResourceRecordSetsRecordTypes': set((c) => c.record.type),
      'route53:ChangeResourceRecordSetsActions': set((c) => c.action),
    },
  };
}

/** Whether an Allow statement lets the Route 53 request through on the zone (ForAllValues operators: every value must match). */
function route53Allows(statements: readonly Statement[], call: RecordedCall): boolean {
  const zone = `arn:aws:route53:::hostedzone/${ZONE_ID}`;
  const { action, keys } = route53Context(call);
  return statements.some(
    (st) =>
      st.Effect === 'Allow' &&
      st.Action.includes(action) &&
      st.Resource.some((r) => resolveArn(r, { 'AWS::Partition': 'aws' }) === zone) &&
      Object.entries(st.Condition ?? {}).every(([op, conditions]) =>
        Object.entries(conditions).every(([key, want]) => {
          const values = keys[key] ?? [];
          const allowed = ([] as string[]).concat(want as string | string[]);
          if (op === 'ForAllValues:StringEquals') return values.every((v) => allowed.includes(v));
          if (op === 'ForAllValues:StringLike') return values.every((v) => allowed.some((p) => globMatches(p, v)));
          throw new Error(`the evaluator does not know condition operator ${op}`);
        }),
      ),
  );
}

const target = (address: string): LeaderTarget => {
  const a = parseAddress(address);
  if ('issue' in a) throw new Error(a.issue);
  return { holder: 'w1', fencingToken: 1, address: a };
};

describe.each([
  { title: 'every lease, {lease}.leader', props: { recordName: '{lease}.leader' }, leases: undefined, names: ['*.leader.internal.example.com'], like: true, lease: 'jobs' },
  { title: 'two leases, {lease}.leader', props: { recordName: '{lease}.leader' }, leases: ['jobs', 'billing'], names: ['jobs.leader.internal.example.com', 'billing.leader.internal.example.com'], like: false, lease: 'billing' },
  { title: 'one lease, a fixed name', props: { recordName: 'leader.internal.example.com.', ttl: Duration.seconds(20) }, leases: ['jobs'], names: ['leader.internal.example.com'], like: false, lease: 'jobs' },
])('leaderDiscovery with Route 53: $title', ({ props, leases, names, like, lease }) => {
  let s: Synthesized<Stack>;
  let t: Template;
  let c: Conclave;
  let id: ReturnType<typeof discoveryIds>;
  let aws: FakeAws;

  beforeAll(async () => {
    s = synth((app) => {
      const stack = new Stack(app, 'Route53');
      c = new Conclave(stack, 'Conclave', { push: false, removalPolicy: RemovalPolicy.DESTROY, leaderDiscovery: { ...(leases ? { leaseNames: leases } : {}), route53: { hostedZone: importedZone(stack), ...props } } });
      return stack;
    });
    t = s.template;
    id = discoveryIds(s.stack, c);
    aws = await fakeAws();
  });
  afterAll(async () => {
    s?.cleanup();
    await aws?.close();
  });

  it('synthesizes cdk-nag clean, with no acknowledgement on the function’s role', () => {
    expect(unacknowledged(s.report)).toEqual([]);
    expect(metadataAcknowledgements(c.leaderDiscovery!.fn.role!)).toEqual([]);
  });

  it('tells at synth (an info: --strict passes), with every lease named by a record each, that lease names must differ ignoring case', () => {
    const warnings = Annotations.fromStack(s.stack).findInfo('*', Match.stringLikeRegexp('unique ignoring case'));
    expect(warnings.map((w) => String(w.entry.data))).toEqual(leases ? [] : [expect.stringMatching(/unique ignoring case, or give leaseNames/)]);
  });

  it('gives the function the zone, the record name (fully qualified) and the TTL; no Cloud Map service', () => {
    const vars = t.toJSON()['Resources'][id.fn].Properties.Environment.Variables;
    const recordName = props.recordName.includes('{lease}') ? `{lease}.leader.${ZONE}` : `leader.${ZONE}`;
    expect(vars).toEqual({
      [DISCOVERY_ENV.table]: { Ref: id.table },
      [DISCOVERY_ENV.leasesTable]: s.stack.resolve(c.tables.leases.tableName),
      [DISCOVERY_ENV.identitiesTable]: s.stack.resolve(c.tables.identities.tableName),
      [DISCOVERY_ENV.leasesTableArn]: s.stack.resolve(c.tables.leases.tableArn),
      [DISCOVERY_ENV.electionConfig]: JSON.stringify({ clockSkewMs: c.config.clockSkewMs }),
      [DISCOVERY_ENV.hostedZoneId]: ZONE_ID,
      [DISCOVERY_ENV.recordName]: recordName,
      [DISCOVERY_ENV.ttlSeconds]: String(props.ttl?.toSeconds() ?? 5),
      ...(leases ? { [DISCOVERY_ENV.leases]: JSON.stringify(leases) } : {}),
    });
    expect(c.leaderDiscovery!.recordName).toBe(recordName);
    expect(t.findResources('AWS::ServiceDiscovery::Service')).toEqual({});
    t.hasResourceProperties('AWS::Events::Rule', { EventPattern: Match.objectLike({ 'detail-type': [...DISCOVERY_DETAIL_TYPES], ...(leases ? { detail: { lease: leases } } : {}) }) });
    if (!leases) expect(t.toJSON()['Resources'][id.rule].Properties.EventPattern.detail).toBeUndefined();
  });

  it('grants ChangeResourceRecordSets on the one zone, kept to the leases’ record names, A/AAAA/CNAME, UPSERT and DELETE; ListResourceRecordSets there', () => {
    const st = ownStatements(t, id.role).filter((x) => x.Action.some((a) => a.startsWith('route53:')));
    const zone = { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, `:route53:::hostedzone/${ZONE_ID}`]] };
    const kinds = { 'route53:ChangeResourceRecordSetsRecordTypes': ['A', 'AAAA', 'CNAME'], 'route53:ChangeResourceRecordSetsActions': ['UPSERT', 'DELETE'] };
    const named = { 'route53:ChangeResourceRecordSetsNormalizedRecordNames': names };
    // (CDK writes a one-value list as the value)
    const one = (o: Record<string, Record<string, unknown>> | undefined) =>
      Object.fromEntries(Object.entries(o ?? {}).map(([op, keys]) => [op, Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, ([] as unknown[]).concat(v)]))]));
    expect(st.map((x) => ({ ...x, Condition: one(x.Condition) }))).toEqual([
      { Effect: 'Allow', Action: [...DISCOVERY_ACCESS.route53Change], Resource: [zone], Condition: like ? { 'ForAllValues:StringLike': named, 'ForAllValues:StringEquals': kinds } : { 'ForAllValues:StringEquals': { ...named, ...kinds } } },
      { Effect: 'Allow', Action: [...DISCOVERY_ACCESS.route53List], Resource: [zone], Condition: {} },
    ]);
  });

  it('allows every request the function sends for its leases, and refuses a write to another name, another type or a CREATE', async () => {
    const st = statementsOf(t, id.role);
    const recordName = c.leaderDiscovery!.recordName!;
    // given the leases the function's environment names (leaseNames), as the function is
    const naming = route53Naming(aws.route53(), { hostedZoneId: aws.hostedZoneId, recordName, ttlSeconds: 5, leases: leases && new Set(leases) });
    await naming.point(lease, target('10.0.0.7:8080'));
    await naming.point(lease, target('worker-2.internal:8080'));
    await naming.point(lease, target('[fd00::2]:8080'));
    await naming.clear(lease);
    const sent = aws.calls.map((x) => ({ ...x, input: { ...x.input } }));
    expect(new Set(sent.map((x) => x.action))).toEqual(new Set([...DISCOVERY_ACCESS.route53List, ...DISCOVERY_ACCESS.route53Change]));
    for (const call of sent) expect(route53Allows(st, call), JSON.stringify(call.input)).toBe(true);

    const change = (name: string, type = 'A', action = 'UPSERT'): RecordedCall => ({ action: 'route53:ChangeResourceRecordSets', input: { changes: [{ action, record: { name: `${name}.`, type, ttl: 5, values: ['10.0.0.1'] } }] } });
    const mine = recordName.replace('{lease}', lease);
    expect(route53Allows(st, change(mine))).toBe(true);
    expect(route53Allows(st, change(`www.${ZONE}`))).toBe(false);
    expect(route53Allows(st, change(ZONE, 'NS'))).toBe(false);
    expect(route53Allows(st, change(mine, 'TXT'))).toBe(false);
    expect(route53Allows(st, change(mine, 'A', 'CREATE'))).toBe(false);
    // a batch that also touches another name is refused whole (ForAllValues)
    const both = change(mine);
    (both.input['changes'] as unknown[]).push((change(`www.${ZONE}`).input['changes'] as unknown[])[0]);
    expect(route53Allows(st, both)).toBe(false);
  });
});

describe('leaderDiscovery is validated at synth, each error naming the field', () => {
  const zone = (stack: Stack) => importedZone(stack);
  const ns = (stack: Stack) => new servicediscovery.HttpNamespace(stack, 'Ns', { name: 'n.internal' });
  const cases: [string, (stack: Stack) => ConclaveProps, string, RegExp][] = [
    ['neither Cloud Map nor Route 53', () => ({ leaderDiscovery: {} }), 'leaderDiscovery.cloudMap', /cloudMap \(\{ namespace \}\) or route53/],
    ['both', (st) => ({ leaderDiscovery: { cloudMap: { namespace: ns(st) }, route53: { hostedZone: zone(st), recordName: '{lease}.leader' } } }), 'leaderDiscovery.route53', /not both/],
    ['no namespace', () => ({ leaderDiscovery: { cloudMap: {} as never } }), 'leaderDiscovery.cloudMap.namespace', /namespace/],
    ['a service name Cloud Map refuses', (st) => ({ leaderDiscovery: { cloudMap: { namespace: ns(st), serviceName: 'the leader' } } }), 'leaderDiscovery.cloudMap.serviceName', /DNS labels/],
    ['one name for every lease', (st) => ({ leaderDiscovery: { route53: { hostedZone: zone(st), recordName: 'leader' } } }), 'leaderDiscovery.route53.recordName', /must hold \{lease\}.*every lease/],
    ['one name for two leases', (st) => ({ leaderDiscovery: { leaseNames: ['a', 'b'], route53: { hostedZone: zone(st), recordName: 'leader' } } }), 'leaderDiscovery.route53.recordName', /must hold \{lease\}.*2 leases/],
    ['a lease name that is no host-name label', (st) => ({ leaderDiscovery: { leaseNames: ['jobs', 'team/reports:nightly'], route53: { hostedZone: zone(st), recordName: '{lease}.leader' } } }), 'leaderDiscovery.leaseNames[1]', /team\/reports:nightly\.leader\.internal\.example\.com.*not a host-name label/],
    // found by a review (2026-12-05): each replaced the other's leader, and a release of one cleared the other's name
    ['two leases whose names differ only in case (one record: DNS names ignore case)', (st) => ({ leaderDiscovery: { leaseNames: ['orders', 'jobs', 'Orders'], route53: { hostedZone: zone(st), recordName: '{lease}.leader' } } }), 'leaderDiscovery.leaseNames[2]', /orders\.leader\.internal\.example\.com, as "orders" \(leaseNames\[0\]\) does: DNS names ignore case/],
    ['the zone apex', (st) => ({ leaderDiscovery: { leaseNames: ['jobs'], route53: { hostedZone: zone(st), recordName: `${ZONE}.` } } }), 'leaderDiscovery.route53.recordName', /apex/],
    ['a zone without its name', (st) => ({ leaderDiscovery: { route53: { hostedZone: route53.HostedZone.fromHostedZoneId(st, 'Z', ZONE_ID), recordName: '{lease}.leader' } } }), 'leaderDiscovery.route53.hostedZone', /fromHostedZoneAttributes/],
    ['no zone', () => ({ leaderDiscovery: { route53: { recordName: '{lease}.leader' } as never } }), 'leaderDiscovery.route53.hostedZone', /is required/],
    ['a TTL of two days', (st) => ({ leaderDiscovery: { route53: { hostedZone: zone(st), recordName: '{lease}.leader', ttl: Duration.days(2) } } }), 'leaderDiscovery.route53.ttl', /at most a day/],
    ['no lease names', (st) => ({ leaderDiscovery: { leaseNames: [], cloudMap: { namespace: ns(st) } } }), 'leaderDiscovery.leaseNames', /at least one/],
    // found by a review (2026-12-06): a misspelt key was dropped, so the rule matched every lease and the service was named conclave-leader
    ['a misspelt leaseNames', (st) => ({ leaderDiscovery: { leasenames: ['orders'], cloudMap: { namespace: ns(st) } } as never }), 'leaderDiscovery.leasenames', /unknown option "leasenames" \(did you mean "leaseNames"\?\)/],
    ['a misspelt serviceName', (st) => ({ leaderDiscovery: { cloudMap: { namespace: ns(st), servicename: 'orders-leader' } } as never }), 'leaderDiscovery.cloudMap.servicename', /did you mean "serviceName"/],
    ['a misspelt ttl', (st) => ({ leaderDiscovery: { route53: { hostedZone: zone(st), recordName: '{lease}.leader', TTL: Duration.seconds(60) } } as never }), 'leaderDiscovery.route53.TTL', /unknown option "TTL"/],
    // two tables of one name (CDK only warned; the deploy failed)
    ['a table named as the discovery table', (st) => ({ tablePrefix: 'x', tableNames: { leases: 'x-discovery' }, leaderDiscovery: { cloudMap: { namespace: ns(st) } } }), 'tableNames.leases', /is the leader discovery table's name too \(x-discovery/],
    ['with regions', (st) => ({ tablePrefix: 'p', regions: { replicas: ['us-east-1', 'us-east-2', 'us-west-2'] }, leaderDiscovery: { cloudMap: { namespace: ns(st) } } }), 'leaderDiscovery', /not supported with `regions`/],
  ];
  it.each(cases)('rejects %s', (_, props, field, message) => {
    const stack = new Stack(new App(), 'Bad', { env: { region: 'us-east-1' } });
    const error = thrown(() => new Conclave(stack, 'Conclave', props(stack)));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).fields).toContain(field);
    expect((error as ValidationError).issues.find((i) => i.field === field)!.message).toMatch(message);
  });

  it('leaves it out by default: no discovery function, table or rule', () => {
    const stack = new Stack(new App(), 'None');
    const c = new Conclave(stack, 'Conclave', { push: false });
    expect(c.leaderDiscovery).toBeUndefined();
    expect(stack.node.tryFindChild('Conclave')!.node.tryFindChild('Discovery')).toBeUndefined();
  });
});
