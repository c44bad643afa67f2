/**
 * `npm start`'s scheduled-job story (issue 18): the demo's Lambda handler (./scheduled-job.ts)
 * invoked on a schedule the way EventBridge invokes it — each firing delivered twice at once, as
 * at-least-once delivery may, and a late retry in the same window — against the local system's
 * tables. Judged: one report per window, in sequence, with rising fencing tokens; every other
 * invocation busy or skipped; the lease released after each run.
 */
import { CreateTableCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { systemClock } from '../../clock.js';
import { LeaseStore } from '../../stores/lease-store.js';
import type { LocalRuntime } from '../runtime.js';
import type { JobOutcome } from './scheduled-job.js';

/** The job's lease and window in local mode: a report every 6 s instead of every hour. */
export const JOB_LEASE = 'scheduled-report';
export const JOB_WINDOW_MS = 6_000;

export interface JobStoryResult {
  ok: boolean;
  /** Per window: what each invocation did. */
  windows: { window: string; outcomes: JobOutcome[] }[];
}

export async function playScheduledJob(rt: LocalRuntime, opts: { windows: number; print?: (line: string) => void }): Promise<JobStoryResult> {
  const print = opts.print ?? ((l: string) => process.stdout.write(`${l}\n`));
  const clock = systemClock;
  const prefix = rt.tables.leases.replace(/-leases$/, '');
  const reports = `${prefix}-job-reports`;
  await rt.client.send(new CreateTableCommand({ TableName: reports, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }] }));
  // the handler is configured as the stack configures it: from its environment
  Object.assign(process.env, { CONCLAVE_ENDPOINT: rt.endpoint, CONCLAVE_TABLE_PREFIX: prefix, JOB_RESULTS_TABLE: reports, JOB_LEASE, JOB_WINDOW: String(JOB_WINDOW_MS) });
  const { handler } = await import('./scheduled-job.js');
  const t0 = clock.now();
  const since = () => `${((clock.now() - t0) / 1000).toFixed(1).padStart(5)}s`;
  // each firing's event carries the time it fired, as EventBridge's does: a retry counts for that
  // firing's window however late it runs (a busy machine ran one 6 s late, into the next window)
  const invoke = (id: string, firedAt: number) => handler({ 'detail-type': 'Scheduled Event', source: 'aws.events', time: new Date(firedAt).toISOString() }, { awsRequestId: id, getRemainingTimeInMillis: () => 60_000 });
  const show = (o: JobOutcome) => print(`  ${since()}  ${o.result === 'ran' ? '◆' : '·'} ${o.invocation.padEnd(12)} ${o.result.padEnd(7)} ${o.window ?? ''}${o.fencingToken !== undefined ? ` · token ${o.fencingToken}` : ''}${o.detail ? ` · ${o.detail}` : ''}`);

  print(`\n▸ A scheduled job (withLease, issue 18): lib/local/demo/scheduled-job.ts on a ${JOB_WINDOW_MS / 1000} s schedule, each firing delivered twice at once, then retried late — at most one report per window`);
  const windows: JobStoryResult['windows'] = [];
  for (let k = 1; k <= opts.windows; k++) {
    // just after the next window begins
    await clock.sleep(JOB_WINDOW_MS - (clock.now() % JOB_WINDOW_MS) + 200);
    const fired = clock.now();
    const both = await Promise.all([invoke(`fire-${k}-a`, fired), invoke(`fire-${k}-b`, fired)]);
    both.forEach(show);
    const late = await invoke(`fire-${k}-late`, fired);
    show(late);
    const window = both.find((o) => o.result === 'ran')?.window ?? '-';
    windows.push({ window, outcomes: [...both, late] });
  }

  // the reports: one per window, in sequence, each with a token above the one before
  const scanned = await rt.client.send(new ScanCommand({ TableName: reports, ConsistentRead: true }));
  const rows = (scanned.Items ?? []).filter((i) => i['id']?.S?.startsWith('report#')).map((i) => ({ window: i['window']!.S!, sequence: Number(i['sequence']!.N), token: Number(i['fencingToken']!.N) }));
  rows.sort((a, b) => a.sequence - b.sequence);
  const ranOnce = windows.every((w) => w.outcomes.filter((o) => o.result === 'ran').length === 1 && w.outcomes.filter((o) => o.result === 'failed').length === 0);
  const lateSkipped = windows.every((w) => w.outcomes[2]!.result === 'skipped');
  const inSequence = rows.length === opts.windows && rows.every((r, i) => r.sequence === i + 1 && r.window === windows[i]!.window && (i === 0 || r.token > rows[i - 1]!.token));
  const lease = (await new LeaseStore(rt.client, rt.tables.leases).read(JOB_LEASE)).item;
  const released = lease?.holderIdentity === undefined;
  const ok = ranOnce && lateSkipped && inSequence && released;
  const second = windows.flatMap((w) => w.outcomes.slice(0, 2)).filter((o) => o.result !== 'ran');
  print(
    `  scheduled job: ${windows.length} windows, ${rows.length} reports (sequence ${rows.map((r) => r.sequence).join(', ')}), tokens ${inSequence ? 'rising' : 'NOT in order'}; ` +
      `second deliveries ${second.map((o) => o.result).join(', ')}; late retries ${windows.map((w) => w.outcomes[2]!.result).join(', ')}; lease ${released ? 'released' : `still held by ${lease?.holderIdentity}`}`,
  );
  print(`  ${ok ? 'the job ran once per window' : 'THE JOB DID NOT RUN ONCE PER WINDOW'}`);
  return { ok, windows };
}
