/**
 * The SDK's public API, as a consumer sees it through `@conclave/sdk`: one options object per
 * long-lived object, one lifecycle (`run(signal)` once, `ready`), `tables` as a prefix or names,
 * coordinated mode only with a candidacy, schemas named `…Schema`, options frozen after
 * construction, and a TSDoc comment on every export.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as z from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '@conclave/sdk';
import {
  IdentityLeaseHeartbeat,
  LeaderElector,
  LeaseCandidate,
  Session,
  ValidationError,
  type IdentityLeaseHeartbeatOptions,
  type LeaderElectorOptions,
  type LeaseCandidateOptions,
} from '@conclave/sdk';
import { PushChannel } from '@conclave/sdk/push';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { testTables, type TestTables } from '../support.js';
import { FAST, validationError } from './harness.js';

let t: TestTables;
let prefix: string;
beforeAll(async () => {
  t = await testTables('api');
  prefix = t.names.leases.replace(/-leases$/, '');
});
afterAll(() => t.drop());

const callbacks = { onStartedLeading: () => undefined };
const candidacy = { emulationVersion: '1.30.0', binaryVersion: '1.30.0' };
// `over` may make a combination the type refuses (a mode without its candidacy): these tests are of the constructor's own check
const elector = (over: Partial<LeaderElectorOptions> = {}): LeaderElectorOptions => ({ leaseName: 'api-lease', identity: 'w1', tables: prefix, ...FAST, platform: 'none', client: t.client, callbacks, candidacy, ...over }) as LeaderElectorOptions;
const candidate = (over: Partial<LeaseCandidateOptions> = {}): LeaseCandidateOptions => ({ leaseName: 'api-lease', name: 'c1', tables: prefix, client: t.client, ...candidacy, ...over });
const heartbeat = (over: Partial<IdentityLeaseHeartbeatOptions> = {}): IdentityLeaseHeartbeatOptions => ({ component: 'api', hostname: 'host-1', tables: prefix, client: t.client, ...over });

describe('one way to construct and run', () => {
  it('each object takes a single options object, client and callbacks included, and has run(signal) and ready, no start/stop', () => {
    const objects = [new LeaderElector(elector()), new LeaseCandidate(candidate()), new IdentityLeaseHeartbeat(heartbeat())];
    for (const o of objects) {
      expect(o.constructor.length).toBe(1);
      expect(typeof o.run).toBe('function');
      expect(o.ready).toBeInstanceOf(Promise);
      expect('start' in o).toBe(false);
      expect('stop' in o).toBe(false);
    }
  });

  it('each long-lived object says whether it does its job now with healthy(), and those with a row of their own renew it with renew(): no other liveness word', () => {
    const objects = {
      LeaderElector: new LeaderElector(elector()),
      LeaseCandidate: new LeaseCandidate(candidate()),
      IdentityLeaseHeartbeat: new IdentityLeaseHeartbeat(heartbeat()),
      Session: new Session({ client: t.client, tables: prefix }),
      PushChannel: new PushChannel({ endpoint: 'ws://127.0.0.1:1/mqtt', tables: prefix }),
    };
    for (const [name, o] of Object.entries(objects)) {
      expect(typeof o.healthy, name).toBe('function');
      for (const old of ['alive', 'live', 'state', 'ack', 'renewNow']) expect(old in o, `${name}.${old}`).toBe(false);
    }
    // before run(): nothing written, nothing connected (an elector that leads nothing is healthy)
    expect(objects.LeaderElector.healthy()).toBe(true);
    expect([objects.LeaseCandidate, objects.IdentityLeaseHeartbeat, objects.Session, objects.PushChannel].map((o) => o.healthy())).toEqual([false, false, false, false]);
    expect(typeof objects.LeaseCandidate.renew).toBe('function');
    expect(typeof objects.IdentityLeaseHeartbeat.renew).toBe('function');
    // what an elector uses of its session (its shared reader) is not on the class: sessionSeam(), not exported
    expect('reader' in objects.Session).toBe(false);
  });

  it('LeaseCandidate: run writes the row (ready resolves with it) and removes it once the signal aborts', async () => {
    const store = new CandidateStore(t.client, t.names.candidates);
    const c = new LeaseCandidate(candidate({ name: 'c-run' }));
    const stop = new AbortController();
    const done = c.run(stop.signal);
    const row = await c.ready;
    expect(row).toMatchObject({ leaseName: 'api-lease', name: 'c-run', identity: c.instance });
    expect((await store.read('api-lease', 'c-run')).item?.identity).toBe(c.instance);
    expect(c.healthy()).toBe(true);
    stop.abort();
    await done;
    expect(c.healthy()).toBe(false);
    expect((await store.read('api-lease', 'c-run')).item).toBeUndefined();
    await expect(c.run(new AbortController().signal)).rejects.toThrow(/run\(\) was already called on this LeaseCandidate; each start-up is a new LeaseCandidate/);
  });

  it('IdentityLeaseHeartbeat: run writes the row (ready resolves with it) and deletes it once the signal aborts', async () => {
    const store = new IdentityStore(t.client, t.names.identities);
    const hb = new IdentityLeaseHeartbeat(heartbeat({ component: 'api-run' }));
    const stop = new AbortController();
    const done = hb.run(stop.signal);
    expect((await hb.ready).holderIdentity).toBe(hb.identity);
    expect(hb.healthy()).toBe(true);
    stop.abort();
    await done;
    expect((await store.read('api-run', hb.name)).item).toBeUndefined();
    expect(hb.healthy()).toBe(false);
  });

  it('LeaderElector: ready resolves once its candidacy is written; run resolves after withdrawing it', async () => {
    const store = new CandidateStore(t.client, t.names.candidates);
    const e = new LeaderElector(elector({ leaseName: 'api-ready', identity: 'w-ready' }));
    const stop = new AbortController();
    const done = e.run(stop.signal);
    await e.ready;
    expect((await store.read('api-ready', 'w-ready')).item?.identity).toBe(e.instance);
    stop.abort();
    await done;
    expect((await store.read('api-ready', 'w-ready')).item).toBeUndefined();
    await expect(e.run(new AbortController().signal)).rejects.toThrow(/each start-up is a new LeaderElector/);
  });

  it('a first write that fails rejects run() and ready with the same error', async () => {
    const c = new LeaseCandidate(candidate({ name: 'c-fail', tables: 'no-such-prefix' }));
    const run = c.run(new AbortController().signal);
    await expect(run).rejects.toThrow(/non-existent table|ResourceNotFound|not found/i);
    await expect(c.ready).rejects.toBe(await run.catch((e: unknown) => e));
  });
});

describe('tables', () => {
  const names = (p: string) => ({ leases: `${p}-leases`, candidates: `${p}-candidates`, identities: `${p}-identities` });

  it('defaults to the prefix conclave; a string is a prefix; an object names single tables beside its prefix', () => {
    expect(new LeaderElector(elector({ tables: undefined })).options.tables).toEqual(names('conclave'));
    expect(new LeaderElector(elector({ tables: 'acme' })).options.tables).toEqual(names('acme'));
    expect(new LeaseCandidate(candidate({ tables: { prefix: 'acme', candidates: 'my-candidates' } })).options.tables).toEqual({ ...names('acme'), candidates: 'my-candidates' });
    expect(new IdentityLeaseHeartbeat(heartbeat({ tables: { identities: 'ids' } })).options.tables).toEqual({ ...names('conclave'), identities: 'ids' });
  });

  it('each object uses the table it needs under the prefix (the candidate row lands in <prefix>-candidates)', async () => {
    const c = new LeaseCandidate(candidate({ name: 'c-prefix', tables: prefix }));
    const stop = new AbortController();
    const done = c.run(stop.signal);
    await c.ready;
    expect((await new CandidateStore(t.client, `${prefix}-candidates`).read('api-lease', 'c-prefix')).item).toBeDefined();
    stop.abort();
    await done;
  });

  it.each([
    ['a prefix with a space', 'my app', 'tables', /tables: must be a table name prefix such as "conclave"/],
    ['a number', 5, 'tables', /tables: must be a table name prefix such as "conclave", or \{ prefix\?, leases\?, candidates\?, identities\? \}/],
    ['a table name too short', { leases: 'x' }, 'tables.leases', /tables\.leases: must be a DynamoDB table name/],
    ['an unknown key', { lease: 'x-leases' }, 'tables', /tables: unknown key "lease": name tables with prefix, leases, candidates, identities/],
  ])('refuses %s, naming the field', (_, tables, field, message) => {
    for (const make of [() => new LeaderElector(elector({ tables: tables as never })), () => new LeaseCandidate(candidate({ tables: tables as never })), () => new IdentityLeaseHeartbeat(heartbeat({ tables: tables as never }))]) {
      const e = validationError(make);
      expect(e.fields).toEqual([field]);
      expect(e.message).toMatch(message);
    }
  });

  it('the old `table` option is refused with what to write instead', () => {
    const e = validationError(() => new LeaderElector({ ...elector(), table: 'conclave-leases' } as never));
    expect(e.message).toMatch(/unknown option of LeaderElector: "table": name the tables with `tables`/);
  });

  it.each(['leaseDuration', 'renewDeadline', 'retryPeriod'])('client-go’s %s is refused naming the option in milliseconds', (name) => {
    const e = validationError(() => new LeaderElector({ ...elector(), [name]: 15 } as never));
    expect(e.message).toContain(`unknown option of LeaderElector: "${name}": it is ${name}Ms here, in milliseconds (client-go's ${name[0]!.toUpperCase()}${name.slice(1)} is a Duration)`);
  });
});

describe('coordinated mode needs a candidacy', () => {
  it('coordinated (the default) without candidacy is a ValidationError naming candidacy and saying what to do', () => {
    const e = validationError(() => new LeaderElector(elector({ candidacy: undefined })));
    expect(e.fields).toEqual(['candidacy']);
    expect(e.message).toMatch(/candidacy: is required in mode 'coordinated' \(the default\): give \{ emulationVersion, binaryVersion \}.*or set mode: 'NoCoordination'/);
    expect(() => new LeaderElector(elector({ mode: 'coordinated', candidacy: undefined }))).toThrow(ValidationError);
  });

  it('NoCoordination with a candidacy is refused; without one it is accepted and stands as nobody’s candidate', () => {
    const e = validationError(() => new LeaderElector(elector({ mode: 'NoCoordination' })));
    expect(e.fields).toEqual(['candidacy']);
    expect(e.message).toMatch(/must not be given with mode 'NoCoordination'.*Drop candidacy/);
    const plain = new LeaderElector(elector({ mode: 'NoCoordination', candidacy: undefined }));
    expect(plain.candidate).toBeUndefined();
  });

  it('the option type refuses a coordinated elector without a candidacy, and NoCoordination with one (checked by tsc)', () => {
    const base = { leaseName: 'l', identity: 'w', client: t.client, callbacks };
    const ok: LeaderElectorOptions[] = [
      { ...base, candidacy },
      { ...base, mode: 'coordinated', candidacy },
      { ...base, mode: 'NoCoordination' },
    ];
    // @ts-expect-error: coordinated (the default) needs a candidacy
    const noCandidacy: LeaderElectorOptions = { ...base };
    // @ts-expect-error: coordinated needs a candidacy
    const coordinatedNoCandidacy: LeaderElectorOptions = { ...base, mode: 'coordinated' };
    // @ts-expect-error: no coordinator elects in NoCoordination
    const raceWithCandidacy: LeaderElectorOptions = { ...base, mode: 'NoCoordination', candidacy };
    // @ts-expect-error: so does electorStarter's (the options less leaseName and callbacks)
    sdk.electorStarter({ identity: 'w', client: t.client });
    sdk.electorStarter({ identity: 'w', client: t.client, candidacy });
    sdk.electorStarter({ identity: 'w', client: t.client, mode: 'NoCoordination' });
    for (const o of ok) expect(() => new LeaderElector(o)).not.toThrow();
    for (const o of [noCandidacy, coordinatedNoCandidacy, raceWithCandidacy]) expect(validationError(() => new LeaderElector(o)).fields).toEqual(['candidacy']);
  });

  it('a bad candidacy is named under candidacy', () => {
    const e = validationError(() => new LeaderElector(elector({ candidacy: { emulationVersion: '1.31.0', binaryVersion: '1.30.0' } })));
    expect(e.fields).toEqual(['candidacy.emulationVersion']);
  });
});

describe('exports', () => {
  it('zod schemas are exported as …Schema, never under a type-like name', () => {
    const schemas = Object.entries(sdk).filter(([, v]) => v instanceof z.ZodType);
    expect(schemas.map(([k]) => k)).toEqual(expect.arrayContaining(['ControllerLeaderConfigurationSchema', 'IdentityLeaseHeartbeatOptionsSchema', 'LeaderElectorOptionsSchema', 'LeaderMigrationConfigurationSchema', 'LeaseCandidateOptionsSchema', 'LeaderElectedSchema']));
    expect(schemas.map(([k]) => k).filter((k) => !k.endsWith('Schema'))).toEqual([]);
    for (const old of ['ElectorOptions', 'CandidateOptions', 'IdentityHeartbeatOptions', 'LeaderMigrationConfiguration']) expect(old in sdk).toBe(false);
  });

  it('the option types are what users write (checked by tsc)', () => {
    const options: LeaderElectorOptions = { leaseName: 'l', identity: 'w', client: t.client, callbacks, candidacy };
    const parsed = sdk.LeaderElectorOptionsSchema.parse(options);
    expect(parsed.tables).toEqual({ leases: 'conclave-leases', candidates: 'conclave-candidates', identities: 'conclave-identities' });
  });

  it('every export of lib/sdk/index.ts has a TSDoc comment', () => {
    const sdkDir = join(dirname(fileURLToPath(import.meta.url)), '../../lib/sdk');
    const index = readFileSync(join(sdkDir, 'index.ts'), 'utf8');
    const missing: string[] = [];
    for (const block of index.matchAll(/export (type )?\{([^}]*)\} from '([^']+)'/g)) {
      const lines = readFileSync(join(sdkDir, block[3]!.replace(/\.js$/, '.ts')), 'utf8').split('\n');
      for (const raw of block[2]!.split(',').map((s) => s.trim()).filter(Boolean)) {
        const name = raw.replace(/^type /, '').split(/\s+as\s+/)[0]!; // `LeaseItem as LeaseSchema`: documented where declared
        // a type-only export is documented on its type (a schema may share the name)
        const kinds = block[1] || raw.startsWith('type ') ? 'type|interface' : 'const|function|class|type|interface';
        const declaration = new RegExp(`^export (?:declare )?(?:abstract )?(?:async )?(?:${kinds}) ${name}\\b`);
        const at = lines.flatMap((l, i) => (declaration.test(l) ? [i] : []));
        expect(at.length, `${name} is declared in ${block[3]}`).toBeGreaterThan(0);
        if (!at.some((i) => i > 0 && lines[i - 1]!.trim().endsWith('*/'))) missing.push(name);
      }
    }
    expect(missing).toEqual([]);
  });
});

describe('options are read-only after construction', () => {
  it('the resolved options are deeply frozen: assignments throw, and nothing the caller holds is frozen or shared', () => {
    const input = elector({ candidacy: { ...candidacy, preferredStrategies: ['OldestEmulationVersion'], labels: { zone: 'a' } } });
    const e = new LeaderElector(input);
    expect(Object.isFrozen(e.options)).toBe(true);
    expect(Object.isFrozen(e.options.tables)).toBe(true);
    expect(Object.isFrozen(e.options.candidacy)).toBe(true);
    expect(Object.isFrozen(e.options.candidacy!.preferredStrategies)).toBe(true);
    expect(Object.isFrozen(e.options.candidacy!.labels)).toBe(true);
    expect(() => {
      // @ts-expect-error: the options are read-only
      e.options.releaseOnCancel = false;
    }).toThrow(TypeError);
    expect(() => {
      // @ts-expect-error: read-only all the way down
      e.options.tables.leases = 'elsewhere';
    }).toThrow(TypeError);
    expect(() => {
      // @ts-expect-error: read-only all the way down
      e.options.candidacy!.preferredStrategies.push('NoCoordination');
    }).toThrow(TypeError);
    expect(e.options.releaseOnCancel).toBe(true);
    // the caller's objects stay the caller's
    expect(Object.isFrozen(input)).toBe(false);
    expect(Object.isFrozen(input.candidacy)).toBe(false);
    input.candidacy!.labels!['zone'] = 'b';
    expect(e.options.candidacy!.labels).toEqual({ zone: 'a' });
  });

  it('so are a LeaseCandidate’s and an IdentityLeaseHeartbeat’s', () => {
    const c = new LeaseCandidate(candidate());
    const hb = new IdentityLeaseHeartbeat(heartbeat({ labels: { zone: 'a' } }));
    for (const o of [c.options, c.options.tables, c.options.preferredStrategies, hb.options, hb.options.tables, hb.options.labels]) expect(Object.isFrozen(o)).toBe(true);
    expect(() => {
      // @ts-expect-error: the options are read-only
      c.options.renewIntervalMs = 1;
    }).toThrow(TypeError);
    expect(() => {
      // @ts-expect-error: the options are read-only
      hb.options.renewIntervalMs = 1;
    }).toThrow(TypeError);
  });
});
