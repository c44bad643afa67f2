/**
 * `conclave leader LEASE`: who leads a lease and where clients reach it (the SDK's getLeader, from
 * the operator's side): the lease row and its session (and, where that row does not vouch for the
 * holder, its holder's process's sessions), read as describe reads them, judged with the
 * coordinator's rules and the election config given.
 */
import { leaderOf } from '../election/leader.js';
import { printJson, say, type CliContext } from './context.js';
import { CliError } from './errors.js';
import { fields, span, stamp } from './format.js';
import { judgedLease } from './judged.js';
import { readLease, readSession, reportInvalid, unknownLease } from './read.js';

const VACANT = {
  noLease: 'no lease row yet (the coordinator writes it at the first election)',
  noHolder: 'no holder',
  expired: 'the term ran out',
  reported: 'a follower reported the term vacant (it saw no renewal for a whole term)',
} as const;

export async function leader(ctx: CliContext, args: { lease: string }): Promise<void> {
  const read = await readLease(ctx, args.lease);
  if (!read.item) {
    const list = await ctx.candidates.list(args.lease);
    reportInvalid(ctx, list.invalid);
    if (list.candidates.length === 0 && list.invalid.length === 0) throw await unknownLease(ctx, args.lease);
  }
  // as getLeader and the coordinator's tick judge it: a term the named row does not vouch for by its holder's own process's sessions (judgingRow)
  const session = await readSession(ctx, read.item);
  // judged by no one: neither a leader nor "no leader" is the answer while its holder may act
  if (session?.refused) throw new CliError(session.refused.message);
  const now = ctx.clock.now();
  const judged = leaderOf(judgedLease(read.item, session, now), now, ctx.config.clockSkewMs);
  if (ctx.output === 'json') return printJson(ctx, judged.leader ? { lease: args.lease, leader: judged.leader } : { lease: args.lease, leader: null, vacancy: judged.vacancy });
  const l = judged.leader;
  if (!l) {
    const why = VACANT[judged.vacancy];
    say(ctx, `${args.lease}: no leader: ${judged.vacancy === 'expired' ? `${why} (the coordinator allows ${span(ctx.config.clockSkewMs)} of clock skew)` : why}`);
    return;
  }
  for (const line of fields([
    ['Lease', l.lease],
    ['Leader', l.holder],
    ['Address', l.address ?? '- (the leader advertised none: its LeaderElector has no `advertise` option)'],
    ['Fencing token', String(l.fencingToken)],
    ['Since', stamp(l.since, now)],
  ]))
    ctx.sink.out(line);
}
