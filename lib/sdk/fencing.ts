import {
  PutItemCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
  type PutItemCommandInput,
  type PutItemCommandOutput,
  type UpdateItemCommandInput,
  type UpdateItemCommandOutput,
  type TransactWriteItem,
  type TransactWriteItemsCommandInput,
  type TransactWriteItemsCommandOutput,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import * as z from 'zod';
import { FencingToken } from '../schemas/fencing-token.js';
import { LeaseName } from '../schemas/lease.js';
import { ValidationError, parse, shown } from '../schemas/validation.js';
import { ConflictError } from '../stores/errors.js';
import { termCondition, type Term } from '../stores/lease-store.js';
import type { Clock } from '../clock.js';
import { contendedRetryMs, type StopReason } from './step.js';
import { NotDynamoDBError } from '../dynamodb-answers.js';
import { fromDynamoDB } from './faults.js';

/** Why a transaction is refused on multi-Region strongly consistent tables (the `multiRegion` option). */
export const NO_TRANSACTIONS =
  'multi-Region strongly consistent tables (the multiRegion option) offer no transactions: fence your own items with fencedItemWrite (the item carries the fencing token), or run on single-Region tables';

/**
 * What a fenced write is fenced by, checked before it is sent: a token that is no fencing token
 * (a string, a fraction, NaN, missing) would be written, or compared, as something else — a string
 * fence on an item refuses every later term's write.
 */
const TermFence = z.object({ leaseName: LeaseName, table: z.string().min(1), term: z.object({ holderIdentity: z.string().min(1), fencingToken: FencingToken }) });
const ItemFence = z.object({ leaseName: LeaseName, fencingToken: FencingToken, attribute: z.string().min(1).optional() });

/** A transaction item's operations: an item holds one of them (TransactWriteItem). */
const OPERATIONS = ['Put', 'Update', 'Delete', 'ConditionCheck'] as const;
const ITEM_SHAPE = '{ Put }, { Update }, { Delete } or { ConditionCheck }, each an object as TransactWriteItemsCommand takes';

/** What is wrong with one transaction item, or undefined: one of OPERATIONS, an object. */
function itemIssue(i: unknown): string | undefined {
  if (typeof i !== 'object' || i === null || Array.isArray(i)) return `must be a transaction item (${ITEM_SHAPE}), not ${i === undefined ? 'undefined' : shown(i)}`;
  const ops = OPERATIONS.filter((k) => (i as Record<string, unknown>)[k] !== undefined);
  if (ops.length === 0) return `names no operation: give one of ${ITEM_SHAPE}`;
  if (ops.length > 1) return `names ${ops.join(' and ')}: give one operation per item (${ITEM_SHAPE})`;
  const op = (i as Record<string, unknown>)[ops[0]!];
  return typeof op === 'object' && op !== null && !Array.isArray(op) ? undefined : `${ops[0]} must be an object (as TransactWriteItemsCommand takes), not ${shown(op)}`;
}

/**
 * A fenced transaction's items, as the caller gives them (a term's `fencedWrite` and
 * `complete(items)`): a list, each item one operation. Checked before anything is sent: anything
 * else failed on reading its fields (a TypeError naming nothing: "items is not iterable").
 * @internal
 */
export const TransactItemsSchema = z
  .array(z.custom<TransactWriteItem>((i) => itemIssue(i) === undefined, { error: (issue) => itemIssue(issue.input) ?? 'must be a transaction item' }), {
    error: (issue) => (issue.code === 'invalid_type' ? `${issue.input === undefined ? 'is required' : `must be a list, not ${shown(issue.input)}`}: give a list of transaction items (${ITEM_SHAPE})` : undefined),
  });
const TransactInput = z.looseObject({ TransactItems: TransactItemsSchema });

/** DynamoDB's limit on items in one transaction; the fence takes one of them. */
export const MAX_TRANSACTION_ITEMS = 100;

/**
 * A fenced write was refused: the lease is no longer in the writer's term (another holder, a
 * newer fencing token, or no holder). Nothing of the transaction was written.
 */
export class FencingError extends Error {
  /** Always `FencingError`. */
  override readonly name = 'FencingError';
  constructor(
    /** The lease the write was fenced by. */
    readonly leaseName: string,
    /** The writer's term's fencing token (undefined: the writer was not leading). */
    readonly fencingToken: number | undefined,
    reason = 'the lease is no longer in this term',
  ) {
    super(`fenced write on lease "${leaseName}"${fencingToken === undefined ? '' : ` with fencing token ${fencingToken}`} refused: ${reason}; nothing was written`);
  }
}

/** The term's deadline passed, or the lease moved on, while the function ran (or before it could). */
export class LeaseLostError extends Error {
  /** Always `LeaseLostError`. */
  override readonly name = 'LeaseLostError';
  constructor(
    /** The lease that was lost. */
    readonly leaseName: string,
    /** The fencing token of the lost term. */
    readonly fencingToken: number,
    /** Why the term ended: its renew deadline passed (renewals failed, or the process was frozen), or the lease moved on. */
    readonly reason: StopReason,
  ) {
    super(`lease "${leaseName}" was lost (term with fencing token ${fencingToken}: ${REASONS[reason]}); work begun in that term may be incomplete, and its fenced writes are refused (one still in flight lands, if ever, only as its fence allows)`);
  }
}

const REASONS: Record<StopReason, string> = {
  cancelled: 'given up',
  preempted: 'a better candidate was preferred',
  renewDeadline: 'not renewed within the renew deadline - renewals failed, or the process was frozen past it',
  deposed: 'another holder took the lease',
  workFailed: "the leader's work failed",
};

/** Each write's signal untilTermEnds gave, and the term whose end aborts it (judgedEachTry). */
const termOfWrite = new WeakMap<AbortSignal, AbortSignal>();

/**
 * Runs `write` with a signal that aborts, with the error `lost()` makes, when `term` aborts (the
 * term ended before the write was answered; for withLease's function, its own signal, which the
 * caller's cancel aborts too): the write's promise rejects with that error at once,
 * whether or not the client honours the signal, and the request is abandoned. A write sent in the
 * term lands, if it ever does, only as its fence allows. Not written at all when `term` has already
 * aborted; a fencedItemWrite or fencedTransactWrite given the signal judges `term` again just
 * before each try is sent (judgedEachTry).
 */
export function untilTermEnds<T>(term: AbortSignal, lost: () => unknown, write: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const abandon = new AbortController();
  if (term.aborted) return Promise.reject(lost());
  termOfWrite.set(abandon.signal, term);
  return new Promise<T>((resolve, reject) => {
    const end = () => {
      const e = lost();
      abandon.abort(e);
      reject(e);
    };
    term.addEventListener('abort', end, { once: true });
    write(abandon.signal)
      .then(resolve, reject)
      .finally(() => term.removeEventListener('abort', end));
  });
}

/**
 * `command`, a write given `signal`: when that is a term's (untilTermEnds), the term is judged
 * again just before each try is handed to the HTTP handler (read now: a term's signal judges the
 * renew deadline when read, which a process frozen since the write was called, on a slow
 * credential fetch say, has passed before its deadline timer runs). Once it is over, the try
 * fails with the term's error (its end aborted `signal` with it) and nothing is sent. On the
 * command's own stack (the client is the caller's, shared), in the finalizeRequest step after the
 * AWS SDK's retry middleware (each try) and signing, awaiting nothing before its check. A freeze
 * after the check, while the try waits for a socket or connects (DNS, TCP, TLS), can still send it
 * as the process wakes: only its fence stops it then.
 */
function judgedEachTry<C extends { middlewareStack: { add(mw: never, o: object): void } }>(command: C, signal: AbortSignal | undefined): C {
  const term = signal && termOfWrite.get(signal);
  if (!term) return command;
  const judged = (next: (args: unknown) => Promise<unknown>) => (args: unknown) => (term.aborted ? Promise.reject(signal.reason) : next(args));
  command.middlewareStack.add(judged as never, { step: 'finalizeRequest', priority: 'low', name: 'conclaveTermJudged' });
  return command;
}

/**
 * Runs `input` as one DynamoDB transaction with an extra ConditionCheck: the lease's holder and
 * fencing token are still `term`'s (the "sequence number" of the old HA proposal). A deposed
 * leader's write (the lease row names another holder or token) fails with FencingError and writes
 * nothing; a paused one whose term ended while the lease row still names it passes this fence (a
 * LeadingTerm's `fencedWrite` is refused once its term ended). The FencingError says whose the row
 * is, or that `table` holds no row `leaseName` (fence.table must be the leases table); a key the
 * table does not take (fence.table keyed otherwise) is DynamoDB's ValidationException, its message
 * saying so. Input that is no list of transaction items is a ValidationError naming
 * `TransactItems`. One whose own condition
 * failed while the fence passed is a ConflictError naming the items (`TransactItems[i]`), DynamoDB's
 * error (its `CancellationReasons`, the fence's last) its `cause`. One whose fence met a write of the
 * lease row in progress (the leader's renewal, or another fenced write: TransactionConflict at the
 * fence) wrote nothing, its message saying to send it again: LeaderElector's and withLease's
 * term writes send it again themselves, a moment later, up to FENCE_CONFLICT_TRIES tries. One
 * DynamoDB throttled (ThrottlingError on an on-demand table, ProvisionedThroughputExceeded on a
 * provisioned one, at one item or more, the others passing) wrote nothing either, and the AWS SDK
 * does not send a cancelled transaction again: its message names the items throttled
 * (`TransactItems[i]`) and what to do; the term's writes send it again themselves, after a
 * longer pause, up to THROTTLED_TRIES tries. Any other cancellation is rethrown as DynamoDB
 * reported it. `signal` (the work's, say) abandons the request when it aborts.
 */
export async function fencedTransactWrite(
  client: DynamoDBClient,
  fence: { table: string; leaseName: string; term: Term; signal?: AbortSignal },
  input: TransactWriteItemsCommandInput,
): Promise<TransactWriteItemsCommandOutput> {
  parse(TermFence, { leaseName: fence.leaseName, table: fence.table, term: { holderIdentity: fence.term?.holderIdentity, fencingToken: fence.term?.fencingToken } }, `fencedTransactWrite fence on lease "${fence.leaseName}"`);
  // (an input that is no object gives no TransactItems)
  parse(TransactInput, typeof input === 'object' && input !== null ? input : {}, `fencedTransactWrite input on lease "${fence.leaseName}"`);
  const items = input.TransactItems!;
  // this term's fence, then the other term's the input is fenced by too (alsoFencedBy), on the same table
  const also = alsoFenced.get(input);
  const fences: readonly { leaseName: string; term: Term }[] = also ? [fence, also] : [fence];
  if (items.length === 0) throw new RangeError('fencedTransactWrite: TransactItems is empty; give at least one write');
  if (items.length > MAX_TRANSACTION_ITEMS - fences.length)
    throw new RangeError(`fencedTransactWrite: ${items.length} items leave no room for the fence${also ? `s (of lease "${fence.leaseName}" and of lease "${also.leaseName}")` : ''} (DynamoDB allows ${MAX_TRANSACTION_ITEMS} per transaction); split the write`);
  // the fence checks the lease row: DynamoDB allows one operation per item in a transaction
  for (const { leaseName } of fences) {
    const onLease = items.findIndex((i) => {
      const key = i.Put?.Item ?? (i.Update ?? i.Delete ?? i.ConditionCheck)?.Key;
      return (i.Put ?? i.Update ?? i.Delete ?? i.ConditionCheck)?.TableName === fence.table && key?.['name']?.S === leaseName;
    });
    if (onLease >= 0)
      throw new RangeError(`fencedTransactWrite: TransactItems[${onLease}] is the lease row "${leaseName}" itself, which the fence checks (DynamoDB allows one operation per item in a transaction); leave the lease row to the elector`);
  }
  const checks = fences.map(({ leaseName, term }) => {
    const c = termCondition(term);
    return {
      ConditionCheck: {
        TableName: fence.table,
        Key: marshall({ name: leaseName }),
        ConditionExpression: c.expression,
        ExpressionAttributeNames: c.names,
        ExpressionAttributeValues: marshall(c.values),
        // the row as it is, when the fence refuses: no row tells a wrong table or lease name from another term
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const,
      },
    };
  });
  try {
    return await fromDynamoDB(client.send(judgedEachTry(new TransactWriteItemsCommand({ ...input, TransactItems: [...items, ...checks] }), fence.signal), { abortSignal: fence.signal }), client);
  } catch (e) {
    const reasons = (e as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
    if (e instanceof Error && e.name === 'TransactionCanceledException' && reasons?.[items.length]?.Code === 'ConditionalCheckFailed') {
      throw new FencingError(fence.leaseName, fence.term.fencingToken, fenceRefusal((reasons[items.length] as { Item?: Record<string, AttributeValue> }).Item, fence.table, fence.leaseName));
    }
    if (also && e instanceof Error && e.name === 'TransactionCanceledException' && reasons?.[items.length + 1]?.Code === 'ConditionalCheckFailed') {
      const row = (reasons[items.length + 1] as { Item?: Record<string, AttributeValue> }).Item;
      throw new FencingError(fence.leaseName, fence.term.fencingToken, `${also.refused} (${row === undefined ? `table "${fence.table}" has no lease row "${also.leaseName}"` : `the row of lease "${also.leaseName}" ${rowNames(row)}`})`);
    }
    // a key the table's schema does not take: DynamoDB does not say whose (the fence's, when fence.table is not the leases table)
    if (e instanceof Error && e.name === 'ValidationException' && KEY_MISMATCH.test(e.message) && !e.message.includes(' - a key '))
      e.message = `${e.message} - a key does not match its table's: the fence's (a ConditionCheck of { name: "${fence.leaseName}" } on table "${fence.table}": fence.table must be the leases table, the \`tables\` option's leases, keyed by name), or one of TransactItems' own`;
    if (e instanceof Error && e.name === 'TransactionCanceledException' && reasons && fences.every((_, k) => reasons[items.length + k]?.Code === 'None')) {
      // the fence passed: the caller's own condition failed (DynamoDB's message names the reasons, the fence's among them, not which item is whose)
      const failed = items.flatMap((_, k) => (reasons[k]?.Code === 'ConditionalCheckFailed' ? [k] : []));
      if (failed.length > 0) throw ownConditionFailed(e, fence.leaseName, items, failed);
    }
    if (fenceConflicted(e, items.length)) {
      const k = Math.max(0, fences.findIndex((_, j) => reasons?.[items.length + j]?.Code === 'TransactionConflict'));
      e.message = `${e.message} - the fence (TransactItems[${items.length + k}], a ConditionCheck of lease "${fences[k]!.leaseName}") met a write of the lease row in progress (the leader's renewal, or another fenced write): nothing was written; send it again`;
    }
    const throttled = throttledItems(e);
    if (throttled.length > 0 && e instanceof Error) {
      const named = throttled.map((k) => (k < items.length ? itemNamed(items, k) : `the fence (TransactItems[${k}], a ConditionCheck of lease "${fences[k - items.length]?.leaseName}" on table "${fence.table}")`));
      const codes = [...new Set(throttled.map((k) => reasons![k]!.Code!))];
      e.message = `${e.message} - DynamoDB throttled ${listed(named)} (${codes.join(', ')}): nothing was written; send it again after a pause. ${codes.map((c) => THROTTLED[c]).join('. ')}`;
    }
    if (e instanceof NotDynamoDBError) throw answerInDoubt(e, `fencedTransactWrite on lease "${fence.leaseName}"`);
    const named = items.map((i, k) => `${(i.Put ?? i.Update ?? i.Delete ?? i.ConditionCheck)?.TableName} (TransactItems[${k}])`);
    throw missingTableNamed(e, [...named, `${fence.table} (the fence on lease "${fence.leaseName}": the leases table of the \`tables\` option)`]);
  }
}

/** DynamoDB's answers to a key its table's schema does not take: an attribute missing, one too many, or of another type. */
const KEY_MISMATCH = /required keys was not given a value|number of conditions on the keys is invalid|provided key element does not match the schema/i;

/**
 * Why the fence refused, from the lease row as it was (DynamoDB's ALL_OLD): none in `table` (a
 * wrong table or lease name, or a row deleted since the term began), or another term's.
 */
function fenceRefusal(row: Record<string, AttributeValue> | undefined, table: string, leaseName: string): string {
  if (row === undefined)
    return `table "${table}" has no lease row "${leaseName}": fence.table must be the leases table (the \`tables\` option's leases) and leaseName the lease's name, or the row was deleted since this term began`;
  return `the lease is no longer in this term (its row ${rowNames(row)})`;
}

/** Whose a lease row is, as a refusal tells it: `names holder "h", fencing token n` (or no holder). */
function rowNames(row: Record<string, AttributeValue>): string {
  const holder = row['holderIdentity']?.S;
  const token = row['fencingToken']?.N;
  return `names ${holder === undefined ? 'no holder' : `holder "${holder}"`}${token === undefined ? '' : `, fencing token ${token}`}`;
}

/** The other lease's term a transaction is fenced by too (alsoFencedBy), and what its refusal says. */
interface AlsoFence {
  /** The other lease, on the same leases table as the term's own. */
  readonly leaseName: string;
  /** Its term: the row must still name this holder and fencing token. */
  readonly term: Term;
  /** Why the write is refused when that row names another term: the FencingError's reason. */
  readonly refused: string;
}

/** Each transaction input alsoFencedBy marked, and the other term it is fenced by. */
const alsoFenced = new WeakMap<object, AlsoFence>();

/**
 * A copy of `input` that a term's fenced transaction (fencedTransactWrite, as a LeadingTerm's
 * fencedWrite sends it) also fences by another lease's term: a second ConditionCheck, of that
 * lease's row on the same leases table, in the same transaction, after the term's own. A write that
 * reaches DynamoDB once that row names another term writes nothing: a FencingError of the writing
 * term whose reason is `also.refused`. runWithLeaderMigration's migrated controllers write so: in
 * the migration lease's term and in the primary term they run in. (A mark rather than an option: the
 * input reaches fencedTransactWrite through the elector's own fencedWrite, unchanged.)
 * @internal
 */
export function alsoFencedBy(input: TransactWriteItemsCommandInput, also: AlsoFence): TransactWriteItemsCommandInput {
  if (typeof input !== 'object' || input === null) return input; // refused as it is, naming TransactItems
  const marked = { ...input };
  alsoFenced.set(marked, also);
  return marked;
}

/**
 * Tries of a term's fenced transaction whose fence met a write of the lease row in progress: the
 * first, and up to three more.
 * @internal
 */
export const FENCE_CONFLICT_TRIES = 4;

/**
 * Tries of a term's fenced transaction DynamoDB throttled: the first, and up to four more, after
 * pauses of about 0.1, 0.2, 0.4 and 0.8 s (throttledRetryMs): 1.5 s in all, within a term's renew
 * deadline at client-go's timings.
 * @internal
 */
export const THROTTLED_TRIES = 5;

/** The pause before the first try again of a term's fenced transaction DynamoDB throttled. */
const THROTTLED_RETRY_MS = 100;

/**
 * How long after the `tries`-th try of a term's fenced transaction, throttled, the next goes out:
 * THROTTLED_RETRY_MS, twice as long each time, jittered (`random` in [0, 1): half to one and a half
 * times), never longer than a retry period. Longer than a conflict's pause (contendedRetryMs: a
 * transaction holds the row for a request's time) as the AWS SDK's own retry waits longer after a
 * throttle: an on-demand table takes moments to scale, a provisioned one refills its capacity by
 * the second.
 * @internal
 */
export function throttledRetryMs(tries: number, retryPeriodMs: number, random: number): number {
  return Math.min(retryPeriodMs, THROTTLED_RETRY_MS * 2 ** (tries - 1) * (0.5 + random));
}

/**
 * fencedTransactWrite as a term's own writes make it (LeaderElector's fencedWrite, withLease's
 * `fencedWrite` and `complete(items)`): one its fence met a write of the lease row in progress
 * cancels (TransactionConflict at the fence: nothing written; the leader's renewal holds the row
 * for about a request's time) is sent again after contendedRetryMs on `clock` (20 ms, half again as
 * long each time, jittered, as the renewal it met tries again), FENCE_CONFLICT_TRIES tries at most;
 * then it rejects with DynamoDB's error, which says to send it again. One DynamoDB throttled
 * (nothing written either; the AWS SDK does not retry a cancelled transaction) is sent again after
 * throttledRetryMs (100 ms, twice as long each time, jittered), THROTTLED_TRIES tries at most; then
 * it rejects with DynamoDB's error, which names the items throttled, what to do, and the tries
 * made. Each try is fenced anew: one sent after the lease moved on is refused (FencingError). The
 * pause ends, and nothing more is sent, once `fence.signal` aborts.
 * @internal
 */
export async function fencedTransactWriteInTerm(
  client: DynamoDBClient,
  fence: { table: string; leaseName: string; term: Term; signal?: AbortSignal },
  input: TransactWriteItemsCommandInput,
  pause: { clock: Clock; retryPeriodMs: number },
): Promise<TransactWriteItemsCommandOutput> {
  const from = pause.clock.monotonic();
  for (let tries = 1; ; tries++) {
    try {
      return await fencedTransactWrite(client, fence, input);
    } catch (e) {
      const throttled = throttledItems(e).length > 0;
      if (!throttled && !fenceConflicted(e, input?.TransactItems?.length ?? 0)) throw e;
      if (tries >= (throttled ? THROTTLED_TRIES : FENCE_CONFLICT_TRIES)) {
        if (throttled) (e as Error).message = `${(e as Error).message}. Sent ${tries} times in this term, over ${Math.round(pause.clock.monotonic() - from)} ms`;
        throw e;
      }
      const ms = throttled ? throttledRetryMs(tries, pause.retryPeriodMs, pause.clock.random()) : contendedRetryMs(tries, pause.retryPeriodMs, pause.clock.random());
      await pause.clock.sleep(ms, fence.signal);
      if (fence.signal?.aborted) throw e;
    }
  }
}

/** Whether a fenced transaction of `items` items was cancelled because a fence of it (the items after them) met a write of its lease row in progress. */
function fenceConflicted(e: unknown, items: number): e is Error {
  const reasons = (e as { CancellationReasons?: { Code?: string }[] }).CancellationReasons;
  return e instanceof Error && e.name === 'TransactionCanceledException' && (reasons?.slice(items) ?? []).some((r) => r?.Code === 'TransactionConflict');
}

/** The caller's item `k` of a fenced transaction, as its errors name it: `TransactItems[k] (Put on table "t")`. */
function itemNamed(items: readonly TransactWriteItem[], k: number): string {
  const i = items[k]!;
  const op = i.Put ? 'Put' : i.Update ? 'Update' : i.Delete ? 'Delete' : 'ConditionCheck';
  return `TransactItems[${k}] (${op} on table "${(i.Put ?? i.Update ?? i.Delete ?? i.ConditionCheck)?.TableName}")`;
}

/** `a`, `a and b`, `a, b and c`. */
const listed = (named: readonly string[]): string => (named.length === 1 ? named[0]! : `${named.slice(0, -1).join(', ')} and ${named.at(-1)!}`);

/**
 * DynamoDB's cancellation reasons for an item it throttled (TransactionCanceledException's
 * CancellationReasons), and what to do about each when it goes on.
 */
const THROTTLED: Record<string, string> = {
  ThrottlingError:
    "On an on-demand table: DynamoDB scales it within moments; throttled for longer, a hot item (one key written more often than a partition takes: spread the writes over keys), or the table's maximum throughput or the account's limits (its service quotas) reached: raise them",
  ProvisionedThroughputExceeded: "On a provisioned table: raise its write capacity (or its auto scaling's maximum), or its global secondary indexes' if they are the ones throttled, or make it on-demand",
};

/** Cancellation reasons of an item that may land when the same transaction is sent again: it passed, met a transaction in progress, or was throttled. */
const PASSING = new Set(['None', 'TransactionConflict', ...Object.keys(THROTTLED)]);

/**
 * The items (their places in the transaction as sent, the fences last) DynamoDB throttled when it
 * cancelled the transaction for that alone: every other item passed or met a transaction in
 * progress, none was refused (a condition, a validation, a size). Nothing was written, and the same
 * transaction sent again may land. None when it was cancelled otherwise, or not cancelled.
 */
function throttledItems(e: unknown): number[] {
  const reasons = (e as { CancellationReasons?: { Code?: string }[] } | undefined)?.CancellationReasons;
  if (!(e instanceof Error) || e.name !== 'TransactionCanceledException' || !reasons?.every((r) => PASSING.has(r?.Code ?? ''))) return [];
  return reasons.flatMap((r, k) => (Object.hasOwn(THROTTLED, r.Code!) ? [k] : []));
}

/**
 * A fenced transaction whose fence passed and whose caller's items `failed` (their indexes in
 * TransactItems) failed their own conditions: a ConflictError naming them, DynamoDB's error (its
 * CancellationReasons) its cause. Nothing was written.
 */
function ownConditionFailed(e: Error, leaseName: string, items: readonly TransactWriteItem[], failed: readonly number[]): ConflictError {
  const named = failed.map((k) => itemNamed(items, k));
  const which = listed(named);
  const conflict = new ConflictError(`${which} of a fenced write on lease "${leaseName}"`, undefined);
  conflict.message = `fenced write on lease "${leaseName}": ${which} failed ${failed.length === 1 ? 'its' : 'their'} own condition (ConditionalCheckFailed); the fence passed (the lease is still in this term), and nothing was written. DynamoDB's CancellationReasons are on this error's cause, the fence's last`;
  conflict.cause = e;
  return conflict;
}

/**
 * An answer not DynamoDB's to a fenced write, `call` named: the write's outcome is unknown (what
 * answered may have passed it on), which a caller that does not retry must be told.
 */
function answerInDoubt(e: NotDynamoDBError, call: string): NotDynamoDBError {
  return new NotDynamoDBError(e.endpoint, e.httpStatusCode, e.sign, e.cause, call, 'the write may have landed (what answered may have passed it on): read what it writes before writing again');
}

/**
 * DynamoDB's ResourceNotFoundException names no table ("Cannot do operations on a non-existent
 * table"): the tables the write names are added to its message; the error stays DynamoDB's.
 */
function missingTableNamed(e: unknown, tables: readonly string[]): unknown {
  if (e instanceof Error && e.name === 'ResourceNotFoundException' && !e.message.includes(' - a table it names')) {
    const which = tables.length === 1 ? `it names does not exist where the DynamoDB client points: ${tables[0]}` : `it names does not exist where the DynamoDB client points, one of (DynamoDB does not say which) ${tables.join(', ')}`;
    e.message = `${e.message} - a table ${which}; create it (your own tables too: Conclave makes only its own), or check the name and the client's region and endpoint`;
  }
  return e;
}

/** The attribute a token-fenced item carries: the highest fencing token that wrote it. */
export const DEFAULT_FENCE_ATTRIBUTE = 'fence';

/** One item's write that `fencedItemWrite` fences: a PutItem or an UpdateItem of the caller's own item. */
export type FencedItemInput = { put: PutItemCommandInput } | { update: UpdateItemCommandInput };

/**
 * Writes one of the caller's own items only if no newer term has written it: the item carries the
 * highest fencing token that wrote it (`attribute`, default `fence`), and the write is conditioned on
 * `attribute_not_exists(fence) OR fence <= token` and sets it to `token` (with the caller's own
 * condition, if any, ANDed on). This is the HA proposal's sequence number, checked by the resource as
 * a Chubby sequencer is: it needs no transaction, so it works on multi-Region strongly consistent
 * tables too.
 *
 * What it guarantees: once a term with a higher token has written the item, no older term's write
 * to it lands. What it does not: an older term may still write an item the newer term has not
 * written yet, and a deleted item forgets its fence (end an item's life with an update that marks it,
 * not a delete). Fence an item by one lease only: tokens of different leases do not compare.
 *
 * A write refused by the fence is a FencingError naming the item's higher token (a later term's,
 * or an earlier one's when tokens went backwards after the lease row was deleted: docs/safety.md)
 * (a ValidationError naming
 * the attribute when the item's holds no token); a write refused by the caller's own condition is
 * rethrown as DynamoDB reported it. `signal` (the work's, say) abandons
 * the request when it aborts.
 */
export async function fencedItemWrite(
  client: DynamoDBClient,
  fence: { leaseName: string; fencingToken: number; attribute?: string; signal?: AbortSignal },
  input: FencedItemInput,
): Promise<PutItemCommandOutput | UpdateItemCommandOutput> {
  parse(ItemFence, { leaseName: fence.leaseName, fencingToken: fence.fencingToken, attribute: fence.attribute }, `fencedItemWrite fence on lease "${fence.leaseName}"`);
  const attribute = fence.attribute ?? DEFAULT_FENCE_ATTRIBUTE;
  const token = fence.fencingToken;
  const names = { '#conclaveFence': attribute };
  const values = marshall({ ':conclaveToken': token });
  const guard = '(attribute_not_exists(#conclaveFence) OR #conclaveFence <= :conclaveToken)';
  const refused = (e: unknown): never => {
    if (e instanceof NotDynamoDBError) throw answerInDoubt(e, `fencedItemWrite on lease "${fence.leaseName}"`);
    missingTableNamed(e, [own.TableName ?? '(no TableName)']);
    const seen = fenceSeen((e as { Item?: Record<string, AttributeValue> }).Item?.[attribute]);
    if (e instanceof Error && e.name === 'ConditionalCheckFailedException' && typeof seen === 'number' && seen > token) {
      throw new FencingError(fence.leaseName, token, `the item was written with fencing token ${seen}, a higher fencing token than this term's (a later term's; or, after the lease row was deleted and a clock behind made later tokens lower, an earlier one's)`);
    }
    // the guard compares numbers: a fence of another type refuses every term, whatever the caller's own condition says
    if (e instanceof Error && e.name === 'ConditionalCheckFailedException' && seen !== undefined && typeof seen !== 'number') {
      throw new ValidationError(`item fenced by lease "${fence.leaseName}"`, [
        { field: attribute, message: `holds ${typeof seen === 'object' ? 'a non-number' : `a ${typeof seen}`}, not a fencing token, so the fence refuses every write: give fencedItemWrite another attribute (the item's own "${attribute}" is not the fence's), or remove it from the item` },
      ]);
    }
    throw e;
  };
  // one write, put or update: anything else failed on reading its fields (a TypeError naming nothing)
  // (a key given as undefined is not given: `{ put, update: undefined }` passes TypeScript's check of the union)
  const given = typeof input === 'object' && input !== null ? (['put', 'update'] as const).filter((k) => (input as Record<string, unknown>)[k] !== undefined) : [];
  if (given.length !== 1 || typeof (input as Record<string, unknown>)[given[0]!] !== 'object' || (input as Record<string, unknown>)[given[0]!] === null)
    throw new ValidationError(`fencedItemWrite on lease "${fence.leaseName}"`, [
      { field: 'input', message: given.length > 1 ? 'gives both put and update: give one write ({ put } or { update })' : 'must be { put: PutItemCommandInput } or { update: UpdateItemCommandInput }' },
    ]);
  const joined = (own: string | undefined) => (own ? `${guard} AND (${own})` : guard);
  // the caller's placeholders and ours share one map each: one of its own named as ours would be replaced, silently
  const put = given[0] === 'put' ? (input as { put: PutItemCommandInput }).put : undefined;
  const own = put ?? (input as { update: UpdateItemCommandInput }).update;
  const taken = [...Object.keys(names).filter((k) => own.ExpressionAttributeNames?.[k] !== undefined), ...Object.keys(values).filter((k) => own.ExpressionAttributeValues?.[k] !== undefined)];
  if (taken.length) throw new RangeError(`fencedItemWrite: ${taken.join(' and ')} ${taken.length > 1 ? 'are' : 'is'} the fence's own placeholder${taken.length > 1 ? 's' : ''}; name yours otherwise`);
  if (put) {
    const p = put;
    if (p.Item?.[attribute] !== undefined) throw new RangeError(`fencedItemWrite: the item already names the fence attribute "${attribute}"; leave it out (the write sets it) or give another attribute`);
    if (p.ReturnValuesOnConditionCheckFailure !== undefined) throw new RangeError('fencedItemWrite: leave out ReturnValuesOnConditionCheckFailure (the fence asks for ALL_OLD to tell its refusal from yours)');
    return fromDynamoDB(
      client.send(
        judgedEachTry(
          new PutItemCommand({
            ...p,
            Item: { ...p.Item, ...marshall({ [attribute]: token }) },
            ConditionExpression: joined(p.ConditionExpression),
            ExpressionAttributeNames: { ...p.ExpressionAttributeNames, ...names },
            ExpressionAttributeValues: { ...p.ExpressionAttributeValues, ...values },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
          fence.signal,
        ),
        { abortSignal: fence.signal },
      ),
      client,
    ).catch(refused);
  }
  const u = (input as { update: UpdateItemCommandInput }).update;
  if (!u.UpdateExpression) throw new RangeError('fencedItemWrite: the update needs an UpdateExpression (the fence adds `SET fence = token` to it)');
  if (updates(u.UpdateExpression, u.ExpressionAttributeNames, attribute))
    throw new RangeError(`fencedItemWrite: the UpdateExpression names the fence attribute "${attribute}"; leave it out (the write sets it) or give another attribute`);
  if (u.ReturnValuesOnConditionCheckFailure !== undefined) throw new RangeError('fencedItemWrite: leave out ReturnValuesOnConditionCheckFailure (the fence asks for ALL_OLD to tell its refusal from yours)');
  return fromDynamoDB(
    client.send(
      judgedEachTry(
        new UpdateItemCommand({
          ...u,
          UpdateExpression: withSet(u.UpdateExpression, '#conclaveFence = :conclaveToken'),
          ConditionExpression: joined(u.ConditionExpression),
          ExpressionAttributeNames: { ...u.ExpressionAttributeNames, ...names },
          ExpressionAttributeValues: { ...u.ExpressionAttributeValues, ...values },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
        fence.signal,
      ),
      { abortSignal: fence.signal },
    ),
    client,
  ).catch(refused);
}

/**
 * The fence attribute's value in a refused write's old item: a number as a number (one a double
 * cannot hold exactly too: it is compared, not kept), any other type as its value's kind. The old
 * item is not unmarshalled whole: a number of another attribute that JavaScript cannot hold (a
 * non-integer beyond 2^53) would throw, hiding the refusal.
 */
function fenceSeen(raw: AttributeValue | undefined): unknown {
  if (raw === undefined) return undefined;
  if (raw.N !== undefined) return Number(raw.N);
  if (raw.S !== undefined) return raw.S;
  if (raw.BOOL !== undefined) return raw.BOOL;
  return {}; // a set, a list, a map, binary, null: no fencing token
}

/**
 * Whether an UpdateExpression sets, removes, adds to or deletes from `attribute` at its top level,
 * by name or by a placeholder of `names`: the paths its actions write (SET's left of `=`, REMOVE's
 * paths, ADD's and DELETE's first), not what they read (a value, a function's argument) nor a path
 * inside another attribute. The fence's own SET on it would overlap, which DynamoDB refuses
 * without naming the fix.
 */
function updates(expression: string, names: Record<string, string> | undefined, attribute: string): boolean {
  const placeholders = new Set(Object.entries(names ?? {}).filter(([, n]) => n === attribute).map(([k]) => k));
  // the clauses, each from its keyword (not a placeholder or a name spelt like one: #set, :set)
  const clauses = expression.split(/(?<![\w#:.])(?=(?:SET|REMOVE|ADD|DELETE)(?!\w))/i).filter((c) => c.trim() !== '');
  return clauses.some((clause) => {
    const [, keyword = '', body = ''] = /^\s*(\w+)([\s\S]*)$/.exec(clause) ?? [];
    return actionsOf(body).some((action) => {
      const target = keyword.toUpperCase() === 'SET' ? action.split('=')[0]! : action;
      const head = /^\s*(#?\w+)/.exec(target)?.[1];
      return head !== undefined && (head === attribute || placeholders.has(head));
    });
  });
}

/** A clause's actions: split at its commas outside parentheses (a function's arguments). */
function actionsOf(body: string): string[] {
  const actions: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < body.length; i++) {
    if (body[i] === '(') depth++;
    else if (body[i] === ')') depth--;
    else if (body[i] === ',' && depth === 0) {
      actions.push(body.slice(start, i));
      start = i + 1;
    }
  }
  actions.push(body.slice(start));
  return actions;
}

/**
 * `expression` with `assignment` added to its SET clause (one made when it has none). The clause's
 * keyword, not a placeholder that spells it (`#set`, `:set`: `\b` alone would match inside them).
 */
function withSet(expression: string, assignment: string): string {
  const set = /(?<![#:\w])SET\b/i.exec(expression);
  if (!set) return `SET ${assignment} ${expression}`;
  const at = set.index + set[0].length;
  return `${expression.slice(0, at)} ${assignment},${expression.slice(at)}`;
}
