import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { keepBackgroundThreadsLow, sliceAddonPath } from '../../provider/background-threads.js';
import { INTERACTIVE_TIER_UP_FLAG } from '../../provider/v8-tier-up.js';
import { packageRoot } from '../stub-bundle.js';

/**
 * V8 flags for a process that runs the relay service (`ptyrelay serve`, the bench's relay), set
 * once at its start, before the service allocates anything of note.
 *
 * `--heap-growing-percent=100`: every byte of output the relay forwards lives for a while in the
 * AHP action log (the replay ring, 8 MiB by default), long enough to be promoted out of the young
 * generation, and dies in the old one. V8's own growing factor let the old generation reach up to
 * four times what is live before it collected it: under a `yes` flood with ten stalled AHP clients
 * the old space swung between 30 and 127 MB with ~30 MB live, and `ptyrelay serve` peaked at
 * 243–249 MB RSS (235 MB with 100 idle clients afterwards). Collecting once the old generation
 * doubled: peak 175–180 MB. Once it grew by half went lower (158–161 MB) but cost the reader next
 * to the stalled clients a few per cent of its throughput (0.87–1.04× of it alone, against
 * 0.99–1.12× here and 0.93–1.06× with V8's defaults); `--optimize-for-size`, the daemon's flag,
 * went lower still (126 MB) but made a flood through the relay cost 25 % more CPU per MB (its code
 * is less optimized). See docs/benchmarks.md, slow-clients.
 *
 * `--interrupt-budget`: the code a keystroke runs through (the input queue, the stub link's frames,
 * ssh2's channel) is optimized early; see {@link INTERACTIVE_TIER_UP_FLAG}.
 *
 * The relay's entry is the `ptyrelay` bin, which node starts without flags, so the flags are set
 * here; V8 reads them each time it sizes the old generation or gives a function its tier-up
 * budget, so setting them early takes effect.
 */
export const RELAY_V8_FLAGS: readonly string[] = ['--heap-growing-percent=100', INTERACTIVE_TIER_UP_FLAG];

let tuned = false;

/**
 * Applies {@link RELAY_V8_FLAGS} to this process and keeps its threads other than the main one
 * (V8's compilers and GC helpers, libuv's pool) at a lower priority and a long slice
 * (provider/background-threads.ts), once; later calls do nothing. `onProblem` hears why any of
 * that could not be done (no slice addon, a refusal).
 */
export function tuneRelayV8(onProblem?: (problem: string) => void): void {
  if (tuned) return;
  tuned = true;
  for (const flag of RELAY_V8_FLAGS) setFlagsFromString(flag);
  // The slice addon is built beside the stub bundle (scripts/build-native.mjs).
  keepBackgroundThreadsLow(onProblem, sliceAddonPath(join(packageRoot(), 'dist', 'stub')));
}
