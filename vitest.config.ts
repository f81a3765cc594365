import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/support/state-dir-setup.ts', 'test/support/fast-check-setup.ts'],
    // Own TMPDIR and a process marker per run; after the suite nothing of the run may be left.
    globalSetup: ['test/support/leak-check.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Documented on every supported Node line; tests that check what is collectable call gc().
    execArgv: ['--expose-gc'],
    fileParallelism: true,
    maxWorkers: 2,
  },
});
