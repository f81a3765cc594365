/**
 * The link lifecycle under StubBackedProvider: one HostLink per host (or per older build's
 * daemon, `host#build`) that connects, reconnects and reports its state, the InputChannel that
 * queues a host's input across outages, and HostDaemons, which knows which daemon serves each
 * terminal (resolve, locate, list). Subclasses say how to open a link (`openLink`) and how often
 * to race reconnect attempts; the provider above plugs its event delivery in through `wireLink`
 * and `reattachHost`. Also the per-user daemon admin (list, stop) and the test hook `dropLink`.
 */
import { randomUUID } from 'node:crypto';
import type { LinkStateEvent, PtyProcessInfo, Unsubscribe } from '../../provider/contract.js';
import { Emitter } from '../../provider/emitter.js';
import { PtyRelayError } from '../../provider/errors.js';
import type { Logger } from '../core/log.js';
import { InputChannel } from '../input/stub-input-channel.js';
import type { RaceAttempt } from './attempt-race.js';
import { type DaemonInfo, listDaemons, stopDaemon } from './daemon-admin.js';
import { HostDaemons } from './host-daemons.js';
import { HostLink } from './host-link.js';
import type { LinkPolicy } from './link-policy.js';
import type { ReachabilityProbe } from './reachability-probe.js';
import type { StubClient } from './stub-client.js';

/** Reconnect attempts for an older build's daemon before it is considered gone. */
const LEGACY_RETRIES = 3;

export abstract class StubLinks {
  protected readonly linkStateEvents = new Emitter<LinkStateEvent>();
  protected readonly hostLinks = new Map<string, HostLink>();
  /** Each host's daemons (current and older builds) and which one serves each terminal. */
  protected readonly daemons = new HostDaemons({
    defaultHost: () => this.defaultHost,
    link: (key) => this.link(key),
    listingLink: (key) => this.listingLink(key),
    closeLink: (key) => {
      this.hostLinks.get(key)?.close();
      this.hostLinks.delete(key);
    },
    log: () => this.log,
  });
  protected readonly inputs = new Map<string, InputChannel>();
  protected disposed = false;

  protected abstract readonly defaultHost: string;
  protected abstract readonly log: Logger | undefined;
  protected linkPolicy: LinkPolicy = {};
  /**
   * This relay's identity toward daemons. Credit claims are held per relayId, so a relay that
   * restarts with the same id (the service persists it) picks up where it left off.
   */
  protected relayId: string = randomUUID();
  /**
   * Reconnect attempts to one host that may race (see AttemptRace); 1 = one at a time. Worth more
   * than one where an attempt can hang on a network that swallows packets (SSH).
   */
  protected readonly reconnectAttempts: number = 1;
  /** A first contact fails at its first failed attempt instead of retrying (HostLinkOptions). */
  protected readonly failFirstContact: boolean = false;
  /**
   * Opens a fresh stub link to `host` (connect, deploy, handshake). Called again on every reconnect,
   * possibly for several racing attempts at once: an attempt stops when `attempt.signal` aborts, and
   * calls `attempt.claim()` before it registers anything shared about the link.
   */
  protected abstract openLink(host: string, attempt: RaceAttempt): Promise<StubClient>;

  /** Subscribes the provider to a new link's events. */
  protected abstract wireLink(host: string, client: StubClient): void;

  /** Re-attaches every session the provider delivered on `host`, from the last delivered seq. */
  protected abstract reattachHost(host: string, client: StubClient): Promise<void>;

  /** The daemon behind link `key` ended on request: the sessions delivered through it are gone. */
  protected daemonStopped(_key: string): void {}

  /** How to tell, cheaply and often, that `host` answers again after an outage (none by default). */
  protected reachabilityProbe(_host: string): ReachabilityProbe | undefined {
    return undefined;
  }

  /** {@link link} for a listing of the host's terminals (the same unless a provider tells uses apart). */
  protected listingLink(host: string): Promise<StubClient> {
    return this.link(host);
  }

  /** The connected client of `host`, connecting or waiting for a reconnect as needed. */
  protected link(host: string): Promise<StubClient> {
    if (this.disposed) return Promise.reject(new PtyRelayError('DISPOSED', 'provider was disposed'));
    return this.hostLink(host).get();
  }

  protected hostLink(host: string): HostLink {
    let l = this.hostLinks.get(host);
    if (!l) {
      const legacy = host.includes('#');
      l = new HostLink(host, (attempt) => this.openLink(host, attempt), {
        ...this.linkPolicy,
        // An old build's daemon exits with its last session; do not chase it for long. Its link
        // rides on the host's connection, so its attempts never race.
        ...(legacy
          ? { ladder: { ...this.linkPolicy.ladder, giveUpAfter: LEGACY_RETRIES } }
          : {
              maxConcurrentAttempts: this.reconnectAttempts,
              failFirstContact: this.failFirstContact,
              probe: this.reachabilityProbe(host),
            }),
        log: this.log,
        onConnected: (c, reconnect) => this.onConnected(host, c, reconnect),
        onDisconnected: () => this.inputChannel(host).disconnect(),
        onDaemonStopped: () => this.daemonStopped(host),
      });
      l.states.on((state) => this.linkStateEvents.emit({ host, state }));
      this.hostLinks.set(host, l);
    }
    return l;
  }

  /** Identity fields a subclass puts in a new StubClient's hello. */
  protected linkIdentity(host: string): { linkId: string; inputEpoch: string; legacy: boolean } {
    return { linkId: this.relayId, inputEpoch: this.inputChannel(host).epoch, legacy: host.includes('#') };
  }

  protected inputChannel(host: string): InputChannel {
    let c = this.inputs.get(host);
    if (!c) {
      c = new InputChannel({ maxQueueAgeMs: this.linkPolicy.maxInputAgeMs });
      this.inputs.set(host, c);
    }
    return c;
  }

  private async onConnected(host: string, client: StubClient, reconnect: boolean): Promise<void> {
    this.daemons.connected(host, client);
    this.wireLink(host, client);
    this.inputChannel(host).connect(client);
    if (reconnect) await this.reattachHost(host, client);
  }

  /** The daemon (link key) and its id for a global id, from what this provider has seen so far. */
  protected resolve(id: string): { host: string; localId: string } {
    if (this.disposed) throw new PtyRelayError('DISPOSED', 'provider was disposed');
    return this.daemons.resolve(id);
  }

  /** {@link resolve}, looking an unknown id up among the daemons of its host (HostDaemons.locate). */
  protected locate(id: string): Promise<{ host: string; localId: string }> {
    if (this.disposed) return Promise.reject(new PtyRelayError('DISPOSED', 'provider was disposed'));
    return this.daemons.locate(id);
  }

  protected canonical(id: string): string {
    const { host, localId } = this.resolve(id);
    return this.daemons.globalId(host, localId);
  }

  /** Sessions of a host: its current daemon's and those of older builds still running. */
  listHost(host: string): Promise<PtyProcessInfo[]> {
    return this.daemons.list(host);
  }

  /** Records the older-build daemons a host reported. */
  protected noteLegacy(host: string, builds: string[]): void {
    this.daemons.noteLegacy(host, builds);
  }

  onLinkState(listener: (e: LinkStateEvent) => void): Unsubscribe {
    return this.linkStateEvents.on(listener);
  }

  /** Per-user daemons of `host` (the current build's and older builds' still serving sessions). */
  async daemonList(host: string = this.defaultHost): Promise<DaemonInfo[]> {
    return listDaemons(
      host,
      (k) => this.link(k),
      () => this.daemons.legacyOf(host),
    );
  }

  /**
   * Ends a daemon of `host` (current, or of `build`) and its sessions; the next use starts a new
   * one. Resolves with what it was and the global ids of the terminals that ended with it.
   */
  async stopDaemon(
    host: string = this.defaultHost,
    build?: string,
  ): Promise<{ info: DaemonInfo; terminals: string[] }> {
    const legacy = () => this.daemons.legacyOf(host);
    const stopped = await stopDaemon(
      host,
      build,
      (k) => this.link(k),
      legacy,
      (key) => {
        this.hostLinks.get(key)?.close();
        this.hostLinks.delete(key);
        if (build !== undefined) this.daemons.dropLegacy(host, build);
      },
    );
    const terminals = stopped.sessions.map((l) => this.daemons.globalId(stopped.key, l));
    for (const id of terminals) this.daemons.ended(id);
    this.daemonStopped(stopped.key);
    return { info: stopped.info, terminals };
  }

  /** Drops a host's link as a network failure would; it reconnects and reattaches on its own. */
  dropLink(host: string = this.defaultHost): void {
    this.hostLinks.get(host)?.drop();
  }

  /** Link state of one host. */
  linkState(host: string) {
    return this.hostLinks.get(host)?.state ?? { state: 'idle' as const };
  }

  /** Closes every link; PTYs keep running in their daemons. */
  protected disposeLinks(): void {
    this.disposed = true;
    // Leaving on purpose: the daemons drop this link's credit claims at once.
    for (const l of this.hostLinks.values()) l.connectedClient?.goodbye();
    for (const l of this.hostLinks.values()) l.close();
    this.hostLinks.clear();
    for (const c of this.inputs.values()) c.failAll(new PtyRelayError('DISPOSED', 'provider was disposed'));
    this.linkStateEvents.clear();
  }
}
