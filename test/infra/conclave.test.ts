import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { App, Stack } from 'aws-cdk-lib';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FUNCTION_ACCESS, type FunctionAccess, type TableRole } from '../../infra/access.js';
import { addConclaveStack, checkedApp, stackIdFor } from '../../infra/app/app.js';
import { ASSET_FILE, functionCodeDir } from '../../infra/assets.js';
import type { Conclave } from '../../infra/conclave.js';
import type { ConclaveStack } from '../../infra/stack.js';
import { EVENTS_UNPUBLISHED, EVENTS_UNPUBLISHED_ALARM_MS, LEADERLESS_PAST_BOUND, METRIC, NAMESPACE, RECORDS_FAILED, SERVICE, WAKES_NOT_SENT } from '../../lib/functions/metrics.js';
import { electionConfig } from '../../lib/schemas/config.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { defaultTableNames, TABLES, TTL_ATTRIBUTE } from '../../lib/tables.js';
import { ENV, wiring, type FunctionName } from '../../lib/wiring.js';
import { acknowledged, actionsOn, buildAssets, getAtt, ids, logicalId, statementsOf, synth, thrown, unacknowledged, type Synthesized } from './support.js';

const names = Object.keys(wiring) as FunctionName[];
const roles = Object.keys(TABLES) as TableRole[];
const STREAM_READ = ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams'];
const sorted = (a: readonly string[] = []) => [...a].sort();
const iotTopicArn = (topic: string) => ({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':iot:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, `:topic/${topic}`]] });
const rate = (seconds: number) => `rate(${seconds / 60} minute${seconds === 60 ? '' : 's'})`;

describe('the Conclave app, as `cdk synth` builds it', () => {
  let s: Synthesized<ConclaveStack>;
  let t: Template;
  let c: Conclave;
  let id: ReturnType<typeof ids>;
  let resources: Record<string, { Type: string; Properties: Record<string, any>; DeletionPolicy?: string }>;
  /** Processes started during the synth (aws-cdk-lib runs esbuild, and Docker, through child_process). */
  const spawned: string[] = [];

  beforeAll(async () => {
    await buildAssets();
    const childProcess = createRequire(import.meta.url)('node:child_process') as Record<string, (...args: unknown[]) => unknown>;
    const spies = ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'].map((f) =>
      vi.spyOn(childProcess, f).mockImplementation((...args: unknown[]) => {
        spawned.push(`${f} ${JSON.stringify(args[0])}`);
        throw new Error(`synth started a process: ${f} ${JSON.stringify(args[0])}`);
      }),
    );
    try {
      s = synth(addConclaveStack);
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    t = s.template;
    c = s.stack.conclave;
    id = ids(s.stack, c);
    resources = t.toJSON()['Resources'];
  });
  afterAll(() => s?.cleanup());

  it('synthesizes with no cdk-nag finding, and every acknowledgement gives its reason', () => {
    expect(unacknowledged(s.report)).toEqual([]);
    // (the push path's IoT wildcards never reach the report: the construct acknowledges them in metadata, test/infra/push.test.ts)
    expect(acknowledged(s.report).map((a) => `${a.at} ${a.id}`).sort()).toEqual(
      names.filter((n) => wiring[n].trigger.kind === 'stream' || wiring[n].trigger.kind === 'events').map((n) => `Conclave/Conclave/${n[0]!.toUpperCase()}${n.slice(1)}DeadLetters AwsSolutions::AwsSolutions-SQS3`).sort(),
    );
    for (const a of acknowledged(s.report)) expect(a.reason.length, `${a.at} ${a.id}`).toBeGreaterThan(40);
  });

  it('fails synth on a finding: the checks are registered', () => {
    const outdir = mkdtempSync(join(tmpdir(), 'conclave-nag-'));
    try {
      const app = checkedApp({ outdir });
      new sqs.Queue(new Stack(app, 'Unchecked'), 'Plain');
      expect(() => app.synth()).toThrow(/AwsSolutions-SQS4/);
      expect(readFileSync(join(outdir, 'validation-report.json'), 'utf8')).toContain('AwsSolutions-SQS4');
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });

  it('creates the three tables: on-demand, streams where declared, PITR, TTL, retained with deletion protection', () => {
    expect(Object.keys(t.findResources('AWS::DynamoDB::GlobalTable'))).toHaveLength(roles.length);
    for (const r of roles) {
      const decl: { partitionKey: string; sortKey?: string; stream: boolean } = TABLES[r];
      const table = resources[id.table(r)]!;
      expect(table.DeletionPolicy).toBe('Retain');
      expect(table.Properties).toMatchObject({
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [{ AttributeName: decl.partitionKey, KeyType: 'HASH' }, ...(decl.sortKey ? [{ AttributeName: decl.sortKey, KeyType: 'RANGE' }] : [])],
        TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true },
        Replicas: [{ PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true }, DeletionProtectionEnabled: true }],
      });
      expect(table.Properties['StreamSpecification']).toEqual(decl.stream ? { StreamViewType: 'NEW_AND_OLD_IMAGES' } : undefined);
      expect(table.Properties['TableName'], 'the names the CLI and the examples assume').toBe(defaultTableNames()[r]);
    }
  });

  it('creates each function from the wiring: Node 24, arm64, ESM bundle, its own role and log group', () => {
    // and the push path's endpoint lookup (aws-cdk-lib's AwsCustomResource provider: test/infra/push.test.ts)
    expect(Object.keys(t.findResources('AWS::Lambda::Function')).filter((f) => !f.startsWith('AWS679f53fac002430cb0da5b7982bd2287'))).toHaveLength(names.length);
    const roleIds = new Set<string>();
    for (const n of names) {
      const fn = resources[id.fn(n)]!.Properties;
      const logId = logicalId(s.stack, c.functions[n].logGroup);
      expect(fn).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        MemorySize: wiring[n].memoryMb,
        Timeout: wiring[n].timeoutSeconds,
        Role: getAtt(id.role(n)),
        LoggingConfig: { LogGroup: { Ref: logId } },
      });
      roleIds.add(id.role(n));
      expect(resources[logId]).toMatchObject({ DeletionPolicy: 'Retain', Properties: { RetentionInDays: 30 } });
      expect(resources[id.role(n)]!.Properties['ManagedPolicyArns'], 'no AWSLambdaBasicExecutionRole').toBeUndefined();
      expect(resources[id.role(n)]!.Properties['AssumeRolePolicyDocument'].Statement).toEqual([
        { Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' } },
      ]);
    }
    expect(roleIds.size).toBe(names.length);
    const bundles = readdirSync(s.app.outdir).filter((d) => d.startsWith('asset.') && existsSync(join(s.app.outdir, d, 'index.mjs')));
    expect(bundles).toHaveLength(names.length);
  });

  it("deploys each function's pre-built directory as it is: an S3 asset of build/assets/<name>/ (index.mjs alone, byte for byte), whose `handler` export Lambda calls", async () => {
    const manifest = JSON.parse(readFileSync(join(s.app.outdir, `${s.stack.artifactId}.assets.json`), 'utf8')) as { files: Record<string, { source: { path: string; packaging: string } }> };
    for (const n of names) {
      const fn = resources[id.fn(n)]!.Properties;
      expect(fn['Handler']).toBe('index.handler');
      const hash = /^([0-9a-f]{64})\.zip$/.exec(fn['Code'].S3Key)?.[1];
      expect(hash, `${n}: Code.S3Key is an asset`).toBeDefined();
      expect(fn['Code']).toEqual({ S3Bucket: expect.anything(), S3Key: `${hash}.zip` });
      const asset = manifest.files[hash!]!;
      expect(asset.source).toEqual({ path: `asset.${hash}`, packaging: 'zip' });
      const staged = join(s.app.outdir, asset.source.path);
      expect(readdirSync(staged)).toEqual([ASSET_FILE]);
      expect(readFileSync(join(staged, ASSET_FILE)).equals(readFileSync(join(functionCodeDir(n), ASSET_FILE))), `${n}: the staged bundle is build/assets/${n}/${ASSET_FILE}`).toBe(true);
      const module = (await import(pathToFileURL(join(staged, ASSET_FILE)).href)) as Record<string, unknown>;
      expect(typeof module['handler'], `${n}: index.mjs exports handler`).toBe('function');
    }
  });

  it('synthesizes without starting a process: no esbuild, no Docker', () => {
    expect(spawned).toEqual([]);
  });

  it('gives every function the environment depsFromEnv reads, the election config with its defaults included', () => {
    const lookup = Object.keys(t.findResources('Custom::ConclaveIotEndpoint'))[0]!;
    for (const n of names) {
      const vars = resources[id.fn(n)]!.Properties['Environment'].Variables as Record<string, unknown>;
      // a stream function sends poison records to its own dead-letter queue
      const stream = wiring[n].trigger.kind === 'stream';
      // the push path: IoT Core's endpoint for the functions that wake workers
      const wakes = FUNCTION_ACCESS[n].publishWakes;
      expect(Object.keys(vars).sort()).toEqual(Object.values(ENV).filter((v) => (stream || v !== ENV.deadLetterQueueUrl) && (wakes || v !== ENV.pushEndpoint)).sort());
      expect(vars).toEqual({
        ...(stream ? { [ENV.deadLetterQueueUrl]: { Ref: id.dlq(n) } } : {}),
        ...(wakes ? { [ENV.pushEndpoint]: { 'Fn::Join': ['', ['https://', getAtt(lookup, 'endpointAddress')]] } } : {}),
        [ENV.leasesTable]: { Ref: id.table('leases') },
        [ENV.candidatesTable]: { Ref: id.table('candidates') },
        [ENV.identitiesTable]: { Ref: id.table('identities') },
        [ENV.eventBus]: getAtt(logicalId(s.stack, c.eventBus)),
        [ENV.leasesTableArn]: getAtt(id.table('leases')),
        [ENV.timerQueueUrl]: { Ref: id.timerQueue },
        [ENV.electionConfig]: JSON.stringify(electionConfig()),
      });
    }
  });

  it('wires each stream source as lib/wiring.ts declares it, with an SQS dead-letter destination', () => {
    const streams = names.filter((n) => wiring[n].trigger.kind === 'stream');
    expect(streams.length).toBeGreaterThan(0);
    for (const n of streams) {
      const tr = wiring[n].trigger;
      if (tr.kind !== 'stream') continue;
      t.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        FunctionName: { Ref: id.fn(n) },
        EventSourceArn: getAtt(id.table(tr.table), 'StreamArn'),
        BatchSize: tr.batchSize,
        MaximumBatchingWindowInSeconds: tr.maxBatchingWindowSeconds,
        StartingPosition: tr.startingPosition,
        BisectBatchOnFunctionError: tr.bisectOnError,
        MaximumRetryAttempts: tr.retryAttempts,
        MaximumRecordAgeInSeconds: tr.maxRecordAgeSeconds,
        FunctionResponseTypes: tr.reportBatchItemFailures ? ['ReportBatchItemFailures'] : Match.absent(),
        DestinationConfig: { OnFailure: { Destination: getAtt(id.dlq(n)) } },
        FilterCriteria: tr.filters ? { Filters: tr.filters.map((f) => ({ Pattern: JSON.stringify(f) })) } : Match.absent(),
        // an item's records stay in order under any factor (lib/wiring.ts)
        ParallelizationFactor: tr.parallelizationFactor,
      });
    }
    const mappings = Object.keys(t.findResources('AWS::Lambda::EventSourceMapping'));
    expect(mappings).toHaveLength(names.filter((n) => wiring[n].trigger.kind === 'stream' || wiring[n].trigger.kind === 'queue').length);
  });

  it('keeps each stream record until the stream trims it (24 h): a stream that falls behind drops none for its age', () => {
    // Lambda's -1: no maximum age. At 3,600 a stream an hour behind sent its records' shard
    // positions to the dead-letter queue unprocessed: their events, session marks and wakes lost
    const mappings = Object.values(t.findResources('AWS::Lambda::EventSourceMapping')).map((r) => r['Properties']).filter((p) => p.StartingPosition);
    expect(mappings).toHaveLength(names.filter((n) => wiring[n].trigger.kind === 'stream').length);
    for (const p of mappings) expect(p.MaximumRecordAgeInSeconds).toBe(-1);
  });

  it('retries a failing lease stream record until it is handled (MaximumRetryAttempts -1): its session mark is never given up', () => {
    // At 3, Lambda gave a record up seconds after its first failure (throttling, a network fault):
    // its ended-term mark was lost, and the next holder elected while the old one led on
    const mappings = Object.values(t.findResources('AWS::Lambda::EventSourceMapping')).map((r) => r['Properties']);
    const lease = mappings.filter((p) => JSON.stringify(p.FunctionName) === JSON.stringify({ Ref: id.fn('leaseStream') }));
    expect(lease).toHaveLength(1);
    expect(lease[0]).toMatchObject({ MaximumRetryAttempts: -1, MaximumRecordAgeInSeconds: -1, BisectBatchOnFunctionError: true, FunctionResponseTypes: ['ReportBatchItemFailures'] });
  });

  it('alarms on a stream 10 minutes behind, long before the stream trims a record (24 h)', () => {
    const streams = names.filter((n) => wiring[n].trigger.kind === 'stream');
    const ageAlarms = Object.values(t.findResources('AWS::CloudWatch::Alarm')).map((a) => a['Properties']).filter((a) => a['MetricName'] === 'IteratorAge');
    expect(ageAlarms.map((a) => JSON.stringify(a['Dimensions'])).sort()).toEqual(streams.map((n) => JSON.stringify([{ Name: 'FunctionName', Value: { Ref: id.fn(n) } }])).sort());
    for (const a of ageAlarms) expect(a).toMatchObject({ Namespace: 'AWS/Lambda', Statistic: 'Maximum', Period: 300, Threshold: 600_000, EvaluationPeriods: 2, ComparisonOperator: 'GreaterThanOrEqualToThreshold' });
    expect(Object.keys(c.alarms.streamIteratorAge).sort()).toEqual([...streams].sort());
  });

  it('puts rules on the default bus for each function on AWS services’ events, with the wiring’s patterns, retries and a dead-letter queue', () => {
    const onEvents = names.filter((n) => wiring[n].trigger.kind === 'events');
    expect(onEvents).toEqual(['platform']);
    const rules = Object.values(t.findResources('AWS::Events::Rule')).map((r) => r['Properties']).filter((p) => p.EventPattern);
    for (const n of onEvents) {
      const tr = wiring[n].trigger;
      if (tr.kind !== 'events') continue;
      const mine = rules.filter((p) => JSON.stringify(p.Targets).includes(id.fn(n)));
      expect(mine.map((p) => p.EventPattern)).toEqual(tr.patterns.map((p) => ({ source: p.source, 'detail-type': p['detail-type'], account: [{ Ref: 'AWS::AccountId' }], region: [{ Ref: 'AWS::Region' }], detail: p.detail })));
      for (const p of mine) {
        expect(p.EventBusName).toBe('default');
        expect(p.Targets[0]).toMatchObject({ DeadLetterConfig: { Arn: getAtt(id.dlq(n)) }, RetryPolicy: { MaximumEventAgeInSeconds: tr.maxEventAgeSeconds } });
      }
      t.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
        FunctionName: { Ref: id.fn(n) },
        MaximumRetryAttempts: tr.retryAttempts,
        MaximumEventAgeInSeconds: tr.maxEventAgeSeconds,
        DestinationConfig: { OnFailure: { Destination: getAtt(id.dlq(n)) } },
      });
    }
  });

  it('lets only the deployment’s own account and region through its platform rules (a foreign or misrouted event never invokes the function)', () => {
    const rules = Object.values(t.findResources('AWS::Events::Rule')).map((r) => r['Properties']).filter((p) => p.EventPattern);
    expect(rules.length).toBeGreaterThan(0);
    for (const p of rules) expect(p.EventPattern).toMatchObject({ account: [{ Ref: 'AWS::AccountId' }], region: [{ Ref: 'AWS::Region' }] });
  });

  it('runs the scheduled function at the wiring rate, without async retries beside the next tick', () => {
    for (const n of names) {
      const tr = wiring[n].trigger;
      if (tr.kind !== 'schedule') continue;
      t.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: rate(tr.everySeconds),
        State: 'ENABLED',
        Targets: [Match.objectLike({ Arn: getAtt(id.fn(n)), RetryPolicy: { MaximumEventAgeInSeconds: tr.everySeconds } })],
      });
      t.hasResourceProperties('AWS::Lambda::EventInvokeConfig', { FunctionName: { Ref: id.fn(n) }, MaximumRetryAttempts: 0 });
    }
  });

  it('feeds the election timer from its queue, which dead-letters after maxReceiveCount receives', () => {
    for (const n of names) {
      const tr = wiring[n].trigger;
      if (tr.kind !== 'queue') continue;
      t.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        FunctionName: { Ref: id.fn(n) },
        EventSourceArn: getAtt(id.timerQueue),
        BatchSize: tr.batchSize,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
      const q = resources[id.timerQueue]!.Properties;
      expect(q['RedrivePolicy']).toEqual({ deadLetterTargetArn: getAtt(id.dlq(n)), maxReceiveCount: tr.maxReceiveCount });
      expect(q['VisibilityTimeout']).toBeGreaterThanOrEqual(wiring[n].timeoutSeconds);
    }
    // every queue refuses plain HTTP
    for (const p of Object.values(t.findResources('AWS::SQS::QueuePolicy'))) {
      expect(p['Properties'].PolicyDocument.Statement).toContainEqual(expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }));
    }
    expect(Object.keys(t.findResources('AWS::SQS::QueuePolicy'))).toHaveLength(Object.keys(t.findResources('AWS::SQS::Queue')).length);
  });

  // a review (2026-12-07): Lambda's recursive loop detection (Terminate unless told) cut the election
  // timer's chains through its own queue at about 16 invocations: events deferred by an EventBridge
  // outage went to TimerDeadLetters after about 2 hours, not a day; a refused mark after minutes
  it('lets the chains of the function behind the timer queue, which sends to it, run (RecursiveLoop Allow); every other function keeps Lambda\'s Terminate', () => {
    const own = names.filter((n) => wiring[n].trigger.kind === 'queue' && FUNCTION_ACCESS[n].scheduleTimer);
    expect(own).toEqual(['electionTimer']);
    for (const n of names) expect(resources[id.fn(n)]!.Properties['RecursiveLoop'], n).toBe(own.includes(n) ? 'Allow' : undefined);
  });

  // a review (2026-12-07): any principal of the account allowed sqs:SendMessage on the timer queue
  // could send a mark (written on the holder's session row: its term ended) or events to publish
  it('lets only the functions that schedule timers send to the timer queue: a Deny for every other principal', () => {
    const policies = Object.values(t.findResources('AWS::SQS::QueuePolicy')).filter((p) => JSON.stringify(p['Properties'].Queues) === JSON.stringify([{ Ref: id.timerQueue }]));
    expect(policies).toHaveLength(1);
    const deny = (policies[0]!['Properties'].PolicyDocument.Statement as Record<string, any>[]).filter((x) => x['Effect'] === 'Deny' && !x['Condition']?.Bool);
    const senders = names.filter((n) => actionsOn(statementsOf(t, id.role(n)), getAtt(id.timerQueue)).includes('sqs:SendMessage'));
    expect(senders).toEqual(names.filter((n) => FUNCTION_ACCESS[n].scheduleTimer));
    expect(deny).toEqual([
      {
        Sid: 'OnlyConclaveFunctionsSend',
        Effect: 'Deny',
        Principal: { AWS: '*' },
        Action: 'sqs:SendMessage',
        Resource: getAtt(id.timerQueue),
        Condition: { ArnNotEquals: { 'aws:PrincipalArn': senders.map((n) => getAtt(id.role(n))) } },
      },
    ]);
    // no other queue of the construct is given one: their senders are AWS's services (and the stream functions' own poison records)
    const others = Object.values(t.findResources('AWS::SQS::QueuePolicy')).filter((p) => !policies.includes(p));
    for (const p of others) expect(JSON.stringify(p['Properties'].PolicyDocument)).not.toContain('OnlyConclaveFunctionsSend');
  });

  it("limits each function's role to its own tables, actions, stream, queues, bus and log group", () => {
    const busArn = getAtt(logicalId(s.stack, c.eventBus));
    for (const n of names) {
      const st = statementsOf(t, id.role(n));
      const access = FUNCTION_ACCESS[n];
      const tr = wiring[n].trigger;
      for (const r of roles) {
        expect(actionsOn(st, getAtt(id.table(r))), `${n} on ${r}`).toEqual(sorted((access.tables as Partial<Record<TableRole, readonly string[]>>)[r]));
        expect(actionsOn(st, getAtt(id.table(r), 'StreamArn')), `${n} on the ${r} stream`).toEqual(tr.kind === 'stream' && tr.table === r ? STREAM_READ : []);
      }
      for (const q of (access as FunctionAccess).indexQueries ?? []) {
        expect(actionsOn(st, { 'Fn::Join': ['', [getAtt(id.table(q.table)), `/index/${q.index}`]] }), `${n} on the ${q.index} index`).toEqual(['dynamodb:Query']);
      }
      expect(actionsOn(st, busArn).includes('events:PutEvents'), `${n} publishes`).toBe(access.publishEvents);
      expect(actionsOn(st, getAtt(id.timerQueue)).includes('sqs:SendMessage'), `${n} schedules timers`).toBe(access.scheduleTimer);
      if (tr.kind === 'stream') expect(actionsOn(st, getAtt(id.dlq(n))), `${n} sends poison records to its dead-letter queue`).toContain('sqs:SendMessage');
      const allowed = new Set(
        [
          ...roles.flatMap((r) => [getAtt(id.table(r)), getAtt(id.table(r), 'StreamArn')]),
          busArn,
          getAtt(id.timerQueue),
          ...(c.deadLetterQueues[n] && (tr.kind === 'stream' || tr.kind === 'events') ? [getAtt(id.dlq(n))] : []),
          ...(FUNCTION_ACCESS[n] as FunctionAccess).indexQueries?.map((q) => ({ 'Fn::Join': ['', [getAtt(id.table(q.table)), `/index/${q.index}`]] })) ?? [],
          getAtt(logicalId(s.stack, c.functions[n].logGroup)),
          // the push path: wakes of every lease of this deployment, both topic forms (test/infra/push.test.ts)
          ...((access as FunctionAccess).publishWakes ? ['lease', 'lease-hash', 'process'].map((k) => iotTopicArn(`conclave/${defaultTableNames().leases}/${k}/*`)) : []),
        ].map((x) => JSON.stringify(x)),
      );
      for (const statement of st) {
        expect(statement.Effect).toBe('Allow');
        for (const r of statement.Resource) expect(allowed.has(JSON.stringify(r)), `${n}: ${statement.Action.join(',')} on ${JSON.stringify(r)}`).toBe(true);
        for (const a of statement.Action) expect(a, `${n}: no wildcard actions`).not.toMatch(/\*/);
      }
    }
  });

  it('alarms on election failures, leaderless leases, broken leases, reconcile failures, events unpublished, dead letters, streams behind and function errors, with metric names from the code', () => {
    const alarms = Object.values(t.findResources('AWS::CloudWatch::Alarm')).map((a) => a['Properties']);
    const deadLetterQueues = Object.keys(c.deadLetterQueues);
    expect(alarms).toHaveLength(5 + deadLetterQueues.length + names.filter((n) => wiring[n].trigger.kind === 'stream').length + names.length);
    // the app's stack points every alarm at its topic (test/infra/coordinator-and-alarms.test.ts)
    for (const a of alarms) expect(a['AlarmActions']).toEqual([{ Ref: logicalId(s.stack, s.stack.alarmTopic) }]);

    const failures = alarms.find((a) => JSON.stringify(a['Metrics'] ?? '').includes(METRIC.failures))!;
    const stats = (failures['Metrics'] as { MetricStat?: { Metric: { Namespace: string; MetricName: string; Dimensions: { Name: string; Value: string }[] } } }[]).flatMap((m) => (m.MetricStat ? [m.MetricStat.Metric] : []));
    expect(stats.map((m) => m.Dimensions.find((d) => d.Name === 'function')!.Value).sort()).toEqual([...names].sort());
    for (const m of stats) {
      expect(m).toMatchObject({ Namespace: NAMESPACE, MetricName: METRIC.failures });
      expect(m.Dimensions).toContainEqual({ Name: 'service', Value: SERVICE });
    }

    // leases vacant past their bound, at 3 of 5 one-minute ticks (test/infra/alarm-review.test.ts)
    const leaderless = alarms.find((a) => a['MetricName'] === LEADERLESS_PAST_BOUND)!;
    expect(leaderless).toMatchObject({ Namespace: NAMESPACE, Statistic: 'Maximum', TreatMissingData: 'missing', Threshold: 1, Period: 60, EvaluationPeriods: 5, DatapointsToAlarm: 3 });
    expect(leaderless['Dimensions']).toEqual(expect.arrayContaining([{ Name: 'function', Value: 'coordinator' }, { Name: 'service', Value: SERVICE }]));

    // a lease row the schema refuses: no election is decided on it until an operator repairs it
    const broken = alarms.find((a) => a['MetricName'] === METRIC.brokenLeases)!;
    expect(broken).toMatchObject({ Namespace: NAMESPACE, Statistic: 'Maximum', TreatMissingData: 'notBreaching', Threshold: 1, EvaluationPeriods: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold' });
    expect(broken['Dimensions']).toEqual(expect.arrayContaining([{ Name: 'function', Value: 'coordinator' }, { Name: 'service', Value: SERVICE }]));
    expect(broken['AlarmDescription']).toMatch(/conclave describe lease/);
    expect(c.alarms.brokenLeases).toBeDefined();

    // reconciles that fail lease by lease at every tick for two periods (a review, 2026-12-06: every
    // write denied after a deploy read as 0 leaderless and a successful tick); no tick at all breaches
    const failed = alarms.find((a) => a['MetricName'] === METRIC.reconcileFailures)!;
    expect(failed).toMatchObject({ Namespace: NAMESPACE, Statistic: 'Minimum', TreatMissingData: 'breaching', Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', Period: 300, EvaluationPeriods: 2 });
    expect(failed['Dimensions']).toEqual(expect.arrayContaining([{ Name: 'function', Value: 'coordinator' }, { Name: 'service', Value: SERVICE }]));
    expect(failed['AlarmDescription']).toMatch(/reconcile failed; the next trigger retries/);
    expect(c.alarms.reconcileFailures).toBeDefined();

    // events EventBridge refuses for good: every record handled, every republish deferred again for a
    // day, no error and no dead letter (a review, 2026-12-07). The age the election timer measures at
    // each failed republish, which a refusal that lasts takes past 15 minutes (test/functions/lasting-refusal.test.ts)
    const unpublished = alarms.find((a) => a['MetricName'] === EVENTS_UNPUBLISHED)!;
    expect(unpublished).toMatchObject({ Namespace: NAMESPACE, Statistic: 'Maximum', Period: 300, Threshold: EVENTS_UNPUBLISHED_ALARM_MS, EvaluationPeriods: 4, DatapointsToAlarm: 1, TreatMissingData: 'notBreaching', ComparisonOperator: 'GreaterThanOrEqualToThreshold' });
    expect(unpublished['Dimensions']).toEqual(expect.arrayContaining([{ Name: 'service', Value: SERVICE }, { Name: 'function', Value: 'electionTimer' }, { Name: 'deployment', Value: s.stack.resolve(c.tables.leases.tableName) }]));
    expect(unpublished['AlarmDescription']).toMatch(/deferred events still not published; deferred again/);
    expect(wiring.electionTimer.trigger.kind, 'the function the timer queue feeds').toBe('queue');
    expect(c.alarms.eventsUnpublished).toBeDefined();

    const queueAlarms = alarms.filter((a) => a['MetricName'] === 'ApproximateNumberOfMessagesVisible');
    expect(queueAlarms.map((a) => JSON.stringify(a['Dimensions'][0].Value)).sort()).toEqual(deadLetterQueues.map((n) => JSON.stringify(getAtt(id.dlq(n as FunctionName), 'QueueName'))).sort());
    // whoever is paged learns what the messages are and where the replay is described (each queue its own: test/infra/alarm-review.test.ts)
    for (const a of queueAlarms) expect(a['AlarmDescription']).toMatch(/A stream record that keeps failing|purge/);
    const errorAlarms = alarms.filter((a) => a['MetricName'] === 'Errors');
    const batched = (n: FunctionName) => wiring[n].trigger.kind === 'stream' || wiring[n].trigger.kind === 'queue';
    expect(errorAlarms.map((a) => JSON.stringify(a['Dimensions'][0].Value)).sort()).toEqual(names.filter((n) => !batched(n)).map((n) => JSON.stringify({ Ref: id.fn(n) })).sort());
    // a batch function's: its failed invocations and the records it reported failed (a review,
    // 2026-12-07: a lease stream record failing beside records that pass is no Lambda error, and
    // LeaseStreamErrors never fired for it)
    for (const n of names.filter(batched)) {
      const a = alarms.find((x) => JSON.stringify(x['Metrics'] ?? '').includes(JSON.stringify({ Ref: id.fn(n) })))!;
      expect(a, n).toBeDefined();
      expect(a).toMatchObject({ Threshold: 1, EvaluationPeriods: 2, ComparisonOperator: 'GreaterThanOrEqualToThreshold' });
      const metrics = a['Metrics'] as { Id: string; Expression?: string; ReturnData?: boolean; MetricStat?: { Metric: { Namespace: string; MetricName: string; Dimensions: { Name: string; Value: unknown }[] }; Stat: string; Period: number } }[];
      expect(metrics.find((m) => m.Expression)).toMatchObject({ Expression: 'FILL(errors, 0) + FILL(failed, 0)' });
      expect(metrics.find((m) => m.Id === 'errors')!.MetricStat).toMatchObject({ Metric: { Namespace: 'AWS/Lambda', MetricName: 'Errors', Dimensions: [{ Name: 'FunctionName', Value: { Ref: id.fn(n) } }] }, Stat: 'Sum', Period: 300 });
      const failed = metrics.find((m) => m.Id === 'failed')!.MetricStat!;
      expect(failed).toMatchObject({ Metric: { Namespace: NAMESPACE, MetricName: RECORDS_FAILED }, Stat: 'Sum', Period: 300 });
      expect(failed.Metric.Dimensions).toEqual(expect.arrayContaining([{ Name: 'service', Value: SERVICE }, { Name: 'function', Value: n }, { Name: 'deployment', Value: s.stack.resolve(c.tables.leases.tableName) }]));
      expect(a['AlarmDescription']).toMatch(/record failed; reported for retry/);
    }
    expect(Object.keys(c.alarms.functionErrors).sort()).toEqual([...names].sort());
  });

  it('has a dashboard with the KEP metrics per lease, the gauges and every function', () => {
    const dashboards = Object.values(t.findResources('AWS::CloudWatch::Dashboard'));
    expect(dashboards).toHaveLength(1);
    const body = JSON.stringify(dashboards[0]!['Properties'].DashboardBody);
    for (const m of [...Object.values(METRIC), RECORDS_FAILED, EVENTS_UNPUBLISHED, LEADERLESS_PAST_BOUND, WAKES_NOT_SENT]) expect(body, m).toContain(m);
    // every alarm on the alarm status widget, the reconcile failures' too
    for (const a of [c.alarms.leaderlessLeases, c.alarms.brokenLeases, c.alarms.reconcileFailures, c.alarms.eventsUnpublished]) expect(body).toContain(logicalId(s.stack, a));
    expect(body).toContain('IteratorAge');
  });
});

describe("the ready app's stack for a table prefix", () => {
  // a review (2026-12-06): team.a, team_a and team-a were one stack, Conclave-team-a, and a deploy of
  // one renamed the other's tables (new empty ones made, the old ones kept and left behind)
  it('is one stack per prefix: a prefix with . or _ gets a hash of itself', () => {
    expect(stackIdFor('conclave')).toBe('Conclave');
    expect(stackIdFor('team-a')).toBe('Conclave-team-a');
    const ids = ['team.a', 'team_a', 'team-a'].map(stackIdFor);
    expect(new Set(ids).size).toBe(3);
    expect(ids[0]).toMatch(/^Conclave-team-a-[0-9a-f]{8}$/);
    expect(stackIdFor('team.a')).toBe(ids[0]); // the same prefix, the same stack, every synth
  });

  it('-c stackName names it (a deployment made before keeps its stack); a name CloudFormation refuses is refused, naming stackName', () => {
    const bad = thrown(() => addConclaveStack(new App({ context: { tablePrefix: 'team.a', stackName: 'team a' } })));
    expect(bad).toBeInstanceOf(ValidationError);
    expect((bad as ValidationError).fields).toEqual(['stackName']);
  });
});
