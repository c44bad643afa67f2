/**
 * A run's history, as JSON lines: every worker records when it starts and stops leading, on the
 * machine's monotonic clock. Tests, `npm start` and the chaos runs write it; lib/history/checker.ts
 * judges it. Everything that crosses a process boundary is parsed here, so a bad line fails with
 * the field named (ValidationError).
 */
import * as z from 'zod';
import { Name } from '../schemas/common.js';
import { FencingToken } from '../schemas/fencing-token.js';
import { ValidationError, parse } from '../schemas/validation.js';

/**
 * Nanoseconds on CLOCK_MONOTONIC as a decimal string: `process.hrtime.bigint()`. On Linux every
 * process of one machine reads the same clock, so stamps of different workers compare directly,
 * and a wall clock that is skewed or stepped does not move them.
 */
export const Mono = z.string().regex(/^\d{1,20}$/, 'must be nanoseconds from process.hrtime.bigint(), as a decimal string');
export type Mono = z.infer<typeof Mono>;

/** Now, as a Mono stamp. */
export const monoNow = (): Mono => process.hrtime.bigint().toString();

/** One leadership start or stop, as the worker lived it (onStartedLeading / onStoppedLeading). */
export const HistoryRecord = z
  .object({
    event: z.enum(['started', 'stopped']),
    lease: Name,
    identity: Name,
    /** The elector's start-up (LeaderElector.instance): a restarted worker is a new instance. */
    instance: z.string().min(1),
    fencingToken: FencingToken,
    mono: Mono,
    /** Epoch ms on the worker's own clock (which may be skewed on purpose): for people, never compared. */
    wall: z.number().int().nonnegative(),
    /** Why it stopped: the SDK's StopReason, or `killed` when the harness killed the process. */
    reason: z.string().min(1).optional(),
  })
  .strict();
export type HistoryRecord = z.infer<typeof HistoryRecord>;

/**
 * A fenced write the database accepted, as read back from the ledger table. `sentMono` is stamped
 * into the item before the transaction is sent, so it is a lower bound of the moment the database
 * committed it.
 */
export const LedgerEntry = z
  .object({
    lease: Name,
    id: z.string().min(1),
    identity: Name,
    instance: z.string().min(1),
    fencingToken: FencingToken,
    sentMono: Mono,
    /** Written on purpose after the term had stopped, with the term's old token (a job ignoring its signal). */
    zombie: z.boolean().default(false),
    /**
     * The completion of a run-once window (withLease's `complete`, in the same transaction as the
     * window's marker): at most one per lease and window may be accepted.
     */
    window: z.string().min(1).max(256).optional(),
  })
  .strict();
export type LedgerEntry = z.infer<typeof LedgerEntry>;

/**
 * A term seen on the lease by someone other than its holder (the chaos harness polls the leases
 * table): by `mono` the term with `fencingToken` had been written. One per write seen (`revision`):
 * a renewal (`renewTime`), and a release, which keeps the token and takes the holder off (no
 * `holder`), so a released term is not counted as naming its last holder until the next one.
 */
export const Observation = z
  .object({ lease: Name, fencingToken: FencingToken, holder: z.string().min(1).optional(), renewTime: z.number().int().optional(), revision: z.number().int().min(0).optional(), mono: Mono })
  .strict();
export type Observation = z.infer<typeof Observation>;

/** A fault and the time it was in force; `instances` are the worker start-ups it hit (pauses, kills). */
export const FaultWindow = z
  .object({
    kind: z.string().min(1),
    from: Mono,
    /** When it healed (a paused process resumed, a killed one restarted, the coordinator came back). */
    to: Mono,
    instances: z.array(z.string().min(1)).optional(),
    /** The lease it hit (an operator's delete of its row). */
    lease: Name.optional(),
    detail: z.string().optional(),
    /**
     * A loss that never heals (a Region lost for good, `regionLoss`): when a surviving replica
     * served strong reads and writes again (the loss itself when one never stopped). Absent: not
     * before the run ended. The leaderless-after-loss rule counts from here (lib/history/checker.ts).
     */
    servingAgainAt: Mono.optional(),
  })
  .strict();
export type FaultWindow = z.infer<typeof FaultWindow>;

/** What is true at the end of the observed run. */
export const EndState = z
  .object({
    mono: Mono,
    /** Every elector still running: each must still own its candidate row. */
    live: z.array(z.object({ lease: Name, identity: Name, instance: z.string().min(1) }).strict()),
    /** The candidates table at the end (lease, candidate name, the start-up that owns the row). */
    candidateRows: z.array(z.object({ lease: Name, name: Name, identity: z.string().optional() }).strict()),
  })
  .strict();
export type EndState = z.infer<typeof EndState>;

/**
 * One line a worker (lib/local/demo/worker.ts, bench/baseline/worker.ts) prints on stdout: lib/local
 * watches its processes through them, historyFromWorkerEvents turns them into a history.
 */
export interface WorkerEvent {
  event: 'ready' | 'started' | 'stopped' | 'newLeader' | 'error' | 'exited' | 'requests';
  identity: string;
  at: number;
  fencingToken?: number;
  reason?: string;
  leader?: string;
  message?: string;
  /** On `error`, where the worker tells it: the error's name, e.g. `DynamoDBUnreachableError`. */
  name?: string;
  /** On `ready`: this start-up's instance id (the candidate row's identity). */
  instance?: string;
  /** On `requests` (COUNT_REQUESTS_EVERY_MS set): DynamoDB requests so far, by role. */
  requests?: Record<string, { requests: number; rru: number; wru: number; failed: number; commands: Record<string, number> }>;
}

/** One JSON line of a history file. */
export const historyLine = (r: HistoryRecord): string => `${JSON.stringify(parse(HistoryRecord, r, 'history record'))}\n`;

/**
 * Reads JSON lines (a history or ledger file); blank lines are skipped, anything else must parse.
 * A bad line is a ValidationError naming the line number and the field.
 */
export function readJsonLines<S extends z.ZodType>(schema: S, text: string, what: string): z.output<S>[] {
  const out: z.output<S>[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch (e) {
      throw new ValidationError(`${what} line ${i + 1}`, [{ field: '(root)', message: `must be one JSON object per line (${(e as Error).message})` }]);
    }
    out.push(parse(schema, raw, `${what} line ${i + 1}`));
  });
  return out;
}

export const readHistory = (text: string): HistoryRecord[] => readJsonLines(HistoryRecord, text, 'history');
