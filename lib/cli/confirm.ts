/**
 * An operator's write is shown before it is made — the row's fields before → after, aligned like
 * every table — and made only once confirmed: `--yes`, or "y" typed at a terminal. Without a
 * terminal (a script, CI) and without `--yes` nothing is written. Everything here goes to stderr,
 * so stdout carries only results (with `-o json`, one document).
 */
import type { Patch, Read } from '../stores/item-store.js';
import { retryOnConflict } from '../stores/errors.js';
import { note, type CliContext, type Confirm } from './context.js';
import { CliError } from './errors.js';
import { joined, jsonText, stamp, table, type Column, type Named } from './format.js';

/** `--yes` given: for code (and tests) that call the commands directly. */
export const assumeYes: Confirm = { yes: true, interactive: false, ask: async () => undefined };

/** One field of a row as it is and as it will be, both as the tables show values. */
export interface Change {
  field: string;
  before: string;
  after: string;
}

/** The change table's columns; its values compared with `alike` too (twinParts): names shown apart from it, in the header and the warnings. */
const columns = (alike: readonly string[]): Column<Change>[] => [
  { header: 'FIELD', cell: (c) => c.field },
  { header: 'BEFORE', cell: (c) => c.before, alike },
  { header: 'AFTER', cell: (c) => c.after, alike },
];

/** `FIELD BEFORE AFTER` lines, indented under the row they belong to; a value that passes for one of `alike` escaped where they differ. */
export const changeLines = (changes: readonly Change[], alike: readonly string[] = []): string[] => table(columns(alike), changes).map((l) => `  ${l}`);

export const QUESTION = 'Apply this change? [y/N] ';

/**
 * Shows `what` (e.g. "change candidate w1 of lease jobs") with its changes and any `warnings`,
 * then resolves once the operator confirmed (recorded in `progress`); otherwise throws a CliError
 * — nothing was written. A Named `what` or warning is escaped where its names pass for one another, as the result lines are;
 * the changes' values where they pass for one of `alike` (the names the header and warnings compare: a holder changed).
 */
export async function confirmChange(ctx: Pick<CliContext, 'sink' | 'confirm' | 'progress'>, lease: string, what: string | Named, changes: readonly Change[], warnings: readonly (string | Named)[] = [], alike: readonly string[] = []): Promise<void> {
  note(ctx, joined(what, ':'));
  for (const line of changeLines(changes, alike)) ctx.sink.err(line);
  for (const w of warnings) note(ctx, w);
  if (!ctx.confirm.yes) {
    if (!ctx.confirm.interactive) {
      const why = ctx.confirm.unseen ? 'stderr, where the question goes, is not a terminal, so nobody sees it' : 'stdin is not a terminal, so nobody can answer';
      throw new CliError(`not confirmed: ${why} - pass --yes (-y) to make this change; nothing was written`);
    }
    const answer = await ctx.confirm.ask(QUESTION);
    if (answer === undefined) throw new CliError('not confirmed (no answer); nothing was written');
    if (!/^y(es)?$/i.test(answer.trim())) throw new CliError('not confirmed; nothing was written');
  }
  // from here the command is not run again (withDb): a run again would ask again, or act on rows read anew
  ctx.progress.confirmed = { lease, what };
  // and an interrupt no longer ends it unheard, mid-write (main.ts)
  ctx.confirm.confirmed?.();
}

/** A change in words, for a message: "preferredHolder y2, priorityExpiresAt -". */
export const changedFields = (changes: readonly Change[]): string => changes.map((c) => `${c.field} ${c.after}`).join(', ');

/** A field's value as the change table shows it: times as ages with their ISO stamp, objects as JSON. */
function shown(field: string, value: unknown, now: number): string {
  if (value === undefined) return '-';
  if (typeof value === 'number' && /(Time|At)$/.test(field)) return stamp(value, now);
  if (typeof value === 'object' && value !== null) return jsonText(value);
  return String(value);
}

/** The fields `patch` changes on `before` (absent: a new row), in the patch's order: set, then removed. */
export function changesOf<T extends object>(before: T | undefined, patch: Patch<T>, now: number): Change[] {
  const row = (before ?? {}) as Record<string, unknown>;
  const set = Object.entries(patch.set ?? {}).filter(([, v]) => v !== undefined);
  const fields: [string, unknown][] = [...set, ...(patch.remove ?? []).filter((k) => !set.some(([s]) => s === k)).map((k): [string, unknown] => [k, undefined])];
  return fields
    .map(([field, after]) => ({ field, before: shown(field, row[field], now), after: shown(field, after, now) }))
    .filter((c) => c.before !== c.after);
}

/**
 * Writes `patch` on the row read, as confirmed. The row may have changed since it was read — a
 * holder renews its lease every few seconds, longer than anyone takes to answer — so a lost race
 * reads again and writes again, as long as the change is still the one that was shown (and the
 * row still passes `same`, e.g. the same holder's term). If not, nothing is written. A row that
 * already shows the change is as confirmed: the write landed, its answer lost.
 */
export async function writeAsShown<T extends object>(
  what: string | Named,
  read: Read<T>,
  patch: Patch<T>,
  now: number,
  store: { reread(): Promise<Read<T>>; write(read: Read<T>, patch: Patch<T>): Promise<T>; same?(item: T | undefined): boolean },
): Promise<T> {
  const confirmed = JSON.stringify(changesOf(read.item, patch, now));
  return retryOnConflict(async (attempt) => {
    const current = attempt === 1 ? read : await store.reread();
    // Refused, and the row already shows the change: the write landed though its answer was lost
    // (the AWS SDK sent it again on a new connection, and the copy was refused by it).
    if (attempt > 1 && current.item && changesOf(current.item, patch, now).length === 0 && confirmed !== '[]') return current.item;
    if (attempt > 1 && (JSON.stringify(changesOf(current.item, patch, now)) !== confirmed || (store.same && !store.same(current.item)))) {
      throw new CliError(joined(what, ' changed while writing: the change shown is no longer the change this write would make; nothing was written - run the command again to see it now'));
    }
    return store.write(current, patch);
  });
}
