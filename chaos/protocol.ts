/**
 * What passes between the chaos harness and a chaos worker process: its environment, the JSON
 * lines it prints on stdout and the commands it reads on stdin. All parsed with zod on arrival.
 */
import * as z from 'zod';
import { HistoryRecord, Mono } from '../lib/history/schema.js';
import { Name } from '../lib/schemas/common.js';

const int = (min: number) => z.coerce.number().int().min(min);

export const WorkerEnv = z.object({
  CONCLAVE_ENDPOINT: z.url(),
  CONCLAVE_TABLE_PREFIX: z.string().min(1),
  /** The push path's broker (local mode's, ws://…/mqtt): the electors take wakes over one PushChannel. Unset: they poll. */
  CONCLAVE_PUSH_URL: z.url().optional(),
  /**
   * `true`: the process runs one Session (lib/sdk/session.ts), started before its electors and ended
   * after them, and the electors hold the terms they win on it; the SESSION_* timings are its own.
   */
  CHAOS_SESSION: z.enum(['true', 'false']).default('false').transform((v) => v === 'true'),
  SESSION_RENEW_INTERVAL_MS: int(1).default(600),
  SESSION_RETRY_PERIOD_MS: int(1).default(250),
  SESSION_RENEW_DEADLINE_MS: int(1).default(1_100),
  SESSION_MAX_LEASE_DURATION_MS: int(1_000).default(3_000),
  IDENTITY: Name,
  /** Comma-separated lease names, or with CHAOS_LEASE_COUNT a prefix: `${prefix}000`… */
  CHAOS_LEASES: z.string().min(1),
  CHAOS_LEASE_COUNT: int(1).optional(),
  EMULATION_VERSION: z.string().default('1.30.0'),
  BINARY_VERSION: z.string().default('1.31.0'),
  LEASE_DURATION_MS: int(1_000).default(3_000),
  RENEW_DEADLINE_MS: int(1).default(2_000),
  RETRY_PERIOD_MS: int(1).default(500),
  CANDIDATE_RENEW_MS: int(1_000).default(2_000),
  /** This worker's wall clock runs this far off (ms, may be negative); its monotonic clock is true. Steps come as commands. */
  CHAOS_SKEW_MS: z.coerce.number().int().default(0),
  /** The EC2 instance this worker runs on (its platform, written on its rows): what the platform's stop events name. */
  CHAOS_PLATFORM_ID: z.string().regex(/^i-[0-9a-f]{8,17}$/).optional(),
  /** Seeds the worker's fault decisions. */
  CHAOS_SEED: int(0).default(1),
  CHAOS_LEDGER_TABLE: z.string().min(3).optional(),
  /** A leader appends to the ledger this often (0: never). */
  CHAOS_WRITE_EVERY_MS: int(0).default(250),
  /** After a term stops, keep writing with its old token for this long (a job that ignores its signal). */
  CHAOS_ZOMBIE_MS: int(0).default(0),
  /**
   * A scheduled job beside the electors: every CHAOS_JOB_EVERY_MS the process invokes withLease on
   * this lease (first come first served, run once per window of that length), writes to the ledger
   * while the run works for CHAOS_JOB_WORK_MS, then completes its window.
   */
  CHAOS_JOB_LEASE: Name.optional(),
  CHAOS_JOB_EVERY_MS: int(1_000).default(12_000),
  CHAOS_JOB_WORK_MS: int(0).default(4_000),
});
export type WorkerEnv = z.output<typeof WorkerEnv>;
export type WorkerEnvInput = { [K in keyof z.input<typeof WorkerEnv>]?: string };

export const leaseNames = (env: Pick<WorkerEnv, 'CHAOS_LEASES' | 'CHAOS_LEASE_COUNT'>): string[] =>
  env.CHAOS_LEASE_COUNT ? Array.from({ length: env.CHAOS_LEASE_COUNT }, (_, i) => `${env.CHAOS_LEASES}${String(i).padStart(3, '0')}`) : env.CHAOS_LEASES.split(',');

export const WorkerLine = z.discriminatedUnion('type', [
  /** Its code is loaded: a held process (CHAOS_HELD) now waits for its start. */
  z.object({ type: z.literal('loaded') }),
  z.object({ type: z.literal('ready'), identity: Name, pid: z.number().int(), instances: z.record(z.string(), z.string()) }),
  z.object({ type: z.literal('history'), record: HistoryRecord }),
  /** A fault injected into one request attempt; `session`: one of the session's row writes (a `sessionLoss`). */
  z.object({ type: z.literal('injected'), mode: z.string(), session: z.boolean().optional() }),
  /**
   * The process's Session as it changes (a row started, one ended, a renewal failed), once more as
   * the process exits, and as it takes a marked command.
   */
  z.object({
    type: z.literal('session'),
    name: z.string().optional(),
    /** The line sent as the process exits (its stats count the session's clean end). */
    final: z.boolean().optional(),
    /** The command with this mark has just taken effect: the stats are the session's at that instant. */
    mark: z.number().int().optional(),
    stats: z.object({ started: z.number().int(), renewals: z.number().int(), failedRenewals: z.number().int(), ended: z.number().int() }),
  }),
  z.object({ type: z.literal('fenced'), lease: Name, accepted: z.boolean(), zombie: z.boolean(), mono: Mono }),
  z.object({ type: z.literal('error'), message: z.string(), lease: z.string().optional() }),
  z.object({ type: z.literal('exited') }),
]);
export type WorkerLine = z.infer<typeof WorkerLine>;

const DynamoDBFaultSpec = z.object({ mode: z.enum(['error', 'throttle', 'latency', 'lostResponse']), rate: z.number().min(0).max(1), latencyMs: z.number().int().min(0).optional() });

export const WorkerCommand = z
  .object({
    /** The DynamoDB fault now in force (null: none). */
    dynamodb: DynamoDBFaultSpec.nullable().optional(),
    /** The fault now in force on the session's row writes alone (identities-table UpdateItem; null: none): a `sessionLoss`. */
    session: DynamoDBFaultSpec.nullable().optional(),
    /** Step the wall clock by this much (ms), as NTP stepping it would. */
    clockStepMs: z.number().int().optional(),
    /** Answer with a `session` line carrying this mark as the command takes effect (session processes). */
    mark: z.number().int().min(1).optional(),
  })
  .strict();
export type WorkerCommand = z.infer<typeof WorkerCommand>;

/** A held process's first line on stdin: its environment, and it starts. */
export const WorkerStart = z.object({ start: z.record(z.string(), z.string()) }).strict();
export type WorkerStart = z.infer<typeof WorkerStart>;
