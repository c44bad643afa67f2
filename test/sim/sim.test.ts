/**
 * The simulator in CI: a fixed wall-clock budget of fault schedules on fresh random seeds (printed,
 * so a failure can be replayed with `npm run sim -- --seed N`), every one judged by the history
 * checker; the seeds that ever failed, as regression rows; and a seed replays exactly.
 */
import { describe, expect, it, vi } from 'vitest';
import { systemClock } from '../../lib/clock.js';
import { formatVerdict } from '../../lib/history/checker.js';
import { generateSchedule, type PeerFault } from '../../sim/schedule.js';
import type { PlantedBug } from '../../sim/bugs.js';
import { HANG_MS } from '../../sim/pool.js';
import { DEFAULT_SETTINGS, runWorld } from '../../sim/world.js';

process.env['POWERTOOLS_METRICS_DISABLED'] ??= 'true';
const BUDGET_MS = 120_000;
/** Seeds that once found a violation: each must stay fixed. (Found before 2026-12-06's slowDynamo and streamsDown and 2026-12-08's shortPauses, dynamoOutage, slowBroker and partialThrottle: a seed found with them needs a field saying so.) */
/** `mixed`: a world of `npm run sim -- --mixed` (a fleet part way through a change). */
const REGRESSIONS: { seed: number; found: string; mixed?: boolean; kept?: 'some' | 'all' }[] = [
  { seed: 13308355, kept: 'some', found: "a simulator bug (--kept some): two elector stops of job-0 fell on w0 while it was frozen; the first's abort waited on the process's gate, so the second saw the elector not yet stopping, and both started a new elector; the second was refused (DuplicateIdentityError) but replaced the running one in the process's elector list, so a later pause named the refused start-up, not the leader: its frozen leader's 16.1 s overlap was not forgiven (fixed: an elector is stopped once, sim/faults.ts stopElector)" },
  { seed: 12800135, found: "a machine whose clock runs 4 % fast stopped its terms at each jump of DynamoDB's time; its next poll read only its session, judged by its view of the row from before it led, and ended that old term on the row (refused): nobody read the row until a wake or the term ran out, 124 s leaderless over the run against the 120 s bound (fixed: a stopped term's next poll reads the lease row)" },
  { seed: 6306473, mixed: true, found: "an operator deleted a session-held row while the coordinator was down; a worker without a Session, restarted before and never seeing a held row, found it gone, then a row created again without a holder (its election held for the deleted term), and took it at the three-term fallback counted from the missing row, before the holder heard of the delete: 137.7 ms of two leaders" },
  { seed: 6303933, found: "an operator moved a handed-over term's fencing token back below the term before it; the coordinator's next write adopted the moved token as the term's copy, and the heir led with it: tokens went back, and its fenced writes were accepted over the earlier term's" },
  { seed: 1666515530, found: 'an operator deleted a session-held row while the coordinator was down; a follower restarted after the delete never saw the row and took the lease at the three-term fallback while the holder led on until its backstop read: 8.6 s of two leaders (present before 2026-11-29 evening; fixed: a row never seen waits out the session fallback)' },
  { seed: 5105826, found: 'an operator deleted a session-held row as a coordinator outage began; the candidate stream created the row and opened an election, which the timer closed before the lease stream reached the delete: 469 ms of two leaders (fixed: an election on a missing row closes only once the lease stream has seen the row: awaitsStream)' },
  { seed: 61866678, found: "an eventually consistent copy showed a term off its holder's session a moment before the holder moved it onto its new one; the row was then deleted with the functions down, and the follower's fallback waited 45 s, not the session's 78 s, while the holder led on its session until its backstop read: two leaders for 6.4 s (fixed: a holder whose instance names a session's process counts as on a session for the fallback)" },
  { seed: 7196, found: 'a worker restarted while its SIGTERMed process was still frozen: two processes of one worker (a simulator bug; fixed in sim/world.ts)' },
  { seed: 5025, found: "a renewal that landed 20 s late moved renewTime back; the coordinator's tick judged the live term expired and ended it (fixed: LeaseStore.renewTerm never moves renewTime back)" },
  { seed: 561438652, found: 'a worker frozen between its acquisition landing and the answer woke past its renew deadline and started leading a term already taken, with a lower token than the leader before it (fixed: LeaderElector gives such a term back)' },
  { seed: 251652818, found: 'a simulator bug: a process that had exited after SIGTERM was not marked gone, so a kill aimed at it started a second process of the same worker beside its successor (and the EC2 instance\'s STOPPED event ended the live one\'s terms)' },
  { seed: 522261025, found: "a partition that answered nothing (no reply, as on a black-holed route) held a scheduled job's fenced write past its term: the run's work never saw its signal abort, and the history judged it running beside the next run for 20.1 s (fixed: a fenced write still unanswered when its term ends is abandoned with a LeaseLostError)" },
  { seed: 4301967, found: "an operator deleted a session-held row; the lease stream's mark on the holder's session timed out (it landed 7.4 s later), so the record failed before the next election was held, and the tick elected on the missing row at once: 393.9 ms of two leaders (fixed: the stream holds the next election first, long enough without the mark, then marks and cuts the hold)" },
  { seed: 2165, found: 'a scheduled job (withLease, run-once) frozen past the next period ran its old window after the next window had run: the marker kept only the last window (fixed: the lease keeps the 32 newest completed windows)' },
  { seed: 1011, found: 'a scheduled job running when its process was stopped (SIGTERM) never recorded its end: a simulator bug (fixed: a stop aborts the runs, and the process exits once they have given the lease up)' },
  { seed: 1198, found: "a machine 4 % slow (clock drift): at each jump of its measurement of DynamoDB's time its electors stepped down, but its Session renewed on, keeping their leases alive and leaderless for 52 s (fixed: a Session ends on a jump)" },
  { seed: 611177157, found: 'a scheduled job frozen while its run-once read was in flight woke past its renew deadline and still started its function, with a token older than the run that had taken the lease meanwhile (fixed: withLease never starts fn on a term that is already over)' },
  { seed: 1846405520, found: "a successor learnt its holder's cadence from lease stamps 275 s apart (the term had lived on a session between) and slept 259 s after a takeover whose answer was lost: 260 s without a leader (fixed: no cadence from a gap longer than the lease, and a successor never sleeps past the term's end)" },
  { seed: 323828829, found: "a machine 4 % slow that the coordinator prefers steps down at every clock jump and takes the lease back seconds later: 62.9 s leaderless in all after the heal (not a bug: beyond the SDK's drift bound liveness is judged against twice the bound)" },
  { seed: 1368225001, found: "an operator deleted a live lease row; the coordinator elected the next leader 95 ms before the old one's next renewal told it: the overlap fencing covers, now counted apart by the checker (revokedOverlaps)" },
  { seed: 2083594933, found: "an operator deleted a held lease 0.6 s after a coordinator tick; the lease stream's function did not reconcile a REMOVE, so the election waited for the next tick: 61.1 s without a leader after the heal (fixed: a lease deleted while held is reconciled from the stream at once)" },
  { seed: 720133, found: "a second process started under a worker's identity on the worker's own EC2 instance id: its exit sent the instance's STOPPED event, and the platform function vacated the live worker's leases (a simulator bug: the twin runs on a host of its own)" },
  { seed: 942, found: "a peer of the same lease rewrote a session-held lease's session to a row that does not exist while the coordinator's functions were down: observers judged the term by that missing row and a follower took the lease while its holder led on its own session: 9.8 s of two leaders (fixed: a session vouches only for its own process's terms; the holder's read ends a term it finds moved off its session)" },
  { seed: 1448349414, found: "a fencing token moved up under a leader on a session, whose own end of the term was refused (a denied UpdateItem): the row kept naming it with a token its termToken copy did not match, no renewal could confirm that, and its live session kept the term alive: 163.7 s leaderless (fixed: a start-up the row names with a token other than the copy ends the term on the row)" },
  { seed: 970345, found: "a leader whose lease's session a peer rewrote to a missing row stopped (deposed) and ended its term on the row, but its next poll read the row before that end landed and confirmed the term again: the renewal landed first, the end after it, and the next leader took the lease while it led on, 630 ms of two leaders (fixed: a start-up never confirms a term its own leader ended; it ends it again)" },
  { seed: 962116, found: "a holder's renewal onto its new session landed with its answer lost; a peer redirected the lease, the lease stream marked the term ended on that session, the holder's next renewal put the term back there, and the lease stream's put-back rule ended it on the row while it led: 25.9 ms of two leaders at 3c19b7f (fixed: the term is left to its holder, which stops at the mark; later commits changed this seed's world, so test/sdk/session.test.ts pins the case)" },
  { seed: 12995460, found: "an operator deleted w2's live session row (the simulator's session-row delete) 4 s before a tick, while earlier session rows of w2's process (ended in a partition and by a jump of DynamoDB's time) were not yet collected; the tick judged the term by the freshest of them, its stamp over, and elected at once: 101.3 ms of two leaders (fixed: vanishedHold's hold applies whatever row of the holder's process is left, unless it names the term as left)" },
  { seed: 1990071303, found: "a fencing token moved back under a leader on a session (issue 36's faults): the coordinator's next write adopted the moved token as the term's copy, and the deposed holder confirmed the rewritten row as its own term, 144,251 tokens below the one it had led (token and fencing violations) (fixed: a start-up never confirms a term below a token it has led; it ends it on the row)" },
];

/**
 * Known bugs planted into the real code one at a time (sim/bugs.ts), each with the first seed from
 * 5000 on that catches it (`npm run sim -- --budget 100 --first 5000 --plant <bug>`): the planted
 * run must fail, and the same seed without the plant must pass — so the checker catches the bug,
 * not the schedule. A change to the code may move which seed catches a bug first: the row then
 * fails and names the search (`limit` schedules from 5000) that finds the new one.
 */
const PLANTED: { bug: PlantedBug; seed: number; limit: number }[] = [
  { bug: 'electionKeepsToken', seed: 5000, limit: 300 },
  // 5001 → 5017: the hand-off's cut 3 (issue 38, item 3) with item 2's merge
  { bug: 'renewalWithoutTokenCondition', seed: 5046, limit: 300 }, // 5017 → 5001: cut 3's early heir read gone (3c82cce) with the backoff-recovery read; → 5038 with the clock estimate keeping its bounding samples (e70bfc5); → 5046: an election on a missing row waits for the lease stream (awaitsStream)
  { bug: 'expiryByHolderTimestamp', seed: 5002, limit: 300 },
  { bug: 'leaderIgnoresRenewDeadline', seed: 5071, limit: 700 }, // 5615 → 5071: one election-timer chain a process, a stop's leaving tried again after faults (2026-12-06, eighth); 5639 → 5615: a Session never renewed past its renew deadline, a candidate's failed renewal retried with backoff, one term-end chain a process (2026-12-06); 5228 → 5639: renewals paced to a slow DynamoDB, a woken leader renewing when due (edb811f4, 7e8bd4cf)
  // issue 38 (the second successor, the liveness checks) moved three seeds: 5000 → 5001 here, 5043 → 5045 and 5001 → 5068 below;
  // its item 4 (a watcher stays locked on the holder's cadence: fewer reads) moved this one again, 5001 → 5151
  // 5035 → 5000: cut 3
  { bug: 'platformEventByArrival', seed: 5142, limit: 300 }, // → 5142: a stopped task's candidate rows collected (collectedAt, Candidate Expired) and a holder removed by hand recorded by the lease stream; → 5030: a stop's leaving tried again after faults (2026-12-06, eighth); → 5060: DynamoDB's pace judged by the slower answers (7e8bd4cf); 5000 → 5005: cut 3's early heir read gone (3c82cce) with the backoff-recovery read; → 5035: requests bounded (bounded-client.ts); → 5094: a Session's failed renewal tried again a retry period after it went out; → 5000: the same; → 5035: a function that writes a lease (a reconcile, the platform's vacate) wakes it; → 5018: a session-held term judged by its session row's stamp; → 5107: a worker whose work failed held off its next term; → 5113: a leader whose wall clock gained on its monotonic one (a forward clock step) reads its lease; → 5107: the clock since boot tells a sleep, a wall-clock step costs nothing; → 5000: a held lease's re-election waits a lease duration; → 5030: DynamoDB's time re-centred at start-up and after a jump, a successor following stamps that step back, the second successor chasing the successor's take; → 5000: a stopped NoCoordination elector reads and releases a term it stopped leading at its deadline, and the leaving decided in the step; → 5030: a stopped host's other candidate rows go with its holder's, and an ECS term begun after its task stopped ends
  { bug: 'successorWithoutRevision', seed: 5206, limit: 300 }, // 5003 → 5206: 5003's world drew a slow broker (Schedule.slowBroker, 2026-12-08), and 5206's a short freeze; 5003 → 5001: the term-end timer (a silent holder's lease judged again when its term runs out); 5001 → 5038: the silent-holder read; → 5007: requests bounded; → 5003: a session-only poll reads the lease where no row vouches for the term or names it as left
  // a graceful stop now hands the lease over: releases are rarer, and a late hand-off is the bug's other half
  // the watcher's cadence lock (issue 38, item 4, afd0244) moved it again, 5045 → 5124
  // issue 38 item 2 (the session judgement; the lease stream's put-back rule gone) moved it, 5109 → 5416
  // 5416 → 5227: cut 3
  { bug: 'releaseWithoutTermCondition', seed: 5416, limit: 1400 }, // 5087 → 5416: 5087's world drew two short freezes (Schedule.shortPauses, 2026-12-08); 5321 → 5087: one election-timer chain a process, a stop's leaving tried again after faults (2026-12-06, eighth); 5291 → 5321: a Session never renewed past its renew deadline, a candidate's failed renewal retried with backoff, one term-end chain a process (2026-12-06); → 5291: renewals paced to a slow DynamoDB (edb811f4, 7e8bd4cf); → 5159: a stop waits on DynamoDB at most 10 s; → 5321: with no lease row, a candidacy reads its own row for an identity claim; → 5087: a term lost before any renewal counts as a failed start, and a leader waits on a request until 1 s before its deadline; 5227 → 5755: cut 3's early heir read gone (3c82cce) with the backoff-recovery read; 5755 → 5787: a leader that lost its term stands again; 5787 → 6396: a candidate that let its ping pass is named second rather than nobody; 6396 → 5418: the term-end timer; → 5432: requests bounded; → 5888: a renewal always moves renewTime forward; → 5321: a partition's requests hang (no reply), a renewal bounded by its deadline; → 5446: an elector's requests bounded by its retry period; → 5210: the same; → 5397: a report no coordinator answers taken after 10 s; → 5321: a function that writes a lease (a reconcile, the platform's vacate) wakes it; → 5088: a candidate on a session lives by it (its rows written rarely, its sessions read); → 5159: a term first seen long after its stamp counted from the stamp; → 5426: a stopped term taken again with a higher token; → 5035: a worker whose work failed held off its next term; → 5159: a held lease's re-election waits a lease duration; → 5413: a leader in doubt of its clock renews once a read clears it, and reads within half its time left; → 5853: a stopping follower gives up a hand-over to it; → 5087: DynamoDB's time re-centred at start-up and after a jump, a successor following stamps that step back, the second successor chasing the successor's take; → 5196: the lease stream reconciles a write naming a departed heir; → 5087: a follower's and a Session's backoff counted from the failed try's send; → 5159: a NoCoordination elector reads its lease before it counts as started (a missing table refused)
  // sessions run in about half the worlds (issue 17): 5001 is the first of them from 5000. Planted
  // again (issue 38, item 4): hiding session rows no longer planted it once a term on a missing row
  // counted as unvouched (alive, to the coordinator); the plant now strips `session` from the leases
  // the coordinator reads, and 5001 catches it again (it had drifted to 5068, then out of reach)
  { bug: 'coordinatorIgnoresSession', seed: 5003, limit: 300 }, // 5001 → 5013: a candidate on a session lives by it; → 5001: a mark that fails on a fault holds the election (the lease read after a mark); → 5015: a worker whose work failed held off its next term; → 5014: the lease stream reconciles a write naming a departed heir, with DynamoDB's time re-centred at start-up; → 5019: a confirmation or renewal onto a session that may have landed unanswered holds the session's renewals; → 5003: a follower's and a Session's backoff counted from the failed try's send
  { bug: 'followerIgnoresSession', seed: 5001, limit: 300 },
  // faults as users bring them (issue 36), in half the worlds: caught by the requests and stuckLease rules
  { bug: 'hotRetryLoop', seed: 5012, limit: 300 }, // 5012 → 5007: the stream functions down while the tick runs (Schedule.streamsDown) in 5007's world; → 5012: a session-only poll reads the lease where no row vouches for the term or names it as left
  { bug: 'zombieLeader', seed: 5000, limit: 300 },
  // renewalIgnoresAnswer is no longer caught here (none in a 900 s search from 5000): a fenced write the fence
  // refuses has the leader read its lease and stop, and every simulated leader writes fenced. The
  // exhaustive check still catches it (test/model/plants.test.ts), where no write tells the leader.
  // The retry storm b76c948a fixed (a recovery waking every follower of the process backing off at
  // once) is not planted: tried as a plant, none of 400 worlds from 5000 caught it (41 of them with
  // the fleet's shared throttling): a simulated process follows two leases, so a recovery wakes one
  // or two followers, and the requests rule's bound (468 a lease in 15 s) is far above such a
  // storm's pace. test/sdk/recovery-storm.test.ts catches it with twenty followers in one process.
];

const run = (seed: number, mixed = false, kept?: 'some' | 'all') => runWorld(generateSchedule(seed, { workers: DEFAULT_SETTINGS.workers, durationMs: DEFAULT_SETTINGS.durationMs, mixed, ...(kept ? { kept } : {}) }), DEFAULT_SETTINGS, { trace: true });

describe('deterministic simulation', () => {
  it('a seed replays exactly: the same timeline, the same counts', async () => {
    const [a, b] = [await run(7), await run(7)];
    expect(a.timeline.length).toBeGreaterThan(10);
    expect(b.timeline).toEqual(a.timeline);
    expect(b.counts).toEqual(a.counts);
    expect((await run(8)).timeline).not.toEqual(a.timeline);
  });

  it('a world whose every onError throws (a broken alarm) runs exactly as it would without: the same timeline, counts and verdict; what they threw is a process warning', async () => {
    const warned: unknown[] = [];
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation((w: unknown) => void warned.push(w));
    try {
      const opts = { workers: DEFAULT_SETTINGS.workers, durationMs: DEFAULT_SETTINGS.durationMs, mixed: true };
      let told = 0;
      let sessionsTold = 0;
      for (const seed of [9001, 9002, 9003]) {
        const schedule = generateSchedule(seed, opts);
        const [fine, broken] = [await runWorld(schedule, DEFAULT_SETTINGS, { trace: true }), await runWorld(schedule, DEFAULT_SETTINGS, { trace: true, brokenAlarms: true })];
        // before the fix: runs rejected (runRejected:Error, session:runRejected), electors missed their session's end
        expect(broken.timeline).toEqual(fine.timeline);
        expect(broken.counts).toEqual(fine.counts);
        expect(broken.verdict.ok).toBe(fine.verdict.ok);
        told += fine.counts['workerErrors'] ?? 0;
        sessionsTold += fine.counts['session:errors'] ?? 0;
      }
      // the alarms were rung, and each throw became a warning
      expect(told).toBeGreaterThan(0);
      expect(sessionsTold).toBeGreaterThan(0);
      expect(warned.filter((w) => w instanceof Error && /onError threw while told/.test(w.message)).length).toBeGreaterThanOrEqual(told + sessionsTold);
    } finally {
      spy.mockRestore();
    }
  });

  it("a mixed fleet (--mixed) changes only who runs a Session (in worlds that have sessions, one worker runs none, and runs its electors without; its rewrite of a lease's session is to a missing row, having no session of its own) and, in some worlds, one worker's timings and its role (no candidates Query for a while)", async () => {
    const opts = { workers: DEFAULT_SETTINGS.workers, durationMs: DEFAULT_SETTINGS.durationMs };
    const seeds = Array.from({ length: 40 }, (_, i) => 9000 + i);
    for (const seed of seeds) {
      const [plain, mixed] = [generateSchedule(seed, opts), generateSchedule(seed, { ...opts, mixed: true })];
      const { session: ps, ...prest } = plain;
      const { session: ms, timingScale, userFaults, peerFaults, ...mrest } = mixed;
      const noSession = (f: PeerFault) => f.kind === 'sessionRedirect' && ms?.without?.includes(f.worker);
      expect(peerFaults.map((f) => (noSession(f) ? { ...f, to: 'ownSession' } : f))).toEqual(prest.peerFaults.map((f) => (noSession(f) ? { ...f, to: 'ownSession' } : f)));
      for (const f of peerFaults) if (noSession(f)) expect(f).toMatchObject({ to: 'missing' });
      expect({ ...mrest, peerFaults: prest.peerFaults, userFaults: userFaults.filter((f) => !(f.kind === 'denied' && f.operation === 'candidateQuery')) }).toEqual(prest);
      expect(plain.timingScale).toBeUndefined();
      if (timingScale) expect([...timingScale].sort()).toEqual([1, 1, 2]);
      if (!ps) expect(ms).toBeUndefined();
      else expect(ms).toEqual({ ...ps, without: [expect.any(Number)] });
    }
    expect(seeds.some((x) => generateSchedule(x, { ...opts, mixed: true }).timingScale)).toBe(true);
    // a role rolled out without the candidates Query (what a vanished take reads) in some of them
    expect(seeds.some((x) => generateSchedule(x, { ...opts, mixed: true }).userFaults.some((f) => f.kind === 'denied' && f.operation === 'candidateQuery'))).toBe(true);
    const seed = seeds.find((x) => generateSchedule(x, opts).session)!;
    const r = await runWorld(generateSchedule(seed, { ...opts, mixed: true }), DEFAULT_SETTINGS, { trace: true });
    const without = generateSchedule(seed, { ...opts, mixed: true }).session!.without![0];
    expect(r.timeline.some((l) => new RegExp(`w${without} session .* started`).test(l))).toBe(false);
    expect(r.timeline.filter((l) => / session .* started/.test(l)).length).toBeGreaterThan(0);
    expect(r.verdict.violations, formatVerdict(r.verdict).join('\n')).toEqual([]);
  });

  it.each(REGRESSIONS)('regression seed $seed ($found)', async ({ seed, mixed, kept }) => {
    // the world as it was when the seed was found: a slow DynamoDB and the stream functions' outage,
    // and the short freezes, the fleet's DynamoDB outage, the slow broker and the throttling the
    // fleet shares (2026-12-08), added since (each drawn from a stream of its own), left out, so the
    // seed replays its story
    const { slowDynamo: _slow, streamsDown: _down, shortPauses: _short, dynamoOutage: _outage, slowBroker: _broker, partialThrottle: _throttle, ...asFound } = generateSchedule(seed, { workers: DEFAULT_SETTINGS.workers, durationMs: DEFAULT_SETTINGS.durationMs, mixed: mixed ?? false, ...(kept ? { kept } : {}) });
    const r = await runWorld(asFound, DEFAULT_SETTINGS, { trace: true });
    expect(r.verdict.violations, formatVerdict(r.verdict).join('\n')).toEqual([]);
  });

  it("seed 4800515: a Session's read while DynamoDB's time was in doubt was throttled, and its run() rejected, ending the process's session for the rest of the world; it is reported and tried again", async () => {
    const r = await run(4800515);
    expect(r.verdict.violations, formatVerdict(r.verdict).join('\n')).toEqual([]);
    expect(r.counts['session:errors']).toBeGreaterThan(0); // the failed read, told to onError
    expect(r.counts['session:runRejected']).toBeUndefined();
  });

  it.each(PLANTED)('planted bug $bug: caught by seed $seed, and that seed passes without it', { timeout: 300_000 }, async ({ bug, seed, limit }) => {
    const schedule = generateSchedule(seed, { workers: DEFAULT_SETTINGS.workers, durationMs: DEFAULT_SETTINGS.durationMs });
    const planted = await runWorld(schedule, DEFAULT_SETTINGS, { plant: bug });
    // a change to the code may move which seed catches the bug first: fail at once and name the search,
    // rather than search here (hundreds of worlds against the test's timeout on a busy machine)
    const search = `npm run sim -- --first 5000 --schedules ${limit} --threads 1 --plant ${bug}`;
    expect(planted.verdict.ok, `planted bug ${bug}: seed ${seed} no longer catches it. Find the first seed that does with \`${search}\`, then update this row and docs/safety.md's Planted bugs table`).toBe(false);
    const clean = await runWorld(schedule, DEFAULT_SETTINGS);
    expect(clean.verdict.violations, formatVerdict(clean.verdict).join('\n')).toEqual([]);
  });

  it(`fresh random seeds for ${BUDGET_MS / 1000} s: no violation`, { timeout: BUDGET_MS + HANG_MS + 60_000 }, async () => {
    const first = Math.floor(systemClock.random() * 2 ** 31);
    // odd seeds: a fleet part way through adopting Sessions (one worker runs none where the others do)
    console.log(`sim: seeds from ${first}; replay one with: npm run sim -- --seed <seed> (an odd seed: --mixed)`);
    const until = systemClock.monotonic() + BUDGET_MS;
    const bad: string[] = [];
    let n = 0;
    for (let seed = first; systemClock.monotonic() < until; seed++, n++) {
      // a livelock on simulated time never ends the run: name its seed instead of timing out the test
      let watchdog: { cancel(): void } | undefined;
      const hung = new Promise<never>((_, reject) => {
        watchdog = systemClock.setTimer(HANG_MS, () => reject(new Error(`seed ${seed} hung: no result after ${HANG_MS / 1000} s of wall-clock time (a livelock on simulated time)`)));
      });
      const mixed = seed % 2 === 1;
      const r = await Promise.race([runWorld(generateSchedule(seed, { workers: DEFAULT_SETTINGS.workers, durationMs: DEFAULT_SETTINGS.durationMs, mixed }), DEFAULT_SETTINGS), hung]).finally(() => watchdog?.cancel());
      if (!r.verdict.ok) bad.push(`seed ${seed}${mixed ? ' (--mixed)' : ''}:\n${formatVerdict(r.verdict).join('\n')}`);
      // a Session's run() rejects only for a table that does not exist, which no world has
      if (r.counts['session:runRejected']) bad.push(`seed ${seed}: a Session's run() rejected`);
      // an elector's run() rejects only for a second process under its identity (a twin): no world lacks a table
      for (const k of Object.keys(r.counts)) if (k.startsWith('runRejected:') && k !== 'runRejected:DuplicateIdentityError') bad.push(`seed ${seed}: an elector's run() rejected (${k})`);
      // every schedule elects: a run without terms would be a simulator that tests nothing
      expect(r.verdict.figures.terms, `seed ${seed}`).toBeGreaterThan(0);
    }
    console.log(`sim: ${n} schedules (seeds ${first}…${first + n - 1}), ${bad.length} with violations`);
    expect(n).toBeGreaterThan(0);
    expect(bad).toEqual([]);
  });
});
