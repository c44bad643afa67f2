/**
 * What each lease's name was last set to, a row per lease in the discovery table
 * (DISCOVERY_TABLE): the state the name must show (a term's holder and address, or a term's end),
 * whether it was seen through, and who may be writing the name now. Every write is a conditional
 * UpdateItem; the conditions are what order the name by fencing token (lib/discovery/apply.ts).
 */
import { ScanCommand, TransactWriteItemsCommand, UpdateItemCommand, type AttributeValue, type DynamoDBClient, type UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import * as z from 'zod';
import { HolderName, Millis, Name, Revision } from '../schemas/common.js';
import { FencingToken } from '../schemas/fencing-token.js';
import { Address } from '../schemas/lease.js';
import { parse } from '../schemas/validation.js';
import { isConditionFailed } from '../stores/errors.js';
import type { LeaderChange } from './change.js';
import { rowOf } from '../stores/item-store.js';

/**
 * A writer of the name: `<until>/<id>`, `until` the epoch ms by which its invocation, and any call
 * it sent to the naming service, are over (lib/discovery/apply.ts writerEntry).
 */
export const WriterEntry = z.string().regex(/^\d+\/\S+$/, 'must be <until epoch ms>/<id>');

/** A row of the discovery table. */
export const DiscoveryRow = z.object({
  lease: Name,
  /** The token of the term the state is about. */
  fencingToken: FencingToken,
  /** The term ended (the name must show nothing), or it began (the name shows its holder). */
  ended: z.boolean(),
  holder: HolderName.optional(),
  /** The holder's address as advertised; absent when it advertised none (the name then shows nothing). */
  address: Address.optional(),
  /**
   * The name was set to this state by a writer that then found the state unchanged. False from the
   * claim of the state until then.
   */
  applied: z.boolean(),
  /**
   * The writers that may have a call in flight to the naming service: each adds itself before its
   * first call and removes itself once it has found the name's state unchanged after its last one;
   * a writer whose invocation died stays until its `until` has passed. Absent: none.
   */
  writers: z.set(WriterEntry).optional(),
  /** The event that set the state (its id: a redelivery has the same). */
  eventId: z.string().min(1),
  /** When the state was claimed (the writer's clock, epoch ms): informational. */
  changedAt: Millis,
  revision: Revision,
});
export type DiscoveryRow = z.infer<typeof DiscoveryRow>;

/** The state of a row: what the name must show. */
export const stateOf = (r: Pick<DiscoveryRow, 'fencingToken' | 'ended'>): string => `${r.ended ? 'end' : 'term'} ${r.fencingToken}`;

/**
 * The key of the one row that is no lease's: where the next sweep starts (lib/discovery/sweep.ts),
 * in its `sweepFrom`. No lease name starts with `#` (Name).
 */
export const SWEEP_CURSOR_KEY = '#sweep';

/**
 * How the key of a name's row starts: a name several leases' writes can land on (LeaderNaming
 * sharedName: a Route 53 record, whose name ignores case), held by one lease at a time (holdName),
 * in its `heldBy`. No lease's: no lease name starts with `#`.
 */
export const NAME_KEY_PREFIX = '#name:';

/** Whether `lease` holds the name (holdName): it did, or took it over `from` another lease; or the lease that does. */
export type NameHold = { readonly held: true; readonly from?: string } | { readonly held: false; readonly heldBy: string };

export type Claim = { readonly won: true; readonly row: DiscoveryRow } | { readonly won: false; readonly row: DiscoveryRow };
export type Settle = { readonly settled: true } | { readonly settled: false; readonly row: DiscoveryRow };

export class DiscoveryStateStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly table: string,
  ) {}

  /**
   * Makes `change` the lease's state if it is newer than the state there (none; a lower token; the
   * same token's end after its beginning), adding `writer` as a writer of the name, unapplied. A
   * state as new or newer wins nothing: `{ won: false }` with the row as it is.
   */
  async claim(change: LeaderChange, writer: string, now: number): Promise<Claim> {
    const began = change.kind === 'began';
    const set = ['fencingToken = :t', 'ended = :ended', 'applied = :false', 'eventId = :event', 'changedAt = :now', 'revision = if_not_exists(revision, :zero) + :one'];
    const remove: string[] = [];
    const values: Record<string, unknown> = { ':t': change.fencingToken, ':ended': !began, ':false': false, ':event': change.eventId, ':now': now, ':zero': 0, ':one': 1, ':w': new Set([writer]) };
    for (const [attr, value] of [['holder', began ? change.holder : undefined], ['address', began ? change.address : undefined]] as const) {
      if (value === undefined) remove.push(attr);
      else {
        set.push(`${attr} = :${attr}`);
        values[`:${attr}`] = value;
      }
    }
    // newer: no state yet, an older term, or this term's end after its beginning
    const newer = began ? 'attribute_not_exists(lease) OR fencingToken < :t' : 'attribute_not_exists(lease) OR fencingToken < :t OR (fencingToken = :t AND ended = :false)';
    const update = `SET ${set.join(', ')}${remove.length ? ` REMOVE ${remove.join(', ')}` : ''} ADD writers :w`;
    const out = await this.update(change.lease, { UpdateExpression: update, ConditionExpression: newer, ExpressionAttributeValues: marshall(values) });
    if (out.ok) return { won: true, row: out.row };
    if (!out.row) throw new Error(`discovery row of lease "${change.lease}": a claim's condition failed on no row`); // attribute_not_exists passes on none
    return { won: false, row: out.row };
  }

  /** Adds `writer` as a writer of the lease's name, whatever its state; the row as it is then. */
  async join(lease: string, writer: string): Promise<DiscoveryRow> {
    const out = await this.update(lease, {
      UpdateExpression: 'SET revision = revision + :one ADD writers :w',
      ConditionExpression: 'attribute_exists(lease)',
      ExpressionAttributeValues: marshall({ ':one': 1, ':w': new Set([writer]) }),
    });
    if (!out.ok) throw new Error(`discovery row of lease "${lease}" was deleted while it was being joined`);
    return out.row;
  }

  /**
   * `lease` holds `name` (a shared name: NAME_KEY_PREFIX), and may write it: it held it, nobody did,
   * or `given` (the deployment named it: leaseNames, which names no two leases that share a name).
   * Else the lease that holds it is over there, and the name is taken over from it, only if that
   * lease's row shows a term's end seen through, nobody writing, and claimed before `idleBefore`
   * (epoch ms), or no row at all (one transaction, so no write of that lease's can start meanwhile:
   * each writer joins its lease's writers before it holds the name). Otherwise not held, and the
   * holder named. Call it only as one of the lease's writers: the name then cannot pass on until
   * this writer has left them.
   */
  async holdName(name: string, lease: string, o: { readonly given: boolean; readonly idleBefore: number }): Promise<NameHold> {
    const Key = { lease: { S: `${NAME_KEY_PREFIX}${name}` } };
    let heldBy: string | undefined;
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.table,
          Key,
          UpdateExpression: 'SET heldBy = :me',
          ...(o.given ? {} : { ConditionExpression: 'attribute_not_exists(heldBy) OR heldBy = :me' }),
          ExpressionAttributeValues: { ':me': { S: lease } },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { held: true };
    } catch (e) {
      if (!isConditionFailed(e)) throw e;
      heldBy = (e as { Item?: Record<string, AttributeValue> }).Item?.['heldBy']?.S;
      if (heldBy === undefined) throw new Error(`the row of name ${name}: a hold's condition failed on no holder`);
    }
    try {
      await this.client.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            { Update: { TableName: this.table, Key, UpdateExpression: 'SET heldBy = :me', ConditionExpression: 'heldBy = :other', ExpressionAttributeValues: { ':me': { S: lease }, ':other': { S: heldBy } } } },
            {
              ConditionCheck: {
                TableName: this.table,
                Key: { lease: { S: heldBy } },
                ConditionExpression: 'attribute_not_exists(lease) OR (ended = :true AND applied = :true AND attribute_not_exists(writers) AND changedAt < :idle)',
                ExpressionAttributeValues: { ':true': { BOOL: true }, ':idle': { N: String(o.idleBefore) } },
              },
            },
          ],
        }),
      );
      return { held: true, from: heldBy };
    } catch (e) {
      // a transaction cancelled for another reason (a conflict with a write at the same moment) throws: the retry holds it or not
      if (isConditionFailed(e)) return { held: false, heldBy };
      throw e;
    }
  }

  /** Removes `gone` from the lease's writers (this writer, and writers whose time is up), its state left unapplied: a writer that may not write the name (holdName). */
  async leave(lease: string, gone: readonly string[]): Promise<void> {
    await this.update(lease, {
      UpdateExpression: 'SET revision = revision + :one DELETE writers :gone',
      ConditionExpression: 'attribute_exists(lease)',
      ExpressionAttributeValues: marshall({ ':one': 1, ':gone': new Set(gone) }),
    });
  }

  /**
   * If the lease's state is still `row`'s, marks it applied and removes `gone` from its writers
   * (this writer, and writers whose time is up): `{ settled: true }`. Else the row as it is now.
   */
  async settle(row: DiscoveryRow, gone: readonly string[]): Promise<Settle> {
    const out = await this.update(row.lease, {
      UpdateExpression: 'SET applied = :true, revision = revision + :one DELETE writers :gone',
      ConditionExpression: 'fencingToken = :t AND ended = :ended',
      ExpressionAttributeValues: marshall({ ':true': true, ':one': 1, ':gone': new Set(gone), ':t': row.fencingToken, ':ended': row.ended }),
    });
    if (out.ok) return { settled: true };
    if (!out.row) throw new Error(`discovery row of lease "${row.lease}" was deleted while its name was being set`);
    return { settled: false, row: out.row };
  }

  /**
   * Every row (one per named lease: a consistent scan, page by page): the rows, the leases of rows
   * the schema refuses (this table has no other writer: such a row is left to the events), and
   * where the sweep starts (saveSweepFrom; `''`, the first lease, when never saved).
   */
  async list(): Promise<{ readonly rows: DiscoveryRow[]; readonly refused: string[]; readonly sweepFrom: string }> {
    const rows: DiscoveryRow[] = [];
    const refused: string[] = [];
    let sweepFrom = '';
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.client.send(new ScanCommand({ TableName: this.table, ConsistentRead: true, ...(start ? { ExclusiveStartKey: start } : {}) }));
      for (const item of page.Items ?? []) {
        const lease = item['lease']?.S ?? '?';
        if (lease === SWEEP_CURSOR_KEY) {
          sweepFrom = item['sweepFrom']?.S ?? '';
          continue;
        }
        if (lease.startsWith(NAME_KEY_PREFIX)) continue; // a name's holder, no lease's row
        const row = DiscoveryRow.safeParse(rowOf(item));
        if (row.success) rows.push(row.data);
        else refused.push(lease);
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return { rows, refused, sweepFrom };
  }

  /** Saves where the next sweep starts (a lease's name; `''`: the first). Two sweeps at once: the last saved wins, a few leases judged twice. */
  async saveSweepFrom(lease: string): Promise<void> {
    await this.client.send(
      new UpdateItemCommand({ TableName: this.table, Key: { lease: { S: SWEEP_CURSOR_KEY } }, UpdateExpression: 'SET sweepFrom = :from', ExpressionAttributeValues: { ':from': { S: lease } } }),
    );
  }

  /**
   * One conditional UpdateItem on the lease's row: the row after it (ALL_NEW), or, when the
   * condition fails, the row as it was (ALL_OLD): one round trip either way.
   */
  private async update(
    lease: string,
    input: Pick<UpdateItemCommandInput, 'UpdateExpression' | 'ConditionExpression' | 'ExpressionAttributeValues'>,
  ): Promise<{ ok: true; row: DiscoveryRow } | { ok: false; row: DiscoveryRow | undefined }> {
    try {
      const out = await this.client.send(new UpdateItemCommand({ TableName: this.table, Key: { lease: { S: lease } }, ReturnValues: 'ALL_NEW', ReturnValuesOnConditionCheckFailure: 'ALL_OLD', ...input }));
      return { ok: true, row: this.rowOf(lease, out.Attributes) };
    } catch (e) {
      if (!isConditionFailed(e)) throw e;
      const item = (e as { Item?: Record<string, AttributeValue> }).Item;
      return { ok: false, row: item ? this.rowOf(lease, item) : undefined };
    }
  }

  private rowOf(lease: string, item: Record<string, AttributeValue> | undefined): DiscoveryRow {
    return parse(DiscoveryRow, item ? rowOf(item) : {}, `discovery row of lease "${lease}"`);
  }
}
