/**
 * How the functions are built, declared once: the construct hands these options to NodejsFunction
 * (local esbuild, no Docker) and `npm run bundle-size` runs esbuild with the very same ones.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { OutputFormat, type BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { BuildOptions } from 'esbuild';

/** The repository root: entries in lib/wiring.ts are relative to it, and so is the lock file. */
export const PROJECT_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The newest Node.js runtime aws-cdk-lib knows (cdk-nag AwsSolutions-L1 asks for it). */
export const RUNTIME = lambda.Runtime.NODEJS_24_X;
export const ARCHITECTURE = lambda.Architecture.ARM_64;

/**
 * Each function's bundle may be at most this many bytes, minified. The budget keeps cold starts
 * short: what a handler imports is what Lambda loads before the first record.
 */
export const BUNDLE_BUDGET_BYTES = 250_000;

/**
 * The AWS SDK clients (and the Smithy packages under them) come from the Lambda runtime, not the
 * bundle: bundled, they add about 375 KB to each function (measured: 580 KB instead of 205 KB),
 * more than the whole budget, and the runtime's copy is kept patched by AWS. The functions call
 * only long-standing operations (GetItem, UpdateItem, DeleteItem, Query, Scan, PutEvents,
 * SendMessage), which every runtime SDK version has. `@aws-sdk/util-dynamodb` (5 KB) is bundled
 * so that items are (un)marshalled by the version the tests ran.
 */
export const EXTERNAL_MODULES = ['@aws-sdk/client-*', '@smithy/*'];

/** NodejsFunction's bundling: minified ESM for the runtime's Node version, SDK clients external. */
export const BUNDLING = {
  minify: true,
  sourceMap: false,
  format: OutputFormat.ESM,
  target: 'node24',
  // ESM builds of dependencies first: they tree-shake (Powertools ships both)
  mainFields: ['module', 'main'],
  externalModules: EXTERNAL_MODULES,
} as const satisfies BundlingOptions;

/**
 * The esbuild options NodejsFunction derives from BUNDLING (aws-cdk-lib's Bundling passes
 * `--bundle --platform=node --target --format --minify --external --main-fields`), so the size
 * measured is the size deployed.
 */
export function esbuildOptions(entry: string): BuildOptions {
  return {
    entryPoints: [join(PROJECT_ROOT, entry)],
    bundle: true,
    platform: 'node',
    target: BUNDLING.target,
    format: BUNDLING.format === OutputFormat.ESM ? 'esm' : 'cjs',
    minify: BUNDLING.minify,
    sourcemap: BUNDLING.sourceMap,
    mainFields: [...BUNDLING.mainFields],
    external: [...BUNDLING.externalModules],
    absWorkingDir: PROJECT_ROOT,
    outfile: join(PROJECT_ROOT, 'cdk.out', 'bundle-size', 'index.mjs'),
    write: false,
    metafile: true,
    logLevel: 'warning',
  };
}
