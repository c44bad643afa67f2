/**
 * A scheduled Lambda function that does a fenced job through `withLease`: exactly one invocation
 * acts per window, even when the schedule delivers twice (EventBridge delivers at least once), an
 * invocation runs late, or one is frozen mid-run and thawed after its lease expired.
 *
 * - The lease `JOB_LEASE` (default `scheduled-report`) is taken first come, first served.
 * - The job writes the next report in sequence to `JOB_RESULTS_TABLE` (one per window, and a
 *   summary row counting them), in the same transaction as the window's marker, fenced by the
 *   term: a straggler whose term is over writes nothing, so the sequence never skips or repeats.
 * - A second invocation in the same window skips; a failed run leaves the window open for the next.
 * - The window is the one the schedule fired in (the event's `time`), so a retry that Lambda
 *   delivers after the window ended still counts for it, and the next window's run still runs.
 * - The run is cancelled (and the lease given up) 3 s before Lambda would time the invocation out.
 *
 * The demo's job: `npm start` runs it in local mode, invoked on a schedule the way EventBridge
 * invokes it (./scheduled-job-story.ts); the repository's CDK app deploys it with
 * `-c exampleJob=true` (infra/app/example-job.ts, in examples/scheduled-job-stack.ts' stack).
 * It imports the packages by name, as your own job would.
 *
 * Environment: CONCLAVE_LEASES_TABLE and CONCLAVE_CANDIDATES_TABLE, or CONCLAVE_TABLE_PREFIX
 * (default `conclave`); JOB_RESULTS_TABLE (required),
 * JOB_LEASE, JOB_WINDOW (`day`, `hour` or milliseconds; default `hour`), and CONCLAVE_ENDPOINT for
 * DynamoDB Local.
 */
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { systemClock, tryWithLease, type Clock, type LeaseRunResult, type RunOnce, type TablesOption } from '@conclave/sdk';

/** What one invocation did. */
export interface JobOutcome {
  readonly invocation: string;
  readonly result: LeaseRunResult<{ sequence: number }>['status'] | 'failed';
  readonly window?: string;
  readonly fencingToken?: number;
  readonly detail?: string;
}

export interface JobSettings {
  readonly client: DynamoDBClient;
  /** Where the Conclave tables are: a prefix, or their names. */
  readonly tables: TablesOption;
  readonly resultsTable: string;
  readonly lease: string;
  readonly runOnce: RunOnce;
  /** Who this invocation is (the Lambda request id). */
  readonly invocation: string;
  readonly signal?: AbortSignal;
  readonly clock?: Clock;
}

/** The job: one report per window, written with the window's marker, fenced by the lease's term. */
export async function runScheduledJob(s: JobSettings): Promise<JobOutcome> {
  try {
    const r = await tryWithLease(
      s.lease,
      async (signal, term) => {
        // the job: the next report in sequence (the summary row counts them)
        const summary = await s.client.send(new GetItemCommand({ TableName: s.resultsTable, Key: { id: { S: 'summary' } }, ConsistentRead: true }), { abortSignal: signal });
        const sequence = Number(summary.Item?.['reports']?.N ?? 0) + 1;
        const window = term.window!;
        // the report, the count and the window's marker land together, and only while the term is this run's
        await term.complete([
          { Put: { TableName: s.resultsTable, Item: { id: { S: `report#${window}` }, window: { S: window }, sequence: { N: String(sequence) }, by: { S: s.invocation }, fencingToken: { N: String(term.fencingToken) } } } },
          { Put: { TableName: s.resultsTable, Item: { id: { S: 'summary' }, reports: { N: String(sequence) }, last: { S: window } } } },
        ]);
        return { sequence };
      },
      { client: s.client, tables: s.tables, identity: s.invocation, mode: 'NoCoordination', runOnce: s.runOnce, ...(s.signal ? { signal: s.signal } : {}), ...(s.clock ? { clock: s.clock } : {}) },
    );
    if (r.status === 'ran') return { invocation: s.invocation, result: 'ran', window: r.window!, fencingToken: r.fencingToken, detail: `report ${r.value.sequence}` };
    if (r.status === 'skipped') return { invocation: s.invocation, result: 'skipped', window: r.window, ...(r.run ? { fencingToken: r.run.fencingToken, detail: `done by ${r.run.holder}` } : { detail: 'older than every window the lease remembers' }) };
    return { invocation: s.invocation, result: 'busy', detail: `${r.holder ?? 'another invocation'} holds the lease` };
  } catch (e) {
    return { invocation: s.invocation, result: 'failed', detail: (e as Error).message };
  }
}

/** `JOB_WINDOW`: `day`, `hour`, or a length in milliseconds. */
export function windowSetting(v: string | undefined): RunOnce {
  if (v === undefined || v === 'hour' || v === 'day') return { every: v ?? 'hour' };
  const ms = Number(v);
  if (!Number.isInteger(ms) || ms < 1_000) throw new Error(`JOB_WINDOW must be "day", "hour" or whole milliseconds >= 1000, not "${v}"`);
  return { every: ms };
}

/** `{ at: event.time }` for an EventBridge scheduled event (withLease checks it); nothing for an event without a time. */
function scheduledTime(event: unknown): { at?: string } {
  const time = (event as { time?: unknown } | null | undefined)?.time;
  return time === undefined ? {} : { at: time as string };
}

/** CONCLAVE_LEASES_TABLE and CONCLAVE_CANDIDATES_TABLE (what the CDK stack sets), else CONCLAVE_TABLE_PREFIX. */
function tablesFromEnv(): TablesOption {
  const leases = process.env['CONCLAVE_LEASES_TABLE'];
  const candidates = process.env['CONCLAVE_CANDIDATES_TABLE'];
  const identities = process.env['CONCLAVE_IDENTITIES_TABLE'];
  if (leases && candidates) return { leases, candidates, ...(identities ? { identities } : {}) };
  return process.env['CONCLAVE_TABLE_PREFIX'] ?? 'conclave';
}

let client: DynamoDBClient | undefined;

/** The Lambda handler (EventBridge schedule): its window is the one the event's `time` falls in. */
export async function handler(event: unknown, context: { awsRequestId: string; getRemainingTimeInMillis(): number }): Promise<JobOutcome> {
  const resultsTable = process.env['JOB_RESULTS_TABLE'];
  if (!resultsTable) throw new Error('set JOB_RESULTS_TABLE: the table the job writes its reports to');
  const endpoint = process.env['CONCLAVE_ENDPOINT'];
  client ??= endpoint ? new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }) : new DynamoDBClient({});
  // give the lease up before Lambda would cut the invocation off
  const cancel = new AbortController();
  const timer = systemClock.setTimer(Math.max(0, context.getRemainingTimeInMillis() - 3_000), () => cancel.abort(new Error('the invocation is about to time out')));
  try {
    const outcome = await runScheduledJob({
      client,
      tables: tablesFromEnv(),
      resultsTable,
      lease: process.env['JOB_LEASE'] ?? 'scheduled-report',
      // the scheduled time, not the time the invocation runs: a late retry counts for its own window
      runOnce: { ...windowSetting(process.env['JOB_WINDOW']), ...scheduledTime(event) },
      invocation: context.awsRequestId,
      signal: cancel.signal,
    });
    // Lambda sends a function's stdout to CloudWatch Logs; elsewhere (local mode) the caller prints the outcome
    if (process.env['AWS_LAMBDA_FUNCTION_NAME']) console.log(JSON.stringify(outcome));
    return outcome;
  } finally {
    timer.cancel();
  }
}
