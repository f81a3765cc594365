import type { Duplex } from 'node:stream';
import type { Client } from 'ssh2';
import { PtyRelayError } from '../../provider/errors.js';
import { remoteExec } from '../deploy/remote-exec.js';
import { shellQuote } from '../deploy/shell-quote.js';
import type { Logger } from '../log.js';

/** Starting a daemon on the host (and its first model worker) takes well under this. */
const ENSURE_TIMEOUT_MS = 20_000;

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

function execBridge(client: Client, command: string): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    client.exec(command, (err, stream) => {
      if (err) reject(err);
      else {
        stream.stderr.on('data', () => {});
        resolve(stream);
      }
    });
  });
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
  const base = [nodePath, stubPath].map(shellQuote).join(' ');
  const extra = (opts.daemonArgs ?? []).map(shellQuote).join(' ');
  const ensure = await remoteExec(client, `${base} ensure ${extra}`, { timeoutMs: ENSURE_TIMEOUT_MS });
  const line = ensure.stdout.trim().split('\n').pop() ?? '';
  let socketPath: string;
  let legacy: StubChannel['legacy'] = [];
  try {
    const info = JSON.parse(line);
    socketPath = info.socketPath;
    legacy = Array.isArray(info.legacy) ? info.legacy : [];
  } catch {
    throw new PtyRelayError(
      'DEPLOY_FAILED',
      `stub daemon did not start: ${ensure.stderr.slice(-2048) || line}`,
    );
  }
  const ch = await openSocketChannel(client, `${base} connect ${extra}`, socketPath, opts);
  return { ...ch, socketPath, legacy };
}

/**
 * A stream to one daemon socket on the host: streamlocal forwarding, else an exec bridge
 * (`execCommand`, e.g. `node stub.cjs connect --socket PATH`).
 */
export async function openSocketChannel(
  client: Client,
  execCommand: string,
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
  return { stream: await execBridge(client, execCommand), via: 'exec' };
}
