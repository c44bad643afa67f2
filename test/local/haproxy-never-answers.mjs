#!/usr/bin/env node
// Stands in for haproxy as startHaproxy's `binary` (`-db -f <file>`): listens on the configuration's
// `bind` address, accepts every connection and never answers on it, as a hung HAProxy would.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

const file = process.argv[process.argv.indexOf('-f') + 1];
const port = Number(/bind 127\.0\.0\.1:(\d+)/.exec(readFileSync(file, 'utf8'))[1]);
createServer(() => {}).listen(port, '127.0.0.1');
