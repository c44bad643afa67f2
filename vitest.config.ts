import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

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
    testTimeout: 30_000,
    // No network beyond loopback: workers must not ask the EC2 instance metadata service.
    env: { AWS_EC2_METADATA_DISABLED: 'true' },
    hookTimeout: 60_000,
    // 2-core CI machines: files run in parallel but not more than the cores can carry.
    maxWorkers: 2,
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
