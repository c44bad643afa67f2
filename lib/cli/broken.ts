/**
 * A lease row the schema refuses (written by hand, or by another version of Conclave): the
 * coordinator decides nothing on it and workers do not lead it. `describe lease` says what is
 * wrong and gives the commands that repair it.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { LeaseItem } from '../schemas/lease.js';
import { READER_FORMAT } from '../schemas/common.js';
import type { FieldIssue, ValidationError } from '../schemas/validation.js';
import type { CliContext } from './context.js';
import { fields } from './format.js';

/** What `describe lease` reports of a broken lease row. */
export interface BrokenLeaseReport {
  lease: string;
  /** The ValidationError's message. */
  message: string;
  issues: readonly FieldIssue[];
  /** The row as stored (unmarshalled), or undefined if it is gone by now. */
  row: Record<string, unknown> | undefined;
  /** Shell commands (AWS CLI), each of which repairs the row; none for a row written for newer readers (minReader). */
  repair: string[];
}

const shellQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** Top-level attributes of the row named by the issues (`election.deadline` → `election`). */
const topFields = (issues: readonly FieldIssue[]): string[] => [...new Set(issues.map((i) => i.field.split(/[.[]/)[0]!))];

const optional = (field: string): boolean => {
  const shape = LeaseItem.shape as Record<string, { safeParse(v: unknown): { success: boolean } } | undefined>;
  return shape[field]?.safeParse(undefined).success ?? true; // an attribute the schema does not know is not required either
};

/** The AWS CLI options that reach the CLI's own DynamoDB: its endpoint, region and profile (the account), when given. */
export const awsTarget = (ctx: Pick<CliContext, 'target'>): string => {
  const { endpoint, region, profile } = ctx.target;
  const asWord = (s: string) => (/^[\w.@+=:/-]+$/.test(s) ? s : shellQuote(s));
  return [endpoint ? `--endpoint-url ${endpoint}` : '', region ? `--region ${region}` : '', profile && !endpoint ? `--profile ${asWord(profile)}` : ''].filter(Boolean).join(' ');
};

/** The AWS CLI commands that fix the row in place (one UpdateItem) or delete it. */
export function repairCommands(ctx: Pick<CliContext, 'target'>, lease: string, error: ValidationError): string[] {
  const where = [awsTarget(ctx), `--table-name ${ctx.target.tables.leases}`].filter(Boolean).join(' ');
  const key = `--key ${shellQuote(JSON.stringify({ name: { S: lease } }))}`;
  const bad = topFields(error.issues).filter((f) => f !== 'name' && f !== '(root)');
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const sets: string[] = [];
  const removes: string[] = [];
  bad.forEach((f, i) => {
    names[`#f${i}`] = f;
    // an optional attribute may simply go; a required one (every one but the key is a number:
    // fencingToken, leaseTransitions, leaseDurationSeconds, revision) needs a valid value
    if (optional(f)) removes.push(`#f${i}`);
    else {
      values[`:v${i}`] = { N: '<a valid number>' };
      sets.push(`#f${i} = :v${i}`);
    }
  });
  const clauses = [...(sets.length ? [`SET ${sets.join(', ')}`] : []), ...(removes.length ? [`REMOVE ${removes.join(', ')}`] : [])];
  // Raised, so that any process holding the old revision loses its conditional write and reads again.
  if (!bad.includes('revision')) {
    names['#rev'] = 'revision';
    values[':one'] = { N: '1' };
    clauses.push('ADD #rev :one');
  }
  const update = [
    `aws dynamodb update-item ${where} ${key}`,
    `--update-expression ${shellQuote(clauses.join(' '))}`,
    `--expression-attribute-names ${shellQuote(JSON.stringify(names))}`,
    ...(Object.keys(values).length ? [`--expression-attribute-values ${shellQuote(JSON.stringify(values))}`] : []),
  ].join(' ');
  return [update, `aws dynamodb delete-item ${where} ${key}`];
}

/** A stored number as a number when JavaScript holds it exactly, else its digits (unmarshall would throw). */
const exactNumber = (digits: string): number | string => {
  const n = Number(digits);
  return Number.isFinite(n) && (!Number.isInteger(n) || Number.isSafeInteger(n)) ? n : digits;
};

/** Reads the row as stored, without the schema, and what to do about it. */
export async function brokenLeaseReport(ctx: Pick<CliContext, 'client' | 'target'>, lease: string, error: ValidationError): Promise<BrokenLeaseReport> {
  const r = await ctx.client.send(new GetItemCommand({ TableName: ctx.target.tables.leases, Key: { name: { S: lease } }, ConsistentRead: true }));
  // a row written for newer readers (minReader) is not repaired but upgraded to: no command (brokenLeaseLines)
  const forNewer = error.issues.length > 0 && error.issues.every((i) => i.field === 'minReader');
  return { lease, message: error.message, issues: error.issues, row: r.Item ? unmarshall(r.Item, { wrapNumbers: exactNumber }) : undefined, repair: forNewer ? [] : repairCommands(ctx, lease, error) };
}

/** The lines `describe lease` prints for a broken lease, before the candidates. */
export function brokenLeaseLines(b: BrokenLeaseReport): string[] {
  const token = b.row?.['fencingToken'];
  const tokenNote =
    // the token itself refused (one too large for a next term, say): replaced, whichever repair
    typeof token === 'number' && b.issues.some((i) => i.field === 'fencingToken')
      ? `${token} in the row, refused (above). Put the writer's clock in its place (epoch ms * 1000), or delete the row: either way the next term's token comes from the clock, above every token Conclave issued for this lease before - as long as the clocks are within the configured skew`
      : typeof token === 'number' && Number.isSafeInteger(token)
        ? `${token} in the row. Fixing the row in place keeps it; after a delete the next term's token comes from the writer's clock (epoch ms * 1000), above every token issued for this lease before - as long as the clocks are within the configured skew`
        : "unreadable in the row. Delete the row: the next term's token comes from the writer's clock (epoch ms * 1000), above every token issued for this lease before - as long as the clocks are within the configured skew";
  // written by a newer Conclave for its readers alone (minReader): upgraded to, not repaired (removing
  // the field lets every older reader judge a row it must not; deleting it ends a newer holder's term)
  const newer = b.issues.length > 0 && b.issues.every((i) => i.field === 'minReader') ? b.row?.['minReader'] : undefined;
  if (newer !== undefined)
    return fields([
      ['Lease', b.lease],
      ['State', `written for a newer Conclave: the row needs readers of format ${String(newer)}, and this CLI reads format ${READER_FORMAT}. Readers of this version decide nothing on it (its coordinator leaves it alone, its workers do not lead it); newer ones do`],
      ['Row', JSON.stringify(b.row)],
      ['Repair', `none to the row: upgrade this CLI, and the construct and workers still on this version, to a Conclave that reads format ${String(newer)}. Do not remove minReader (every older reader would judge a row it must not) or delete the row (a newer holder's term is on it)`],
    ]);
  const lines = fields([
    ['Lease', b.lease],
    ['State', 'broken: the row does not match the schema. The coordinator decides nothing on it and workers do not lead it until it is repaired'],
    ...b.issues.map((i): [string, string] => ['Problem', `${i.field}: ${i.message}`]),
    ['Row', b.row ? JSON.stringify(b.row) : '(gone since it was read)'],
    ['Fencing token', tokenNote],
  ]);
  lines.push(
    '',
    'Repair, either way (then the coordinator elects again at its next tick; events and elections resume):',
    '  fix the fields named above in place (put a valid value where it says <...>; a fix that removes the holder ends its term, and a holder still running stops at its next renewal):',
    `    ${b.repair[0]}`,
    '  or delete the row (a holder still running stops at its next renewal, of the lease or of its session, which tells it the term is over; the coordinator holds the next election for it, then writes a new row):',
    `    ${b.repair[1]}`,
  );
  return lines;
}
