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
