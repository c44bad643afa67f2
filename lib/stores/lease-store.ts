import { UpdateItemCommand, paginateQuery, paginateScan, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { LeaseItem, MAX_LEASE_ROW_BYTES, type Election, type Lease } from '../schemas/lease.js';
import { nextFencingToken } from '../schemas/fencing-token.js';
import { HOLDER_FIELDS, type HolderLoss, type Platform } from '../schemas/platform.js';
import { HOLDER_PLATFORM_INDEX } from '../tables.js';
import { isConditionFailed } from './errors.js';
import { ItemStore, type Patch, type Read, rowOf } from './item-store.js';

export type LeaseRead = Read<Lease>;

/** The fields of a lease row that say which session holds it (scanSessions). */
const HELD = LeaseItem.pick({ name: true, holderIdentity: true, session: true }).extend({
  leaseDurationSeconds: LeaseItem.shape.leaseDurationSeconds.optional().catch(undefined),
  holderInstance: LeaseItem.shape.holderInstance.catch(undefined),
});

/**
 * A lease's fields that say which session its term is held on, whose process holds it
 * (`holderInstance`), and for how long a term lasts (undefined: it does not read).
 */
export type HeldSession = Pick<Lease, 'name' | 'holderIdentity' | 'session'> & { leaseDurationSeconds?: number | undefined; holderInstance?: string | undefined };

/** The successor a holder hands its term to: its name, its process (candidate `identity`) and, when its candidate row says, its platform and address. */
export interface Heir {
  name: string;
  instance: string;
  platform?: Platform | undefined;
  /** Where clients reach it (its candidate row's `address`): the lease's holderAddress in its term. */
  address?: string | undefined;
}

/** A second successor as a worker read it: either field may be absent. */
export interface SecondSuccessor {
  readonly name?: string | undefined;
  readonly instance?: string | undefined;
}

/** The successor fields a take or a hand-over writes. */
type SuccessorField = 'successor' | 'successorInstance' | 'secondSuccessor' | 'secondSuccessorInstance';

/**
 * The successor names once `taker` takes the term from `holder` (or is handed it), `successor`
 * and `second` as read. When the taker was the successor, the second successor moves up: the
 * coordinator's next choice is named at once, so the new term's loss finds a successor ready
 * without waiting for the coordinator's next pass. Otherwise (the second took: the successor failed
 * to), or when the second is the holder going away, nobody is named until the coordinator names
 * again. The second's fields are removed only where read: a worker whose grant predates them
 * (infra/access.ts) may not name them.
 */
export function successionAfterTake(successor: string | undefined, second: SecondSuccessor, taker: string, holder: string | undefined): { set: Partial<Pick<Lease, 'successor' | 'successorInstance'>>; remove: SuccessorField[] } {
  const up = successor === taker && second.name !== undefined && second.name !== taker && second.name !== holder ? { name: second.name, instance: second.instance } : undefined;
  const secondNamed = second.name !== undefined || second.instance !== undefined;
  return {
    set: up ? { successor: up.name, ...(up.instance !== undefined ? { successorInstance: up.instance } : {}) } : {},
    remove: [...(up ? [] : (['successor'] as const)), ...(up?.instance !== undefined ? [] : (['successorInstance'] as const)), ...(secondNamed ? (['secondSuccessor', 'secondSuccessorInstance'] as const) : [])],
  };
}

/**
 * The write of a stopping worker the lease names as successor (`role`) or second successor: its
 * name taken off, so no hand-over waits for a worker that is gone (a hand-over is conditioned on the
 * heir it names). As successor, the second successor moves up, as on a take (successionAfterTake).
 */
export function declinePatch(lease: Lease, role: 'successor' | 'second'): LeasePatch {
  if (role === 'second') return { remove: ['secondSuccessor', 'secondSuccessorInstance'] };
  const next = successionAfterTake(lease.successor, { name: lease.secondSuccessor, instance: lease.secondSuccessorInstance }, lease.successor!, lease.holderIdentity);
  return { set: next.set, remove: next.remove };
}

/**
 * A hand-over's write: a new term for `heir` (the fencing token raised, `firstTermSeconds` long;
 * its platform and address those of its candidate row, the giver's never outliving its term), the
 * second successor `second` (as the giver read it) moved up, no election, preference or report.
 */
export function handOverPatch(term: Term, heir: Heir, now: number, firstTermSeconds: number, leaseTransitions: number, second: SecondSuccessor): LeasePatch & { set: Partial<Lease> } {
  const token = nextFencingToken(term.fencingToken, now);
  const next = successionAfterTake(heir.name, second, heir.name, term.holderIdentity);
  return {
    set: {
      holderIdentity: heir.name,
      holderInstance: heir.instance,
      acquireTime: now,
      renewTime: now,
      leaseDurationSeconds: firstTermSeconds,
      leaseTransitions: leaseTransitions + 1,
      fencingToken: token,
      termToken: token,
      electedBy: 'successor',
      lastHolderIdentity: term.holderIdentity,
      ...(heir.platform ? { holderPlatform: heir.platform, holderPlatformId: heir.platform.id } : {}),
      ...(heir.address ? { holderAddress: heir.address } : {}),
      ...next.set,
    },
    remove: [...next.remove, 'preferredHolder', 'election', 'vacancyReport', 'session', ...(heir.platform ? [] : HOLDER_FIELDS.filter((f) => f.startsWith('holderPlatform'))), ...(heir.address ? [] : (['holderAddress'] as const))],
  };
}

/** How many writes a hand-over sends at most: each refused by the second successor alone, which moved on since it was read (LeaseStore.handOver). */
export const HAND_OVER_TRIES = 3;

/** The condition that the row still names `second` as second successor (undefined: the giver read none, and names none of its fields). */
function secondCondition(second: SecondSuccessor): { expression: string; names: Record<string, string>; values: Record<string, string> } | undefined {
  if (second.name === undefined && second.instance === undefined) return undefined;
  const names = { '#second': 'secondSuccessor', '#secondInstance': 'secondSuccessorInstance' };
  const is = (attr: string, v: string | undefined, key: string) => (v === undefined ? `attribute_not_exists(${attr})` : `${attr} = ${key}`);
  return {
    expression: `${is('#second', second.name, ':second')} AND ${is('#secondInstance', second.instance, ':secondInstance')}`,
    names,
    values: { ...(second.name === undefined ? {} : { ':second': second.name }), ...(second.instance === undefined ? {} : { ':secondInstance': second.instance }) },
  };
}

/** `patch` with the row's copy of the term's token kept as LeaseStore.write keeps it (there). */
export function keepTermToken<P extends LeasePatch>(row: Lease | undefined, patch: P): P {
  const set: LeasePatch['set'] = { ...patch.set };
  const removed = new Set<string>(patch.remove ?? []);
  const holder = removed.has('holderIdentity') ? undefined : (set.holderIdentity ?? row?.holderIdentity);
  const token = set.fencingToken ?? row?.fencingToken;
  if (holder !== undefined && token !== undefined) {
    if (row?.termToken === undefined || set.holderIdentity !== undefined || set.fencingToken !== undefined) set.termToken = token;
  } else if (row?.termToken !== undefined) removed.add('termToken');
  // the rest of the patch (its keys set within a map) as given
  return { ...patch, set, remove: [...removed] as LeasePatch['remove'] };
}

/** A holder's term: its identity and the fencing token of its acquisition. */
export interface Term {
  /** The holder: the lease's holderIdentity during the term. */
  holderIdentity: string;
  /** The term's fencing token: raised by every acquisition. */
  fencingToken: number;
}

/** The DynamoDB condition that the lease is still in `term` (also used by fenced writes). */
export function termCondition(term: Term) {
  return {
    expression: '#holder = :holder AND #token = :token',
    names: { '#holder': 'holderIdentity', '#token': 'fencingToken' },
    values: { ':holder': term.holderIdentity, ':token': term.fencingToken },
  };
}
export type LeasePatch = Patch<Lease>;

/**
 * A renewal flips `renewalMark` (absent → 1 → 2 → 1), which no other write names: the lease
 * stream's filter drops the records where it flipped (lib/wiring.ts). The mark is computed by
 * DynamoDB (3 − mark), so a renewal needs no read.
 */
const FLIP_MARK = '#mark = :three - if_not_exists(#mark, :two)';

/** What a term's renewal is conditioned on: the copy of its fencing token (see LeaseItem `termToken`). */
const TERM_FIELDS = ['termToken'] as const;

/** Leases, key `name`. */
export class LeaseStore extends ItemStore<typeof LeaseItem> {
  constructor(
    client: DynamoDBClient,
    table: string,
    /** Every read strongly consistent, whatever a caller asks (multi-Region strongly consistent tables). */
    private readonly strongReadsOnly = false,
  ) {
    super({ client, table, keys: ['name'], schema: LeaseItem, kind: 'lease', maxRowBytes: MAX_LEASE_ROW_BYTES });
  }

  /**
   * Which session each held lease names, for the whole table, a page at a time: a consistent scan
   * that returns only `name`, `holderIdentity`, `session` and `leaseDurationSeconds` (the read units
   * are the whole rows'; the parsing is of four fields; a duration that does not parse is left
   * undefined). A row whose other fields do not parse is left out: it holds nothing the coordinator
   * can judge (the tick reports it as broken).
   */
  async *scanSessions(): AsyncGenerator<HeldSession[]> {
    const pages = paginateScan(
      { client: this.client },
      { TableName: this.table, ConsistentRead: true, ProjectionExpression: '#n, #h, #s, #d, #i', ExpressionAttributeNames: { '#n': 'name', '#h': 'holderIdentity', '#s': 'session', '#d': 'leaseDurationSeconds', '#i': 'holderInstance' } },
    );
    for await (const r of pages) {
      const page: HeldSession[] = [];
      for (const row of r.Items ?? []) {
        const p = HELD.safeParse(rowOf(row));
        if (p.success) page.push(p.data);
      }
      yield page;
    }
  }

  /**
   * Reads the lease: strongly consistent unless `consistent` is false (a follower's poll: every write
   * it leads to is conditioned on what it read) and the store was not made for strong reads only.
   * `signal` abandons it.
   */
  read(name: string, consistent = true, signal?: AbortSignal): Promise<LeaseRead> {
    return this.get({ name }, consistent || this.strongReadsOnly, signal);
  }

  /**
   * Keeps `termToken` the copy of the term's fencing token: set with a new term (or on a held row
   * that has none, an older SDK's), removed when the lease is not held. A held row whose fencing
   * token no longer matches its copy had the token moved under its term by another writer: the copy
   * is left as it is, the evidence its holder and followers end that term by (termToConfirm), so
   * that it is elected anew with a token above both. (Adopting the moved token made it the term's:
   * a token moved back below a term begun before, then led by the heir: simulator seed 6303933.)
   * Touches nothing else of a renewal's: no write but a renewal flips the mark.
   */
  override write(read: LeaseRead, patch: LeasePatch): Promise<Lease> {
    return super.write(read, keepTermToken(read.item, patch));
  }

  /**
   * A write conditioned on a read also requires the fencing token read: an operator's delete starts
   * the row's revisions anew, so a write in flight from a read of the deleted row could otherwise
   * land on the row written since at the same revision (the model check's trace: a successor's take
   * of a deleted term landing on the election held for that term, while its holder still led). A
   * term on a row written again carries a token above every earlier one (nextFencingToken).
   */
  protected override incarnation(l: Lease): { readonly attribute: string; readonly value: unknown } {
    return { attribute: 'fencingToken', value: l.fencingToken };
  }

  /**
   * The holder renews its term: conditioned on the term's token (`termToken`), not on a read, so a
   * coordinator's concurrent write (an election note, a preferredHolder) never fails a renewal. A
   * renewal withdraws any vacancy report and flips the renewal mark. It names no holder attribute,
   * which is what lets IAM keep a write that flips the mark from changing the holder
   * (infra/access.ts). One that puts the term on a session or takes it off (`session`) names no
   * mark either: the lease stream sees it. Undefined when the term is no longer the holder's.
   *
   * It always moves `renewTime` forward: a renewal that lands late (held in the network for longer
   * than the holder's next renewal took) would otherwise set the stamp seconds into the past, and the
   * coordinator, judging expiry by the stamp, would end a live term; and a renewal at the row's own
   * stamp would look like none (a hand-over's confirmation stamped, by the heir's measure of
   * DynamoDB's time, at the giver's `acquireTime` to the millisecond). When the condition fails in the
   * holder's own term because the row's stamp is not earlier (a renewal whose answer was lost landed,
   * or the stamp clock's estimate is behind the row's stamp within its error), the renewal is sent
   * once more a millisecond after that stamp; that send refused by its own stamp landed (the AWS
   * SDK's second send of it was refused by it) and is the answer. `signal` abandons it unanswered
   * (the holder's bound).
   */
  async renewTerm(name: string, term: Term, renewTime: number, leaseDurationSeconds: number, session?: string | null, signal?: AbortSignal): Promise<Lease | undefined> {
    this.checkSet({ name }, { renewTime, leaseDurationSeconds, termToken: term.fencingToken, ...(session ? { session } : {}) });
    // `session`: a name puts the term on that session (the holder renews the session from now on);
    // null takes it off (the holder renews the lease itself); undefined leaves it as it is. A write
    // that names it does not flip the mark: the lease stream sees every change of `session` (IAM
    // keeps it out of the renewal's statement), so a term moved off a session is marked ended there.
    const sessionSet = session ? ', #session = :session' : '';
    const sessionRemove = session === null ? ', #session' : '';
    const flip = session === undefined ? `, ${FLIP_MARK}` : '';
    for (let stamp = renewTime, attempt = 1; ; attempt++) {
      try {
        const r = await this.client.send(
          new UpdateItemCommand({
            TableName: this.table,
            Key: marshall({ name }),
            UpdateExpression: `SET #renew = :renew, #duration = :duration${flip}${sessionSet} REMOVE #report${sessionRemove} ADD #rev :one`,
            ConditionExpression: '#term = :token AND #renew < :renew',
            ExpressionAttributeNames: {
              '#renew': 'renewTime', '#duration': 'leaseDurationSeconds', '#report': 'vacancyReport', '#rev': 'revision', '#term': 'termToken',
              ...(session !== undefined ? { '#session': 'session' } : { '#mark': 'renewalMark' }),
            },
            ExpressionAttributeValues: marshall({ ':renew': stamp, ':duration': leaseDurationSeconds, ':one': 1, ':token': term.fencingToken, ...(session === undefined ? { ':two': 2, ':three': 3 } : {}), ...(session ? { ':session': session } : {}) }),
            ReturnValues: 'ALL_NEW',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
          { abortSignal: signal },
        );
        return this.parseRow(r.Attributes ?? {});
      } catch (e) {
        if (!isConditionFailed(e)) throw e;
        // refused because this term's row is stamped no earlier (the holder's own earlier renewal,
        // answered late, or the giver's hand-over): once more just after that stamp
        const old = (e as { Item?: Record<string, AttributeValue> }).Item;
        const row = old ? rowOf(old) : undefined;
        // the second send, refused by its own stamp in this term: it landed, its answer lost (the AWS
        // SDK sent it again, and the copy was refused by it). That stamp, one above the row's when
        // the first send was refused, was written after that refusal, so after this renewal was sent:
        // it counts as this renewal. (Not so for the first send: a row may carry its very stamp from
        // before, a hand-over's, and that renewal must land to be seen.)
        if (attempt > 1 && old && row?.['termToken'] === term.fencingToken && row['renewTime'] === stamp) return this.parseRow(old);
        const later = row?.['termToken'] === term.fencingToken && typeof row['renewTime'] === 'number' && row['renewTime'] >= stamp ? (row['renewTime'] as number) + 1 : undefined;
        if (later === undefined || attempt > 1) return undefined;
        stamp = later;
      }
    }
  }

  /**
   * The holder hands its term to the successor the coordinator designated, in one write: a new term
   * for the heir (the fencing token raised, `firstTermSeconds` long: the heir confirms it by
   * renewing, as an electee does; its platform and address those of its candidate row; the second
   * successor moved up: handOverPatch), conditioned on the holder's term and on the lease still
   * naming that heir, instance included. Undefined when either no longer holds (then the caller
   * releases).
   *
   * The second successor moved up is the one the row names as the write lands, not only as the giver
   * read it (`second`): one that declined since (stopping: step.ts leave), or that the
   * coordinator replaced, is not named again. A giver that read a second successor conditions the
   * write on it too, and refused by that alone, writes again moving up the row's own (at most
   * HAND_OVER_TRIES writes); one that read none names none of its fields, as before (a worker grant
   * from before them may not name them), and leaves any named since to the coordinator.
   */
  async handOver(name: string, term: Term, heir: Heir, now: number, firstTermSeconds: number, leaseTransitions: number, second: SecondSuccessor = {}): Promise<Lease | undefined> {
    const t = termCondition(term);
    for (let attempt = 1, up = second; ; attempt++) {
      const patch = handOverPatch(term, heir, now, firstTermSeconds, leaseTransitions, up);
      const s = secondCondition(up);
      const r = await this.updateOrRefusal({ name }, patch, {
        expression: `${t.expression} AND #heir = :heir AND #heirInstance = :heirInstance${s ? ` AND ${s.expression}` : ''}`,
        names: { ...t.names, '#heir': 'successor', '#heirInstance': 'successorInstance', ...s?.names },
        values: { ...t.values, ':heir': heir.name, ':heirInstance': heir.instance, ...s?.values },
      });
      if ('written' in r) return r.written;
      // refused by its own hand-over, landed with its answer lost (the AWS SDK sent it again): the heir's
      // term this very write made (its token, raised from this term's at this stamp, and its stamp)
      const row = r.refusedBy;
      const own = row !== undefined && (['holderIdentity', 'holderInstance', 'fencingToken', 'termToken', 'renewTime', 'electedBy', 'lastHolderIdentity'] as const).every((k) => row[k] === patch.set[k]);
      if (own) return this.parseItem(row);
      // still this term, this heir named: refused by the second successor alone, moved on since it was read
      const still = row !== undefined && row['holderIdentity'] === term.holderIdentity && row['fencingToken'] === term.fencingToken && row['successor'] === heir.name && row['successorInstance'] === heir.instance;
      if (!still || !s || attempt >= HAND_OVER_TRIES) return undefined;
      up = { name: row['secondSuccessor'] as string | undefined, instance: row['secondSuccessorInstance'] as string | undefined };
    }
  }

  /**
   * Ends a term whose row was rewritten under its holder (its holder or fencing token changed, its
   * token copy `termToken` still the holder's): conditioned on that copy alone, so the next election
   * starts at once. Undefined when the row is in another term by now.
   */
  endChangedTerm(name: string, termToken: number, lastHolder: string, now: number): Promise<Lease | undefined> {
    return this.updateIf(
      { name },
      { set: { renewTime: now, lastHolderIdentity: lastHolder }, remove: [...HOLDER_FIELDS, ...TERM_FIELDS, 'preferredHolder', 'vacancyReport'] },
      { expression: '#term = :token', names: { '#term': 'termToken' }, values: { ':token': termToken } },
    );
  }

  /**
   * The lease stream has seen the row: removes its election's `awaitsStream` alone (and raises the
   * revision), if that election is still the one open: its id and its start, since every row the
   * coordinator creates opens `<name>#1` (a record of an earlier copy of the row, redelivered, must
   * not close the election of the copy after a second delete). Nothing else of the row is written:
   * the record that showed the flag may be older than the row (an election held meanwhile).
   */
  async clearAwaitsStream(name: string, election: Pick<Election, 'id' | 'startedAt'>): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key: marshall({ name }),
          UpdateExpression: 'REMOVE #e.#waits ADD #rev :one',
          ConditionExpression: '#e.#id = :id AND #e.#started = :started AND attribute_exists(#e.#waits)',
          ExpressionAttributeNames: { '#e': 'election', '#id': 'id', '#started': 'startedAt', '#waits': 'awaitsStream', '#rev': 'revision' },
          ExpressionAttributeValues: marshall({ ':id': election.id, ':started': election.startedAt, ':one': 1 }),
        }),
      );
      return true;
    } catch (e) {
      if (isConditionFailed(e)) return false;
      throw e;
    }
  }

  /** The holder gives its term up so the next election starts at once. Undefined when it was not its term any more. */
  releaseTerm(name: string, term: Term, now: number): Promise<Lease | undefined> {
    return this.updateIf({ name }, { set: { renewTime: now, lastHolderIdentity: term.holderIdentity }, remove: [...HOLDER_FIELDS, ...TERM_FIELDS, 'preferredHolder', 'vacancyReport'] }, termCondition(term));
  }

  /**
   * The names of the leases whose holder runs on `platformId` (an ECS task ARN or an EC2 instance
   * id): one query on the sparse holder-platform index, whatever the number of leases. The index is
   * eventually consistent: read each lease before acting on it.
   */
  async heldOnPlatform(platformId: string): Promise<string[]> {
    const names: string[] = [];
    const pages = paginateQuery(
      { client: this.client },
      {
        TableName: this.table,
        IndexName: HOLDER_PLATFORM_INDEX.name,
        KeyConditionExpression: '#p = :p',
        ExpressionAttributeNames: { '#p': HOLDER_PLATFORM_INDEX.partitionKey },
        ExpressionAttributeValues: { ':p': { S: platformId } },
      },
    );
    for await (const r of pages) for (const item of r.Items ?? []) if (item['name']?.S) names.push(item['name'].S);
    return names;
  }

  /**
   * Ends the term of a holder whose task or instance the platform reported stopped: only if the
   * lease is still at the revision read *and* still held by that holder, in that term, on that
   * platform — a lease that has moved on is never touched. Undefined when the condition failed.
   */
  vacateLostHolder(read: LeaseRead, loss: HolderLoss): Promise<Lease | undefined> {
    return this.updateIf(
      { name: read.key['name']! },
      { set: { renewTime: loss.at, lastHolderIdentity: loss.holder, holderLoss: loss }, remove: [...HOLDER_FIELDS, ...TERM_FIELDS, 'preferredHolder', 'vacancyReport'] },
      {
        expression: '#rev = :rev AND #holder = :holder AND #token = :token AND #pid = :pid',
        names: { '#rev': 'revision', '#holder': 'holderIdentity', '#token': 'fencingToken', '#pid': 'holderPlatformId' },
        values: { ':rev': read.revision, ':holder': loss.holder, ':token': loss.fencingToken, ':pid': loss.platformId },
      },
    );
  }

  /** The read to write against when the lease is known to be absent, or known from a bulk read. */
  static readOf(name: string, lease: Lease | undefined): LeaseRead {
    return { key: { name }, item: lease, revision: lease?.revision ?? 0 };
  }
}
