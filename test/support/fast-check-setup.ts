import fc from 'fast-check';
import { fuzzSeed } from '../fuzz/fuzz-options.js';

/**
 * Every property of `npm test` runs a fixed seed unless it names its own (the fuzz suites do,
 * test/fuzz/fuzz-options.ts): a run never fails on a seed nobody chose, and a failure replays.
 * FUZZ_SEED=n runs another seed; `npm run fuzz` (FUZZ=1) a fresh one.
 */
fc.configureGlobal({ seed: fuzzSeed(20_261_206) });
