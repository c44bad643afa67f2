/**
 * A leader and its fenced write, against Conclave running on this machine: what a test of your
 * own worker does with `@conclave/testing`. Run it with plain `node` once compiled (the package
 * test does, from a fresh project); inside this repository: `npx tsx examples/local-leader.ts`.
 *
 * It starts DynamoDB Local and the functions (`startLocalConclave()`), creates a table of its
 * own, runs a coordinated LeaderElector until it leads, writes a report fenced by its term,
 * shows that a write carrying an older term's token is refused, steps down, and prints one JSON
 * line with what happened. The elector takes the push path (a PushChannel on the local broker): it
 * is told of the lease's changes instead of waiting for its next read, and holds its term on the
 * process's Session: the session's renewals keep every lease the process leads alive.
 */
import { CreateTableCommand, GetItemCommand, waitUntilTableExists } from '@aws-sdk/client-dynamodb';
import { FencingError, LeaderElector, Session, fencedTransactWrite } from '@conclave/sdk';
import { PushChannel } from '@conclave/sdk/push'; // with the mqtt package installed beside @conclave/sdk
import { startLocalConclave } from '@conclave/testing';

const conclave = await startLocalConclave();
const { client } = conclave;
try {
  await client.send(
    new CreateTableCommand({
      TableName: 'reports',
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
    }),
  );
  await waitUntilTableExists({ client, maxWaitTime: 30 }, { TableName: 'reports' });

  const put = (by: number) => ({ TransactItems: [{ Put: { TableName: 'reports', Item: { id: { S: 'today' }, by: { N: String(by) } } } }] });
  const done = new AbortController();
  const result = { leader: '', fencingToken: 0, fencedWrite: '', staleWrite: '', stored: '', events: [] as string[], push: { healthy: false, wakes: 0 }, session: { held: false, renewals: 0 } };

  // One connection per process, shared by its electors; it outlives them (a stepping-down leader announces it).
  const push = new PushChannel({ endpoint: conclave.pushEndpoint!, tables: conclave.tablePrefix });
  const pushing = new AbortController();
  const pushRun = push.run(pushing.signal);
  await push.ready;
  result.push.healthy = push.healthy();

  // One session per process, shared by its electors: its row's renewals keep their terms alive
  // (timings to match the short terms below). It ends after the last elector on it.
  const session = new Session({ client, tables: conclave.tablePrefix, renewIntervalMs: 1_000, retryPeriodMs: 500, renewDeadlineMs: 2_000, maxLeaseDurationMs: 4_000 });
  const sessionRun = session.run(done.signal);
  await session.ready;

  const elector = new LeaderElector({
    client,
    tables: conclave.tablePrefix,
    leaseName: 'nightly-report',
    identity: 'worker-1',
    candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.31.0' },
    // short terms so the example runs in seconds (client-go's 15/10/2 s are the defaults)
    leaseDurationMs: 4_000,
    renewDeadlineMs: 3_000,
    retryPeriodMs: 500,
    platform: 'none',
    push,
    session,
    callbacks: {
      async onStartedLeading(signal, term) {
        const { fencingToken } = term;
        result.leader = 'worker-1';
        result.fencingToken = fencingToken;
        // Writes a deposed or paused leader must never make: conditioned on this term (the term's
        // own, not elector.fencedWrite, which writes in whatever term the worker leads when called).
        await term.fencedWrite(put(fencingToken));
        result.fencedWrite = signal.aborted ? 'after the term' : 'accepted';
        // The same write with the token of the term before: what a leader that was paused past
        // its term would send. The lease refuses it, and nothing is written.
        try {
          await fencedTransactWrite(client, { table: conclave.tables.leases, leaseName: 'nightly-report', term: { holderIdentity: 'worker-1', fencingToken: fencingToken - 1 } }, put(fencingToken - 1));
          result.staleWrite = 'accepted';
        } catch (e) {
          if (!(e instanceof FencingError)) throw e;
          result.staleWrite = 'refused';
        }
        // the term is on the session: the lease names it, and the session renews for it
        const lease = await client.send(new GetItemCommand({ TableName: conclave.tables.leases, Key: { name: { S: 'nightly-report' } }, ConsistentRead: true }));
        result.session.held = lease.Item?.['session']?.S !== undefined && lease.Item['session'].S === session.name;
        done.abort();
      },
    },
  });
  await elector.run(done.signal);
  await sessionRun; // after the elector stepped down: the session row is deleted last
  result.session.renewals = session.stats.renewals;
  // Events travel from the lease's stream through the lease-stream function to the bus.
  for (let waited = 0; waited < 10_000 && !conclave.events.some((e) => e.detailType === 'Leader Elected'); waited += 100) {
    await new Promise((r) => setTimeout(r, 100));
  }

  const stored = await client.send(new GetItemCommand({ TableName: 'reports', Key: { id: { S: 'today' } }, ConsistentRead: true }));
  result.stored = stored.Item?.['by']?.N ?? '';
  result.events = [...new Set(conclave.events.map((e) => e.detailType))];
  // the lease stream's function published a wake for each change of the lease (renewals aside)
  for (let waited = 0; waited < 10_000 && push.stats.received === 0; waited += 100) await new Promise((r) => setTimeout(r, 100));
  result.push.wakes = push.stats.received;
  pushing.abort();
  await pushRun;
  console.log(JSON.stringify(result));
} finally {
  await conclave.stop();
}
