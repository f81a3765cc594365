import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { RelayClient } from '../../provider/client/relay-client.js';
import { RELAY_NODE_OPTIONS } from '../../relay/core/relay-runtime.js';
import { type BenchEnv, hostConfig } from './env.js';

/** The relay process bundle, built next to bench.mjs by bench/run.mjs. */
const RELAY_BUNDLE = join(import.meta.dirname, 'relay.mjs');

/**
 * A relay service in its own process (bench/relay-main.ts) routing host `h` to the bench's sshd
 * through the same daemon runtime dir as the bench's SshPtyProvider, and a RelayClient connected
 * to it: the whole client → WebSocket → relay → SSH → stub path, with relay and client on
 * separate threads as in use.
 */
export async function startBenchRelay(
  env: BenchEnv,
): Promise<{ client: RelayClient; close(): Promise<void> }> {
  const token = randomBytes(16).toString('hex');
  const args = { token, hosts: { h: hostConfig(env.sshd) }, daemonArgs: ['--runtime-dir', env.runtimeDir] };
  const child = spawn(process.execPath, [...RELAY_NODE_OPTIONS, RELAY_BUNDLE, JSON.stringify(args)], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: process.env,
  });
  if (child.pid) env.ownPids.add(child.pid);
  const lines = createInterface({ input: child.stdout! });
  const [first] = (await Promise.race([
    once(lines, 'line'),
    once(child, 'exit').then(() => {
      throw new Error('the bench relay process exited before listening');
    }),
  ])) as [string];
  const { url } = JSON.parse(first) as { url: string };
  const client = new RelayClient({ url, token });
  return {
    client,
    async close() {
      await client.dispose();
      child.stdin!.end();
      await Promise.race([once(child, 'exit'), new Promise((r) => setTimeout(r, 5000))]);
      child.kill('SIGKILL');
    },
  };
}
