import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as pty from 'node-pty';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { allOf, rootAvailable } from '../support/capabilities.js';
import { waitFor } from '../support/local-daemon.js';
import { type RelayFixture, startRelay, TEST_TOKEN } from '../support/relay-fixture.js';
import { hostFor, relayHome } from '../support/ssh-fixture.js';
import { generateKey, type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';

const available = allOf(sshdAvailable(), rootAvailable('a throwaway login user'));

const MAIN = join(import.meta.dirname, '..', '..', 'dist', 'bin', 'ptyrelay.js');
/** A login user of this file's own (its daemon and stub install are nobody else's); removed after. */
const USER = 'ptyrelay-t16-trust';

function cli(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

/** Runs the CLI in a real PTY (so it is "interactive"), answering `answer` to the first question. */
async function cliInPty(
  args: string[],
  env: NodeJS.ProcessEnv,
  question: RegExp,
  answer: string,
): Promise<{ code: number; out: string }> {
  const p = pty.spawn(process.execPath, [MAIN, ...args], { cols: 200, rows: 40, env, name: 'xterm' });
  let out = '';
  let code: number | undefined;
  p.onData((d) => {
    out += d;
  });
  p.onExit((e) => {
    code = e.exitCode;
  });
  try {
    await waitFor(() => question.test(out), 30_000, `question ${question}`);
    p.write(`${answer}\r`);
    await waitFor(() => code !== undefined, 60_000, 'the CLI to exit');
    return { code: code!, out };
  } finally {
    if (code === undefined) p.kill();
  }
}

/** `SHA256:…` of an `ssh-ed25519 AAAA…` public key, as ssh prints it. */
const fingerprintOf = (publicKey: string) =>
  `SHA256:${createHash('sha256')
    .update(Buffer.from(publicKey.split(' ')[1]!, 'base64'))
    .digest('base64')
    .replace(/=+$/, '')}`;

describe.skipIf(!available)('host keys: first use and rotation', { timeout: 120_000 }, () => {
  let sshd: SshdInstance;
  let fx: RelayFixture;
  let home: ReturnType<typeof relayHome>;
  let env: NodeJS.ProcessEnv;
  const kh = (name: string) => join(home.home, `known_hosts_${name}`);

  beforeAll(async () => {
    home = relayHome();
    sshd = await startSshd({ user: USER });
    const hosts = Object.fromEntries(
      ['box', 'box2', 'box3'].map((n) => [n, hostFor(sshd, { knownHostsFile: kh(n) })]),
    );
    fx = await startRelay({ config: { hosts } });
    env = { ...process.env, PTYRELAY_URL: fx.url, PTYRELAY_TOKEN: TEST_TOKEN, HOME: fx.local.home };
    delete env.PTYRELAY_CLIENT_ID;
  });
  afterAll(async () => {
    await (fx?.router.providerFor('box') as SshPtyProvider | undefined)
      ?.shutdownDaemon('box')
      .catch(() => {});
    await fx?.cleanup();
    await sshd?.stop();
    home?.cleanup();
    spawnSync('userdel', ['-r', USER], { stdio: 'ignore' });
  });

  it('an interactive `open` shows the fingerprint, asks like ssh, records the key and opens', async () => {
    const fp = fingerprintOf(sshd.hostPublicKey);
    const r = await cliInPty(
      ['open', 'box', '--', 'sh', '-c', 'echo on-box; exec sleep 30'],
      env,
      /continue connecting \(yes\/no\)\? /,
      'yes',
    );
    expect(r.out).toContain(`The authenticity of host 'box' can't be established.`);
    expect(r.out).toContain(`ED25519 key fingerprint is ${fp}.`);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/box\/pty-\d+/);
    expect(readFileSync(kh('box'), 'utf8')).toContain(`[127.0.0.1]:${sshd.port} ${sshd.hostPublicKey}`);
  });

  it('a non-interactive `open` fails with the fingerprint and the command that trusts it', async () => {
    const r = await cli(['open', 'box2', '--', 'sleep', '30'], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('HOSTKEY_UNKNOWN');
    expect(r.stderr).toContain(fingerprintOf(sshd.hostPublicKey));
    expect(r.stderr).toContain('ptyrelay hosts trust box2');
    const t = await cli(['hosts', 'trust', 'box2', '--yes'], env);
    expect(t.code, t.stderr).toBe(0);
    expect(t.stdout).toContain(`box2: key ${fingerprintOf(sshd.hostPublicKey)} recorded in ${kh('box2')}`);
    const again = await cli(['open', 'box2', '--', 'sleep', '30'], env);
    expect(again.code, again.stderr).toBe(0);
  });

  it('after HOSTKEY_MISMATCH, `hosts trust --replace` shows both fingerprints and replaces on yes', async () => {
    const old = generateKey(join(home.home, 'old_host_key')).publicKeyLine.split(' ').slice(0, 2).join(' ');
    writeFileSync(kh('box3'), `[127.0.0.1]:${sshd.port} ${old}\n`);
    const open = await cli(['open', 'box3', '--', 'sleep', '30'], env);
    expect(open.code).toBe(1);
    expect(open.stderr).toContain('HOSTKEY_MISMATCH');
    expect(open.stderr).toContain('ptyrelay hosts trust box3 --replace');
    const plain = await cli(['hosts', 'trust', 'box3'], env);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toContain('--replace');
    expect(readFileSync(kh('box3'), 'utf8')).toContain(old);

    const r = await cliInPty(
      ['hosts', 'trust', 'box3', '--replace'],
      env,
      /Replace the known key with it \(yes\/no\)\? /,
      'yes',
    );
    expect(r.out).toContain(`known:     ${fingerprintOf(old)}`);
    expect(r.out).toContain(`presented: ${fingerprintOf(sshd.hostPublicKey)}`);
    expect(r.code, r.out).toBe(0);
    const after = readFileSync(kh('box3'), 'utf8');
    expect(after).not.toContain(old);
    expect(after).toContain(sshd.hostPublicKey);
    expect((await cli(['open', 'box3', '--', 'sleep', '30'], env)).code).toBe(0);
  });
});
