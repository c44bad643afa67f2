/**
 * What the functions run on, and where their pre-built code is. The code is built ahead of synth
 * (scripts/build-functions.ts, part of `npm run build`), so the construct needs no esbuild, no
 * lock file and no Docker in the app that uses it: only a directory per function.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { OptionalFunctionName } from '../lib/discovery/wiring.js';
import type { FunctionName } from '../lib/wiring.js';

/** A function whose code the build makes: one of lib/wiring.ts, or one a prop asks for (leader discovery). */
export type AssetName = FunctionName | OptionalFunctionName;

/** The newest Node.js runtime aws-cdk-lib knows (cdk-nag AwsSolutions-L1 asks for it); the bundles target it. */
export const RUNTIME = lambda.Runtime.NODEJS_24_X;
export const ARCHITECTURE = lambda.Architecture.ARM_64;

/** The one file in each function's directory: an ESM bundle exporting `handler`. */
export const ASSET_FILE = 'index.mjs';
/** Lambda's handler setting for ASSET_FILE's `handler` export. */
export const ASSET_HANDLER = 'index.handler';

/**
 * Where a function's directory may be, relative to this module: in the package the module is
 * `dist/infra/assets.js` and the code `dist/assets/<name>/`; run from the sources it is
 * `infra/assets.ts` and the code `build/assets/<name>/` (the build script's default).
 */
const LOCATIONS = ['../assets/', '../build/assets/'];

/** Thrown when a function's code has not been built. */
export class MissingFunctionCodeError extends Error {
  constructor(
    readonly functionName: AssetName,
    readonly searched: readonly string[],
  ) {
    super(
      `Conclave: the ${functionName} function's code is not built: no ${ASSET_FILE} in ${searched.join(' or ')}. ` +
        'Run the build first: `npm run build` (or just the functions: `npx tsx scripts/build-functions.ts`). ' +
        'An installed @conclave/cdk ships it under dist/assets; if it is missing there, reinstall the package.',
    );
    this.name = 'MissingFunctionCodeError';
  }
}

/** The directory holding the function's pre-built code: the first location that has it. */
export function functionCodeDir(name: AssetName): string {
  const dirs = LOCATIONS.map((location) => join(fileURLToPath(new URL(location, import.meta.url)), name));
  const dir = dirs.find((d) => existsSync(join(d, ASSET_FILE)));
  if (!dir) throw new MissingFunctionCodeError(name, dirs);
  return dir;
}

/** The function's code as a Lambda asset (the directory is zipped and uploaded as it is). */
export const functionCode = (name: AssetName): lambda.AssetCode => lambda.Code.fromAsset(functionCodeDir(name));
