import { readFileSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import type { Duplex } from 'node:stream';
import ssh2, { type AnyAuthMethod, type ConnectConfig } from 'ssh2';

// ssh2 is CommonJS: Node's ESM loader only offers its default export.
const { Client, utils: sshUtils } = ssh2;
type Client = InstanceType<typeof Client>;

import { PtyRelayError } from '../../provider/errors.js';
import type { Logger } from '../log.js';
import { parseJumpSpec, type ResolvedHost, resolveHost } from './host-config.js';
import {
  appendKnownHost,
  fingerprintSha256,
  formatKnownHostsLine,
  keyTypeFromBlob,
  readKnownHostsFiles,
  verifyHostKey,
} from './known-hosts.js';

export interface ConnectOptions {
  log?: Logger;
  /** Resolves a ProxyJump host name to settings (defaults to ~/.ssh/config + OpenSSH defaults). */
  resolveJump?: (spec: string) => ResolvedHost | undefined;
  /** Abandons the connect: its sockets and ssh2 clients are closed, the promise rejects with the reason. */
  signal?: AbortSignal;
  /** Called for every chunk the host sends until the handshake is done (a sign the network carries it). */
  onReceive?: () => void;
}

/** Runs `fn` once if `signal` aborts; returns the unsubscribe. */
function onAbort(signal: AbortSignal | undefined, fn: () => void): () => void {
  signal?.addEventListener('abort', fn, { once: true });
  return () => signal?.removeEventListener('abort', fn);
}

/** Loads the identity files that parse (with the passphrase when encrypted). */
function loadKeys(h: ResolvedHost, log?: Logger): { path: string; key: Buffer }[] {
  const keys: { path: string; key: Buffer }[] = [];
  for (const path of h.identityFiles) {
    let data: Buffer;
    try {
      data = readFileSync(path);
    } catch {
      continue;
    }
    const parsed = sshUtils.parseKey(data, h.passphrase);
    if (parsed instanceof Error) {
      log?.warn({ path, err: parsed.message }, 'identity file not usable');
      continue;
    }
    keys.push({ path, key: data });
  }
  return keys;
}

function authMethods(h: ResolvedHost, log?: Logger): AnyAuthMethod[] {
  const methods: AnyAuthMethod[] = [];
  const username = h.user;
  if (h.useAgent && process.env.SSH_AUTH_SOCK)
    methods.push({ type: 'agent', username, agent: process.env.SSH_AUTH_SOCK });
  for (const k of loadKeys(h, log)) {
    methods.push({
      type: 'publickey',
      username,
      key: k.key,
      ...(h.passphrase ? { passphrase: h.passphrase } : {}),
    });
  }
  if (h.password !== undefined) methods.push({ type: 'password', username, password: h.password });
  return methods;
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
        refuse(
          new PtyRelayError(
            'HOSTKEY_MISMATCH',
            `host key of ${h.hostName}:${h.port} changed: presented ${presented}, known ${verdict.knownFingerprints.join(', ')}`,
            { presented, known: verdict.knownFingerprints },
          ),
        );
        return false;
      case 'unknown':
        if (h.hostKeyPolicy === 'accept-new') {
          appendKnownHost(h.appendKnownHostsTo, formatKnownHostsLine(h.hostName, h.port, type, key));
          log?.info({ host: h.hostName, port: h.port, fingerprint: presented }, 'accepted new host key');
          return true;
        }
        refuse(
          new PtyRelayError(
            'HOSTKEY_UNKNOWN',
            `host key ${presented} of ${h.hostName}:${h.port} is not in known_hosts (hostKeyPolicy: 'accept-new' records it)`,
            { presented },
          ),
        );
        return false;
    }
  };
}

function mapError(
  err: Error & { level?: string; code?: string },
  h: ResolvedHost,
  refused?: PtyRelayError,
): PtyRelayError {
  if (refused) return refused;
  if (err instanceof PtyRelayError) return err;
  const where = `${h.user}@${h.hostName}:${h.port}`;
  if (err.level === 'client-authentication') {
    return new PtyRelayError(
      'AUTH_FAILED',
      `authentication to ${where} failed (tried agent, keys, password as configured)`,
    );
  }
  if (err.level === 'client-timeout' || /Timed out/i.test(err.message)) {
    return new PtyRelayError('TIMEOUT', `connecting to ${where} timed out`);
  }
  return new PtyRelayError('CONNECT_FAILED', `cannot connect to ${where}: ${err.message}`, {
    cause: err.code,
  });
}

function openSocket(h: ResolvedHost, signal?: AbortSignal): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const s = tcpConnect({ host: h.hostName, port: h.port });
    const fail = (e: unknown) => {
      clearTimeout(timer);
      off();
      s.destroy();
      reject(e);
    };
    const timer = setTimeout(
      () => fail(new PtyRelayError('TIMEOUT', `TCP connect to ${h.hostName}:${h.port} timed out`)),
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
    s.once('error', (e) =>
      fail(new PtyRelayError('CONNECT_FAILED', `cannot connect to ${h.hostName}:${h.port}: ${e.message}`)),
    );
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
export async function connectSsh(h: ResolvedHost, opts: ConnectOptions = {}): Promise<SshConnection> {
  opts.signal?.throwIfAborted();
  let jump: SshConnection | undefined;
  let sock: Duplex;
  if (h.proxyJump && h.proxyJump !== 'none') {
    const spec = parseJumpSpec(h.proxyJump);
    const jh =
      opts.resolveJump?.(h.proxyJump) ??
      resolveHost({ host: spec.host, user: spec.user, port: spec.port, hostKeyPolicy: h.hostKeyPolicy });
    jump = await connectSsh({ ...jh, proxyJump: undefined }, opts);
    let off = () => {};
    sock = await new Promise<Duplex>((resolve, reject) => {
      off = onAbort(opts.signal, () => reject(opts.signal?.reason));
      jump!.client.forwardOut('127.0.0.1', 0, h.hostName, h.port, (err, stream) => {
        if (err)
          reject(
            new PtyRelayError(
              'CONNECT_FAILED',
              `jump host cannot reach ${h.hostName}:${h.port}: ${err.message}`,
            ),
          );
        else resolve(stream);
      });
    })
      .catch((e) => {
        jump?.close();
        throw e;
      })
      .finally(off);
  } else {
    sock = await openSocket(h, opts.signal);
  }
  const client = new Client();
  let refused: PtyRelayError | undefined;
  const config: ConnectConfig = {
    sock: sock as ConnectConfig['sock'],
    username: h.user,
    readyTimeout: h.connectTimeoutMs,
    keepaliveInterval: h.keepaliveIntervalMs,
    keepaliveCountMax: 3,
    authHandler: authMethods(h, opts.log),
    hostVerifier: hostVerifier(
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
    if (settled) opts.log?.warn({ host: h.alias, err: e.message }, 'ssh connection error');
  });
  const heard = () => opts.onReceive?.();
  let off = () => {};
  try {
    await new Promise<void>((resolve, reject) => {
      off = onAbort(opts.signal, () => reject(opts.signal?.reason));
      opts.signal?.throwIfAborted();
      client.once('ready', () => resolve());
      client.once('error', (e) => reject(mapError(e, h, refused)));
      client.once('close', () =>
        reject(mapError(new Error('connection closed during handshake'), h, refused)),
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
    jump?.close();
    throw err;
  } finally {
    off();
    sock.off('data', heard);
  }
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
