/**
 * Node options of the relay's command line (`npm start`, the checkout's `./ptyrelay`, the relay
 * image): only options in Node's CLI documentation that every supported line accepts, each for a
 * measured reason:
 * - `--max-semi-space-size=1` (MiB): an idle relay's young generation, grown while it starts
 *   (config, the SSH stack), otherwise stays in its RSS. Idle with only `local`: 63.4 MB at
 *   1 MiB, 65.2 at 2 MiB (a bare node 44.2); with two SSH hosts 69.8–70.2 against 72.4–74.0.
 *   The flood through RelayClient did not move beyond its run's spread (median of three 6-round
 *   runs 53.5 MB/s at 2 MiB, 57.4 at 1; OpenSSH against itself 0.95–1.08×), nor did the typing
 *   echo through it (Node 24, 2-core Xeon).
 * A relay started another way (`ptyrelay serve` from a global install) runs the same without it;
 * `NODE_OPTIONS=--max-semi-space-size=1` gives it the same. test/unit/relay-runtime.test.ts keeps
 * the launchers in step with this list.
 */
export const RELAY_NODE_OPTIONS: readonly string[] = ['--max-semi-space-size=1'];
