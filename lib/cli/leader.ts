/**
 * `conclave leader LEASE`: who leads a lease and where clients reach it (the SDK's getLeader, from
 * the operator's side): the lease row and its session (and, where that row does not vouch for the
 * holder, its holder's process's sessions), read as describe reads them, judged with the
 * coordinator's rules and the election config given.
 */
import { listVouched } from '../coordinator/vouched.js';
import { leaderOf } from '../election/leader.js';
import type { VacancyReason } from '../election/vacancy.js';
import type { Lease } from '../schemas/lease.js';
import { printJson, say, type CliContext } from './context.js';
import { CliError } from './errors.js';
import { nextStepOn, takersOf } from './explain.js';
import { fields, joined, span, stamp, type Named } from './format.js';
import { judgedLease } from './judged.js';
import { readLease, readSession, reportInvalid, unknownLease } from './read.js';
import { namerOf } from './views.js';

const VACANT: Record<Exclude<VacancyReason, 'noHolder'>, string> = {
  noLease: 'no lease row yet (the coordinator writes it at the first election)',
  expired: 'the term ran out',
  reported: 'a follower reported the term vacant (it saw no renewal for a whole term)',
};

/**
 * Why a lease row without a holder has no leader, from the row and its candidates (before: "no
 * holder", and nothing more): whose term was the last, who takes it at once (its designated
 * successors, as their SDKs take a released lease: takersOf), and the coordinator's next step on it
 * (an election open, no live candidate, one to elect), as describe says it.
 */
async function unheld(ctx: CliContext, lease: Lease, now: number): Promise<Named> {
  const list = await listVouched(ctx, lease.name);
  reportInvalid(ctx, list.invalid);
  const candidates = list.candidates;
  const as = namerOf(lease, candidates);
  const last = lease.lastHolderIdentity !== undefined ? as(' (the last one was ', { name: lease.lastHolderIdentity }, ')') : as(' (the row names no last holder)');
  const { successor, second } = takersOf(lease, candidates, now, ctx.config);
  const heir = successor ?? second;
  const takes =
    heir === undefined
      ? as('')
      : as('; ', { name: heir }, `, its designated ${successor !== undefined ? '' : 'second '}successor, takes it at once as it reads the lease`, ...(successor !== undefined && second !== undefined ? [' (', { name: second }, ', its second successor, a moment later if ', { name: successor }, ' has not)'] : []));
  const step = nextStepOn(lease.name, lease, lease, candidates, now, ctx.config);
  return joined(`${lease.name}: no leader: no holder`, last, takes, as("; the coordinator's next step: ", ...step));
}

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
  if (!judged.leader) {
    const { vacancy } = judged;
    if (vacancy === 'noHolder') return say(ctx, await unheld(ctx, read.item!, now));
    const why = VACANT[vacancy];
    say(ctx, `${args.lease}: no leader: ${vacancy === 'expired' ? `${why} (the coordinator allows ${span(ctx.config.clockSkewMs)} of clock skew)` : why}`);
    return;
  }
  const l = judged.leader;
  for (const line of fields([
    ['Lease', l.lease],
    ['Leader', l.holder],
    ['Address', l.address ?? '- (the leader advertised none: its LeaderElector has no `advertise` option)'],
    ['Fencing token', String(l.fencingToken)],
    ['Since', stamp(l.since, now)],
  ]))
    ctx.sink.out(line);
}
