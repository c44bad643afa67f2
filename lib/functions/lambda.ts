import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { Context, DynamoDBRecord, DynamoDBStreamEvent, SQSEvent, SQSRecord } from 'aws-lambda';
import { ValidationError } from '../schemas/validation.js';
import type { FunctionName } from '../wiring.js';
import type { FunctionDeps } from './core.js';
import { poisonRecord, recordAgeMs, STUCK_RECORD_MS, stuckRecord } from './dead-letter.js';
import { RECORDS_FAILED } from './metrics.js';

/**
 * The pipeline every function shares: Powertools logger context and metrics flushed per invocation.
 * `timeoutEarlyInMillis`: middy's early timeout (its default, 5 ms, unless given); 0 turns it off.
 */
export const observed = <E, R>(deps: FunctionDeps, fn: (event: E, context: Context) => Promise<R>, timeoutEarlyInMillis?: number) =>
  middy(fn, timeoutEarlyInMillis === undefined ? undefined : { timeoutEarlyInMillis }).use(injectLambdaContext(deps.logger)).use(logMetrics(deps.metrics));

/**
 * Runs one record with the lease it concerns on every log line, and logs a failure (with the
 * record's id) before the batch processor reports it.
 */
function perRecord<R>(deps: FunctionDeps, describe: (r: R) => { id: string; lease: string | undefined }, onRecord: (r: R) => Promise<void>) {
  return async (r: R): Promise<void> => {
    const { id, lease } = describe(r);
    deps.logger.appendKeys({ lease: lease ?? '(unknown)', record: id });
    try {
      await onRecord(r);
    } catch (e) {
      if (!(e instanceof DeadLetterDeferredError)) deps.logger.error('record failed; reported for retry', { error: e as Error });
      throw e;
    } finally {
      deps.logger.removeKeys(['lease', 'record']);
    }
  };
}

/**
 * The row a stream record changed, from its keys (readable even when an image is malformed): its
 * table's key attributes, sorted. Undefined when the record has none.
 */
function streamRow(r: DynamoDBRecord): string | undefined {
  const k = r.dynamodb?.Keys;
  return k && JSON.stringify(Object.entries(k).sort());
}

/** The lease a stream record concerns, from its keys (readable even when an image is malformed). */
function streamLease(r: DynamoDBRecord): string | undefined {
  const k = r.dynamodb?.Keys;
  return k?.['leaseName']?.S ?? k?.['name']?.S;
}

function queueLease(r: SQSRecord): string | undefined {
  try {
    const body = JSON.parse(r.body) as { lease?: unknown; republish?: { detail?: { lease?: unknown } }[] };
    const lease = body.lease ?? body.republish?.[0]?.detail?.lease; // an election's deadline, or deferred events
    return typeof lease === 'string' ? lease : undefined;
  } catch {
    return undefined;
  }
}

/** What a handler does with each record of one invocation, and once they are all done. */
export interface BatchRun<R> {
  /** One record: a failure is reported for it alone (a batchItemFailure). */
  readonly record: (r: R) => Promise<void>;
  /**
   * After the last record, before the invocation answers: what the records started and need not
   * wait for (the lease stream's wakes), with the Lambda's remaining time (undefined where the
   * context has none). Never rejects.
   */
  readonly end?: (remainingMs: number | undefined) => Promise<void>;
}

/**
 * Time a batch keeps back from the invocation's deadline: no record is started with less left (but
 * the first, so every invocation moves its batch on). A record is a few requests one after another
 * (the lease's and its candidates' reads, a conditional write and its retry on a lost race, the
 * session mark, the events' publish, a timer), tens of milliseconds each from a healthy DynamoDB,
 * and the AWS SDK's retries (4 tries on DynamoDB) add at most 7 s on throttling. Within the margin:
 * one request on a connection that never answers, given up after about 20 s (lib/functions/requests.ts:
 * 5 s a try, a worker's least bound); a record's half-dozen requests answered in 2.5 s each (a
 * DynamoDB the workers ride out); the events' publish, bounded at 5 s whatever its calls and
 * attempts (PUBLISH_WITHIN_MS, lib/events/publisher.ts: unbounded, an EventBridge that never
 * answered held a record 18.6 s), and after one publish meets an outage the invocation's later
 * records make no call (lib/functions/core.ts tryPublish). 25 s leaves the functions 35 s of their
 * 60 s (lib/wiring.ts). A record meeting several stuck requests in a row still meets the deadline,
 * which ends it with the invocation (see `batch`).
 */
export const BATCH_DEADLINE_MARGIN_MS = 25_000;

/** A record not started because the invocation had less than BATCH_DEADLINE_MARGIN_MS left: reported failed, run again by the event source's next delivery. */
export class BatchDeadlineError extends Error {
  override readonly name = 'BatchDeadlineError';
}

/**
 * A stream record to dead-letter (poison, or stuck) behind a failed record of its batch: reported
 * for retry instead, as not failed. Lambda delivers the stream again from the earliest failure, so
 * the record comes again after it, and is dead-lettered (once) when no failure is before it.
 */
export class DeadLetterDeferredError extends Error {
  override readonly name = 'DeadLetterDeferredError';
}

function batch<E extends DynamoDBStreamEvent | SQSEvent, R>(deps: FunctionDeps, type: keyof typeof EventType, open: () => BatchRun<R>) {
  // A processor per invocation: it keeps the batch's records and failures, and two invocations of
  // one handler may run at once (local mode's delay queue and stream shards; Lambda never does
  // within one instance). Shared, they answered each other's batches.
  //
  // No early timeout (middy's would answer 5 ms before the deadline while the loop, which no
  // promise can cancel, went on: the batch a function error, its records done run again by the
  // retry, beside the loop still reconciling them, out of order). The loop stops starting records
  // BATCH_DEADLINE_MARGIN_MS before the deadline and reports the rest, so the invocation answers
  // after its last record, within its time; a record that still runs into the deadline (a request
  // that never answers) ends with the invocation: Lambda resets the execution environment of an
  // invocation that timed out, so nothing of it runs beside the retry. An abort signal read between
  // records would stop the loop but not the record under way, which would run on after the answer.
  return observed(deps, async (event: E, context: Context) => {
    const run = open();
    // (absent from the simulator's context, lib/local/runtime.ts lambdaContext: every record is started, as before)
    const remaining = context.getRemainingTimeInMillis ? () => context.getRemainingTimeInMillis() : undefined;
    let started = 0;
    let notStarted = 0;
    let deferred = 0;
    const record = async (r: R): Promise<void> => {
      if (notStarted > 0 || (remaining && started > 0 && remaining() < BATCH_DEADLINE_MARGIN_MS)) {
        notStarted++;
        throw new BatchDeadlineError(`not started: the invocation had less than ${BATCH_DEADLINE_MARGIN_MS} ms left; reported for retry`);
      }
      started++;
      try {
        await run.record(r);
      } catch (e) {
        if (e instanceof DeadLetterDeferredError) deferred++;
        throw e;
      }
    };
    try {
      const answer = await processPartialResponse(event as never, record as never, new BatchProcessor(EventType[type]), { context, processInParallel: false });
      // a batch that failed in part is no failed invocation to Lambda (no Errors datapoint): a record
      // failing beside others that pass is counted here, which the function's errors alarm adds. Not
      // the records left unstarted near the deadline, nor those whose dead-lettering waits for a failed
      // record before them: reported for retry too, but deferred, not failed (a slow DynamoDB raised
      // the alarm on them)
      const failed = answer.batchItemFailures.length - notStarted - deferred;
      if (failed) deps.metrics.addMetric(RECORDS_FAILED, MetricUnit.Count, failed);
      return answer;
    } finally {
      if (notStarted > 0) deps.logger.warn('records not started, the invocation near its deadline: reported for retry', { started, notStarted, remainingMs: remaining?.() });
      if (deferred > 0) deps.logger.warn('records to dead-letter behind a failed record of the batch: reported for retry, dead-lettered when delivered from it', { deferred });
      await run.end?.(remaining?.());
    }
  }, 0);
}

/** What the log says of a record dead-lettered by its function (poison, or stuck). */
const DEAD_LETTERED = 'sent to the dead-letter destination with its content, reported processed';

/** A stream record's handling: parsed, then handled, and poison or a record stuck since STUCK_RECORD_MS dead-lettered (streamBatchHandler). */
function streamRecord<T>(deps: FunctionDeps, name: FunctionName, parse: (r: DynamoDBRecord) => T, handle: (parsed: T) => Promise<void>, behindFailure: () => boolean) {
  return perRecord(deps, (r: DynamoDBRecord) => ({ id: r.eventID ?? '?', lease: streamLease(r) }), async (r) => {
    try {
      await handle(parse(r));
    } catch (e) {
      const stuck = !(e instanceof ValidationError);
      if (stuck && (recordAgeMs(r, deps.coordinator.clock.now()) ?? 0) < STUCK_RECORD_MS) throw e;
      if (behindFailure()) throw new DeadLetterDeferredError(`${stuck ? 'stuck' : 'poison'} record behind a failed record of its batch: reported for retry`);
      if (stuck) {
        const now = deps.coordinator.clock.now();
        await deps.deadLetter(stuckRecord(name, r, e as Error, now)); // if that fails too, the record is retried
        deps.logger.error(`record still failing half a day after its change: ${DEAD_LETTERED}`, { error: e as Error });
        return;
      }
      await deps.deadLetter(poisonRecord(name, r, e, deps.coordinator.clock.now())); // if that fails too, the record is retried
      deps.logger.error(`poison record: ${DEAD_LETTERED}`, { error: e });
    }
  });
}

/**
 * A stream handler with partial batch responses, with a run per invocation: `open` is called at each
 * invocation, its `record` for each record, and its `end` once they are all done. Records are
 * handled one after another (order matters within a shard). A record `parse` refuses (a
 * ValidationError) is poison: no retry can read it, so it goes to the dead-letter destination at
 * once, with its content, and counts as processed; so does one whose handler throws a
 * ValidationError, from a row no retry can read either (lib/functions/core.ts onLeaseChange: after
 * the rest of its work). Any other failure (throttling, the network, lost races) is reported as a
 * batchItemFailure so processing resumes from it; after the event source's retries Lambda
 * dead-letters its position (the lease stream's source retries without bound). A record still
 * failing STUCK_RECORD_MS after its change goes to the dead-letter destination with its content
 * and counts as processed, so the records behind it are handled before the stream trims them.
 *
 * After a failed record, the batch's later records of the same row (its keys: a lease, a
 * candidate) are not run (each is reported failed too): they come again after it, in order. Run
 * past it, a row's later change would be handled before its earlier one (an INSERT closing an
 * election before the REMOVE it waits for was seen). Each still publishes its events: its change
 * is given to the run marked `held`, and the run publishes the events the record's own run derives
 * (same ids) and does nothing else (lib/functions/core.ts publishHeldBack). Before, they waited
 * with its work: the candidate stream's source gives a batch up after 3 retries, and a row's
 * changes behind a record failing through them were never published (a second Candidate Joined, a
 * Candidate Expired); the lease stream's waited up to STUCK_RECORD_MS. The order this keeps: a
 * row's events go out in its records' order, the failed record's first (it publishes its own before
 * it fails: core.ts reconcileThenPublish), at least once; a later delivery may publish one again
 * (same id, on another instance) after later ones, events deferred by an EventBridge outage come
 * when the timer queue delivers them, and where a record's events could be neither published nor
 * deferred, no held record of that invocation publishes (core.ts `unsent`). A held record that does
 * not parse publishes nothing (poison: dead-lettered when it runs).
 *
 * The later records of other rows still run: what a record does depends on no other row's record
 * before it (it reconciles from the rows as they are read; lib/wiring.ts parallelizationFactor),
 * and before, one failing record held every record behind it in the batch, with their events. Lambda resumes from the earliest failure (the
 * lowest sequence number reported), so those later records run again there, after it: at least
 * once, as any redelivery, their events with the same ids. But one to dead-letter (poison, or
 * stuck) is not, behind a failure: it is reported for retry (DeadLetterDeferredError, not counted
 * failed) and dead-lettered once, when a delivery from the failure reaches it with none before it
 * (a malformed lease row behind a record failing through a 250 s DynamoDB outage was dead-lettered
 * 334 times, once per retry). A record with no keys is taken as every row's. Nor are the records
 * left when the invocation nears its deadline (BATCH_DEADLINE_MARGIN_MS) run, nor their events published: they are reported failed, and Lambda checkpoints before the
 * first of them and delivers from it (each such delivery counts among the source's retries).
 */
export const streamBatchHandler = <T>(deps: FunctionDeps, name: FunctionName, parse: (r: DynamoDBRecord) => T, open: () => BatchRun<T>) =>
  batch<DynamoDBStreamEvent, DynamoDBRecord>(deps, 'DynamoDBStreams', () => {
    const run = open();
    // the rows of the records failed (or not run) so far, each with the first failed record of it; a record with no keys, under undefined
    const failed = new Map<string | undefined, string>();
    // a record to dead-letter behind a failure waits for it: dead-lettered once, when delivered from it
    const record = streamRecord(deps, name, parse, run.record, () => failed.size > 0);
    // a record held behind a failed one of its row: a change (not the candidate stream's refusedSeen
    // stamp, which has no events) given to the run marked `held`, to publish its events and do nothing else
    const held = async (r: DynamoDBRecord) => {
      try {
        const c = parse(r) as object;
        if ('eventName' in c) await run.record({ ...c, held: true } as T);
      } catch (e) {
        // poison (dead-lettered when it runs), or its events neither published nor deferred (its run publishes them)
        deps.logger.warn('held record: events not published yet', { record: r.eventID, error: e as Error });
      }
    };
    return {
      record: async (r: DynamoDBRecord) => {
        const row = streamRow(r);
        const before = failed.get(row) ?? (row === undefined ? failed.values().next().value : failed.get(undefined));
        if (before !== undefined) {
          failed.set(row, before);
          await held(r);
          throw new Error(`not run: record ${before} of its row failed first`);
        }
        try {
          await record(r);
        } catch (e) {
          failed.set(row, r.eventID ?? '?');
          throw e;
        }
      },
      end: run.end,
    };
  });

/**
 * A queue handler with partial batch responses (a failing message alone goes back to the queue), with
 * a run per invocation as streamBatchHandler's. The messages left when the invocation nears its
 * deadline (BATCH_DEADLINE_MARGIN_MS) are reported failed: they go back to the queue too.
 */
export const queueBatchHandler = (deps: FunctionDeps, open: () => BatchRun<SQSRecord>) =>
  batch<SQSEvent, SQSRecord>(deps, 'SQS', () => {
    const run = open();
    return { record: perRecord(deps, (r: SQSRecord) => ({ id: r.messageId, lease: queueLease(r) }), run.record), end: run.end };
  });
