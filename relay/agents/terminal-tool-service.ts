import type {
  AgentReadOptions,
  AgentReadResult,
  AgentSendResult,
  IPtyProvider,
  PtyExitEvent,
  PtySpawnResult,
} from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import type { Logger } from '../core/log.js';
import { AgentOwner } from './agent-owner.js';
import { typedText } from './typed-text.js';

/** How long an owner's terminals outlive it (a reconnecting agent finds them): 10 minutes. */
export const DEFAULT_OWNER_GRACE_MS = 10 * 60 * 1000;
/** A send without its own timeout waits this long at most. */
export const DEFAULT_SEND_TIMEOUT_MS = 30_000;
/** Size of an agent terminal unless asked otherwise: wide enough that most output does not wrap. */
const DEFAULT_COLS = 160;
const DEFAULT_ROWS = 48;

/** Where the service gets a provider for a host (the relay's HostRouter fits). */
export interface AgentHosts {
  hosts(): string[];
  providerFor(host: string): IPtyProvider;
}

export interface TerminalToolServiceOptions {
  hosts: AgentHosts;
  ownerGraceMs?: number;
  defaultTimeoutMs?: number;
  log?: Logger;
  /** Told when a terminal is published or removed (e.g. to show it in the relay's catalog). */
  onPublished?: (t: AgentTerminalInfo, owner: AgentOwner, spawn: PtySpawnResult) => void;
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

  constructor(private readonly opts: TerminalToolServiceOptions) {
    this.ownerGraceMs = opts.ownerGraceMs ?? DEFAULT_OWNER_GRACE_MS;
    this.defaultTimeoutMs = opts.defaultTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS;
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
    owner.startGrace(this.ownerGraceMs, () => {
      this.owners.delete(owner.key);
      void this.closeAll(owner);
    });
  }

  hosts(): string[] {
    return this.opts.hosts.hosts();
  }

  async open(owner: AgentOwner, host: string, o: AgentOpenOptions = {}): Promise<AgentTerminalInfo> {
    this.checkOwner(owner);
    const provider = this.opts.hosts.providerFor(host);
    if (!provider.agentSend || !provider.agentRead) {
      throw new PtyRelayError('INVALID_ARGUMENT', `host ${host} does not support agent terminals`, { host });
    }
    this.opts.beforeSpawn?.(host, owner);
    this.watchExits(provider);
    const r = await provider.spawn({
      host,
      cols: o.cols ?? DEFAULT_COLS,
      rows: o.rows ?? DEFAULT_ROWS,
      ...(o.cwd ? { cwd: o.cwd } : {}),
      ...(o.command ? { command: o.command, args: o.args ?? [] } : {}),
      ...(o.name ? { name: o.name } : {}),
      ...(o.env ? { env: o.env } : {}),
    });
    if (owner.gone || this.disposed) {
      // The owner ended while the spawn ran: nobody could reach this terminal, so it goes.
      await provider.shutdown(r.id, { immediate: true }).catch(() => {});
      throw new PtyRelayError('NOT_OWNER', 'the owner went away before the terminal was published');
    }
    const info: AgentTerminalInfo = {
      id: `term-${this.nextId++}`,
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

  /** Closes every terminal (the service is going away with its relay). */
  async dispose(): Promise<void> {
    this.disposed = true;
    for (const o of this.owners.values()) o.end();
    await Promise.allSettled([...this.terms.values()].map((t) => this.remove(t)));
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
  }

  /** The terminal `id` if `owner` is exactly its owner (NOT_FOUND, NOT_OWNER otherwise). */
  private owned(owner: AgentOwner, id: string): TerminalEntry {
    const t = this.terms.get(id);
    if (!t) throw new PtyRelayError('NOT_FOUND', `no agent terminal ${id}`, { id });
    if (t.owner !== owner) throw new PtyRelayError('NOT_OWNER', `${id} belongs to another agent`, { id });
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
