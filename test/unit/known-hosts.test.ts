import { execFileSync } from 'node:child_process';
import { createHmac, generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  appendKnownHost,
  fingerprintSha256,
  formatKnownHostsLine,
  keyTypeFromBlob,
  matchPatternList,
  parseKnownHosts,
  readKnownHostsFiles,
  verifyHostKey,
} from '../../relay/ssh/known-hosts.js';
import { capability, filesMissing } from '../support/capabilities.js';

const SSH_KEYGEN = '/usr/bin/ssh-keygen';
const haveKeygen = capability(
  'ssh-client',
  filesMissing([SSH_KEYGEN], 'the ssh-keygen cross-checks; apt-get install openssh-client'),
);
const PERM_MASK = 0o777;

function sshString(data: Buffer | string): Buffer {
  const body = typeof data === 'string' ? Buffer.from(data) : data;
  const len = Buffer.alloc(4);
  len.writeUInt32BE(body.length);
  return Buffer.concat([len, body]);
}

function ed25519Blob(): Buffer {
  const { publicKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  return Buffer.concat([sshString('ssh-ed25519'), sshString(raw)]);
}

function ecdsaBlob(): Buffer {
  const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = publicKey.export({ format: 'jwk' });
  const point = Buffer.concat([
    Buffer.from([4]),
    Buffer.from(jwk.x!, 'base64url'),
    Buffer.from(jwk.y!, 'base64url'),
  ]);
  return Buffer.concat([sshString('ecdsa-sha2-nistp256'), sshString('nistp256'), sshString(point)]);
}

const ED = 'ssh-ed25519';
const EC = 'ecdsa-sha2-nistp256';
const keyA = ed25519Blob();
const keyB = ed25519Blob();
const keyEc = ecdsaBlob();
const b64 = (blob: Buffer): string => blob.toString('base64');

function hashedHost(name: string, salt = randomBytes(20)): string {
  const mac = createHmac('sha1', salt).update(name).digest();
  return `|1|${salt.toString('base64')}|${mac.toString('base64')}`;
}

const tmp = mkdtempSync(join(os.tmpdir(), 'ptyrelay-kh-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('fingerprints and blobs', () => {
  it('reads the key type out of a wire blob', () => {
    expect(keyTypeFromBlob(keyA)).toBe(ED);
    expect(keyTypeFromBlob(keyEc)).toBe(EC);
    expect(keyTypeFromBlob(Buffer.from([0, 0, 0, 9, 1]))).toBeUndefined();
  });

  it.skipIf(!haveKeygen)('matches ssh-keygen -lf', () => {
    for (const [type, blob] of [
      [ED, keyA],
      [EC, keyEc],
    ] as const) {
      const pub = join(tmp, `fp-${type}.pub`);
      writeFileSync(pub, `${type} ${b64(blob)} test\n`);
      const out = execFileSync(SSH_KEYGEN, ['-l', '-E', 'sha256', '-f', pub], { encoding: 'utf8' });
      expect(out.split(' ')[1]).toBe(fingerprintSha256(blob));
    }
    expect(fingerprintSha256(keyA)).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
  });
});

describe('parseKnownHosts', () => {
  it('skips comments, blanks and malformed lines and reads markers and comments', () => {
    const text = [
      '# comment',
      '',
      `host1,host2 ${ED} ${b64(keyA)} me@laptop extra`,
      `@revoked * ${ED} ${b64(keyB)}`,
      `@cert-authority *.corp ${ED} ${b64(keyB)}`,
      `@bogus host ${ED} ${b64(keyB)}`,
      'host-without-key ssh-ed25519',
      `host ${ED} not*base64`,
      `|1|short|hash ${ED} ${b64(keyA)}`,
      `   ${hashedHost('h')} ${ED} ${b64(keyA)}  `,
    ].join('\r\n');
    const entries = parseKnownHosts(text);
    expect(entries.map((e) => e.line)).toEqual([3, 4, 5, 10]);
    expect(entries[0]).toMatchObject({
      marker: null,
      hosts: { kind: 'patterns', patterns: ['host1', 'host2'] },
      keyType: ED,
      comment: 'me@laptop extra',
    });
    expect(entries[0]!.keyBlob.equals(keyA)).toBe(true);
    expect(entries[1]!.marker).toBe('revoked');
    expect(entries[2]!.marker).toBe('cert-authority');
    expect(entries[3]!.hosts.kind).toBe('hashed');
  });
});

describe('verifyHostKey', () => {
  const verify = (text: string, host: string, port: number, blob: Buffer, type = ED) =>
    verifyHostKey(parseKnownHosts(text), host, port, type, blob);

  it('matches bare hosts on port 22 and [host]:port elsewhere', () => {
    const text = `example.com ${ED} ${b64(keyA)}\n[example.com]:2222 ${ED} ${b64(keyB)}\n`;
    expect(verify(text, 'example.com', 22, keyA)).toEqual({ kind: 'ok' });
    expect(verify(text, 'example.com', 2222, keyB)).toEqual({ kind: 'ok' });
    expect(verify(text, 'example.com', 2222, keyA).kind).toBe('mismatch');
    expect(verify(text, 'example.com', 2200, keyA)).toEqual({ kind: 'unknown' });
    expect(verify(text, 'other.com', 22, keyA)).toEqual({ kind: 'unknown' });
  });

  it('compares host names case-insensitively', () => {
    expect(verify(`Example.COM ${ED} ${b64(keyA)}`, 'example.com', 22, keyA)).toEqual({ kind: 'ok' });
    expect(verify(`example.com ${ED} ${b64(keyA)}`, 'EXAMPLE.com', 22, keyA)).toEqual({ kind: 'ok' });
  });

  it('supports comma lists, wildcards and negation', () => {
    const text = `alpha,*.example.com,!bad.example.com,db?.lan,[10.0.0.*]:2022 ${ED} ${b64(keyA)}`;
    expect(verify(text, 'alpha', 22, keyA).kind).toBe('ok');
    expect(verify(text, 'www.example.com', 22, keyA).kind).toBe('ok');
    expect(verify(text, 'bad.example.com', 22, keyA).kind).toBe('unknown');
    expect(verify(text, 'db1.lan', 22, keyA).kind).toBe('ok');
    expect(verify(text, 'db10.lan', 22, keyA).kind).toBe('unknown');
    expect(verify(text, '10.0.0.7', 2022, keyA).kind).toBe('ok');
    expect(verify(text, '10.0.0.7', 22, keyA).kind).toBe('unknown');
    expect(matchPatternList('x', ['!y'])).toBe(false);
  });

  it('matches hashed entries for bare and bracketed names', () => {
    const text = `${hashedHost('myhost')} ${ED} ${b64(keyA)}\n${hashedHost('[myhost]:2200')} ${ED} ${b64(keyB)}`;
    expect(verify(text, 'myhost', 22, keyA).kind).toBe('ok');
    expect(verify(text, 'MyHost', 22, keyA).kind).toBe('ok');
    expect(verify(text, 'myhost', 2200, keyB).kind).toBe('ok');
    expect(verify(text, 'myhost2', 22, keyA).kind).toBe('unknown');
  });

  it.skipIf(!haveKeygen)('matches entries hashed by ssh-keygen -H', () => {
    const file = join(tmp, 'hash_me');
    writeFileSync(file, `plain.example ${ED} ${b64(keyA)}\n[127.0.0.1]:2222,10.1.1.1 ${ED} ${b64(keyB)}\n`);
    execFileSync(SSH_KEYGEN, ['-H', '-f', file], { stdio: 'ignore' });
    const entries = readKnownHostsFiles([file]);
    expect(entries).toHaveLength(3);
    expect(entries.every((e) => e.hosts.kind === 'hashed')).toBe(true);
    expect(verifyHostKey(entries, 'plain.example', 22, ED, keyA).kind).toBe('ok');
    expect(verifyHostKey(entries, '127.0.0.1', 2222, ED, keyB).kind).toBe('ok');
    expect(verifyHostKey(entries, '10.1.1.1', 22, ED, keyB).kind).toBe('ok');
    expect(verifyHostKey(entries, '127.0.0.1', 22, ED, keyB).kind).toBe('unknown');
  });

  it('reports a mismatch with the known fingerprints', () => {
    const text = `h ${ED} ${b64(keyA)}\nh ${ED} ${b64(keyA)}\n`;
    expect(verify(text, 'h', 22, keyB)).toEqual({
      kind: 'mismatch',
      knownFingerprints: [fingerprintSha256(keyA)],
      presentedFingerprint: fingerprintSha256(keyB),
    });
  });

  it('treats a host known only under another key type as a mismatch', () => {
    const text = `h ${EC} ${b64(keyEc)}`;
    expect(verify(text, 'h', 22, keyA)).toEqual({
      kind: 'mismatch',
      knownFingerprints: [fingerprintSha256(keyEc)],
      presentedFingerprint: fingerprintSha256(keyA),
    });
    expect(verify(`h ${EC} ${b64(keyEc)}\nh ${ED} ${b64(keyA)}`, 'h', 22, keyA).kind).toBe('ok');
  });

  it('lets @revoked override a matching key, but only for the revoked key', () => {
    const text = `h ${ED} ${b64(keyA)}\n@revoked * ${ED} ${b64(keyA)}\n@revoked h ${ED} ${b64(keyB)}\n`;
    expect(verify(text, 'h', 22, keyA)).toEqual({
      kind: 'revoked',
      presentedFingerprint: fingerprintSha256(keyA),
    });
    expect(verify(text, 'other', 22, keyA).kind).toBe('revoked');
    expect(verify(text, 'h', 22, keyB).kind).toBe('revoked');
    expect(verify(`@revoked h ${ED} ${b64(keyB)}\nh ${ED} ${b64(keyA)}`, 'h', 22, keyA).kind).toBe('ok');
    expect(verify(`@revoked h ${ED} ${b64(keyB)}`, 'h', 22, keyA).kind).toBe('unknown');
  });

  it('ignores @cert-authority lines', () => {
    expect(verify(`@cert-authority h ${ED} ${b64(keyA)}`, 'h', 22, keyA).kind).toBe('unknown');
    expect(verify(`@cert-authority h ${ED} ${b64(keyB)}`, 'h', 22, keyA).kind).toBe('unknown');
  });

  it('compares keys by blob, so a signature algorithm name as key type still verifies', () => {
    expect(verify(`h ${ED} ${b64(keyA)}`, 'h', 22, keyA, 'anything')).toEqual({ kind: 'ok' });
  });
});

describe('formatKnownHostsLine', () => {
  it('uses the bare host on port 22 and [host]:port elsewhere, and round-trips', () => {
    expect(formatKnownHostsLine('Example.com', 22, ED, keyA)).toBe(`example.com ${ED} ${b64(keyA)}`);
    const line = formatKnownHostsLine('127.0.0.1', 2222, ED, keyA);
    expect(line).toBe(`[127.0.0.1]:2222 ${ED} ${b64(keyA)}`);
    expect(verifyHostKey(parseKnownHosts(line), '127.0.0.1', 2222, ED, keyA).kind).toBe('ok');
  });
});

describe('known_hosts files', () => {
  it('treats missing files as empty and concatenates the rest in order', () => {
    const one = join(tmp, 'kh1');
    writeFileSync(one, `a ${ED} ${b64(keyA)}\n`);
    const entries = readKnownHostsFiles([join(tmp, 'missing'), one, join(tmp, 'nodir', 'x'), one]);
    expect(entries).toHaveLength(2);
  });

  it('creates the directory 0700 and file 0600, and fixes a missing trailing newline', () => {
    const dir = join(tmp, 'fresh', '.ssh');
    const file = join(dir, 'known_hosts');
    appendKnownHost(file, formatKnownHostsLine('a', 22, ED, keyA));
    expect(statSync(dir).mode & PERM_MASK).toBe(0o700);
    expect(statSync(file).mode & PERM_MASK).toBe(0o600);
    writeFileSync(file, `${readFileSync(file, 'utf8').trimEnd()}`);
    appendKnownHost(file, `${formatKnownHostsLine('b', 2200, ED, keyB)}\n`);
    expect(readFileSync(file, 'utf8')).toBe(`a ${ED} ${b64(keyA)}\n[b]:2200 ${ED} ${b64(keyB)}\n`);
    const entries = readKnownHostsFiles([file]);
    expect(verifyHostKey(entries, 'b', 2200, ED, keyB).kind).toBe('ok');
  });
});
