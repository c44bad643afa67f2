/**
 * `npm start`: for now, a walk through the election core on a real DynamoDB Local. The worker
 * SDK, the functions and the full local runtime (stream polling, timer, events, CLI) come with
 * the next issues; until then this shows what exists: tables, candidates, the coordinator's
 * decisions and their conditional writes.
 */
import { coordinatorDeps, reconcileLease, type ReconcileOutcome } from '../coordinator/reconcile.js';
import { manualClock } from '../clock.js';
import { OLDEST_EMULATION_VERSION } from '../schemas/strategy.js';
import { createTables, defaultTableNames } from '../tables.js';
import { localClient, startDynamoDBLocal } from './dynamodb-local.js';

const LEASE = 'nightly-report';

async function main() {
  if (process.argv.includes('--serve')) {
    console.error('conclave: --serve (the local runtime for your own workers and the CLI) is not built yet; it lands with the functions and local-mode issue.');
    process.exitCode = 2;
    return;
  }
  console.log('Conclave, local: starting DynamoDB Local (in memory, loopback only)…');
  const ddb = await startDynamoDBLocal();
  const client = localClient(ddb.endpoint);
  try {
    const tables = defaultTableNames('conclave-local');
    await createTables(client, tables);
    console.log(`DynamoDB Local at ${ddb.endpoint}; tables ${Object.values(tables).join(', ')}\n`);

    // The coordinator's clock is injected; the walk-through moves it by hand.
    const clock = manualClock(Date.now());
    const deps = coordinatorDeps(client, tables, { clock });
    const show = (o: ReconcileOutcome) => {
      const l = o.after ?? o.before;
      const d = o.decision;
      const what = d.kind === 'elect' ? `elected ${d.winner} (acked: ${d.acked.join(', ')})` : d.kind === 'preempt' ? `asked ${d.holder} to yield to ${d.preferredHolder}` : d.kind === 'openElection' ? `opened election ${d.election.id}, pinged ${d.ping.join(', ')}` : d.kind === 'leaveAlone' ? `nothing to do (${d.reason})` : d.kind === 'awaitAcks' ? `waiting for ${d.pending.join(', ')} to answer` : d.kind;
      console.log(`  coordinator: ${what}`);
      console.log(`  lease: holder=${l?.holderIdentity ?? '-'} fencingToken=${l?.fencingToken ?? 0} preferredHolder=${l?.preferredHolder ?? '-'} revision=${l?.revision ?? 0}`);
    };
    const join = async (name: string, emulationVersion: string, binaryVersion: string) => {
      const now = clock.now();
      await deps.candidates.write({ key: { leaseName: LEASE, name }, item: undefined, revision: 0 }, {
        set: { emulationVersion, binaryVersion, preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: now, createdAt: now },
      });
      console.log(`\ncandidate ${name} joins (emulation ${emulationVersion}, binary ${binaryVersion})`);
    };

    await join('worker-a', '1.31.0', '1.31.0');
    await join('worker-b', '1.31.0', '1.31.0');
    await join('worker-c', '1.31.0', '1.32.0');
    show(await reconcileLease(deps, LEASE));

    clock.advance(60_000);
    console.log('\nworker-a renews its lease (every 2 s while it leads; the write is conditioned on the revision it read)');
    const held = await deps.leases.read(LEASE);
    await deps.leases.write(held, { set: { renewTime: clock.now(), leaseDurationSeconds: 15 } });
    await join('worker-old', '1.30.0', '1.31.0');
    show(await reconcileLease(deps, LEASE));

    clock.advance(2_000);
    console.log(`\nworker-a sees preferredHolder at its next renewal, stops its work and releases the lease`);
    const read = await deps.leases.read(LEASE);
    await deps.leases.write(read, { remove: ['holderIdentity', 'preferredHolder'] });
    show(await reconcileLease(deps, LEASE));
    console.log('\n  candidates answer the ping (renewTime ≥ pingTime)…');
    for (const n of ['worker-a', 'worker-b', 'worker-c', 'worker-old']) await deps.candidates.renew(LEASE, n, clock.advance(50));
    show(await reconcileLease(deps, LEASE));

    console.log(`
What exists now: the election core — schemas, the pure decisions of KEP-4355 (ordering,
strategy consensus, vacancy, preemption, acks, staleness), conditional-write stores and
reconcileLease/reconcileAll, all tested against DynamoDB Local (npm test).
Not yet: the worker SDK, Lambda handlers, EventBridge events, the local runtime with
worker processes, the CLI and the CDK app.`);
  } finally {
    client.destroy();
    await ddb.stop();
  }
}

await main();
