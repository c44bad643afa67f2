/**
 * A local-mode process's checkpoint writes, alone (test/local/stream-checkpoints.test.ts): loads
 * the file, says `ready`, waits for a line on stdin, then finishes `count` batches in shards of its
 * own stream one after the other, as a poller does, and exits.
 * Usage: checkpoint-writer.ts FILE ENDPOINT STREAM_ARN COUNT
 */
import { once } from 'node:events';
import { loadCheckpoints } from '../../lib/local/stream-checkpoints.js';

const [file, endpoint, streamArn, count] = process.argv.slice(2);
const checkpoints = loadCheckpoints(file!, endpoint!, (message) => void process.stderr.write(`${message}\n`)).of('candidateStream');
process.stdout.write('ready\n');
await once(process.stdin, 'data');
for (let i = 0; i < Number(count); i++) await checkpoints.set(streamArn!, `shard-${i}`, (10n ** 20n + BigInt(i)).toString());
process.stdin.destroy();
