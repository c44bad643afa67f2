/**
 * The construct's alarms as a review of Conclave's observability found them wanting (2026-12-07,
 * fifteenth), each synthesized and its properties held here:
 * - LeaderlessLeases fired only 10–15 minutes in (the fleet-wide gauge ≥ 1 at every tick of two
 *   5-minute periods), and on churn at scale (different leases caught mid-election at successive
 *   ticks add up). It now watches the leases vacant past their bound (`conclave_leases_leaderless_past_bound`,
 *   lib/functions/core.ts leaderlessPastBound) at 3 of 5 one-minute ticks; the coordinator's silence is
 *   ReconcileFailures' to tell (missing data breaching there).
 * - ElectionFailures wanted a failure in each of two periods, but a lease whose candidates cannot
 *   win records its failure once: one datapoint now fires it.
 * - The four DeadLetters alarms shared one description (a stream's replay) that fits neither the
 *   timer queue (its replay is another procedure) nor the platform queue (nothing to replay).
 * - IteratorAge was described as the oldest record not yet handled (Lambda's is the last record of
 *   the batch it sent), and nothing said a throttled function, or a disabled mapping, reports none.
 * - DiscoveryUnswept wanted 5 breaching minutes of 5: a sweep's datapoint slipping into the next
 *   minute reset it.
 * - Throttles and wakes not sent are on the dashboard (no alarm: docs/deploy.md says what to watch).
 */
import { App, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as servicediscovery from 'aws-cdk-lib/aws-servicediscovery';
import { beforeAll, describe, expect, it } from 'vitest';
import { Conclave, type ConclaveProps } from '../../infra/conclave.js';
import { DISCOVERY_SWEEP_LEFT_METRIC } from '../../lib/discovery/wiring.js';
import { LEADERLESS_PAST_BOUND, METRIC, NAMESPACE, SERVICE, WAKES_NOT_SENT } from '../../lib/functions/metrics.js';
import { wiring, type FunctionName } from '../../lib/wiring.js';
import { buildAssets, logicalId } from './support.js';

beforeAll(buildAssets);

type Props = Record<string, any>;

function synthed(props: ConclaveProps = {}) {
  const stack = new Stack(new App(), 'Alarms');
  const c = new Conclave(stack, 'Conclave', props);
  const resources = Template.fromStack(stack).toJSON()['Resources'] as Record<string, { Type: string; Properties: Props }>;
  const of = (a: cloudwatch.Alarm): Props => resources[logicalId(stack, a)]!.Properties;
  const dashboard = JSON.stringify(Object.values(resources).find((r) => r.Type === 'AWS::CloudWatch::Dashboard')!.Properties['DashboardBody']);
  return { stack, c, of, dashboard };
}

describe('LeaderlessLeases: leases vacant past their bound, at 3 of 5 one-minute ticks', () => {
  it('watches the coordinator\'s past-bound gauge (Maximum), 1-minute periods, 3 of 5, missing ticks passed over; its description points at describe lease and the workers\' onError', () => {
    const { c, of } = synthed();
    const a = of(c.alarms.leaderlessLeases);
    // before: coordinated_leader_election_leaderless_leases, Minimum, 300 s, 2 of 2, breaching: fired 10–15 minutes in, and on churn
    expect(a).toMatchObject({ Namespace: NAMESPACE, MetricName: LEADERLESS_PAST_BOUND, Statistic: 'Maximum', Period: 60, EvaluationPeriods: 5, DatapointsToAlarm: 3, Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', TreatMissingData: 'missing' });
    expect(a['Dimensions']).toEqual(expect.arrayContaining([{ Name: 'function', Value: 'coordinator' }, { Name: 'service', Value: SERVICE }]));
    expect(a['AlarmDescription']).toMatch(/conclave describe lease NAME/);
    expect(a['AlarmDescription']).toMatch(/stands down \.\.\. its work failed at two starts/);
    expect(a['AlarmDescription']).toMatch(/onError/);
    expect(a['AlarmDescription']).toMatch(/leaderlessPastBound/);
    expect(String(a['AlarmDescription']).length).toBeLessThanOrEqual(1024);
  });

  it.each([
    [Duration.minutes(10), 600, 5, 3],
    [Duration.hours(84), 302_400, 2, 2], // two periods: CloudWatch judges an alarm over 7 days at most
  ])('a tick of %s: periods of the tick (%i s), %i of them, %i to fire', (tick, period, n, m) => {
    const { c, of } = synthed({ tick });
    expect(of(c.alarms.leaderlessLeases)).toMatchObject({ Period: period, EvaluationPeriods: n, DatapointsToAlarm: m });
  });

  it('ReconcileFailures tells a coordinator that does not run: its gauge (published at every tick) missing breaches', () => {
    const { c, of } = synthed();
    const a = of(c.alarms.reconcileFailures);
    // before: notBreaching (LeaderlessLeases, breaching, told it)
    expect(a).toMatchObject({ MetricName: METRIC.reconcileFailures, Statistic: 'Minimum', Period: 300, EvaluationPeriods: 2, TreatMissingData: 'breaching' });
    expect(a['AlarmDescription']).toMatch(/no tick ran at all/);
  });

  it('the dashboard graphs the past-bound gauge beside the leaderless one, each function\'s throttles, and the wakes not sent', () => {
    const { dashboard } = synthed();
    for (const m of [METRIC.leaderless, LEADERLESS_PAST_BOUND, WAKES_NOT_SENT, '\\"AWS/Lambda\\",\\"Throttles\\"']) expect(dashboard, m).toContain(m);
  });
});

describe('ElectionFailures: one datapoint fires it', () => {
  it('1 of 2 periods (a lease whose candidates cannot win records its failure once: two periods in a row never came)', () => {
    const { c, of } = synthed();
    // before: EvaluationPeriods 2, no DatapointsToAlarm (2 of 2)
    expect(of(c.alarms.electionFailures)).toMatchObject({ EvaluationPeriods: 2, DatapointsToAlarm: 1, Threshold: 1, TreatMissingData: 'notBreaching' });
  });
});

describe('each dead-letter queue\'s alarm says what its messages are and what to do with them', () => {
  it('four descriptions, no two alike: the lease stream\'s replay, the timer queue\'s hand-back, the platform\'s purge', () => {
    const { c, of } = synthed();
    const text = (n: FunctionName) => String(of(c.alarms.deadLetters[n]!)['AlarmDescription']);
    const queues = Object.keys(c.alarms.deadLetters) as FunctionName[];
    expect(queues.sort()).toEqual(['candidateStream', 'electionTimer', 'leaseStream', 'platform']);
    // before: one text for all four, about stream records and "replay … then purge"
    expect(new Set(queues.map(text)).size).toBe(4);
    expect(text('leaseStream')).toMatch(/stuckRecord.*A stream record that keeps failing/s);
    expect(text('electionTimer')).toMatch(/timer queue's part/);
    expect(text('electionTimer')).not.toMatch(/poisonRecord|stuckRecord/);
    expect(text('platform')).toMatch(/stop events/);
    expect(text('platform')).not.toMatch(/replay (each|a poisonRecord)/);
    for (const n of queues) expect(text(n).length, n).toBeLessThanOrEqual(1024);
  });
});

describe('IteratorAge is described as Lambda measures it', () => {
  it('the age of the last record of a batch sent; a throttled function or a disabled mapping reports none', () => {
    const { c, of } = synthed();
    const streams = (Object.keys(wiring) as FunctionName[]).filter((n) => wiring[n].trigger.kind === 'stream');
    for (const n of streams) {
      const d = String(of(c.alarms.streamIteratorAge[n]!)['AlarmDescription']);
      // before: "See the function's errors, throttles and log", nothing of a function sent no batch
      expect(d).toMatch(/last record of a batch/);
      expect(d).toMatch(/event source mapping disabled/);
      expect(d.length).toBeLessThanOrEqual(1024);
    }
  });
});

describe('DiscoveryUnswept: 5 of the last 6 minutes', () => {
  it('a sweep\'s datapoint slipping into the next minute leaves a lasting fault told', () => {
    const stack = new Stack(new App(), 'Discovery', { env: { region: 'eu-west-1' } });
    const ns = new servicediscovery.HttpNamespace(stack, 'Namespace', { name: 'conclave.internal' });
    const c = new Conclave(stack, 'Conclave', { leaderDiscovery: { leaseNames: ['nightly-report'], cloudMap: { namespace: ns } } });
    const a = (Template.fromStack(stack).toJSON()['Resources'] as Record<string, { Properties: Props }>)[logicalId(stack, c.leaderDiscovery!.alarms.namesUnswept)]!.Properties;
    // before: EvaluationPeriods 5, no DatapointsToAlarm (5 of 5)
    expect(a).toMatchObject({ MetricName: DISCOVERY_SWEEP_LEFT_METRIC, Period: 60, EvaluationPeriods: 6, DatapointsToAlarm: 5, TreatMissingData: 'notBreaching' });
    expect(JSON.stringify(a['AlarmDescription'])).toMatch(/5 of the last 6 minutes/); // (a Fn::Join: it names the service)
  });
});
