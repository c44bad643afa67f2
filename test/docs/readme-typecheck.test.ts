/**
 * README.md's type-check of a worker, run as a user pastes it, with the repository's TypeScript (the
 * version `npm i -D typescript` installs) and Node's types: in a folder of its own, and beside a
 * `tsconfig.json` (the CDK README's setup). Before (a review, 2026-12-07, eleventh): beside one,
 * "error TS5112: tsconfig.json is present but will not be loaded if files are specified on
 * commandline", and no worker was checked.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc'); // what `npx tsc` runs

/** The README's command, as it is printed: `npx tsc … worker.ts`. */
const command = (): string[] => {
  const found = [...readFileSync(join(root, 'README.md'), 'utf8').matchAll(/`npx (tsc [^`]*worker\.ts)`/g)].map((m) => m[1]!);
  expect(found, 'README.md shows one `npx tsc … worker.ts`').toHaveLength(1);
  return found[0]!.split(/\s+/).slice(1);
};

const folders: string[] = [];
afterAll(() => {
  for (const f of folders) rmSync(f, { recursive: true, force: true });
});

/** A consumer's folder: an ES module package, a worker using Node's globals and top-level await, `files` beside it. */
function consumer(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-readme-tsc-'));
  folders.push(dir);
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir'); // @types/node, as `npm i -D @types/node@22` gives
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  writeFileSync(join(dir, 'worker.ts'), "import { hostname } from 'node:os';\nconst stop = new AbortController();\nprocess.on('SIGTERM', () => stop.abort());\nawait Promise.resolve(hostname());\n");
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const run = (cwd: string) =>
  promisify(execFile)(process.execPath, [tsc, ...command()], { cwd, encoding: 'utf8' }).then(
    ({ stdout }) => ({ code: 0, out: stdout }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? 1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` }),
  );

describe("README.md's type-check command", () => {
  it('checks the worker alone in its folder', async () => {
    expect(await run(consumer({}))).toEqual({ code: 0, out: '' });
  });

  it("checks the worker beside a tsconfig.json (the CDK README's, for app.ts), not refused for it", async () => {
    const tsconfig = '{ "compilerOptions": { "target": "ES2023", "module": "NodeNext", "strict": true, "skipLibCheck": true, "outDir": "dist" }, "include": ["app.ts"] }';
    expect(await run(consumer({ 'tsconfig.json': tsconfig }))).toEqual({ code: 0, out: '' });
  });

  it("still finds the worker's type errors (the options are the command's)", async () => {
    const dir = consumer({ 'tsconfig.json': '{ "compilerOptions": { "strict": false } }' });
    writeFileSync(join(dir, 'worker.ts'), 'const n: number = process.pid;\nconst s: string = n;\nexport { s };\n');
    const { code, out } = await run(dir);
    expect(code).not.toBe(0);
    expect(out).toContain("worker.ts(2,7): error TS2322: Type 'number' is not assignable to type 'string'.");
  });
});
