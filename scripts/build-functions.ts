/**
 * Builds the Lambda code the construct deploys: each function in lib/wiring.ts (and leader
 * discovery's, FUNCTION_ENTRIES) bundled by esbuild
 * into `<outDir>/<function-name>/index.mjs` (default `build/assets`, which the construct finds when
 * run from the sources; the package ships the same directories as `dist/assets`). Building here,
 * not at synth, is what lets the construct run in a consumer's app: no esbuild, no lock file, no
 * Docker there, only `lambda.Code.fromAsset` on a directory.
 *
 * `npx tsx scripts/build-functions.ts [outDir]`, or `buildFunctions({ outDir })` from a build script.
 * Fails, writing nothing, when a bundle is over BUNDLE_BUDGET_BYTES.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';
import { ASSET_FILE, RUNTIME, type AssetName } from '../infra/assets.js';
import { DISCOVERY_FUNCTION } from '../lib/discovery/wiring.js';
import { wiring, type FunctionName } from '../lib/wiring.js';

/** The repository root: entries in lib/wiring.ts are relative to it. */
export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Where the construct looks for the code when it runs from the sources (infra/assets.ts). */
export const DEFAULT_OUT_DIR = join(PROJECT_ROOT, 'build', 'assets');

/**
 * Each function's bundle may be at most this many bytes, minified. The budget keeps cold starts
 * short: what a handler imports is what Lambda loads before the first record. (280 KB since
 * 2026-12-07, fourteenth: bounds on what a hostile worker's rows cost memory (the parse cache by
 * bytes, a row's size by its kind, refused and vouching rows kept as summaries), a tick that
 * records each part it enters, and fault names for credential providers and TLS, with the
 * coordinator at 274.8 KB; 272 KB since 2026-12-07, twelfth: bounds on what a hostile worker's rows cost the tick and the lease stream
 * (identity rows scanned, process wakes), with the lease stream at 268,986 bytes of 269,000; 269 KB
 * since 2026-12-07, tenth: a candidate's stand-down mark, judged by the election; before, 267 KB:
 * the functions' fault handling grew, a lease over its candidate cap, and zod's
 * classic schemas alone are about 99 KB, its JSON Schema generator among them, which no import can
 * leave out.)
 */
export const BUNDLE_BUDGET_BYTES = 280_000;

/**
 * The AWS SDK clients (and the Smithy packages under them) come from the Lambda runtime, not the
 * bundle: bundled, they add about 375 KB to each function (measured: 580 KB instead of 205 KB),
 * more than the whole budget, and the runtime's copy is kept patched by AWS. The functions call
 * only long-standing operations (GetItem, UpdateItem, DeleteItem, Query, Scan, PutEvents,
 * SendMessage; leader discovery's Cloud Map RegisterInstance and DeregisterInstance, Route 53
 * ListResourceRecordSets and ChangeResourceRecordSets), which every runtime SDK version has. `@aws-sdk/util-dynamodb` (5 KB) is bundled
 * so that items are (un)marshalled by the version the tests ran.
 */
export const EXTERNAL_MODULES = ['@aws-sdk/client-*', '@smithy/*'];

/** esbuild's target for the runtime the construct deploys: `nodejs24.x` → `node24`. */
export const NODE_TARGET = RUNTIME.name.replace(/^nodejs(\d+)\.x$/, 'node$1');
if (!/^node\d+$/.test(NODE_TARGET)) throw new Error(`infra/assets.ts: RUNTIME ${RUNTIME.name} is not a Node.js runtime`);

/**
 * The esbuild options of every function: minified ESM for the runtime's Node version, SDK clients
 * external, ESM builds of dependencies first (they tree-shake; Powertools ships both). The same
 * options NodejsFunction was given before the code was pre-built, so the bundles are byte for
 * byte what it deployed.
 */
export function esbuildOptions(entryPoints: Record<string, string>, outdir: string): esbuild.BuildOptions & { write: false; metafile: true } {
  return {
    entryPoints,
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    target: NODE_TARGET,
    format: 'esm',
    minify: true,
    sourcemap: false,
    mainFields: ['module', 'main'],
    external: EXTERNAL_MODULES,
    absWorkingDir: PROJECT_ROOT,
    write: false,
    metafile: true,
    logLevel: 'warning',
  };
}

/**
 * Every function the build bundles, by name: lib/wiring.ts's, then those a prop of the construct
 * adds (leader discovery), whose code ships too.
 */
export const FUNCTION_ENTRIES: Readonly<Record<AssetName, string>> = {
  ...(Object.fromEntries((Object.keys(wiring) as FunctionName[]).map((n) => [n, wiring[n].entry])) as Record<FunctionName, string>),
  [DISCOVERY_FUNCTION.name]: DISCOVERY_FUNCTION.entry,
};

/** One function's bundle. */
export interface FunctionBundle {
  readonly name: AssetName;
  /** The handler module (lib/wiring.ts `entry`). */
  readonly entry: string;
  /** The directory the construct deploys: it holds `index.mjs` and nothing else. */
  readonly dir: string;
  readonly contents: Uint8Array;
  readonly bytes: number;
  /** esbuild's account of the inputs, to tell what the bytes are made of. */
  readonly inputs: Readonly<Record<string, { readonly bytesInOutput: number }>>;
}

/** Thrown when a bundle is over BUNDLE_BUDGET_BYTES; carries every bundle, to print what they hold. */
export class BundleBudgetError extends Error {
  constructor(
    readonly over: readonly FunctionBundle[],
    readonly bundles: readonly FunctionBundle[],
    readonly budgetBytes: number,
  ) {
    super(
      `${over.map((b) => `${b.name} is ${kb(b.bytes)}`).join(', ')}: over the ${kb(budgetBytes)} budget of a function bundle (scripts/build-functions.ts BUNDLE_BUDGET_BYTES). ` +
        'Nothing was written. `npm run bundle-size` shows the biggest packages in each bundle (zod: `import * as z`, never `import { z }`).',
    );
    this.name = 'BundleBudgetError';
  }
}

export const kb = (n: number): string => `${(n / 1000).toFixed(1)} KB`;

/**
 * Bundles every function of lib/wiring.ts and, when all are within the budget (`budgetBytes`,
 * BUNDLE_BUDGET_BYTES unless a test says otherwise), writes each to
 * `<outDir>/<name>/index.mjs`. A file is replaced by renaming a finished one over it, and only
 * when its bytes changed, so a synth running beside a build never copies half a bundle.
 */
export async function buildFunctions(options: { outDir?: string; budgetBytes?: number } = {}): Promise<FunctionBundle[]> {
  const outDir = resolve(options.outDir ?? DEFAULT_OUT_DIR);
  const budget = options.budgetBytes ?? BUNDLE_BUDGET_BYTES;
  const names = Object.keys(FUNCTION_ENTRIES) as AssetName[];
  const entry = (n: AssetName): string => FUNCTION_ENTRIES[n];
  // one build per function, as NodejsFunction ran them: a build of several entries minifies
  // names across them, so its bytes (and the asset hashes) would differ from one entry's
  const bundles = await Promise.all(
    names.map(async (name): Promise<FunctionBundle> => {
      const path = join(outDir, name, ASSET_FILE);
      const result = await esbuild.build(esbuildOptions({ [`${name}/index`]: join(PROJECT_ROOT, entry(name)) }, outDir));
      const file = result.outputFiles.find((f) => f.path === path);
      const meta = Object.entries(result.metafile.outputs).find(([out]) => resolve(PROJECT_ROOT, out) === path)?.[1];
      if (!file || !meta) throw new Error(`esbuild wrote no ${ASSET_FILE} for ${name} (${entry(name)})`);
      return { name, entry: entry(name), dir: dirname(path), contents: file.contents, bytes: file.contents.byteLength, inputs: meta.inputs };
    }),
  );
  const over = bundles.filter((b) => b.bytes > budget);
  if (over.length) throw new BundleBudgetError(over, bundles, budget);

  mkdirSync(outDir, { recursive: true });
  for (const b of bundles) {
    mkdirSync(b.dir, { recursive: true });
    const path = join(b.dir, ASSET_FILE);
    // the directory is the asset: anything else in it would be deployed (and hashed) too
    for (const other of readdirSync(b.dir)) if (other !== ASSET_FILE) rmSync(join(b.dir, other), { recursive: true, force: true });
    if (sameBytes(path, b.contents)) continue;
    // written beside the function directories, not in one, then renamed: atomic on one file system
    const temp = join(outDir, `.${b.name}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`);
    writeFileSync(temp, b.contents);
    renameSync(temp, path);
  }
  return bundles;
}

/**
 * Bundles a handler that is not one of the construct's functions (`entry`, repository-relative;
 * the ready app's example job) as the functions are bundled, into `<outDir>/index.mjs`, rewritten
 * only when its bytes changed; returns the directory.
 */
export async function bundleHandler(entry: string, outDir: string): Promise<string> {
  const dir = resolve(outDir);
  const result = await esbuild.build(esbuildOptions({ index: join(PROJECT_ROOT, entry) }, dir));
  const file = result.outputFiles.find((f) => f.path === join(dir, ASSET_FILE));
  if (!file) throw new Error(`esbuild wrote no ${ASSET_FILE} for ${entry}`);
  mkdirSync(dir, { recursive: true });
  if (!sameBytes(file.path, file.contents)) {
    const temp = join(dirname(dir), `.${basename(dir)}.${process.pid}.tmp`);
    writeFileSync(temp, file.contents);
    renameSync(temp, file.path);
  }
  return dir;
}

function sameBytes(path: string, contents: Uint8Array): boolean {
  try {
    return Buffer.from(contents).equals(readFileSync(path));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}

// `npx tsx scripts/build-functions.ts [outDir]`
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const outDir = process.argv[2];
  try {
    const bundles = await buildFunctions(outDir ? { outDir } : {});
    for (const b of bundles) console.log(`${b.name.padEnd(16)} ${kb(b.bytes).padStart(9)}  ${relative(process.cwd(), join(b.dir, ASSET_FILE))}`);
  } catch (e) {
    if (!(e instanceof BundleBudgetError)) throw e;
    console.error(e.message);
    process.exit(1);
  }
}
