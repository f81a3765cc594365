/**
 * Provider events out to `ptyrelay` clients: each provider the extension touches is subscribed
 * once, its output goes to the fan-out (Data frames), facts and exits update the registry and go
 * to the terminal's viewers as notifications, background stream events and re-attaches move the
 * viewers' seq (skip a gap, restart at a snapshot), and link states and host progress go to every
 * connection whose token may see the host. A session lost with its host leaves the registry, or
 * stays listed as exited when the host kept a cold-restore record of it.
 */
import { RelayNotification } from '../../provider/client/relay-protocol.js';
import type { IPtyProvider, LinkState } from '../../provider/contract.js';
import { eachProvider } from '../core/each-provider.js';
import { canSeeHost } from '../core/grant.js';
import type { HostRouter } from '../core/rpc-types.js';
import type { RouterBackground } from '../flow/background-by-viewers.js';
import type { RelayFanout } from '../flow/relay-fanout.js';
import type { TerminalRegistry } from '../terminals/terminal-registry.js';
import type { ConnState } from './pty-connections.js';

/** Catalog exit code of a terminal lost with its host without an exit of its own (killed: 128 + 9). */
const LOST_EXIT_CODE = 137;

export interface ProviderEvents {
  /** Subscribes to a provider's events (once per provider). */
  subscribe: (p: IPtyProvider) => void;
  /** The last link state each host reported. */
  linkStates: Map<string, LinkState>;
}

/** Subscribes to the router's providers now and to its host progress. */
export function providerEvents(deps: {
  router: HostRouter;
  registry: TerminalRegistry;
  fanout: RelayFanout;
  background: RouterBackground;
  conns: Set<ConnState>;
}): ProviderEvents {
  const { router, registry, fanout, background, conns } = deps;
  const linkStates = new Map<string, LinkState>();
  const subscribed = new WeakSet<IPtyProvider>();

  function subscribe(p: IPtyProvider): void {
    if (subscribed.has(p)) return;
    subscribed.add(p);
    p.onData((e) => fanout.data(e));
    p.onFact((e) => {
      if (e.fact.type === 'title') registry.update(e.id, { title: e.fact.title });
      if (e.fact.type === 'cwd') registry.update(e.id, { cwd: e.fact.cwd });
      fanout.note(e.id, RelayNotification.fact, e);
    });
    p.onExit((e) => {
      registry.update(e.id, { exitCode: e.exitCode });
      fanout.note(e.id, RelayNotification.exit, e);
    });
    p.onBackgroundStreamEvent((e) => {
      // A data gap skips the dropped bytes; foregrounding restarts the stream at its snapshot.
      const seq =
        e.type === 'dataGap'
          ? { skipTo: e.toSeq }
          : e.type === 'backgroundMarker' && !e.background
            ? { resetTo: e.seq }
            : {};
      fanout.note(e.id, RelayNotification.background, e, seq);
    });
    p.onLinkState?.((e) => {
      linkStates.set(e.host, e.state);
      for (const cs of conns)
        if (cs.clientId && canSeeHost(cs.conn.grant, e.host)) cs.conn.notify(RelayNotification.linkState, e);
    });
    p.onReattach?.((e) => {
      // The relay's own link to the host came back; a reset restarts every view at the snapshot.
      fanout.note(e.id, RelayNotification.reattach, e, e.snapshot ? { resetTo: e.snapshot.seq } : {});
      if (e.sessionExpired) {
        fanout.forget(e.id);
        background.forget(e.id);
        // A terminal the host kept a cold-restore record of stays listed, as exited.
        if (e.coldRestore)
          registry.update(e.id, { exitCode: e.coldRestore.exited?.exitCode ?? LOST_EXIT_CODE });
        else registry.remove(e.id);
      }
    });
  }
  eachProvider(router, subscribe);
  router.onHostProgress?.((p) => {
    for (const cs of conns)
      if (cs.clientId && canSeeHost(cs.conn.grant, p.host)) cs.conn.notify(RelayNotification.hostProgress, p);
  });
  return { subscribe, linkStates };
}
