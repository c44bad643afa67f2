/**
 * `npm run bundle-size`: builds each function's bundle as the construct deploys it
 * (scripts/build-functions.ts, into build/assets) and prints the sizes and the biggest packages in
 * each; exits 1 when a bundle is over the budget (the build then writes nothing).
 */
import { gzipSync } from 'node:zlib';
import { BUNDLE_BUDGET_BYTES, BundleBudgetError, buildFunctions, EXTERNAL_MODULES, kb, type FunctionBundle } from './build-functions.js';

const packageOf = (input: string) => input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/)?.[1] ?? '(our code)';

function print(bundles: readonly FunctionBundle[]): void {
  for (const b of bundles) {
    const byPackage = new Map<string, number>();
    for (const [input, { bytesInOutput }] of Object.entries(b.inputs)) byPackage.set(packageOf(input), (byPackage.get(packageOf(input)) ?? 0) + bytesInOutput);
    const top = [...byPackage].sort((x, y) => y[1] - x[1]).slice(0, 5);
    console.log(`${b.bytes <= BUNDLE_BUDGET_BYTES ? 'ok  ' : 'OVER'} ${b.name.padEnd(16)} ${kb(b.bytes).padStart(9)} (gzip ${kb(gzipSync(b.contents).byteLength)})  ${b.entry}`);
    console.log(`     ${top.map(([p, n]) => `${p} ${kb(n)}`).join(', ')}`);
  }
}

console.log(`bundle budget ${kb(BUNDLE_BUDGET_BYTES)} minified; external (from the Lambda runtime): ${EXTERNAL_MODULES.join(', ')}\n`);
try {
  print(await buildFunctions());
} catch (e) {
  if (!(e instanceof BundleBudgetError)) throw e;
  print(e.bundles);
  console.error(`\n${e.message}`);
  process.exit(1);
}
