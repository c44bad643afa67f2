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
