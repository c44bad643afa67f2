import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Clock } from '../../lib/clock.js';
import { reconcileLease, type CoordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { LeaderElector, type LeaderElectorOptions, type StopReason } from '../../lib/sdk/elector.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { WAIT_GUARD_MS } from '../guards.js';
import type { TestTables } from '../support.js';

/** The coordinator, driven in-process: reconcile one lease every `everyMs` (stands in for streams and the timer). */
export function coordinatorLoop(deps: CoordinatorDeps, leaseName: string, everyMs = 100) {
  let running = true;
  const errors: Error[] = [];
  const done = (async () => {
    while (running) {
      try {
        await reconcileLease(deps, leaseName);
      } catch (e) {
        errors.push(e as Error);
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    errors,
    async stop() {
      running = false;
      await done;
    },
  };
}

export interface LogEntry {
  /** The clock's monotonic ms (simulated time), or without a clock the entry's place in the log. */
  at: number;
  who: string;
  what: 'started' | 'stopped' | 'newLeader';
  token?: number;
  reason?: StopReason;
  leader?: string;
}

/** One ordered log of every elector's callbacks in this process. */
export class Log {
  readonly entries: LogEntry[] = [];
  /** `clock`: stamps entries with its monotonic time (a simulated clock's); none: with their order. */
  constructor(private readonly clock?: Pick<Clock, 'monotonic'>) {}
  add(e: Omit<LogEntry, 'at'>) {
    this.entries.push({ at: this.clock ? this.clock.monotonic() : this.entries.length, ...e });
  }
  of(what: LogEntry['what'], who?: string) {
    return this.entries.filter((e) => e.what === what && (who === undefined || e.who === who));
  }
  /** The largest number of workers leading at once, replaying started/stopped in order. */
  maxConcurrentLeaders(): number {
    const leading = new Set<string>();
    let max = 0;
    for (const e of this.entries) {
      if (e.what === 'started') leading.add(e.who);
      if (e.what === 'stopped') leading.delete(e.who);
      max = Math.max(max, leading.size);
    }
    return max;
  }
}

export const FAST = { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 250 } as const;

export interface RunningElector {
  elector: LeaderElector;
  controller: AbortController;
  done: Promise<void>;
  signals: AbortSignal[];
  stop(): Promise<void>;
}

/**
 * Starts an elector that logs its callbacks; `signals` collects every term's AbortSignal. A
 * coordinated one stands with `versions`; with `priority`, an operator pins its candidate row as
 * soon as it stands (a worker cannot write its own priority). A NoCoordination one has no candidacy.
 */
export function startElector(
  t: TestTables,
  log: Log,
  identity: string,
  opts: Partial<LeaderElectorOptions> & { leaseName: string },
  extra: { client?: DynamoDBClient; versions?: [string, string]; priority?: number; errors?: Error[] } = {},
): RunningElector {
  const signals: AbortSignal[] = [];
  const [emulationVersion, binaryVersion] = extra.versions ?? ['1.30.0', '1.30.0'];
  const candidacy = { emulationVersion, binaryVersion };
  const elector = new LeaderElector({
    identity,
    tables: t.names,
    ...FAST,
    ...(opts.mode === 'NoCoordination' ? {} : { candidacy }),
    client: extra.client ?? t.client,
    callbacks: {
      onStartedLeading: (signal, { fencingToken }) => {
        signals.push(signal);
        log.add({ who: identity, what: 'started', token: fencingToken });
      },
      onStoppedLeading: ({ reason, fencingToken }) => log.add({ who: identity, what: 'stopped', reason, token: fencingToken }),
      onNewLeader: (leader) => log.add({ who: identity, what: 'newLeader', leader }),
    },
    onError: (e) => extra.errors?.push(e),
    ...opts,
  });
  if (extra.priority !== undefined && opts.mode !== 'NoCoordination') {
    const priority = extra.priority;
    const operator = new CandidateStore(t.client, t.names.candidates);
    void elector.ready.then(async () => operator.write(await operator.read(opts.leaseName, identity), { set: { priority } })).catch((e: unknown) => extra.errors?.push(e as Error));
  }
  const controller = new AbortController();
  const done = elector.run(controller.signal);
  return {
    elector,
    controller,
    done,
    signals,
    async stop() {
      controller.abort();
      await done;
    },
  };
}

/**
 * Polls `probe` until it gives a value: an outcome of DynamoDB Local or real processes, however long
 * a busy machine takes. No budget to pass: only WAIT_GUARD_MS, a hang guard, ends the wait.
 */
export async function waitFor<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>): Promise<T> {
  const end = performance.now() + WAIT_GUARD_MS;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (performance.now() > end) throw new Error(`hung: still waiting for ${what} after ${WAIT_GUARD_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The ValidationError `f` throws (any other outcome fails the test). */
export function validationError(f: () => unknown): ValidationError {
  try {
    f();
  } catch (e) {
    if (e instanceof ValidationError) return e;
    throw e;
  }
  throw new Error('expected a ValidationError');
}
