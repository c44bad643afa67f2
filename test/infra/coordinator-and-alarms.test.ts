/**
 * The coordinator never runs twice at once (reserved concurrency 1), and the ready app sends its
 * alarms somewhere: an SNS topic (SSL only, cdk-nag clean), with an e-mail subscription when the
 * app is given `-c alarmEmail=...`.
 */
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addConclaveStack } from '../../infra/app/app.js';
import type { ConclaveStack } from '../../infra/stack.js';
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
