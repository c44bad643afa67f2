/**
 * The ready app's example scheduled job (`-c exampleJob=true`): the local demo's job
 * (lib/local/demo/scheduled-job.ts, which `npm start` runs) bundled as the functions are, for
 * examples/scheduled-job-stack.ts to deploy. The app owns where its code goes; the build script
 * only bundles.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleHandler } from '../../scripts/build-functions.js';

/** The job's handler, repository-relative. */
export const EXAMPLE_JOB_ENTRY = 'lib/local/demo/scheduled-job.ts';

/** Where the app finds the job's code: built before synth (app.ts), beside the functions' build/assets. */
export const EXAMPLE_JOB_DIR = join(fileURLToPath(new URL('../..', import.meta.url)), 'build', 'example-job');

/** Bundles the job into `outDir` (default EXAMPLE_JOB_DIR), rewritten only when its bytes changed; returns the directory. */
export const buildExampleJob = (outDir = EXAMPLE_JOB_DIR): Promise<string> => bundleHandler(EXAMPLE_JOB_ENTRY, outDir);
