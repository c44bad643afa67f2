import { printJson, type CliContext } from './context.js';
import { table } from './format.js';
import { scanCandidates, scanLeases, snapshot } from './read.js';
import { candidateColumns, leaseColumns } from './views.js';

/** `conclave get leases`: every row of the leases table. */
export async function getLeases(ctx: CliContext): Promise<void> {
  const leases = await scanLeases(ctx);
  if (ctx.output === 'json') return printJson(ctx, leases);
  if (leases.length === 0) return ctx.sink.err(`no leases in ${ctx.target.tables.leases}`);
  for (const line of table(leaseColumns(ctx.clock.now()), leases)) ctx.sink.out(line);
}

/** `conclave get candidates [LEASE]`: one lease's candidates (a Query), or all of them (a Scan). */
export async function getCandidates(ctx: CliContext, args: { lease?: string | undefined }): Promise<void> {
  const candidates = args.lease ? (await snapshot(ctx, args.lease)).candidates : await scanCandidates(ctx);
  if (ctx.output === 'json') return printJson(ctx, candidates);
  if (candidates.length === 0) return ctx.sink.err(args.lease ? `lease "${args.lease}" has no candidates` : `no candidates in ${ctx.target.tables.candidates}`);
  for (const line of table(candidateColumns(ctx.clock.now(), ctx.config), candidates)) ctx.sink.out(line);
}
