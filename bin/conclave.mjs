#!/usr/bin/env node
// The `conclave` operator CLI (lib/cli/main.ts), run from source through tsx: no build step.
// `npx conclave` puts node_modules/.bin first on PATH, so `node` here is the project's Node 22.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../lib/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
