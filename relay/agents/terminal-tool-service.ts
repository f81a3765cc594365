import type { HostUnavailable } from '../../provider/client/relay-protocol.js';
import type {
  AgentCommandsOptions,
  AgentCommandsResult,
  AgentReadOptions,
  AgentReadResult,
  AgentSendResult,
  IPtyProvider,
  LinkState,
  LinkStateEvent,
  PtyExitEvent,
  PtyProcessInfo,
  PtySpawnResult,
} from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import { eachProvider } from '../core/each-provider.js';
import { unavailableByState } from '../core/host-listing.js';
import type { Logger } from '../core/log.js';
import type { HostCodeNavigation } from '../core/rpc-types.js';
import { AgentOwner } from './agent-owner.js';
import { OwnerSeenMarks } from './owner-seen-marks.js';
import { typedText } from './typed-text.js';

/** How long an owner's terminals outlive it (a reconnecting agent finds them): 10 minutes. */
export const DEFAULT_OWNER_GRACE_MS = 10 * 60 * 1000;
/** A send without its own timeout waits this long at most. */
export const DEFAULT_SEND_TIMEOUT_MS = 30_000;
/** Size of an agent terminal unless asked otherwise: wide enough that most output does not wrap. */
const DEFAULT_COLS = 160;
const DEFAULT_ROWS = 48;

/**
 * Agent terminals do not page: a pager waits for keys an agent would have to send page by page,
 * where `cat` gives the whole output to the send. Set unless the caller sets any of these.
 */
export const NO_PAGER_ENV: Readonly<Record<string, string>> = {
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  MANPAGER: 'cat',
  SYSTEMD_PAGER: '',
};

/** `env` with {@link NO_PAGER_ENV} under it, or `env` alone when it sets any pager variable. */
export function agentEnv(env: Record<string, string> = {}): Record<string, string> {
  const ownPager = Object.keys(NO_PAGER_ENV).some((k) => Object.hasOwn(env, k));
  return ownPager ? env : { ...NO_PAGER_ENV, ...env };
}

export { OWNER_SEEN_REFRESH_MS } from './owner-seen-marks.js';

/**
 * Where the service gets a provider for a host (the relay's HostRouter fits). With `providers`
 * and `listHost` it also finds the agent terminals hosts hold whenever a link comes up (a relay
 * restarted under them), owners and ids as their daemons kept them.
 */
export interface AgentHosts {
  hosts(): string[];
  providerFor(host: string): IPtyProvider;
  providers?(): IPtyProvider[];
  onProviderAdded?(listener: (p: IPtyProvider) => void): () => void;
  listHost?(host: string): Promise<PtyProcessInfo[]>;
  linkState?(host: string): LinkState;
  /** Code navigation on the hosts that enable it (the MCP `lsp` tool). */
  readonly lsp?: HostCodeNavigation;
}

/** What the catalog shows of a terminal when it is published. */
export interface AgentTerminalFacts {
  title?: string;
  cwd?: string;
  cols: number;
  rows: number;
  incarnationId: string;
}

export interface TerminalToolServiceOptions {
  hosts: AgentHosts;
  ownerGraceMs?: number;
  defaultTimeoutMs?: number;
  log?: Logger;
  /** Told when a terminal is published or removed (e.g. to show it in the relay's catalog). */
  onPublished?: (t: AgentTerminalInfo, owner: AgentOwner, facts: AgentTerminalFacts) => void;
  onRemoved?: (t: AgentTerminalInfo) => void;
  /** Throws to refuse a terminal before it is spawned (the relay's terminal limits). */
  beforeSpawn?: (host: string, owner: AgentOwner) => void;
}

export interface AgentOpenOptions {
  cwd?: string;
  command?: string;
  args?: string[];
  name?: string;
  cols?: number;
  rows?: number;
  env?: Record<string, string>;
}

export interface AgentTerminalInfo {
  /** The service's id (`term-1`, …). */
  id: string;
  host: string;
  /** The provider's id (`<host>/pty-3`). */
  providerId: string;
  name?: string;
  createdAt: number;
  /** Set once the terminal's top process exited. */
  exitCode?: number;
  /** A send is waiting on this terminal. */
  sending: boolean;
}

interface TerminalEntry {
  info: AgentTerminalInfo;
  owner: AgentOwner;
  provider: IPtyProvider;
}

/**
 * Agent terminals on any host (DSH's ctx.terminals): the service owns identity — ids it mints,
 * publication only after the spawn succeeded, exact-owner checks on every call, cleanup bound to
 * the owner's life (with a grace period) — while the stub owns the terminal's state and decides
 * when a send ends. One send at a time per terminal; read and signal never wait behind it.
 */
export class TerminalToolService {
  private readonly terms = new Map<string, TerminalEntry>();
  private readonly owners = new Map<string, AgentOwner>();
  private readonly watched = new WeakSet<IPtyProvider>();
  private nextId = 1;
  private disposed = false;
  readonly ownerGraceMs: number;
  readonly defaultTimeoutMs: number;

  private readonly seen: OwnerSeenMarks;
  private readonly offs: Array<() => void> = [];

  constructor(private readonly opts: TerminalToolServiceOptions) {
    this.ownerGraceMs = opts.ownerGraceMs ?? DEFAULT_OWNER_GRACE_MS;
    this.defaultTimeoutMs = opts.defaultTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS;
    this.seen = new OwnerSeenMarks(
      () =>
        [...this.terms.values()].map((t) => ({
          owner: t.owner,
          provider: t.provider,
          providerId: t.info.providerId,
          exited: t.info.exitCode !== undefined,
        })),
      opts.log,
    );
    this.watchHosts();
  }

  /** Adopts the agent terminals a host holds each time a link to it comes up. */
  private watchHosts(): void {
    const { hosts } = this.opts;
    const { providers, listHost } = hosts;
    if (!providers || !listHost) return;
    const watch = (p: IPtyProvider) => {
      const off = p.onLinkState?.((e: LinkStateEvent) => {
        if (e.state.state !== 'connected' || e.host.includes('#')) return;
        listHost.call(hosts, e.host).then(
          (list) => this.adopt(p, e.host, list),
          (err: Error) =>
            this.opts.log?.info({ host: e.host, err: err.message }, 'agent terminals not adopted'),
        );
      });
      if (off) this.offs.push(off);
    };
    this.offs.push(
      eachProvider(
        { providers: () => providers.call(hosts), onProviderAdded: hosts.onProviderAdded?.bind(hosts) },
        watch,
      ),
    );
  }

  /**
   * Takes over the agent terminals of `list` this service does not know (a relay restarted under
   * them), under the ids and owners their daemons kept. An owner that is not connected here gets
   * what is left of its grace, counted from when it was last seen connected to any relay.
   */
  adopt(provider: IPtyProvider, host: string, list: PtyProcessInfo[]): void {
    if (this.disposed) return;
    const known = new Set([...this.terms.values()].map((t) => t.info.providerId));
    for (const t of list) {
      if (!t.agent || known.has(t.id) || t.exited) continue;
      let owner = this.owners.get(t.agent.owner);
      if (!owner || owner.gone) {
        owner = new AgentOwner(t.agent.owner);
        this.owners.set(owner.key, owner);
        this.graceFrom(owner, t.agent.seenAt);
      }
      const n = /^term-(\d+)$/.exec(t.agent.id);
      const taken = this.terms.has(t.agent.id);
      const id = taken ? `term-${this.nextId++}` : t.agent.id;
      if (n && !taken) this.nextId = Math.max(this.nextId, Number(n[1]) + 1);
      const info: AgentTerminalInfo = {
        id,
        host,
        providerId: t.id,
        ...(t.name ? { name: t.name } : {}),
        createdAt: Date.now(),
        sending: false,
      };
      this.watchExits(provider);
      this.terms.set(id, { info, owner, provider });
      this.opts.log?.info({ id, providerId: t.id, owner: owner.key }, 'agent terminal adopted');
      this.opts.onPublished?.(info, owner, t);
    }
  }

  /** An owner not connected here: its grace runs from `seenAt` (never less than nothing). */
  private graceFrom(owner: AgentOwner, seenAt: number): void {
    const left = Math.max(0, seenAt + this.ownerGraceMs - Date.now());
    owner.startGrace(left, () => {
      if (this.owners.get(owner.key) === owner) this.owners.delete(owner.key);
      void this.closeAll(owner);
    });
  }

  /**
   * The owner for `key`: the same object while it lives or is within its grace period (a
   * reconnecting agent with the same key gets its terminals back), else a new one.
   */
  owner(key: string): AgentOwner {
    const known = this.owners.get(key);
    if (known && !known.gone) {
      known.revive();
      return known;
    }
    const o = new AgentOwner(key);
    this.owners.set(key, o);
    return o;
  }

  /** The owner went away: its terminals are closed after the grace period unless it comes back. */
  release(owner: AgentOwner): void {
    if (this.owners.get(owner.key) !== owner || owner.gone) return;
    this.seen.left(owner);
    owner.startGrace(this.ownerGraceMs, () => {
      this.owners.delete(owner.key);
      void this.closeAll(owner);
    });
  }

  hosts(): string[] {
    return this.opts.hosts.hosts();
  }

  /** Code navigation of the hosts, when the relay has it (the MCP `lsp` tool). */
  get lsp(): HostCodeNavigation | undefined {
    return this.opts.hosts.lsp;
  }

  /** The hosts whose link is down now, with the cause (never waits on a host). */
  unavailableHosts(): HostUnavailable[] {
    const { hosts } = this.opts;
    if (!hosts.linkState) return [];
    const linkState = hosts.linkState.bind(hosts);
    return hosts.hosts().flatMap((h) => unavailableByState(h, linkState(h)) ?? []);
  }

  async open(owner: AgentOwner, host: string, o: AgentOpenOptions = {}): Promise<AgentTerminalInfo> {
    this.checkOwner(owner);
    const provider = this.opts.hosts.providerFor(host);
    if (!provider.agentSend || !provider.agentRead) {
      throw new PtyRelayError('INVALID_ARGUMENT', `host ${host} does not support agent terminals`, { host });
    }
    this.opts.beforeSpawn?.(host, owner);
    this.watchExits(provider);
    const n = this.nextId++;
    const id = `term-${n}`;
    let r: PtySpawnResult;
    try {
      r = await provider.spawn({
        host,
        // Kept by the daemon: a relay started later knows whose terminal this is (adopt).
        agent: { owner: owner.key, id, seenAt: Date.now() },
        cols: o.cols ?? DEFAULT_COLS,
        rows: o.rows ?? DEFAULT_ROWS,
        ...(o.cwd ? { cwd: o.cwd } : {}),
        ...(o.command ? { command: o.command, args: o.args ?? [] } : {}),
        ...(o.name ? { name: o.name } : {}),
        env: agentEnv(o.env),
      });
    } catch (err) {
      // A terminal that was never published leaves no gap in the ids (unless another took the next).
      if (this.nextId === n + 1) this.nextId = n;
      throw err;
    }
    if (owner.gone || this.disposed) {
      // The owner ended while the spawn ran: nobody could reach this terminal, so it goes.
      await provider.shutdown(r.id, { immediate: true }).catch(() => {});
      throw new PtyRelayError('NOT_OWNER', 'the owner went away before the terminal was published');
    }
    const info: AgentTerminalInfo = {
      id,
      host,
      providerId: r.id,
      ...(o.name ? { name: o.name } : {}),
      createdAt: Date.now(),
      ...(r.exited ? { exitCode: r.exited.exitCode } : {}),
      sending: false,
    };
    this.terms.set(info.id, { info, owner, provider });
    this.opts.log?.info({ id: info.id, providerId: r.id, owner: owner.key }, 'agent terminal opened');
    this.opts.onPublished?.(info, owner, r);
    return { ...info };
  }

  /**
   * Types `text` (newlines as Enter, plus a final Enter unless `enter: false`) and waits for the
   * stub's end reason. Empty text types nothing and waits for the next end reason.
   */
  async send(
    owner: AgentOwner,
    id: string,
    text: string,
    o: { timeoutMs?: number; enter?: boolean; idleMs?: number } = {},
  ): Promise<AgentSendResult> {
    const t = this.owned(owner, id);
    if (t.info.sending) {
      throw new PtyRelayError(
        'SEND_IN_PROGRESS',
        `${id} already has a send in progress; wait for it or signal it`,
        {
          id,
        },
      );
    }
    t.info.sending = true;
    try {
      return await t.provider.agentSend!(t.info.providerId, typedText(text, o.enter !== false), {
        timeoutMs: o.timeoutMs ?? this.defaultTimeoutMs,
        ...(o.idleMs ? { idleMs: o.idleMs } : {}),
      });
    } finally {
      t.info.sending = false;
    }
  }

  async read(owner: AgentOwner, id: string, o: AgentReadOptions = {}): Promise<AgentReadResult> {
    const t = this.owned(owner, id);
    return t.provider.agentRead!(t.info.providerId, o);
  }

  /** The commands the terminal's shell ran, newest first (shell integration: bash, zsh). */
  async commands(owner: AgentOwner, id: string, o: AgentCommandsOptions = {}): Promise<AgentCommandsResult> {
    const t = this.owned(owner, id);
    if (!t.provider.commands)
      throw new PtyRelayError('INVALID_ARGUMENT', `host ${t.info.host} keeps no command records`, { id });
    return t.provider.commands(t.info.providerId, o);
  }

  /** A real signal to the foreground process group (default SIGINT: what Ctrl-C would do). */
  async signal(owner: AgentOwner, id: string, sig = 'SIGINT'): Promise<string> {
    const t = this.owned(owner, id);
    const up = sig.toUpperCase();
    const name = up.startsWith('SIG') ? up : `SIG${up}`;
    await t.provider.sendSignal(t.info.providerId, name);
    return name;
  }

  list(owner: AgentOwner): AgentTerminalInfo[] {
    this.checkOwner(owner);
    return [...this.terms.values()].filter((t) => t.owner === owner).map((t) => ({ ...t.info }));
  }

  async close(owner: AgentOwner, id: string): Promise<void> {
    const t = this.owned(owner, id);
    await this.remove(t);
  }

  /**
   * The service is going away with its relay. Its terminals keep running by default, with their
   * owners' last-seen time on their daemons, so the next relay adopts them (`adopt`); `close`
   * ends them instead (a process whose terminals nobody can reach again, e.g. `mcp --embedded`
   * without an agent name).
   */
  async dispose(opts: { close?: boolean } = {}): Promise<void> {
    if (opts.close) this.seen.dispose();
    else await this.seen.stop();
    this.disposed = true;
    for (const off of this.offs.splice(0)) off();
    for (const o of this.owners.values()) o.end();
    if (opts.close) await Promise.allSettled([...this.terms.values()].map((t) => this.remove(t)));
    this.terms.clear();
  }

  private async closeAll(owner: AgentOwner): Promise<void> {
    const mine = [...this.terms.values()].filter((t) => t.owner === owner);
    this.opts.log?.info(
      { owner: owner.key, terminals: mine.length },
      'agent owner gone; closing its terminals',
    );
    await Promise.allSettled(mine.map((t) => this.remove(t)));
  }

  private async remove(t: TerminalEntry): Promise<void> {
    if (this.terms.get(t.info.id) !== t) return;
    this.terms.delete(t.info.id);
    this.opts.onRemoved?.(t.info);
    try {
      await t.provider.shutdown(t.info.providerId);
    } catch (err) {
      // A terminal whose process or daemon is already gone has nothing left to end.
      if (!(err instanceof PtyRelayError && err.code === 'NOT_FOUND')) throw err;
    }
  }

  private checkOwner(owner: AgentOwner): void {
    if (owner.gone || this.owners.get(owner.key) !== owner) {
      throw new PtyRelayError('NOT_OWNER', `owner ${owner.key} is no longer registered`);
    }
    this.seen.touch(owner);
  }

  /** The terminal `id` if `owner` is exactly its owner (NOT_FOUND, NOT_OWNER otherwise). */
  private owned(owner: AgentOwner, id: string): TerminalEntry {
    const t = this.terms.get(id);
    if (!t) throw new PtyRelayError('NOT_FOUND', `no agent terminal ${id}`, { id });
    if (t.owner !== owner) throw new PtyRelayError('NOT_OWNER', `${id} belongs to another agent`, { id });
    this.seen.touch(owner);
    return t;
  }

  private watchExits(p: IPtyProvider): void {
    if (this.watched.has(p)) return;
    this.watched.add(p);
    p.onExit((e: PtyExitEvent) => {
      for (const t of this.terms.values()) if (t.info.providerId === e.id) t.info.exitCode = e.exitCode;
    });
  }
}
