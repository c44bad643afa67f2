/** An operator's writes to a lease row: its sticky `strategy` and its `preferredLocations` (release.ts ends a holder's term). */
import { locationRank, preferredLocationsOf } from '../election/location.js';
import { liveCandidates } from '../election/vacancy.js';
import type { Lease } from '../schemas/lease.js';
import { fencingTokenFloor } from '../schemas/fencing-token.js';
import { NO_COORDINATION, OLDEST_EMULATION_VERSION } from '../schemas/strategy.js';
import type { LeasePatch, LeaseRead } from '../stores/lease-store.js';
import { changedFields, changesOf, confirmChange, writeAsShown } from './confirm.js';
import { landed, note, printJson, say, sending, type CliContext } from './context.js';
import { CliError, explain } from './errors.js';
import { nextStepOn } from './explain.js';
import { UNJUDGED_STEP, judgedLease } from './judged.js';
import { readLease, readSession, unknownLease } from './read.js';
import { byName, namerOf, placeOf, preferenceOf } from './views.js';
import { listVouched } from '../coordinator/vouched.js';
import { NO_COORDINATION_TAKERS, REPORT_ANSWER_MS } from './describe.js';
import { span } from './format.js';

function strategyEffect(strategy: string | undefined): string {
  if (strategy === undefined) return "the candidates' preferredStrategies decide again (KEP-4355 consensus)";
  if (strategy === OLDEST_EMULATION_VERSION) return 'the coordinator elects by priority, then the oldest emulation and binary versions, whatever the candidates prefer';
  if (strategy === NO_COORDINATION) return `the coordinator elects nobody on the lease: ${NO_COORDINATION_TAKERS('it')}`;
  return `the coordinator leaves the lease alone; a third party elects under "${strategy}"`;
}

/**
 * The row an operator's write goes to. A lease without a row but with candidates gets one, without
 * a holder, as the coordinator creates it before an election. A name with neither is refused
 * unless `create`: a typo must not make a lease.
 */
async function leaseToWrite(ctx: CliContext, lease: string, opts: { create?: boolean; clear: boolean }): Promise<LeaseRead> {
  const read = await readLease(ctx, lease);
  if (!read.item && !opts.create && !opts.clear && (await ctx.candidates.list(lease)).candidates.length === 0) {
    const unknown = await unknownLease(ctx, lease);
    throw new CliError(`${unknown.message}; \`conclave get leases\` lists them; --create makes the row of a lease no worker has joined yet`);
  }
  return read;
}

/**
 * Shows the change, asks, and writes it (again after a lost race, if the change still holds); a
 * new row gets a lease's first fields. A change the row already shows is neither asked nor written
 * (`unchanged`).
 */
async function confirmedLeaseWrite(ctx: CliContext, lease: string, read: LeaseRead, set: LeasePatch['set'], remove: LeasePatch['remove'] = [], warnings: readonly string[] = []): Promise<{ written: Lease; created: boolean; unchanged: boolean }> {
  const created = read.item === undefined;
  const now = ctx.clock.now();
  // a new row's first token is its creation's clock floor, as the coordinator's (lib/election/plan.ts)
  const fields = { ...set, ...(created ? { leaseDurationSeconds: ctx.config.defaultLeaseDurationSeconds, leaseTransitions: 0, fencingToken: fencingTokenFloor(now) } : {}) };
  const patch: LeasePatch = { ...(Object.keys(fields).length ? { set: fields } : {}), ...(remove.length ? { remove } : {}) };
  const changes = changesOf(read.item, patch, now);
  if (read.item && changes.length === 0) return { written: read.item, created, unchanged: true };
  await confirmChange(ctx, lease, created ? `create lease ${lease} (it has no row yet; without a holder)` : `change lease ${lease}`, changes, warnings);
  const written = await writeAsShown(`lease ${lease}`, read, patch, now, { reread: () => readLease(ctx, lease), write: (r, p) => (sending(ctx), ctx.leases.write(r, p)) });
  landed(ctx, lease, `lease ${lease}: ${changedFields(changes)}`);
  return { written, created, unchanged: false };
}

const CREATED = ' - created the lease row, without a holder';

/**
 * Before NoCoordination is set on a lease with live candidates: each is a coordinated worker (one
 * run with mode 'NoCoordination' has no candidate row), which the coordinator then elects never,
 * so it takes the lease only by its fallback, later than a race would, telling onError each time.
 */
async function coordinatedWarnings(ctx: CliContext, lease: string): Promise<string[]> {
  const { candidates } = await listVouched(ctx, lease);
  const n = liveCandidates(candidates, ctx.clock.now(), ctx.config.candidateStaleAfterMs).length;
  if (n === 0) return [];
  const [have, theirs] = n === 1 ? ['1 live candidate', 'its worker runs'] : [`${n} live candidates`, 'their workers run'];
  return [
    `warning: lease ${lease} has ${have} (\`conclave get candidates ${lease}\` lists them): ${theirs} coordinated, so under NoCoordination none is elected; each takes the lease only once it stands vacant and a vacancy report goes unanswered for ${span(REPORT_ANSWER_MS)} (or its fallbackAfterMs passes), failing over more slowly than a race, and reports NoCoordinatorError to onError at each take - run them with mode 'NoCoordination' to race for it directly`,
  ];
}

/** `conclave set-strategy LEASE STRATEGY` / `--clear`: conditioned on the revision read. */
export async function setStrategy(ctx: CliContext, args: { lease: string; strategy?: string | undefined; clear: boolean; create?: boolean }): Promise<void> {
  const read = await leaseToWrite(ctx, args.lease, args);
  const before = read.item?.strategy;
  if (args.clear && before === undefined) {
    if (!read.item) throw await unknownLease(ctx, args.lease);
    note(ctx, `lease ${args.lease} has no operator strategy; nothing to clear`);
    return ctx.output === 'json' ? printJson(ctx, read.item) : undefined;
  }
  const warnings = args.strategy === NO_COORDINATION && before !== NO_COORDINATION ? await coordinatedWarnings(ctx, args.lease) : [];
  const { written, created, unchanged } = args.clear ? await confirmedLeaseWrite(ctx, args.lease, read, {}, ['strategy']) : await confirmedLeaseWrite(ctx, args.lease, read, { strategy: args.strategy }, [], warnings);
  if (unchanged) note(ctx, `the strategy of lease ${args.lease} is already ${before}; nothing to change`);
  if (ctx.output === 'json') return printJson(ctx, written);
  if (unchanged) return;
  const what = args.clear ? `cleared the strategy of lease ${args.lease} (was ${before})` : `set the strategy of lease ${args.lease} to ${written.strategy}${before ? ` (was ${before})` : ''}`;
  say(ctx, `${what}${created ? CREATED : ''}`);
  say(ctx, `from now on ${strategyEffect(written.strategy)}`);
}

const listed = (l: readonly string[] | undefined): string => (l === undefined ? "the coordinator's" : l.length ? l.join(', ') : 'none');

/**
 * `conclave set-locations LEASE ZONE|REGION…` / `--none` / `--clear`: the lease's own preferred
 * locations, best first (`--none`: no preference, whatever the coordinator's; `--clear`: the
 * coordinator's again). Conditioned on the revision read; says where the candidates stand and what
 * the coordinator does next.
 */
export async function setLocations(ctx: CliContext, args: { lease: string; locations?: string[] | undefined; none: boolean; clear: boolean; create?: boolean }): Promise<void> {
  const read = await leaseToWrite(ctx, args.lease, args);
  const before = read.item?.preferredLocations;
  if (args.clear && before === undefined) {
    if (!read.item) throw await unknownLease(ctx, args.lease);
    note(ctx, `lease ${args.lease} has no preferred locations of its own (${preferenceOf(read.item, ctx.config)}); nothing to clear`);
    return ctx.output === 'json' ? printJson(ctx, read.item) : undefined;
  }
  const { written, created, unchanged } = args.clear
    ? await confirmedLeaseWrite(ctx, args.lease, read, {}, ['preferredLocations'])
    : await confirmedLeaseWrite(ctx, args.lease, read, { preferredLocations: args.none ? [] : args.locations! });
  if (unchanged) note(ctx, `the preferred locations of lease ${args.lease} are already ${listed(before)}; nothing to change`);
  if (ctx.output === 'json') return printJson(ctx, written);
  if (unchanged) return;
  const what = args.clear ? `cleared the preferred locations of lease ${args.lease} (was ${listed(before)})` : `set the preferred locations of lease ${args.lease} to ${listed(written.preferredLocations)} (was ${listed(before)})`;
  say(ctx, `${what}${created ? CREATED : ''}`);
  say(ctx, `in force now: ${preferenceOf(written, ctx.config)}`);
  // after the write: its candidates, and the session the lease is held on (to judge the term by it);
  // the change stands whatever these reads meet, so a failure is told, not the command's exit
  let after: [Awaited<ReturnType<typeof listVouched>>, Awaited<ReturnType<typeof readSession>>];
  try {
    after = await Promise.all([listVouched(ctx, args.lease), readSession(ctx, written)]);
  } catch (e) {
    const told = await explain(e, ctx.target, ctx.client);
    note(ctx, `the change is written; where the candidates stand could not be read: ${told instanceof Error ? told.message : String(told)}`);
    return;
  }
  const [{ candidates }, session] = after;
  const now = ctx.clock.now();
  const preferred = preferredLocationsOf(written, ctx.config);
  const live = liveCandidates(candidates, now, ctx.config.candidateStaleAfterMs);
  // names that pass for one another (worker-rn, worker-m) escaped where they differ, as describe shows them
  const as = namerOf(written, candidates);
  if (preferred.length) {
    for (const c of live.sort(byName)) say(ctx, as('  ', { name: c.name }, `: ${placeOf(c, preferred)}`));
    if (live.length && live.every((c) => locationRank(c, preferred) === preferred.length)) {
      say(ctx, `no candidate of lease ${args.lease} runs in any of them now: all stay eligible, ranked as without a preference (leadership is never lost for want of a location)`);
    }
  }
  say(ctx, as("the coordinator's next step: ", ...(session?.refused ? [UNJUDGED_STEP] : nextStepOn(args.lease, written, judgedLease(written, session, now), candidates, now, ctx.config))));
}
