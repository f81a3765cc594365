/**
 * Node options of the relay's command line (`npm start`, the checkout's `./ptyrelay`, the relay
 * image): only options in Node's CLI documentation that every supported line accepts, each for a
 * measured reason:
 * - `--max-semi-space-size=2` (MiB): an idle relay's young generation, grown while it starts
 *   (config, schemas, the SSH stack), otherwise stays in its RSS: idle with two SSH hosts
 *   78.9–79.0 → 73.3–73.5 MB with the relay's heap trim (relay/core/heap-trim.ts; 80.4 → 79.1
 *   before it); with only `local`, which loads less, 67.1–67.3 against 67.5 (no difference). The
 *   flood through RelayClient was within the run's spread with and without it when it came;
 *   1 MiB (before the trim: the SSH case 73–76 MB) cost that flood 2–3 % (0.84 / 0.81× → 0.81 /
 *   0.79×, A/A 0.99–1.00×), so 2 stays (Node 24).
 * A relay started another way (`ptyrelay serve` from a global install) runs the same without it;
 * `NODE_OPTIONS=--max-semi-space-size=2` gives it the same. test/unit/relay-runtime.test.ts keeps
 * the launchers in step with this list.
 */
export const RELAY_NODE_OPTIONS: readonly string[] = ['--max-semi-space-size=2'];
