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

/** The relay's structured logger (pino). Level from PTYRELAY_LOG_LEVEL, default `info` (`silent` in tests). */
export function createLogger(opts: { level?: string; name?: string; fd?: number } = {}): Logger {
  const level = opts.level ?? process.env.PTYRELAY_LOG_LEVEL ?? (process.env.VITEST ? 'silent' : 'info');
  const options = { name: opts.name ?? 'ptyrelay', level, redact: { paths: REDACT, censor: '[redacted]' } };
  // `fd: 2` keeps stdout free for a protocol (ptyrelay mcp speaks MCP on stdout).
  return opts.fd === undefined ? pino(options) : pino(options, pino.destination(opts.fd));
}
