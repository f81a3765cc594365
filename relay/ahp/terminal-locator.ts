import type { PtyProcessInfo } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import { askHosts } from '../core/host-listing.js';
import type { Logger } from '../core/log.js';
import type { HostRouter } from '../core/rpc-types.js';
import type { TerminalRegistry } from '../terminals/terminal-registry.js';
import { adoptTerminal } from './adopt-terminal.js';
import type { AhpHub } from './ahp-hub.js';
import type { TerminalChannel } from './terminal-channel.js';

function taken(uri: string, id: string): PtyRelayError {
  return new PtyRelayError('ALREADY_EXISTS', `${uri} is taken by ${id}`, { channel: uri, id });
}

/**
 * Finds terminals by channel URI beyond what this relay has published: a client-chosen URI is
 * an alias the daemon keeps with its session, so after a relay restart it is found by asking the
 * hosts' daemons (and adopted, see adoptTerminal). Keeps client-chosen URIs unique, also while a
 * create is in flight.
 */
export class TerminalLocator {
  private readonly creating = new Set<string>();
  private readonly adopting = new Map<string, Promise<boolean>>();

  constructor(
    private readonly router: HostRouter,
    private readonly registry: TerminalRegistry,
    private readonly hub: AhpHub,
    private readonly log?: Logger,
  ) {}

  /**
   * The terminal whose alias is `uri`, on any host that answers within the listing deadline
   * (hosts that are down or slow are skipped, and logged).
   */
  async findAlias(uri: string): Promise<PtyProcessInfo | undefined> {
    const hosts = this.router.hosts();
    const answer = await askHosts(hosts, {
      ask: (h) => this.router.listHost(h),
      stateOf: (h) => this.router.linkState(h),
    });
    for (const u of answer.unavailable)
      this.log?.warn(
        { host: u.host, status: u.status, reason: u.reason },
        'ahp: host left out of an alias lookup',
      );
    return answer.rows.find((t) => t.alias === uri);
  }

  /**
   * Reserves a client-chosen URI for one create: ALREADY_EXISTS when a published terminal, a
   * create in flight or any host's daemon has it. Returns the release function.
   */
  async reserve(uri: string): Promise<() => void> {
    const published = this.hub.exists(uri);
    if (published) throw taken(uri, this.hub.channelOf(uri).id);
    if (this.creating.has(uri)) throw taken(uri, 'a terminal being created');
    this.creating.add(uri);
    const release = () => void this.creating.delete(uri);
    try {
      const found = await this.findAlias(uri);
      if (found) throw taken(uri, found.id);
    } catch (err) {
      release();
      throw err;
    }
    return release;
  }

  /**
   * The channel `uri` names. One this relay has not published (created before it started) is
   * adopted (see adoptTerminal), claimed by `clientId`; NOT_FOUND when no host has it.
   */
  async resolve(uri: unknown, clientId: string): Promise<TerminalChannel> {
    if (typeof uri !== 'string') return this.hub.channelOf(uri);
    if (this.hub.exists(uri)) {
      // Published from its host but claimed by nobody: the first client that acts on it claims it.
      const ch = this.hub.channelOf(uri);
      if (this.registry.find(ch.id)?.claim.kind !== 'none') return ch;
      if (!ch.historyMissing) {
        this.registry.update(ch.id, { claim: { kind: 'client', clientId } });
        return ch;
      }
    }
    let pending = this.adopting.get(uri);
    if (!pending) {
      pending = adoptTerminal(this.hub, this.router, this.registry, uri, { kind: 'client', clientId }, (u) =>
        this.findAlias(u),
      ).finally(() => this.adopting.delete(uri));
      this.adopting.set(uri, pending);
    }
    await pending;
    return this.hub.channelOf(uri);
  }
}
