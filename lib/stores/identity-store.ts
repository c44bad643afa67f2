import { GetItemCommand, UpdateItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { IdentityLeaseItem, MAX_ENDED_TERMS, mayBeProcessSession, processSessionComponents, sessionKey, type IdentityLease, type LeftTerm } from '../schemas/identity.js';
import { ConflictError, EndedTermsFullError, isConditionFailed, isReplicatedWriteConflict } from './errors.js';
import { COORDINATOR_COMPONENT } from '../schemas/tick-cursor.js';
import { ItemStore, asScanned, type InvalidItem, type Patch, type Read, type ScanOptions, type Scanned, rowOf } from './item-store.js';

export type IdentityRead = Read<IdentityLease>;
export type IdentityPatch = Patch<IdentityLease>;

/** What a read of one row found (HeartbeatStore.look): the row parsed, to write against, or the row as stored, which the schema refuses. */
export type IdentityLook = { readonly read: IdentityRead } | { readonly refused: { readonly invalid: InvalidItem; readonly row: Record<string, unknown> } };

/**
 * What a take-over of a refused row (HeartbeatStore.replaceRefused) conditions on, writes and
 * removes: every attribute of the table a worker may name bar the key (infra/access.ts
 * WORKER_WRITES; its grant lets it name no other, so the condition cannot either).
 */
const TAKEN_OVER = ['revision', 'holderIdentity', 'hostname', 'leaseDurationSeconds', 'acquireTime', 'renewTime', 'labels', 'expiresAt', 'process', 'leftTerms'] as const;

/** What a session renewal found (IdentityStore.renewSession). */
export type SessionRenewal =
  /** Renewed: the row as it is now. */
  | { readonly kind: 'renewed'; readonly row: IdentityLease }
  /** Refused by the owner's own earlier renewal, which landed unanswered: the row it wrote. */
  | { readonly kind: 'landedUnanswered'; readonly row: IdentityLease }
  /** Refused: the row is not as the owner left it, or is gone. */
  | { readonly kind: 'refused' };

/** What a session renewal requires unchanged (renewSession): the attributes a worker can write. */
const OWNED = ['holderIdentity', 'renewTime', 'leaseDurationSeconds', 'acquireTime', 'hostname'] as const;
const RENEWAL_NAMES: Readonly<Record<string, string>> = { '#crev': 'revision', '#labels': 'labels', '#ttl': 'expiresAt', '#left': 'leftTerms', ...Object.fromEntries(OWNED.map((k, i) => [`#o${i}`, k])) };
// the terms the owner left (leftTerms) as it last wrote them too: a peer's write of them refuses the renewal, as one of its stamp does
const renewalCondition = (ttl: string, left: string) => ['#crev = :crev', ...OWNED.map((_, i) => `#o${i} = :o${i}`), 'attribute_not_exists(#labels)', ttl, left].join(' AND ');
const RENEWAL_CONDITION = {
  noTtl: { noLeft: renewalCondition('attribute_not_exists(#ttl)', 'attribute_not_exists(#left)'), left: renewalCondition('attribute_not_exists(#ttl)', '#left = :left') },
  ttl: { noLeft: renewalCondition('#ttl = :ttl', 'attribute_not_exists(#left)'), left: renewalCondition('#ttl = :ttl', '#left = :left') },
};
const sameLeft = (a: Readonly<Record<string, LeftTerm>> | undefined, b: unknown): boolean => JSON.stringify(a ?? null) === JSON.stringify(canonicalLeft(b as Record<string, LeftTerm> | undefined) ?? null);
/** `leftTerms` in one order of keys (lease names sorted, each entry's fields as LeftTerm has them), to compare as written. */
export function canonicalLeft(m: Readonly<Record<string, LeftTerm>> | undefined): Record<string, LeftTerm> | undefined {
  if (m === undefined) return undefined;
  return Object.fromEntries(Object.keys(m).sort().map((k) => [k, { token: m[k]!.token, instance: m[k]!.instance, stamp: m[k]!.stamp }]));
}

/** Tries of a mark against a row its owner's renewals keep moving. */
const MARK_ATTEMPTS = 5;
/** At most this many marks dropped by one mark's write (its expression stays far below DynamoDB's 4 KB). */
const MARK_PRUNE_AT_ONCE = 32;

/**
 * Whether a mark stamped `stamp` (the row's renewTime when it landed) has done its work: the owner
 * has read it, or its session is over. An owner that has not read a mark renews only until its
 * session's deadline, a renew deadline (shorter than the row's lease duration) after the last
 * renewal answered in time, which went out before the mark landed: every stamp it writes meanwhile
 * is within a lease duration of `stamp`, its clock error aside (`skewMs`). So the row's stamp
 * beyond that shows the owner read it (a renewal answered after the mark carries it); `now` beyond
 * the row's own stamp by as much shows the session over, as observers judge it.
 */
function markDone(row: IdentityLease, stamp: number, judge: { readonly now: number; readonly skewMs: number }): boolean {
  const span = row.leaseDurationSeconds * 1000 + judge.skewMs;
  return row.renewTime > stamp + span || judge.now > row.renewTime + span;
}

/**
 * What a mark of `lease` on `row` drops and stamps: the marks that have done their work, the marks
 * kept but not stamped yet (one not stamped is judged as stamped now, so only a session over drops
 * it), and the stamps left without their mark (a map started afresh by a function of before the
 * refusal, in a rolling deployment): at most MARK_PRUNE_AT_ONCE of each. `full`: the map, or the
 * stamps beside it, would then hold more than MAX_ENDED_TERMS.
 */
function markPlan(row: IdentityLease, lease: string, judge: { readonly now: number; readonly skewMs: number }): { done: string[]; unstamped: string[]; orphans: string[]; full: boolean } {
  const marks = row.endedTerms ?? {};
  const stamps = row.endedTermStamps ?? {};
  const leases = Object.keys(marks);
  const done = leases.filter((l) => l !== lease && markDone(row, stamps[l] ?? row.renewTime, judge)).slice(0, MARK_PRUNE_AT_ONCE);
  const unstamped = leases.filter((l) => l !== lease && stamps[l] === undefined && !done.includes(l)).slice(0, MARK_PRUNE_AT_ONCE);
  const orphans = Object.keys(stamps).filter((l) => l !== lease && !(l in marks)).slice(0, MARK_PRUNE_AT_ONCE);
  const stampsAfter = Object.keys(stamps).length - done.filter((l) => l in stamps).length - orphans.length + unstamped.length + (lease in stamps ? 0 : 1);
  return { done, unstamped, orphans, full: leases.length - done.length + (lease in marks ? 0 : 1) > MAX_ENDED_TERMS || stampsAfter > MAX_ENDED_TERMS };
}

/** Identity leases (KEP-1965), key `component` + `name`: listing one component is a Query. */
export class IdentityStore extends ItemStore<typeof IdentityLeaseItem> {
  constructor(client: DynamoDBClient, table: string) {
    super({ client, table, keys: ['component', 'name'], schema: IdentityLeaseItem, kind: 'identity lease' });
  }

  /**
   * A write or delete conditioned on a read also requires the holder read: a row deleted (collected,
   * an operator's, its holder's own landed delete) and written anew by another start-up starts its
   * revisions at 1 again, so a request in flight from a read of the old row (a stopping heartbeat's
   * delete, sent again by the SDK after its answer was lost) would otherwise land on the newer row.
   * holderIdentity is new at every start-up (a session's: its row's unique name).
   */
  protected override incarnation(i: IdentityLease): { readonly attribute: string; readonly value: unknown } {
    return { attribute: 'holderIdentity', value: i.holderIdentity };
  }

  /** Every identity lease and session row, one parsed page at a time; the coordinator's own row (its tick cursor) is left out, unparsed. */
  override async *scan(opts: ScanOptions = {}): AsyncGenerator<Scanned<IdentityLease>[]> {
    for await (const page of super.scan({ ...opts, skip: (raw) => raw['component'] === COORDINATOR_COMPONENT })) yield page;
  }

  /**
   * Deletes a row the schema refuses (the coordinator's collection of one expired by its stamp), if
   * it still carries the stamp, holder and revision scanned (as stored, whatever their type): a row
   * renewed, rewritten or taken by another start-up since stays. False when it changed or is gone.
   */
  collectInvalid(key: { component: string; name: string }, row: Record<string, unknown>): Promise<boolean> {
    return this.deleteAsScanned(key, row, ['renewTime', 'leaseDurationSeconds', 'holderIdentity', 'revision']);
  }

  /** The row of `component` named `name` as stored, unparsed (a consistent read; undefined: none): a row the schema refuses, as the coordinator times it (lib/coordinator/refused-session.ts). */
  readRow(component: string, name: string): Promise<Record<string, unknown> | undefined> {
    return this.rowAt({ component, name });
  }

  /**
   * Of the row of `component` named `name`, only `fields`, as stored, unparsed (a consistent read
   * projected on them; undefined: no row): the read units are the whole row's, the answer only
   * those fields, whatever the row holds besides (lib/coordinator/vouched.ts readSessions).
   */
  async readFields(component: string, name: string, fields: readonly string[]): Promise<Record<string, unknown> | undefined> {
    const names = Object.fromEntries(fields.map((f) => [`#${f}`, f]));
    const r = await this.client.send(new GetItemCommand({ TableName: this.table, Key: marshall({ component, name }), ConsistentRead: true, ProjectionExpression: Object.keys(names).join(), ExpressionAttributeNames: names }));
    return r.Item && rowOf(r.Item);
  }

  /** The row of `component` named `name` (a consistent read unless `consistent` is false), with the revision to write against; `signal` abandons it. */
  read(component: string, name: string, consistent = true, signal?: AbortSignal): Promise<IdentityRead> {
    return this.get({ component, name }, consistent, signal);
  }

  /**
   * Process `process`'s session rows, for a term it holds on a lease that names session row `named`
   * which does not stand for it (gone, or another process's): one consistent Query of each partition
   * the process keeps its sessions in (processSessionComponents), side by side, kept as it pages only
   * as far as a judge reads it, whatever the partition's size (a worker may write any number of rows
   * in its own sessions' partition, each up to 400 KB). `rows`: of each partition, the process's
   * freshest row (the first of equal stamps) and, where that one's name is another partition's, the
   * freshest whose name is this one's: judgingRow (lib/election/vacancy.ts) picks the freshest of
   * them as the coordinator's tick does (the CLI, getLeader, the lease stream), LeaseLock's
   * freshestOf as a follower does. `refused`: of each partition, the first row the schema refuses
   * that may be the process's own session (mayBeProcessSession): while there is one, nobody judges
   * the term (it may live by that row).
   */
  async processSessions(named: string, process: string): Promise<{ rows: IdentityLease[]; refused: { invalid: InvalidItem; row: Record<string, unknown> }[] }> {
    const read = await Promise.all(
      processSessionComponents(named, process).map(async (component) => {
        let freshest: IdentityLease | undefined;
        let own: IdentityLease | undefined;
        let refused: { invalid: InvalidItem; row: Record<string, unknown> } | undefined;
        for await (const page of this.queryPages(component)) {
          for (const s of page) {
            if (!s.ok) {
              if (refused === undefined && mayBeProcessSession(s.row, named, process)) refused = { invalid: s.invalid, row: s.row };
            } else if (s.item.process === process) {
              if (freshest === undefined || s.item.renewTime > freshest.renewTime) freshest = s.item;
              if (sessionKey(s.item.name).component === component && (own === undefined || s.item.renewTime > own.renewTime)) own = s.item;
            }
          }
        }
        // (a row of the process's whose name is of this partition is among its rows: own set, freshest is too)
        return { rows: freshest === undefined ? [] : own === undefined || own === freshest ? [freshest] : [freshest, own], refused };
      }),
    );
    return { rows: read.flatMap((r) => r.rows), refused: read.flatMap((r) => (r.refused ? [r.refused] : [])) };
  }

  /**
   * Renews a session row its owner wrote and last saw as `read.item`: `renewTime` moves to
   * `renewTime`, and only if every attribute a worker can write is still what the owner left there
   * (revision, holder, stamps, duration, host; no labels, no TTL). A worker's grant lets it name no
   * other attribute, so any write to the row by anyone but its owner — a backdated or bumped stamp,
   * a longer duration, a delete — refuses this renewal, and the owner ends the session.
   *
   * One write of the owner's own refuses it too: an earlier renewal against the same `read` that
   * landed though its answer never came (a timeout, a dropped connection, the SDK's own retry of a
   * request that had landed). DynamoDB says what the row was when it refused (ALL_OLD); when that is
   * exactly what one of those renewals wrote — the next revision, one of the stamps in
   * `unanswered`, every other attribute the owner's — the answer is `landedUnanswered` with that
   * row, to renew against, instead of a refusal. All of them were conditioned on `read`'s revision,
   * so at most one can have landed. `renewed` carries the row as it is now (ALL_NEW), with the
   * `endedTerms` Conclave's functions marked. `signal` abandons it unanswered (the owner's bound).
   * `left`: the terms the owner's stopped electors left to run out (IdentityLeaseItem.leftTerms),
   * written with the stamp (removed when empty); the row's must be as the owner last wrote them.
   * `unansweredLeft`: those sent with the renewals in `unanswered`, any of which may have landed.
   */
  async renewSession(read: IdentityRead, renewTime: number, signal?: AbortSignal, unanswered: readonly number[] = [], left?: Readonly<Record<string, LeftTerm>>, unansweredLeft: readonly (Readonly<Record<string, LeftTerm>> | undefined)[] = []): Promise<SessionRenewal> {
    const mine = read.item;
    if (!mine) throw new Error(`renewSession: ${this.describe(read.key)} was never written`);
    // (the condition's text and names are the same at every renewal: made once, below)
    const values: Record<string, unknown> = { ':crev': read.revision, ':o0': mine.holderIdentity, ':o1': mine.renewTime, ':o2': mine.leaseDurationSeconds, ':o3': mine.acquireTime, ':o4': mine.hostname };
    if (mine.expiresAt !== undefined) values[':ttl'] = mine.expiresAt;
    if (mine.leftTerms !== undefined) values[':left'] = canonicalLeft(mine.leftTerms);
    const leftNow = left !== undefined && Object.keys(left).length > 0 ? canonicalLeft(left) : undefined;
    const patch = leftNow ? { set: { renewTime, leftTerms: leftNow } } : { set: { renewTime }, ...(mine.leftTerms !== undefined ? { remove: ['leftTerms'] } : {}) };
    const byTtl = mine.expiresAt === undefined ? RENEWAL_CONDITION.noTtl : RENEWAL_CONDITION.ttl;
    const r = await this.updateOrRefusal(read.key, patch, { expression: mine.leftTerms === undefined ? byTtl.noLeft : byTtl.left, names: RENEWAL_NAMES, values }, signal);
    if ('written' in r) return { kind: 'renewed', row: r.written };
    const old = r.refusedBy;
    const landed =
      old !== undefined &&
      old['revision'] === read.revision + 1 &&
      unanswered.includes(old['renewTime'] as number) &&
      OWNED.every((k) => k === 'renewTime' || old[k] === mine[k]) &&
      old['labels'] === undefined &&
      old['expiresAt'] === mine.expiresAt &&
      [left, ...unansweredLeft].some((m) => sameLeft(m !== undefined && Object.keys(m).length > 0 ? m : undefined, old['leftTerms']));
    if (!landed) return { kind: 'refused' };
    const row = this.tryParse(old);
    return row.ok ? { kind: 'landedUnanswered', row: row.item } : { kind: 'refused' };
  }

  /**
   * Marks on session row `session` that the term of `lease` with fencing token `token` ended (see
   * IdentityLeaseItem.endedTerms): its owner stops leading it at its next renewal. Leaves the row's
   * revision alone (the owner's renewals are conditioned on it). Nothing to do when the row is gone
   * (the session has ended: its terms run out by their own stamps) or already names a later end.
   *
   * Each mark is stamped with the row's `renewTime` when it lands (`endedTermStamps`; the write is
   * conditioned on the revision read) and dropped, at a later mark, once it has certainly done its
   * work (markDone): the owner's stamps moved a lease duration and `judge.skewMs` past it, or the
   * session is over by `judge.now`. A mark of a row written before stamps (none in
   * `endedTermStamps`) is stamped with the row's stamp when first seen: later than it landed, so
   * kept longer. A full map with nothing to drop refuses the mark: EndedTermsFullError, to be
   * retried. Returns whether the mark was written.
   */
  async markTermEnded(session: string, lease: string, token: number, judge: { readonly now: number; readonly skewMs: number }): Promise<boolean> {
    const key = sessionKey(session);
    this.checkSet(key, { endedTerms: { [lease]: token }, endedTermStamps: { [lease]: 0 } });
    const send = async (update: string, condition: string, names: Record<string, string>, values: Record<string, unknown>): Promise<boolean> => {
      try {
        await this.client.send(
          new UpdateItemCommand({
            TableName: this.table,
            Key: marshall(key),
            UpdateExpression: update,
            ConditionExpression: `attribute_exists(#renew) AND #rev = :rev AND ${condition}`,
            ExpressionAttributeNames: { '#renew': 'renewTime', '#rev': 'revision', '#ended': 'endedTerms', '#stamps': 'endedTermStamps', ...names },
            ExpressionAttributeValues: marshall(values),
          }),
        );
        return true;
      } catch (e) {
        // a lost race, read again: the row moved, or (a multi-Region table) another Region was
        // writing it at that moment, most often another Region's lease stream function marking
        // this same end; not applied either way
        if (isConditionFailed(e) || isReplicatedWriteConflict(e)) return false;
        throw e;
      }
    };
    for (let attempt = 1; attempt <= MARK_ATTEMPTS; attempt++) {
      const row = (await this.read(key.component, key.name)).item;
      if (!row) return false;
      const marks = row.endedTerms;
      if ((marks?.[lease] ?? -1) >= token) return false;
      const at = { ':rev': row.revision };
      if (!marks) {
        if (await send('SET #ended = :map, #stamps = :stamps', 'attribute_not_exists(#ended)', {}, { ...at, ':map': { [lease]: token }, ':stamps': { [lease]: row.renewTime } })) return true;
        continue;
      }
      const leases = Object.keys(marks);
      if (!row.endedTermStamps) {
        // a row marked before stamps: each of its marks stamped now, then marked as any other
        await send('SET #stamps = :stamps', 'attribute_not_exists(#stamps) AND size(#ended) = :size', {}, { ...at, ':size': leases.length, ':stamps': Object.fromEntries(leases.map((l) => [l, row.renewTime])) });
        continue;
      }
      const { done, unstamped, orphans, full } = markPlan(row, lease, judge);
      if (full) throw new EndedTermsFullError(session, lease);
      const names: Record<string, string> = { '#lease': lease };
      const values: Record<string, unknown> = { ...at, ':r': row.renewTime, ':token': token, ':size': leases.length };
      const sets = ['#ended.#lease = :token', '#stamps.#lease = :r'];
      const removes: string[] = [];
      // a dropped mark only as it was read: a later end of its lease, marked meanwhile, stays
      const conditions = ['size(#ended) = :size', '(attribute_not_exists(#ended.#lease) OR #ended.#lease < :token)'];
      done.forEach((l, i) => {
        names[`#d${i}`] = l;
        values[`:d${i}`] = marks[l];
        removes.push(`#ended.#d${i}`, `#stamps.#d${i}`);
        conditions.push(`#ended.#d${i} = :d${i}`);
      });
      // a stamp without its mark only while its lease has none: one marked meanwhile keeps it
      orphans.forEach((l, i) => {
        names[`#o${i}`] = l;
        removes.push(`#stamps.#o${i}`);
        conditions.push(`attribute_not_exists(#ended.#o${i})`);
      });
      unstamped.forEach((l, i) => {
        names[`#u${i}`] = l;
        sets.push(`#stamps.#u${i} = :r`);
      });
      const update = `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`;
      if (await send(update, conditions.join(' AND '), names, values)) return true;
    }
    // the owner's renewals (or other marks) kept moving the row: a fault, to be retried
    throw new ConflictError(this.describe(key), undefined);
  }

  /**
   * Whether session row `session` can take a mark of `lease` now (markTermEnded would not refuse it
   * as full): for a writer that ends the term itself, before it does. True where the row is gone.
   */
  async canMarkTermEnded(session: string, lease: string, judge: { readonly now: number; readonly skewMs: number }): Promise<boolean> {
    const key = sessionKey(session);
    const row = (await this.read(key.component, key.name)).item;
    return !row?.endedTerms || !markPlan(row, lease, judge).full;
  }

  /** A row already in hand (from a listing) as a read to write against. */
  static readOf(i: IdentityLease): IdentityRead {
    return { key: { component: i.component, name: i.name }, item: i, revision: i.revision };
  }
}

/**
 * The identity heartbeat's store (lib/sdk/identity.ts): IdentityStore, and the take-over of a row
 * the schema refuses. A class of its own, so Conclave's functions, which never take a row over, do
 * not carry it (scripts/build-functions.ts BUNDLE_BUDGET_BYTES).
 */
export class HeartbeatStore extends IdentityStore {
  /**
   * read(), but a row the schema refuses comes back as stored beside what is wrong with it
   * (`refused`) instead of as a ValidationError: for a writer that may write it over whole
   * (replaceRefused). A consistent read unless `consistent` is false; `signal` abandons it.
   */
  async look(component: string, name: string, consistent = true, signal?: AbortSignal): Promise<IdentityLook> {
    const key = { component, name };
    const r = await this.client.send(new GetItemCommand({ TableName: this.table, Key: marshall(key), ConsistentRead: consistent }), signal && { abortSignal: signal });
    if (!r.Item) return { read: { key, item: undefined, revision: 0 } };
    const p = this.tryParse(rowOf(r.Item));
    return p.ok ? { read: { key, item: p.item, revision: p.item.revision } } : { refused: { invalid: p.invalid, row: p.row } };
  }

  /**
   * Writes `set` over a row the schema refuses (`row`, as look() returned it), whole: every other
   * attribute a worker may name that the row has is removed, and the revision is the one read plus
   * one (1 when it was no whole number). Only if each of those attributes, holder and revision
   * among them, is still as read (whatever its type; one absent then, absent still): a row another
   * writer changed or deleted since is left as it is, a ConflictError (read it again). Returns the
   * row as written. An attribute no worker may name (a session row's `endedTerms`) is neither
   * conditioned on nor removed: one of those at fault leaves the row refused, a ValidationError.
   */
  async replaceRefused(key: { component: string; name: string }, row: Readonly<Record<string, unknown>>, set: Omit<IdentityLease, 'component' | 'name' | 'revision'>): Promise<IdentityLease> {
    const written: Record<string, unknown> = Object.fromEntries(Object.entries(set).filter(([, v]) => v !== undefined));
    const stray = Object.keys(written).filter((k) => !(TAKEN_OVER as readonly string[]).includes(k));
    if (stray.length > 0) throw new Error(`replaceRefused: ${stray.join(', ')} may not be written by a worker (infra/access.ts WORKER_WRITES)`);
    this.checkSet(key, written);
    const read = row['revision'];
    written['revision'] = typeof read === 'number' && Number.isSafeInteger(read) && read >= 1 ? read + 1 : 1;
    const c = asScanned(row, TAKEN_OVER);
    const values: Record<string, unknown> = { ...c.values };
    const sets: string[] = [];
    const removes: string[] = [];
    TAKEN_OVER.forEach((a, i) => {
      if (a in written) {
        values[`:w${i}`] = written[a];
        sets.push(`#a${i} = :w${i}`);
      } else if (row[a] !== undefined) removes.push(`#a${i}`);
    });
    try {
      const r = await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: marshall(key),
          UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
          ConditionExpression: `attribute_exists(#pk) AND ${c.expression}`,
          ExpressionAttributeNames: { '#pk': 'component', ...c.names },
          ExpressionAttributeValues: marshall(values, { removeUndefinedValues: true }),
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return this.parseRow(r.Attributes ?? {});
    } catch (e) {
      if (!isConditionFailed(e)) throw e;
      const now = (e as { Item?: Record<string, AttributeValue> }).Item;
      throw new ConflictError(this.describe(key), undefined, now ? rowOf(now) : undefined);
    }
  }
}
