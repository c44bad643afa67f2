/**
 * The triggers lib/wiring.ts declares, built on AWS: a stream event source, the timer queue's
 * event source, the coordinator's schedule, rules on the default bus. Whatever local mode polls
 * and schedules from the same declarations, AWS does too.
 */
import { Aws, Duration } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as destinations from 'aws-cdk-lib/aws-lambda-destinations';
import * as sources from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { rulePattern, type EventsTrigger, type FunctionName, type QueueTrigger, type RulePattern, type StreamTrigger } from '../lib/wiring.js';
import { pascal } from './functions.js';
import { allowEventBridgeToUse } from './grants.js';
import { deadLetterQueue } from './queues.js';

/**
 * The table's stream feeds the function, as the wiring declares it. Lambda sends a batch it gave
 * up on (its stream coordinates, not the records) to the returned dead-letter queue; with no
 * maximum record age (the wiring's -1) none is given up for its age, and with retries -1 (the
 * lease stream's) none for its failures, until the stream trims it (24 h).
 */
export function addStreamSource(scope: Construct, name: FunctionName, fn: lambda.IFunction, t: StreamTrigger, table: dynamodb.ITableV2, key: kms.IKey | undefined): sqs.Queue {
  const dlq = deadLetterQueue(scope, `${pascal(name)}DeadLetters`, { encryptionKey: key, deadLetterQueueOf: `the on-failure destination of the ${name} stream event source` });
  const before = new Set(fn.node.children);
  fn.addEventSource(
    new sources.DynamoEventSource(table, {
      startingPosition: lambda.StartingPosition[t.startingPosition],
      batchSize: t.batchSize,
      maxBatchingWindow: Duration.seconds(t.maxBatchingWindowSeconds),
      bisectBatchOnError: t.bisectOnError,
      retryAttempts: t.retryAttempts,
      // CDK takes 60 s to 7 days; -1 (no maximum) is written on the mapping below
      ...(t.maxRecordAgeSeconds === -1 ? {} : { maxRecordAge: Duration.seconds(t.maxRecordAgeSeconds) }),
      reportBatchItemFailures: t.reportBatchItemFailures,
      parallelizationFactor: t.parallelizationFactor,
      ...(t.filters ? { filters: t.filters.map((f) => lambda.FilterCriteria.filter(f as Record<string, unknown>)) } : {}),
      onFailure: new sources.SqsDlq(dlq),
    }),
  );
  if (t.maxRecordAgeSeconds === -1) {
    // written out, not left to the default of an absent property: a mapping deployed with 3,600 is updated to it whatever CloudFormation does with a removed one
    const mapping = fn.node.children.find((c): c is lambda.EventSourceMapping => !before.has(c) && c instanceof lambda.EventSourceMapping);
    if (!mapping) throw new Error(`the ${name} stream event source created no event source mapping under its function`);
    (mapping.node.defaultChild as lambda.CfnEventSourceMapping).maximumRecordAgeInSeconds = -1;
  }
  return dlq;
}

/** The timer queue feeds the function (the queue itself, and its redrive, are the construct's). */
export function addQueueSource(fn: lambda.IFunction, t: QueueTrigger, timerQueue: sqs.IQueue): void {
  if (t.queue !== 'electionTimer') throw new Error(`lib/wiring.ts names queue "${String(t.queue)}", which this construct does not create`);
  fn.addEventSource(new sources.SqsEventSource(timerQueue, { batchSize: t.batchSize, reportBatchItemFailures: t.reportBatchItemFailures }));
}

/**
 * The function runs every `tick` (the construct's prop; the wiring's `everySeconds` is its
 * default). A failed tick is retried by the next one, not by Lambda.
 */
export function addSchedule(scope: Construct, name: FunctionName, fn: lambda.Function, tick: Duration): events.Rule {
  // a tick older than one tick is stale: the next one is already on its way (each service takes an age up to its own maximum)
  const upTo = (max: Duration) => (tick.toSeconds() > max.toSeconds() ? max : tick);
  const rule = new events.Rule(scope, `${pascal(name)}Schedule`, {
    description: `Conclave: the ${name} tick`,
    schedule: events.Schedule.rate(tick),
    // EventBridge's retries of a delivery that failed
    targets: [new targets.LambdaFunction(fn, { maxEventAge: upTo(Duration.hours(24)) })],
  });
  // a failed tick is retried by the next tick; Lambda's own async retries would run beside it. A
  // tick throttled (reserved concurrency 1) waits in Lambda's asynchronous queue, 6 hours unless
  // told otherwise: dropped after one tick instead, not run late, one after another
  fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: upTo(Duration.hours(6)) });
  return rule;
}

/** A wiring pattern in CDK's spelling (detailType), with fresh arrays. */
const eventPattern = (p: RulePattern): events.EventPattern => ({
  source: [...p.source],
  detailType: [...p['detail-type']],
  account: [...p.account],
  region: [...p.region],
  detail: Object.fromEntries(Object.entries(p.detail).map(([k, v]) => [k, [...v]])),
});

/**
 * Rules on the default bus for a function on AWS services' events: asynchronous invocation with
 * the wiring's retries and maximum age; events that fail (or cannot be delivered) go to the
 * returned dead-letter queue. Each rule takes events from the stack's own account and region only.
 * With `enabled` false no rule is created (the queue still is).
 */
export function addEventRules(scope: Construct, name: FunctionName, fn: lambda.Function, t: EventsTrigger, enabled: boolean, key: kms.IKey | undefined): sqs.Queue {
  const dlq = deadLetterQueue(scope, `${pascal(name)}DeadLetters`, { encryptionKey: key, deadLetterQueueOf: `the on-failure destination of the ${name} function's rules and asynchronous invocations` });
  fn.configureAsyncInvoke({ retryAttempts: t.retryAttempts, maxEventAge: Duration.seconds(t.maxEventAgeSeconds), onFailure: new destinations.SqsDestination(dlq) });
  if (enabled) {
    const bus = events.EventBus.fromEventBusName(scope, `${pascal(name)}DefaultBus`, t.bus);
    t.patterns.forEach((p, i) => {
      new events.Rule(scope, `${pascal(name)}Rule${i}`, {
        description: `Conclave: ${p['detail-type'].join(', ')} → the ${name} function`,
        eventBus: bus,
        eventPattern: eventPattern(rulePattern(p, { account: Aws.ACCOUNT_ID, region: Aws.REGION })),
        targets: [new targets.LambdaFunction(fn, { deadLetterQueue: dlq, retryAttempts: 8, maxEventAge: Duration.seconds(t.maxEventAgeSeconds) })],
      });
    });
    // EventBridge writes the rules' dead letters to the key-encrypted queue as itself
    if (key) allowEventBridgeToUse(scope, key);
  }
  return dlq;
}
