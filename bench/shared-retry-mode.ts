/**
 * `npx tsx bench/shared-retry-mode.ts [--electors 30] [--mode adaptive|standard] [--throttle 20] [--wait 60]`:
 * how soon electors sharing one DynamoDB client lead again after DynamoDB throttled every request
 * for `--throttle` seconds, with the client in the AWS SDK's adaptive or standard retry mode. A real
 * DynamoDB Local (startLocalConclave) behind a loopback proxy that answers ThrottlingException while
 * throttling; `--electors` NoCoordination electors, a lease each, on one client. Prints every 2 s
 * the electors leading and the requests the proxy took, then the time from the end of the
 * throttling until all lead again (or how many lead after `--wait` s). Asserts nothing.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createServer, request } from 'node:http';
import { parseArgs } from 'node:util';
import { LeaderElector } from '../lib/sdk/index.js';
import { startLocalConclave } from '../lib/testing/index.js';

process.env['POWERTOOLS_METRICS_DISABLED'] ??= 'true';

const { values: v } = parseArgs({
  options: { electors: { type: 'string', default: '30' }, mode: { type: 'string', default: 'adaptive' }, throttle: { type: 'string', default: '20' }, wait: { type: 'string', default: '60' } },
});
const n = Number(v.electors);
const mode = v.mode === 'standard' ? 'standard' : 'adaptive';
const local = await startLocalConclave();
const target = new URL(local.endpoint);
let throttling = false;
let took = 0;
const proxy = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    took++;
    if (throttling) {
      res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': `throttled-${took}` });
      res.end(JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#ThrottlingException', message: 'Rate of requests exceeds the allowed throughput.' }));
      return;
    }
    const up = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.end(Buffer.concat(chunks));
  });
});
await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
const port = (proxy.address() as { port: number }).port;
const client = new DynamoDBClient({ endpoint: `http://127.0.0.1:${port}`, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, retryMode: mode });
const t0 = performance.now();
const at = () => ((performance.now() - t0) / 1000).toFixed(1);
const electors = Array.from(
  { length: n },
  (_, i) => new LeaderElector({ client, tables: local.tablePrefix, leaseName: `shared-${i}`, identity: 'bench', mode: 'NoCoordination', callbacks: { onStartedLeading: () => undefined }, onError: () => undefined }),
);
const stop = new AbortController();
const runs = electors.map((e) => e.run(stop.signal));
const leading = () => electors.filter((e) => e.isLeader()).length;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const every = setInterval(() => console.log(`${at()} s: ${leading()} of ${n} leading, ${took} requests taken`), 2_000);
while (leading() < n) await sleep(100);
throttling = true;
console.log(`${at()} s: throttling every request for ${v.throttle} s (retry mode ${mode})`);
await sleep(Number(v.throttle) * 1000);
throttling = false;
const healed = performance.now();
console.log(`${at()} s: throttling ended`);
while (leading() < n && performance.now() - healed < Number(v.wait) * 1000) await sleep(100);
clearInterval(every);
console.log(leading() === n ? `all ${n} leading again ${((performance.now() - healed) / 1000).toFixed(1)} s after the throttling ended (${mode})` : `${leading()} of ${n} leading ${v.wait} s after the throttling ended (${mode})`);
stop.abort();
await Promise.all(runs);
proxy.close();
await local.stop();
