import type { TestProject } from 'vitest/node';
import { startDynamoDBLocal } from '../lib/local/dynamodb-local.js';
import { ensureHaproxy } from '../lib/local/haproxy.js';
import { WAIT_GUARD_MS } from './guards.js';

declare module 'vitest' {
  export interface ProvidedContext {
    ddbEndpoint: string;
  }
}

/** One DynamoDB Local per test run; each test file creates its own uniquely named tables. */
export default async function setup(project: TestProject) {
  // HAProxy, the load balancer in front of workers (test/local/haproxy.test.ts), is asked for the same way
  ensureHaproxy({ install: true, askedBy: 'npm test' });
  // the repository's own `npm test` asks for Java on the user's behalf (and says so) if it is missing;
  // the JVM answers in seconds when idle, far later beside busy processes: a hang guard, not the 30 s default
  const ddb = await startDynamoDBLocal({ installJava: { askedBy: 'npm test' }, startTimeoutMs: WAIT_GUARD_MS });
  project.provide('ddbEndpoint', ddb.endpoint);
  return () => ddb.stop();
}
