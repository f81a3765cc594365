import { PtyRelayError } from '../../provider/errors.js';
import type { StubSpawnParams } from '../../provider/wire/messages.js';
import type { HistoryStore } from '../history/history-store.js';
import { resolveLaunch } from './launch-resolver.js';
import { PtySession, type SessionLimits } from './pty-session.js';
import type { ScreenModelHost } from './screen-model.js';

/** Exited sessions stay listed (exit code, replay) this long so a reconnecting client learns of the exit. */
const EXITED_RETENTION_MS = 30 * 60 * 1000;
/** requestIds remembered for spawn idempotence. */
const REQUEST_ID_MEMORY = 10_000;
/**
 * Fresh ids tried when a minted one names a session of this daemon or a restored one (a wiped
 * counter, a random repeat).
 */
const MINT_ATTEMPTS = 100;

/** Ids of one daemon only (`pty-1`, …): for tests that run a registry without a state dir. */
export function sequentialIds(): () => string {
  let n = 1;
  return () => `pty-${n++}`;
}

/** Optional observers of the registry (cold restore persists sessions and reserves restored ids). */
export interface RegistryHooks {
  spawned?(s: PtySession): void;
  /** The session is forgotten: shut down on purpose, or its exit retention ended. */
  removed?(s: PtySession): void;
  /** True when a new session must not take this id. */
  isReserved?(id: string): boolean;
  /** The id of a terminal outside the registry (a cold-restored one) that holds this alias. */
  aliasHolder?(alias: string): string | undefined;
}

/**
 * Owns every session of the daemon and makes spawns idempotent. Ids come from `mintId` (the daemon's
 * TerminalIdAllocator: unique on the host across daemons, builds and restarts); an id that names a
 * session of this daemon or one the hooks reserve (a cold-restored terminal) is skipped.
 */
export class SessionRegistry {
  private readonly sessions = new Map<string, PtySession>();
  private readonly byPaneKey = new Map<string, string>();
  private readonly byRequestId = new Map<string, string>();
  /** Client-chosen session names (AHP channel URIs): alias → id, while the session is listed. */
  private readonly byAlias = new Map<string, string>();

  constructor(
    private readonly model: ScreenModelHost,
    private readonly limits: SessionLimits,
    private readonly scriptDir: string,
    private readonly onChange: () => void = () => {},
    private readonly mintId: () => string = sequentialIds(),
    /** Output logs on disk (none: every session keeps its RAM ring only). */
    private readonly history?: HistoryStore,
    private readonly hooks: RegistryHooks = {},
  ) {}

  /**
   * Returns the existing session for a known paneKey (alive) or requestId, else spawns a new one.
   * An alias still held by a listed session (running or exited, until removed) is refused.
   */
  spawn(p: StubSpawnParams): { session: PtySession; reused: boolean } {
    const known =
      (p.requestId !== undefined && this.sessions.get(this.byRequestId.get(p.requestId) ?? '')) ||
      (p.paneKey !== undefined && this.sessions.get(this.byPaneKey.get(p.paneKey) ?? ''));
    if (known && (known.alive || p.paneKey === undefined)) return { session: known, reused: true };
    const holder =
      p.alias === undefined ? undefined : (this.byAlias.get(p.alias) ?? this.hooks.aliasHolder?.(p.alias));
    if (holder !== undefined) {
      throw new PtyRelayError('ALREADY_EXISTS', `${p.alias} is taken by ${holder}`, {
        alias: p.alias,
        id: holder,
      });
    }
    const launch = resolveLaunch(p, this.scriptDir);
    const id = this.freshId();
    let session: PtySession;
    const log = this.history?.open(id);
    try {
      session = new PtySession(id, launch, this.limits, this.model, log);
    } catch (err) {
      if (log) this.history?.close(log);
      throw new PtyRelayError('SPAWN_FAILED', `spawn of ${launch.file} failed: ${(err as Error).message}`);
    }
    this.sessions.set(id, session);
    if (p.alias !== undefined) {
      session.alias = p.alias;
      this.byAlias.set(p.alias, id);
    }
    if (p.agent !== undefined) session.agent = { ...p.agent };
    if (p.owner !== undefined) session.owner = p.owner;
    this.hooks.spawned?.(session);
    if (p.paneKey !== undefined) this.byPaneKey.set(p.paneKey, id);
    if (p.requestId !== undefined) {
      this.byRequestId.set(p.requestId, id);
      if (this.byRequestId.size > REQUEST_ID_MEMORY) {
        this.byRequestId.delete(this.byRequestId.keys().next().value as string);
      }
    }
    this.onChange();
    return { session, reused: false };
  }

  private freshId(): string {
    for (let i = 0; i < MINT_ATTEMPTS; i++) {
      const id = this.mintId();
      if (!this.sessions.has(id) && !this.hooks.isReserved?.(id)) return id;
    }
    throw new PtyRelayError('SPAWN_FAILED', 'no unused terminal id could be minted');
  }

  get(id: string): PtySession {
    const s = this.sessions.get(id);
    if (!s) throw new PtyRelayError('NOT_FOUND', `no terminal ${id}`, { id });
    return s;
  }

  find(id: string): PtySession | undefined {
    return this.sessions.get(id);
  }

  list(): PtySession[] {
    return [...this.sessions.values()];
  }

  get aliveCount(): number {
    let n = 0;
    for (const s of this.sessions.values()) if (s.alive) n++;
    return n;
  }

  remove(id: string): void {
    const s = this.sessions.get(id);
    if (!s) return;
    this.sessions.delete(id);
    for (const [k, v] of this.byPaneKey) if (v === id) this.byPaneKey.delete(k);
    if (s.alias !== undefined) this.byAlias.delete(s.alias);
    this.hooks.removed?.(s);
    s.dispose();
    const log = s.history.detachLog();
    if (log) this.history?.close(log);
    this.onChange();
  }

  /** Forget exited sessions older than the retention window. */
  sweep(now = Date.now()): void {
    for (const s of this.sessions.values()) {
      if (s.exitedAt !== undefined && now - s.exitedAt > EXITED_RETENTION_MS) this.remove(s.id);
    }
  }

  async shutdownAll(): Promise<void> {
    await Promise.all(this.list().map((s) => s.shutdown({ immediate: true })));
  }
}
