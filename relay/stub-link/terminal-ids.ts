import type { PtySpawnResult } from '../../provider/contract.js';
import { isPtyRelayError, PtyRelayError } from '../../provider/errors.js';
import type { StubAttachResult } from '../../provider/wire/messages.js';

/**
 * A link key names one daemon: the host for its current-build daemon, `host#<build>` for an older
 * build's daemon that still serves sessions after an upgrade. A daemon whose ids are unique on its
 * host (`hostScoped`: every build since ids came from the host-wide counter) names its terminals
 * `<host>/<id>` whichever daemon it is; only an older daemon without that guarantee has
 * `<host>/<build>:<id>`.
 */
export function globalTerminalId(linkKey: string, daemonId: string, hostScoped = false): string {
  const hash = linkKey.indexOf('#');
  if (hash < 0) return `${linkKey}/${daemonId}`;
  const host = linkKey.slice(0, hash);
  return hostScoped ? `${host}/${daemonId}` : `${host}/${linkKey.slice(hash + 1)}:${daemonId}`;
}

/** The host of a link key (`host` or `host#<build>`). */
export function hostOfLinkKey(linkKey: string): string {
  const hash = linkKey.indexOf('#');
  return hash < 0 ? linkKey : linkKey.slice(0, hash);
}

/**
 * The link key and daemon id a terminal id spells out: `<host>/<build>:<id>` names an older build's
 * daemon, anything else the host's current one (which daemon really serves a host-scoped id is
 * TerminalRoutes' business).
 */
export function routeTerminalId(id: string, defaultHost: string): { host: string; localId: string } {
  const { host, localId } = splitTerminalId(id, defaultHost);
  const colon = localId.indexOf(':');
  return colon < 0
    ? { host, localId }
    : { host: `${host}#${localId.slice(0, colon)}`, localId: localId.slice(colon + 1) };
}

export function splitTerminalId(id: string, defaultHost: string): { host: string; localId: string } {
  const slash = id.lastIndexOf('/');
  if (slash < 0) return { host: defaultHost, localId: id };
  return { host: id.slice(0, slash), localId: id.slice(slash + 1) };
}

/** A daemon's attach/spawn reply as the contract's result, under the global id. */
export function toSpawnResult(id: string, r: StubAttachResult, blob: Uint8Array | undefined): PtySpawnResult {
  const out: PtySpawnResult = {
    id,
    pid: r.pid,
    incarnationId: r.incarnationId,
    cols: r.cols,
    rows: r.rows,
    providerSequence: { value: r.seq, generation: r.generation },
  };
  if (blob && blob.length > 0) out.replay = blob;
  if (r.snapshot) out.snapshot = r.snapshot;
  if (r.exited) out.exited = r.exited;
  if (r.title !== undefined) out.title = r.title;
  if (r.cwd !== undefined) out.cwd = r.cwd;
  if (r.alias !== undefined) out.alias = r.alias;
  if (r.owner !== undefined) out.owner = r.owner;
  if (r.reused) out.reused = true;
  if (r.exitedBeforeSpawnReply) out.exitedBeforeSpawnReply = true;
  if (r.sessionExpired) out.sessionExpired = true;
  if (r.coldRestore) out.coldRestore = r.coldRestore;
  return out;
}

/**
 * A daemon's error about one of its sessions, with the daemon's id (`pty-3`) in the message
 * replaced by the global id (`box/pty-3`): users only ever see HOST/ID.
 */
export function globalizeError(err: unknown, daemonId: string, id: string): unknown {
  if (!isPtyRelayError(err) || daemonId === id) return err;
  const escaped = daemonId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const bare = new RegExp(`(?<![\\w/:.-])${escaped}(?![\\w-])`, 'g');
  if (!bare.test(err.message)) return err;
  const details = err.details && 'id' in err.details ? { ...err.details, id } : err.details;
  return new PtyRelayError(err.code, err.message.replace(bare, id), details);
}
