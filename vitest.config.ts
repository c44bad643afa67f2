import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { TEST_GUARD_MS } from './test/guards.js';

const src = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  // The package names resolve to the sources here, as tsconfig.json's paths say.
  resolve: {
    // (the subpath first: an alias also matches the names under it)
    alias: {
      '@conclave/sdk/push': src('./lib/sdk/push-entry.ts'),
      '@conclave/sdk': src('./lib/sdk/index.ts'),
      '@conclave/cdk': src('./infra/index.ts'),
      '@conclave/testing': src('./lib/testing/index.ts'),
    },
  },
  test: {
    include: ['test/**/*.test.ts'],
    // One DynamoDB Local per run; every test file makes its own uniquely named tables.
    globalSetup: ['test/global-setup.ts'],
    // Hang guards, not budgets (test/guards.ts): a shared 2-core machine runs the suite several
    // times slower than an idle one, and a test waits for its outcome however long that takes.
    testTimeout: TEST_GUARD_MS,
    hookTimeout: TEST_GUARD_MS,
    // No network beyond loopback: workers must not ask the EC2 instance metadata service.
    env: { AWS_EC2_METADATA_DISABLED: 'true' },
    // 2-core CI machines: files run in parallel but not more than the cores can carry.
    maxWorkers: 2,
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
