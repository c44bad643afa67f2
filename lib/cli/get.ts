import { printJson, say, type CliContext } from './context.js';
import { table } from './format.js';
import { seenIn, withJudged } from './judged.js';
import { scanCandidates, scanLeasesJudged, snapshot } from './read.js';
import { candidateColumns, leaseColumns, refusedLeaseLine, type RefusedLease } from './views.js';

/**
 * A lease row the schema refuses, as `-o json` lists it after the leases: its name and `refused`
 * (what was refused; `minReader`, where it was written for a newer Conclave), no `judged`: the
 * coordinator decides nothing on it. The other entries keep their shape.
 */
export const refusedJson = (r: RefusedLease) => ({ name: r.name, refused: { issues: r.issues, ...(r.minReader !== undefined ? { minReader: r.minReader } : {}) } });

/** `conclave get leases`: every row of the leases table, judged with the sessions they are held on; a row the schema refuses, a line of its own (and a warning on stderr). */
export async function getLeases(ctx: CliContext): Promise<void> {
  const { leases, sessions, refused } = await scanLeasesJudged(ctx);
  const now = ctx.clock.now();
  if (ctx.output === 'json') return printJson(ctx, [...leases.map((l) => withJudged(l, seenIn(sessions, l), now, ctx.config)), ...refused.map(refusedJson)]);
  if (leases.length === 0 && refused.length === 0) return ctx.sink.err(`no leases in ${ctx.target.tables.leases}`);
  if (leases.length) for (const line of table(leaseColumns(now, sessions, ctx.config), leases)) ctx.sink.out(line);
  for (const r of refused) say(ctx, refusedLeaseLine(r));
}

/** `conclave get candidates [LEASE]`: one lease's candidates (a Query), or all of them (a Scan). */
export async function getCandidates(ctx: CliContext, args: { lease?: string | undefined }): Promise<void> {
  const candidates = args.lease ? (await snapshot(ctx, args.lease)).candidates : await scanCandidates(ctx);
  if (ctx.output === 'json') return printJson(ctx, candidates);
  if (candidates.length === 0) return ctx.sink.err(args.lease ? `lease "${args.lease}" has no candidates` : `no candidates in ${ctx.target.tables.candidates}`);
  for (const line of table(candidateColumns(ctx.clock.now(), ctx.config), candidates)) ctx.sink.out(line);
}
