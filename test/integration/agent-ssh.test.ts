import { afterAll, beforeAll, describe } from 'vitest';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { endReasonSuite } from '../support/agent-suite.js';
import { hostFor, relayHome, remoteRuntimeDir, sshProvider } from '../support/ssh-fixture.js';
import { type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';

const available = sshdAvailable();

describe.skipIf(!available)(
  'agent terminals on an SSH host (real OpenSSH sshd)',
  { timeout: 240_000 },
  () => {
    let sshd: SshdInstance;
    let home: ReturnType<typeof relayHome>;
    let provider: SshPtyProvider;
    const runtimeDir = remoteRuntimeDir('agent');

    beforeAll(async () => {
      home = relayHome();
      sshd = await startSshd();
      provider = sshProvider({ h: hostFor(sshd) }, runtimeDir);
    });
    afterAll(async () => {
      await provider?.shutdownDaemon('h').catch(() => {});
      await provider?.dispose();
      await sshd?.stop();
      home?.cleanup();
    });
    endReasonSuite(() => ({ provider, host: 'h' }));
  },
);
