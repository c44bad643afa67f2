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
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
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

const edgePlugin: esbuild.Plugin = {
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
async function runtimeGraph(entries: readonly string[]): Promise<{ internal: Set<string>; specifiers: Set<string>; edges: Edges }> {
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
      plugins: [edgePlugin],
    });
  } catch (e) {
    const errors = (e as esbuild.BuildFailure).errors ?? [];
    if (!errors.length) throw e;
    throw new Error(`import graph of ${entries.join(', ')}:\n${errors.slice(0, 5).map((m) => `  ${m.text}`).join('\n')}`);
  }
  const internal = new Set<string>();
  const externals = new Set<string>();
  const edges: Edges = new Map();
  for (const [path, input] of Object.entries(result.metafile.inputs)) {
    internal.add(path);
    for (const i of input.imports) {
      if (i.external) externals.add(i.path);
      else addEdge(edges, path, i.path);
    }
  }
  return { internal, specifiers: externals, edges };
}

/** Module → the modules it imports (repository-relative paths), by any import, type-only ones included. */
export type Edges = Map<string, Set<string>>;

function addEdge(edges: Edges, from: string, to: string): void {
  const out = edges.get(from) ?? new Set<string>();
  out.add(to);
  edges.set(from, out);
}

const isCode = (file: string) => /\.(ts|mts|js|mjs)$/.test(file);

/** The modules and import specifiers `entries` reach; through type-only imports too when `types`. */
async function closure(entries: readonly string[], types: boolean): Promise<{ internal: Set<string>; specifiers: Set<string>; edges: Edges }> {
  const internal = new Set<string>();
  const found = new Set<string>();
  const edges: Edges = new Map();
  const scanned = new Set<string>();
  let pending = [...entries];
  while (pending.length) {
    const walk = await runtimeGraph(pending);
    for (const f of walk.internal) internal.add(f);
    for (const s of walk.specifiers) found.add(s);
    for (const [from, to] of walk.edges) for (const t of to) addEdge(edges, from, t);
    const next = new Set<string>();
    for (const file of [...internal].filter((f) => !scanned.has(f) && isCode(f))) {
      scanned.add(file);
      const text = readFileSync(resolve(REPO_ROOT, file), 'utf8');
      for (const s of specifiers(text, types ? [...TYPE_ONLY, BY_URL, REQUIRE_RESOLVE] : [BY_URL, REQUIRE_RESOLVE])) {
        if (!s.startsWith('.')) found.add(s);
        else {
          const target = resolveRelative(file, s);
          next.add(target);
          addEdge(edges, file, target);
        }
      }
    }
    const fresh = [...next].filter((f) => !internal.has(f));
    for (const f of fresh) if (!isCode(f)) internal.add(f); // an asset (JSON, …): nothing to walk
    pending = fresh.filter(isCode);
  }
  return { internal, specifiers: found, edges };
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

/** Every import between the modules `entries` reach (repository-relative paths), type-only ones included: a type is a dependency too. */
export async function moduleGraph(...entries: string[]): Promise<Edges> {
  return (await closure(entries.map((e) => repoPath(resolve(REPO_ROOT, e))), true)).edges;
}

/**
 * The import cycles of a graph: its strongly connected components of more than one module (or one
 * that imports itself), each sorted, in sorted order. Tarjan's algorithm, iterative.
 */
export function importCycles(edges: Edges): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const nodes = [...new Set([...edges.keys(), ...[...edges.values()].flatMap((t) => [...t])])].sort();
  for (const root of nodes) {
    if (index.has(root)) continue;
    const work: { node: string; next: string[] }[] = [];
    const open = (node: string) => {
      index.set(node, index.size);
      low.set(node, index.get(node)!);
      stack.push(node);
      onStack.add(node);
      work.push({ node, next: [...(edges.get(node) ?? [])].sort() });
    };
    open(root);
    while (work.length) {
      const top = work[work.length - 1]!;
      const to = top.next.shift();
      if (to !== undefined) {
        if (!index.has(to)) open(to);
        else if (onStack.has(to)) low.set(top.node, Math.min(low.get(top.node)!, index.get(to)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(top.node)!));
      if (low.get(top.node) !== index.get(top.node)) continue;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== top.node);
      if (component.length > 1 || edges.get(top.node)?.has(top.node)) cycles.push(component.sort());
    }
  }
  return cycles.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/**
 * The repository's layers, lowest first (issue 37, item 6). A module imports modules of its own
 * area and of lower ones only: an import of a higher area is an arrow back up. An area is a folder
 * (`lib/sdk/`) or one file (`lib/tables.ts`); every module belongs to exactly one.
 */
export const LAYERS: readonly string[] = [
  'lib/util/', // base32, a pool: no domain
  'lib/clock.ts', // the one clock, injected everywhere
  'lib/schemas/', // zod shapes of every row, event and config, and the session partitions' names
  'lib/tables.ts', // the three tables, declared once
  'lib/table-wait.ts', // a table still being created, waited for by the SDK and the CLI: no I/O
  'lib/dynamodb-answers.ts', // an answer that is not DynamoDB's, told apart by the SDK and the CLI: no I/O
  'lib/connection-phase.ts', // where a request stopped on its way out, told by the SDK and the CLI: Node's built-ins only
  'lib/stores/', // the only writers; making a declared table
  'lib/election/', // the coordinator's decisions: pure
  'lib/events/', // EventBridge events derived from stream images
  'lib/platform/', // ECS and EC2 signals, and the terms a stopped host held
  'lib/coordinator/', // reconcile: read, decide, write
  'lib/function-env.ts', // the environment variables the functions read their resources from
  'lib/wiring.ts', // which function runs on which trigger
  'lib/sdk/', // the worker SDK (@conclave/sdk)
  'lib/history/', // the history checker and the fenced writes' ledger
  'lib/cli/', // the operator's commands (@conclave/cli)
  'lib/functions/', // the handlers' cores
  'lib/discovery/', // leader discovery: DNS records for the leader
  'functions/', // the Lambda entry points
  'lib/local/', // local mode: the same handlers on DynamoDB Local
  'lib/testing/', // @conclave/testing
  'infra/', // the construct (@conclave/cdk), infra/app/ apart
  'scripts/', // the build
  'examples/', // consumer code: imports the packages by name
  'infra/app/', // the ready app: the construct, the build and an example
  'sim/', // the one simulation home: npm run sim's worlds, the SDK tests' harness, the DynamoDB model and its Regions
  'chaos/', // npm run chaos
  'bench/', // npm run bench
  'test/', // the tests (their harnesses included)
];

/**
 * The repository's source folders whose every module the layering check starts from. test/ is not
 * one: its files load built bundles by computed import() and nothing may import a test file; the
 * harnesses under test/ that a folder here reaches are in the graph (and on top of the layers).
 */
export const SOURCE_ROOTS = ['lib', 'functions', 'infra', 'scripts', 'examples', 'sim', 'chaos', 'bench'];

/** The index in LAYERS of `file`'s area (the longest area that holds it), or -1 for none. */
export function layerOf(file: string): number {
  let best = -1;
  LAYERS.forEach((area, i) => {
    const holds = area.endsWith('/') ? file.startsWith(area) : file === area;
    if (holds && (best < 0 || area.length > LAYERS[best]!.length)) best = i;
  });
  return best;
}

/** The imports of a module of a lower area from a higher one, as `from → to`, sorted. */
export function upwardArrows(edges: Edges): string[] {
  const arrows: string[] = [];
  for (const [from, targets] of edges) {
    for (const to of targets) if (layerOf(to) > layerOf(from)) arrows.push(`${from} → ${to}`);
  }
  return arrows.sort();
}

/** The modules of a graph in no area of LAYERS, sorted. */
export function unlayered(edges: Edges): string[] {
  const modules = new Set([...edges.keys(), ...[...edges.values()].flatMap((t) => [...t])]);
  return [...modules].filter((m) => isCode(m) && layerOf(m) < 0).sort();
}

/** The TypeScript modules under `dir` (repository-relative), declaration files aside, sorted. */
export function sourcesUnder(dir: string): string[] {
  return readdirSync(join(REPO_ROOT, dir), { recursive: true, encoding: 'utf8' })
    .map((f) => `${dir}/${f.split(sep).join('/')}`)
    .filter((f) => /\.ts$/.test(f) && !f.endsWith('.d.ts'))
    .sort();
}

/** The whole repository's import graph (SOURCE_ROOTS), its cycles and its arrows back up. */
export async function layering(): Promise<{ modules: number; cycles: string[][]; upward: string[]; unlayered: string[] }> {
  const edges = await moduleGraph(...SOURCE_ROOTS.flatMap((root) => sourcesUnder(root)));
  return { modules: new Set([...edges.keys(), ...[...edges.values()].flatMap((t) => [...t])]).size, cycles: importCycles(edges), upward: upwardArrows(edges), unlayered: unlayered(edges) };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const entries = process.argv.slice(2);
  if (!entries.length) {
    console.error('usage: tsx scripts/import-graph.ts <entry.ts>…   (or --layering: the repository\'s cycles and arrows back up)');
    process.exit(2);
  }
  if (entries[0] === '--layering') {
    const l = await layering();
    console.log(`${l.modules} modules, ${l.cycles.length} import cycles, ${l.upward.length} arrows back up, ${l.unlayered.length} modules in no layer`);
    for (const c of l.cycles) console.log(`cycle: ${c.join(' ⇄ ')}`);
    for (const a of l.upward) console.log(`up: ${a}`);
    for (const m of l.unlayered) console.log(`no layer: ${m}`);
  } else console.log(JSON.stringify(await importGraph(...entries), null, 2));
}
