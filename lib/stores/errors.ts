import { sessionKey } from '../schemas/session-partition.js';
import { ValidationError } from '../schemas/validation.js';

/**
 * A conditional write lost: the item changed since it was read (or the condition it was guarded by
 * no longer holds). Normal under concurrency: read again, decide again.
 */
export class ConflictError extends Error {
  /** Always `ConflictError`. */
  override readonly name = 'ConflictError';
  constructor(
    /** e.g. `lease "jobs"` */
    readonly subject: string,
    /** The revision the writer had read (0 = expected the item to be absent). */
    readonly expectedRevision: number | undefined,
    /** The item as it is now, when DynamoDB returned it (undefined = it does not exist). */
    readonly current?: Record<string, unknown>,
  ) {
    super(
      expectedRevision === undefined
        ? `${subject} no longer matches the condition of this write; read it again`
        : `${subject} changed since revision ${expectedRevision} was read` +
            (current && typeof current['revision'] === 'number' ? ` (now revision ${current['revision']})` : current ? '' : ' (it no longer exists)') +
            '; read it again and retry',
    );
  }
}

export const isConditionFailed = (e: unknown): boolean =>
  e instanceof Error && (e.name === 'ConditionalCheckFailedException' || (e.name === 'TransactionCanceledException' && /ConditionalCheckFailed/.test(e.message)));

/**
 * A write to a multi-Region strongly consistent table refused because another Region was changing
 * the same item at that moment: it was not applied. The AWS SDK already retried it (with jittered
 * backoff); what is left is a lost race, to be met as one: read again, decide again.
 */
export const isReplicatedWriteConflict = (e: unknown): boolean => e instanceof Error && e.name === 'ReplicatedWriteConflictException';

/** How many times a read-decide-write is tried before losing the race once more is a fault. */
export const CONFLICT_ATTEMPTS = 5;

/**
 * Runs `step` — read, decide, conditional write — again each time it loses a race (a
 * ConflictError, or a ReplicatedWriteConflictException of a multi-Region table), at most
 * `attempts` times in all. Any other error, and the last lost race, is thrown: conflicts are
 * normal, faults are not.
 */
export async function retryOnConflict<T>(step: (attempt: number) => Promise<T>, attempts: number = CONFLICT_ATTEMPTS): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step(attempt);
    } catch (e) {
      if (!(e instanceof ConflictError || isReplicatedWriteConflict(e)) || attempt >= attempts) throw e;
    }
  }
}

/**
 * A session row's `endedTerms` is full of marks its owner may not have read yet: none can be
 * dropped, so this one is not written. Retry it: the marks are dropped once the owner's renewals
 * (or its session's end) show they have done their work (IdentityStore.markTermEnded).
 */
export class EndedTermsFullError extends Error {
  /** Always `EndedTermsFullError`. */
  override readonly name = 'EndedTermsFullError';
  constructor(
    /** The session row's name. */
    readonly session: string,
    /** The lease whose term's end was not marked. */
    readonly lease: string,
  ) {
    super(`session row ${session} already holds the most ended terms its owner may not have read yet; the end of lease ${lease}'s term is not marked: try again in a few seconds`);
  }
}

/**
 * A held lease's term is on a session row the schema refuses (another writer's: a wrong type, a
 * missing field). No reader can judge that term — the coordinator leaves the lease alone, followers
 * wait, getLeader and the CLI say so — while its holder, if it runs, ends that session within two
 * of its renewals (one may land, its answer refused by the schema; the next finds the row changed)
 * and renews the lease itself; the coordinator's tick deletes the row once it has seen it
 * unchanged for the longest lease held on it and its clock-skew margin (every holder on it has
 * stopped by then), and the term is then judged without it. A ValidationError of the row whose
 * message names the lease, the identities table, the row, what the schema refused and the repair.
 */
export class BrokenSessionError extends ValidationError {
  /** The AWS CLI command that deletes the row. */
  readonly repair: string;
  /** The row's key on the identities table. */
  readonly key: { readonly component: string; readonly name: string };
  constructor(
    /** Who could not judge the term, e.g. `getLeader of lease "jobs"`. */
    reader: string,
    /** The term as the lease row shows it. */
    readonly term: { readonly lease: string; readonly holderIdentity: string; readonly fencingToken: number; readonly session: string },
    /** The identities table. */
    readonly table: string,
    /** The schema's refusal of the row. */
    refused: ValidationError,
    /** AWS CLI options the repair command needs besides the table (`--endpoint-url …`). */
    awsOptions = '',
  ) {
    super(refused.subject, refused.issues);
    this.key = sessionKey(term.session);
    const key = JSON.stringify({ component: { S: this.key.component }, name: { S: this.key.name } });
    this.repair = `aws dynamodb delete-item ${awsOptions ? `${awsOptions} ` : ''}--table-name ${table} --key '${key}'`;
    const { lease, holderIdentity: holder, session } = term;
    this.message =
      `${reader}: the term of ${holder} (fencing token ${term.fencingToken}) is held on session "${session}", whose row on the identities table "${table}" does not match the schema ` +
      `(${refused.issues.map((i) => `${i.field}: ${i.message}`).join('; ')}), so nobody can judge whether that term is live: ` +
      `the coordinator leaves lease "${lease}" alone and reports the row each tick, followers wait, and ${holder}, if it runs, ends that session within two of its renewals and renews the lease itself; ` +
      `once the coordinator's tick has seen the row unchanged for the longest lease held on it and its clock-skew margin, it deletes the row itself. ` +
      `Rewrite the row valid, or delete it: ${this.repair} (the term is then judged by the lease's own stamp and its holder's other sessions, and elected again once it runs out)`;
  }
}
