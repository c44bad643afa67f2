/**
 * The functions' code is built before synth (scripts/build-functions.ts) and found by the
 * construct from its own location (infra/assets.ts); the package entry (infra/index.ts) is the
 * construct's public API.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASSET_FILE, functionCodeDir, MissingFunctionCodeError } from '../../infra/assets.js';
import * as entry from '../../infra/index.js';
import { DISCOVERY_FUNCTION } from '../../lib/discovery/wiring.js';
import { wiring, type FunctionName } from '../../lib/wiring.js';
import { BUNDLE_BUDGET_BYTES, BundleBudgetError, buildFunctions, DEFAULT_OUT_DIR, type FunctionBundle } from '../../scripts/build-functions.js';
import { thrown } from './support.js';

// the wiring's functions, then leader discovery's (built always, deployed with the prop)
const names = [...(Object.keys(wiring) as FunctionName[]), DISCOVERY_FUNCTION.name];
const repo = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));

describe('the build of the functions', () => {
  let bundles: FunctionBundle[];
  beforeAll(async () => {
    bundles = await buildFunctions();
  });

  it('writes one directory per function of the wiring and leader discovery, holding index.mjs alone, where the construct looks', () => {
    expect(DEFAULT_OUT_DIR).toBe(repo('build/assets'));
    expect(bundles.map((b) => b.name)).toEqual(names);
    for (const b of bundles) {
      expect(b.dir).toBe(join(DEFAULT_OUT_DIR, b.name));
      expect(readdirSync(b.dir)).toEqual([ASSET_FILE]);
      expect(functionCodeDir(b.name)).toBe(b.dir);
    }
  });

  it('keeps every bundle within the budget, the SDK clients left to the runtime', () => {
    for (const b of bundles) {
      expect(b.bytes, b.name).toBeLessThanOrEqual(BUNDLE_BUDGET_BYTES);
      expect(Object.keys(b.inputs).filter((i) => /node_modules\/(@aws-sdk\/client-|@smithy\/)/.test(i)), b.name).toEqual([]);
    }
  });

  it("loads node-semver's own modules, never its index (which pulls in every range function: 19 KB of each bundle)", () => {
    for (const b of bundles) expect(Object.keys(b.inputs).filter((i) => /node_modules\/semver\/(index\.js|ranges\/)/.test(i)), b.name).toEqual([]);
  });

  describe('over the budget', () => {
    const outDir = mkdtempSync(join(tmpdir(), 'conclave-assets-'));
    afterAll(() => rmSync(outDir, { recursive: true, force: true }));

    it('fails naming each function over it, and writes nothing', async () => {
      const smallest = Math.min(...bundles.map((b) => b.bytes));
      const error = await buildFunctions({ outDir, budgetBytes: smallest - 1 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BundleBudgetError);
      expect((error as BundleBudgetError).over.map((b) => b.name)).toEqual(names);
      for (const n of names) expect((error as BundleBudgetError).message).toContain(`${n} is `);
      expect((error as BundleBudgetError).message).toMatch(/over the .* KB budget .* Nothing was written/);
      expect(readdirSync(outDir)).toEqual([]);
    });
  });
});

describe("the construct's code location", () => {
  it('says to run the build when a function has no code, naming where it looked', () => {
    const error = thrown(() => functionCodeDir('unbuilt' as FunctionName));
    expect(error).toBeInstanceOf(MissingFunctionCodeError);
    const message = (error as Error).message;
    expect(message).toContain('npm run build');
    // the package's layout (dist/infra → dist/assets) and the sources' (infra → build/assets)
    expect((error as MissingFunctionCodeError).searched).toEqual([repo('assets/unbuilt'), repo('build/assets/unbuilt')]);
    for (const dir of (error as MissingFunctionCodeError).searched) expect(message).toContain(dir);
  });

  it('is not the sources: no dist/assets in the repository that would shadow build/assets', () => {
    expect(existsSync(repo('assets'))).toBe(false);
  });
});

describe('the package entry (infra/index.ts)', () => {
  it('exports the constructs and the props validation error, and no zod schema', () => {
    expect(Object.keys(entry).sort()).toEqual(['Conclave', 'ConclaveMonitoring', 'ConclaveReplica', 'ConclaveReplicaStack', 'ConclaveStack', 'ValidationError']);
    for (const [name, value] of Object.entries(entry)) expect(typeof value, name).toBe('function');
  });
});
