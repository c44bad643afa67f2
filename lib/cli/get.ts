import { printJson, type CliContext } from './context.js';
import { table } from './format.js';
import { seenIn, withJudged } from './judged.js';
import { scanCandidates, scanLeasesJudged, snapshot } from './read.js';
import { candidateColumns, leaseColumns } from './views.js';

/** `conclave get leases`: every row of the leases table, judged with the sessions they are held on. */
export async function getLeases(ctx: CliContext): Promise<void> {
  const { leases, sessions } = await scanLeasesJudged(ctx);
  const now = ctx.clock.now();
  if (ctx.output === 'json') return printJson(ctx, leases.map((l) => withJudged(l, seenIn(sessions, l), now, ctx.config)));
  if (leases.length === 0) return ctx.sink.err(`no leases in ${ctx.target.tables.leases}`);
  for (const line of table(leaseColumns(now, sessions), leases)) ctx.sink.out(line);
}

/** `conclave get candidates [LEASE]`: one lease's candidates (a Query), or all of them (a Scan). */
export async function getCandidates(ctx: CliContext, args: { lease?: string | undefined }): Promise<void> {
  const candidates = args.lease ? (await snapshot(ctx, args.lease)).candidates : await scanCandidates(ctx);
  if (ctx.output === 'json') return printJson(ctx, candidates);
  if (candidates.length === 0) return ctx.sink.err(args.lease ? `lease "${args.lease}" has no candidates` : `no candidates in ${ctx.target.tables.candidates}`);
  for (const line of table(candidateColumns(ctx.clock.now(), ctx.config), candidates)) ctx.sink.out(line);
}
