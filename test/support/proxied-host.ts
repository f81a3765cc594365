import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type {
  SshHostConfig,
  SshPtyProvider,
  SshPtyProviderOptions,
} from '../../relay/ssh/ssh-pty-provider.js';
import { killDaemonsOf } from './daemon-reaper.js';
import { FaultProxy } from './fault-proxy.js';
import { hostFor, relayHome, remoteRuntimeDir, sshProvider } from './ssh-fixture.js';
import { type SshdInstance, startSshd } from './sshd.js';

/** An sshd reached through a FaultProxy, an SshPtyProvider (host `h`) that goes through it, and a data dir. */
export interface ProxiedHost {
  sshd: SshdInstance;
  proxy: FaultProxy;
  provider: SshPtyProvider;
  /** The host's daemon runtime dir (private to this fixture). */
  runtimeDir: string;
  /** A temp dir the sshd test user can read (stream generators live here). */
  dir: string;
  cleanup(): Promise<void>;
}

export async function startProxiedHost(
  tag: string,
  host: Partial<SshHostConfig> = {},
  extra: Partial<SshPtyProviderOptions> = {},
  proxyOpts: { nagle?: boolean } = {},
): Promise<ProxiedHost> {
  const home = relayHome();
  const sshd = await startSshd();
  const proxy = await FaultProxy.start({ host: '127.0.0.1', port: sshd.port }, proxyOpts);
  const kh = join(home.home, 'proxy_known_hosts');
  writeFileSync(kh, `[127.0.0.1]:${proxy.port} ${sshd.hostPublicKey}\n`);
  const runtimeDir = remoteRuntimeDir(tag);
  const provider = sshProvider(
    { h: hostFor(sshd, { port: proxy.port, knownHostsFile: kh, ...host }) },
    runtimeDir,
    extra,
  );
  const dir = mkdtempSync(join(tmpdir(), `ptr-${tag}-`));
  chmodSync(dir, 0o755); // the generator runs as the sshd test user
  const fx: ProxiedHost = {
    sshd,
    proxy,
    provider,
    runtimeDir,
    dir,
    async cleanup() {
      proxy.restore();
      // The provider a test put in place last (a test may swap in a fresh one). The request can
      // still fail (the link not back yet after the faults of a loaded run): say so and end the
      // daemon by its runtime dir, so the run leaves nothing behind.
      await fx.provider.shutdownDaemon('h').catch(async (err: unknown) => {
        console.log(`proxied host: shutdownDaemon failed (${String(err)}); killing its daemon`);
        await killDaemonsOf(runtimeDir);
      });
      await fx.provider.dispose();
      await proxy.close();
      await sshd.stop();
      home.cleanup();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return fx;
}
