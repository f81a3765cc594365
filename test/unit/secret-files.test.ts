import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isPtyRelayError, type PtyRelayError } from '../../provider/errors.js';
import { loadConfig, validateConfig } from '../../relay/service/config.js';
import { loadOrCreateToken } from '../../relay/service/token.js';
import { runSecretCommand } from '../../relay/ssh/secret-command.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ptr-secret-files-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function refused(fn: () => unknown): PtyRelayError {
  try {
    fn();
  } catch (err) {
    if (isPtyRelayError(err)) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

function writeConfig(host: Record<string, unknown>, mode: number): string {
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ hosts: { b: { host: 'b.example', ...host } } }));
  chmodSync(file, mode);
  return file;
}

describe('a config holding secrets', () => {
  for (const field of ['password', 'passphrase']) {
    it(`with ${field}, readable by group or others, is refused with the fix`, () => {
      for (const mode of [0o644, 0o640, 0o604, 0o660]) {
        const file = writeConfig({ [field]: 'hunter2-planted' }, mode);
        const err = refused(() => loadConfig(file));
        expect(err.code).toBe('INSECURE_FILE_MODE');
        expect(err.message).toContain(`chmod 600 ${file}`);
        expect(err.message).not.toContain('hunter2-planted');
        expect(err.details).toMatchObject({ path: file, fix: `chmod 600 ${file}` });
      }
      const file = writeConfig({ [field]: 'hunter2-planted' }, 0o600);
      expect(loadConfig(file).hosts.b?.[field as 'password']).toBe('hunter2-planted');
    });
  }

  it('without secrets, any mode is fine', () => {
    expect(loadConfig(writeConfig({ user: 'ci' }, 0o644)).hosts.b?.user).toBe('ci');
  });

  it('a password command in a file others may change is refused; readable is fine', () => {
    const cmd = { passwordCommand: ['pass', 'show', 'b'] };
    const err = refused(() => loadConfig(writeConfig(cmd, 0o666)));
    expect(err.code).toBe('INSECURE_FILE_MODE');
    expect(err.message).toMatch(/chmod go-w/);
    expect(loadConfig(writeConfig(cmd, 0o644)).hosts.b?.passwordCommand).toEqual(['pass', 'show', 'b']);
  });

  it('password commands are argv arrays, not shell strings, and exclude the plain secret', () => {
    const msg = (raw: unknown) => refused(() => validateConfig(raw)).message;
    expect(msg({ hosts: { b: { host: 'x', passwordCommand: 'pass show b' } } })).toMatch(
      /array of words.*without a shell/,
    );
    expect(msg({ hosts: { b: { host: 'x', passwordCommand: [] } } })).toMatch(/array of words/);
    expect(msg({ hosts: { b: { host: 'x', passphraseCommand: ['a', ''] } } })).toMatch(/array of words/);
    expect(msg({ hosts: { b: { host: 'x', password: 'p', passwordCommand: ['a'] } } })).toMatch(
      /password or passwordCommand, not both/,
    );
  });
});

describe('runSecretCommand', () => {
  it('runs argv without a shell and returns stdout less one newline', async () => {
    const canary = join(dir, 'ran');
    const word = `$(touch ${canary}); \`touch ${canary}\``;
    const echo = 'process.stdout.write(process.argv[1] + "\\n")';
    expect(await runSecretCommand([process.execPath, '-e', echo, word])).toBe(word);
    expect(existsSync(canary)).toBe(false);
  });

  it('a failure names the program and status, never its arguments or output', async () => {
    const leak = 'process.stdout.write("s3cr3t-out"); process.stderr.write("s3cr3t-err"); process.exit(3)';
    const err = await runSecretCommand([process.execPath, '-e', leak, 's3cr3t-arg']).catch((e: Error) => e);
    expect(String(err)).toContain(`${process.execPath}: exit 3`);
    for (const s of ['s3cr3t-out', 's3cr3t-err', 's3cr3t-arg']) expect(String(err)).not.toContain(s);
    const missing = await runSecretCommand([join(dir, 'nope')]).catch((e: Error) => e);
    expect(String(missing)).toContain('ENOENT');
  });
});

describe('the token file', () => {
  it('readable by others: used, left as it is, with a warning naming the fix', () => {
    const path = join(dir, 'token');
    writeFileSync(path, `${'a'.repeat(64)}\n`);
    chmodSync(path, 0o644);
    const t = loadOrCreateToken({ env: {}, path });
    expect(t.token).toBe('a'.repeat(64));
    expect(t.warning).toContain(`chmod 600 ${path}`);
    expect(t.warning).not.toContain(t.token);
    expect(statSync(path).mode & 0o777).toBe(0o644);
    chmodSync(path, 0o600);
    expect(loadOrCreateToken({ env: {}, path }).warning).toBeUndefined();
    expect(readdirSync(dir)).toEqual(['token']);
  });
});
