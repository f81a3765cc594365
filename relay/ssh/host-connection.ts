import type { LookupFunction } from 'node:net';
import { connect as tcpConnect } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Client, ConnectConfig } from 'ssh2';
import { PtyRelayError } from '../../provider/errors.js';
import type { Logger } from '../core/log.js';
import { socketError, timeoutError } from './connect-cause.js';
import { parseJumpChain, parseJumpSpec, type ResolvedHost, resolveHost } from './host-config.js';
import {
  appendKnownHost,
  fingerprintSha256,
  formatKnownHostsLine,
  keyTypeFromBlob,
  readKnownHostsFiles,
  verifyHostKey,
} from './known-hosts.js';
import { withSecretCommands } from './secret-command.js';
import { authFailed, planAuth, type TriedCredential } from './ssh-auth.js';
import { ssh2Parts } from './ssh2-modules.js';

export interface ConnectOptions {
  log?: Logger;
  /** Resolves a ProxyJump host name to settings (defaults to ~/.ssh/config + OpenSSH defaults). */
  resolveJump?: (spec: string) => ResolvedHost | undefined;
  /** Abandons the connect: its sockets and ssh2 clients are closed, the promise rejects with the reason. */
  signal?: AbortSignal;
  /** Called for every chunk the host sends until the handshake is done (a sign the network carries it). */
  onReceive?: () => void;
  /** Name resolver for the TCP connect (tests inject one so that no DNS query leaves the machine). */
  lookup?: LookupFunction;
  /**
   * Only look at the target's host key: it is handed here and the handshake stops there (no
   * authentication). Jump hosts are verified as usual.
   */
  inspectHostKey?: (key: Buffer) => void;
}

/** ProxyJump hops followed at most (a loop in ~/.ssh/config must not recurse forever). */
const MAX_JUMP_DEPTH = 8;

/** Runs `fn` once if `signal` aborts; returns the unsubscribe. */
function onAbort(signal: AbortSignal | undefined, fn: () => void): () => void {
  signal?.addEventListener('abort', fn, { once: true });
  return () => signal?.removeEventListener('abort', fn);
}

/** Checks the presented host key; records why it refused so the caller gets a typed error. */
function hostVerifier(h: ResolvedHost, refuse: (e: PtyRelayError) => void, log?: Logger) {
  return (key: Buffer): boolean => {
    const type = keyTypeFromBlob(key) ?? 'unknown';
    const verdict = verifyHostKey(readKnownHostsFiles(h.knownHostsFiles), h.hostName, h.port, type, key);
    const presented = fingerprintSha256(key);
    switch (verdict.kind) {
      case 'ok':
        return true;
      case 'revoked':
        refuse(new PtyRelayError('HOSTKEY_REVOKED', `host key ${presented} of ${h.hostName} is revoked`));
        return false;
      case 'mismatch':
        if (h.hostKeyPolicy === 'no') {
          log?.warn(
            { address: h.hostName, port: h.port, presented, known: verdict.knownFingerprints },
            'HOST KEY CHANGED and StrictHostKeyChecking is no: connecting anyway',
          );
          return true;
        }
        refuse(
          new PtyRelayError(
            'HOSTKEY_MISMATCH',
            `host key of ${h.hostName}:${h.port} changed: presented ${presented}, known ${verdict.knownFingerprints.join(', ')}`,
            { presented, known: verdict.knownFingerprints },
          ),
        );
        return false;
      case 'unknown':
        if (h.hostKeyPolicy === 'accept-new' || h.hostKeyPolicy === 'no') {
          appendKnownHost(h.appendKnownHostsTo, formatKnownHostsLine(h.hostName, h.port, type, key));
          log?.info({ address: h.hostName, port: h.port, fingerprint: presented }, 'accepted new host key');
          if (h.hostKeyPolicy === 'no') log?.warn({ address: h.hostName }, 'StrictHostKeyChecking is no');
          return true;
        }
        refuse(
          new PtyRelayError(
            'HOSTKEY_UNKNOWN',
            `host key ${presented} (${type}) of ${h.hostName}:${h.port} is not in known_hosts`,
            { presented, keyType: type, policy: h.hostKeyPolicy },
          ),
        );
        return false;
    }
  };
}

function mapError(
  err: Error & { level?: string; code?: string },
  h: ResolvedHost,
  tried: readonly TriedCredential[],
  refused?: PtyRelayError,
): PtyRelayError {
  if (refused) return refused;
  if (err instanceof PtyRelayError) return err;
  const where = `${h.user}@${h.hostName}:${h.port}`;
  if (err.level === 'client-authentication') return authFailed(where, tried);
  if (err.level === 'client-timeout' || /Timed out/i.test(err.message)) {
    return timeoutError('SSH handshake', where, h.connectTimeoutMs);
  }
  if (err.code) return socketError(err, where);
  return new PtyRelayError('CONNECT_FAILED', `cannot connect to ${where}: ${err.message}`, {
    cause: 'closed',
  });
}

function openSocket(h: ResolvedHost, signal?: AbortSignal, lookup?: LookupFunction): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const where = `${h.hostName}:${h.port}`;
    const s = tcpConnect({ host: h.hostName, port: h.port, ...(lookup ? { lookup } : {}) });
    const fail = (e: unknown) => {
      clearTimeout(timer);
      off();
      s.destroy();
      reject(e);
    };
    const timer = setTimeout(
      () => fail(timeoutError('TCP connect', where, h.connectTimeoutMs)),
      h.connectTimeoutMs,
    );
    const off = onAbort(signal, () => fail(signal?.reason));
    s.once('connect', () => {
      clearTimeout(timer);
      off();
      // Keystrokes are tiny packets: Nagle would hold them for an ACK (Orca #1660).
      s.setNoDelay(true);
      resolve(s);
    });
    s.once('error', (e: NodeJS.ErrnoException) => fail(socketError(e, where)));
  });
}

/** A connected, authenticated ssh2 client plus what it hops through (closed together). */
export interface SshConnection {
  client: Client;
  host: ResolvedHost;
  jump?: SshConnection;
  close(): void;
}

/**
 * Connects and authenticates to one host (through a ProxyJump hop when configured), with host
 * key checking, keepalive and TCP_NODELAY.
 */
export async function connectSsh(
  configured: ResolvedHost,
  opts: ConnectOptions = {},
  depth = 0,
): Promise<SshConnection> {
  opts.signal?.throwIfAborted();
  const h = await withSecretCommands(configured);
  let jump: SshConnection | undefined;
  let sock: Duplex;
  const hops = h.proxyJump && h.proxyJump !== 'none' ? parseJumpChain(h.proxyJump) : [];
  if (hops.length > 0) {
    if (depth >= MAX_JUMP_DEPTH)
      throw new PtyRelayError(
        'CONFIG_INVALID',
        `ProxyJump of ${h.alias} goes deeper than ${MAX_JUMP_DEPTH} hops (a loop?)`,
      );
    ({ jump, sock } = await throughJump(h, hops, opts, depth));
  } else {
    sock = await openSocket(h, opts.signal, opts.lookup);
  }
  const client = await handshake(h, sock, opts).catch((err: unknown) => {
    jump?.close();
    throw err;
  });
  return {
    client,
    host: h,
    jump,
    close() {
      client.end();
      sock.destroy();
      jump?.close();
    },
  };
}

/**
 * Connects to the last of `hops` (itself through the ones before it) and opens a channel from
 * there to `h`: `a,b` reaches b through a and the target through b (as `ssh -J a,b` does).
 */
async function throughJump(
  h: ResolvedHost,
  hops: string[],
  opts: ConnectOptions,
  depth: number,
): Promise<{ jump: SshConnection; sock: Duplex }> {
  const last = hops[hops.length - 1]!;
  const spec = parseJumpSpec(last);
  const jh = opts.resolveJump?.(last) ?? resolveHost({ host: spec.host, user: spec.user, port: spec.port });
  const before = hops.slice(0, -1);
  const jump = await connectSsh(
    { ...jh, proxyJump: before.length > 0 ? before.join(',') : jh.proxyJump },
    { ...opts, inspectHostKey: undefined },
    depth + 1,
  ).catch((err: unknown) => {
    if (err instanceof PtyRelayError && err.details?.hop === undefined)
      throw new PtyRelayError(err.code, `jump host ${last}: ${err.message}`, { ...err.details, hop: last });
    throw err;
  });
  let off = () => {};
  const sock = await new Promise<Duplex>((resolve, reject) => {
    off = onAbort(opts.signal, () => reject(opts.signal?.reason));
    jump.client.forwardOut('127.0.0.1', 0, h.hostName, h.port, (err, stream) => {
      if (err)
        reject(
          new PtyRelayError(
            'CONNECT_FAILED',
            `jump host ${last} cannot reach ${h.hostName}:${h.port}: ${err.message}`,
            { cause: /refused/i.test(err.message) ? 'refused' : 'unreachable', hop: last },
          ),
        );
      else resolve(stream);
    });
  })
    .catch((e) => {
      jump.close();
      throw e;
    })
    .finally(off);
  return { jump, sock };
}

/**
 * The SSH handshake and authentication over `sock`; on failure the client and the socket are
 * closed (the caller closes what it hops through).
 */
async function handshake(h: ResolvedHost, sock: Duplex, opts: ConnectOptions): Promise<Client> {
  const client = new (ssh2Parts().Client)();
  let refused: PtyRelayError | undefined;
  const auth = planAuth(h, opts.log);
  const config: ConnectConfig = {
    sock: sock as ConnectConfig['sock'],
    username: h.user,
    readyTimeout: h.connectTimeoutMs,
    keepaliveInterval: h.keepaliveIntervalMs,
    keepaliveCountMax: 3,
    authHandler: auth.methods,
    hostVerifier: opts.inspectHostKey
      ? (key: Buffer) => {
          opts.inspectHostKey?.(key);
          refused = new PtyRelayError('ABORTED', 'host key inspected; not connecting');
          return false;
        }
      : hostVerifier(
          h,
          (e) => {
            refused = e;
          },
          opts.log,
        ),
  };
  // ssh2 may emit more than one error (e.g. handshake loss after a timeout); none may go unhandled.
  let settled = false;
  client.on('error', (e) => {
    if (settled) opts.log?.warn({ alias: h.alias, err: e.message }, 'ssh connection error');
  });
  const heard = () => opts.onReceive?.();
  let off = () => {};
  try {
    await new Promise<void>((resolve, reject) => {
      off = onAbort(opts.signal, () => reject(opts.signal?.reason));
      opts.signal?.throwIfAborted();
      client.once('ready', () => resolve());
      client.once('error', (e) => reject(mapError(e, h, auth.tried, refused)));
      client.once('close', () =>
        reject(mapError(new Error('connection closed during handshake'), h, auth.tried, refused)),
      );
      client.connect(config);
      // After connect(): ssh2 has paused the socket, so this listener does not start the flow early.
      sock.on('data', heard);
    });
    settled = true;
  } catch (err) {
    settled = true;
    client.end();
    sock.destroy();
    throw err;
  } finally {
    off();
    sock.off('data', heard);
  }
  return client;
}
