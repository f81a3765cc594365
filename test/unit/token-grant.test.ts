import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isPtyRelayError } from '../../provider/errors.js';
import {
  canCreate,
  canRead,
  canSeeHost,
  canWrite,
  type Grant,
  needWrite,
  STARTUP_GRANT,
} from '../../relay/core/grant.js';
import { TokenAuthority } from '../../relay/tokens/token-authority.js';
import { hashToken, scopedTokenId } from '../../relay/tokens/token-format.js';
import { parseTtl, TokenStore } from '../../relay/tokens/token-store.js';

const g = (o: Partial<Grant> & Pick<Grant, 'scope'>): Grant => ({ tokenId: 'x', name: 'n', ...o });

describe('grants', () => {
  const L = 'local/pty-1';
  const B = 'b/pty-2';
  const B3 = 'b/pty-3';
  /** [grant, seeHost(local), seeHost(b), read L, read B, read B3, write L, write B, write B3, create local, create b] */
  const table: Array<[string, Grant, boolean[]]> = [
    ['startup', STARTUP_GRANT, [true, true, true, true, true, true, true, true, true, true]],
    ['read', g({ scope: 'read' }), [true, true, true, true, true, false, false, false, false, false]],
    [
      'read b',
      g({ scope: 'read', hosts: ['b'] }),
      [false, true, false, true, true, false, false, false, false, false],
    ],
    ['write', g({ scope: 'write' }), [true, true, true, true, true, false, true, true, false, true]],
    [
      'write local',
      g({ scope: 'write', hosts: ['local'] }),
      [true, false, true, false, false, true, false, false, true, false],
    ],
    [
      'write b',
      g({ scope: 'write', hosts: ['b'] }),
      [false, true, false, true, true, false, true, true, false, true],
    ],
    [
      'read b/pty-2',
      g({ scope: 'read', terminal: B }),
      [false, true, false, true, false, false, false, false, false, false],
    ],
    [
      'write b/pty-2',
      g({ scope: 'write', terminal: B }),
      [false, true, false, true, false, false, true, false, false, false],
    ],
    [
      'write local/pty-1',
      g({ scope: 'write', terminal: L }),
      [true, false, true, false, false, true, false, false, false, false],
    ],
  ];
  for (const [label, grant, want] of table) {
    it(`${label}: hosts, reads, writes and creates as the scope says`, () => {
      expect([
        canSeeHost(grant, 'local'),
        canSeeHost(grant, 'b'),
        canRead(grant, L),
        canRead(grant, B),
        canRead(grant, B3),
        canWrite(grant, L),
        canWrite(grant, B),
        canWrite(grant, B3),
        canCreate(grant, 'local'),
        canCreate(grant, 'b'),
      ]).toEqual(want);
    });
  }

  it('a bare id is a local terminal; refusals are NOT_PERMITTED naming token, scope and terminal', () => {
    expect(canWrite(g({ scope: 'write', hosts: ['local'] }), 'pty-1')).toBe(true);
    try {
      needWrite(g({ scope: 'read', name: 'viewer' }), 'pty-1', 'type into');
      throw new Error('allowed');
    } catch (err) {
      expect(isPtyRelayError(err, 'NOT_PERMITTED')).toBe(true);
      expect((err as Error).message).toBe('the token "viewer" (scope read) may not type into local/pty-1');
      expect((err as { details?: unknown }).details).toEqual({
        scope: 'read',
        tokenName: 'viewer',
        id: 'local/pty-1',
      });
    }
  });
});

describe('the token store', () => {
  let dir: string;
  let store: TokenStore;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ptr-tokens-'));
    store = new TokenStore(join(dir, 'tokens'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('stores only a SHA-256 of a 256-bit token, in a 0600 file in a 0700 dir', () => {
    const { record, token } = store.create({ scope: 'read', name: 'viewer' }, 1000);
    expect(token).toMatch(/^ptr_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    expect(scopedTokenId(token)).toBe(record.id);
    const file = join(dir, 'tokens', `${record.id}.json`);
    const text = readFileSync(file, 'utf8');
    // The secret is everything after `ptr_<id>_` (base64url: it may itself contain `_`).
    const secret = token.slice(`ptr_${record.id}_`.length);
    expect(secret).toHaveLength(43);
    expect(text).not.toContain(secret);
    expect(JSON.parse(text).sha256).toBe(hashToken(token));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'tokens')).mode & 0o777).toBe(0o700);
  });

  it('lists, refuses duplicate names and bad options, revokes by name', () => {
    store.create({ scope: 'write', name: 'ci', hosts: ['b', 'b'], ttlMs: 60_000 }, 1000);
    store.create({ scope: 'read', terminal: 'pty-4' }, 2000);
    const ls = store.list(61_001);
    expect(ls.map((t) => [t.scope, t.hosts, t.terminal, t.expired])).toEqual([
      ['write', ['b'], undefined, true],
      ['read', undefined, 'local/pty-4', false],
    ]);
    expect(JSON.stringify(ls)).not.toContain('sha256');
    const bad = (o: Parameters<TokenStore['create']>[0]) => () => store.create(o);
    expect(bad({ scope: 'read', name: 'ci' })).toThrow(/a token named ci exists/);
    expect(bad({ scope: 'admin', hosts: ['b'] })).toThrow(/admin token reaches everything/);
    expect(bad({ scope: 'write', hosts: ['a'], terminal: 'b/pty-1' })).toThrow(/not on the --hosts/);
    expect(bad({ scope: 'write', name: 'x y' })).toThrow(/--name/);
    expect(bad({ scope: 'write', terminal: 'a/b/c' })).toThrow(/HOST\/ID/);
    expect(store.revoke('ci').name).toBe('ci');
    expect(() => store.revoke('ci')).toThrow(/no token named ci/);
    expect(store.list().map((t) => t.name)).toHaveLength(1);
  });

  it('parses --ttl', () => {
    expect(parseTtl('90s')).toBe(90_000);
    expect(parseTtl('8h')).toBe(8 * 3_600_000);
    expect(parseTtl('2w')).toBe(14 * 86_400_000);
    for (const s of ['8', 'h', '0h', '-1h', '400d', '1.5h']) expect(() => parseTtl(s)).toThrow(/--ttl/);
  });

  it('a store dir others can write is refused: they could mint tokens', () => {
    store.create({ scope: 'read' });
    chmodSync(join(dir, 'tokens'), 0o733);
    expect(() => store.create({ scope: 'read' })).toThrow(
      expect.objectContaining({ code: 'INSECURE_FILE_MODE' }),
    );
  });

  it('the authority: startup is admin; scoped tokens by hash; expiry and revocation end them', () => {
    const auth = new TokenAuthority({ startupToken: 'startup-token-0123456789', store, pollMs: 60_000 });
    let left = '';
    try {
      const ended: string[] = [];
      auth.onEnded((ids) => ended.push(...ids));
      expect(auth.authenticate('startup-token-0123456789')).toBe(STARTUP_GRANT);
      const now = Date.now();
      const a = store.create({ scope: 'write', name: 'a', hosts: ['b'] }, now);
      const b = store.create({ scope: 'read', name: 'b', ttlMs: 1000 }, now);
      expect(auth.authenticate(a.token, now)).toMatchObject({
        tokenId: a.record.id,
        name: 'a',
        scope: 'write',
        hosts: ['b'],
      });
      expect(auth.authenticate(b.token, now + 999)?.name).toBe('b');
      expect(auth.authenticate(b.token, now + 1000)).toBeUndefined();
      // Same id, other secret: refused.
      expect(auth.authenticate(`${a.token.slice(0, 17)}${'A'.repeat(43)}`, now)).toBeUndefined();
      expect(auth.authenticate(undefined)).toBeUndefined();
      expect(auth.authenticate('ptr_000000000000_' + 'A'.repeat(43))).toBeUndefined();
      store.revoke('a');
      // Refused at once, before any poll: a new connection is checked against the store as it is.
      expect(auth.authenticate(a.token, now + 1)).toBeUndefined();
      expect(ended).toEqual([a.record.id]);
      auth.refresh(now + 1);
      expect(ended).toEqual([a.record.id]);
      auth.refresh(now + 1000);
      expect(ended).toEqual([a.record.id, b.record.id]);
      expect(auth.authenticate(a.token, now)).toBeUndefined();
      left = b.record.id;
    } finally {
      auth.dispose();
    }
    // The revoked token left nothing; the expired one only its record (until revoked).
    expect(readdirSync(join(dir, 'tokens'))).toEqual([`${left}.json`]);
  });
});
