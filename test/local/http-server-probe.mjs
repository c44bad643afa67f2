// Loaded into a spawned worker (NODE_OPTIONS=--import): prints, as one JSON line on stdout, the
// limits of each node:http server the moment it starts its first request, as node:http publishes
// the server on its diagnostics channel. test/local/demo-worker-app-server.test.ts reads them.
import { subscribe } from 'node:diagnostics_channel';

const seen = new WeakSet();
subscribe('http.server.request.start', ({ server }) => {
  if (seen.has(server)) return;
  seen.add(server);
  const { headersTimeout, requestTimeout, keepAliveTimeout, timeout, maxConnections, connectionsCheckingInterval } = server;
  const limits = { headersTimeout, requestTimeout, keepAliveTimeout, timeout, maxConnections: maxConnections ?? null, connectionsCheckingInterval };
  process.stdout.write(`${JSON.stringify({ event: 'httpServer', port: server.address().port, limits })}\n`);
});
