import type * as fc from 'fast-check';

/**
 * Run parameters of the fuzz suites. Under `npm test` every property runs a fixed seed for a
 * bounded count and time; `npm run fuzz` (FUZZ=1) runs the long count with a fresh seed.
 *   FUZZ_SEED=n   replays a seed (fast-check prints `seed` and `path` of a failure)
 *   FUZZ_RUNS=n   runs per property (overrides both defaults)
 *   FUZZ_TIME_MS  time limit per property (default 2 s in npm test, 10 min in fuzz mode)
 */
const env = process.env;
export const LONG_FUZZ = env.FUZZ === '1';

function envInt(name: string): number | undefined {
  const v = env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw new Error(`${name} must be an integer, got ${v}`);
  return n;
}

/** Time limit of one property, for vitest's per-test timeout too. */
export const FUZZ_TIME_MS = envInt('FUZZ_TIME_MS') ?? (LONG_FUZZ ? 600_000 : 2_000);
/** vitest timeout of a test running one property (its time limit plus slack for shrinking). */
export const TEST_TIMEOUT_MS = FUZZ_TIME_MS + 30_000;

/** The seed a property runs: FUZZ_SEED when given, a fresh one under `npm run fuzz`, else `fixed`. */
export function fuzzSeed(fixed: number): number {
  return envInt('FUZZ_SEED') ?? (LONG_FUZZ ? Date.now() % 2 ** 31 : fixed);
}

/**
 * fast-check parameters: `seed` is the property's fixed seed under npm test, `runs` its count
 * there and `longRuns` its count under `npm run fuzz`; `timeMs` raises the npm test time limit of a
 * property whose single run is slow (a real relay).
 */
export function fuzzParams<T>(
  name: string,
  p: { seed: number; runs: number; longRuns: number; timeMs?: number },
): fc.Parameters<T> {
  const seed = fuzzSeed(p.seed);
  const numRuns = envInt('FUZZ_RUNS') ?? (LONG_FUZZ ? p.longRuns : p.runs);
  if (LONG_FUZZ || env.FUZZ_SEED) console.log(`fuzz ${name}: seed ${seed}, ${numRuns} runs`);
  return {
    seed,
    numRuns,
    // A property that runs out of time passes with the runs it did (a hang still fails: vitest's timeout).
    interruptAfterTimeLimit: LONG_FUZZ || env.FUZZ_TIME_MS ? FUZZ_TIME_MS : (p.timeMs ?? FUZZ_TIME_MS),
    markInterruptAsFailure: false,
  };
}
