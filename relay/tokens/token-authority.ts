import type { Unsubscribe } from '../../provider/contract.js';
import { Emitter } from '../../provider/emitter.js';
import { tokenMatches } from '../core/auth.js';
import { type Grant, STARTUP_GRANT } from '../core/grant.js';
import type { Logger } from '../core/log.js';
import { InputAudit } from './input-audit.js';
import { scopedTokenId, tokenHashMatches } from './token-format.js';
import { grantOf, type TokenRecord, type TokenStore } from './token-store.js';

/** The store is checked this often for revoked tokens: a revoke closes connections within a second. */
export const REVOKE_POLL_MS = 250;
/** Last use is written to the store at most this often per token. */
const LAST_USED_FLUSH_MS = 30_000;

export interface TokenAuthorityOptions {
  /** The relay's own token: admin, never expires, not in the store. */
  startupToken: string;
  /** Scoped tokens (`ptyrelay token create`); none without it. */
  store?: TokenStore;
  log?: Logger;
  pollMs?: number;
}

/**
 * Turns a presented bearer token into a {@link Grant}, and notices tokens that stop being valid
 * (revoked: their record left the store; expired) so the service can close what they opened.
 */
export class TokenAuthority {
  readonly audit: InputAudit;
  /** Records of the tokens seen so far: watched by the poll so a revoke ends their connections. */
  private readonly cache = new Map<string, TokenRecord>();
  private readonly ended = new Emitter<Set<string>>();
  private readonly used = new Map<string, number>();
  private readonly poll: NodeJS.Timeout | undefined;
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: TokenAuthorityOptions) {
    this.audit = new InputAudit(opts.log?.child({ audit: 'input' }));
    if (opts.store) {
      this.poll = setInterval(() => this.refresh(), opts.pollMs ?? REVOKE_POLL_MS);
      this.poll.unref();
    }
  }

  /** The scoped tokens' store (undefined: only the startup token exists). */
  get store(): TokenStore | undefined {
    return this.opts.store;
  }

  /** The grant of `presented`, or undefined (unknown, revoked, expired, malformed). */
  authenticate(presented: string | undefined, now = Date.now()): Grant | undefined {
    if (presented === undefined) return undefined;
    if (tokenMatches(presented, this.opts.startupToken)) return STARTUP_GRANT;
    const id = scopedTokenId(presented);
    const store = this.opts.store;
    if (!id || !store) return undefined;
    // Read from the store on every authentication (one small file per connection or MCP request),
    // not from the cache: a token revoked a moment ago is refused at once, not after the next poll.
    let record: TokenRecord | undefined;
    try {
      record = store.read(id);
    } catch (err) {
      this.opts.log?.warn({ tokenId: id, err: (err as Error).message }, 'token record unreadable; refused');
      return undefined;
    }
    if (!record) {
      // Revoked since the last poll: end what it opened now too.
      if (this.cache.has(id)) this.refresh(now);
      return undefined;
    }
    this.cache.set(id, record);
    if (!tokenHashMatches(presented, record.sha256)) return undefined;
    if (record.expiresAt !== undefined && record.expiresAt <= now) return undefined;
    this.noteUsed(id, now);
    return grantOf(record);
  }

  /** Called with the ids of tokens that were revoked or expired since the last check. */
  onEnded(listener: (tokenIds: Set<string>) => void): Unsubscribe {
    return this.ended.on(listener);
  }

  /** Checks the store now (a revoke through the relay's own API calls this at once). */
  refresh(now = Date.now()): void {
    const store = this.opts.store;
    if (!store || this.cache.size === 0) return;
    let present: Set<string>;
    try {
      present = new Set(store.ids());
    } catch (err) {
      this.opts.log?.warn({ err: (err as Error).message }, 'token store unreadable');
      return;
    }
    const gone = new Set<string>();
    for (const [id, r] of this.cache) {
      const expired = r.expiresAt !== undefined && r.expiresAt <= now;
      if (!present.has(id) || expired) {
        gone.add(id);
        this.cache.delete(id);
        this.used.delete(id);
        this.opts.log?.info(
          { tokenName: r.name, tokenId: id, why: expired ? 'expired' : 'revoked' },
          'token ended',
        );
      }
    }
    if (gone.size > 0) this.ended.emit(gone);
  }

  private noteUsed(id: string, now: number): void {
    this.used.set(id, now);
    if (this.flushTimer) return;
    this.flushTimer = setTimeout(() => this.flushUsed(), LAST_USED_FLUSH_MS);
    this.flushTimer.unref();
  }

  private flushUsed(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    for (const [id, at] of this.used) {
      try {
        this.opts.store?.noteUsed(id, at);
      } catch (err) {
        this.opts.log?.warn(
          { tokenId: id, err: (err as Error).message },
          'cannot record when a token was used',
        );
      }
    }
    this.used.clear();
  }

  dispose(): void {
    clearInterval(this.poll);
    this.flushUsed();
    this.audit.dispose();
    this.ended.clear();
  }
}
