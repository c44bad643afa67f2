import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { DEFAULT_MIGRATION_LEADER_NAME, defaultLeaderMigrationConfiguration, electorStarter, runWithLeaderMigration } from '../../lib/sdk/migration.js';
import { testTables, type TestTables } from '../support.js';
import { FAST, coordinatorLoop, waitFor } from './harness.js';

let t: TestTables;
beforeAll(async () => {
  t = await testTables('migration');
});
afterAll(() => t.drop());

describe('runWithLeaderMigration on real electors (KEP-2436)', () => {
  it('a migrated controller runs under the shared migration lease, in one component at a time; the rest under each primary lease', async () => {
    const deps = coordinatorDeps(t.client, t.names, { config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } });
    const loops = ['kcm', 'ccm', DEFAULT_MIGRATION_LEADER_NAME].map((l) => coordinatorLoop(deps, l));
    const config = defaultLeaderMigrationConfiguration(['cloud-route']);
    const running = new Map<string, number>();
    let maxRoute = 0;
    const controller = (who: string) => async (signal: AbortSignal) => {
      running.set(who, (running.get(who) ?? 0) + 1);
      if (who.endsWith('cloud-route')) maxRoute = Math.max(maxRoute, [...running].filter(([k, v]) => k.endsWith('cloud-route') && v > 0).length);
      await new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
      running.set(who, running.get(who)! - 1);
    };
    const start = (component: string, controllers: string[]) => {
      const abort = new AbortController();
      const done = runWithLeaderMigration({
        startElector: electorStarter({ identity: `${component}-1`, tables: t.names, ...FAST, client: t.client, candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' } }),
        controllers: Object.fromEntries(controllers.map((c) => [c, controller(`${component}/${c}`)])),
        component,
        primaryLeaseName: component,
        config,
        signal: abort.signal,
      });
      return { abort, done };
    };
    const kcm = start('kcm', ['deployment', 'cloud-route']);
    const ccm = start('ccm', ['cloud-route', 'node-ipam']);
    try {
      await waitFor('primary controllers of both components', () => running.get('kcm/deployment') === 1 && running.get('ccm/node-ipam') === 1);
      await waitFor('the migrated controller in one of them', () => (running.get('kcm/cloud-route') ?? 0) + (running.get('ccm/cloud-route') ?? 0) === 1);
      const owner = running.get('kcm/cloud-route') === 1 ? kcm : ccm;
      const other = owner === kcm ? 'ccm/cloud-route' : 'kcm/cloud-route';
      // the owner stops: the migration lease moves and the controller runs on the other side
      owner.abort.abort();
      await owner.done;
      await waitFor('the migrated controller to move', () => running.get(other) === 1, 20_000);
      expect(maxRoute).toBe(1);
    } finally {
      kcm.abort.abort();
      ccm.abort.abort();
      await Promise.all([kcm.done, ccm.done]);
      await Promise.all(loops.map((l) => l.stop()));
    }
  });
});
