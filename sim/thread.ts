/**
 * A simulator thread (sim/pool.ts starts one per core): runs the seeds the pool hands it, one at a
 * time, and reports each; exits when there are no more.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { PlantedBug } from './bugs.js';
import { runSeed, type FromThread, type ToThread } from './pool.js';
import type { KeptMode } from './schedule.js';

const port = parentPort;
if (!port) throw new Error('sim/thread.ts runs as a worker thread of sim/pool.ts');
const { plant, mixed, kept } = workerData as { plant?: PlantedBug; mixed?: boolean; kept?: KeptMode };
port.on('message', (m: ToThread) => {
  if ('done' in m) {
    // what the simulated processes left pending never runs: the thread is done
    process.exit(0);
  }
  void runSeed(m.seed, plant, mixed, kept).then((report) => port.postMessage({ report } satisfies FromThread));
});
port.postMessage({ ready: true } satisfies FromThread);
