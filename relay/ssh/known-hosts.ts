/**
 * OpenSSH `known_hosts` parsing and host key verification.
 *
 * Parsing and matching are pure; only {@link readKnownHostsFiles} and {@link appendKnownHost} touch the
 * filesystem. Matching follows OpenSSH `hostfile.c`/`match.c` semantics closely enough that a file
 * written by `ssh`, `ssh-keyscan` or `ssh-keygen -H` verifies the same way here.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import {
  appendFileSync,
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname } from 'node:path';

/** Outcome of checking a presented host key against known_hosts entries. */
export type HostKeyVerdict =
  | { kind: 'ok' }
  | { kind: 'unknown' }
  | { kind: 'mismatch'; knownFingerprints: string[]; presentedFingerprint: string }
  | { kind: 'revoked'; presentedFingerprint: string };

/** Marker preceding the host field (`@revoked`, `@cert-authority`), or null for a plain entry. */
export type KnownHostMarker = 'revoked' | 'cert-authority' | null;

/** How an entry names its hosts: a comma-separated pattern list, or an HMAC-SHA1 hashed host. */
export type KnownHostMatcher =
  | { kind: 'patterns'; patterns: string[] }
  | { kind: 'hashed'; salt: Buffer; hash: Buffer };

/** One parsed key line of a known_hosts file. */
export interface KnownHostEntry {
  marker: KnownHostMarker;
  hosts: KnownHostMatcher;
  keyType: string;
  keyBlob: Buffer;
  comment?: string;
  /** 1-based line number within the text it was parsed from. */
  line: number;
}

/** Port at which OpenSSH writes the bare host name instead of `[host]:port`. */
export const DEFAULT_SSH_PORT = 22;

const HASH_MAGIC = '|1|';
const HASH_SEPARATOR = '|';
const SHA1_DIGEST_BYTES = 20;
const KNOWN_HOSTS_DIR_MODE = 0o700;
const KNOWN_HOSTS_FILE_MODE = 0o600;
const UINT32_BYTES = 4;

/** `SHA256:<unpadded base64>` fingerprint of a wire-format key blob, as printed by `ssh-keygen -lf`. */
export function fingerprintSha256(keyBlob: Buffer): string {
  const digest = createHash('sha256').update(keyBlob).digest('base64');
  return `SHA256:${digest.replace(/=+$/, '')}`;
}

/**
 * Key type name embedded at the start of an SSH wire-format key blob (e.g. `ssh-ed25519`),
 * or undefined if the blob is malformed.
 */
export function keyTypeFromBlob(keyBlob: Buffer): string | undefined {
  if (keyBlob.length < UINT32_BYTES) return undefined;
  const len = keyBlob.readUInt32BE(0);
  if (len === 0 || UINT32_BYTES + len > keyBlob.length) return undefined;
  return keyBlob.subarray(UINT32_BYTES, UINT32_BYTES + len).toString('latin1');
}

/**
 * Host string OpenSSH looks up for a destination: the bare host at port 22, `[host]:port` otherwise.
 * Host names compare case-insensitively, so the result is lowercased.
 */
export function hostLookupName(host: string, port: number): string {
  const lower = host.toLowerCase();
  return port === DEFAULT_SSH_PORT ? lower : `[${lower}]:${port}`;
}

/** OpenSSH-style wildcard match: `*` matches any run of characters, `?` exactly one. */
export function matchWildcard(text: string, pattern: string): boolean {
  let t = 0;
  let p = 0;
  let starP = -1;
  let starT = 0;
  while (t < text.length) {
    if (p < pattern.length && (pattern[p] === '?' || pattern[p] === text[t])) {
      t++;
      p++;
    } else if (p < pattern.length && pattern[p] === '*') {
      starP = p++;
      starT = t;
    } else if (starP >= 0) {
      p = starP + 1;
      t = ++starT;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === '*') p++;
  return p === pattern.length;
}

/**
 * Matches `text` against a pattern list the way OpenSSH `match_pattern_list` does (case-insensitively):
 * any matching `!pattern` rejects outright, otherwise any matching positive pattern accepts.
 */
export function matchPatternList(text: string, patterns: readonly string[]): boolean {
  const subject = text.toLowerCase();
  let matched = false;
  for (const raw of patterns) {
    const negated = raw.startsWith('!');
    const pattern = (negated ? raw.slice(1) : raw).toLowerCase();
    if (!matchWildcard(subject, pattern)) continue;
    if (negated) return false;
    matched = true;
  }
  return matched;
}

/** Parses known_hosts text; malformed lines are skipped like OpenSSH does. */
export function parseKnownHosts(text: string): KnownHostEntry[] {
  const entries: KnownHostEntry[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const entry = parseLine(lines[i]!, i + 1);
    if (entry) entries.push(entry);
  }
  return entries;
}

function parseLine(rawLine: string, line: number): KnownHostEntry | undefined {
  const trimmed = rawLine.trim();
  if (trimmed === '' || trimmed.startsWith('#')) return undefined;
  const fields = trimmed.split(/\s+/);
  let marker: KnownHostMarker = null;
  if (fields[0]!.startsWith('@')) {
    const name = fields.shift()!.slice(1).toLowerCase();
    if (name !== 'revoked' && name !== 'cert-authority') return undefined;
    marker = name;
  }
  const [hostField, keyType, keyBase64, ...rest] = fields;
  if (!hostField || !keyType || !keyBase64) return undefined;
  const hosts = parseHostField(hostField);
  const keyBlob = decodeKeyBlob(keyBase64);
  if (!hosts || !keyBlob || keyTypeFromBlob(keyBlob) === undefined) return undefined;
  const comment = rest.length > 0 ? rest.join(' ') : undefined;
  return { marker, hosts, keyType, keyBlob, line, ...(comment !== undefined ? { comment } : {}) };
}

function parseHostField(field: string): KnownHostMatcher | undefined {
  if (!field.startsWith(HASH_SEPARATOR)) {
    const patterns = field.split(',').filter((p) => p !== '');
    return patterns.length > 0 ? { kind: 'patterns', patterns } : undefined;
  }
  if (!field.startsWith(HASH_MAGIC)) return undefined;
  const parts = field.slice(HASH_MAGIC.length).split(HASH_SEPARATOR);
  if (parts.length !== 2) return undefined;
  const salt = Buffer.from(parts[0]!, 'base64');
  const hash = Buffer.from(parts[1]!, 'base64');
  if (salt.length !== SHA1_DIGEST_BYTES || hash.length !== SHA1_DIGEST_BYTES) return undefined;
  return { kind: 'hashed', salt, hash };
}

function decodeKeyBlob(text: string): Buffer | undefined {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return undefined;
  const blob = Buffer.from(text, 'base64');
  return blob.length > 0 ? blob : undefined;
}

/** Whether an entry names the given lookup name (as produced by {@link hostLookupName}). */
export function entryMatchesHost(entry: KnownHostEntry, lookupName: string): boolean {
  if (entry.hosts.kind === 'patterns') return matchPatternList(lookupName, entry.hosts.patterns);
  const mac = createHmac('sha1', entry.hosts.salt).update(lookupName).digest();
  return timingSafeEqual(mac, entry.hosts.hash);
}

/**
 * Checks a presented host key against known_hosts entries.
 *
 * Keys are compared by wire blob, which embeds the key type, so `keyType` may be either the key type or a
 * signature algorithm name (`rsa-sha2-512`) without affecting the result. A matching `@revoked` entry wins
 * over everything; `@cert-authority` entries are ignored (certificates are not supported). When the host is
 * known only under other keys — including other key types — the verdict is `mismatch`.
 */
export function verifyHostKey(
  entries: readonly KnownHostEntry[],
  host: string,
  port: number,
  _keyType: string,
  keyBlob: Buffer,
): HostKeyVerdict {
  const lookupName = hostLookupName(host, port);
  const relevant = entries.filter((e) => e.marker !== 'cert-authority' && entryMatchesHost(e, lookupName));
  const presentedFingerprint = fingerprintSha256(keyBlob);
  const sameKey = (e: KnownHostEntry): boolean => e.keyBlob.equals(keyBlob);
  if (relevant.some((e) => e.marker === 'revoked' && sameKey(e))) {
    return { kind: 'revoked', presentedFingerprint };
  }
  const known = relevant.filter((e) => e.marker === null);
  if (known.some(sameKey)) return { kind: 'ok' };
  if (known.length === 0) return { kind: 'unknown' };
  const knownFingerprints = [...new Set(known.map((e) => fingerprintSha256(e.keyBlob)))];
  return { kind: 'mismatch', knownFingerprints, presentedFingerprint };
}

/** A known_hosts line for the host key, using `[host]:port` unless the port is 22. */
export function formatKnownHostsLine(host: string, port: number, keyType: string, keyBlob: Buffer): string {
  return `${hostLookupName(host, port)} ${keyType} ${keyBlob.toString('base64')}`;
}

/** Reads and parses several known_hosts files in order; files that do not exist count as empty. */
export function readKnownHostsFiles(paths: readonly string[]): KnownHostEntry[] {
  const entries: KnownHostEntry[] = [];
  for (const path of paths) {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      if (isErrnoCode(err, 'ENOENT') || isErrnoCode(err, 'ENOTDIR')) continue;
      throw err;
    }
    entries.push(...parseKnownHosts(text));
  }
  return entries;
}

/**
 * Appends one line to a known_hosts file, creating its directory (0700) and the file (0600) if needed.
 * A newline is inserted first when the existing file does not end with one.
 */
export function appendKnownHost(path: string, line: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: KNOWN_HOSTS_DIR_MODE });
  const prefix = endsWithoutNewline(path) ? '\n' : '';
  appendFileSync(path, `${prefix}${line.replace(/\n+$/, '')}\n`, { mode: KNOWN_HOSTS_FILE_MODE });
}

function endsWithoutNewline(path: string): boolean {
  let size: number;
  try {
    size = statSync(path).size;
  } catch (err) {
    if (isErrnoCode(err, 'ENOENT')) return false;
    throw err;
  }
  if (size === 0) return false;
  const fd = openSync(path, 'r');
  try {
    const last = Buffer.alloc(1);
    readSync(fd, last, 0, 1, size - 1);
    return last[0] !== '\n'.charCodeAt(0);
  } finally {
    closeSync(fd);
  }
}

function isErrnoCode(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as NodeJS.ErrnoException).code === code;
}

/**
 * Removes the plain entries (not `@revoked` / `@cert-authority`) that name `host:port` from a
 * known_hosts file, keeping every other line as it was; writes a temp file and renames it over.
 * Returns how many lines were removed (0 when the file does not exist).
 */
export function removeKnownHost(path: string, host: string, port: number): number {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if (isErrnoCode(err, 'ENOENT')) return 0;
    throw err;
  }
  const lookupName = hostLookupName(host, port);
  let removed = 0;
  const kept = text.split('\n').filter((line, i) => {
    const entry = parseLine(line, i + 1);
    const drop = entry !== undefined && entry.marker === null && entryMatchesHost(entry, lookupName);
    if (drop) removed++;
    return !drop;
  });
  if (removed === 0) return 0;
  const tmp = `${path}.ptyrelay-${process.pid}.tmp`;
  writeFileSync(tmp, kept.join('\n'), { mode: KNOWN_HOSTS_FILE_MODE });
  renameSync(tmp, path);
  return removed;
}
