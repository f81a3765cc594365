/**
 * A subset of OpenSSH client configuration (`~/.ssh/config`) resolution.
 *
 * Follows `readconf.c`: case-insensitive keywords, `Key value` / `Key=value`, quoting, `Host` pattern
 * lists with negation, first obtained value wins (IdentityFile accumulates), and `Include` evaluated in
 * place, and `Match` blocks with the `all`, `host`, `originalhost`, `user` and `localuser` criteria
 * (ssh-config-match.ts). Limitations: other `Match` criteria (`exec`, `canonical`, `final`, …) never
 * match, keywords outside the {@link SshConfigHost} subset are ignored, and `~user` paths and unknown
 * `%` tokens are left as written. Errors name the file and line.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { matchPatternList, matchWildcard } from './known-hosts.js';
import { matchCriteria, SshConfigError, validateMatch } from './ssh-config-match.js';

/** Effective settings for one destination alias; fields the config does not set stay undefined. */
export interface SshConfigHost {
  hostName?: string;
  user?: string;
  port?: number;
  identityFiles: string[];
  proxyJump?: string;
  connectTimeoutSec?: number;
  serverAliveIntervalSec?: number;
  identitiesOnly?: boolean;
  userKnownHostsFiles?: string[];
  strictHostKeyChecking?: string;
}

/** One `keyword args...` line. `keyword` is lowercased; args are unquoted. */
export interface SshConfigDirective {
  keyword: string;
  args: string[];
  line: number;
  /** The file it came from (errors say `file:line`); absent for text parsed without a name. */
  file?: string;
}

/**
 * Directives up to the next `Host`/`Match` line. The first block of a file is `global` (possibly empty)
 * and holds what precedes any `Host`/`Match`.
 */
export interface SshConfigBlock {
  kind: 'global' | 'host' | 'match';
  /** `Host` patterns, or the raw `Match` criteria words; empty for the global block. */
  patterns: string[];
  directives: SshConfigDirective[];
  line: number;
  file?: string;
}

/** Context needed to expand `~`, tokens and Include paths. */
export interface SshConfigContext {
  homeDir: string;
  localUser: string;
}

/** Raised for configuration text OpenSSH would also refuse (bad quoting, invalid numbers, include loops). */
export { SshConfigError };

/** OpenSSH's READCONF_MAX_DEPTH: deeper Include nesting is an error. */
const MAX_INCLUDE_DEPTH = 16;
const DEFAULT_PORT = 22;
const MAX_PORT = 65535;
const NONE = 'none';
const USER_CONFIG_DIR = '.ssh';
const USER_CONFIG_FILE = 'config';

/** `file:line` (or `line N` for unnamed text), the prefix of every config error. */
export function configWhere(file: string | undefined, line: number): string {
  return file ? `${file}:${line}` : `line ${line}`;
}

/** Parses config text into blocks without evaluating anything (Include is kept as a directive). */
export function parseSshConfig(text: string, file?: string): SshConfigBlock[] {
  const blocks: SshConfigBlock[] = [{ kind: 'global', patterns: [], directives: [], line: 0, file }];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    const parsed = splitDirective(lines[i]!, configWhere(file, lineNo));
    if (!parsed) continue;
    const { keyword, args } = parsed;
    if (keyword === 'host' || keyword === 'match') {
      if (keyword === 'match') validateMatch(args, configWhere(file, lineNo));
      if (keyword === 'host' && args.length === 0)
        throw new SshConfigError(`${configWhere(file, lineNo)}: Host needs at least one pattern`);
      blocks.push({ kind: keyword, patterns: args, directives: [], line: lineNo, file });
    } else {
      blocks[blocks.length - 1]!.directives.push({ keyword, args, line: lineNo, file });
    }
  }
  return blocks;
}

function splitDirective(rawLine: string, where: string): { keyword: string; args: string[] } | undefined {
  const text = rawLine.trim();
  if (text === '' || text.startsWith('#')) return undefined;
  const m = /^([^\s=]+)\s*(?:=\s*)?(.*)$/.exec(text);
  if (!m) return undefined;
  return { keyword: m[1]!.toLowerCase(), args: splitArgs(m[2]!, where) };
}

/** Word splitting like OpenSSH `argv_split` with comment termination. */
function splitArgs(text: string, where: string): string[] {
  const args: string[] = [];
  let i = 0;
  while (i < text.length) {
    while (text[i] === ' ' || text[i] === '\t') i++;
    if (i >= text.length || text[i] === '#') break;
    let arg = '';
    let quote = '';
    for (; i < text.length; i++) {
      const c = text[i]!;
      const next = text[i + 1];
      if (c === '\\' && (next === "'" || next === '"' || next === '\\' || (quote === '' && next === ' '))) {
        arg += next;
        i++;
      } else if (quote === '' && (c === ' ' || c === '\t')) {
        break;
      } else if (quote === '' && (c === '"' || c === "'")) {
        quote = c;
      } else if (quote !== '' && c === quote) {
        quote = '';
      } else {
        arg += c;
      }
    }
    if (quote !== '') throw new SshConfigError(`${where}: unterminated quote`);
    args.push(arg);
  }
  return args;
}

interface Accumulated {
  hostName?: string;
  user?: string;
  port?: number;
  identityFiles: string[];
  proxyJump?: string;
  connectTimeoutSec?: number;
  serverAliveIntervalSec?: number;
  identitiesOnly?: boolean;
  userKnownHostsFiles?: string[];
  strictHostKeyChecking?: string;
}

/**
 * Effective settings for `alias`. Include paths are relative to `~/.ssh` and may use `*`/`?` in their
 * last segment; missing include files are ignored, as in OpenSSH.
 */
export function resolveSshConfig(
  blocks: readonly SshConfigBlock[],
  alias: string,
  ctx: SshConfigContext,
): SshConfigHost {
  const acc: Accumulated = { identityFiles: [] };
  evaluate(blocks, alias, ctx, acc, true, 0);
  return finish(acc, alias, ctx);
}

function evaluate(
  blocks: readonly SshConfigBlock[],
  alias: string,
  ctx: SshConfigContext,
  acc: Accumulated,
  startActive: boolean,
  depth: number,
): void {
  for (const block of blocks) {
    let active: boolean;
    if (block.kind === 'global') active = startActive;
    // An Include reached while inactive must not let its own Host lines activate anything.
    else if (block.kind === 'host') active = startActive && matchPatternList(alias, block.patterns);
    else active = startActive && matchCriteria(block.patterns, matchSubject(acc, alias, ctx));
    for (const d of block.directives) {
      if (d.keyword === 'include') {
        if (depth + 1 > MAX_INCLUDE_DEPTH)
          throw new SshConfigError(`${configWhere(d.file, d.line)}: Include nested too deep`);
        for (const file of expandIncludes(d.args, ctx)) {
          evaluate(parseSshConfig(readFileSync(file, 'utf8'), file), alias, ctx, acc, active, depth + 1);
        }
      } else if (active) {
        apply(acc, d);
      }
    }
  }
}

/**
 * What `Match` compares, as OpenSSH's `match_cfg_line` sees it at that point of the file: the
 * HostName obtained so far (its `%h` expanded) or the alias, and the remote user obtained so far.
 */
function matchSubject(acc: Accumulated, alias: string, ctx: SshConfigContext) {
  return {
    host: acc.hostName !== undefined ? expandTokens(acc.hostName, { h: alias }) : alias,
    originalHost: alias,
    user: acc.user ?? ctx.localUser,
    localUser: ctx.localUser,
  };
}

/** StrictHostKeyChecking values OpenSSH accepts, by what they mean. */
const STRICT_HOST_KEY_VALUES: Record<string, string> = {
  yes: 'yes',
  true: 'yes',
  no: 'no',
  false: 'no',
  off: 'no',
  ask: 'ask',
  'accept-new': 'accept-new',
};

function apply(acc: Accumulated, d: SshConfigDirective): void {
  const value = d.args[0];
  if (value === undefined) return;
  switch (d.keyword) {
    case 'hostname':
      acc.hostName ??= value;
      break;
    case 'user':
      acc.user ??= value;
      break;
    case 'port':
      acc.port ??= parseInteger(value, d, 1, MAX_PORT);
      break;
    case 'identityfile':
      acc.identityFiles.push(value);
      break;
    case 'proxyjump':
      acc.proxyJump ??= value;
      break;
    case 'connecttimeout':
      if (acc.connectTimeoutSec === undefined && value.toLowerCase() !== NONE) {
        acc.connectTimeoutSec = parseInteger(value, d, 0, Number.MAX_SAFE_INTEGER);
      }
      break;
    case 'serveraliveinterval':
      acc.serverAliveIntervalSec ??= parseInteger(value, d, 0, Number.MAX_SAFE_INTEGER);
      break;
    case 'identitiesonly':
      acc.identitiesOnly ??= parseYesNo(value, d);
      break;
    case 'userknownhostsfile':
      acc.userKnownHostsFiles ??= d.args;
      break;
    case 'stricthostkeychecking': {
      const v = STRICT_HOST_KEY_VALUES[value.toLowerCase()];
      if (v === undefined)
        throw new SshConfigError(
          `${configWhere(d.file, d.line)}: bad StrictHostKeyChecking value '${value}' (yes, no, ask or accept-new)`,
        );
      acc.strictHostKeyChecking ??= v;
      break;
    }
  }
}

function parseInteger(value: string, d: SshConfigDirective, min: number, max: number): number {
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new SshConfigError(`${configWhere(d.file, d.line)}: bad ${d.keyword} value '${value}'`);
  }
  return n;
}

function parseYesNo(value: string, d: SshConfigDirective): boolean {
  const v = value.toLowerCase();
  if (v === 'yes' || v === 'true') return true;
  if (v === 'no' || v === 'false') return false;
  throw new SshConfigError(`${configWhere(d.file, d.line)}: bad ${d.keyword} value '${value}'`);
}

function finish(acc: Accumulated, alias: string, ctx: SshConfigContext): SshConfigHost {
  const hostName =
    acc.hostName !== undefined ? expandTokens(acc.hostName, { h: alias, n: alias }) : undefined;
  const tokens: Record<string, string> = {
    h: hostName ?? alias,
    n: alias,
    u: ctx.localUser,
    r: acc.user ?? ctx.localUser,
    p: String(acc.port ?? DEFAULT_PORT),
    d: ctx.homeDir,
  };
  const expandPath = (p: string): string => expandTokens(expandTilde(p, ctx.homeDir), tokens);
  const out: SshConfigHost = {
    identityFiles: acc.identityFiles.filter((f) => f.toLowerCase() !== NONE).map(expandPath),
  };
  if (hostName !== undefined) out.hostName = hostName;
  if (acc.user !== undefined) out.user = acc.user;
  if (acc.port !== undefined) out.port = acc.port;
  if (acc.proxyJump !== undefined && acc.proxyJump.toLowerCase() !== NONE) out.proxyJump = acc.proxyJump;
  if (acc.connectTimeoutSec !== undefined) out.connectTimeoutSec = acc.connectTimeoutSec;
  if (acc.serverAliveIntervalSec !== undefined) out.serverAliveIntervalSec = acc.serverAliveIntervalSec;
  if (acc.identitiesOnly !== undefined) out.identitiesOnly = acc.identitiesOnly;
  if (acc.userKnownHostsFiles !== undefined) {
    const files = acc.userKnownHostsFiles;
    out.userKnownHostsFiles =
      files.length === 1 && files[0]!.toLowerCase() === NONE ? [] : files.map(expandPath);
  }
  if (acc.strictHostKeyChecking !== undefined) out.strictHostKeyChecking = acc.strictHostKeyChecking;
  return out;
}

/** Expands `%x` tokens from the table and `%%`; unknown tokens are kept verbatim. */
export function expandTokens(text: string, tokens: Record<string, string>): string {
  return text.replace(/%(.)/g, (whole, key: string) => (key === '%' ? '%' : (tokens[key] ?? whole)));
}

export function expandTilde(path: string, homeDir: string): string {
  if (path === '~') return homeDir;
  if (path.startsWith('~/')) return join(homeDir, path.slice(2));
  return path;
}

function expandIncludes(args: readonly string[], ctx: SshConfigContext): string[] {
  const files: string[] = [];
  for (const arg of args) {
    const expanded = expandTilde(arg, ctx.homeDir);
    const path = isAbsolute(expanded) ? expanded : join(ctx.homeDir, USER_CONFIG_DIR, expanded);
    files.push(...globLastSegment(path));
  }
  return files;
}

/** Existing files matching `path`, where only the last segment may contain `*` or `?`; sorted like glob(3). */
function globLastSegment(path: string): string[] {
  const slash = path.lastIndexOf('/');
  const dir = path.slice(0, slash) || '/';
  const pattern = path.slice(slash + 1);
  let names: string[];
  try {
    names = readdirSync(dir, { withFileTypes: true })
      .filter((e) => !e.isDirectory())
      .map((e) => e.name);
  } catch {
    return [];
  }
  const hasWildcard = /[*?]/.test(pattern);
  return names
    .filter((name) =>
      hasWildcard
        ? (!name.startsWith('.') || pattern.startsWith('.')) && matchWildcard(name, pattern)
        : name === pattern,
    )
    .sort()
    .map((name) => join(dir, name));
}

/**
 * Reads `<homeDir>/.ssh/config` (if present) and resolves it for `alias`.
 * OpenSSH's default identity files are not added; callers choose their own fallbacks.
 */
export function loadUserSshConfig(homeDir: string, alias: string, localUser: string): SshConfigHost {
  const file = join(homeDir, USER_CONFIG_DIR, USER_CONFIG_FILE);
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  return resolveSshConfig(parseSshConfig(text, file), alias, { homeDir, localUser });
}
