/**
 * Node options of the relay's command line (`npm start`, the checkout's `./ptyrelay`, the relay
 * image): only options in Node's CLI documentation that every supported line accepts, each for a
 * measured reason:
 * - `--max-semi-space-size=2` (MiB): an idle relay's young generation, grown while it starts
 *   (config, schemas, the SSH stack), otherwise stays in its RSS: idle with only `local` 97.2 →
 *   91.7 MB, with two SSH hosts 112 → 97 MB; the flood through SshPtyProvider and RelayClient
 *   within the run's spread (bench idle-memory and flood, Node 24).
 * A relay started another way (`ptyrelay serve` from a global install) runs the same without it;
 * `NODE_OPTIONS=--max-semi-space-size=2` gives it the same. test/unit/relay-runtime.test.ts keeps
 * the launchers in step with this list.
 */
export const RELAY_NODE_OPTIONS: readonly string[] = ['--max-semi-space-size=2'];
