import type { Reporter, TestModule } from 'vitest/node';

/**
 * Prints one plain closing line, `tests: N passed, N failed, N skipped`, after vitest's own
 * summary, and lists every skipped test with the reason it was skipped.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    const skips: string[] = [];
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const result = test.result();
        if (result.state === 'passed') passed++;
        else if (result.state === 'failed') failed++;
        else if (result.state === 'skipped') {
          skipped++;
          const note = result.note;
          skips.push(
            `  ${module.moduleId.replace(`${process.cwd()}/`, '')} > ${test.fullName}${note ? `: ${note}` : ''}`,
          );
        }
      }
      if (module.state() === 'failed' && module.children.size === 0) failed++;
    }
    if (skips.length > 0) process.stdout.write(`\nskipped tests:\n${skips.join('\n')}\n`);
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
