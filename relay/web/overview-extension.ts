import type { HostUnavailable } from '../../provider/client/relay-protocol.js';
import type { Unsubscribe } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import { eachProvider } from '../core/each-provider.js';
import { canRead, canSeeHost, needWrite } from '../core/grant.js';
import { unavailableByState } from '../core/host-listing.js';
import type { HostRouter, RpcConnection, RpcExtension } from '../core/rpc-types.js';
import { CatalogRefresh } from '../terminals/catalog-refresh.js';
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
  const feed = new OverviewFeed(opts.router, opts.registry);
  return {
    name: 'web',
    methods: {
      [WebMethod.overview]: async (conn) => feed.watch(conn),
      [WebMethod.rename]: async (conn, params) => feed.rename(conn, params),
    },
    dispose: () => feed.dispose(),
  };
}

/** The summaries, the connections watching them, and the tick and debounce that push changes. */
class OverviewFeed {
  private readonly summaries = new TerminalSummaries();
  private readonly watchers = new Set<RpcConnection>();
  private readonly refresh: CatalogRefresh;
  private readonly offs: Unsubscribe[] = [];
  private readonly timer: NodeJS.Timeout;
  private lastJson = '';
  private lastTick = Date.now();
  private debounce: NodeJS.Timeout | undefined;

  constructor(
    private readonly router: HostRouter,
    private readonly registry: TerminalRegistry,
  ) {
    const { summaries } = this;
    this.refresh = new CatalogRefresh(router);
    this.offs.push(
      eachProvider(router, (p) =>
        this.offs.push(
          p.onData((e) => summaries.data(e.id, e.incarnationId, e.data.length)),
          p.onFact((e) => summaries.fact(e.id, e.incarnationId, e.fact)),
          p.onBackgroundStreamEvent((e) => summaries.background(e)),
        ),
      ),
    );
    this.timer = setInterval(() => {
      const now = Date.now();
      summaries.tick(now - this.lastTick);
      this.lastTick = now;
      this.push();
    }, OVERVIEW_INTERVAL_MS);
    this.timer.unref();
    this.offs.push(
      registry.changed.on(() => {
        this.debounce ??= setTimeout(() => {
          this.debounce = undefined;
          this.push();
        }, CATALOG_DEBOUNCE_MS);
      }),
    );
  }

  /** `web/overview`: the connection's view now; it gets `web/overviewChanged` from then on. */
  /**
   * The overview now (from the relay's catalog: never waits on a host), and the hosts whose link
   * is down with their cause (`unavailable`, as in `ptyrelay/list`).
   */
  watch(conn: RpcConnection): { terminals: TerminalSummary[]; unavailable: HostUnavailable[] } {
    // Hosts this relay has not linked may hold terminals (opened through another relay).
    this.refresh.request();
    if (!this.watchers.has(conn)) {
      this.watchers.add(conn);
      conn.onClose(() => this.watchers.delete(conn));
    }
    const unavailable = this.router
      .hosts()
      .filter((h) => canSeeHost(conn.grant, h))
      .flatMap((h) => unavailableByState(h, this.router.linkState(h)) ?? []);
    return { terminals: visible(conn, this.current()), unavailable };
  }

  /** `web/rename`: the claim holder names a terminal (empty name: back to its title). */
  rename(conn: RpcConnection, params: Record<string, unknown>): Record<string, never> {
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
    this.registry.checkClaim(id, `client:${conn.clientId}`);
    this.registry.update(id, { name: name.trim() || undefined });
    return {};
  }

  dispose(): void {
    clearInterval(this.timer);
    clearTimeout(this.debounce);
    for (const off of this.offs.splice(0)) off();
    this.watchers.clear();
  }

  private current(): TerminalSummary[] {
    return this.summaries.list(this.registry.list());
  }

  private push(): void {
    if (this.watchers.size === 0) return;
    const terminals = this.current();
    const json = JSON.stringify(terminals);
    if (json === this.lastJson) return;
    this.lastJson = json;
    for (const c of this.watchers) {
      c.notify(WebNotification.overviewChanged, { terminals: visible(c, terminals) });
    }
  }
}

/** What one connection's token may see of the overview. */
function visible(conn: RpcConnection, all: TerminalSummary[]): TerminalSummary[] {
  return all.filter((t) => canRead(conn.grant, t.id));
}
