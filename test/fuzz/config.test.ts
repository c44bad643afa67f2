/**
 * Malformed configurations to every SDK constructor and to the coordinator's configuration: each
 * is accepted or refused with a typed error that names the field (ValidationError, or
 * MigrationConfigError for a migration file that cannot be read at all) — never a TypeError.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { depsFromEnv } from '../../lib/functions/env.js';
import { LeaseCandidate, LeaseCandidateOptionsSchema } from '../../lib/sdk/candidate.js';
import { CandidacySchema, LeaderElector, LeaderElectorOptionsSchema } from '../../lib/sdk/elector.js';
import { IdentityLeaseHeartbeat, IdentityLeaseHeartbeatOptionsSchema, identityLeaseName } from '../../lib/sdk/identity.js';
import { LeaderMigrationConfigurationSchema, MigrationConfigError, defaultLeaderMigrationConfiguration, loadLeaderMigrationConfiguration, resolveLeaderMigration } from '../../lib/sdk/migration.js';
import { ElectionConfigSchema, electionConfig } from '../../lib/schemas/config.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { ENV } from '../../lib/wiring.js';
import { RUNS, expectTypedOutcome, junk, mutate, mutations } from './support.js';

const client = new DynamoDBClient({ region: 'local', endpoint: 'http://127.0.0.1:9', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
afterAll(() => client.destroy());
const callbacks = { onStartedLeading: () => undefined };
const shapeOf = (s: { shape: Record<string, unknown> }) => s.shape as Record<string, import('zod').ZodType>;

const candidateBase = { binaryVersion: '1.31.0', emulationVersion: '1.30.0', renewIntervalMs: 60_000 };
const electorBase = { leaseName: 'jobs', identity: 'w1', tables: 'conclave', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, candidacy: candidateBase, client, callbacks };

describe('SDK constructors refuse bad configuration with the field named', () => {
  it('LeaderElector options', async () => {
    const shape = shapeOf(LeaderElectorOptionsSchema);
    await fc.assert(
      fc.asyncProperty(mutations(Object.keys(shape)), async (ms) => {
        await expectTypedOutcome(() => new LeaderElector(mutate(electorBase, ms) as never), { shape, mutations: ms });
      }),
      RUNS,
    );
  });

  it('LeaderElector candidacy and LeaseCandidate options', async () => {
    const shape = shapeOf(LeaseCandidateOptionsSchema);
    const candidacy = shapeOf(CandidacySchema);
    await fc.assert(
      fc.asyncProperty(mutations(Object.keys(candidacy)), async (ms) => {
        const candidate = mutate(candidateBase, ms);
        // the elector names the field under `candidacy`
        const e = await expectTypedOutcome(() => new LeaderElector({ ...electorBase, candidacy: candidate } as never), { known: Object.keys(shapeOf(LeaderElectorOptionsSchema)) });
        if (e !== 'ok' && e instanceof ValidationError) expect(e.fields.every((f) => f.startsWith('candidacy'))).toBe(true);
        await expectTypedOutcome(() => new LeaseCandidate({ ...candidate, leaseName: 'jobs', name: 'w1', client } as never), { shape, mutations: ms });
      }),
      RUNS,
    );
  });

  it('LeaseCandidate names and versions', async () => {
    const shape = shapeOf(LeaseCandidateOptionsSchema);
    await fc.assert(
      fc.asyncProperty(mutations(['leaseName', 'name', 'binaryVersion', 'emulationVersion', 'preferredStrategies', 'labels', 'tables', 'client', 'clock', 'instance', 'onError']), async (ms) => {
        await expectTypedOutcome(() => new LeaseCandidate(mutate({ ...candidateBase, leaseName: 'jobs', name: 'w1', client }, ms) as never), { shape, mutations: ms });
      }),
      RUNS,
    );
  });

  it('IdentityLeaseHeartbeat options and identity lease names', async () => {
    const shape = shapeOf(IdentityLeaseHeartbeatOptionsSchema);
    const base = { client, tables: { identities: 'conclave-identities' }, component: 'report-worker', hostname: 'host-1', renewIntervalMs: 10_000, leaseDurationSeconds: 3_600 };
    await fc.assert(
      fc.asyncProperty(mutations(Object.keys(shape)), junk, junk, async (ms, component, hostname) => {
        await expectTypedOutcome(() => new IdentityLeaseHeartbeat(mutate(base, ms) as never), { shape, mutations: ms });
        await expectTypedOutcome(() => identityLeaseName(component as never, hostname as never), { known: ['component', 'hostname'] });
      }),
      RUNS,
    );
  });
});

describe('leader migration configuration (KEP-2436) from files, flags and defaults', () => {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-fuzz-migration-'));
  const shape = shapeOf(LeaderMigrationConfigurationSchema);
  const valid = { kind: 'LeaderMigrationConfiguration', leaderName: 'cloud-migration', resourceLock: 'leases', controllerLeaders: [{ name: 'route', component: '*' }, { name: 'service', component: 'ccm' }] };
  const leaderEntry = fc.oneof(fc.record({ name: junk, component: junk }), junk, fc.constant({ name: 'route', component: '*' }));
  const mutatedConfig = fc.tuple(mutations(Object.keys(shape)), fc.array(leaderEntry, { maxLength: 3 }), fc.boolean()).map(([ms, leaders, replace]) => {
    const m = mutate(valid, ms);
    // replacing the list overrides any mutation of it
    return replace ? { ms: ms.filter((x) => x.key !== 'controllerLeaders'), config: { ...m, controllerLeaders: leaders } } : { ms, config: m };
  });
  let n = 0;

  it('a configuration file, JSON or YAML, well-formed or not', async () => {
    await fc.assert(
      fc.asyncProperty(mutatedConfig, fc.constantFrom('json', 'yaml', 'yml'), fc.oneof(fc.constant(undefined), fc.string({ maxLength: 40 })), async ({ ms, config }, ext, rawText) => {
        const path = join(dir, `config-${n++}.${ext}`);
        writeFileSync(path, rawText ?? (ext === 'json' ? JSON.stringify(config) : toYaml(config)));
        await expectTypedOutcome(() => loadLeaderMigrationConfiguration(path), { types: [MigrationConfigError], ...(rawText === undefined ? { shape, mutations: ms } : { known: Object.keys(shape) }) });
      }),
      RUNS,
    );
  });

  it('the flags and the default configuration', async () => {
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.oneof(fc.constant(undefined), fc.constant(''), fc.string({ maxLength: 10 })), fc.array(fc.string({ maxLength: 8 }), { maxLength: 3 }), fc.oneof(fc.constant(undefined), fc.string({ maxLength: 12 })), async (enabled, configPath, defaultControllers, defaultLeaderName) => {
        await expectTypedOutcome(() => resolveLeaderMigration({ enabled, configPath: configPath === undefined ? undefined : join(dir, configPath), component: 'ccm', defaultControllers, defaultLeaderName }), {
          types: [MigrationConfigError],
          // a configuration file's fields, or the options its default is made of
          known: [...Object.keys(shape), 'defaultControllers', 'defaultLeaderName'],
        });
        await expectTypedOutcome(() => defaultLeaderMigrationConfiguration(defaultControllers, defaultLeaderName), { known: Object.keys(shape) });
      }),
      RUNS,
    );
  });
});

describe('the coordinator’s configuration', () => {
  const shape = shapeOf(ElectionConfigSchema);
  const tables = { leases: 'conclave-leases', candidates: 'conclave-candidates', identities: 'conclave-identities' };

  it('ElectionConfig, directly and through coordinatorDeps', async () => {
    await fc.assert(
      fc.asyncProperty(mutations(Object.keys(shape)), async (ms) => {
        const config = mutate({ ackWindowMs: 2_000 }, ms);
        await expectTypedOutcome(() => electionConfig(config as never), { shape, mutations: ms });
        await expectTypedOutcome(() => coordinatorDeps(client, tables, { config: config as never }), { shape, mutations: ms });
      }),
      RUNS,
    );
  });

  it('a function’s environment, with the configuration as JSON text in it', async () => {
    const env = { [ENV.leasesTable]: 'l-leases', [ENV.candidatesTable]: 'l-candidates', [ENV.identitiesTable]: 'l-identities', [ENV.eventBus]: 'bus', [ENV.timerQueueUrl]: 'https://sqs.local/q' };
    const configText = fc.oneof(
      fc.string({ maxLength: 20 }),
      mutations(Object.keys(shape)).map((ms) => JSON.stringify(mutate({ ackWindowMs: 2_000 }, ms))),
      fc.jsonValue().map((v) => JSON.stringify(v)),
    );
    await fc.assert(
      fc.asyncProperty(mutations(Object.values(ENV), fc.oneof(fc.string({ maxLength: 8 }), configText)), async (ms) => {
        const e = mutate(env, ms);
        const outcome = await expectTypedOutcome(() => depsFromEnv('coordinator', e as NodeJS.ProcessEnv), { known: [...Object.values(ENV), ...Object.keys(shape)] });
        if (outcome === 'ok') expect(e[ENV.leasesTable]).toMatch(/^.{3,}$/);
      }),
      { numRuns: 60 },
    );
  });
});

describe('regressions found by these properties', () => {
  it('a YAML alias with no anchor (fast-check seed 207282 family: "*!") is a MigrationConfigError, not a ReferenceError', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'conclave-fuzz-alias-')), 'config.yaml');
    writeFileSync(path, 'leaderName: m\ncontrollerLeaders:\n  - name: route\n    component: *route\n');
    const e = await expectTypedOutcome(() => loadLeaderMigrationConfiguration(path), { types: [MigrationConfigError] });
    expect(e).toBeInstanceOf(MigrationConfigError);
    expect((e as Error).message).toMatch(/alias.*quote the wildcard/s);
  });
});
