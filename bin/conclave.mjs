#!/usr/bin/env node
// `npx conclave` inside this repository: the CLI (lib/cli/bin.ts) run from source through tsx.
// Users get the compiled command from the @conclave/cli package instead.
// `npx conclave` puts node_modules/.bin first on PATH, so `node` here is the project's Node 22.
import { register } from 'tsx/esm/api';

register();
await import('../lib/cli/bin.ts');
