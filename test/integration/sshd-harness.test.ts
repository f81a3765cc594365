import { chmodSync, existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { Client, type ClientChannel } from 'ssh2';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { keyTypeFromBlob, readKnownHostsFiles, verifyHostKey } from '../../relay/ssh/known-hosts.js';
import { generateKey, type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';

const WORLD_WRITABLE_SOCKET_MODE = 0o777;
const available = sshdAvailable();

interface Connected {
  conn: Client;
  hostKey: Buffer;
}

function connect(sshd: SshdInstance): Promise<Connected> {
  return new Promise((resolve, reject) => {
    const conn = new Client();
    let hostKey: Buffer | undefined;
    conn
      .once('ready', () => resolve({ conn, hostKey: hostKey! }))
      .once('error', reject)
      .connect({
        host: sshd.host,
        port: sshd.port,
        username: sshd.user,
        privateKey: readFileSync(sshd.userKeyPath),
        hostVerifier: (key: Buffer) => {
          hostKey = key;
          return true;
        },
      });
  });
}

function execOutput(conn: Client, command: string): Promise<{ stdout: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    conn.exec(command, (err, stream: ClientChannel) => {
      if (err) return reject(err);
      let stdout = '';
      stream.on('data', (d: Buffer) => {
        stdout += d.toString();
      });
      stream.stderr.resume();
      stream.once('close', (code: number | null) => resolve({ stdout, code }));
    });
  });
}

/** Zombies count as gone: they are dead, only not yet reaped. */
function pidAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

describe('sshd harness', () => {
  let sshd: SshdInstance;

  beforeAll(async () => {
    if (available) sshd = await startSshd();
  });

  afterAll(async () => {
    await sshd?.stop();
  });

  it.skipIf(!available)('accepts the user key and runs commands as the test user', async () => {
    const { conn } = await connect(sshd);
    try {
      const { stdout, code } = await execOutput(conn, 'id -un');
      expect(code).toBe(0);
      expect(stdout.trim()).toBe(sshd.user);
    } finally {
      conn.end();
    }
  });

  it.skipIf(!available)('presents the host key listed in knownHostsFile', async () => {
    const { conn, hostKey } = await connect(sshd);
    conn.end();
    const keyType = keyTypeFromBlob(hostKey)!;
    expect(keyType).toBe('ssh-ed25519');
    expect(`${keyType} ${hostKey.toString('base64')}`).toBe(sshd.hostPublicKey);
    const entries = readKnownHostsFiles([sshd.knownHostsFile]);
    expect(verifyHostKey(entries, sshd.host, sshd.port, keyType, hostKey)).toEqual({ kind: 'ok' });
    expect(verifyHostKey(entries, sshd.host, sshd.port + 1, keyType, hostKey)).toEqual({ kind: 'unknown' });
  });

  it.skipIf(!available)('allows streamlocal forwarding by default', async () => {
    const socketPath = join(sshd.dir, 'echo.sock');
    const server = net.createServer((sock) => sock.pipe(sock));
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    // sshd connects to the socket as the login user.
    chmodSync(socketPath, WORLD_WRITABLE_SOCKET_MODE);
    const { conn } = await connect(sshd);
    try {
      const echoed = await new Promise<string>((resolve, reject) =>
        conn.openssh_forwardOutStreamLocal(socketPath, (err, ch) => {
          if (err) return reject(err);
          ch.once('data', (d: Buffer) => {
            resolve(d.toString());
            ch.close();
          });
          ch.write('ping');
        }),
      );
      expect(echoed).toBe('ping');
    } finally {
      conn.end();
      server.close();
    }
  });
});

describe('sshd harness with options', () => {
  it.skipIf(!available)('authorize() adds keys, e.g. a passphrase-protected RSA key', async () => {
    const sshd = await startSshd({ extraConfig: ['LogLevel DEBUG1'] });
    onTestFinished(() => sshd.stop());
    const key = generateKey(join(sshd.dir, 'extra_rsa'), { type: 'rsa', passphrase: 'sesame' });
    expect(key.publicKeyLine).toMatch(/^ssh-rsa /);
    sshd.authorize(key.publicKeyLine);
    const conn = new Client();
    await new Promise<void>((resolve, reject) => {
      conn.once('ready', () => resolve()).once('error', reject);
      conn.connect({
        host: sshd.host,
        port: sshd.port,
        username: sshd.user,
        privateKey: readFileSync(key.privateKeyPath),
        passphrase: 'sesame',
      });
    });
    conn.end();
    // extraConfig lines precede the defaults, and sshd keeps the first value per keyword.
    expect(readFileSync(sshd.logPath, 'utf8')).toMatch(/debug1:/);
  });

  it.skipIf(!available)(
    'rejects openssh_forwardOutStreamLocal and stop() leaves nothing behind',
    async () => {
      const sshd = await startSshd({ allowStreamLocalForwarding: false });
      try {
        expect(pidAlive(sshd.pid)).toBe(true);
        const { conn } = await connect(sshd);
        try {
          const err = await new Promise<Error | undefined>((resolve) =>
            conn.openssh_forwardOutStreamLocal('/tmp/x.sock', (e, ch) => {
              ch?.close();
              resolve(e);
            }),
          );
          expect(err).toBeInstanceOf(Error);
        } finally {
          conn.end();
        }
        // sshd answers a policy refusal and a failed connect() identically on the wire; only the log differs.
        expect(readFileSync(sshd.logPath, 'utf8')).toMatch(/refused streamlocal port forward/);
      } finally {
        await sshd.stop();
      }
      expect(pidAlive(sshd.pid)).toBe(false);
      expect(existsSync(sshd.dir)).toBe(false);
    },
  );

  it.skipIf(!available)('stop() also ends sessions that are still open', async () => {
    const sshd = await startSshd();
    onTestFinished(() => sshd.stop());
    const { conn } = await connect(sshd);
    conn.on('error', () => {});
    const closed = new Promise<void>((resolve) => conn.once('close', () => resolve()));
    const sessionPid = await new Promise<number>((resolve, reject) =>
      conn.exec('echo $$; exec sleep 600', (err, stream) => {
        if (err) return reject(err);
        stream.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
      }),
    );
    expect(pidAlive(sessionPid)).toBe(true);
    await sshd.stop();
    await closed;
    expect(pidAlive(sshd.pid)).toBe(false);
    expect(pidAlive(sessionPid)).toBe(false);
  });
});
