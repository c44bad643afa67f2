/**
 * `npm run build`: the four publishable packages, under packages/<name>/.
 *
 *  1. tsc compiles lib/, functions/ and infra/ to build/ (ESM, .d.ts, source maps with sources).
 *  2. The Lambda functions are bundled by esbuild into build/assets/<function>/ (the construct
 *     ships them pre-built: a consumer's synth needs no esbuild, Docker or TypeScript).
 *  3. Each package gets the compiled files its entry points reach (scripts/import-graph.ts), and
 *     nothing else, under packages/<name>/dist/ (paths as in the repository; no source maps: see
 *     withoutSourceMap). The packages they
 *     import must be exactly those the package's manifest declares, or the build fails.
 *  4. API Extractor checks each package's public API against the reviewed report in api/ and
 *     writes the doc model, which api-documenter turns into the API reference a user opens,
 *     docs/api/index.md (markdown, committed).
 *  5. Each package's manifest takes `repository`, `homepage` and `bugs` from the root package.json
 *     (scripts/package-metadata.ts).
 *
 * `npm run build -- --check` (what `npm test` runs) fails when a report in api/, the reference in
 * docs/api/ or a manifest's copied fields are out of date: an API change is accepted on purpose by
 * running `npm run build` (or `npm run docs:api`, the same) and committing api/, docs/api/ and
 * packages/<name>/package.json.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Extractor, ExtractorConfig, ExtractorLogLevel, type IConfigFile } from '@microsoft/api-extractor';
import { buildFunctions } from './build-functions.js';
import { importGraph } from './import-graph.js';
import { ROOT_FIELDS, withRootMetadata } from './package-metadata.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const BUILD = join(ROOT, 'build');
/** The generated API reference (api-documenter markdown), committed: its index is what the README links to. */
export const API_DOCS = join(ROOT, 'docs', 'api');

export interface PackageSpec {
  /** Folder under packages/. */
  readonly dir: string;
  /** Entry points (sources), each followed to what it reaches (scripts/import-graph.ts): the package ships their compiled files. */
  readonly entries: readonly string[];
  /** The entry whose declarations make the public API (checked by API Extractor); none for a bare command. */
  readonly api?: string;
  /**
   * Subpath exports (`<package>/<path>`, its manifest's `exports`), each an entry of its own with its
   * own API report, api/<dir>-<path>.api.md (and its members in the package's API reference); its
   * source is among `entries`.
   */
  readonly subpaths?: readonly { readonly path: string; readonly api: string }[];
  /** Also ships the pre-built Lambda functions (dist/assets/). */
  readonly assets?: boolean;
}

export const PACKAGES: readonly PackageSpec[] = [
  // @conclave/sdk/push: the push path, whose MQTT client (an optional peer) a worker without it never loads
  { dir: 'sdk', entries: ['lib/sdk/index.ts', 'lib/sdk/push-entry.ts'], api: 'lib/sdk/index.d.ts', subpaths: [{ path: 'push', api: 'lib/sdk/push-entry.d.ts' }] },
  { dir: 'cdk', entries: ['infra/index.ts'], api: 'infra/index.d.ts', assets: true },
  { dir: 'cli', entries: ['lib/cli/bin.ts'] },
  { dir: 'testing', entries: ['lib/testing/index.ts', 'lib/testing/bin.ts'], api: 'lib/testing/index.d.ts' },
];

interface Manifest {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

function run(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`build: \`${cmd} ${args.join(' ')}\` failed (exit ${r.status})`);
}

/**
 * A compiled module as the packages ship it: without its `//# sourceMappingURL=` line, and its map
 * not shipped. A map without the sources' text pointed stack traces (node --enable-source-maps, a
 * debugger) at lib/*.ts files no package holds; with the text, it was more than half of
 * @conclave/sdk's bytes, past a worker install's 30 MB budget (test/packaging/consumer.test.ts).
 * Without one, a trace names the shipped .js and its line, which tsc keeps close to the source.
 */
function withoutSourceMap(js: string): string {
  return js.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n');
}

/** Copies one package's share of build/ into packages/<dir>/dist and checks its manifest declares every import. */
async function assemble(spec: PackageSpec): Promise<{ files: number; manifest: Manifest }> {
  const pkgDir = join(ROOT, 'packages', spec.dir);
  const manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as Manifest;
  const dist = join(pkgDir, 'dist');
  rmSync(dist, { recursive: true, force: true });
  const graph = await importGraph(...spec.entries);
  for (const source of graph.internal) {
    if (!/\.ts$/.test(source)) throw new Error(`build: ${manifest.name} reaches ${source}, which is not a module the build compiles`);
    const js = source.replace(/\.ts$/, '.js');
    for (const f of [js, source.replace(/\.ts$/, '.d.ts')]) {
      if (!existsSync(join(BUILD, f))) throw new Error(`build: ${f} was not compiled (is ${source} under lib/, functions/ or infra/?)`);
      mkdirSync(dirname(join(dist, f)), { recursive: true });
      if (f === js) writeFileSync(join(dist, f), withoutSourceMap(readFileSync(join(BUILD, f), 'utf8')));
      else cpSync(join(BUILD, f), join(dist, f));
    }
  }
  const externals = new Set(graph.external);
  if (spec.assets) cpSync(join(BUILD, 'assets'), join(dist, 'assets'), { recursive: true });
  // every package is Apache-2.0: npm packs a LICENSE file at a package's root whatever `files` says
  cpSync(join(ROOT, 'LICENSE'), join(pkgDir, 'LICENSE'));
  const declared = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);
  const undeclared = [...externals].filter((pkg) => !declared.has(pkg) && !declared.has(`@types/${pkg}`));
  if (undeclared.length) {
    throw new Error(
      `build: ${manifest.name} imports packages its manifest does not declare: ${undeclared.join(', ')}` +
        `\nDeclare them in packages/${spec.dir}/package.json, or stop importing them from this package's entry points.`,
    );
  }
  const unused = [...declared].filter((d) => !externals.has(d) && !externals.has(d.replace(/^@types\//, '')));
  if (unused.length) throw new Error(`build: ${manifest.name} declares packages it never imports: ${unused.join(', ')}. Remove them from packages/${spec.dir}/package.json.`);
  return { files: graph.internal.length, manifest };
}

/**
 * API Extractor on one entry's declarations (`api`, under dist/), reported as api/<report>.api.md
 * (API Extractor knows one entry per package, and names each report after the package): the report
 * must match unless `local`. The doc model goes to `model`.
 */
function checkApi(spec: { dir: string; api: string; report: string; model: string }, manifest: Manifest, local: boolean): boolean {
  const pkgDir = join(ROOT, 'packages', spec.dir);
  const configObject: IConfigFile = {
    projectFolder: pkgDir,
    mainEntryPointFilePath: join(pkgDir, 'dist', spec.api),
    compiler: {
      overrideTsconfig: {
        compilerOptions: { target: 'ES2023', lib: ['ES2023'], module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, skipLibCheck: true, types: ['node'], typeRoots: [join(ROOT, 'node_modules', '@types')] },
        include: [join(pkgDir, 'dist')],
      },
    },
    apiReport: { enabled: true, reportFolder: join(ROOT, 'api'), reportTempFolder: join(BUILD, 'api-report'), reportFileName: `${spec.report}.api.md` },
    docModel: { enabled: true, apiJsonFilePath: spec.model },
    dtsRollup: { enabled: false },
    tsdocMetadata: { enabled: false },
    messages: {
      compilerMessageReporting: { default: { logLevel: ExtractorLogLevel.Warning } },
      extractorMessageReporting: {
        // Findings such as a type the API uses but the entry does not export (ae-forgotten-export)
        // are written into the report, where the reviewer of an API change sees them.
        default: { logLevel: ExtractorLogLevel.Warning, addToApiReportFile: true },
        // Every exported symbol says what it is for: the API reference is generated from it.
        'ae-undocumented': { logLevel: ExtractorLogLevel.Error, addToApiReportFile: false },
        'ae-missing-release-tag': { logLevel: ExtractorLogLevel.None },
      },
      tsdocMessageReporting: { default: { logLevel: ExtractorLogLevel.Warning } },
    },
  };
  // TSDoc as we write it: `@default` (as aws-cdk-lib does) beside the standard tags.
  cpSync(join(ROOT, 'tsdoc.json'), join(pkgDir, 'tsdoc.json'));
  mkdirSync(join(ROOT, 'api'), { recursive: true });
  const config = ExtractorConfig.prepare({ configObject, configObjectFullPath: join(pkgDir, 'api-extractor.json'), packageJsonFullPath: join(pkgDir, 'package.json'), packageJson: manifest as never });
  const result = Extractor.invoke(config, { localBuild: local, showVerboseMessages: false });
  if (result.apiReportChanged && !local) {
    console.error(`\n${manifest.name} (${spec.api}): the public API differs from api/${spec.report}.api.md (see build/api-report/${spec.report}.api.md).`);
    console.error('If the change is meant: run `npm run build`, review the diff of api/, commit it, and note it in CHANGELOG.md.');
  }
  if (result.errorCount > 0) console.error(`${manifest.name} (${spec.api}): ${result.errorCount} API Extractor error(s) above (ae-undocumented: add a TSDoc comment to the symbol).`);
  return result.succeeded;
}

/**
 * Adds the members of a subpath entry's doc model that the main entry lacks to the main entry's
 * model: api-documenter documents one entry per package (the class docs say what to import them from).
 */
function mergeDocModel(into: string, from: string): void {
  type Model = { members: [{ members: { canonicalReference: string }[] }] };
  const main = JSON.parse(readFileSync(into, 'utf8')) as Model;
  const sub = JSON.parse(readFileSync(from, 'utf8')) as Model;
  const have = new Set(main.members[0].members.map((m) => m.canonicalReference));
  main.members[0].members.push(...sub.members[0].members.filter((m) => !have.has(m.canonicalReference)));
  writeFileSync(into, JSON.stringify(main, null, 2));
}

/**
 * Gives packages/<dir>/package.json the root's `repository`, `homepage` and `bugs` (npm packs that
 * file as it is). With `check`, says what differs instead of writing it.
 */
function syncManifest(spec: PackageSpec, check: boolean): boolean {
  const file = join(ROOT, 'packages', spec.dir, 'package.json');
  const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
  const { manifest, changed } = withRootMetadata(JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>, root, spec.dir);
  if (!changed) return true;
  if (check) {
    console.error(`\npackages/${spec.dir}/package.json: ${ROOT_FIELDS.join(', ')} differ from the root package.json's. Run \`npm run build\` and commit packages/${spec.dir}/package.json.`);
    return false;
  }
  writeFileSync(file, `${JSON.stringify(manifest, null, 2)}\n`);
  return true;
}

/** The markdown files of a folder by name, with LF line ends (api-documenter writes CRLF). */
function markdownFiles(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  if (!existsSync(dir)) return files;
  for (const f of readdirSync(dir)) if (f.endsWith('.md')) files.set(f, readFileSync(join(dir, f), 'utf8').replace(/\r\n/g, '\n'));
  return files;
}

/**
 * The API reference: api-documenter's markdown from the doc models in build/api-model (one page
 * per package, class and member) into docs/api/, where a user opens docs/api/index.md. With
 * `check`, compares instead of writing and says which pages are stale.
 */
function apiDocs(check: boolean): boolean {
  const out = join(BUILD, 'api-docs');
  // api-documenter empties its output folder first: never point it at docs/ itself
  const r = spawnSync('npx', ['api-documenter', 'markdown', '-i', join(BUILD, 'api-model'), '-o', out], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`build: api-documenter failed (exit ${r.status}):\n${r.stdout}\n${r.stderr}`);
  const generated = markdownFiles(out);
  if (!check) {
    rmSync(API_DOCS, { recursive: true, force: true });
    mkdirSync(API_DOCS, { recursive: true });
    for (const [f, text] of generated) writeFileSync(join(API_DOCS, f), text);
    return true;
  }
  const committed = markdownFiles(API_DOCS);
  const stale = [...new Set([...generated.keys(), ...committed.keys()])].filter((f) => generated.get(f) !== committed.get(f)).sort();
  if (!stale.length) return true;
  console.error(
    `\ndocs/api/ (the API reference) is out of date: ${stale.length} page(s) differ from what the doc comments make, e.g. ${stale.slice(0, 5).join(', ')}.` +
      '\nRun `npm run build` (or `npm run docs:api`) and commit docs/api/.',
  );
  return false;
}

export async function build(opts: { check?: boolean } = {}): Promise<void> {
  const started = Date.now();
  rmSync(BUILD, { recursive: true, force: true });
  run('npx', ['tsc', '-p', 'tsconfig.build.json']);
  await buildFunctions({ outDir: join(BUILD, 'assets') });
  let ok = true;
  let manifestsOk = true;
  for (const spec of PACKAGES) {
    manifestsOk = syncManifest(spec, !!opts.check) && manifestsOk;
    const { files, manifest } = await assemble(spec);
    console.log(`${manifest.name}@${manifest.version}: ${files} modules`);
    if (!spec.api) continue;
    const model = join(BUILD, 'api-model', `${spec.dir}.api.json`);
    ok = checkApi({ dir: spec.dir, api: spec.api, report: spec.dir, model }, manifest, !opts.check) && ok;
    for (const sub of spec.subpaths ?? []) {
      const subModel = join(BUILD, 'api-model-subpaths', `${spec.dir}-${sub.path}.api.json`);
      ok = checkApi({ dir: spec.dir, api: sub.api, report: `${spec.dir}-${sub.path}`, model: subModel }, manifest, !opts.check) && ok;
      if (existsSync(model) && existsSync(subModel)) mergeDocModel(model, subModel);
    }
  }
  // the reference is made from the doc models: only once the API check passed (or was accepted)
  if (!ok) throw new Error('build: the API check failed (see above)');
  const docsOk = apiDocs(!!opts.check);
  if (!docsOk || !manifestsOk) throw new Error('build: out of date (see above)');
  writeFileSync(join(BUILD, '.built'), new Date().toISOString());
  console.log(`built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  build({ check: process.argv.includes('--check') }).catch((e: unknown) => {
    console.error(e instanceof Error ? e.message : e);
    process.exitCode = 1;
  });
}
