/**
 * Counts DynamoDB requests with AWS SDK v3 middleware: by role (leader, follower, candidate,
 * coordinator…, named at send time by the caller) and by command, with the capacity units
 * DynamoDB reports for each (DynamoDB Local computes ConsumedCapacity as AWS does: a consistent
 * read is 1 RRU per 4 KB, a write 1 WRU per 1 KB of the larger of the old and new item).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

export interface Tally {
  requests: number;
  /** Read request units reported by DynamoDB. */
  rru: number;
  /** Write request units reported by DynamoDB, plus 1 per failed conditional write (see below). */
  wru: number;
  /** Requests that failed; a failed conditional write is still billed (≥ 1 WRU). */
  failed: number;
  /** Requests by command, e.g. { GetItem: 12, UpdateItem: 30 }. */
  commands: Record<string, number>;
}
export type Tallies = Record<string, Tally>;

/** The commands that read (billed in RRU); every other item command writes (WRU). */
export const READ_COMMANDS: ReadonlySet<string> = new Set(['GetItem', 'Query', 'Scan', 'BatchGetItem', 'TransactGetItems']);
const ITEM_COMMANDS = new Set([...READ_COMMANDS, 'PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);

const emptyTally = (): Tally => ({ requests: 0, rru: 0, wru: 0, failed: 0, commands: {} });

type Consumed = { CapacityUnits?: number } | { CapacityUnits?: number }[] | undefined;
const unitsOf = (c: Consumed): number => (Array.isArray(c) ? c.reduce((a, x) => a + (x.CapacityUnits ?? 0), 0) : (c?.CapacityUnits ?? 0));

export interface CountOptions {
  /**
   * Ask DynamoDB for the consumed capacity of every item request (ReturnConsumedCapacity=TOTAL,
   * added to the request: it changes nothing else). @default true
   */
  capacity?: boolean;
  /**
   * Sees every answer (after it is counted): a worker can learn from what it reads (say, whether the
   * lease names it successor) which role its next request belongs to.
   */
  observe?: (command: string, input: { TableName?: string }, output: unknown) => void;
}

/** Tallies of DynamoDB requests, fed by one middleware per client. */
export class RequestCounter {
  private readonly tallies: Tallies = {};

  /**
   * Counts every request `client` sends from now on. `roleOf` names the role at send time from the
   * request's input (its TableName tells a candidate's writes from a lease's) and its command (a
   * session row's renewals from its reads, say: `GetItem`, `UpdateItem`…). The middleware sits
   * at the initialize step, above the SDK's retries: a retried request counts once (DynamoDB Local
   * does not throttle, so none are retried here).
   */
  attach(client: DynamoDBClient, roleOf: (input: { TableName?: string }, command: string) => string, opts: CountOptions = {}): this {
    const capacity = opts.capacity ?? true;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const command = String(context.commandName ?? 'Unknown').replace(/Command$/, '');
        const input = args.input as { TableName?: string };
        const tally = (this.tallies[roleOf(input, command)] ??= emptyTally());
        tally.requests++;
        tally.commands[command] = (tally.commands[command] ?? 0) + 1;
        const ask = capacity && ITEM_COMMANDS.has(command);
        try {
          const out = await next(ask ? { ...args, input: { ...input, ReturnConsumedCapacity: 'TOTAL' } } : args);
          const units = unitsOf((out.output as { ConsumedCapacity?: Consumed }).ConsumedCapacity);
          if (READ_COMMANDS.has(command)) tally.rru += units;
          else tally.wru += units;
          opts.observe?.(command, input, out.output);
          return out;
        } catch (e) {
          tally.failed++;
          // DynamoDB bills a failed conditional write (at least 1 WRU); DynamoDB Local reports no
          // capacity on the error, so it is counted as 1 WRU (every item here is under 1 KB).
          if (ask && !READ_COMMANDS.has(command) && (e as Error).name === 'ConditionalCheckFailedException') tally.wru += 1;
          throw e;
        }
      },
      { step: 'initialize', name: 'benchRequestCounter', override: true },
    );
    return this;
  }

  /** A copy of the tallies so far. */
  snapshot(): Tallies {
    return structuredClone(this.tallies);
  }
}

/** What happened between two snapshots (later minus earlier), per role. */
export function diffTallies(later: Tallies, earlier: Tallies): Tallies {
  const out: Tallies = {};
  for (const [role, t] of Object.entries(later)) {
    const e = earlier[role] ?? emptyTally();
    const commands: Record<string, number> = {};
    for (const [c, n] of Object.entries(t.commands)) if (n - (e.commands[c] ?? 0) > 0) commands[c] = n - (e.commands[c] ?? 0);
    out[role] = { requests: t.requests - e.requests, rru: t.rru - e.rru, wru: t.wru - e.wru, failed: t.failed - e.failed, commands };
  }
  return out;
}

/** The sum of several tallies per role. */
export function addTallies(...all: Tallies[]): Tallies {
  const out: Tallies = {};
  for (const ts of all) {
    for (const [role, t] of Object.entries(ts)) {
      const o = (out[role] ??= emptyTally());
      o.requests += t.requests;
      o.rru += t.rru;
      o.wru += t.wru;
      o.failed += t.failed;
      for (const [c, n] of Object.entries(t.commands)) o.commands[c] = (o.commands[c] ?? 0) + n;
    }
  }
  return out;
}

/**
 * For a worker process: counts `client`'s requests and prints the running totals as a JSON line
 * (`{"event":"requests", …, "requests": Tallies}`) every `everyMs` and once more on `flush()`,
 * the last line: `flush()` stops the timer, so no count follows the worker's `exited` line.
 */
export function reportRequests(
  client: DynamoDBClient,
  roleOf: (input: { TableName?: string }, command: string) => string,
  everyMs: number,
  say: (event: string, extra: Record<string, unknown>) => void,
): { flush(): void } {
  return reportCounts(new RequestCounter().attach(client, roleOf), everyMs, say);
}

/** Prints `counter`'s running totals every `everyMs` and once more on `flush()` (see reportRequests). */
export function reportCounts(counter: RequestCounter, everyMs: number, say: (event: string, extra: Record<string, unknown>) => void): { flush(): void } {
  const report = () => say('requests', { requests: counter.snapshot() });
  const timer = setInterval(report, everyMs);
  timer.unref();
  return {
    flush() {
      clearInterval(timer);
      report();
    },
  };
}
