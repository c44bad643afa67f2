/**
 * One local runtime per DynamoDB Local and table prefix. A second beside the first would poll the
 * same streams: each record handled twice and each event published twice (into the same
 * events.jsonl, if they share the folder), the ticks doubled, and one set of checkpoints moved on
 * by both. So a runtime on an endpoint holds a lock while it runs, and a start that finds it held
 * is refused, naming the holder.
 *
 * The lock is an item in that DynamoDB Local itself (table RUNTIME_LOCK_TABLE, keyed by the
 * prefix), not a file: a file in the temp folder was two locks for two runtimes started with other
 * TMPDIRs or as other users, and a path on the machine is none for runtimes in two containers on
 * one DynamoDB Local. It is taken by a conditional write (two starts in the same millisecond: one
 * write lands, the other sees it), renewed every RUNTIME_LOCK_HEARTBEAT_MS, and deleted at the stop.
 * A lock whose holder is gone is taken over: at once when its process, on this host, no longer runs
 * (a crash, a kill -9: a restart is not held up); else once it has not been renewed for
 * RUNTIME_LOCK_STALE_MS (a holder whose pid cannot be looked at: another host or container; or a live
 * pid here whose stamps look stale: hung, or this host's clock stepped forward), waited for with a
 * line saying for what. A holder on another host stamps its renewals by its own clock,
 * which may be minutes off this one's: its lock is judged by whether it changes (its renewal count)
 * over RUNTIME_LOCK_STALE_MS counted on this host's monotonic clock from the first look (client-go's
 * observedTime), never by comparing its stamps with this host's time.
 */
import { randomUUID } from 'node:crypto';
import { readlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { DeleteItemCommand, GetItemCommand, PutItemCommand, UpdateItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import * as z from 'zod';
import { systemClock, type Clock, type Timer } from '../clock.js';
import { boundedClient, requestBoundMs } from '../sdk/bounded-client.js';
import { callBack } from '../sdk/faults.js';
import { parse } from '../schemas/validation.js';
import { isConditionFailed } from '../stores/errors.js';
import { createTable } from '../stores/table-admin.js';
import { Backoff } from './backoff.js';
import { alive } from './lock-file.js';
import { rowOf } from '../stores/item-store.js';

/** The table of the runtime locks, one per DynamoDB Local: an item per table prefix in use. */
export const RUNTIME_LOCK_TABLE = 'conclave-local-runtimes';
/** How often a holder renews its lock. */
export const RUNTIME_LOCK_HEARTBEAT_MS = 2_000;
/** A lock not renewed for this long is its holder's no more: five renewals missed. */
export const RUNTIME_LOCK_STALE_MS = 10_000;
/**
 * A failed renewal (DynamoDB Local unreachable) is tried again after this, twice as long after each
 * later failure in a row, up to RUNTIME_LOCK_HEARTBEAT_MS: sooner than the next beat after a blip,
 * never later (each try counts while the stale time runs).
 */
export const RUNTIME_LOCK_RETRY_MS = 500;
/**
 * How long after its last renewal that landed was sent a holder counts its lock as surely its own,
 * on its monotonic clock: no start takes it over sooner than RUNTIME_LOCK_STALE_MS after that (a
 * reader counts the stale time from a look at it as renewed), less a heartbeat of margin (the
 * holder's and the reader's monotonic clocks run at rates that differ a little; no reader judges the
 * lock by wall-clock stamps alone once they look stale: decideLock). Past it (this process paused, or
 * its renewals failing), the runtime confirms the lock before it runs a function again.
 */
export const RUNTIME_LOCK_SURE_MS = RUNTIME_LOCK_STALE_MS - RUNTIME_LOCK_HEARTBEAT_MS;
/**
 * How long a request of the lock (a read, the take, a renewal, the delete at the stop) is given, on
 * the lock's clock, before it is abandoned as a timeout: the SDK sets none, so a DynamoDB Local that
 * accepts a connection and never answers would hold a renewal (and the stop, which waits for it)
 * for good. A renewal abandoned fails as one that cannot connect does (tried again at the backoff);
 * the delete abandoned at the stop leaves the lock to the next start, saying so.
 */
export const RUNTIME_LOCK_REQUEST_MS = requestBoundMs(RUNTIME_LOCK_HEARTBEAT_MS);

/** A runtime lock as stored. Stamps are the holder's epoch ms. */
export const RuntimeLockItem = z.object({
  prefix: z.string().min(1),
  /** The holding runtime's token, new at each take. */
  owner: z.string().min(1),
  pid: z.number().int().positive(),
  host: z.string().min(1),
  /**
   * The holder's pid namespace where it has one (Linux: the link /proc/self/ns/pid names, such as
   * `pid:[4026531836]`): containers that share a host name (`--network host`) but not their pids
   * are not one host to the lock, whose pids each could look at. Absent: no such namespace, or an
   * item of before it was kept (judged by `host` alone, as then).
   */
  pidNamespace: z.string().min(1).optional(),
  /** The endpoint as the holder was given it (for messages). */
  endpoint: z.string(),
  startedAt: z.number().int(),
  heartbeatAt: z.number().int(),
  /** heartbeatAt + RUNTIME_LOCK_STALE_MS: from then on a reader on the holder's host (its clock) may take the lock over. */
  staleAt: z.number().int(),
  /**
   * How many times the holder has renewed it: what a reader on another host watches change. Absent
   * on an item written before the count was kept (before 0.2.0's cf676b3): read as 0, so such a lock
   * is judged by its heartbeatAt changing, as its holder of that version renews it, and its take-over
   * is conditional on the count being absent still.
   */
  renewals: z.number().int().min(0).default(0),
});
export type RuntimeLockItem = z.infer<typeof RuntimeLockItem>;

/** Who is asking: this host, this process, its own tokens, and whether a pid runs here. */
export interface LockSeer {
  readonly host: string;
  /** RuntimeLockItem.pidNamespace: this process's, where it has one. */
  readonly pidNamespace?: string | undefined;
  readonly pid: number;
  /** Whether this process holds the lock of token `owner` (a lock naming this pid but no token of ours is an earlier process's). */
  holds(owner: string): boolean;
  alive(pid: number): boolean;
}

/**
 * What became of a lock lost, as the renewal that found it so read it: written over by another
 * runtime that judged it not renewed (`takenOver`, naming it as the item does), gone (`deleted`: by
 * hand, or with its table; no runtime deletes a lock not its own), or either (`unread`: who holds it
 * now could not be read, `error` saying why); or lost with the runtime's own DynamoDB Local, which
 * exited (`storeExited`: its in-memory tables, the lock's among them, gone; no renewal read it).
 */
export type RuntimeLockLoss =
  | { readonly kind: 'takenOver'; readonly pid: number; readonly host: string }
  | { readonly kind: 'deleted' }
  | { readonly kind: 'unread'; readonly error: unknown }
  | { readonly kind: 'storeExited' };

/** What to do about the lock of a prefix, as found. */
export type LockDecision =
  | { readonly kind: 'take' }
  | { readonly kind: 'takeOver'; readonly why: string }
  | { readonly kind: 'refuse' }
  | { readonly kind: 'wait'; readonly ms: number };

/** A holder's lock as this start first saw it, and when: `at` on this host's monotonic clock. */
export interface LockSeen {
  readonly lock: RuntimeLockItem;
  readonly at: number;
}

/**
 * What to do about `found` (undefined: no lock), seen by `me` at `now` (its wall clock) and `mono`
 * (its monotonic clock). `first`: the same holder's lock as this start first saw it (its owner is
 * found's): one renewed since is live, one unchanged for RUNTIME_LOCK_STALE_MS of `mono` is gone. No
 * I/O: the taking is lockRuntime's.
 */
export function decideLock(found: RuntimeLockItem | undefined, first: LockSeen | undefined, me: LockSeer, now: number, mono: number): LockDecision {
  if (found === undefined) return { kind: 'take' };
  const here = onThisHost(found, me);
  if (here) {
    if (me.holds(found.owner)) return { kind: 'refuse' };
    if (found.pid === me.pid) return { kind: 'takeOver', why: `its pid is this process's, which does not hold it: an earlier process's` };
    if (!me.alive(found.pid)) return { kind: 'takeOver', why: 'that process no longer runs' };
    // a live pid, its lock renewed by this host's clock: live
    if (now < found.staleAt) return { kind: 'refuse' };
    // a live pid whose lock looks unrenewed by this host's wall clock: a hung holder, the pid taken by
    // another program since, or a holder renewing every 2 s while the clock stepped forward (a
    // machine waking from sleep, a time sync): judged as another host's lock is, below
  }
  // another host's stamps are its clock's, which may be off this one's by more than the stale time
  // either way: judged by whether the lock changes, over time counted here (observer's clock)
  if (first === undefined || first.lock.owner !== found.owner) return { kind: 'wait', ms: RUNTIME_LOCK_STALE_MS };
  if (first.lock.renewals !== found.renewals || first.lock.heartbeatAt !== found.heartbeatAt) return { kind: 'refuse' }; // renewed: live
  const waited = mono - first.at;
  if (waited >= RUNTIME_LOCK_STALE_MS) return { kind: 'takeOver', why: `not renewed for ${seconds(waited)} s as ${me.host}'s clock counts (its last renewal stamped ${iso(found.heartbeatAt)} by its own)` };
  return { kind: 'wait', ms: RUNTIME_LOCK_STALE_MS - waited };
}

/** Whether `l`'s holder runs where `me` can look at its pid: the same host name, and the same pid namespace where both name one. */
const onThisHost = (l: RuntimeLockItem, me: LockSeer): boolean =>
  l.host === me.host && (l.pidNamespace === undefined || me.pidNamespace === undefined || l.pidNamespace === me.pidNamespace);

/** This process's pid namespace (Linux), or undefined where there is none to read. */
function ownPidNamespace(): string | undefined {
  try {
    return readlinkSync('/proc/self/ns/pid');
  } catch {
    return undefined;
  }
}

const iso = (ms: number) => new Date(ms).toISOString();
/** `ms` in seconds to a tenth, as a reader needs them (the monotonic clock counts microseconds): 10002.34 → 10, 10261.7 → 10.3. */
const seconds = (ms: number) => Math.round(ms / 100) / 10;
const holderOf = (l: RuntimeLockItem) => `process ${l.pid} on ${l.host}`;

/** The lock names this process holds: a lock naming this pid but no token of these is an earlier process's. */
const held = new Set<string>();

/** False once `signal` aborts: one listener on it however many wait (a runtime's stop signal: every invocation waiting on a confirmation). */
const abortedPromises = new WeakMap<AbortSignal, Promise<false>>();
function abortedOf(signal: AbortSignal): Promise<false> {
  let p = abortedPromises.get(signal);
  if (!p) {
    p = new Promise<false>((resolve) => signal.addEventListener('abort', () => resolve(false), { once: true }));
    abortedPromises.set(signal, p);
  }
  return p;
}

/** A runtime lock held: renewed in the background until `release()` (at the runtime's stop). */
export interface RuntimeLock {
  readonly prefix: string;
  /** Renews it now (as the heartbeat does). */
  renew(): Promise<void>;
  /**
   * Whether it is still this runtime's, to run a function now: at once while its last renewal that
   * landed was sent less than RUNTIME_LOCK_SURE_MS ago (no I/O); else once a renewal lands (true) or
   * is refused (false: lost, and told), renewals that fail tried again at a backoff meanwhile. False
   * once released, or once `signal` aborts while it waits (the runtime stopping: a function waiting
   * for DynamoDB Local to come back is not run, and its stop does not wait for it).
   */
  held(signal?: AbortSignal): Promise<boolean>;
  /**
   * Stops renewing and deletes it, if still ours. A delete that fails (DynamoDB Local gone, or not
   * answering within RUNTIME_LOCK_REQUEST_MS) leaves the lock in place, said through `say` with how
   * a later start takes it over: the stop completes all the same.
   */
  release(): Promise<void>;
  /**
   * Lost with the DynamoDB Local it was in (the runtime's own, exited: its in-memory tables gone):
   * no renewal is sent again, release() deletes nothing, and onLost is told `line` (once, unless
   * already lost or released).
   */
  lostWithStore(line: string): void;
}

export interface LockRuntimeOptions {
  /** Stamps, the heartbeat's timer and the waits. @default systemClock */
  readonly clock?: Clock;
  /** Where a waiting start says what it waits for, and a take-over whose. @default stderr */
  readonly say?: (line: string) => void;
  /**
   * Called once when a renewal finds the lock another's (taken over, judged stale) or gone, with the
   * line saying so and what became of it (`loss`: tell taken over from deleted by it, not by the
   * line). What it throws (or rejects with) is a process warning naming it. @default `say`
   */
  readonly onLost?: (line: string, loss: RuntimeLockLoss) => void;
  /** The host named on the lock, whose pids this process can look at. @default os.hostname() */
  readonly host?: string;
  /** This process's pid namespace (RuntimeLockItem.pidNamespace). @default the link /proc/self/ns/pid names, where there is one */
  readonly pidNamespace?: string;
}

/** The lock table there, made if missing (a DynamoDB Local kept across runs has it already). */
export async function lockTable(client: DynamoDBClient): Promise<void> {
  await createTable(client, RUNTIME_LOCK_TABLE, { partitionKey: 'prefix', stream: false, indexes: [] }, {
    ifExists: 'reuse',
    describedAs: {
      what: "local mode's table of runtime locks (declared: key prefix (S), no stream)",
      fix: `delete it (aws dynamodb delete-table --table-name ${RUNTIME_LOCK_TABLE}): the next start of local mode makes it as declared`,
    },
  });
}

/**
 * Takes the lock of local mode on `endpoint` (`client`'s) with `prefix`: at once if free, over a
 * holder that is gone (told through `say`), after waiting for one whose pid cannot be looked at
 * (said through `say`: until when, for what), or throws naming the live holder and the fix.
 */
export async function lockRuntime(client: DynamoDBClient, endpoint: string, prefix: string, opts: LockRuntimeOptions = {}): Promise<RuntimeLock> {
  const clock = opts.clock ?? systemClock;
  const say = opts.say ?? ((line: string) => void process.stderr.write(`conclave: local runtime: ${line}\n`));
  // every request of the lock gives up after RUNTIME_LOCK_REQUEST_MS (aborted, a TimeoutError), the table's making included
  const requests = boundedClient(client, clock, RUNTIME_LOCK_REQUEST_MS);
  await lockTable(requests);
  const me: LockSeer = { host: opts.host ?? hostname(), pidNamespace: opts.pidNamespace ?? ownPidNamespace(), pid: process.pid, holds: (o) => held.has(o), alive };
  const owner = randomUUID();
  const read = async (): Promise<RuntimeLockItem | undefined> => {
    const out = await requests.send(new GetItemCommand({ TableName: RUNTIME_LOCK_TABLE, Key: { prefix: { S: prefix } }, ConsistentRead: true }));
    return out.Item && parse(RuntimeLockItem, rowOf(out.Item), `runtime lock "${prefix}" (table ${RUNTIME_LOCK_TABLE} at ${endpoint}; delete the item if no local mode runs on that prefix)`);
  };
  const startedAt = clock.now();
  let first: LockSeen | undefined;
  let waitSaid: string | undefined;
  for (;;) {
    const found = await read();
    const now = clock.now();
    const mono = clock.monotonic(); // read after the item: what is counted from here never includes the read's own time
    if (found && first?.lock.owner !== found.owner) first = { lock: found, at: mono };
    const d = decideLock(found, first, me, now, mono);
    if (d.kind === 'refuse') throw new Error(refusal(endpoint, prefix, found!));
    if (d.kind === 'wait') {
      if (waitSaid !== found!.owner) {
        waitSaid = found!.owner;
        say(
          `local mode on the DynamoDB Local at ${endpoint} with table prefix ${prefix} is locked by ${holderOf(found!)}, ${onThisHost(found!, me) ? 'which runs but looks unrenewed by this clock' : `whose pid cannot be looked at from ${me.host}${found!.host === me.host ? ` (another pid namespace: ${found!.pidNamespace})` : ''}`}: ` +
            `waiting ${d.ms / 1000} s (until ${iso(now + d.ms)} by ${me.host}'s clock; its last renewal is stamped ${iso(found!.heartbeatAt)} by its own) for it to renew (then this start is refused) or not (then its lock is taken over)`,
        );
      }
      await clock.sleep(Math.min(RUNTIME_LOCK_HEARTBEAT_MS, d.ms));
      continue;
    }
    const item: RuntimeLockItem = { prefix, owner, pid: me.pid, host: me.host, ...(me.pidNamespace === undefined ? {} : { pidNamespace: me.pidNamespace }), endpoint, startedAt, heartbeatAt: now, staleAt: now + RUNTIME_LOCK_STALE_MS, renewals: 0 };
    // held before the write lands: another start in this process that sees it meanwhile is refused, not told it is an earlier process's
    held.add(owner);
    const sent = clock.monotonic();
    try {
      // none there, or still the very lock judged gone: two starts at once, one lands
      await requests.send(
        new PutItemCommand({
          TableName: RUNTIME_LOCK_TABLE,
          Item: marshall(item),
          ...(d.kind === 'take'
            ? { ConditionExpression: 'attribute_not_exists(#p)', ExpressionAttributeNames: { '#p': 'prefix' } }
            : {
                // unchanged since judged: the same owner, renewal count (absent on an item of before the count: read as 0) and stamp
                ConditionExpression: `#o = :o AND heartbeatAt = :h AND ${found!.renewals === 0 ? '(attribute_not_exists(renewals) OR renewals = :r)' : 'renewals = :r'}`,
                ExpressionAttributeNames: { '#o': 'owner' },
                ExpressionAttributeValues: { ':o': { S: found!.owner }, ':h': { N: String(found!.heartbeatAt) }, ':r': { N: String(found!.renewals) } },
              }),
        }),
      );
    } catch (e) {
      held.delete(owner);
      if (isConditionFailed(e)) continue; // lost a race: look again, decide again
      throw e;
    }
    if (d.kind === 'takeOver') say(`taking over the lock of ${holderOf(found!)}: ${d.why}`);
    return holding(requests, prefix, owner, clock, sent, say, opts.onLost ?? ((line) => say(line)));
  }
}

/**
 * Whether the DynamoDB Local `client` reaches gives back the item a condition refused a write on
 * (ReturnValuesOnConditionCheckFailure: DynamoDB Local 2.2.0, December 2023, and later). Conclave's
 * stores rely on it: a conflict's item tells a write that landed with its answer lost from another
 * writer's, and a renewal refused by its own earlier stamp from a deposed term. Asked of the lock
 * held for `prefix`: its take sent again, which its condition refuses (the item is there), so
 * nothing is written.
 */
export async function conflictsShowTheItem(client: DynamoDBClient, prefix: string): Promise<boolean> {
  try {
    await client.send(
      new PutItemCommand({
        TableName: RUNTIME_LOCK_TABLE,
        Item: { prefix: { S: prefix } },
        ConditionExpression: 'attribute_not_exists(#p)',
        ExpressionAttributeNames: { '#p': 'prefix' },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
  } catch (e) {
    if (!isConditionFailed(e)) throw e;
    return (e as { Item?: unknown }).Item !== undefined;
  }
  throw new Error(`the runtime lock of table prefix ${prefix} (item "${prefix}" of table ${RUNTIME_LOCK_TABLE}) was not there to ask: it was written now; stop this runtime, and delete that item if no runtime holds it`);
}

/** Why a start is refused: the live holder, where the lock is, and the fix. */
function refusal(endpoint: string, prefix: string, l: RuntimeLockItem): string {
  return (
    `local mode already runs on the DynamoDB Local at ${endpoint} with table prefix ${prefix}: ${holderOf(l)}, started ${iso(l.startedAt)}, its lock renewed ${iso(l.heartbeatAt)} (item "${prefix}" of table ${RUNTIME_LOCK_TABLE} there). ` +
    'A second would handle every stream record and publish every event again: stop that one first (Ctrl-C), or choose another table prefix (conclave-local: --table-prefix; startLocalConclave: tablePrefix); ' +
    `a holder that stops renewing its lock (killed where its pid cannot be looked at: another host or container) gives it up once a start has seen it unrenewed for ${RUNTIME_LOCK_STALE_MS / 1000} s`
  );
}

/**
 * The lock held by token `owner`: renewed every RUNTIME_LOCK_HEARTBEAT_MS on `clock` until released
 * or lost; a failed renewal is tried again at a backoff (RUNTIME_LOCK_RETRY_MS up to the heartbeat),
 * told through `say` at the 1st, 2nd, 4th … failure in a row and when one lands again.
 */
function holding(client: DynamoDBClient, prefix: string, owner: string, clock: Clock, takenAt: number, say: (line: string) => void, onLost: (line: string, loss: RuntimeLockLoss) => void): RuntimeLock {
  let timer: Timer | undefined;
  let over = false;
  /** Aborted by release(): a confirmation's wait between its tries ends. */
  const releasing = new AbortController();
  /** When the last write of the lock that landed (the take, a renewal) was sent: no start takes it over before RUNTIME_LOCK_STALE_MS after. */
  let landedSentAt = takenAt;
  let renewing: Promise<void> = Promise.resolve();
  const Key = { prefix: { S: prefix } };
  const mine = { ConditionExpression: '#o = :o', ExpressionAttributeNames: { '#o': 'owner' } };
  const renewOnce = async () => {
    if (over) return;
    const now = clock.now();
    const sent = clock.monotonic();
    try {
      await client.send(
        new UpdateItemCommand({
          TableName: RUNTIME_LOCK_TABLE,
          Key,
          UpdateExpression: 'SET heartbeatAt = :h, staleAt = :s ADD renewals :one',
          ...mine,
          ExpressionAttributeValues: { ':o': { S: owner }, ':h': { N: String(now) }, ':s': { N: String(now + RUNTIME_LOCK_STALE_MS) }, ':one': { N: '1' } },
        }),
        // release() abandons one under way: the stop does not wait out its bound before deleting the lock
        { abortSignal: releasing.signal },
      );
      landedSentAt = Math.max(landedSentAt, sent);
    } catch (e) {
      // the lock's table gone: DynamoDB Local started again without its data (in memory), or the
      // table deleted by hand; every table of this local mode went with it (a passing fault before:
      // its functions waited for a renewal to land, for ever)
      const tableGone = (e as Error).name === 'ResourceNotFoundException';
      if (!isConditionFailed(e) && !tableGone) throw e;
      if (over) return;
      over = true;
      held.delete(owner);
      // who holds it now, for the message only: the loss is told whether or not this read answers
      let what: string;
      let loss: RuntimeLockLoss;
      if (tableGone) {
        what = `deleted with its table ${RUNTIME_LOCK_TABLE}: the DynamoDB Local there lost its tables (started again without its data?), and this local mode's with it; start local mode again`;
        loss = { kind: 'deleted' };
      } else {
        try {
          const out = await client.send(new GetItemCommand({ TableName: RUNTIME_LOCK_TABLE, Key, ConsistentRead: true }));
          const taker = out.Item && RuntimeLockItem.safeParse(rowOf(out.Item)).data;
          // a start that judged it not renewed writes its own over it; no runtime deletes a lock not its own.
          // Gone while renewals were failing: DynamoDB Local was down, and came back without it (in memory)
          what = taker
            ? `taken over by ${holderOf(taker)} (judged not renewed)`
            : failures > 0
              ? `deleted while its renewals were failing (${failures} in a row): the DynamoDB Local there was probably started again without its data, and this local mode's tables went with it; start local mode again`
              : 'deleted (not by a local runtime, which deletes only its own lock: by hand, or with its table)';
          loss = taker ? { kind: 'takenOver', pid: taker.pid, host: taker.host } : { kind: 'deleted' };
        } catch (read) {
          what = `taken over or deleted (who holds it now could not be read: ${String(read)})`;
          loss = { kind: 'unread', error: read };
        }
      }
      const line = `the lock of local mode on table prefix ${prefix} was ${what}`;
      // a throwing callback must not turn the loss, handled, into a failed renewal (dropped: the lock is over)
      callBack(
        () => onLost(line, loss),
        (thrown) => process.emitWarning(new Error(`lockRuntime: onLost threw while told "${line}": ${thrown instanceof Error ? thrown.message : String(thrown)}`, { cause: thrown })),
      );
    }
  };
  // one at a time; a failed one (its caller told) does not fail the ones after it: each is sent
  const renew = () => {
    const once = renewing.then(renewOnce);
    renewing = once.catch(() => undefined);
    return once;
  };
  const backoff = new Backoff(RUNTIME_LOCK_RETRY_MS, RUNTIME_LOCK_HEARTBEAT_MS);
  let failures = 0;
  const beat = (ms: number) => {
    timer = clock.setTimer(
      ms,
      () =>
        void renew().then(
          () => {
            if (over || releasing.signal.aborted) return; // lost (told) or released
            if (failures > 0) say(`renewed the lock of table prefix ${prefix} again, after ${failures} failed renewal${failures === 1 ? '' : 's'}`);
            failures = 0;
            backoff.succeeded();
            beat(RUNTIME_LOCK_HEARTBEAT_MS);
          },
          // DynamoDB Local not answering for a moment: the lock may still be ours, so this runtime runs on
          // and tries again soon; a renewal refused later (taken over meanwhile) stops it
          (e: unknown) => {
            if (over || releasing.signal.aborted) return; // lost (told), or abandoned by release()
            failures++;
            const { waitMs, tell } = backoff.failed();
            // what its functions do meanwhile: run while the lock is sure, then wait in held() for a renewal to land
            const meanwhile = sure()
              ? `this runtime's functions run on meanwhile, until ${RUNTIME_LOCK_SURE_MS / 1000} s after its last renewal that landed, then wait for one to land`
              : "this runtime's functions wait for a renewal to land before they run";
            if (tell) say(`renewing the lock of table prefix ${prefix} failed (${failures} in a row; tried again in ${waitMs / 1000} s; ${meanwhile}; it stops if another has taken its lock over, once it has gone unrenewed for ${RUNTIME_LOCK_STALE_MS / 1000} s): ${String(e)}`);
            beat(waitMs);
          },
        ),
      { background: true },
    );
  };
  beat(RUNTIME_LOCK_HEARTBEAT_MS);
  const sure = () => clock.monotonic() - landedSentAt < RUNTIME_LOCK_SURE_MS;
  // one confirmation at a time, shared by every function waiting on it
  let confirming: Promise<boolean> | undefined;
  const confirm = async (): Promise<boolean> => {
    const retry = new Backoff(RUNTIME_LOCK_RETRY_MS, RUNTIME_LOCK_HEARTBEAT_MS);
    for (;;) {
      if (over || releasing.signal.aborted) return false;
      if (sure()) return true;
      // a failure is the heartbeat's to tell (it retries too); here it only means: not confirmed yet
      await renew().then(
        () => undefined,
        () => clock.sleep(retry.failed().waitMs, releasing.signal),
      );
    }
  };
  const stillHeld = (signal?: AbortSignal): Promise<boolean> => {
    if (over) return Promise.resolve(false);
    if (sure()) return Promise.resolve(true);
    if (signal?.aborted) return Promise.resolve(false);
    const confirmation = (confirming ??= confirm().finally(() => (confirming = undefined)));
    // this caller gives up at the abort; the confirmation goes on for the others (it never rejects)
    return signal ? Promise.race([confirmation, abortedOf(signal)]) : confirmation;
  };
  return {
    prefix,
    renew,
    held: stillHeld,
    lostWithStore(line) {
      if (over || releasing.signal.aborted) return;
      over = true;
      held.delete(owner);
      timer?.cancel();
      releasing.abort(); // a renewal or confirmation waiting on the gone endpoint ends
      onLost(line, { kind: 'storeExited' });
    },
    async release() {
      timer?.cancel();
      releasing.abort();
      await renewing; // (never rejects: a failure is its caller's)
      if (over) return;
      over = true;
      held.delete(owner);
      try {
        await client.send(new DeleteItemCommand({ TableName: RUNTIME_LOCK_TABLE, Key, ...mine, ExpressionAttributeValues: { ':o': { S: owner } } }));
      } catch (e) {
        if (isConditionFailed(e)) return; // taken over meanwhile: left to its taker
        // unanswered within RUNTIME_LOCK_REQUEST_MS, or DynamoDB Local unreachable: the stop completes
        // (a stop that failed here left nothing to do but stop again, which fails the same way); the
        // item, no longer renewed, is taken over as decideLock judges a holder that is gone
        say(
          `the lock of local mode on table prefix ${prefix} was left in place, not deleted (${String(e)}): ` +
            `a later start takes it over, at once in this process or on this host once this process has exited; ` +
            `elsewhere once it has seen it unrenewed for ${RUNTIME_LOCK_STALE_MS / 1000} s (one on this host while this process still runs is refused until ${RUNTIME_LOCK_STALE_MS / 1000} s after its last renewal)`,
        );
      }
    },
  };
}
