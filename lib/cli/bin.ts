#!/usr/bin/env node
// The `conclave` command of the @conclave/cli package (compiled; no TypeScript at run time).
import { main } from './main.js';

process.exitCode = await main(process.argv.slice(2));
