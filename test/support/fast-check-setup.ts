import fc from 'fast-check';

/**
 * Every property of `npm test` runs a fixed seed unless it names its own (the fuzz suites do,
 * test/fuzz/fuzz-options.ts): a run never fails on a seed nobody chose, and a failure replays.
 * FUZZ_SEED=n runs another seed; `npm run fuzz` (FUZZ=1) a fresh one.
 */
const env = process.env;
const seed = env.FUZZ_SEED ? Number(env.FUZZ_SEED) : env.FUZZ === '1' ? Date.now() % 2 ** 31 : 20_261_206;
fc.configureGlobal({ seed });
