import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { hostFor, relayHome, remoteRuntimeDir, sshProvider } from '../support/ssh-fixture.js';
import { type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';

const available = sshdAvailable();

describe.skipIf(!available)('keep-tail thinning on the SSH path', () => {
  let sshd: SshdInstance;
  let home: ReturnType<typeof relayHome>;
  let p: SshPtyProvider;
  const runtimeDir = remoteRuntimeDir('bg');
  beforeAll(async () => {
    home = relayHome();
    sshd = await startSshd();
    p = sshProvider({ h: hostFor(sshd) }, runtimeDir);
  });
  afterAll(async () => {
    await p.shutdownDaemon('h').catch(() => {});
    await p.dispose();
    await sshd.stop();
    home.cleanup();
  });

  it('20 background `yes` floods over SSH cost at most one keep-tail per second each', async () => {
    const bytes = new Map<string, number>();
    const dropped = new Map<string, number>();
    p.onData((e) => bytes.set(e.id, (bytes.get(e.id) ?? 0) + e.data.length));
    p.onBackgroundStreamEvent((e) => {
      if (e.type === 'dataGap') dropped.set(e.id, (dropped.get(e.id) ?? 0) + e.droppedBytes);
    });
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await p.spawn({
        host: 'h',
        cols: 80,
        rows: 24,
        command: 'sh',
        args: ['-c', 'read go; exec yes'],
      });
      await p.setPtyBackgrounded(r.id, true);
      ids.push(r.id);
    }
    for (const id of ids) bytes.set(id, 0);
    await Promise.all(ids.map((id) => p.write(id, 'go\r')));
    const seconds = 10;
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const keep = Math.max(64 * 1024, Math.floor((2 * 1024 * 1024) / 20));
    let total = 0;
    for (const id of ids) {
      expect(bytes.get(id)).toBeLessThanOrEqual((seconds + 2) * keep);
      expect(dropped.get(id) ?? 0).toBeGreaterThan(keep);
      total += bytes.get(id) ?? 0;
    }
    const producedPerSession = [...dropped.values()].reduce((a, b) => a + b, 0) / ids.length;
    console.log(
      `keep-tail over SSH: ${(total / ids.length / seconds / 1024).toFixed(0)} KiB/s per session crossed the link; ` +
        `${(producedPerSession / seconds / 1024 / 1024).toFixed(1)} MiB/s per session dropped`,
    );
    await Promise.all(ids.map((id) => p.shutdown(id, { immediate: true })));
  }, 60_000);
});
