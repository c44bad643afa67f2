import { UpdateItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { IdentityLeaseItem, MAX_ENDED_TERMS, sessionKey, type IdentityLease } from '../schemas/identity.js';
import { EndedTermsFullError, isConditionFailed } from './errors.js';
import { COORDINATOR_COMPONENT } from '../schemas/tick-cursor.js';
import { ItemStore, type Patch, type Read, type ScanOptions, type Scanned } from './item-store.js';

export type IdentityRead = Read<IdentityLease>;
export type IdentityPatch = Patch<IdentityLease>;

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
const RENEWAL_NAMES: Readonly<Record<string, string>> = { '#crev': 'revision', '#labels': 'labels', '#ttl': 'expiresAt', ...Object.fromEntries(OWNED.map((k, i) => [`#o${i}`, k])) };
const renewalCondition = (ttl: string) => ['#crev = :crev', ...OWNED.map((_, i) => `#o${i} = :o${i}`), 'attribute_not_exists(#labels)', ttl].join(' AND ');
const RENEWAL_CONDITION = { noTtl: renewalCondition('attribute_not_exists(#ttl)'), ttl: renewalCondition('#ttl = :ttl') };

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

  /** The row of `component` named `name` (a consistent read unless `consistent` is false), with the revision to write against. */
  read(component: string, name: string, consistent = true): Promise<IdentityRead> {
    return this.get({ component, name }, consistent);
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
   */
  async renewSession(read: IdentityRead, renewTime: number, signal?: AbortSignal, unanswered: readonly number[] = []): Promise<SessionRenewal> {
    const mine = read.item;
    if (!mine) throw new Error(`renewSession: ${this.describe(read.key)} was never written`);
    // (the condition's text and names are the same at every renewal: made once, below)
    const values: Record<string, unknown> = { ':crev': read.revision, ':o0': mine.holderIdentity, ':o1': mine.renewTime, ':o2': mine.leaseDurationSeconds, ':o3': mine.acquireTime, ':o4': mine.hostname };
    if (mine.expiresAt !== undefined) values[':ttl'] = mine.expiresAt;
    const r = await this.updateOrRefusal(read.key, { set: { renewTime } }, { expression: mine.expiresAt === undefined ? RENEWAL_CONDITION.noTtl : RENEWAL_CONDITION.ttl, names: RENEWAL_NAMES, values }, signal);
    if ('written' in r) return { kind: 'renewed', row: r.written };
    const old = r.refusedBy;
    const landed =
      old !== undefined &&
      old['revision'] === read.revision + 1 &&
      unanswered.includes(old['renewTime'] as number) &&
      OWNED.every((k) => k === 'renewTime' || old[k] === mine[k]) &&
      old['labels'] === undefined &&
      old['expiresAt'] === mine.expiresAt;
    if (!landed) return { kind: 'refused' };
    const row = this.tryParse(old);
    return row.ok ? { kind: 'landedUnanswered', row: row.item } : { kind: 'refused' };
  }

  /**
   * Marks on session row `session` that the term of `lease` with fencing token `token` ended (see
   * IdentityLeaseItem.endedTerms): its owner stops leading it at its next renewal. Leaves the row's
   * revision alone (the owner's renewals are conditioned on it). Nothing to do when the row is gone
   * (the session has ended: its terms run out by their own stamps) or already names a later end.
   * A full map is never started afresh: a mark its owner has not read yet would be lost, and its
   * holder lead on beside the next; EndedTermsFullError instead, to be retried. Returns whether the
   * mark was written.
   */
  async markTermEnded(session: string, lease: string, token: number): Promise<boolean> {
    const key = sessionKey(session);
    this.checkSet(key, { endedTerms: { [lease]: token } });
    const send = async (update: string, condition: string, values: Record<string, unknown>): Promise<boolean> => {
      try {
        await this.client.send(
          new UpdateItemCommand({
            TableName: this.table,
            Key: marshall(key),
            UpdateExpression: update,
            ConditionExpression: `attribute_exists(#renew) AND ${condition}`,
            // DynamoDB refuses a name the expressions do not use
            ExpressionAttributeNames: { '#renew': 'renewTime', '#ended': 'endedTerms', ...(update.includes('#lease') ? { '#lease': lease } : {}) },
            ExpressionAttributeValues: marshall(values),
          }),
        );
        return true;
      } catch (e) {
        if (isConditionFailed(e)) return false;
        throw e;
      }
    };
    for (let attempt = 0; attempt < 3; attempt++) {
      const row = (await this.read(key.component, key.name)).item;
      if (!row) return false;
      const marks = row.endedTerms;
      if ((marks?.[lease] ?? -1) >= token) return false;
      if (marks && Object.keys(marks).length >= MAX_ENDED_TERMS && !(lease in marks)) throw new EndedTermsFullError(session, lease);
      const wrote = !marks
        ? await send('SET #ended = :map', 'attribute_not_exists(#ended)', { ':map': { [lease]: token } })
        : await send('SET #ended.#lease = :token', 'attribute_exists(#ended) AND (attribute_not_exists(#ended.#lease) OR #ended.#lease < :token) AND size(#ended) < :max', { ':token': token, ':max': MAX_ENDED_TERMS + (lease in marks ? 1 : 0) });
      if (wrote) return true;
    }
    return false; // three lost races: a later end was marked meanwhile, or the row is gone
  }

  /** A row already in hand (from a listing) as a read to write against. */
  static readOf(i: IdentityLease): IdentityRead {
    return { key: { component: i.component, name: i.name }, item: i, revision: i.revision };
  }
}
