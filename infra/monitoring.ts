/**
 * Conclave's alarms and dashboard: election failures, leaderless and broken leases, reconcile failures, dead letters, streams
 * behind, function errors, events EventBridge keeps refusing; the KEP metrics per lease, the gauges, every function, the streams and the queues.
 * Metric names and dimensions come from the code that publishes them (lib/functions/metrics.ts): each
 * alarm and graph selects this deployment's metrics by their `deployment` dimension.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { DIMENSION, EVENTS_UNPUBLISHED, EVENTS_UNPUBLISHED_ALARM_MS, METRIC, NAMESPACE, RECORDS_FAILED, SERVICE } from '../lib/functions/metrics.js';
import { wiring, type FunctionName } from '../lib/wiring.js';
import { pascal } from './functions.js';

/** A function whose trigger delivers records in batches and takes back the ones it reports failed (a stream, the timer queue). */
const batchFunction = (name: FunctionName): boolean => wiring[name].trigger.kind === 'stream' || wiring[name].trigger.kind === 'queue';

/** What ConclaveMonitoring watches: the resources of a `Conclave` (which passes its own). */
export interface ConclaveMonitoringProps {
  /**
   * The deployment whose metrics the alarms and graphs select: its leases table's name
   * (`tables.leases.tableName`), which its functions publish every metric with as the dimension
   * `deployment`, beside `service` and `function`. Another deployment in the account and Region
   * publishes under its own.
   */
  readonly deployment: string;
  /** The functions, by their name in the wiring: an errors alarm each, and their graphs. */
  readonly functions: Readonly<Record<FunctionName, lambda.IFunction>>;
  /** The dead-letter queues, by the function whose failures they take: an alarm each. */
  readonly deadLetterQueues: Readonly<Partial<Record<FunctionName, sqs.IQueue>>>;
  /** The election timer's queue: delayed (open elections) and visible messages on the dashboard. */
  readonly timerQueue: sqs.IQueue;
  /**
   * The coordinator's tick: the leaderless gauge is published once a tick, so its alarm period is
   * at least one tick.
   * @default Duration.seconds(wiring.coordinator.trigger.everySeconds): 1 minute
   */
  readonly tick?: Duration;
  /** Alarm and OK notifications go to this topic. @default the alarms have no actions */
  readonly alarmTopic?: sns.ITopic;
}

/**
 * An alarm as every Conclave alarm is: at or above its threshold, missing data not breaching
 * (unless `props` says otherwise), notifying `topic` when it fires and when it recovers.
 */
export function conclaveAlarm(scope: Construct, id: string, props: cloudwatch.AlarmProps, topic: sns.ITopic | undefined): cloudwatch.Alarm {
  const a = new cloudwatch.Alarm(scope, id, { comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD, treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING, ...props });
  if (topic) {
    a.addAlarmAction(new cwActions.SnsAction(topic));
    a.addOkAction(new cwActions.SnsAction(topic));
  }
  return a;
}

/** The alarms of ConclaveMonitoring. */
export interface ConclaveAlarms {
  /** Elections failed (no live candidate acknowledged) in two periods in a row (5 minutes, or the tick when longer), summed over every function. */
  readonly electionFailures: cloudwatch.Alarm;
  /** At every tick for two periods some lease with live candidates, or whose reconcile failed, had no live holder; no data (no tick) counts as breaching. */
  readonly leaderlessLeases: cloudwatch.Alarm;
  /** At a tick some lease row did not match the schema: no election is decided on it until an operator repairs it. */
  readonly brokenLeases: cloudwatch.Alarm;
  /**
   * At every tick for two periods some reconcile failed (the coordinator's gauge
   * `coordinated_leader_election_reconcile_failures`): a tick that fails lease by lease (every write
   * denied after a deploy, say) still ends normally, so the function's errors alarm does not see it.
   */
  readonly reconcileFailures: cloudwatch.Alarm;
  /**
   * Events EventBridge refused have waited on the timer queue 15 minutes or more
   * (EVENTS_UNPUBLISHED_ALARM_MS): it refuses for good (the role without events:PutEvents, the bus
   * deleted, its key disabled). Their records count as handled and their republishes go back on the
   * queue for a day, so no errors alarm or dead letter tells it before then; a brief outage never
   * lasts to it.
   */
  readonly eventsUnpublished: cloudwatch.Alarm;
  /** A dead-letter queue has a message, by the function whose queue it is. */
  readonly deadLetters: Partial<Record<FunctionName, cloudwatch.Alarm>>;
  /**
   * A stream function's iterator age (its oldest record not yet handled) was at least 10 minutes in
   * two 5-minute periods in a row, by the function. No record is dropped for its age, but the
   * stream trims a record 24 h after the change: one not handled by then is lost.
   */
  readonly streamIteratorAge: Partial<Record<FunctionName, cloudwatch.Alarm>>;
  /** The function failed invocations in two 5-minute periods in a row (the coordinator's: periods of its tick when longer). */
  readonly functionErrors: Record<FunctionName, cloudwatch.Alarm>;
}

/**
 * The alarms and the CloudWatch dashboard of a Conclave deployment. `Conclave` creates one for
 * itself (`conclave.monitoring`); add actions or widgets there.
 */
export class ConclaveMonitoring extends Construct {
  /** The alarms, all of them also on the dashboard's alarm status widget. */
  readonly alarms: ConclaveAlarms;
  /** The dashboard (its name is CloudFormation's). */
  readonly dashboard: cloudwatch.Dashboard;
  private readonly props: ConclaveMonitoringProps;

  constructor(scope: Construct, id: string, props: ConclaveMonitoringProps) {
    super(scope, id);
    this.props = props;
    const tick = props.tick ?? Duration.seconds(wiring.coordinator.trigger.everySeconds);
    this.alarms = this.makeAlarms(tick, props.alarmTopic);
    this.dashboard = this.makeDashboard(tick);
  }

  private metric(name: FunctionName, metricName: string, statistic: string, period: Duration): cloudwatch.Metric {
    return new cloudwatch.Metric({ namespace: NAMESPACE, metricName, dimensionsMap: { service: SERVICE, [DIMENSION.function]: name, [DIMENSION.deployment]: this.props.deployment }, statistic, period });
  }

  /** Election failures from every function that reconciles (each publishes under its own `function`). */
  private electionFailures(period: Duration): cloudwatch.MathExpression {
    const names = Object.keys(wiring) as FunctionName[];
    const usingMetrics = Object.fromEntries(names.map((n, i) => [`m${i}`, this.metric(n, METRIC.failures, 'Sum', period)]));
    return new cloudwatch.MathExpression({ expression: names.map((_, i) => `FILL(m${i}, 0)`).join(' + '), usingMetrics, label: 'election failures', period });
  }

  /** A batch function's failed invocations and the records it reported failed, summed per period. */
  private errorsAndFailedRecords(name: FunctionName, errors: cloudwatch.Metric): cloudwatch.MathExpression {
    const failed = this.metric(name, RECORDS_FAILED, 'Sum', errors.period);
    return new cloudwatch.MathExpression({ expression: 'FILL(errors, 0) + FILL(failed, 0)', usingMetrics: { errors, failed }, label: `${name} errors and records failed`, period: errors.period });
  }

  private makeAlarms(tick: Duration, topic: sns.ITopic | undefined): ConclaveAlarms {
    const fiveMinutes = Duration.minutes(5);
    // what runs once a tick (the coordinator's gauges, its invocations, the elections it starts) has
    // a datapoint in each period only if the period holds a tick: with 5-minute periods and a tick of
    // 10 minutes, every other period had no data (not breaching), and 2 of 2 never fired
    const gaugePeriod = tick.toSeconds() > fiveMinutes.toSeconds() ? tick : fiveMinutes;
    const periodText = `${+(gaugePeriod.toSeconds() / 60).toFixed(2)}-minute periods`;
    const alarm = (id: string, props: cloudwatch.AlarmProps) => conclaveAlarm(this, id, props, topic);
    const electionFailures = alarm('ElectionFailuresAlarm', {
      alarmDescription: `Elections failed (no live candidate acknowledged) in two ${periodText} in a row: leases are left without a leader. Check that the workers of these leases run and can reach DynamoDB.`,
      metric: this.electionFailures(gaugePeriod),
      threshold: 1,
      evaluationPeriods: 2,
    });
    const leaderlessLeases = alarm('LeaderlessLeasesAlarm', {
      alarmDescription:
        'At every tick for two periods some coordinated lease with live candidates, or one the coordinator failed to reconcile, had no live holder. Missing data counts as breaching: the coordinator publishes this gauge at every tick, so no data means it does not run.',
      metric: this.metric('coordinator', METRIC.leaderless, 'Minimum', gaugePeriod),
      threshold: 1,
      evaluationPeriods: 2,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
    });
    const brokenLeases = alarm('BrokenLeasesAlarm', {
      alarmDescription:
        'A lease row does not match the schema (written by hand, or by another version): the coordinator decides nothing on it and workers do not lead it until it is repaired. The coordinator logs each one; `conclave describe lease NAME` shows the field and the commands that fix or delete the row.',
      metric: this.metric('coordinator', METRIC.brokenLeases, 'Maximum', gaugePeriod),
      threshold: 1,
      evaluationPeriods: 1,
    });
    // as the leaderless alarm: every tick for two periods (one failed tick is retried at the next);
    // no data (no tick) is the leaderless alarm's to tell
    const reconcileFailures = alarm('ReconcileFailuresAlarm', {
      alarmDescription:
        "At every tick for two periods the coordinator failed to reconcile some lease (AccessDenied after a deploy, throttling, a fault): those leases are not elected for, though the tick itself succeeds. Its log names each lease and error (\"reconcile failed; the next trigger retries\"); check the coordinator role's permissions and the tables.",
      metric: this.metric('coordinator', METRIC.reconcileFailures, 'Minimum', gaugePeriod),
      threshold: 1,
      evaluationPeriods: 2,
    });
    // measured at each failed republish (the election timer's: it takes the timer queue), at most 15
    // minutes apart (SQS's longest delay): 1 of 4 five-minute periods holds one while the refusal
    // lasts. Fires at the first 15 minutes or more after the refusal (1,023 s in), recovers 20 minutes
    // after the last that failed
    const eventsUnpublished = alarm('EventsUnpublishedAlarm', {
      alarmDescription:
        'Events EventBridge refused have waited on the timer queue 15 minutes or more: PutEvents refuses for good (the functions\' role without events:PutEvents, the bus deleted, its KMS key disabled) or an outage outlasts a brief one. Elections go on; consumers of the events hear nothing until it is fixed, and then get them with their ids; after 24 h they go to the timer queue\'s dead-letter queue. The electionTimer log says "deferred events still not published; deferred again", with the error.',
      metric: this.metric('electionTimer', EVENTS_UNPUBLISHED, 'Maximum', fiveMinutes),
      threshold: EVENTS_UNPUBLISHED_ALARM_MS,
      evaluationPeriods: 4,
      datapointsToAlarm: 1,
    });
    const deadLetters: Partial<Record<FunctionName, cloudwatch.Alarm>> = {};
    for (const [name, q] of Object.entries(this.props.deadLetterQueues) as [FunctionName, sqs.IQueue][]) {
      deadLetters[name] = alarm(`${pascal(name)}DeadLettersAlarm`, {
        alarmDescription: `The ${name} function gave up on records or messages (they are in its dead-letter queue; a record no retry could read, or one still failing 12 h after its change, is there with its content, "kind":"poisonRecord" or "stuckRecord"). The tick still reconciles every lease; read the messages to find the cause, and once it is fixed replay those with content (docs/deploy.md, "A stream record that keeps failing"), then purge.`,
        metric: q.metricApproximateNumberOfMessagesVisible({ period: fiveMinutes, statistic: 'Maximum' }),
        threshold: 1,
        evaluationPeriods: 1,
      });
    }
    const streamIteratorAge: Partial<Record<FunctionName, cloudwatch.Alarm>> = {};
    for (const [name, fn] of Object.entries(this.props.functions) as [FunctionName, lambda.IFunction][]) {
      if (wiring[name].trigger.kind !== 'stream') continue;
      streamIteratorAge[name] = alarm(`${pascal(name)}IteratorAgeAlarm`, {
        alarmDescription: `The ${name} stream is at least 10 minutes behind: its events, session marks and wakes come late, and a record the stream trims (24 h after its change) is lost. See the function's errors, throttles and log.`,
        metric: fn.metric('IteratorAge', { period: fiveMinutes, statistic: 'Maximum' }),
        threshold: Duration.minutes(10).toMilliseconds(),
        evaluationPeriods: 2,
      });
    }
    const functionErrors = {} as Record<FunctionName, cloudwatch.Alarm>;
    for (const [name, fn] of Object.entries(this.props.functions) as [FunctionName, lambda.IFunction][]) {
      // a scheduled function is invoked once a tick: Lambda writes no Errors datapoint in a period without an invocation
      const scheduled = wiring[name].trigger.kind === 'schedule';
      const errors = fn.metricErrors({ period: scheduled ? gaugePeriod : fiveMinutes, statistic: 'Sum' });
      // Lambda counts a batch that failed in part as no error: a lease stream record failing, in
      // order, for up to 12 hours beside records that pass raised none. The function counts them.
      const batched = batchFunction(name);
      functionErrors[name] = alarm(`${pascal(name)}ErrorsAlarm`, {
        alarmDescription: batched
          ? `The ${name} function failed invocations or records in two 5-minute periods in a row (a whole batch; a record or message reported failed, "record failed; reported for retry" in its log, delivered again; not one left unstarted near the deadline, deferred). See its log group.`
          : `The ${name} function failed invocations in two ${scheduled ? periodText : '5-minute periods'} in a row (a whole batch, or a tick). See its log group.`,
        metric: batched ? this.errorsAndFailedRecords(name, errors) : errors,
        threshold: 1,
        evaluationPeriods: 2,
      });
    }
    return { electionFailures, leaderlessLeases, brokenLeases, reconcileFailures, eventsUnpublished, deadLetters, streamIteratorAge, functionErrors };
  }

  private makeDashboard(tick: Duration): cloudwatch.Dashboard {
    const { functions, deadLetterQueues, timerQueue, deployment } = this.props;
    const period = Duration.minutes(5);
    const names = Object.keys(wiring) as FunctionName[];
    const perLease = (metricName: string, statistic: string, title: string) =>
      new cloudwatch.GraphWidget({
        title,
        width: 8,
        left: [
          new cloudwatch.MathExpression({
            // this deployment's leases alone: another deployment in the account and Region publishes the same names
            expression: `SEARCH('{${NAMESPACE},service,${DIMENSION.function},${DIMENSION.deployment},${DIMENSION.lease}} service="${SERVICE}" ${DIMENSION.deployment}="${deployment}" MetricName="${metricName}"', '${statistic}', ${period.toSeconds()})`,
            usingMetrics: {},
            label: '',
            period,
          }),
        ],
      });
    const perFunction = (title: string, m: (fn: lambda.IFunction, name: FunctionName) => cloudwatch.IMetric) =>
      new cloudwatch.GraphWidget({ title, width: 8, left: names.map((n) => m(functions[n], n)) });
    const a = this.alarms;
    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', { defaultInterval: Duration.hours(6) });
    dashboard.addWidgets(
      new cloudwatch.AlarmStatusWidget({
        title: 'Conclave alarms',
        width: 24,
        alarms: [a.electionFailures, a.leaderlessLeases, a.brokenLeases, a.reconcileFailures, a.eventsUnpublished, ...Object.values(a.deadLetters), ...Object.values(a.streamIteratorAge), ...Object.values(a.functionErrors)],
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Leaderless, broken and unjudged leases; reconcile failures (at each tick)',
        width: 8,
        left: [
          this.metric('coordinator', METRIC.leaderless, 'Maximum', tick.toSeconds() > 60 ? tick : Duration.minutes(1)).with({ label: 'leaderless' }),
          this.metric('coordinator', METRIC.brokenLeases, 'Maximum', tick.toSeconds() > 60 ? tick : Duration.minutes(1)).with({ label: 'broken (row refused by the schema)' }),
          this.metric('coordinator', METRIC.unjudgedLeases, 'Maximum', tick.toSeconds() > 60 ? tick : Duration.minutes(1)).with({ label: 'unjudged (held on a session row refused by the schema)' }),
          this.metric('coordinator', METRIC.reconcileFailures, 'Maximum', tick.toSeconds() > 60 ? tick : Duration.minutes(1)).with({ label: 'reconcile failures' }),
        ],
      }),
      new cloudwatch.GraphWidget({
        title: 'Election failures; leaders lost to a stopped task or instance',
        width: 8,
        left: [this.electionFailures(period)],
        right: [this.metric('platform', METRIC.leadersLost, 'Sum', period).with({ label: 'leaders lost (platform)' })],
      }),
      new cloudwatch.GraphWidget({
        title: 'Write conflicts and skew preventions',
        width: 8,
        left: names.map((n) => this.metric(n, METRIC.conflicts, 'Sum', period).with({ label: `conflicts ${n}` })),
        right: names.map((n) => this.metric(n, METRIC.skewPreventions, 'Sum', period).with({ label: `skew ${n}` })),
      }),
    );
    dashboard.addWidgets(
      perLease(METRIC.leaderChanges, 'Sum', 'Leader changes per lease'),
      perLease(METRIC.preemptions, 'Sum', 'Preemptions per lease'),
      perLease(METRIC.electionDuration, 'Maximum', 'Election duration per lease (ms, max)'),
    );
    dashboard.addWidgets(
      perFunction('Invocations', (fn, n) => fn.metricInvocations({ period, label: n })),
      new cloudwatch.GraphWidget({
        title: 'Errors; records failed (batch functions)',
        width: 8,
        left: names.map((n) => functions[n].metricErrors({ period, label: n })),
        right: names.filter(batchFunction).map((n) => this.metric(n, RECORDS_FAILED, 'Sum', period).with({ label: `records failed ${n}` })),
      }),
      perFunction('Duration (p99)', (fn, n) => fn.metricDuration({ period, statistic: 'p99', label: n })),
    );
    const streams = names.filter((n) => wiring[n].trigger.kind === 'stream');
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Stream iterator age (ms, max)',
        width: 8,
        left: streams.map((n) => functions[n].metric('IteratorAge', { period, statistic: 'Maximum', label: n })),
      }),
      new cloudwatch.GraphWidget({
        title: 'Timer queue; how long deferred events have gone unpublished',
        width: 8,
        left: [
          timerQueue.metricApproximateNumberOfMessagesDelayed({ period, label: 'delayed (open elections; events waiting out an EventBridge outage)' }),
          timerQueue.metricApproximateNumberOfMessagesVisible({ period, label: 'visible' }),
        ],
        right: [this.metric('electionTimer', EVENTS_UNPUBLISHED, 'Maximum', period).with({ label: 'events unpublished for (ms, max)' })],
      }),
      new cloudwatch.GraphWidget({
        title: 'Dead letters',
        width: 8,
        left: (Object.entries(deadLetterQueues) as [FunctionName, sqs.IQueue][]).map(([n, q]) => q.metricApproximateNumberOfMessagesVisible({ period, statistic: 'Maximum', label: n })),
      }),
    );
    return dashboard;
  }
}
