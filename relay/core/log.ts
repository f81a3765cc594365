import pino, { type Logger } from 'pino';

/** Fields never written to logs. */
const REDACT = [
  'password',
  'passphrase',
  'token',
  'privateKey',
  '*.password',
  '*.passphrase',
  '*.token',
  '*.privateKey',
  'hosts.*.password',
  'hosts.*.passphrase',
];

export type { Logger };

/**
 * The relay's structured logger (pino). Level from PTYRELAY_LOG_LEVEL, default `info` (`silent` in
 * tests). Lines go to stdout, to `fd` (`fd: 2` keeps stdout free for a protocol: ptyrelay mcp
 * speaks MCP on stdout), or to `destination`. Pino does not merge keys: a child's bindings and a
 * line's own fields must not share a name (e.g. `host`), or it is written twice.
 */
export function createLogger(
  opts: { level?: string; name?: string; fd?: number; destination?: pino.DestinationStream } = {},
): Logger {
  const level = opts.level ?? process.env.PTYRELAY_LOG_LEVEL ?? (process.env.VITEST ? 'silent' : 'info');
  const options = { name: opts.name ?? 'ptyrelay', level, redact: { paths: REDACT, censor: '[redacted]' } };
  if (opts.destination) return pino(options, opts.destination);
  return opts.fd === undefined ? pino(options) : pino(options, pino.destination(opts.fd));
}
