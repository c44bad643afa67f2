/**
 * `conclave release LEASE`: ends the holder's term without two workers ever acting at once. A live
 * holder is asked to yield — `preferredHolder` names another candidate, and the SDK's leader, at
 * its next renewal, stops acting and then releases (LeaderElector.afterRenewal) — and the CLI waits
 * until it has. `--force` ends the term at once instead (LeaseStore.releaseTerm), which the old
 * holder learns at its next renewal: of its lease (the renewal fails), or of its session (the CLI
 * marks the ended term on the session row, as the lease stream's function does) — within its renew
 * deadline, so at most its lease duration from now. Until then it may still act.
 */
import { listVouched } from '../coordinator/vouched.js';
import { standingDown } from '../election/decide.js';
import { preferredLocationsOf } from '../election/location.js';
import { isCandidateStale, isDeparted, leaseExpiresAt, leftStamp, SESSION_QUIET_LEASES, vacancy } from '../election/vacancy.js';
import type { Candidate } from '../schemas/candidate.js';
import { MAX_ENDED_TERMS } from '../schemas/identity.js';
import type { Lease } from '../schemas/lease.js';
import { HOLDER_FIELDS } from '../schemas/platform.js';
import { NO_COORDINATION } from '../schemas/strategy.js';
import { ConflictError, EndedTermsFullError } from '../stores/errors.js';
import { keepTermToken, type LeasePatch, type LeaseRead, type Term } from '../stores/lease-store.js';
import { changedFields, changesOf, confirmChange, writeAsShown } from './confirm.js';
import { landed, note, printJson, say, sending, type CliContext, type Pace } from './context.js';
import { CliError, InterruptedError, explain, faultText, isPassingFault } from './errors.js';
import { nextStepOn, standings, takersOf, whyBetter } from './explain.js';
import { joined, namesIn, relative, span, type Named } from './format.js';
import { compareMerit, rank } from '../election/ordering.js';
import type { ElectionConfig } from '../schemas/config.js';
import { UNJUDGED_STEP, judgedLease, lastRenewal, unvouched, type SessionSeen } from './judged.js';
import { readLease, readSession, snapshot } from './read.js';
import { namerOf, namesOf, type Namer } from './views.js';
import { notElected } from './priority.js';
import { NO_COORDINATION_TAKERS } from './describe.js';

/** How often the lease is read while waiting: the holder renews every retry period (2 s by default). */
const POLL_MS = 500;
/** A progress line this often while waiting. */
const PROGRESS_MS = 5_000;
/** Requests the coordinator may withdraw (it clears preferredHolder when the holder is its best candidate) before giving up. */
const ASKS = 3;

export interface ReleaseArgs {
  lease: string;
  /** End the term now, without asking the holder. */
  force: boolean;
  /** How long to wait for the holder to yield; default yieldWaitMs (as long as the holder can take to see the request). */
  timeout?: number | undefined;
}

const inTerm = (l: Lease | undefined, term: Term): l is Lease => l?.holderIdentity === term.holderIdentity && l.fencingToken === term.fencingToken;

/**
 * `conclave release LEASE [--force] [--timeout D]`. `pace`: the wait's, or what makes it, called
 * once the command starts waiting on the term (the CLI's: Ctrl-C is listened for from then on, and
 * ends the wait). Before it, as in every command, the signal ends the process (a read in flight:
 * nothing written), and once a change is confirmed main.ts ends the command without sending its
 * write (before: Ctrl-C was listened for from the start, so a read in flight was not stopped, and
 * `release -y` went on to write).
 */
export async function release(ctx: CliContext, args: ReleaseArgs, pace: Pace | (() => Pace)): Promise<void> {
  const { read, candidates, session } = await snapshot(ctx, args.lease);
  // a term no one can judge, and no mark can reach through that row: nothing to ask, wait for, or end
  if (session?.refused) throw new CliError(session.refused.message);
  const lease = read.item;
  // no holder: what a release would leave is what the row shows already, so, as every write the row already shows, nothing is written, exit 0 (`-o json`: the row as it is)
  if (!lease) {
    note(ctx, `lease ${args.lease} has no row yet, so no holder; nothing to release`);
    return ctx.output === 'json' ? printJson(ctx, null) : undefined;
  }
  // refusals name holders and candidates escaped where they pass for one another, as describe shows them
  const as = namerOf(lease, candidates);
  if (!lease.holderIdentity) {
    note(ctx, lease.lastHolderIdentity ? as(`lease ${args.lease} has no holder (the last one was `, { name: lease.lastHolderIdentity }, '); nothing to release') : `lease ${args.lease} has no holder; nothing to release`);
    return ctx.output === 'json' ? printJson(ctx, lease) : undefined;
  }
  const term: Term = { holderIdentity: lease.holderIdentity, fencingToken: lease.fencingToken };
  const now = ctx.clock.now();
  // a lease held on a session lives by the session's renewals too: judged as the coordinator judges it
  const v = vacancy(judgedLease(lease, session, now), now, ctx.config.clockSkewMs);
  if (args.force) return endTerm(ctx, lease, session, term, candidates, now, 'force');
  // A term that ran out (or was reported vacant) has nobody acting on it: nothing to ask, nothing to wait for.
  if (v.vacant) return endTerm(ctx, lease, session, term, candidates, now, v.reason === 'reported' ? 'reported' : 'expired');
  return askToYield(ctx, read, session, term, candidates, now, args.timeout ?? yieldWaitMs(lease), typeof pace === 'function' ? pace : () => pace);
}

/**
 * As long as a live holder can take to see a request to yield, and then release: it sees
 * preferredHolder when it next reads its lease — at its next renewal (every retry period), or, for a
 * lease held on a session with the push path live and the wake lost, at its backstop read
 * (SESSION_QUIET_LEASES lease durations, jittered by a tenth) — plus a lease duration for the
 * release to land. At least 10 s.
 */
export function yieldWaitMs(lease: Lease): number {
  const L = lease.leaseDurationSeconds * 1000;
  return Math.max(10_000, lease.session !== undefined ? Math.ceil((SESSION_QUIET_LEASES * 1.1 + 1) * L) : 2 * L);
}

/** The last line of a release: who leads next, or who the coordinator will elect; its names escaped as the lines before it (`as`). */
function nextHolder(ctx: CliContext, as: Namer, name: string, after: Lease | undefined, was: string, candidates: readonly Candidate[], now: number): Named {
  if (after?.holderIdentity) return as({ name: after.holderIdentity }, ` now holds it (fencing token ${after.fencingToken})`);
  const { best } = standings(after, candidates, now, ctx.config);
  // the coordinator elects no one there (NoCoordination, a third party's strategy): its best candidate is nobody's next
  // holder (no live candidate and no strategy on the row: nothing to agree on, told below as no candidate)
  const unelected = best || after?.strategy ? notElected(after, candidates, now, ctx) : undefined;
  if (unelected) return joined(`the coordinator does not elect on lease ${name} (`, unelected, `): ${takenBy(after)}`);
  // its designated successor takes the vacant lease at its next read, as its SDK does, ahead of an election
  // that waits for answers (before: the coordinator's best was said to be elected, often the holder that
  // left, while the successor took the lease within seconds)
  const { successor, second } = takersOf(after, candidates, now, ctx.config);
  const heir = successor ?? second;
  if (heir !== undefined) {
    const next = successor !== undefined && second !== undefined ? [' (', { name: second }, ', its second successor, a moment later if ', { name: successor }, ' has not)'] : [];
    return joined(
      as({ name: heir }, `, the lease's designated ${successor !== undefined ? '' : 'second '}successor, takes it at once, with a new fencing token`, ...next, '; failing that, the coordinator elects a holder'),
      backAfterTake(ctx, as, after!, heir, was, candidates, now),
    );
  }
  // a holder with no candidate row ran without the coordinator (NoCoordination), as its peers may:
  // they race for the lease (before: said to stay vacant, and a worker took it within seconds); or
  // it was a coordinated worker whose row was collected, which the row cannot tell apart
  if (!best && !candidates.some((c) => c.name === was)) return joined(as({ name: was }, ` has no candidate row on lease ${name} (it ran without the coordinator, NoCoordination, or its row was collected): `), takenBy(after));
  if (!best) return as('no candidate can be elected now: the lease stays vacant until one registers and renews');
  if (best.candidate.name === was) return as('the coordinator elects the next holder at its next reconcile, with a new fencing token: the best candidate is still ', { name: was }, ` (\`conclave preempt ${name} --to ...\` picks another)`);
  return as('the coordinator elects the next holder at its next reconcile, with a new fencing token: the best candidate now is ', { name: best.candidate.name });
}

/**
 * Whether the holder that left (`was`) is elected back once `heir` has taken the lease, as decide()
 * judges a held lease: it passes over the last holder while its candidate row shows no life since
 * the term began (isDeparted), and preempts a holder only for a candidate better on merit
 * (isBetterThanHolder): so `was` comes back only once its row shows life again, and only if it
 * outranks `heir` then.
 */
function backAfterTake(ctx: CliContext, as: Namer, after: Lease, heir: string, was: string, candidates: readonly Candidate[], now: number): Named {
  const preferred = preferredLocationsOf(after, ctx.config);
  const row = (n: string) => candidates.find((c) => c.name === n && !isCandidateStale(c, now, ctx.config.candidateStaleAfterMs) && !standingDown(c, now, ctx.config.clockSkewMs));
  const [left, taker] = [row(was), row(heir)];
  const [mine, theirs] = [left && rank(left, now, preferred), taker && rank(taker, now, preferred)];
  const it = { name: was };
  // (no live row of its own, or none of the heir's to rank against: nothing to say)
  if (!mine || !theirs || heir === was) return as('');
  if (compareMerit(mine, theirs) >= 0) return as('; ', it, ' is not elected back: the coordinator preempts a holder only for a candidate better on merit (a higher priority, older versions, a better location), and ', it, ' is not better than ', { name: heir });
  return as('; ', it, ' is elected back later: it ranks above ', { name: heir }, ' for its ', ...whyBetter(mine, theirs, preferred), ', so the coordinator preempts for it once its candidate row shows life again (until then it passes over a last holder not seen since the term began)');
}

/** Who takes a lease the coordinator does not elect on: its workers, racing (NoCoordination, or candidates that agree on no strategy), or a third party under its own strategy. */
const takenBy = (l: Lease | undefined): string =>
  l?.strategy !== undefined && l.strategy !== NO_COORDINATION ? `whoever elects under ${l.strategy} (a third party) names the next holder` : `its workers take it, with a new fencing token (${NO_COORDINATION_TAKERS('it')})`;

/** Ends the term now, as LeaseStore.releaseTerm does: forced, or a term nobody acts on any more. */
async function endTerm(ctx: CliContext, lease: Lease, session: SessionSeen | undefined, term: Term, candidates: readonly Candidate[], now: number, why: 'force' | 'expired' | 'reported'): Promise<void> {
  const name = lease.name;
  const holder = term.holderIdentity;
  // What LeaseStore.releaseTerm writes, shown before it is written: the term's token copy too, by the
  // store's own rule (keepTermToken: removed with the holder). Stamped when it is written (`at`), as a
  // priority pin is: the question may stay open longer than the holder's renewals are apart
  const ending = (at: number): LeasePatch => keepTermToken(lease, { set: { renewTime: at, lastHolderIdentity: holder }, remove: [...HOLDER_FIELDS, 'preferredHolder', 'vacancyReport'] });
  // A session that does not vouch for the term (rewritten under its holder) is not the one the holder
  // renews: the mark is written on its own process's session instead, found in the same partition.
  const own = unvouched(lease, session) ? session?.judging?.own?.name : undefined;
  const learns = !unvouched(lease, session)
    ? `at its next renewal${lease.session ? ` (of its session ${lease.session}, on which this command marks the term ended)` : ''} - within its renew deadline, at most ${lease.leaseDurationSeconds}s from now (its lease duration)`
    : own
      ? `at its next renewal of its own process's session ${own} (the lease names session ${lease.session}, which does not vouch for its term; this command marks the term ended on ${own}) - within its renew deadline, at most ${lease.leaseDurationSeconds}s from now (its lease duration)`
      : `at its own next read of the lease - its session ${lease.session} does not vouch for its term (the lease's session was rewritten under it) and no session of its process was found, so a mark cannot reach it; at most ${Math.ceil(SESSION_QUIET_LEASES * 1.1 * lease.leaseDurationSeconds)}s from now with the push path, a renew interval without`;
  // the header, the warning, the notes and the result lines name the holder as the refusals do: escaped where it passes for a candidate
  const as = namerOf(lease, candidates);
  const it = { name: holder };
  const warnings = {
    force: as('warning: ', it, ` is not asked to stop: it learns that its term is over ${learns}, and may go on acting as leader until then, while the next holder may already start; a process that is frozen (paused, swapped out) acts when it wakes, before it can look. Fencing refuses its writes with token ${term.fencingToken} from now on, but not what it does outside fenced writes`),
    expired: as('note: ', it, `'s term ran out ${relative(leaseExpiresAt(judgedLease(lease, session, now)), now)} (${ranOutWhy(lease, session)}), so nobody acts on it: ending it directly`),
    reported: as('note: ', { name: String(lease.vacancyReport?.by) }, ` reported lease ${name} vacant (it watched it unchanged for a whole term), so nobody acts on it: ending it directly`),
  };
  // A holder on a session renews the session, not the lease: tell it through the session row now,
  // as the lease stream's function will too (whichever lands first; a later one changes nothing).
  const marked = own ?? lease.session;
  // marks dropped by the row's own stamps only: a session over by this machine's clock (an operator's, not
  // the coordinator's within clockSkewMs) proves nothing, and a mark dropped unread leaves its holder leading
  const judge = { now: Number.NEGATIVE_INFINITY, skewMs: ctx.config.clockSkewMs };
  const full = as(`session ${marked} of `, it, ` already holds ${MAX_ENDED_TERMS} ended terms its holder may not have read yet (more of its terms ended within a lease duration): nothing was written - run the command again in a few seconds (a term whose session stopped renewing the coordinator ends itself)`);
  // a session row full of marks its owner may not have read yet: said before the question
  if (marked !== undefined && !(await ctx.identities.canMarkTermEnded(marked, name, judge))) throw new CliError(full);
  await confirmChange(ctx, name, as('end the term of ', it, ` on lease ${name} (fencing token ${term.fencingToken})${why === 'force' ? ' without asking it' : ''}`), changesOf(lease, ending(now), now), [warnings[why]], namesOf(lease, candidates));
  // marked before it is ended, so no term ends unmarked: the row may have filled while the question was open.
  // A mark that stands without the release (refused, or never sent) names this term only: its holder ends it itself at the mark
  const ended = as('the end of ', it, `'s term on lease ${name} (fencing token ${term.fencingToken})`);
  if (marked !== undefined) {
    const mark = as('the end of ', it, `'s term (fencing token ${term.fencingToken}) marked on session ${marked}`);
    // each write told apart if the command is interrupted (or fails) while it is unanswered: the mark, then the term's end
    sending(ctx, mark, `the end of the term on lease ${name}`);
    try {
      // (false: nothing written, the row gone or the end already marked)
      if (await ctx.identities.markTermEnded(marked, name, term.fencingToken, judge)) landed(ctx, name, mark);
    } catch (e) {
      if (e instanceof EndedTermsFullError) throw new CliError(full);
      if (e instanceof ConflictError) throw new CliError(as(`session ${marked} of `, it, ` kept changing while the term's end was marked on it: nothing was written - run the command again`));
      throw e;
    }
  }
  // the stamp the shown change's renewTime stands for: the time of the write, conditioned on the term alone (not on the read)
  const at = ctx.clock.now();
  sending(ctx, ended);
  const released = await ctx.leases.releaseTerm(name, term, at);
  if (released) landed(ctx, name, as(`lease ${name}: `, it, `'s term (fencing token ${term.fencingToken}) ended`));
  const written = released ?? (await releasedByThis(ctx, name, term, at));
  if (!written)
    throw new CliError(
      as('the row changed while writing: the term of ', it, ` (fencing token ${term.fencingToken}) had already ended; ${marked !== undefined ? `only its end was marked, on session ${marked} (it names that term alone)` : 'nothing was written'} - run the command again to see the lease now`),
    );
  if (ctx.output === 'json') return printJson(ctx, written);
  say(ctx, as(`released lease ${name}: `, it, `'s term (fencing token ${term.fencingToken}) is over`));
  say(ctx, why === 'force' ? as(it, ` was not asked to stop: it may act until its next renewal, at most ${lease.leaseDurationSeconds}s from now; its writes fenced with token ${term.fencingToken} fail from now on`) : as(it, ` had stopped renewing; its writes fenced with token ${term.fencingToken} fail from now on`));
  say(ctx, nextHolder(ctx, as, name, written, holder, candidates, at));
}

/** Why a term ran out, as it was judged (SessionSeen.judging): the session it was judged by, or its own stamp. */
function ranOutWhy(lease: Lease, session: SessionSeen | undefined): string {
  if (!session) return 'it stopped renewing';
  const own = session.judging?.own;
  const by = own === undefined ? session.row : own;
  if (by && leftStamp(lease, by) !== undefined) return `its process left it to run out on its session ${by.name}`;
  if (own === null) return `its session ${session.name} ${session.row ? 'does not vouch for it' : 'is gone'}, and no session of its process is left`;
  if (own) return `its process's session ${own.name} stopped renewing`;
  return `its session ${session.name} ${session.row ? 'stopped renewing' : 'is gone'}`;
}

/** Asks the holder to yield (preferredHolder), then waits until its term is over. */
async function askToYield(ctx: CliContext, read: LeaseRead, session: SessionSeen | undefined, term: Term, candidates: readonly Candidate[], now: number, timeoutMs: number, waiting: () => Pace): Promise<void> {
  const lease = read.item!;
  const name = lease.name;
  const holder = term.holderIdentity;
  const force = `\`conclave release ${name} --force\``;
  // refusals name the holder escaped where it passes for a candidate (worker-rn holding, worker-m its candidate), as describe shows them
  const as = namerOf(lease, candidates);
  const it = { name: holder };
  // Only a coordinated worker (one with a candidate row) honours preferredHolder.
  if (!candidates.some((c) => c.name === holder)) {
    throw new CliError(as(it, ` has no candidate row on lease ${name}, so it runs without the coordinator (NoCoordination) and does not answer a request to yield; ${force} ends its term without asking`));
  }
  const already = lease.preferredHolder !== undefined && lease.preferredHolder !== holder ? lease.preferredHolder : undefined;
  // Whom to name: the candidate the coordinator prefers over the holder, judged as decide() judges a
  // held lease (the lease as judged; live, not standing down nor passed over, ranked with the lease's
  // preferred locations), the last holder passed over while its row shows no life since the term
  // began (isDeparted): before, that one could be named, and the coordinator withdrew the request
  const departed = candidates.find((c) => c.name !== holder && isDeparted(c, lease));
  const others = candidates.filter((c) => c.name !== holder && c !== departed);
  const to = already ?? standings(lease, others, now, ctx.config, judgedLease(lease, session, now)).best?.candidate.name;
  if (!to) {
    const passed = departed ? as(' (', { name: departed.name }, `, its last holder, has shown no life since this term began: the coordinator passes it over)`) : as('');
    throw new CliError(joined(as(`no other candidate of lease ${name} can lead now`), passed, as(', so there is nobody for ', it, ' to yield to (the coordinator would elect ', it, ` again); ${force} ends its term anyway`)));
  }

  const patch: LeasePatch = { set: { preferredHolder: to } };
  // the coordinator elects no one there (NoCoordination, a third party's strategy): nobody is elected back, and the one named is not elected either
  const unelected = notElected(lease, candidates, now, ctx);
  const back = unelected
    ? joined(`note: the coordinator does not elect on lease ${name} (`, unelected, '): once ', as(it), ` has released, ${takenBy(lease)} - perhaps `, as(it), ' again, not necessarily ', as({ name: to }))
    : electedBack(lease, candidates, holder, to, now, ctx.config, as);
  const ask = async (r: LeaseRead) => {
    await writeAsShown(`lease ${name}`, r, patch, now, { reread: () => readLease(ctx, name), write: (rr, p) => (sending(ctx), ctx.leases.write(rr, p)), same: (l) => inTerm(l, term) });
    landed(ctx, name, joined(`lease ${name}: `, namesIn(namesOf(lease, candidates), changedFields(changesOf(r.item, patch, now)))));
  };
  const giveUp = `giving up after ${span(timeoutMs)}`;
  const confirm = (r: LeaseRead) => confirmChange(ctx, name, as('ask ', it, ` to yield lease ${name} (fencing token ${term.fencingToken}) to `, { name: to }, ': it stops and releases at its next renewal'), changesOf(r.item, patch, now), back ? [back] : [], namesOf(lease, candidates));
  // a request already on the lease is only waited for: writing one again (once withdrawn) is this command's write, confirmed first
  let confirmed = false;
  if (already) {
    note(ctx, as(it, ` is already asked to yield lease ${name} to `, { name: already }, ` (preferredHolder); waiting for it to release (${giveUp})...`));
    // this term, as the confirmed ones are: not run again to act on the next term (withDb)
    ctx.progress.waiting = { lease: name, what: as(it, ` to release lease ${name} (fencing token ${term.fencingToken})`) };
  } else {
    await confirm(read);
    confirmed = true;
    await ask(read);
    note(ctx, as('waiting for ', it, ` to release lease ${name} (${giveUp})...`));
    // from here an interrupt ends the wait, which says what stays on the lease (main.ts leaves it to the wait)
    ctx.progress.waiting = { lease: name, what: as(it, ` to release lease ${name} (fencing token ${term.fencingToken})`) };
  }
  // from here Ctrl-C ends the wait (listened for only now: before, the signal ended the process)
  const pace = waiting();

  const start = ctx.clock.now();
  let lastProgress = start;
  // when the term ends, as judged at the last read that showed it held: a term gone from the row by then
  // was not released, it ran out (a frozen holder's successor takes the lease as soon as it can)
  let ends = leaseExpiresAt(judgedLease(lease, session, now));
  let asked = 1;
  let failing = false; // the last read met a passing fault (told once)
  // the request as last seen: on the lease (`shown`: the last read showed it, or this command's first
  // write did), written again after the coordinator withdrew it with no read since (`rewritten`), or
  // withdrawn (`withdrawn`). An interrupt says that much and no more (before: "the request stays",
  // though the coordinator had withdrawn it)
  let left: 'shown' | 'rewritten' | 'withdrawn' = 'shown';
  const describe = `\`conclave describe lease ${name}\``;
  const stopped = (): Named => {
    const times = asked - 1 === 1 ? 'once' : `${asked - 1} times`;
    if (left === 'withdrawn') return as(`stopped waiting: the coordinator withdrew the request (the last read of lease ${name} showed no preferredHolder), so nothing is left on the lease and `, it, ' leads on; run the command again to ask again');
    if (left === 'rewritten') return as(`stopped waiting: the coordinator withdrew the request ${times} (it judges `, it, ` its best candidate), and this command wrote it again; no read since showed whether it stays - ${describe} shows whether it does, and whether `, it, ' has released');
    const again = asked > 1 ? `; the coordinator withdrew it ${times} while this command waited, and may again` : '';
    return as(`stopped waiting: the request stays on lease ${name}, and `, it, ` releases when it sees it at its next renewal${again} (${describe} shows whether it has)`);
  };
  const poll = async () => {
    if (!pace.signal.aborted) await pace.sleep(POLL_MS);
    if (pace.signal.aborted) throw new InterruptedError(stopped(), pace.signal);
  };
  for (;; await poll()) {
    let current: LeaseRead;
    let s: SessionSeen | undefined;
    try {
      current = await readLease(ctx, name);
      s = inTerm(current.item, term) ? await readSession(ctx, current.item) : undefined; // after the lease, as the coordinator reads it
    } catch (e) {
      // no answer in time, a connection lost, throttled: read again at the next poll, until the wait's end (as watch does)
      if (!isPassingFault(e) || ctx.clock.now() - start >= timeoutMs) throw e;
      if (!failing) note(ctx, `a read of lease ${name} failed (${faultText(e)}); reading again every ${POLL_MS} ms (Ctrl-C stops)`);
      failing = true;
      continue;
    }
    failing = false;
    const l = current.item;
    if (s?.refused) throw new CliError(`${s.refused.message}; the request to yield stays on the lease`);
    const at = ctx.clock.now();
    if (!inTerm(l, term)) return await yielded(ctx, as, name, term, l, candidates, at, endedBy(l, ends));
    const judgedNow = judgedLease(l, s, at);
    if (vacancy(judgedNow, at, ctx.config.clockSkewMs).vacant) return await yielded(ctx, as, name, term, l, candidates, at, 'ranOut');
    ends = leaseExpiresAt(judgedNow);
    left = l.preferredHolder === undefined ? 'withdrawn' : 'shown';
    if (l.preferredHolder === undefined) {
      // interrupted while this read was in flight: the wait ends here, the request not written again
      if (pace.signal.aborted) throw new InterruptedError(stopped(), pace.signal);
      if (asked >= ASKS) throw new CliError(as(`the coordinator withdrew the request to yield ${asked} times before `, it, ' saw it (it judges ', it, ` its best candidate); ${force} ends the term anyway`));
      note(ctx, as('the coordinator withdrew the request before ', it, ' saw it (it judges ', it, ' its best candidate); asking again'));
      if (!confirmed) await confirm(current);
      confirmed = true;
      await ask(current);
      asked++;
      left = 'rewritten';
    }
    if (at - start >= timeoutMs) {
      throw new CliError(
        as(it, ` did not release lease ${name} within ${span(timeoutMs)}, though it renews (last ${lastRenewal(l, s, at)}): it may not honour preferredHolder (a worker without coordination, or an older SDK). The request stays on the lease; ${force} ends the term now`),
      );
    }
    if (at - lastProgress >= PROGRESS_MS) {
      note(ctx, as('still waiting for ', it, `: ${span(at - start)} so far (it renewed ${lastRenewal(l, s, at)})`));
      lastProgress = at;
    }
  }
}

/**
 * A warning, before the question, when the holder asked to yield is the coordinator's best candidate
 * all the same: it is elected back as soon as it has yielded (a new term, its work stopped and
 * started again), so leadership does not move. Pinned (set-priority, preempt): the pin named with
 * the command that clears it; otherwise why it ranks first, and the command that moves it for good.
 */
function electedBack(lease: Lease, candidates: readonly Candidate[], holder: string, to: string, now: number, config: ElectionConfig, as: Namer): Named | undefined {
  const { best, preferred } = standings(lease, candidates, now, config);
  if (best?.candidate.name !== holder) return undefined;
  const [mine, theirs] = [rank(best.candidate, now, preferred), rank(candidates.find((c) => c.name === to)!, now, preferred)];
  // first only by the tie-breaks (registered earlier, a smaller name): `to`, once it holds the
  // lease, keeps it (the coordinator preempts on merit alone: isBetterThanHolder)
  if (!mine || !theirs || compareMerit(mine, theirs) >= 0) return undefined;
  const it = { name: holder };
  const after = ' as soon as it has yielded: leadership moves for a moment only (a new term and fencing token, its work stopped and started again)';
  if (mine.priority > theirs.priority) {
    const c = best.candidate;
    const expiry = c.priorityExpiresAt === undefined ? 'with no expiry' : `until ${relative(c.priorityExpiresAt, now)}, ${new Date(c.priorityExpiresAt).toISOString()}`;
    return as('warning: ', it, ` is pinned on lease ${lease.name} at priority ${mine.priority} (${expiry}; \`conclave preempt\` or \`conclave set-priority\`), above `, { name: to }, `'s ${theirs.priority || 'none'}: the coordinator elects it back${after}. To move leadership for good, end the pin first: \`conclave set-priority ${lease.name} `, { arg: holder }, ' --clear`');
  }
  return as('warning: ', it, ' is still the coordinator\'s best candidate, ranked first for its ', ...whyBetter(mine, theirs, preferred), `: the coordinator elects it back${after}. To move leadership for good: \`conclave preempt ${lease.name} --to `, { arg: to }, '`');
}

/** A row as without its holder: a term judged run out, the coordinator's to end. */
function vacated(l: Lease): Lease {
  const { holderIdentity: _holder, ...rest } = l;
  return rest;
}

/**
 * How a term gone from the row ended, by the row that followed it: a term taken (`acquireTime`), or
 * a vacant row written (`renewTime`, the release's stamp), at or after the term's end as last judged
 * (`ends`) ran out: its holder never let it go (stopped, frozen), and a successor took the lease, or
 * the coordinator ended it, once it could. Earlier, its holder released it, or handed it over.
 */
function endedBy(after: Lease | undefined, ends: number | undefined): 'yielded' | 'ranOut' {
  const at = after?.holderIdentity !== undefined ? after.acquireTime : after?.renewTime;
  return at !== undefined && ends !== undefined && at >= ends ? 'ranOut' : 'yielded';
}

/**
 * The term is over: the holder released it (after it stopped acting), or it ran out. A lease
 * another candidate holds by then (a successor takes it at once) is followed by the coordinator's
 * next step on it, as the other writes say it (decideWithSuccession on the lease as judged, its
 * session read after it): the holder that yielded may still be the best candidate, elected back.
 * With `-o json`, the row as it is, with how the term ended (`release`).
 */
async function yielded(ctx: CliContext, as: Namer, name: string, term: Term, row: Lease | undefined, candidates: readonly Candidate[], now: number, how: 'yielded' | 'ranOut'): Promise<void> {
  if (ctx.output === 'json') return printJson(ctx, row ? { ...row, release: { outcome: how, holderIdentity: term.holderIdentity, fencingToken: term.fencingToken } } : null);
  const holder = term.holderIdentity;
  const it = { name: holder };
  // a term judged run out is still on the row: nobody holds the lease, whatever the row says (its strategy kept, for who takes it next)
  const after = inTerm(row, term) ? vacated(row) : row;
  // as the --force warning says it: a holder that did not stop by itself may act when it wakes
  const frozen = as('; ', it, ` may not have stopped: a process that is frozen (paused, swapped out) acts when it wakes, before it can look. Fencing refuses its writes with token ${term.fencingToken} from now on, but not what it does outside fenced writes`);
  const ranOut = as(it, `'s term on lease ${name} (fencing token ${term.fencingToken}) ran out: it stopped renewing without releasing, and `);
  say(
    ctx,
    how === 'yielded'
      ? as(it, ` yielded lease ${name}: its term (fencing token ${term.fencingToken}) is over; writes fenced with it fail from now on`)
      : inTerm(row, term) || !after
        ? joined(ranOut, 'the coordinator treats the lease as vacant', frozen)
        : after.holderIdentity !== undefined
          ? joined(ranOut, as({ name: after.holderIdentity }, ' took the lease once the term was over'), frozen)
          : joined(ranOut, 'the term was ended once it had run out', frozen),
  );
  say(ctx, nextHolder(ctx, as, name, after, holder, candidates, now));
  if (!after?.holderIdentity) return;
  // its candidates as they are now (the one that yielded renews on: the coordinator counts it again,
  // isDeparted), and the session the lease is held on; the term is over whatever these reads meet:
  // a failure is told, not the command's exit (as set-locations tells its own)
  let seen: [Awaited<ReturnType<typeof listVouched>>, SessionSeen | undefined];
  try {
    seen = await Promise.all([listVouched(ctx, name), readSession(ctx, after)]);
  } catch (e) {
    const told = await explain(e, ctx.target, ctx.client);
    return note(ctx, `the coordinator's next step could not be judged: its candidates could not be read (${told instanceof Error ? told.message : String(told)})`);
  }
  const [{ candidates: read }, session] = seen;
  // a holder that yielded (its term not run out) renews its candidacy at once (lib/sdk/step.ts
  // 'rejoin'): judged as the coordinator judges it once that renewal lands, a moment from now. The
  // row as read may not show it yet, and the coordinator passes over a last holder not seen since
  // the term began (isDeparted): before, a pinned holder said to be elected back at once was passed
  // over here, and another candidate said to be designated successor
  const standing = how === 'yielded' ? read.map((c) => (c.name === holder && c.renewTime < now ? { ...c, renewTime: now } : c)) : read;
  const step = session?.refused ? [UNJUDGED_STEP] : nextStepOn(name, after, judgedLease(after, session, now), standing, now, ctx.config);
  say(ctx, namerOf(after, standing)("the coordinator's next step: ", ...step));
}

/**
 * After a refused release: the row as this command's own release left it, if that is what it is
 * (no holder, the ended term's holder as the last, this command's stamp) — the write landed and its
 * answer was lost (the AWS SDK sent it again, and the copy was refused by it).
 */
async function releasedByThis(ctx: CliContext, name: string, term: Term, now: number): Promise<Lease | undefined> {
  const row = (await readLease(ctx, name)).item;
  return row && row.holderIdentity === undefined && row.lastHolderIdentity === term.holderIdentity && row.renewTime === now ? row : undefined;
}
