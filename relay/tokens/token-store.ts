import { randomBytes } from 'node:crypto';
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod/mini';
import { privateDirProblem } from '../../provider/daemon-runtime/private-dir.js';
import { defaultStateDir } from '../../provider/daemon-runtime/stub-paths.js';
import { PtyRelayError } from '../../provider/errors.js';
import { insecureFileError } from '../core/file-modes.js';
import {
  type Grant,
  globalTerminalId,
  hostOfTerminal,
  TOKEN_SCOPES,
  type TokenScope,
} from '../core/grant.js';
import { mintToken } from './token-format.js';

/**
 * The relay's scoped tokens, one file per token in a private dir: `<id>.json` (the record, written
 * once: create and revoke never rewrite a shared file, so the CLI and a running relay can both
 * change the store without a lock) and `<id>.used` (when the relay last saw it).
 */

const FILE_MODE = 0o600;
const DIR_MODE = 0o700;
const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const HOST_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const TERMINAL_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/;
const RECORD_FILE = /^([0-9a-f]{12})\.json$/;
/** Longest `--ttl`: a year (a token meant to live longer is the startup token's job). */
export const MAX_TTL_MS = 366 * 24 * 3600 * 1000;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

const recordSchema = z.lazy(() =>
  z.object({
    v: z.literal(1),
    id: z.string().check(z.regex(/^[0-9a-f]{12}$/)),
    name: z.string().check(z.regex(NAME_RE)),
    scope: z.enum(TOKEN_SCOPES),
    hosts: z.optional(z.array(z.string().check(z.regex(HOST_RE)))),
    terminal: z.optional(z.string().check(z.regex(TERMINAL_RE))),
    sha256: z.string().check(z.regex(/^[0-9a-f]{64}$/)),
    createdAt: z.int(),
    expiresAt: z.optional(z.int()),
  }),
);
export type TokenRecord = z.infer<typeof recordSchema>;

/** A record as `token ls` shows it. */
export interface TokenListing extends Omit<TokenRecord, 'sha256' | 'v'> {
  lastUsedAt?: number;
  expired: boolean;
}

export interface CreateTokenOptions {
  scope: TokenScope;
  name?: string;
  hosts?: string[];
  /** `HOST/ID` (a bare id means `local`). */
  terminal?: string;
  ttlMs?: number;
}

/**
 * `$PTYRELAY_TOKEN_DIR` (relays of a fleet share one), else `$PTYRELAY_STATE_DIR/tokens`, else
 * `$XDG_STATE_HOME/ptyrelay/tokens`, else `~/.local/state/ptyrelay/tokens`.
 */
export function defaultTokenStoreDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.PTYRELAY_TOKEN_DIR || join(defaultStateDir(env), 'tokens');
}

/** A temp name beside `path` that no other process writes, whichever machine or container it runs on. */
function tempBeside(path: string): string {
  return `${path}.${randomBytes(6).toString('hex')}.tmp`;
}

/** `90s`, `30m`, `8h`, `7d`, `2w` → milliseconds. */
export function parseTtl(s: string): number {
  const m = /^(\d+)([smhdw])$/.exec(s.trim());
  const ms = m ? Number(m[1]) * UNIT_MS[m[2]!]! : Number.NaN;
  if (!(ms > 0 && ms <= MAX_TTL_MS)) {
    throw new PtyRelayError(
      'INVALID_ARGUMENT',
      `--ttl wants a duration like 30m, 8h or 7d (at most 366d), got ${s}`,
    );
  }
  return ms;
}

function invalid(message: string): PtyRelayError {
  return new PtyRelayError('INVALID_ARGUMENT', message);
}

/** The grant a record confers. */
export function grantOf(r: TokenRecord): Grant {
  return {
    tokenId: r.id,
    name: r.name,
    scope: r.scope,
    ...(r.hosts ? { hosts: r.hosts } : {}),
    ...(r.terminal ? { terminal: r.terminal } : {}),
    ...(r.expiresAt !== undefined ? { expiresAt: r.expiresAt } : {}),
  };
}

export class TokenStore {
  constructor(readonly dir: string = defaultTokenStoreDir()) {}

  /** Creates the dir (0700) and refuses one that is not private: whoever can write it mints tokens. */
  private ensureDir(): void {
    mkdirSync(this.dir, { recursive: true, mode: DIR_MODE });
    const p = privateDirProblem(this.dir);
    if (p)
      throw insecureFileError(
        p.path,
        statSync(p.path).mode,
        `the token store ${this.dir} must be yours alone (${p.reason})`,
        p.fix,
      );
  }

  private file(id: string, ext: 'json' | 'used'): string {
    return join(this.dir, `${id}.${ext}`);
  }

  /** Ids of every stored token (the names in the dir; nothing is read). */
  ids(): string[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    return names.flatMap((n) => RECORD_FILE.exec(n)?.[1] ?? []);
  }

  /** The record of `id`, or undefined when there is none (revoked, never made). */
  read(id: string): TokenRecord | undefined {
    let text: string;
    try {
      text = readFileSync(this.file(id, 'json'), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    const r = recordSchema.safeParse(JSON.parse(text));
    if (!r.success || r.data.id !== id) {
      throw new PtyRelayError(
        'CONFIG_INVALID',
        `token record ${this.file(id, 'json')} is damaged: ${r.error?.issues[0]?.message ?? 'id mismatch'}`,
      );
    }
    return r.data;
  }

  private lastUsed(id: string): number | undefined {
    try {
      const n = Number(readFileSync(this.file(id, 'used'), 'utf8'));
      return Number.isSafeInteger(n) ? n : undefined;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  list(now = Date.now()): TokenListing[] {
    return this.ids()
      .flatMap((id) => this.read(id) ?? [])
      .sort((a, b) => a.createdAt - b.createdAt)
      .map(({ sha256: _hash, v: _v, ...r }) => {
        const used = this.lastUsed(r.id);
        return {
          ...r,
          ...(used !== undefined ? { lastUsedAt: used } : {}),
          expired: r.expiresAt !== undefined && r.expiresAt <= now,
        };
      });
  }

  private find(nameOrId: string): TokenRecord | undefined {
    const records = this.ids().flatMap((id) => this.read(id) ?? []);
    return records.find((r) => r.name === nameOrId) ?? records.find((r) => r.id === nameOrId);
  }

  /** Mints a token and stores its hash; the token itself is returned once and kept nowhere. */
  create(o: CreateTokenOptions, now = Date.now()): { record: TokenRecord; token: string } {
    if (!TOKEN_SCOPES.includes(o.scope)) throw invalid(`--scope wants read, write or admin, got ${o.scope}`);
    const terminal = o.terminal !== undefined ? globalTerminalId(o.terminal) : undefined;
    if (terminal !== undefined && !TERMINAL_RE.test(terminal))
      throw invalid(`--terminal wants HOST/ID (e.g. build1/pty-3), got ${o.terminal}`);
    const hosts = o.hosts?.length ? [...new Set(o.hosts)] : undefined;
    for (const h of hosts ?? [])
      if (!HOST_RE.test(h)) throw invalid(`--hosts: ${JSON.stringify(h)} is not a host name`);
    if (o.scope === 'admin' && (hosts || terminal)) {
      throw invalid(
        'an admin token reaches everything (it can mint any token); --hosts and --terminal are for read and write tokens',
      );
    }
    if (terminal && hosts && !hosts.includes(hostOfTerminal(terminal))) {
      throw invalid(`--terminal ${terminal} is not on the --hosts given (${hosts.join(',')})`);
    }
    if (o.ttlMs !== undefined && !(o.ttlMs > 0 && o.ttlMs <= MAX_TTL_MS))
      throw invalid('--ttl must be positive and at most 366d');
    this.ensureDir();
    const minted = mintToken();
    const name = o.name ?? `token-${minted.id.slice(0, 6)}`;
    if (!NAME_RE.test(name))
      throw invalid(
        `--name may use letters, digits, '.', '_' and '-' (at most 64), got ${JSON.stringify(name)}`,
      );
    if (this.find(name))
      throw invalid(`a token named ${name} exists; revoke it first or pick another --name`);
    const record: TokenRecord = {
      v: 1,
      id: minted.id,
      name,
      scope: o.scope,
      ...(hosts ? { hosts } : {}),
      ...(terminal ? { terminal } : {}),
      sha256: minted.sha256,
      createdAt: now,
      ...(o.ttlMs !== undefined ? { expiresAt: now + o.ttlMs } : {}),
    };
    // Written aside and renamed: a relay reading the dir never sees half a record.
    const tmp = tempBeside(this.file(minted.id, 'json'));
    writeFileSync(tmp, `${JSON.stringify(record)}\n`, { mode: FILE_MODE, flag: 'wx' });
    renameSync(tmp, this.file(minted.id, 'json'));
    return { record, token: minted.token };
  }

  /** Removes a token by name (or id); a relay closes the connections that used it within a second. */
  revoke(nameOrId: string): TokenRecord {
    const r = this.find(nameOrId);
    if (!r) throw new PtyRelayError('NOT_FOUND', `no token named ${nameOrId}`, { name: nameOrId });
    unlinkSync(this.file(r.id, 'json'));
    rmSync(this.file(r.id, 'used'), { force: true });
    return r;
  }

  /** Records when a token was last used (the relay calls this at most every few seconds per token). */
  noteUsed(id: string, at: number): void {
    if (this.read(id) === undefined) return; // revoked meanwhile: leave no orphan behind
    const path = this.file(id, 'used');
    const tmp = tempBeside(path);
    writeFileSync(tmp, String(at), { mode: FILE_MODE });
    renameSync(tmp, path);
  }
}
