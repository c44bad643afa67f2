/**
 * Hang guards, not budgets. A test on real processes, DynamoDB Local or the wall clock waits for an
 * outcome however slow the machine is (a shared 2-core CI machine runs the suite at several times
 * its idle pace: `npm run test:load` shows it passing beside busy processes); only a wait this long
 * is called hung. A duration the product promises is asserted on simulated time, never by one of
 * these.
 */

/** One wait on real processes or DynamoDB Local (waitFor, a child process): seconds when idle. */
export const WAIT_GUARD_MS = 180_000;

/**
 * One test or hook (vitest's testTimeout and hookTimeout, vitest.config.ts): the longest take about
 * half a minute when idle (the chaos set, a CDK synth beside them; npm start's play has its own).
 */
export const TEST_GUARD_MS = 300_000;

/**
 * One exhaustive exploration of the step (test/model): pure computation, the largest scope
 * 79.6 s when idle (docs/safety.md's table), which a busy machine runs several times slower
 * (the 300 s guard above timed a 90 s scope out at load 14). Still a hang guard: a scope that
 * explores for half an hour is stuck, or has outgrown the suite.
 */
export const EXPLORE_GUARD_MS = 1_800_000;

/**
 * `npm start -- --short`'s whole play in one child (test/start.test.ts): DynamoDB Local, the local
 * system and up to four worker processes, each started and compiled by tsx, its stories in real
 * time: 80 s on an idle CI machine, so 400 s on one five times slower, past TEST_GUARD_MS (beside
 * six busy processes the 300 s guard killed the play twice in two runs, its stories still going).
 * A hang guard.
 */
export const PLAY_GUARD_MS = 1_200_000;
