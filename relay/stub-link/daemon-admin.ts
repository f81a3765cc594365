import { isPtyRelayError, PtyRelayError } from '../../provider/errors.js';
import type { StubClient } from './stub-client.js';

/** One per-user daemon on a host, as `ptyrelay daemons` lists it. */
export interface DaemonInfo {
  host: string;
  /** Build id of the stub the daemon runs (`<version>-<sha12>`). */
  build: string;
  pid: number;
  protocol: number;
  /** Sessions the daemon holds (running and recently exited). */
  sessions: number;
  /** Links attached to it: relays, the CLI's `shell`, other local providers. */
  connections: number;
  startedAt: number;
  /** True for the daemon new sessions go to; false for an older build kept for its sessions. */
  current: boolean;
}

/** A daemon `stopDaemon` ended: what it was, and the ids of the sessions that ended with it. */
export interface StoppedDaemon {
  info: DaemonInfo;
  /** The link key it was reached through (`host`, or `host#<build>` for an older build's). */
  key: string;
  /** Its sessions' ids as the daemon named them (running and recently exited). */
  sessions: string[];
}

type LinkTo = (key: string) => Promise<StubClient>;

async function describe(host: string, client: StubClient, current: boolean): Promise<DaemonInfo> {
  const i = await client.call('daemonInfo', {});
  return {
    host,
    build: i.buildId,
    pid: i.pid,
    protocol: i.protocol,
    sessions: i.sessions,
    connections: i.connections,
    startedAt: i.startedAt,
    current,
  };
}

/**
 * The daemons of a host: its current build's (reached first, which also reports older builds
 * still running) and each older build's that still answers.
 */
export async function listDaemons(
  host: string,
  link: LinkTo,
  legacy: () => Iterable<string>,
): Promise<DaemonInfo[]> {
  const out = [await describe(host, await link(host), true)];
  for (const build of [...legacy()]) {
    try {
      out.push(await describe(host, await link(`${host}#${build}`), false));
    } catch (err) {
      // An older build's daemon exits with its last session: gone is not an error here.
      if (!isPtyRelayError(err)) throw err;
    }
  }
  return out;
}

/**
 * Ends a host's daemon (the current build's, or the daemon of `build`) and every session in it;
 * returns what it was and which sessions ended. NOT_FOUND when no daemon of that build runs there.
 */
export async function stopDaemon(
  host: string,
  build: string | undefined,
  link: LinkTo,
  legacy: () => Iterable<string>,
  forget: (key: string) => void,
): Promise<StoppedDaemon> {
  const old = build !== undefined && [...legacy()].includes(build);
  const key = old ? `${host}#${build}` : host;
  const client = await link(key);
  const info = await describe(host, client, !old);
  if (build !== undefined && info.build !== build) {
    throw new PtyRelayError('NOT_FOUND', `no daemon of build ${build} on ${host} (running: ${info.build})`, {
      host,
      build,
    });
  }
  const { sessions } = await client.call('list', {});
  const gone = new Promise<void>((resolve) => {
    if (!client.isOpen) resolve();
    else client.closed.on(() => resolve());
  });
  await client.call('daemonShutdown', {});
  // Stop the link from reconnecting (which would start a new daemon) before this one exits.
  forget(key);
  await gone;
  return { info, key, sessions: sessions.map((s) => s.id) };
}
