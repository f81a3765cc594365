import { PtyRelayError } from '../../provider/errors.js';
import { describeGrant, LOCAL_HOST, TOKEN_SCOPES, type TokenScope } from '../core/grant.js';
import { loadConfig } from '../service/config.js';
import { grantOf, parseTtl, type TokenListing, TokenStore } from '../tokens/token-store.js';
import { type Command, type CommandArgs, output, table } from './command.js';

const USAGE =
  'token create --scope read|write|admin [--hosts A,B] [--terminal HOST/ID] [--ttl 8h] [--name N] | token ls | token revoke NAME';

function when(ms: number | undefined, never: string): string {
  return ms === undefined ? never : new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

/** Hosts a token names must be the relay's (a typo would make a token that reaches nothing). */
function checkHosts(args: CommandArgs, hosts: string[]): void {
  if (hosts.length === 0) return;
  const known = [LOCAL_HOST, ...Object.keys(loadConfig(args.values.config as string | undefined).hosts)];
  for (const h of hosts) {
    if (!known.includes(h))
      throw new PtyRelayError(
        'UNKNOWN_HOST',
        `no host named ${h} in the relay config (hosts: ${known.join(', ')})`,
        { host: h },
      );
  }
}

function create(args: CommandArgs, store: TokenStore): number {
  const scope = args.values.scope as string | undefined;
  if (!scope || !TOKEN_SCOPES.includes(scope as TokenScope))
    throw new PtyRelayError(
      'INVALID_ARGUMENT',
      `--scope read|write|admin is required\nusage: ptyrelay ${USAGE}`,
    );
  const hosts = ((args.values.hosts as string | undefined) ?? '')
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
  const terminal = args.values.terminal as string | undefined;
  checkHosts(args, [
    ...hosts,
    ...(terminal?.includes('/') ? [terminal.slice(0, terminal.lastIndexOf('/'))] : []),
  ]);
  const ttl = args.values.ttl as string | undefined;
  const { record, token } = store.create({
    scope: scope as TokenScope,
    ...(args.values.name ? { name: args.values.name as string } : {}),
    ...(hosts.length ? { hosts } : {}),
    ...(terminal ? { terminal } : {}),
    ...(ttl ? { ttlMs: parseTtl(ttl) } : {}),
  });
  const { sha256: _hash, v: _v, ...shown } = record;
  output(args, { token, record: shown }, () =>
    [
      `created ${record.name}: ${describeGrant(grantOf(record))}, expires ${when(record.expiresAt, 'never')}`,
      'this is the only time the token is shown; the relay keeps only its hash:',
      token,
    ].join('\n'),
  );
  return 0;
}

function list(args: CommandArgs, store: TokenStore): number {
  const tokens = store.list();
  const row = (t: TokenListing) => [
    t.name,
    t.scope,
    t.terminal ?? t.hosts?.join(',') ?? (t.scope === 'write' ? '* but local' : '*'),
    t.expired ? `expired ${when(t.expiresAt, '')}` : when(t.expiresAt, 'never'),
    when(t.lastUsedAt, '-'),
  ];
  output(args, { tokens }, () =>
    tokens.length === 0
      ? 'no scoped tokens (the startup token is always admin)'
      : table([['NAME', 'SCOPE', 'REACHES', 'EXPIRES', 'LAST USED'], ...tokens.map(row)]),
  );
  return 0;
}

function revoke(args: CommandArgs, store: TokenStore, name: string): number {
  const { sha256: _hash, v: _v, ...revoked } = store.revoke(name);
  output(
    args,
    { revoked },
    `revoked ${revoked.name}; a running relay closes its connections within a second`,
  );
  return 0;
}

const token: Command = {
  usage: USAGE,
  summary:
    "Scoped tokens for sharing the relay: create (shown once), list, revoke. Works on the relay's token store.",
  help: `  create          mint a token; its value is the last line of stdout (only its hash is stored)
    --scope S     read: list, watch and read terminals; write: also type, create, resize, signal,
                  close (on every host but local unless --hosts names it); admin: everything
    --hosts A,B   only these hosts (write reaches local only when it is named here)
    --terminal H/ID  only this terminal (a share link for one session)
    --ttl D       expires after D (30m, 8h, 7d; at most 366d)
    --name N      what ls, revoke and the logs call it (default token-<id>)
    --config FILE the relay config, to check host names (default as serve)
  ls              name, scope, reach, expiry, last use (never the token)
  revoke NAME     delete it; a running relay closes connections that use it within a second
The store is $PTYRELAY_TOKEN_DIR, else $PTYRELAY_STATE_DIR/tokens, else ~/.local/state/ptyrelay/tokens;
one file per token.`,
  positionals: [1, 2],
  options: {
    scope: { type: 'string' },
    hosts: { type: 'string' },
    terminal: { type: 'string' },
    ttl: { type: 'string' },
    name: { type: 'string' },
    config: { type: 'string' },
  },
  async run(args) {
    const [sub, name] = args.positionals;
    const store = new TokenStore();
    if (sub === 'create' && name === undefined) return create(args, store);
    if (sub === 'ls' && name === undefined) return list(args, store);
    if (sub === 'revoke' && name !== undefined) return revoke(args, store, name);
    throw new PtyRelayError('INVALID_ARGUMENT', `usage: ptyrelay ${USAGE}`);
  },
};

/** `token`: scoped tokens (docs/security.md). */
export const tokenCommands: Record<string, Command> = { token };
