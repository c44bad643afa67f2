import type { TestProject } from 'vitest/node';
import { startDynamoDBLocal } from '../lib/local/dynamodb-local.js';

declare module 'vitest' {
  export interface ProvidedContext {
    ddbEndpoint: string;
  }
}

/** One DynamoDB Local per test run; each test file creates its own uniquely named tables. */
export default async function setup(project: TestProject) {
  const ddb = await startDynamoDBLocal();
  project.provide('ddbEndpoint', ddb.endpoint);
  return () => ddb.stop();
}
