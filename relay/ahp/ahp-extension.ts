import type { Logger } from '../core/log.js';
import type { HostRouter, RpcExtension } from '../core/rpc-types.js';
import type { TerminalQuota } from '../terminals/terminal-quota.js';
import type { TerminalRegistry } from '../terminals/terminal-registry.js';
import { DEFAULT_REPLAY_ACTIONS, DEFAULT_REPLAY_BYTES } from './action-log.js';
import type { AhpContext } from './ahp-context.js';
import { AhpHub, type AhpLimits } from './ahp-hub.js';
import { DEFAULT_HIGH_WATERMARK, DEFAULT_LOW_WATERMARK } from './ahp-peers.js';
import { AhpSubscriptions } from './ahp-subscriptions.js';
import { AhpTerminalMethods } from './ahp-terminal-methods.js';
import { TerminalLocator } from './terminal-locator.js';
import { DEFAULT_CONTENT_LIMIT } from './terminal-reducer.js';

export { DEFAULT_COLS, DEFAULT_ROWS } from './ahp-terminal-methods.js';
/** Default cap on published terminals. */
export const DEFAULT_MAX_TERMINALS = 256;
/** Default bound of one input write (`limits.maxInputBytes`). */
export const DEFAULT_MAX_INPUT_BYTES = 1024 * 1024;

export interface AhpExtensionOptions {
  router: HostRouter;
  registry: TerminalRegistry;
  log?: Logger;
  limits?: Partial<AhpLimits> & Partial<TerminalQuota> & { maxInputBytes?: number };
}

/** The AHP RpcExtension plus what the server needs to tear it down. */
export interface AhpExtension extends RpcExtension {
  readonly hub: AhpHub;
  dispose(): void;
}

/**
 * Creates the AHP terminal-channel extension: `initialize`, `subscribe`, `unsubscribe`,
 * `createTerminal`, `disposeTerminal`, `dispatchAction` and `reconnect` over the shared
 * TerminalRegistry and the router's providers. See docs/ahp.md. The methods live in
 * AhpSubscriptions (who a connection is and what it sees) and AhpTerminalMethods (what it does
 * to terminals); this is their table.
 */
export function createAhpExtension(opts: AhpExtensionOptions): AhpExtension {
  const { router, registry, log } = opts;
  const hub = new AhpHub(router, registry, ahpLimits(opts), log);
  const ctx: AhpContext = {
    hub,
    router,
    registry,
    log,
    locator: new TerminalLocator(router, registry, hub, log),
  };
  const subs = new AhpSubscriptions(ctx);
  const terminals = new AhpTerminalMethods(
    ctx,
    terminalQuota(opts),
    opts.limits?.maxInputBytes ?? DEFAULT_MAX_INPUT_BYTES,
  );
  return {
    name: 'ahp',
    hub,
    methods: {
      initialize: (conn, raw) => subs.initialize(conn, raw),
      reconnect: (conn, raw) => subs.reconnect(conn, raw),
      subscribe: (conn, raw) => subs.subscribe(conn, raw),
      createTerminal: (conn, raw) => terminals.createTerminal(conn, raw),
      disposeTerminal: (conn, raw) => terminals.disposeTerminal(conn, raw),
    },
    notifications: {
      unsubscribe: (conn, raw) => subs.unsubscribe(conn, raw),
      dispatchAction: (conn, raw) => terminals.dispatchAction(conn, raw),
    },
    onConnection: (conn) => {
      conn.onClose(() => hub.peers.remove(conn));
    },
    dispose: () => hub.dispose(),
  };
}

/** The channel's tunables: the configured ones, the defaults for the rest. */
function ahpLimits(opts: AhpExtensionOptions): AhpLimits {
  return {
    contentLimit: opts.limits?.contentLimit ?? DEFAULT_CONTENT_LIMIT,
    replayActions: opts.limits?.replayActions ?? DEFAULT_REPLAY_ACTIONS,
    replayBytes: opts.limits?.replayBytes ?? DEFAULT_REPLAY_BYTES,
    highWatermark: opts.limits?.highWatermark ?? DEFAULT_HIGH_WATERMARK,
    lowWatermark: opts.limits?.lowWatermark ?? DEFAULT_LOW_WATERMARK,
  };
}

function terminalQuota(opts: AhpExtensionOptions): TerminalQuota {
  return {
    maxTerminals: opts.limits?.maxTerminals ?? DEFAULT_MAX_TERMINALS,
    maxTerminalsPerHost: opts.limits?.maxTerminalsPerHost ?? DEFAULT_MAX_TERMINALS,
    maxTerminalsPerClient: opts.limits?.maxTerminalsPerClient ?? DEFAULT_MAX_TERMINALS,
  };
}
