/**
 * A wrong type or an unknown key, as a new user meets them, is a ValidationError naming the field
 * and the fix. Found by a review (2026-12-01) using the packed packages from a fresh project: zod's
 * own messages named the field but no fix ("leaseDurationMs: Invalid input: expected number,
 * received string"; grantWorker's "(root): Unrecognized key: "leaseName""), while the schemas' own
 * messages (a semantic version, a port range) said what to give.
 */
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { ConclaveSettingsSchema, ConclaveTableNamesSchema, GrantGetLeaderSettingsSchema, GrantWorkerSettingsSchema, LeaderDiscoverySettingsSchema, RegionsSchema } from '../infra/settings.js';
import { LeaderElector } from '../lib/sdk/elector.js';
import { LeaderElectorOptionsSchema } from '../lib/sdk/elector-options.js';
import { GetLeaderOptionsSchema, getLeader } from '../lib/sdk/get-leader.js';
import { serveHealth, ServeHealthOptionsSchema } from '../lib/sdk/health.js';
import { LeaseCandidateOptionsSchema } from '../lib/sdk/candidate.js';
import { IdentityLeaseHeartbeatOptionsSchema, ListIdentitiesOptionsSchema } from '../lib/sdk/identity.js';
import { PushChannelOptionsSchema } from '../lib/sdk/push-channel.js';
import { SessionOptionsSchema } from '../lib/sdk/session.js';
import { WithLeaseOptionsSchema } from '../lib/sdk/with-lease-options.js';
import { withLease } from '../lib/sdk/with-lease.js';
import { LeaderMigrationConfigurationSchema } from '../lib/sdk/migration.js';
import { CandidateItem, CandidateSpec } from '../lib/schemas/candidate.js';
import { ElectionConfigSchema } from '../lib/schemas/config.js';
import { PreferredLocations } from '../lib/schemas/location.js';
import { KEPT_ISSUES, LISTED_ISSUES, parse, ValidationError } from '../lib/schemas/validation.js';
import { DynamoDBModel } from '../sim/dynamodb-model/index.js';

const client = new DynamoDBModel({ now: () => 0 }).client({ name: 'test' });
const options = { leaseName: 'nightly-report', identity: 'w-1', mode: 'NoCoordination' as const, client, callbacks: { onStartedLeading: () => undefined } };
/** The message of the ValidationError `f` throws (or rejects with). */
async function messageOf(f: () => unknown): Promise<string> {
  try {
    await f();
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return (e as Error).message;
  }
  throw new Error('no ValidationError');
}

describe('a wrong type or an unknown key names the field and the fix', () => {
  it('a number given as a string (an environment variable read as it is): the number to give', async () => {
    // before: "leaseDurationMs: Invalid input: expected number, received string"
    expect(await messageOf(() => new LeaderElector({ ...options, leaseDurationMs: '15000' as never }))).toContain('leaseDurationMs: must be a number, not the string "15000": give 15000');
    expect(await messageOf(() => serveHealth(new LeaderElector(options), { port: '9090' as never }))).toContain('port: must be a number, not the string "9090": give 9090');
  });

  it('a required field left out: "is required", and what to give', async () => {
    // before: "identity: Invalid input: expected string, received undefined"
    expect(await messageOf(() => new LeaderElector({ ...options, identity: undefined as never }))).toContain('identity: is required: give a string');
  });

  it('one value where a list is wanted: the list to give', async () => {
    // before: "leaseNames: Invalid input: expected array, received string"
    expect(await messageOf(() => parse(GrantWorkerSettingsSchema, { leaseNames: 'nightly-report', components: [] }, 'grantWorker options'))).toContain(
      'leaseNames: must be a list, not the string "nightly-report": give ["nightly-report"]',
    );
  });

  it('a misspelt key: the option it was meant to be', async () => {
    // before: '(root): Unrecognized key: "leaseName"' and, in the SDK, 'unknown option of LeaderElector: "leaseNme"'
    expect(await messageOf(() => parse(GrantWorkerSettingsSchema, { leaseName: ['a'], components: [] }, 'grantWorker options'))).toContain('unknown option "leaseName" (did you mean "leaseNames"?)');
    const { leaseName, ...rest } = options;
    expect(await messageOf(() => new LeaderElector({ ...rest, leaseNme: leaseName } as never))).toContain('unknown option of LeaderElector: "leaseNme" (did you mean "leaseName"?)');
    // nothing close: the options it has
    expect(await messageOf(() => parse(GrantWorkerSettingsSchema, { leaseNames: ['a'], components: [], zzz: 1 }, 'grantWorker options'))).toMatch(/unknown option "zzz" \(the options: leaseNames, allLeases, components, allComponents, sessions\)/);
  });

  it("a schema's own message is kept", async () => {
    expect(await messageOf(() => serveHealth(new LeaderElector(options), { port: 70_000 }))).toContain('port: must be a port from 0 to 65535');
  });
});

describe('an unknown key is reported under its own name', () => {
  // before: '(root): unknown option "leaseName" (did you mean "leaseNames"?)': the field label named
  // no field, and two typos shared one label
  it('an unknown key is reported under its own name, not (root), each with its own hint', async () => {
    const one = (() => {
      try {
        parse(GrantWorkerSettingsSchema, { leaseName: ['a'], components: [] }, 'grantWorker options');
      } catch (e) {
        return e as ValidationError;
      }
      throw new Error('no ValidationError');
    })();
    expect(one.issues).toContainEqual({ field: 'leaseName', message: 'unknown option "leaseName" (did you mean "leaseNames"?)' });
    expect(one.fields).not.toContain('(root)');
    expect(one.message).toMatch(/^invalid grantWorker options: leaseName: unknown option "leaseName" \(did you mean "leaseNames"\?\)/);
    // two at once: each its own field and hint
    const two = await messageOf(() => parse(GrantWorkerSettingsSchema, { leaseName: ['a'], component: [] }, 'grantWorker options'));
    expect(two).toContain('leaseName: unknown option "leaseName" (did you mean "leaseNames"?)');
    expect(two).toContain('component: unknown option "component" (did you mean "components"?)');
    // nested: under the object it belongs to
    const nested = z.object({ election: z.object({ deadline: z.number() }).strict() }).strict();
    expect(await messageOf(() => parse(nested, { election: { deadline: 1, deadlin: 2 } }, 'config'))).toBe('invalid config: election.deadlin: unknown option "deadlin" (did you mean "deadline"?)');
    // an SDK object's options (its own message): the same
    const { leaseName, ...rest } = options;
    expect(await messageOf(() => new LeaderElector({ ...rest, leaseNme: leaseName } as never))).toContain('leaseNme: unknown option of LeaderElector: "leaseNme" (did you mean "leaseName"?)');
    expect(await messageOf(() => new LeaderElector({ ...options, leaseNme: 1, identty: 2 } as never))).toMatch(/leaseNme: unknown option of LeaderElector: "leaseNme" \(did you mean "leaseName"\?\); identty: unknown option of LeaderElector: "identty" \(did you mean "identity"\?\)/);
  });
});

describe('every problem of the options in one error', () => {
  // before: zod skips an object's cross-field checks while any field fails its own schema, so a
  // missing identity hid renewDeadlineMs ≥ leaseDurationMs until identity was fixed
  it('a bad field and a bad combination are reported together', async () => {
    const both = await messageOf(() => new LeaderElector({ ...options, identity: undefined as never, leaseDurationMs: 10_000, renewDeadlineMs: 10_000 }));
    expect(both).toContain('identity: is required: give a string');
    expect(both).toContain('renewDeadlineMs: must be < leaseDurationMs (10000)');
    // coordinated without a candidacy, with neither client nor callbacks
    const { client: _c, callbacks: _cb, mode: _m, ...bare } = options;
    const three = await messageOf(() => new LeaderElector(bare as never));
    expect(three).toContain('client: ');
    expect(three).toContain('callbacks: ');
    expect(three).toContain("candidacy: is required in mode 'coordinated'");
  });

  it('a combination is judged only from fields that passed their own schema', async () => {
    // a bad value is reported as itself, not again through a comparison it cannot take part in
    const bad = await messageOf(() => new LeaderElector({ ...options, renewDeadlineMs: 'soon' as never, identity: '' }));
    expect(bad).toContain('renewDeadlineMs: must be a number');
    expect(bad).not.toContain('retryPeriodMs:');
    expect(bad).toContain('identity: ');
    // a value that is no session is reported, not read
    const session = await messageOf(() => new LeaderElector({ ...options, mode: 'coordinated', candidacy: { emulationVersion: '1.0.0', binaryVersion: '1.0.0' }, session: {} as never }));
    expect(session).toContain('session: ');
    expect(session).not.toContain('TypeError');
    // not an object at all: only that
    expect(await messageOf(() => new LeaderElector(7 as never))).toMatch(/^invalid LeaderElector options: \(root\): must be the LeaderElector options: an object with [^;]*$/);
  });
});

describe("every problem of the other objects' options in one error", () => {
  // before: each object's cross-field checks sat behind its fields' types (zod skips an object's
  // superRefine while a field is not of its type), so the bad field alone was reported and the
  // bad combination only after it was fixed
  const rows: { name: string; schema: z.ZodType; input: Record<string, unknown>; want: string[] }[] = [
    {
      name: 'LeaseCandidate: emulationVersion above binaryVersion, and no name',
      schema: LeaseCandidateOptionsSchema,
      input: { leaseName: 'nightly-report', emulationVersion: '2.0.0', binaryVersion: '1.0.0', client },
      want: ['name: is required', 'emulationVersion: must be <= binaryVersion 1.0.0'],
    },
    {
      name: 'LeaseCandidate: emulationVersion above binaryVersion, and a renewal interval out of bounds',
      schema: LeaseCandidateOptionsSchema,
      input: { leaseName: 'nightly-report', name: 'w-1', emulationVersion: '2.0.0', binaryVersion: '1.0.0', client, renewIntervalMs: 5 },
      want: ['renewIntervalMs: must be >= 1000 ms', 'emulationVersion: must be <= binaryVersion 1.0.0'],
    },
    {
      name: "LeaderElector: a candidacy emulating above its binary, and no identity",
      schema: LeaderElectorOptionsSchema,
      input: { ...options, identity: undefined, mode: 'coordinated', candidacy: { emulationVersion: '2.0.0', binaryVersion: '1.0.0' } },
      want: ['identity: is required', 'candidacy.emulationVersion: must be <= binaryVersion 1.0.0'],
    },
    {
      name: "IdentityLeaseHeartbeat: a lease too short for its renewals, and no component",
      schema: IdentityLeaseHeartbeatOptionsSchema,
      input: { client, renewIntervalMs: 10_000, leaseDurationSeconds: 1 },
      want: ['component: is required', 'leaseDurationSeconds: must be at least'],
    },
    {
      name: 'Session: renewals that do not fit the deadline, and a prefix of the wrong type',
      schema: SessionOptionsSchema,
      input: { client, prefix: 5, renewIntervalMs: 5_000, retryPeriodMs: 1_500, renewDeadlineMs: 6_000 },
      want: ['prefix: must be a string', 'renewIntervalMs: must be < renewDeadlineMs - retryPeriodMs (4500)'],
    },
    {
      name: "withLease: push with mode 'NoCoordination', and a waitMs of the wrong type",
      schema: WithLeaseOptionsSchema,
      input: { client, mode: 'NoCoordination', push: { watch: () => () => undefined, wake: () => undefined, healthy: () => true }, waitMs: 'soon' },
      want: ['waitMs: must be a number', "push: must not be given with mode 'NoCoordination'"],
    },
    {
      name: "withLease: push with mode 'NoCoordination', and a signal that is none",
      schema: WithLeaseOptionsSchema,
      input: { client, mode: 'NoCoordination', push: { watch: () => () => undefined, wake: () => undefined, healthy: () => true }, signal: 'stop' },
      want: ['signal: must be an AbortSignal', "push: must not be given with mode 'NoCoordination'"],
    },
    {
      name: 'PushChannel: an IoT Core endpoint without a client, and a keepalive of the wrong type',
      schema: PushChannelOptionsSchema,
      input: { endpoint: 'wss://abc-ats.iot.us-east-1.amazonaws.com/mqtt', keepaliveSeconds: '240' },
      want: ['keepaliveSeconds: must be a number', 'client: is required for an IoT Core endpoint'],
    },
    {
      name: 'PushChannel: a client id of another deployment, and a session that is none',
      schema: PushChannelOptionsSchema,
      input: { endpoint: 'ws://127.0.0.1:1883/mqtt', clientId: 'other', session: 7 },
      want: ['session: must be the process', 'clientId: must start with "conclave-'],
    },
  ];
  // the CDK construct's settings (infra/settings.ts), as its props and grants give them
  const route53 = { hostedZone: 'example.com', recordName: '{lease}.leader', ttl: 10 };
  const replicas = ['us-east-1', 'us-east-2', 'us-west-2'];
  rows.push(
    {
      name: 'grantWorker: leaseNames and allLeases both, and components not a list',
      schema: GrantWorkerSettingsSchema,
      input: { leaseNames: ['nightly-report'], allLeases: true, components: 'scheduler' },
      want: ['components: must be a list', 'allLeases: give leaseNames or allLeases, not both'],
    },
    {
      name: 'grantGetLeader: leaseNames and allLeases both, and leaseNames not a list',
      schema: GrantGetLeaderSettingsSchema,
      input: { leaseNames: 'nightly-report', allLeases: true },
      want: ['leaseNames: must be a list', 'allLeases: give leaseNames or allLeases, not both'],
    },
    {
      name: 'Conclave tableNames: two tables of one name, and a third of the wrong type',
      schema: ConclaveTableNamesSchema,
      input: { leases: 'jobs', candidates: 'jobs', identities: 5 },
      want: ['identities: must be a string', "candidates: is the leases table's name too"],
    },
    {
      name: 'Conclave regions: a Region twice, and a witness of the wrong type',
      schema: RegionsSchema,
      input: { replicas: ['us-east-1', 'us-east-1', 'us-west-2'], witness: 5 },
      want: ['witness: must be an AWS Region name', 'replicas[1]: lists us-east-1 twice'],
    },
    {
      name: 'Conclave leaderDiscovery: cloudMap and route53 both, and leaseNames not a list',
      schema: LeaderDiscoverySettingsSchema,
      input: { cloudMap: { namespace: true }, route53, leaseNames: 'nightly-report' },
      want: ['leaseNames: must be a list', 'route53: give cloudMap or route53, not both'],
    },
    {
      name: 'Conclave props: leaderDiscovery and regions without a table prefix, a tick of the wrong type and a prop misspelt',
      schema: ConclaveSettingsSchema,
      input: { tick: 'PT1M', election: {}, regions: { replicas }, leaderDiscovery: { route53 }, tablPrefix: 'jobs' },
      want: ['tick: must be a Duration', 'tablPrefix: is not a prop of Conclave', 'leaderDiscovery: is not supported with `regions`', 'tablePrefix: is required with `regions`'],
    },
  );
  it.each(rows)('$name', async ({ schema, input, want }) => {
    const message = await messageOf(() => parse(schema, input, 'options'));
    for (const w of want) expect(message).toContain(w);
  });
});

describe('every problem of the options in one error, with tables of the wrong type', () => {
  // before: TablesSchema's z.custom aborted (zod's default for custom), and an aborted issue stops
  // even the checks that run on any object (superRefine when), so `tables: 5` was the only problem
  // reported and each object's cross-field checks waited for it to be fixed
  const TABLES = 'tables: must be a table name prefix such as "conclave", or { prefix?, leases?, candidates?, identities? }';
  const push = { watch: () => () => undefined, wake: () => undefined, healthy: () => true };
  const rows: { name: string; schema: z.ZodType; input: Record<string, unknown>; want: string[] }[] = [
    {
      name: 'LeaderElector: a renew deadline not below the lease duration, and tables a number',
      schema: LeaderElectorOptionsSchema,
      input: { ...options, tables: 5, leaseDurationMs: 10_000, renewDeadlineMs: 10_000 },
      want: ['renewDeadlineMs: must be < leaseDurationMs (10000)'],
    },
    {
      name: 'LeaderElector: a candidacy emulating above its binary, and tables a list',
      schema: LeaderElectorOptionsSchema,
      input: { ...options, tables: ['conclave'], mode: 'coordinated', candidacy: { emulationVersion: '2.0.0', binaryVersion: '1.0.0' } },
      want: ['candidacy.emulationVersion: must be <= binaryVersion 1.0.0'],
    },
    {
      name: 'LeaseCandidate: emulationVersion above binaryVersion, and tables null',
      schema: LeaseCandidateOptionsSchema,
      input: { leaseName: 'nightly-report', name: 'w-1', emulationVersion: '2.0.0', binaryVersion: '1.0.0', client, tables: null },
      want: ['emulationVersion: must be <= binaryVersion 1.0.0'],
    },
    {
      name: 'Session: renewals that do not fit the deadline, and tables true',
      schema: SessionOptionsSchema,
      input: { client, tables: true, renewIntervalMs: 5_000, retryPeriodMs: 1_500, renewDeadlineMs: 6_000 },
      want: ['renewIntervalMs: must be < renewDeadlineMs - retryPeriodMs (4500)'],
    },
    {
      name: 'IdentityLeaseHeartbeat: a lease too short for its renewals, and tables a number',
      schema: IdentityLeaseHeartbeatOptionsSchema,
      input: { client, component: 'scheduler', tables: 5, renewIntervalMs: 10_000, leaseDurationSeconds: 1 },
      want: ['leaseDurationSeconds: must be at least'],
    },
    {
      name: "withLease: push with mode 'NoCoordination', and tables a number",
      schema: WithLeaseOptionsSchema,
      input: { client, mode: 'NoCoordination', push, tables: 5 },
      want: ["push: must not be given with mode 'NoCoordination'"],
    },
    {
      name: 'PushChannel: an IoT Core endpoint without a client, and tables a number (a client id is not judged against tables it has not got)',
      schema: PushChannelOptionsSchema,
      input: { endpoint: 'wss://abc-ats.iot.us-east-1.amazonaws.com/mqtt', tables: 5, clientId: 'other' },
      want: ['client: is required for an IoT Core endpoint'],
    },
    {
      name: 'getLeader (no cross-field checks): a clock skew out of bounds and a misspelt option, and tables a number',
      schema: GetLeaderOptionsSchema,
      input: { client, tables: 5, clockSkewMs: -1, tabels: 'conclave' },
      want: ['clockSkewMs: ', 'tabels: unknown option of getLeader: "tabels" (did you mean "tables"?)'],
    },
  ];
  it.each(rows)('$name', async ({ schema, input, want }) => {
    const message = await messageOf(() => parse(schema, input, 'options'));
    // the message as before, once (not again as the object or prefix it is not)
    expect(message.split(TABLES)).toHaveLength(2);
    expect(message).not.toContain('tables.');
    expect(message).not.toContain('clientId:');
    for (const w of want) expect(message).toContain(w);
  });

  it('a LeaderElector made with them says both', async () => {
    const both = await messageOf(() => new LeaderElector({ ...options, tables: 5 as never, leaseDurationMs: 10_000, renewDeadlineMs: 10_000 }));
    expect(both).toContain(TABLES);
    expect(both).toContain('renewDeadlineMs: must be < leaseDurationMs (10000)');
  });

  it('tables of their type but a bad prefix or key: reported as before, with the rest', async () => {
    const input = { ...options, leaseDurationMs: 10_000, renewDeadlineMs: 10_000 };
    const prefix = await messageOf(() => parse(LeaderElectorOptionsSchema, { ...input, tables: 'bad prefix!' }, 'options'));
    expect(prefix).toContain('tables: must be a table name prefix such as "conclave": 1-244 of A-Z a-z 0-9 _ . -');
    expect(prefix).toContain('renewDeadlineMs: must be < leaseDurationMs (10000)');
    const key = await messageOf(() => parse(LeaderElectorOptionsSchema, { ...input, tables: { lease: 'jobs' } }, 'options'));
    expect(key).toContain('tables: unknown key "lease": name tables with prefix, leases, candidates, identities');
    expect(key).toContain('renewDeadlineMs: must be < leaseDurationMs (10000)');
  });
});

describe('every problem of the options in one error, with a session that is not a Session', () => {
  // before: SessionSchema's z.custom aborted, so `session: {}` was the only problem reported; the
  // checks that read the session's options are judged only when it parsed (everyProblem.parsed)
  const SESSION = 'session: must be a Session (new Session({ client }))';
  it('LeaderElector: a renew deadline not below the lease duration, and a plain object as session', async () => {
    const message = await messageOf(() => parse(LeaderElectorOptionsSchema, { ...options, session: {}, leaseDurationMs: 10_000, renewDeadlineMs: 10_000 }, 'options'));
    expect(message.split(SESSION)).toHaveLength(2);
    expect(message).toContain('renewDeadlineMs: must be < leaseDurationMs (10000)');
  });
  it('LeaseCandidate: emulationVersion above binaryVersion, and a session that is a string', async () => {
    const message = await messageOf(() =>
      parse(LeaseCandidateOptionsSchema, { leaseName: 'nightly-report', name: 'w-1', instance: 'w-1@p', emulationVersion: '2.0.0', binaryVersion: '1.0.0', client, session: 'p' }, 'options'),
    );
    expect(message.split(SESSION)).toHaveLength(2);
    expect(message).toContain('emulationVersion: must be <= binaryVersion 1.0.0');
    expect(message).not.toContain('instance:');
  });
});

describe('an empty name (or an address refused whole) hides no other problem, and is said once', () => {
  // before: Name, LocationName, Address, the advertised address and the migration's component
  // refused with `abort: true`, which stops even the checks everyProblem runs on any object, so
  // `identity: ''` beside leaseDurationMs = renewDeadlineMs = 10000 reported only "identity: must
  // not be empty". Each field keeps one message: "" is not also "may use letters, digits …".
  const timings = { leaseDurationMs: 10_000, renewDeadlineMs: 10_000 };
  const TIMINGS: [string, string] = ['renewDeadlineMs', 'must be < leaseDurationMs (10000)'];
  const coordinated = { ...options, mode: 'coordinated', candidacy: { emulationVersion: '1.0.0', binaryVersion: '1.0.0' } };
  const rows: { name: string; schema: z.ZodType; input: unknown; want: [field: string, message: string][] }[] = [
    { name: 'LeaderElector: identity empty', schema: LeaderElectorOptionsSchema, input: { ...options, ...timings, identity: '' }, want: [['identity', 'must not be empty'], TIMINGS] },
    { name: 'LeaderElector: leaseName empty', schema: LeaderElectorOptionsSchema, input: { ...options, ...timings, leaseName: '' }, want: [['leaseName', 'must not be empty'], TIMINGS] },
    { name: 'LeaderElector: advertise empty', schema: LeaderElectorOptionsSchema, input: { ...options, ...timings, advertise: '' }, want: [['advertise', 'must not be empty (a URL or host:port)'], TIMINGS] },
    {
      name: 'LeaderElector: advertise longer than an address may be',
      schema: LeaderElectorOptionsSchema,
      input: { ...options, ...timings, advertise: `http://${'a'.repeat(2_100)}:8080` },
      want: [['advertise', 'must be at most 2048 characters (a URL or host:port)'], TIMINGS],
    },
    {
      name: 'LeaderElector: advertise neither a URL nor host:port',
      schema: LeaderElectorOptionsSchema,
      input: { ...options, ...timings, advertise: 'http://' },
      want: [['advertise', 'must be a URL such as http://10.0.0.5:8080 or host:port'], TIMINGS],
    },
    {
      name: "LeaderElector: a candidacy's zone empty",
      schema: LeaderElectorOptionsSchema,
      input: { ...coordinated, ...timings, candidacy: { emulationVersion: '1.0.0', binaryVersion: '1.0.0', location: { zone: '' } } },
      want: [['candidacy.location.zone', 'must not be empty'], TIMINGS],
    },
    {
      name: 'LeaseCandidate: name empty, and emulationVersion above binaryVersion',
      schema: LeaseCandidateOptionsSchema,
      input: { leaseName: 'nightly-report', name: '', emulationVersion: '2.0.0', binaryVersion: '1.0.0', client },
      want: [['name', 'must not be empty'], ['emulationVersion', 'must be <= binaryVersion 1.0.0']],
    },
    {
      name: 'leader migration: a component empty, and a controller listed twice',
      schema: LeaderMigrationConfigurationSchema,
      input: { leaderName: 'migration', controllerLeaders: [{ name: 'route', component: '' }, { name: 'route', component: '*' }] },
      want: [['controllerLeaders[0].component', 'must not be empty: a component name, or "*" for any component'], ['controllerLeaders[1].name', '"route" is already listed at controllerLeaders[0]']],
    },
  ];
  it.each(rows)('$name', ({ schema, input, want }) => expectIssues(schema, input, want));
});

describe("a candidacy's bad field or strategy hides none of its cross-field checks", () => {
  // before: the SDK judged CandidateSpec's rules (emulation ≤ binary, no strategy twice) only for a
  // field with no issue at all, and a LeaderElector's candidacy only when nothing in it had one, so
  // a list with one bad strategy hid a strategy listed twice, and a bad zone an emulation above its
  // binary. A rule still reads only values that passed their own checks: a bad strategy is not
  // counted among the duplicates.
  const strategies = ['OldestEmulationVersion', 'OldestEmulationVersion', 'bad name!'];
  const TWICE = 'must not list a strategy twice: "OldestEmulationVersion" is at [0] and [1]; drop one';
  const BAD = 'must be a strategy name such as "OldestEmulationVersion"';
  const spec = { leaseName: 'nightly-report', name: 'w-1', emulationVersion: '1.0.0', binaryVersion: '1.0.0' };
  const coordinated = { ...options, mode: 'coordinated' };
  const rows: { name: string; schema: z.ZodType; input: unknown; want: [field: string, message: string][] }[] = [
    {
      name: 'LeaseCandidate: a strategy twice beside a bad one',
      schema: LeaseCandidateOptionsSchema,
      input: { ...spec, client, preferredStrategies: strategies },
      want: [['preferredStrategies[2]', BAD], ['preferredStrategies', TWICE]],
    },
    {
      name: 'LeaseCandidate: a strategy twice around one of the wrong type',
      schema: LeaseCandidateOptionsSchema,
      input: { ...spec, client, preferredStrategies: ['OldestEmulationVersion', 5, 'OldestEmulationVersion'] },
      want: [['preferredStrategies[1]', 'must be a string, not the number 5'], ['preferredStrategies', 'must not list a strategy twice: "OldestEmulationVersion" is at [0] and [2]; drop one']],
    },
    {
      name: "LeaderElector: a candidacy's strategy twice beside a bad one",
      schema: LeaderElectorOptionsSchema,
      input: { ...coordinated, candidacy: { emulationVersion: '1.0.0', binaryVersion: '1.0.0', preferredStrategies: strategies } },
      want: [['candidacy.preferredStrategies[2]', BAD], ['candidacy.preferredStrategies', TWICE]],
    },
    {
      name: "LeaderElector: a candidacy emulating above its binary, and its zone bad",
      schema: LeaderElectorOptionsSchema,
      input: { ...coordinated, candidacy: { emulationVersion: '2.0.0', binaryVersion: '1.0.0', location: { zone: 'US East' } } },
      want: [['candidacy.location.zone', 'must be a zone or region name'], ['candidacy.emulationVersion', 'must be <= binaryVersion 1.0.0']],
    },
    {
      name: 'CandidateSpec: a strategy twice beside a bad one',
      schema: CandidateSpec,
      input: { ...spec, preferredStrategies: strategies },
      want: [['preferredStrategies[2]', BAD], ['preferredStrategies', TWICE]],
    },
    {
      name: 'CandidateSpec: a bad strategy twice is said at each index, not again as listed twice',
      schema: CandidateSpec,
      input: { ...spec, preferredStrategies: ['bad name!', 'bad name!'] },
      want: [['preferredStrategies[0]', BAD], ['preferredStrategies[1]', BAD]],
    },
  ];
  it.each(rows)('$name', ({ schema, input, want }) => expectIssues(schema, input, want));
});

describe("a preference of locations: a bad entry hides no duplicate, nor is counted as one", () => {
  // found by a review (2026-12-02): PreferredLocations counted every entry, bad ones too, in its
  // "listed twice" check (["", ""] was said to list a zone twice beside "must not be empty" at each),
  // a wrong type at one index stopped the check, so a real duplicate went untold until it was fixed,
  // and the duplicate's message named neither the zone nor where it was
  const BAD = 'must be a zone or region name in lowercase letters';
  const rows: { name: string; schema: z.ZodType; input: unknown; want: [field: string, message: string][] }[] = [
    {
      name: 'a zone twice around an entry of the wrong type',
      schema: PreferredLocations,
      input: ['us-east-1a', 5, 'us-east-1a'],
      want: [['[1]', 'must be a string, not the number 5'], ['(root)', 'must not list a zone or region twice: "us-east-1a" is at [0] and [2]; drop one']],
    },
    {
      name: 'an empty entry twice: each named at its index, not again as listed twice',
      schema: PreferredLocations,
      input: ['', ''],
      want: [['[0]', 'must not be empty'], ['[1]', 'must not be empty']],
    },
    {
      name: 'a bad zone twice beside a good one twice: the bad at each index, the good one listed twice',
      schema: PreferredLocations,
      input: ['US-EAST-1A', 'us-east-1', 'US-EAST-1A', 'us-east-1'],
      want: [['[0]', BAD], ['[2]', BAD], ['(root)', 'must not list a zone or region twice: "us-east-1" is at [1] and [3]; drop one']],
    },
    {
      name: 'more than 16 entries, one of them bad: both told',
      schema: PreferredLocations,
      input: [...Array.from({ length: 16 }, (_, i) => `us-east-${i + 1}`), 7],
      want: [['[16]', 'must be a string, not the number 7'], ['(root)', 'must list at most 16 zones or regions']],
    },
    {
      name: "the coordinator's election configuration: a region twice beside an entry of the wrong type",
      schema: ElectionConfigSchema,
      input: { preferredLocations: ['eu-west-1', null, 'eu-west-1'] },
      want: [['preferredLocations[1]', 'must be a string, not null'], ['preferredLocations', 'must not list a zone or region twice: "eu-west-1" is at [0] and [2]; drop one']],
    },
  ];
  it.each(rows)('$name', ({ schema, input, want }) => expectIssues(schema, input, want));
});

describe('a number out of bounds and a bad table name inside tables say what to give', () => {
  // before: zod's defaults, "renewDeadlineMs: Too small: expected number to be >0" and
  // "tables.prefix: Invalid input: expected string, received number" (TablesSchema's own parse
  // did not use the messages that name a fix)
  it('a bound names itself and the value given', async () => {
    const message = await messageOf(() => parse(LeaderElectorOptionsSchema, { ...options, renewDeadlineMs: -1 }, 'options'));
    expect(message).toContain('renewDeadlineMs: must be > 0, not the number -1');
    const skew = await messageOf(() => parse(GetLeaderOptionsSchema, { client, clockSkewMs: -1 }, 'options'));
    expect(skew).toContain('clockSkewMs: must be >= 0, not the number -1');
    expect(skew).not.toContain('Too small');
  });
  it("a table name of the wrong type inside tables is told what to give", async () => {
    const message = await messageOf(() => parse(LeaderElectorOptionsSchema, { ...options, tables: { prefix: 5, leases: null } }, 'options'));
    expect(message).toContain('tables.prefix: must be a string, not the number 5: give "5"');
    expect(message).toContain('tables.leases: must be a string, not null');
    expect(message).not.toContain('Invalid input');
  });
});

/** `input` refused by `schema` with exactly `want`'s fields, in order, each message starting as given. */
function expectIssues(schema: z.ZodType, input: unknown, want: [field: string, message: string][]): void {
  let issues: readonly { field: string; message: string }[] = [];
  try {
    parse(schema, input, 'options');
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    issues = (e as ValidationError).issues;
  }
  expect(issues.map((i) => i.field), issues.map((i) => `${i.field}: ${i.message}`).join('\n')).toEqual(want.map(([field]) => field));
  want.forEach(([, message], n) => expect(issues[n]!.message.startsWith(message), `${issues[n]!.field}: ${issues[n]!.message}`).toBe(true));
}

describe("a config field's problem is one issue, naming the field once and the fix", () => {
  /** The issues of `raw` as the Conclave construct's props (tick in seconds, as conclave.ts passes it). */
  const issues = (schema: z.ZodType, raw: unknown) => {
    try {
      parse(schema, raw, 'Conclave props');
    } catch (e) {
      return (e as ValidationError).issues;
    }
    return [];
  };
  it.each([
    // before: "must be at least 1 minute: ..." and "must be whole minutes: ..." for Duration.seconds(10)
    [10, 'must be whole minutes, at least one (EventBridge schedules run at most once a minute): give Duration.minutes(1), not Duration.seconds(10)'],
    [90, 'must be whole minutes, at least one (EventBridge schedules run at most once a minute): give Duration.minutes(2), not Duration.seconds(90)'],
    [0.5, 'must be whole minutes, at least one (EventBridge schedules run at most once a minute): give Duration.minutes(1), not Duration.seconds(0.5)'],
  ])('tick: Duration.seconds(%s) is one issue with the Duration to give', (tick, message) => {
    expect(issues(ConclaveSettingsSchema, { tick, election: {} })).toEqual([{ field: 'tick', message }]);
  });
  it.each([
    // before: "election.ackWindowMs: ackWindowMs must be > 0" (the field twice, no fix); 0.5 gave two issues
    [{ ackWindowMs: 0 }, 'election.ackWindowMs', 'must be whole milliseconds above 0, e.g. 5000 (the default)'],
    [{ ackWindowMs: 0.5 }, 'election.ackWindowMs', 'must be whole milliseconds above 0, e.g. 5000 (the default)'],
    [{ candidateStaleAfterMs: -1 }, 'election.candidateStaleAfterMs', 'must be whole milliseconds above 0, e.g. 1800000 (the default)'],
    [{ electedLeaseDurationSeconds: 0.5 }, 'election.electedLeaseDurationSeconds', 'must be a whole number, not the number 0.5'],
    [{ concurrency: 1.5 }, 'election.concurrency', 'must be a whole number, not the number 1.5'],
  ])('election %j is one issue under %s', (election, field, message) => {
    const found = issues(ConclaveSettingsSchema, { tick: 60, election });
    expect(found).toEqual([{ field, message }]);
    expect(found[0]!.message).not.toContain(field.split('.')[1]);
  });
  it('the CLI and the functions read the same config, the same way: one issue a field', () => {
    expect(issues(ElectionConfigSchema, { ackWindowMs: -1, clockSkewMs: 0.5 })).toEqual([
      { field: 'ackWindowMs', message: 'must be whole milliseconds above 0, e.g. 5000 (the default)' },
      { field: 'clockSkewMs', message: 'must be a whole number, not the number 0.5' },
    ]);
  });
});

describe('a value outside an enum names the field, the value given and the values allowed', () => {
  // found from outside (packed SDK, 2026-12-02): zod's own "Invalid option: expected one of
  // "server"|"none"", with no value given, for a bad clockSync; a union with an enum ("Invalid input") said less
  it('clockSync on a LeaderElector and on getLeader', async () => {
    expect(await messageOf(() => new LeaderElector({ ...options, clockSync: 'servr' as 'server' }))).toContain('clockSync: must be "server" or "none", not the string "servr"');
    expect(await messageOf(() => getLeader('nightly-report', { client, clockSync: 'local' as 'none' }))).toContain('clockSync: must be "server" or "none", not the string "local"');
  });

  it("a union of an enum and another kind (platform: 'detect', 'none' or a platform object) names both", async () => {
    expect(await messageOf(() => new LeaderElector({ ...options, platform: 'ecs' as 'none' }))).toContain('platform: must be an object, "detect" or "none", not the string "ecs"');
  });

  /** Every field of `schema` (nested objects too) whose values are an enum's, or a union holding one: its path and allowed values. */
  function enumFields(schema: z.ZodType, path: string[] = []): { path: string[]; values: unknown[] }[] {
    const def = (schema as unknown as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def;
    if (def.type === 'optional' || def.type === 'default' || def.type === 'nullable') return enumFields(def['innerType'] as z.ZodType, path);
    if (def.type === 'object') return Object.entries(def['shape'] as Record<string, z.ZodType>).flatMap(([k, v]) => enumFields(v, [...path, k]));
    if (def.type === 'enum') return [{ path, values: Object.values(def['entries'] as Record<string, unknown>) }];
    if (def.type === 'union') {
      const inner = (def['options'] as z.ZodType[]).flatMap((o) => enumFields(o, path)).filter((f) => f.path.length === path.length);
      return inner.length ? [{ path, values: inner.flatMap((f) => f.values) }] : [];
    }
    return [];
  }
  const SCHEMAS = { LeaderElectorOptionsSchema, GetLeaderOptionsSchema, WithLeaseOptionsSchema, LeaseCandidateOptionsSchema, SessionOptionsSchema, IdentityLeaseHeartbeatOptionsSchema, ListIdentitiesOptionsSchema, PushChannelOptionsSchema, ServeHealthOptionsSchema } as const;
  const fields = Object.entries(SCHEMAS).flatMap(([name, schema]) => enumFields(schema as z.ZodType).map((f) => ({ name, ...f })));

  it('the walk finds the enum fields this test is about', () => {
    const found = fields.map((f) => `${f.name}.${f.path.join('.')}`);
    for (const f of ['LeaderElectorOptionsSchema.clockSync', 'LeaderElectorOptionsSchema.mode', 'LeaderElectorOptionsSchema.onLeaderWorkFailure', 'LeaderElectorOptionsSchema.platform', 'GetLeaderOptionsSchema.clockSync', 'WithLeaseOptionsSchema.mode', 'WithLeaseOptionsSchema.platform'])
      expect(found).toContain(f);
  });

  it.each(fields.map((f) => [`${f.name}: ${f.path.join('.')}`, f] as const))('%s', (_, f) => {
    // the field alone inside its objects, so no other field's problem is in the message
    const wrap = (path: string[], leaf: z.ZodType): z.ZodType => (path.length ? z.object({ [path[0]!]: wrap(path.slice(1), leaf) }) : leaf);
    const value = (path: string[], leaf: unknown): unknown => (path.length ? { [path[0]!]: value(path.slice(1), leaf) } : leaf);
    let leaf = SCHEMAS[f.name as keyof typeof SCHEMAS] as z.ZodType;
    for (const k of f.path) {
      let d = (leaf as unknown as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def;
      while (d.type !== 'object') {
        leaf = d['innerType'] as z.ZodType;
        d = (leaf as unknown as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def;
      }
      leaf = (d['shape'] as Record<string, z.ZodType>)[k]!;
    }
    let message = '';
    try {
      parse(wrap(f.path, leaf), value(f.path, 'no-such-value'), 'options');
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain(`${f.path.join('.')}: must be `);
    for (const v of f.values) expect(message).toContain(JSON.stringify(v));
    expect(message).toContain('not the string "no-such-value"');
  });
});

describe('a wait or timeout longer than a Node timer can hold is refused, naming the field and the fix', () => {
  // found from outside (packed SDK, 2026-12-02): serveHealth({ timeoutMs: 2 ** 40 }) started, and
  // Node printed a TimeoutOverflowWarning ("Timeout duration was set to 1") once a timer was set
  const HUGE = 2 ** 40;
  const BOUND = 'must be at most 2147483647 ms (about 24.8 days: a Node timer set longer fires at once)';
  it('serveHealth timeoutMs', async () => {
    expect(await messageOf(() => serveHealth(new LeaderElector(options), { port: 0, host: '127.0.0.1', timeoutMs: HUGE }))).toContain(`timeoutMs: ${BOUND}, not the number ${HUGE}`);
  });
  it('withLease waitMs', async () => {
    expect(await messageOf(() => withLease('nightly-report', async () => 1, { client, waitMs: HUGE }))).toContain(`waitMs: ${BOUND}, not the number ${HUGE}`);
  });
  it('the longest a timer holds is taken', () => {
    expect(ServeHealthOptionsSchema.parse({ port: 0, timeoutMs: 2_147_483_647 }).timeoutMs).toBe(2_147_483_647);
    expect(WithLeaseOptionsSchema.safeParse({ client, waitMs: 2_147_483_647 }).success).toBe(true);
  });
});

describe('a row of many long keys makes a bounded error, not one as large as itself', () => {
  // found by a review (confirmed on DynamoDB Local): each refused row's message held every issue,
  // each field path its label name whole, so 5 candidate rows of 368 KB made 2 MB of warnings a
  // tick, and a session row of 25 label names of 15 KB a poison message of 300 KB
  const row = { leaseName: 'job', name: 'w', binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: ['OldestEmulationVersion'], renewTime: 1, createdAt: 1, revision: 1 };
  const refusal = (raw: unknown): ValidationError => {
    try {
      parse(CandidateItem, raw, 'candidate row job/w');
    } catch (e) {
      return e as ValidationError;
    }
    throw new Error('no ValidationError');
  };
  const labels = (n: number, length: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${i}`.padEnd(length, 'k'), 'v']));

  it('25 label names of 15 KB and a renewTime in text: each key cut to 64 characters, the first 10 issues listed and the rest counted, renewTime still among the fields', () => {
    const e = refusal({ ...row, renewTime: 'now', labels: labels(25, 15_000) });
    // before the fix: 375,878 characters
    expect(e.message.length).toBeLessThan(4_096);
    expect(e.count).toBe(26);
    expect(e.issues).toHaveLength(26);
    expect(e.message).toMatch(/^invalid candidate row job\/w: renewTime: must be a number, not the string "now"; labels\.0k{63}\.\.\.\(\+14936 chars\): /);
    expect(e.message).toMatch(/; and 16 more issues$/);
    expect(e.fields).toContain('renewTime');
    for (const f of e.fields) expect(f.length).toBeLessThanOrEqual('labels.'.length + 64 + '...(+14936 chars)'.length);
  });

  it('500 refused label names (64 KB of row): KEPT_ISSUES kept, the count told, and a field after them (session) still among the fields', () => {
    const e = refusal({ ...row, labels: labels(500, 129), session: 5 });
    expect(e.count).toBe(501);
    expect(e.issues).toHaveLength(KEPT_ISSUES);
    expect(e.message).toMatch(new RegExp(`; and ${501 - LISTED_ISSUES} more issues$`));
    expect(e.message.length).toBeLessThan(4_096);
    expect(e.fields).toContain('session'); // what the coordinator reads to tell an unstamped row (lib/functions/core.ts)
    // an error rethrown with another's issues counts as it did
    expect(new ValidationError('session row s', e.issues).message).toMatch(new RegExp(`; and ${501 - LISTED_ISSUES} more issues$`));
  });

  it('an unknown option of 64 KB: its name cut in the field and in the message', async () => {
    const key = 'z'.repeat(65_536);
    const message = await messageOf(() => parse(GrantWorkerSettingsSchema, { leaseNames: ['a'], components: [], [key]: 1 }, 'grantWorker options'));
    // before the fix: 131,194 characters, the name twice
    expect(message.length).toBeLessThan(4_096);
    expect(message).toContain(`${'z'.repeat(64)}...(+65472 chars): unknown option "${'z'.repeat(64)}...(+65472 chars)" (the options: `);
  });

  it('ordinary input reads as before: every issue listed, nothing counted', async () => {
    const e = refusal({ ...row, renewTime: 'now', labels: { team: 'x'.repeat(300) } });
    expect(e.message).toBe('invalid candidate row job/w: renewTime: must be a number, not the string "now"; labels.team: label values must be at most 256 characters');
    expect(e.count).toBe(2);
  });
});
