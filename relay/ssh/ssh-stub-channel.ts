import type { Duplex } from 'node:stream';
import type { Client } from 'ssh2';
import * as z from 'zod/mini';
import { type ErrorCode, ErrorCodes, PtyRelayError } from '../../provider/errors.js';
import type { Logger } from '../core/log.js';
import { newMarker, parseMarkedLines } from '../deploy/remote-scripts.js';
import { execScript, openMarkedChannel, runSh } from '../deploy/sh-exec.js';
import { shellQuote } from '../deploy/shell-quote.js';

/** Starting a daemon on the host (and its first model worker) takes well under this. */
const ENSURE_TIMEOUT_MS = 20_000;
/** `stub.cjs connect` reaches a running daemon in a node start plus a socket connect. */
const BRIDGE_START_TIMEOUT_MS = 20_000;

const EnsureReportSchema = z.union([
  z.object({
    socketPath: z.string(),
    legacy: z._default(z.array(z.object({ buildId: z.string(), socketPath: z.string() })), []),
  }),
  z.object({
    error: z.string(),
    code: z.optional(z.string()),
    details: z.optional(z.record(z.string(), z.unknown())),
  }),
]);

function parseJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return undefined; // the schema check reports it
  }
}

export interface StubChannel {
  stream: Duplex;
  /** How the link reaches the daemon socket. */
  via: 'streamlocal' | 'exec';
  socketPath: string;
  /** Daemons of older builds still running on the host (they keep their sessions). */
  legacy: { buildId: string; socketPath: string }[];
}

function forwardStreamLocal(client: Client, socketPath: string): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    client.openssh_forwardOutStreamLocal(socketPath, (err, stream) => (err ? reject(err) : resolve(stream)));
  });
}

/**
 * `stub.cjs connect` over an exec channel, started by `/bin/sh` and read from its start marker on:
 * what a login shell's rc files print before it is dropped, never fed to the frame decoder.
 */
async function execBridge(client: Client, argv: string[]): Promise<Duplex> {
  const marker = newMarker();
  const ch = await openMarkedChannel(client, execScript([...argv, '--start-marker', marker]), marker, {
    timeoutMs: BRIDGE_START_TIMEOUT_MS,
    what: 'stub connect',
    // The daemon was ensured just before: a bridge that ends early is a link problem, not a deploy one.
    failCode: 'LINK_CLOSED',
  });
  ch.stream.stderr.on('data', () => {});
  return ch.stream;
}

/**
 * Makes sure the host's daemon runs, then opens a byte stream to its socket: a
 * `direct-streamlocal@openssh.com` channel where the server allows it, else an exec of
 * `stub.cjs connect` that bridges stdio to the socket (dropbear, AllowStreamLocalForwarding no).
 */
export async function openStubChannel(
  client: Client,
  nodePath: string,
  stubPath: string,
  opts: { log?: Logger; daemonArgs?: string[]; preferExec?: boolean } = {},
): Promise<StubChannel> {
  const extra = opts.daemonArgs ?? [];
  const marker = newMarker();
  const ensure = await runSh(
    client,
    `printf '%s' ${shellQuote(`${marker}report=`)}\n${execScript([nodePath, stubPath, 'ensure', ...extra])}`,
    { timeoutMs: ENSURE_TIMEOUT_MS },
  );
  if (ensure.code === null && ensure.signal === null) {
    // No exit status: the channel was torn down (a dropped connection), not a failed start.
    throw new PtyRelayError('LINK_CLOSED', 'the connection closed while the stub daemon was being ensured');
  }
  const line = parseMarkedLines(ensure.stdout, marker).get('report')?.at(-1) ?? '';
  const report = EnsureReportSchema.safeParse(parseJson(line));
  if (!report.success) {
    throw new PtyRelayError(
      'DEPLOY_FAILED',
      `stub daemon did not start: ${ensure.stderr.slice(-2048) || line}`,
    );
  }
  if ('error' in report.data) throw ensureError(report.data);
  const { socketPath, legacy } = report.data;
  const ch = await openSocketChannel(client, [nodePath, stubPath, 'connect', ...extra], socketPath, opts);
  return { ...ch, socketPath, legacy };
}

/** The typed error `ensure` reported (a stub dir problem), else DEPLOY_FAILED with its message. */
export function ensureError(r: {
  error: string;
  code?: string;
  details?: Record<string, unknown>;
}): PtyRelayError {
  const code = r.code && r.code in ErrorCodes ? (r.code as ErrorCode) : undefined;
  if (code) return new PtyRelayError(code, String(r.details?.message ?? r.error), r.details);
  return new PtyRelayError('DEPLOY_FAILED', `stub daemon did not start: ${r.error.slice(-2048)}`);
}

/**
 * A stream to one daemon socket on the host: streamlocal forwarding, else an exec bridge
 * (`execArgv`, e.g. `node stub.cjs connect --socket PATH`).
 */
export async function openSocketChannel(
  client: Client,
  execArgv: string[],
  socketPath: string,
  opts: { log?: Logger; preferExec?: boolean; streamlocalOnly?: boolean } = {},
): Promise<{ stream: Duplex; via: 'streamlocal' | 'exec' }> {
  if (!opts.preferExec) {
    try {
      return { stream: await forwardStreamLocal(client, socketPath), via: 'streamlocal' };
    } catch (err) {
      if (opts.streamlocalOnly) throw err;
      opts.log?.info(
        { err: (err as Error).message },
        'streamlocal forwarding refused; using the exec bridge',
      );
    }
  }
  return { stream: await execBridge(client, execArgv), via: 'exec' };
}
