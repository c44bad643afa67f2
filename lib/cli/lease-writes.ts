/** An operator's write to a lease row: its sticky `strategy` (release.ts ends a holder's term). */
import { NO_COORDINATION, OLDEST_EMULATION_VERSION } from '../schemas/strategy.js';
import type { LeasePatch } from '../stores/lease-store.js';
import { changesOf, confirmChange, writeAsShown } from './confirm.js';
import { note, printJson, say, type CliContext } from './context.js';
import { CliError } from './errors.js';
import { unknownLease } from './read.js';

function strategyEffect(strategy: string | undefined): string {
  if (strategy === undefined) return 'the candidates’ preferredStrategies decide again (KEP-4355 consensus)';
  if (strategy === OLDEST_EMULATION_VERSION) return 'the coordinator elects by priority, then the oldest emulation and binary versions, whatever the candidates prefer';
  if (strategy === NO_COORDINATION) return 'the coordinator leaves the lease alone; workers acquire it directly (a plain client-go race)';
  return `the coordinator leaves the lease alone; a third party elects under "${strategy}"`;
}

/**
 * `conclave set-strategy LEASE STRATEGY` / `--clear`: conditioned on the revision read. A lease
 * without a row but with candidates gets one, without a holder, as the coordinator creates it
 * before an election. A name with neither is refused unless `create`: a typo must not make a lease.
 */
export async function setStrategy(ctx: CliContext, args: { lease: string; strategy?: string | undefined; clear: boolean; create?: boolean }): Promise<void> {
  const read = await ctx.leases.read(args.lease);
  if (!read.item && !args.create && !args.clear && (await ctx.candidates.list(args.lease)).candidates.length === 0) {
    const unknown = await unknownLease(ctx, args.lease);
    throw new CliError(`${unknown.message}; \`conclave get leases\` lists them — --create makes the row of a lease no worker has joined yet`);
  }
  const before = read.item?.strategy;
  if (args.clear && before === undefined) {
    if (!read.item) throw await unknownLease(ctx, args.lease);
    note(ctx, `lease ${args.lease} has no operator strategy; nothing to clear`);
    return ctx.output === 'json' ? printJson(ctx, read.item) : undefined;
  }
  const created = read.item === undefined;
  const patch: LeasePatch = args.clear
    ? { remove: ['strategy'] }
    : { set: { strategy: args.strategy, ...(created ? { leaseDurationSeconds: ctx.config.defaultLeaseDurationSeconds, leaseTransitions: 0, fencingToken: 0 } : {}) } };
  const now = ctx.clock.now();
  await confirmChange(ctx, created ? `create lease ${args.lease} (it has no row yet; without a holder)` : `change lease ${args.lease}`, changesOf(read.item, patch, now));
  const written = await writeAsShown(`lease ${args.lease}`, read, patch, now, { reread: () => ctx.leases.read(args.lease), write: (r, p) => ctx.leases.write(r, p) });
  if (ctx.output === 'json') return printJson(ctx, written);
  const what = args.clear ? `cleared the strategy of lease ${args.lease} (was ${before})` : `set the strategy of lease ${args.lease} to ${written.strategy}${before ? ` (was ${before})` : ''}`;
  say(ctx, `${what}${created ? ' — created the lease row, without a holder' : ''}`);
  say(ctx, `from now on ${strategyEffect(written.strategy)}`);
}
