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
import { DIMENSION, EVENTS_UNPUBLISHED, EVENTS_UNPUBLISHED_ALARM_MS, LEADERLESS_BOUND_MS, LEADERLESS_PAST_BOUND, METRIC, NAMESPACE, RECORDS_FAILED, SERVICE, WAKES_NOT_SENT } from '../lib/functions/metrics.js';
import { wiring, type FunctionName } from '../lib/wiring.js';
import { pascal } from './functions.js';

/**
 * What a dead-letter queue's messages are and what to do with them, by the function whose queue it
 * is: the replays differ (docs/deploy.md, "A stream record that keeps failing").
 */
function deadLettersText(name: FunctionName): string {
  const read = 'Read the messages for the cause (and the function\'s log)';
  switch (name) {
    case 'leaseStream':
      return `The leaseStream function gave up on records: a record no retry could read ("kind":"poisonRecord") or one still failing 12 h after its change ("kind":"stuckRecord"), each with its content (its source never gives a batch up). The tick still reconciles every lease. ${read}; once it is fixed, replay each by invoking the function with its record (docs/deploy.md, "A stream record that keeps failing"), then delete it.`;
    case 'candidateStream':
      return `The candidateStream function gave up on records: a batch after 3 retries (its shard position only; the events of its records that ran went out, not those of the failing row's later changes; its reconciles are the tick's), or a record no retry could read ("kind":"poisonRecord", with its content). ${read}; once it is fixed, replay a poisonRecord as the lease stream's (docs/deploy.md, "A stream record that keeps failing"), then purge the queue.`;
    case 'electionTimer':
      return `The electionTimer function failed a timer queue message 5 times: an election's deadline, a deferred session mark, or events an EventBridge outage held for a day, each whole. The tick still reconciles every lease. ${read}; once it is fixed, hand them to the electionTimer function as its queue would (docs/deploy.md, "A stream record that keeps failing", the timer queue's part: a move task back is refused), and delete those it handled.`;
    case 'platform':
      return `The platform function gave up on ECS task or EC2 instance stop events (each whole): the terms of holders that ran there were not ended early, so they ran out on their own stamp (failover a lease duration later; nothing unsafe). ${read}, fix it (its role, the tables), then purge: that late, a replay ends nothing.`;
    case 'coordinator':
      return `The coordinator function gave up on invocations. ${read}, then purge.`;
  }
}

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
  /**
   * An election failed (none of its candidates could be elected) in either of the last two periods
   * (5 minutes, or the tick when longer), summed over every function. A lease whose candidates
   * cannot win records its failure once, not at each trigger: one datapoint fires it.
   */
  readonly electionFailures: cloudwatch.Alarm;
  /**
   * Some lease with live candidates has stood vacant past its bound (longer than a minute and the
   * workers' fallback, three lease durations): the coordinator's `conclave_leases_leaderless_past_bound`
   * at 3 of its last 5 ticks (1-minute periods, or the tick when longer). A lease mid-election is
   * not counted. Ticks missing are passed over (a round over a minute publishes less often):
   * ReconcileFailures tells a coordinator that does not run.
   */
  readonly leaderlessLeases: cloudwatch.Alarm;
  /** At a tick some lease row did not match the schema: no election is decided on it until an operator repairs it. */
  readonly brokenLeases: cloudwatch.Alarm;
  /**
   * At every tick for two periods some reconcile failed (the coordinator's gauge
   * `coordinated_leader_election_reconcile_failures`): a tick that fails lease by lease (every write
   * denied after a deploy, say) still ends normally, so the function's errors alarm does not see it.
   * No data (no tick) counts as breaching: the gauge is published at every tick.
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
  /** A dead-letter queue has a message, by the function whose queue it is (each description says what its messages are and what to do with them). */
  readonly deadLetters: Partial<Record<FunctionName, cloudwatch.Alarm>>;
  /**
   * A stream function's iterator age (Lambda's: the age of the last record of a batch it sent the
   * function, when it sent it) was at least 10 minutes in two 5-minute periods in a row, by the
   * function. No record is dropped for its age, but the stream trims a record 24 h after the change:
   * one not handled by then is lost. A function that is not sent batches (throttled, its event source
   * mapping disabled) has no iterator age, and fires nothing.
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
    // one datapoint of two: a lease whose candidates cannot win (noValidCandidates, contradictory
    // strategies) records its failure once, not at each trigger, so two periods in a row never came
    const electionFailures = alarm('ElectionFailuresAlarm', {
      alarmDescription: `An election failed (no candidate that answered could be elected) in one of the last two ${periodText}: its lease was left without a leader. The lease's lastElectionFailure says why (conclave describe lease NAME); check that its workers run, can reach DynamoDB and have valid versions.`,
      metric: this.electionFailures(gaugePeriod),
      threshold: 1,
      evaluationPeriods: 2,
      datapointsToAlarm: 1,
    });
    // leases vacant past their bound (lib/functions/core.ts leaderlessPastBound), at 3 of the last 5
    // ticks: one stuck fires it some 3 minutes past its bound, a lease mid-election (the leaderless
    // gauge counts every one caught between terms: at scale, different ones at each tick) never. A
    // tick missing is passed over (a round of over a minute publishes less often); a coordinator that
    // does not run is ReconcileFailures' to tell. At most 7 days of periods (a tick up to 84 hours)
    const leaderlessPeriod = tick.toSeconds() > 60 ? tick : Duration.minutes(1);
    const leaderlessPeriods = Math.min(5, Math.floor(Duration.days(7).toSeconds() / leaderlessPeriod.toSeconds()));
    const leaderlessLeases = alarm('LeaderlessLeasesAlarm', {
      alarmDescription: `At ${Math.min(3, leaderlessPeriods)} of the last ${leaderlessPeriods} ticks some coordinated lease with live candidates had stood vacant past its bound (longer than ${LEADERLESS_BOUND_MS / 60_000} minute and three lease durations), not mid-election. The coordinator's "tick" log line names them (leaderlessPastBound). conclave describe lease NAME says why none is elected (a candidate that "stands down ... its work failed at two starts": its workers' onError has the failure); conclave get leases lists the leaderless.`,
      metric: this.metric('coordinator', LEADERLESS_PAST_BOUND, 'Maximum', leaderlessPeriod),
      threshold: 1,
      evaluationPeriods: leaderlessPeriods,
      datapointsToAlarm: Math.min(3, leaderlessPeriods),
      treatMissingData: cloudwatch.TreatMissingData.MISSING,
    });
    const brokenLeases = alarm('BrokenLeasesAlarm', {
      alarmDescription:
        'A lease row does not match the schema (written by hand, or by another version): the coordinator decides nothing on it and workers do not lead it until it is repaired. The coordinator logs each one; `conclave describe lease NAME` shows the field and the commands that fix or delete the row.',
      metric: this.metric('coordinator', METRIC.brokenLeases, 'Maximum', gaugePeriod),
      threshold: 1,
      evaluationPeriods: 1,
    });
    // every tick for two periods (one failed tick is retried at the next); no data breaches: the gauge
    // is published at every tick (0 included), so two periods without one mean no coordinator runs
    const reconcileFailures = alarm('ReconcileFailuresAlarm', {
      alarmDescription:
        "At every tick for two periods the coordinator failed to reconcile some lease (AccessDenied after a deploy, throttling, a fault), or no tick ran at all (missing data breaches: the gauge is published at every tick): those leases are not elected for, though the tick itself succeeds. Its log names each lease and error (\"reconcile failed; the next trigger retries\"); check the coordinator role's permissions and the tables; no data: its schedule, and that the function exists and is not throttled.",
      metric: this.metric('coordinator', METRIC.reconcileFailures, 'Minimum', gaugePeriod),
      threshold: 1,
      evaluationPeriods: 2,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
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
        alarmDescription: deadLettersText(name),
        metric: q.metricApproximateNumberOfMessagesVisible({ period: fiveMinutes, statistic: 'Maximum' }),
        threshold: 1,
        evaluationPeriods: 1,
      });
    }
    const streamIteratorAge: Partial<Record<FunctionName, cloudwatch.Alarm>> = {};
    for (const [name, fn] of Object.entries(this.props.functions) as [FunctionName, lambda.IFunction][]) {
      if (wiring[name].trigger.kind !== 'stream') continue;
      streamIteratorAge[name] = alarm(`${pascal(name)}IteratorAgeAlarm`, {
        alarmDescription: `The ${name} stream is at least 10 minutes behind (Lambda's IteratorAge: the age of the last record of a batch it sent the function): its events, session marks and wakes come late, and a record the stream trims (24 h after its change) is lost. See the function's errors, its Throttles (AWS/Lambda) and log. A function throttled, or its event source mapping disabled, is sent no batch: no iterator age, no errors, and this alarm stays OK.`,
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
          this.metric('coordinator', LEADERLESS_PAST_BOUND, 'Maximum', tick.toSeconds() > 60 ? tick : Duration.minutes(1)).with({ label: 'leaderless past their bound (LeaderlessLeases)' }),
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
    // no alarm: a throttled function (a stream's, a timer's) is sent nothing, so writes no errors and no iterator age
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Throttles; wakes not sent (push path)',
        width: 8,
        left: names.map((n) => functions[n].metricThrottles({ period, label: n })),
        right: names.filter((n) => n !== 'coordinator').map((n) => this.metric(n, WAKES_NOT_SENT, 'Sum', period).with({ label: `wakes not sent ${n}` })),
      }),
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
