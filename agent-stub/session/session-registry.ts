import { PtyRelayError } from '../../provider/errors.js';
import type { StubSpawnParams } from '../../provider/wire/messages.js';
import { resolveLaunch } from './launch-resolver.js';
import { PtySession, type SessionLimits } from './pty-session.js';
import type { ScreenModelHost } from './screen-model.js';

/** Exited sessions stay listed (exit code, replay) this long so a reconnecting client learns of the exit. */
const EXITED_RETENTION_MS = 30 * 60 * 1000;
/** requestIds remembered for spawn idempotence. */
const REQUEST_ID_MEMORY = 10_000;

/** Optional observers of the registry (cold restore persists sessions and reserves restored ids). */
export interface RegistryHooks {
  spawned?(s: PtySession): void;
  /** The session is forgotten: shut down on purpose, or its exit retention ended. */
  removed?(s: PtySession): void;
  /** True when a new session must not take this id. */
  isReserved?(id: string): boolean;
}

/** Mints ids (`pty-1`, …), owns every session of the daemon, and makes spawns idempotent. */
export class SessionRegistry {
  private readonly sessions = new Map<string, PtySession>();
  private readonly byPaneKey = new Map<string, string>();
  private readonly byRequestId = new Map<string, string>();
  private nextId = 1;

  constructor(
    private readonly model: ScreenModelHost,
    private readonly limits: SessionLimits,
    private readonly scriptDir: string,
    private readonly onChange: () => void = () => {},
    private readonly hooks: RegistryHooks = {},
  ) {}

  /** Returns the existing session for a known paneKey (alive) or requestId, else spawns a new one. */
  spawn(p: StubSpawnParams): { session: PtySession; reused: boolean } {
    const known =
      (p.requestId !== undefined && this.sessions.get(this.byRequestId.get(p.requestId) ?? '')) ||
      (p.paneKey !== undefined && this.sessions.get(this.byPaneKey.get(p.paneKey) ?? ''));
    if (known && (known.alive || p.paneKey === undefined)) return { session: known, reused: true };
    const launch = resolveLaunch(p, this.scriptDir);
    let id = `pty-${this.nextId++}`;
    while (this.hooks.isReserved?.(id)) id = `pty-${this.nextId++}`;
    let session: PtySession;
    try {
      session = new PtySession(id, launch, this.limits, this.model);
    } catch (err) {
      throw new PtyRelayError('SPAWN_FAILED', `spawn of ${launch.file} failed: ${(err as Error).message}`);
    }
    this.sessions.set(id, session);
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
    this.hooks.removed?.(s);
    s.dispose();
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
