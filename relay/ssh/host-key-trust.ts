import type { HostKeyInfo } from '../../provider/client/relay-protocol.js';
import { PtyRelayError } from '../../provider/errors.js';
import type { ResolvedHost } from './host-config.js';
import { type ConnectOptions, connectSsh } from './host-connection.js';
import {
  appendKnownHost,
  fingerprintSha256,
  formatKnownHostsLine,
  keyTypeFromBlob,
  readKnownHostsFiles,
  removeKnownHost,
  verifyHostKey,
} from './known-hosts.js';

/** What a host presents now and what known_hosts says about it (`ptyrelay hosts trust`). */
export type HostKeyStatus = HostKeyInfo;

/** Reads the key the host presents (no authentication) and checks it against known_hosts. */
export async function inspectHostKey(
  h: ResolvedHost,
  opts: ConnectOptions,
): Promise<HostKeyStatus & { key: Buffer }> {
  let key: Buffer | undefined;
  try {
    (await connectSsh(h, { ...opts, inspectHostKey: (k) => (key = k) })).close();
  } catch (err) {
    if (!key) throw err;
  }
  if (!key) throw new PtyRelayError('PROTOCOL_ERROR', `${h.hostName}:${h.port} presented no host key`);
  const keyType = keyTypeFromBlob(key) ?? 'unknown';
  const v = verifyHostKey(readKnownHostsFiles(h.knownHostsFiles), h.hostName, h.port, keyType, key);
  return {
    key,
    address: `${h.hostName}:${h.port}`,
    keyType,
    presented: fingerprintSha256(key),
    verdict: v.kind,
    known: v.kind === 'mismatch' ? v.knownFingerprints : [],
    file: h.appendKnownHostsTo,
  };
}

/**
 * Records the host's key in known_hosts once the person has seen and confirmed `fingerprint`.
 * The key is read again and must still be the one confirmed; a changed key is only replaced
 * with `replace` (the old entries for the host are removed from the files ptyrelay reads).
 */
export async function trustHostKey(
  h: ResolvedHost,
  fingerprint: string,
  replace: boolean,
  opts: ConnectOptions,
): Promise<HostKeyStatus> {
  const s = await inspectHostKey(h, opts);
  const { key, ...status } = s;
  if (s.presented !== fingerprint) {
    throw new PtyRelayError(
      'HOSTKEY_MISMATCH',
      `${s.address} now presents ${s.presented}, not the ${fingerprint} that was confirmed; nothing recorded`,
      { presented: s.presented, confirmed: fingerprint },
    );
  }
  if (s.verdict === 'ok') return status;
  if (s.verdict === 'revoked')
    throw new PtyRelayError('HOSTKEY_REVOKED', `host key ${s.presented} of ${s.address} is revoked`);
  if (s.verdict === 'mismatch') {
    if (!replace)
      throw new PtyRelayError(
        'HOSTKEY_MISMATCH',
        `host key of ${s.address} changed: presented ${s.presented}, known ${s.known.join(', ')} (replace it with --replace)`,
        { presented: s.presented, known: s.known },
      );
    for (const file of h.knownHostsFiles) removeKnownHost(file, h.hostName, h.port);
  }
  appendKnownHost(h.appendKnownHostsTo, formatKnownHostsLine(h.hostName, h.port, s.keyType, key));
  opts.log?.info({ address: s.address, fingerprint: s.presented, file: s.file, replace }, 'host key trusted');
  return { ...status, verdict: 'ok', known: [] };
}
