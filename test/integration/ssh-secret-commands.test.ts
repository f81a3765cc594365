import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPtyRelayError, type PtyRelayError } from '../../provider/errors.js';
import { resolveHost, type SshHostConfig } from '../../relay/ssh/host-config.js';
import { connectSsh } from '../../relay/ssh/host-connection.js';
import { allOf } from '../support/capabilities.js';
import {
  createShellUser,
  removeShellUser,
  type ShellUser,
  shellUsersAvailable,
} from '../support/shell-users.js';
import { relayHome } from '../support/ssh-fixture.js';
import { generateKey, type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';

/** Users this file creates start with this (issue 18's tests). */
const T18_USER_PREFIX = 'ptyrelay-t18-';
/** Secrets with shell syntax in them: a shell anywhere on the way would mangle or run them. */
const PASSWORD = 'pw $(touch ran-pw); `touch ran-bt` *';
const PASSPHRASE = "pp '=ls' $HOME; touch ran-pp";
/** Prints a file's content: the command's argv never holds the secret itself. */
const CAT = 'process.stdout.write(require("node:fs").readFileSync(process.argv[1], "utf8"))';

const available = allOf(sshdAvailable(), shellUsersAvailable(['/bin/sh']).ok);

describe.skipIf(!available)('passwordCommand and passphraseCommand against a real sshd', () => {
  let user: ShellUser;
  let sshd: SshdInstance;
  let home: ReturnType<typeof relayHome>;
  let dir: string;
  let keyPath: string;

  beforeAll(async () => {
    home = relayHome();
    dir = mkdtempSync(join(tmpdir(), 'ptr-secret-cmd-'));
    user = createShellUser('pw', '/bin/sh', {}, T18_USER_PREFIX);
    const r = spawnSync('chpasswd', [], { input: `${user.name}:${PASSWORD}\n`, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`chpasswd: ${r.stderr}`);
    sshd = await startSshd({ user: user.name, extraConfig: ['PasswordAuthentication yes'] });
    keyPath = join(dir, 'id_locked');
    sshd.authorize(generateKey(keyPath, { passphrase: PASSPHRASE }).publicKeyLine);
    writeFileSync(join(dir, 'pw'), `${PASSWORD}\n`, { mode: 0o600 });
    writeFileSync(join(dir, 'pp'), PASSPHRASE, { mode: 0o600 });
    writeFileSync(join(dir, 'wrong'), 'not it\n', { mode: 0o600 });
  });
  afterAll(async () => {
    await sshd?.stop();
    if (user) await removeShellUser(user);
    home?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  const host = (extra: Partial<SshHostConfig>): SshHostConfig => ({
    host: '127.0.0.1',
    port: sshd.port,
    user: user.name,
    knownHostsFile: sshd.knownHostsFile,
    useAgent: false,
    identityFile: join(dir, 'no-such-key'),
    ...extra,
  });

  async function whoami(cfg: SshHostConfig): Promise<string> {
    const ssh = await connectSsh(resolveHost(cfg));
    try {
      return await new Promise<string>((resolve, reject) => {
        ssh.client.exec('id -un', (err, ch) => {
          if (err) return reject(err);
          let out = '';
          ch.on('data', (d: Buffer) => (out += d));
          ch.on('close', () => resolve(out.trim()));
        });
      });
    } finally {
      ssh.close();
    }
  }

  async function refusal(cfg: SshHostConfig): Promise<PtyRelayError> {
    const err = await whoami(cfg).catch((e: unknown) => e);
    if (!isPtyRelayError(err)) throw new Error(`expected a PtyRelayError, got ${String(err)}`);
    return err;
  }

  it('logs in with the password a command printed (no shell ran it or its output)', async () => {
    expect(await whoami(host({ passwordCommand: [process.execPath, '-e', CAT, join(dir, 'pw')] }))).toBe(
      user.name,
    );
    for (const f of ['ran-pw', 'ran-bt']) expect(existsSync(join(process.cwd(), f))).toBe(false);
  });

  it('unlocks an identity file with the passphrase a command printed', async () => {
    const cfg = host({
      identityFile: keyPath,
      passphraseCommand: [process.execPath, '-e', CAT, join(dir, 'pp')],
    });
    expect(await whoami(cfg)).toBe(user.name);
    expect(existsSync(join(process.cwd(), 'ran-pp'))).toBe(false);
  });

  it('a wrong password or a failing command is AUTH_FAILED that shows neither secret', async () => {
    const wrong = await refusal(host({ passwordCommand: [process.execPath, '-e', CAT, join(dir, 'wrong')] }));
    expect(wrong.code).toBe('AUTH_FAILED');
    const failing = await refusal(
      host({ passwordCommand: [process.execPath, '-e', 'process.exit(4)', PASSWORD] }),
    );
    expect(failing.code).toBe('AUTH_FAILED');
    expect(failing.message).toContain(`passwordCommand failed: ${process.execPath}: exit 4`);
    for (const e of [wrong, failing]) {
      const all = `${e.message} ${JSON.stringify(e.details)}`;
      expect(all).not.toContain(PASSWORD);
      expect(all).not.toContain('not it');
    }
  });
});
