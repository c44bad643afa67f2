#!/usr/bin/env node
// The `conclave` command of the @conclave/cli package (compiled; no TypeScript at run time).
import '../util/node-version.js'; // first: stops on a Node older than 22 with a message
import { main } from './main.js';

/**
 * The reader of our output went away (`conclave describe lease x | head -1`): end quietly, as git,
 * cat and seq do, by SIGPIPE (a shell shows 141 only under `set -o pipefail`). Node ignores SIGPIPE,
 * so the write fails with EPIPE instead; adding and removing a listener restores the default
 * action (libuv resets it on the last listener), and the signal then ends the process at once.
 */
function endOnClosedPipe(e: NodeJS.ErrnoException): void {
  if (e.code !== 'EPIPE') throw e;
  const restoreDefault = () => {};
  process.on('SIGPIPE', restoreDefault).off('SIGPIPE', restoreDefault);
  try {
    process.kill(process.pid, 'SIGPIPE');
  } catch {
    // Windows has no SIGPIPE: end with the status a shell would show
  }
  process.exit(141);
}
process.stdout.on('error', endOnClosedPipe);
process.stderr.on('error', endOnClosedPipe);

process.exitCode = await main(process.argv.slice(2));
