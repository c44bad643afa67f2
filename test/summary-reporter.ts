import type { Reporter, TestModule } from 'vitest/node';

/**
 * Prints the plain closing line CI reads: "N passed, N failed" (", N skipped" when any). A suite
 * that failed without a failed test of its own (its beforeAll threw, so its tests were skipped)
 * counts as one failure, and so does a file that failed to load: the line never says 0 failed
 * on a failed run.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>) {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const m of modules) {
      const before = failed;
      for (const t of m.children.allTests()) {
        const s = t.result().state;
        if (s === 'passed') passed++;
        else if (s === 'failed') failed++;
        else skipped++;
      }
      for (const s of m.children.allSuites()) {
        if (s.state() === 'failed' && ![...s.children.allTests('failed')].length) failed++;
      }
      if (m.state() === 'failed' && failed === before) failed++;
    }
    process.stdout.write(`\n${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
  }
}
