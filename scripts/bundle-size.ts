/**
 * `npm run bundle-size`: each function's bundle, minified, built by esbuild with the options the
 * CDK construct deploys with (infra/bundling.ts). Prints the sizes and the biggest packages in
 * each; exits 1 when a bundle is over the budget.
 */
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';
import { BUNDLE_BUDGET_BYTES, EXTERNAL_MODULES, esbuildOptions } from '../infra/bundling.js';
import { wiring, type FunctionName } from '../lib/wiring.js';

const kb = (n: number) => `${(n / 1000).toFixed(1)} KB`;
const packageOf = (input: string) => input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/)?.[1] ?? '(our code)';

let over = 0;
console.log(`bundle budget ${kb(BUNDLE_BUDGET_BYTES)} minified; external (from the Lambda runtime): ${EXTERNAL_MODULES.join(', ')}\n`);
for (const name of Object.keys(wiring) as FunctionName[]) {
  const result = await esbuild.build(esbuildOptions(wiring[name].entry));
  const file = result.outputFiles?.find((f) => f.path.endsWith('.mjs') || f.path.endsWith('.js'));
  if (!file) throw new Error(`esbuild wrote no bundle for ${wiring[name].entry}`);
  const bytes = file.contents.byteLength;
  const ok = bytes <= BUNDLE_BUDGET_BYTES;
  if (!ok) over++;
  const byPackage = new Map<string, number>();
  for (const [input, { bytesInOutput }] of Object.entries(Object.values(result.metafile!.outputs)[0]!.inputs)) {
    byPackage.set(packageOf(input), (byPackage.get(packageOf(input)) ?? 0) + bytesInOutput);
  }
  const top = [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 5);
  console.log(`${ok ? 'ok  ' : 'OVER'} ${name.padEnd(16)} ${kb(bytes).padStart(9)} (gzip ${kb(gzipSync(file.contents).byteLength)})  ${wiring[name].entry}`);
  console.log(`     ${top.map(([p, n]) => `${p} ${kb(n)}`).join(', ')}`);
}
if (over) {
  console.error(`\n${over} bundle(s) over ${kb(BUNDLE_BUDGET_BYTES)}: see the packages above (zod: \`import * as z\`, never \`import { z }\`)`);
  process.exit(1);
}
