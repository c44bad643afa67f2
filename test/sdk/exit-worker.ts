/**
 * A worker as users port client-go's example (examples/leader-election: os.Exit in
 * OnStoppedLeading), run as a child process by exit-in-callback.test.ts: a NoCoordination elector
 * on DynamoDB Local (lease LEASE) that prints `leading` once it leads; on SIGTERM it aborts run()'s signal and,
 * with EXIT=onStopped, exits in onStoppedLeading (before the release is answered), else once run()
 * has resolved. EXIT=inWork: the leader's work itself calls process.exit() in onStartedLeading, no
 * SIGTERM, no abort (the term is never released). EXIT=withLeaseInWork: no elector of its own, a
 * withLease call whose function prints `leading` and calls process.exit(). EXIT=migrationInWork:
 * runWithLeaderMigration (LEASE its primary lease), whose migrated controller prints `leading` and
 * calls process.exit().
 */
import { LeaderElector, withLease } from '../../lib/sdk/index.js';
import { defaultLeaderMigrationConfiguration, electorStarter, runWithLeaderMigration } from '../../lib/sdk/migration.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { defaultTableNames } from '../../lib/tables.js';

const env = (k: string): string => process.env[k] ?? (() => { throw new Error(`${k} is not set`); })();
const stop = new AbortController();
process.on('SIGTERM', () => stop.abort());
if (process.env['EXIT'] === 'withLeaseInWork')
  await withLease(env('LEASE'), async () => {
    console.log('leading');
    process.exit(0);
  }, { client: localClient(env('ENDPOINT')), tables: defaultTableNames(env('PREFIX')), identity: env('IDENTITY'), mode: 'NoCoordination', platform: 'none' });
if (process.env['EXIT'] === 'migrationInWork')
  await runWithLeaderMigration({
    startElector: electorStarter({ client: localClient(env('ENDPOINT')), tables: defaultTableNames(env('PREFIX')), identity: env('IDENTITY'), mode: 'NoCoordination', platform: 'none' }),
    controllers: {
      'cloud-route': () => {
        console.log('leading');
        process.exit(0);
      },
    },
    component: 'ccm',
    primaryLeaseName: env('LEASE'),
    config: defaultLeaderMigrationConfiguration(['cloud-route'], `${env('LEASE')}-migration`),
    signal: stop.signal,
  });
const elector = new LeaderElector({
  client: localClient(env('ENDPOINT')),
  tables: defaultTableNames(env('PREFIX')),
  leaseName: env('LEASE'),
  identity: env('IDENTITY'),
  mode: 'NoCoordination',
  platform: 'none',
  callbacks: {
    onStartedLeading: () => {
      console.log('leading');
      if (process.env['EXIT'] === 'inWork') process.exit(0);
    },
    onStoppedLeading: () => {
      if (process.env['EXIT'] === 'onStopped') process.exit(0);
    },
  },
});
await elector.run(stop.signal);
process.exit(0);
