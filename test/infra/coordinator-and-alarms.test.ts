/**
 * The coordinator never runs twice at once (reserved concurrency 1), and the ready app sends its
 * alarms somewhere: an SNS topic (SSL only, cdk-nag clean), with an e-mail subscription when the
 * app is given `-c alarmEmail=...`.
 */
import { App, Lazy, Stack } from 'aws-cdk-lib';
import * as kms from 'aws-cdk-lib/aws-kms';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addConclaveStack } from '../../infra/app/app.js';
import { ConclaveReplicaStack } from '../../infra/replica.js';
import { ConclaveStack } from '../../infra/stack.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { wiring, type FunctionName } from '../../lib/wiring.js';
import { buildAssets, ids, logicalId, synth, unacknowledged, type Synthesized } from './support.js';

const names = Object.keys(wiring) as FunctionName[];

beforeAll(buildAssets);

describe('the Conclave app: one coordinator at a time, alarms to a topic', () => {
  let s: Synthesized<ConclaveStack>;
  let t: Template;
  beforeAll(() => {
    s = synth((app) => addConclaveStack(app));
    t = s.template;
  });
  afterAll(() => s?.cleanup());

  it('reserves exactly one concurrent execution for the coordinator, and none for the other functions', () => {
    const id = ids(s.stack, s.stack.conclave);
    const fns = t.findResources('AWS::Lambda::Function');
    expect(fns[id.fn('coordinator')]!['Properties']['ReservedConcurrentExecutions']).toBe(1);
    for (const n of names.filter((n) => n !== 'coordinator')) expect(fns[id.fn(n)]!['Properties']['ReservedConcurrentExecutions'], n).toBeUndefined();
  });

  it('sends every alarm and its recovery to an SNS topic that refuses requests without TLS, cdk-nag clean', () => {
    const topics = t.findResources('AWS::SNS::Topic');
    expect(Object.keys(topics)).toHaveLength(1);
    const topic = logicalId(s.stack, s.stack.alarmTopic);
    const alarms = Object.values(t.findResources('AWS::CloudWatch::Alarm')).map((a) => a['Properties']);
    expect(alarms.length).toBeGreaterThan(0);
    for (const a of alarms) expect(a).toMatchObject({ AlarmActions: [{ Ref: topic }], OKActions: [{ Ref: topic }] });
    t.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]) },
    });
    expect(t.findResources('AWS::SNS::Subscription')).toEqual({}); // no address given, no subscription
    expect(unacknowledged(s.report)).toEqual([]);
  });

  it('with -c alarmEmail=…, subscribes that address', () => {
    const e = synth((app) => {
      app.node.setContext('alarmEmail', 'oncall@example.com');
      return addConclaveStack(app);
    });
    try {
      e.template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'oncall@example.com', TopicArn: { Ref: logicalId(e.stack, e.stack.alarmTopic) } });
      expect(unacknowledged(e.report)).toEqual([]);
    } finally {
      e.cleanup();
    }
  });

  it('refuses an alarmEmail that is no e-mail address, naming the context key', () => {
    expect(() =>
      synth((app) => {
        app.node.setContext('alarmEmail', 'oncall');
        return addConclaveStack(app);
      }),
    ).toThrow(/alarmEmail/);
  });
});

describe("the published stacks' alarmEmail prop (ConclaveStack, ConclaveReplicaStack)", () => {
  const MRSC = { tablePrefix: 'mail', regions: { replicas: ['us-east-1', 'us-east-2'], witness: 'us-west-2' } };
  const build = {
    ConclaveStack: (alarmEmail: string) => new ConclaveStack(new App(), 'Conclave', { alarmEmail }),
    ConclaveReplicaStack: (alarmEmail: string) => {
      const app = new App();
      const primary = new ConclaveStack(app, 'Conclave', { env: { region: 'us-east-1' }, conclave: MRSC });
      return new ConclaveReplicaStack(app, 'Conclave-us-east-2', { env: { region: 'us-east-2' }, primary: primary.conclave, alarmEmail });
    },
  };

  // before: taken as given, and subscribed: CloudFormation refused it at deploy time (SNS: invalid parameter), after the tables were made
  it.each(Object.keys(build) as (keyof typeof build)[])('%s refuses an alarmEmail that is no e-mail address when created, naming the prop and the fix', (kind) => {
    let thrown: unknown;
    try {
      build[kind]('oncall');
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(ValidationError);
    expect((thrown as ValidationError).issues).toEqual([{ field: 'alarmEmail', message: expect.stringMatching(/must be an e-mail address.*oncall@example\.com/) }]);
    expect((thrown as Error).message).toMatch(new RegExp(`^invalid ${kind} props: alarmEmail: `));
  });

  it.each(Object.keys(build) as (keyof typeof build)[])('%s: a valid address is subscribed, and one given as a token is left to CloudFormation', (kind) => {
    Template.fromStack(build[kind]('oncall@example.com')).hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'oncall@example.com' });
    const later = Lazy.string({ produce: () => 'later@example.com' }); // unresolved at construction, as a CfnParameter's value is
    Template.fromStack(build[kind](later)).hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'later@example.com' });
  });
});

describe("ConclaveStack's own alarm topic on the construct's key", () => {
  it("lets CloudWatch use the key for this account's alarms only (aws:SourceAccount), as the logs and EventBridge statements are conditioned (a review, 2026-12-05: it had no condition)", () => {
    const app = new App();
    const keys = new Stack(app, 'Keys', { env: { account: '123456789012', region: 'eu-west-1' } });
    const key = new kms.Key(keys, 'Key', { enableKeyRotation: true });
    new ConclaveStack(app, 'Conclave', { env: { account: '123456789012', region: 'eu-west-1' }, conclave: { encryptionKey: key } });
    const keyPolicy = (Template.fromStack(keys).toJSON()['Resources'] as Record<string, { Type: string; Properties: { KeyPolicy: { Statement: { Sid?: string; Condition?: unknown }[] } } }>);
    const statement = Object.values(keyPolicy).find((r) => r.Type === 'AWS::KMS::Key')!.Properties.KeyPolicy.Statement.find((s) => s.Sid === 'AllowCloudWatchAlarmsToPublishToTheConclaveTopic');
    expect(statement?.Condition).toEqual({ StringEquals: { 'aws:SourceAccount': '123456789012' } });
  });
});
