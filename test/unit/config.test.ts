import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PtyRelayError } from '../../provider/errors.js';
import {
  DEFAULT_FLOW_CONTROL,
  DEFAULT_LIMITS,
  loadConfig,
  validateConfig,
} from '../../relay/service/config.js';
import { createHostRouter } from '../../relay/service/host-router.js';
import { loadOrCreateToken } from '../../relay/service/token.js';

function invalid(raw: unknown): string {
  try {
    validateConfig(raw);
  } catch (err) {
    expect(err).toBeInstanceOf(PtyRelayError);
    expect((err as PtyRelayError).code).toBe('CONFIG_INVALID');
    return (err as Error).message;
  }
  throw new Error('expected CONFIG_INVALID');
}

describe('validateConfig', () => {
  it('fills in defaults', () => {
    const c = validateConfig({});
    expect(c.listen).toEqual({ host: '127.0.0.1', port: 7681 });
    expect(c.hosts).toEqual({});
    expect(c.limits).toEqual(DEFAULT_LIMITS);
    expect(c.flowControl).toEqual(DEFAULT_FLOW_CONTROL);
    expect(c.allowedOrigins).toEqual([]);
  });

  it('accepts a full host entry', () => {
    const c = validateConfig({
      listen: { host: '0.0.0.0', port: 0 },
      hosts: {
        build1: {
          host: 'build1.example.com',
          port: 2222,
          user: 'ci',
          identityFile: '~/.ssh/id_ed25519',
          hostKeyPolicy: 'accept-new',
          proxyJump: 'bastion',
          useAgent: false,
        },
      },
      allowedOrigins: ['https://ide.example.com'],
    });
    expect(c.hosts.build1).toMatchObject({
      host: 'build1.example.com',
      port: 2222,
      hostKeyPolicy: 'accept-new',
    });
  });

  it('names the field in each message', () => {
    expect(invalid({ hosts: { build1: { host: 'b', port: 70000 } } })).toBe(
      'hosts.build1.port must be an integer 1-65535, got 70000',
    );
    expect(invalid({ hosts: { build1: { host: 'b', port: '22' } } })).toMatch(
      /^hosts\.build1\.port must be an integer/,
    );
    expect(invalid({ hosts: { build1: { port: 22 } } })).toMatch(/^hosts\.build1\.host is required/);
    expect(invalid({ hosts: { build1: { host: 'b', hostKeyPolicy: 'yolo' } } })).toMatch(
      /^hosts\.build1\.hostKeyPolicy must be one of strict, ask, accept-new, no/,
    );
    expect(invalid({ hosts: { build1: { host: 'b', useAgent: 'yes' } } })).toMatch(
      /^hosts\.build1\.useAgent must be true or false/,
    );
    expect(invalid({ hosts: { build1: { host: 'b', identityfile: 'x' } } })).toMatch(
      /^hosts\.build1\.identityfile is not a known setting/,
    );
    expect(invalid({ hosts: { local: { host: 'x' } } })).toMatch(/^hosts\.local is reserved/);
    expect(invalid({ hosts: { 'a/b': { host: 'x' } } })).toMatch(/^hosts\.a\/b: host names may only use/);
    expect(invalid({ listen: { port: -1 } })).toMatch(/^listen\.port must be an integer 0-65535/);
    expect(invalid({ listen: 'localhost' })).toMatch(/^listen must be an object/);
    expect(invalid({ limits: { ringBytes: 10 } })).toMatch(/^limits\.ringBytes must be an integer/);
    expect(invalid({ limits: { maxTerminals: 0 } })).toMatch(/^limits\.maxTerminals must be an integer 1-/);
    expect(invalid({ allowedOrigins: ['https://x.com/path'] })).toMatch(
      /^allowedOrigins\[0\] must be an origin/,
    );
    expect(invalid({ allowedOrigins: 'https://x.com' })).toMatch(/^allowedOrigins must be an array/);
    expect(invalid({ listne: {} })).toMatch(/^config\.listne is not a known setting/);
  });

  it('checks relations between flow-control settings', () => {
    expect(invalid({ flowControl: { lowWatermark: 2 << 20, highWatermark: 1 << 20 } })).toMatch(
      /^flowControl\.lowWatermark \(\d+\) must be below flowControl\.highWatermark/,
    );
    expect(invalid({ flowControl: { ackBytes: 512 * 1024 } })).toMatch(
      /^flowControl\.ackBytes \(524288\) must not exceed flowControl\.lowWatermark/,
    );
    expect(invalid({ flowControl: { ackBytes: 64 * 1024, creditWindow: 100 * 1024 } })).toMatch(
      /^flowControl\.ackBytes \(65536\) must be at most half of flowControl\.creditWindow/,
    );
    expect(
      invalid({ limits: { ringBytes: 256 * 1024 }, flowControl: { keepTailBytes: 512 * 1024 } }),
    ).toMatch(/^flowControl\.keepTailBytes \(524288\) must not exceed limits\.ringBytes/);
    expect(invalid({ limits: { ringBytes: 1 << 20, backgroundRingBytes: 2 << 20 } })).toMatch(
      /^limits\.backgroundRingBytes \(2097152\) must not exceed limits\.ringBytes/,
    );
    expect(invalid({ flowControl: { creditWindow: 1 << 20, creditWindowMax: 512 * 1024 } })).toMatch(
      /^flowControl\.creditWindowMax \(524288\) must be at least flowControl\.creditWindow/,
    );
    expect(invalid({ flowControl: { stubPendingCap: 1 << 20, creditWindowMax: 2 << 20 } })).toMatch(
      /^flowControl\.creditWindowMax \(2097152\) must not exceed flowControl\.stubPendingCap/,
    );
    // Unset, the maximum follows a small stub pending cap instead of refusing it.
    expect(validateConfig({ flowControl: { stubPendingCap: 1 << 20 } }).flowControl.creditWindowMax).toBe(
      1 << 20,
    );
    expect(invalid({ limits: { ringBytes: 128 * 1024 } })).toMatch(
      /^flowControl\.creditWindow \(262144\) must not exceed limits\.ringBytes/,
    );
    expect(
      invalid({ flowControl: { relayPendingCap: 1 << 20, highWatermark: 2 << 20, lowWatermark: 1 << 20 } }),
    ).toMatch(/^flowControl\.relayPendingCap/);
  });
});

describe('loadConfig and loadOrCreateToken', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('reads a file and prefixes errors with its path', () => {
    const d = mkdtempSync(join(tmpdir(), 'ptr-cfg-'));
    dir = d;
    const file = join(d, 'config.json');
    writeFileSync(file, JSON.stringify({ listen: { port: 9000 } }));
    expect(loadConfig(file).listen.port).toBe(9000);
    writeFileSync(file, '{ nope');
    expect(() => loadConfig(file)).toThrow(/is not valid JSON/);
    writeFileSync(file, JSON.stringify({ hosts: { b: { host: 'x', port: 0 } } }));
    expect(() => loadConfig(file)).toThrow(`${file}: hosts.b.port must be an integer 1-65535, got 0`);
    expect(() => loadConfig(join(d, 'missing.json'))).toThrow(/does not exist/);
  });

  it('creates a 0600 token in a 0700 directory once, then reads it; the env wins', () => {
    dir = mkdtempSync(join(tmpdir(), 'ptr-tok-'));
    const path = join(dir, 'ptyrelay', 'token');
    const a = loadOrCreateToken({ env: {}, path });
    expect(a.source).toBe('created');
    expect(a.token).toMatch(/^[0-9a-f]{64}$/);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'ptyrelay')).mode & 0o777).toBe(0o700);
    expect(readFileSync(path, 'utf8').trim()).toBe(a.token);
    const b = loadOrCreateToken({ env: {}, path });
    expect(b).toEqual({ token: a.token, path, source: 'file' });
    const c = loadOrCreateToken({ env: { PTYRELAY_TOKEN: 'x'.repeat(32) }, path });
    expect(c).toEqual({ token: 'x'.repeat(32), source: 'env' });
    expect(() => loadOrCreateToken({ env: { PTYRELAY_TOKEN: 'short' } })).toThrow(/at least 16/);
  });

  it('routes hosts: local always, configured SSH hosts, UNKNOWN_HOST otherwise', async () => {
    const router = await createHostRouter(validateConfig({ hosts: { build1: { host: 'b.example' } } }));
    expect(router.hosts()).toEqual(['local', 'build1']);
    expect(router.providers()).toHaveLength(2);
    expect(router.providerFor('build1')).toBe(router.providers()[1]);
    expect(() => router.providerFor('nope')).toThrow(expect.objectContaining({ code: 'UNKNOWN_HOST' }));
    await router.dispose();
  });
});
