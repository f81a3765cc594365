import type { Unsubscribe } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import { eachProvider } from '../core/each-provider.js';
import { canRead, needWrite } from '../core/grant.js';
import type { HostRouter, RpcConnection, RpcExtension } from '../core/rpc-types.js';
import type { TerminalRegistry } from '../terminals/terminal-registry.js';
import { TerminalSummaries, type TerminalSummary } from './terminal-summaries.js';

/** How often activity rates are measured and changed summaries pushed. */
export const OVERVIEW_INTERVAL_MS = 1000;
/** A catalog change (create, exit, rename) is pushed this soon instead of waiting for the tick. */
const CATALOG_DEBOUNCE_MS = 30;
const MAX_NAME_LENGTH = 200;

export const WebMethod = {
  /** → `{terminals: TerminalSummary[]}`; the connection then gets `web/overviewChanged`. */
  overview: 'web/overview',
  /** `{id, name}` → `{}`: the claim holder names a terminal (empty name: back to its title). */
  rename: 'web/rename',
} as const;
export const WebNotification = { overviewChanged: 'web/overviewChanged' } as const;

export interface OverviewExtension extends RpcExtension {
  dispose(): void;
}

/**
 * The web page's overview feed (docs/web.md): per-terminal title, name, cwd, last command and its
 * exit status, output rate and bell count for every published terminal, whoever owns it, pushed
 * once a second when something changed. Cheaper than attaching to every terminal: nothing of the
 * output itself travels.
 */
export function createOverviewExtension(opts: {
  router: HostRouter;
  registry: TerminalRegistry;
}): OverviewExtension {
  const { router, registry } = opts;
  const summaries = new TerminalSummaries();
  const watchers = new Set<RpcConnection>();
  const offs: Unsubscribe[] = [];
  let lastJson = '';
  let lastTick = Date.now();
  let debounce: NodeJS.Timeout | undefined;

  offs.push(
    eachProvider(router, (p) =>
      offs.push(
        p.onData((e) => summaries.data(e.id, e.incarnationId, e.data.length)),
        p.onFact((e) => summaries.fact(e.id, e.incarnationId, e.fact)),
        p.onBackgroundStreamEvent((e) => summaries.background(e)),
      ),
    ),
  );

  const current = (): TerminalSummary[] => summaries.list(registry.list());
  /** What one connection's token may see of the overview. */
  const visible = (conn: RpcConnection, all: TerminalSummary[]) =>
    all.filter((t) => canRead(conn.grant, t.id));
  const push = (): void => {
    if (watchers.size === 0) return;
    const terminals = current();
    const json = JSON.stringify(terminals);
    if (json === lastJson) return;
    lastJson = json;
    for (const c of watchers) c.notify(WebNotification.overviewChanged, { terminals: visible(c, terminals) });
  };
  const timer = setInterval(() => {
    const now = Date.now();
    summaries.tick(now - lastTick);
    lastTick = now;
    push();
  }, OVERVIEW_INTERVAL_MS);
  timer.unref();
  offs.push(
    registry.changed.on(() => {
      debounce ??= setTimeout(() => {
        debounce = undefined;
        push();
      }, CATALOG_DEBOUNCE_MS);
    }),
  );

  return {
    name: 'web',
    methods: {
      [WebMethod.overview]: async (conn) => {
        if (!watchers.has(conn)) {
          watchers.add(conn);
          conn.onClose(() => watchers.delete(conn));
        }
        return { terminals: visible(conn, current()) };
      },
      [WebMethod.rename]: async (conn, params) => {
        const { id, name } = params;
        if (typeof id !== 'string' || typeof name !== 'string' || name.length > MAX_NAME_LENGTH) {
          throw new PtyRelayError(
            'INVALID_ARGUMENT',
            `web/rename wants {id, name} (name ≤ ${MAX_NAME_LENGTH} chars)`,
          );
        }
        if (!conn.clientId)
          throw new PtyRelayError('INVALID_ARGUMENT', 'call ptyrelay/hello or initialize first');
        needWrite(conn.grant, id, 'rename');
        registry.checkClaim(id, `client:${conn.clientId}`);
        registry.update(id, { name: name.trim() || undefined });
        return {};
      },
    },
    dispose() {
      clearInterval(timer);
      clearTimeout(debounce);
      for (const off of offs.splice(0)) off();
      watchers.clear();
    },
  };
}
