/**
 * The token files a fleet of relays shares (docs/deploy.md): the startup token file named by
 * PTYRELAY_TOKEN_FILE, made once when several relays start at the same moment, and the scoped-token
 * store named by PTYRELAY_TOKEN_DIR, where one relay's revoke is seen by the other.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultTokenPath, loadOrCreateToken } from '../../relay/service/token.js';
import { TokenAuthority } from '../../relay/tokens/token-authority.js';
import { defaultTokenStoreDir, TokenStore } from '../../relay/tokens/token-store.js';

const DIST_TOKEN = join(import.meta.dirname, '..', '..', 'dist', 'relay', 'service', 'token.js');
const RELAYS = 6;

/** A separate process that loads (or creates) the token at `path` and prints it. */
function tokenFromProcess(path: string): Promise<string> {
  const script = `const { loadOrCreateToken } = await import(${JSON.stringify(pathToFileURL(DIST_TOKEN).href)});
process.stdout.write(loadOrCreateToken({ env: {}, path: ${JSON.stringify(path)} }).token);`;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', script], (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}: ${stderr}`)) : resolve(stdout),
    );
  });
}

describe('token files shared by relays', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('PTYRELAY_TOKEN_FILE and PTYRELAY_TOKEN_DIR name the files; the defaults stay', () => {
    expect(defaultTokenPath({ HOME: '/h', PTYRELAY_TOKEN_FILE: '/data/token' })).toBe('/data/token');
    expect(defaultTokenPath({ HOME: '/h' })).toBe('/h/.config/ptyrelay/token');
    expect(defaultTokenStoreDir({ HOME: '/h', PTYRELAY_TOKEN_DIR: '/data/tokens' })).toBe('/data/tokens');
    expect(defaultTokenStoreDir({ HOME: '/h', PTYRELAY_STATE_DIR: '/s' })).toBe('/s/tokens');
  });

  it('relays starting at once on one token file all use one token and leave no temp file', async () => {
    dir = mkdtempSync(join(tmpdir(), 'ptr-shared-token-'));
    const path = join(dir, 'token');
    const tokens = await Promise.all(Array.from({ length: RELAYS }, () => tokenFromProcess(path)));
    expect(new Set(tokens).size).toBe(1);
    expect(tokens[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(readFileSync(path, 'utf8').trim()).toBe(tokens[0]);
    expect(readdirSync(dir)).toEqual(['token']);
    expect(loadOrCreateToken({ env: {}, path }).source).toBe('file');
  });

  it("a token revoked through one relay's store ends at the other relay's authority", () => {
    dir = mkdtempSync(join(tmpdir(), 'ptr-shared-store-'));
    const storeA = new TokenStore(join(dir, 'tokens'));
    const storeB = new TokenStore(join(dir, 'tokens'));
    const relayB = new TokenAuthority({ startupToken: 'x'.repeat(32), store: storeB });
    try {
      const { token } = storeA.create({ scope: 'read', name: 'viewer' });
      expect(relayB.authenticate(token)?.name).toBe('viewer');
      const ended: string[][] = [];
      relayB.onEnded((ids) => ended.push([...ids]));
      storeA.revoke('viewer');
      expect(relayB.authenticate(token)).toBeUndefined();
      expect(ended).toHaveLength(1);
      expect(readdirSync(join(dir, 'tokens')).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    } finally {
      relayB.dispose();
    }
  });
});
