import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { OutputCollector } from '../support/local-daemon.js';
import { hostFor, relayHome, remoteRuntimeDir, sshProvider } from '../support/ssh-fixture.js';
import { type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';

const available = sshdAvailable();

/** Successful logins recorded in an sshd's log (LogLevel VERBOSE). */
const logins = (s: SshdInstance) =>
  (readFileSync(s.logPath, 'utf8').match(/Accepted publickey for /g) ?? []).length;

describe.skipIf(!available)('ProxyJump chains', () => {
  let j1: SshdInstance;
  let j2: SshdInstance;
  let target: SshdInstance;
  let home: ReturnType<typeof relayHome>;
  let provider: SshPtyProvider | undefined;
  const runtimeDir = remoteRuntimeDir('jump');

  beforeAll(async () => {
    home = relayHome();
    [j1, j2, target] = await Promise.all([startSshd(), startSshd(), startSshd()]);
    // The jump hosts come from ~/.ssh/config, as a user would write them.
    const entry = (name: string, s: SshdInstance) => [
      `Host ${name}`,
      '  HostName 127.0.0.1',
      `  Port ${s.port}`,
      `  User ${s.user}`,
      `  IdentityFile ${s.userKeyPath}`,
    ];
    writeFileSync(join(home.home, '.ssh', 'config'), [...entry('j1', j1), ...entry('j2', j2), ''].join('\n'));
    writeFileSync(
      join(home.home, '.ssh', 'known_hosts'),
      [j1, j2, target].map((s) => s.knownHostsLine).join('\n') + '\n',
    );
  });
  afterAll(async () => {
    await provider?.shutdownDaemon('t').catch(() => {});
    await provider?.dispose();
    await Promise.all([j1?.stop(), j2?.stop(), target?.stop()]);
    home.cleanup();
  });

  it('connects through two jump hosts (a login on each of the three sshd)', async () => {
    const before = [logins(j1), logins(j2), logins(target)];
    provider = sshProvider({ t: hostFor(target, { proxyJump: 'j1,j2' }) }, runtimeDir);
    const out = new OutputCollector(provider);
    const r = await provider.spawn({ host: 't', cols: 80, rows: 24, command: 'bash' });
    out.bind(r.id);
    await provider.write(r.id, 'echo hop-$((3*14))\r');
    await out.waitText('hop-42');
    const after = [logins(j1), logins(j2), logins(target)];
    expect(after.map((n, i) => n - before[i]!)).toEqual([1, 1, 1]);
    await provider.shutdown(r.id);
  });
});
