import type { PtyProcessInfo } from '../../provider/contract.js';
import type { Logger } from '../core/log.js';
import type { StubClient } from './stub-client.js';
import { globalTerminalId, hostOfLinkKey, routeTerminalId } from './terminal-ids.js';
import { TerminalRoutes } from './terminal-routes.js';

/** What HostDaemons needs from its provider. */
export interface HostDaemonsLinks {
  defaultHost(): string;
  /** The connected client of a link key (`host` or `host#<build>`), connecting as needed. */
  link(key: string): Promise<StubClient>;
  /** The same for a listing of the host's terminals, which is no lasting use of the link. */
  listingLink(key: string): Promise<StubClient>;
  /** Stops reaching a daemon that is gone. */
  closeLink(key: string): void;
  log(): Logger | undefined;
}

type Route = { host: string; localId: string };

/**
 * The daemons a provider reaches on each host — the current build's, and older builds' that still
 * serve terminals after an upgrade — and which of them serves each terminal. Daemons that mint
 * host-scoped ids (their hello says so) keep every terminal's `<host>/<id>` whichever build serves
 * it; ids then no longer say which daemon that is, so spawns, attaches and listings record it, and
 * an id never seen is looked up in a fresh listing of the host's daemons.
 */
export class HostDaemons {
  /** Older builds' daemons per host that still serve sessions (found when the host connects). */
  private readonly legacyBuilds = new Map<string, Set<string>>();
  private readonly routes = new TerminalRoutes();
  /** Link keys whose daemon mints host-scoped ids. */
  private readonly hostScoped = new Set<string>();
  /**
   * Daemon ids an older build's daemon shares with another daemon of its host (only after the id
   * counter was wiped): those keep the `<host>/<build>:<id>` form so the two stay apart.
   */
  private readonly clashes = new Map<string, Set<string>>();
  /** Listings in flight per host, shared by every lookup of an unknown id. */
  private readonly lookups = new Map<string, Promise<unknown>>();

  constructor(private readonly links: HostDaemonsLinks) {}

  /** A link came up: its daemon's hello says how it mints ids. */
  connected(key: string, client: StubClient): void {
    if (client.daemonHello?.idScope === 'host') this.hostScoped.add(key);
    else this.hostScoped.delete(key);
  }

  /** Records the older-build daemons a host reported. */
  /** Older builds whose daemons still serve sessions on `host` (`ptyrelay daemons`). */
  legacyOf(host: string): string[] {
    return [...(this.legacyBuilds.get(host) ?? [])];
  }

  /** Forgets an older build's daemon of `host` (it was stopped). */
  dropLegacy(host: string, build: string): void {
    this.legacyBuilds.get(host)?.delete(build);
  }

  noteLegacy(host: string, builds: string[]): void {
    if (builds.length === 0) return;
    const set = this.legacyBuilds.get(host) ?? new Set<string>();
    for (const b of builds) set.add(b);
    this.legacyBuilds.set(host, set);
  }

  /** The global id of daemon id `localId` reached through link `key`. */
  globalId(key: string, localId: string): string {
    const scoped = this.hostScoped.has(key) && !this.clashes.get(key)?.has(localId);
    return globalTerminalId(key, localId, scoped);
  }

  /** The daemon (link key) and its id for a global id, from what was seen so far. */
  resolve(id: string): Route {
    const r = routeTerminalId(id, this.links.defaultHost());
    const key = r.host.includes('#') ? undefined : this.routes.get(`${r.host}/${r.localId}`);
    return key ? { host: key, localId: r.localId } : r;
  }

  /** True when `id` may live in an older build's daemon that has not been listed since it was seen. */
  unrouted(id: string): boolean {
    const r = routeTerminalId(id, this.links.defaultHost());
    return (
      !r.host.includes('#') &&
      !this.routes.has(`${r.host}/${r.localId}`) &&
      (this.legacyBuilds.get(r.host)?.size ?? 0) > 0
    );
  }

  /**
   * {@link resolve}, after looking for an id it does not know among the daemons of its host: a relay
   * that started after an upgrade reaches an older build's terminal by its original id.
   */
  async locate(id: string): Promise<Route> {
    const first = this.resolve(id);
    if (first.host.includes('#') || this.routes.has(`${first.host}/${first.localId}`)) return first;
    // First contact notes the host's older daemons.
    await this.links.link(first.host);
    if (!this.unrouted(id)) return this.resolve(id);
    let pending = this.lookups.get(first.host);
    if (!pending) {
      pending = this.list(first.host).finally(() => this.lookups.delete(first.host));
      this.lookups.set(first.host, pending);
    }
    await pending;
    return this.resolve(id);
  }

  /** Terminal `id` is served through link `key` (a spawn or attach reply came from there). */
  served(id: string, key: string): void {
    this.routes.set(id, key);
  }

  /** Terminal `id` was shut down. */
  ended(id: string): void {
    this.routes.delete(id);
  }

  /**
   * Sessions of a host: its current daemon's and those of older builds still running, under the ids
   * they were spawned with. Refreshes the routes of every daemon listed.
   */
  async list(host: string): Promise<PtyProcessInfo[]> {
    const { sessions } = await (await this.links.listingLink(host)).call('list', {});
    const out = sessions.map((s) => ({ ...s, id: this.globalId(host, s.id), host }));
    this.routes.replaceLink(
      host,
      out.map((s) => s.id),
    );
    const seen = new Set(out.map((s) => s.id));
    for (const build of this.legacyBuilds.get(host) ?? []) {
      const key = `${host}#${build}`;
      let legacy: typeof sessions;
      try {
        legacy = (await (await this.links.listingLink(key)).call('list', {})).sessions;
      } catch (err) {
        this.links.log()?.info({ host, build, err: (err as Error).message }, 'older build daemon gone');
        this.forgetLegacy(key);
        continue;
      }
      // Two daemons claiming one id (a wiped id counter): the older one's keeps its build prefix.
      this.clashes.set(
        key,
        new Set(legacy.map((s) => s.id).filter((l) => seen.has(globalTerminalId(host, l)))),
      );
      const ids = legacy.map((s) => this.globalId(key, s.id));
      for (const id of ids) seen.add(id);
      this.routes.replaceLink(key, ids);
      out.push(...legacy.map((s, i) => ({ ...s, id: ids[i]!, host })));
    }
    return out;
  }

  /** An older build's daemon ended (its last session exited): forget it. */
  private forgetLegacy(key: string): void {
    this.legacyBuilds.get(hostOfLinkKey(key))?.delete(key.slice(key.indexOf('#') + 1));
    this.routes.forgetLink(key);
    this.hostScoped.delete(key);
    this.clashes.delete(key);
    this.links.closeLink(key);
  }
}
