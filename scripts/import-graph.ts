/**
 * What an entry point reaches: our modules and the packages they import. Each npm package ships
 * only the compiled files reachable from its entry, and depends on exactly the packages they
 * import; test/packaging/import-graph.test.ts pins the graphs, the packaging build reuses this.
 *
 * esbuild's metafile gives the runtime graph (tsconfig's verbatimModuleSyntax keeps
 * `import { type X }` as a side-effect import, as Node runs it). esbuild drops type-only imports,
 * but a package's declaration files keep them: so each module reached is also scanned for
 * `import type … from`, `export type … from` and `import('…')` in type position, and what those
 * name is walked the same way. So are two runtime references esbuild cannot see:
 * `new URL('…', import.meta.url)` (a file read or spawned) and `require.resolve` of a literal.
 *
 * `npx tsx scripts/import-graph.ts lib/sdk/index.ts` prints one graph.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, extname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export interface ImportGraph {
  /** Our modules reached, the entries included: repository-relative paths with `/`, sorted. */
  internal: string[];
  /** npm packages reached (`@aws-sdk/client-dynamodb`, `zod`: a subpath counts as its package), sorted. */
  external: string[];
  /** The bare specifiers behind `external`, as imported (`aws-cdk-lib/aws-lambda-nodejs`), sorted. */
  specifiers: string[];
  /** Node built-ins reached, as `node:fs`, sorted. */
  builtins: string[];
  /**
   * The members of `internal` and `external` that no runtime import reaches, only type-only ones:
   * a package needs them for its declaration files (types, or a devDependency of the consumer).
   */
  typeOnly: string[];
}

const BUILTINS = new Set(builtinModules.filter((m) => !m.startsWith('_')));

/** `@scope/name/sub` → `@scope/name`, `name/sub` → `name`; `undefined` for a Node built-in. */
export function packageName(specifier: string): string | undefined {
  if (specifier.startsWith('node:') || BUILTINS.has(specifier) || BUILTINS.has(specifier.split('/')[0]!)) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

const builtinName = (specifier: string) => `node:${specifier.replace(/^node:/, '').split('/')[0]}`;

// Statements start a line (a doc comment's lines start with `*`); the specifier is the first
// quoted string after `from`, across lines.
const TYPE_ONLY = [
  /^[ \t]*import\s+type\s[^;]*?\bfrom\s*['"]([^'"]+)['"]/gm,
  /^[ \t]*export\s+type\s*(?:\{[^}]*\}|\*(?:\s+as\s+\w+)?)\s*from\s*['"]([^'"]+)['"]/gm,
  // `typeof import()` and `import().Name` of a literal: in type position, esbuild drops them
  /\btypeof\s+import\(\s*['"]([^'"]+)['"]\s*\)/g,
  /\bimport\(\s*['"]([^'"]+)['"]\s*\)\s*\.\s*[A-Za-z_$]/g,
];
// a file next to the module (not a directory: `new URL('..', import.meta.url)` is a root, no edge)
const BY_URL = /\bnew\s+URL\(\s*['"](\.\.?\/[^'"]*[^/.'"])['"]\s*,\s*import\.meta\.url\s*\)/g;
const REQUIRE_RESOLVE = /\brequire\.resolve\(\s*['"]([^'"]+)['"]/g;

const specifiers = (text: string, patterns: readonly RegExp[]) => patterns.flatMap((p) => [...text.matchAll(p)].map((m) => m[1]!));

/** A relative specifier of `from` as a repository-relative path: `./x.js` is `x.ts` when that exists. */
function resolveRelative(from: string, specifier: string): string {
  const abs = resolve(REPO_ROOT, dirname(from), specifier);
  const candidates = extname(abs) === '.js' ? [abs.replace(/\.js$/, '.ts'), abs] : [abs, `${abs}.ts`, join(abs, 'index.ts')];
  const found = candidates.find((c) => existsSync(c) && statSync(c).isFile());
  if (!found) throw new Error(`${from}: cannot resolve ${specifier} (tried ${candidates.map((c) => repoPath(c)).join(', ')})`);
  return repoPath(found);
}

const repoPath = (abs: string) => relative(REPO_ROOT, abs).split(sep).join('/');

// import() of a template (`../${name}.js`): esbuild would bundle every file the pattern could
// match, and no packaging tool can tell which are needed. A literal (or a map of literals) is an
// edge. (Comments are scanned too: this one names no such call.)
const COMPUTED_IMPORT = /\bimport\(\s*(?:\/\*[^*]*\*\/\s*)*(?!['"\s])[^)]/;

const edges: esbuild.Plugin = {
  name: 'import-graph-edges',
  setup(build) {
    // Our packages by name are package edges (tsconfig's paths would lead esbuild into their sources).
    build.onResolve({ filter: /^@conclave\// }, (args) => ({ path: args.path, external: true }));
    build.onLoad({ filter: /\.[mc]?[jt]s$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      const at = text.search(COMPUTED_IMPORT);
      if (at < 0) return undefined; // esbuild loads it as usual
      const line = text.slice(0, at).split('\n').length;
      return { errors: [{ text: `${repoPath(args.path)}:${line}: a computed import(): no tool can follow it; import a string literal` }] };
    });
  },
};

/** esbuild's view: the modules bundled from `entries` and the imports it left external. */
async function runtimeGraph(entries: readonly string[]): Promise<{ internal: Set<string>; specifiers: Set<string> }> {
  let result: esbuild.BuildResult<{ metafile: true; write: false }>;
  try {
    result = await esbuild.build({
      entryPoints: entries.map((e) => resolve(REPO_ROOT, e)),
      absWorkingDir: REPO_ROOT,
      bundle: true,
      write: false,
      metafile: true,
      packages: 'external',
      platform: 'node',
      format: 'esm',
      outdir: 'import-graph.out', // never written; esbuild wants one for several entries
      logLevel: 'silent',
      plugins: [edges],
    });
  } catch (e) {
    const errors = (e as esbuild.BuildFailure).errors ?? [];
    if (!errors.length) throw e;
    throw new Error(`import graph of ${entries.join(', ')}:\n${errors.slice(0, 5).map((m) => `  ${m.text}`).join('\n')}`);
  }
  const internal = new Set<string>();
  const externals = new Set<string>();
  for (const [path, input] of Object.entries(result.metafile.inputs)) {
    internal.add(path);
    for (const i of input.imports) if (i.external) externals.add(i.path);
  }
  return { internal, specifiers: externals };
}

const isCode = (file: string) => /\.(ts|mts|js|mjs)$/.test(file);

/** The modules and import specifiers `entries` reach; through type-only imports too when `types`. */
async function closure(entries: readonly string[], types: boolean): Promise<{ internal: Set<string>; specifiers: Set<string> }> {
  const internal = new Set<string>();
  const found = new Set<string>();
  const scanned = new Set<string>();
  let pending = [...entries];
  while (pending.length) {
    const walk = await runtimeGraph(pending);
    for (const f of walk.internal) internal.add(f);
    for (const s of walk.specifiers) found.add(s);
    const next = new Set<string>();
    for (const file of [...internal].filter((f) => !scanned.has(f) && isCode(f))) {
      scanned.add(file);
      const text = readFileSync(resolve(REPO_ROOT, file), 'utf8');
      for (const s of specifiers(text, types ? [...TYPE_ONLY, BY_URL, REQUIRE_RESOLVE] : [BY_URL, REQUIRE_RESOLVE])) {
        if (!s.startsWith('.')) found.add(s);
        else next.add(resolveRelative(file, s));
      }
    }
    const fresh = [...next].filter((f) => !internal.has(f));
    for (const f of fresh) if (!isCode(f)) internal.add(f); // an asset (JSON, …): nothing to walk
    pending = fresh.filter(isCode);
  }
  return { internal, specifiers: found };
}

/**
 * The modules and packages `entries` (repository-relative paths) reach, at run time and through
 * type-only imports. Throws on a computed dynamic import and on a relative import that does not resolve.
 */
export async function importGraph(...entries: string[]): Promise<ImportGraph> {
  const roots = entries.map((e) => repoPath(resolve(REPO_ROOT, e)));
  const runtime = await closure(roots, false);
  const all = await closure(roots, true);
  const packages = (specs: Iterable<string>) => new Set([...specs].flatMap((s) => packageName(s) ?? []));
  const runtimePackages = packages(runtime.specifiers);
  const allPackages = packages(all.specifiers);
  const sorted = (s: Iterable<string>) => [...s].sort();
  return {
    internal: sorted(all.internal),
    external: sorted(allPackages),
    specifiers: sorted([...all.specifiers].filter((s) => packageName(s) !== undefined)),
    builtins: sorted(new Set([...all.specifiers].filter((s) => packageName(s) === undefined).map(builtinName))),
    typeOnly: sorted([...[...all.internal].filter((f) => !runtime.internal.has(f)), ...[...allPackages].filter((p) => !runtimePackages.has(p))]),
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const entries = process.argv.slice(2);
  if (!entries.length) {
    console.error('usage: tsx scripts/import-graph.ts <entry.ts>…');
    process.exit(2);
  }
  console.log(JSON.stringify(await importGraph(...entries), null, 2));
}
