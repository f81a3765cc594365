import { type RelayDaemonInfo, RelayMethod } from '../../provider/client/relay-protocol.js';
import type { IPtyProvider } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import { askHosts } from '../core/host-listing.js';
import type { HostRouter, RpcMethodHandler } from '../core/rpc-types.js';
import type { DaemonInfo } from '../stub-link/daemon-admin.js';

/** What a provider backed by per-user daemons offers for administration (StubBackedProvider). */
interface DaemonAdmin {
  daemonList(host: string): Promise<DaemonInfo[]>;
  /** `terminals`: the global ids of the terminals that ended with the daemon. */
  stopDaemon(host: string, build?: string): Promise<StoppedDaemon>;
}

/** A daemon `ptyrelay/stopDaemon` ended, and the terminals that ended with it. */
export interface StoppedDaemon {
  info: DaemonInfo;
  terminals: string[];
}

function adminOf(p: IPtyProvider, host: string): DaemonAdmin {
  const a = p as IPtyProvider & Partial<DaemonAdmin>;
  if (typeof a.daemonList !== 'function' || typeof a.stopDaemon !== 'function') {
    throw new PtyRelayError('INVALID_ARGUMENT', `host ${host} has no per-user daemon`);
  }
  return a as IPtyProvider & DaemonAdmin;
}

function optString(v: unknown, name: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v === '')
    throw new PtyRelayError('INVALID_ARGUMENT', `${name} must be a string`);
  return v;
}

/**
 * `ptyrelay/daemons {host?}` lists the per-user daemons of every host within the listing deadline
 * (a host that cannot be reached or is slow is listed with its error); `ptyrelay/stopDaemon {host, build?}` ends one and its
 * sessions (`ptyrelay daemons stop`).
 */
export function daemonMethods(
  router: HostRouter,
  onStopped: (stopped: StoppedDaemon) => Promise<void> | void,
): Record<string, RpcMethodHandler> {
  // Answers within LISTING_DEADLINE_MS; a host left out is listed with its error and named in `unavailable`.
  const daemons: RpcMethodHandler = async (_conn, params) => {
    const host = optString(params.host, 'host');
    const hosts = host ? [host] : router.hosts();
    const admins = new Map(hosts.map((h) => [h, adminOf(router.providerFor(h), h)]));
    const answer = await askHosts(hosts, {
      ask: (h): Promise<RelayDaemonInfo[]> => admins.get(h)!.daemonList(h),
      stateOf: (h) => router.linkState(h),
    });
    const down = answer.unavailable.map((u): RelayDaemonInfo => ({ host: u.host, error: u.reason }));
    return { daemons: [...answer.rows, ...down], unavailable: answer.unavailable };
  };
  const stop: RpcMethodHandler = async (_conn, params) => {
    const host = optString(params.host, 'host');
    if (!host) throw new PtyRelayError('INVALID_ARGUMENT', 'host required');
    const stopped = await adminOf(router.providerFor(host), host).stopDaemon(
      host,
      optString(params.build, 'build'),
    );
    await onStopped(stopped);
    return { stopped: stopped.info };
  };
  return { [RelayMethod.daemons]: daemons, [RelayMethod.stopDaemon]: stop };
}
