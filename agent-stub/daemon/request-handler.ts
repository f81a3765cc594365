import type * as z from 'zod/mini';
import type { PtyExitInfo, ScreenSnapshot } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import { DEFAULT_HISTORY_PAGE_BYTES } from '../../provider/wire/history-messages.js';
import type {
  StubAttachResult,
  StubHistoryPage,
  StubMethod,
  StubSpawnParams,
} from '../../provider/wire/messages.js';
import { parseMessage } from '../../provider/wire/parse-message.js';
import { stubParamsSchemas } from '../../provider/wire/stub-schemas.js';
import type { LspService } from '../lsp/lsp-service.js';
import type { AgentRequests } from '../readiness/agent-requests.js';
import type { ColdRestoreService } from '../restore/cold-restore.js';
import { childPids, foregroundProcess, readCwd } from '../session/proc-info.js';
import type { PtySession } from '../session/pty-session.js';
import type { SessionRegistry } from '../session/session-registry.js';

/** A snapshot may be overtaken by output that also falls out of the ring; retry this often. */
const SNAPSHOT_ATTEMPTS = 3;

export interface HandlerOutput {
  result: unknown;
  blob?: Uint8Array;
}

/**
 * Writes a reply at once. Attach uses it so that taking the replay from the ring, writing the
 * reply and adding the live sink happen in one synchronous step: output emitted in between
 * (a resumed PTY flushes on the next tick, which can run between promise callbacks) would
 * otherwise be neither in the replay nor in the live stream.
 */
export type ReplyNow = (out: HandlerOutput) => void;

/** Returned by a handler that already replied through ReplyNow. */
export const REPLIED: HandlerOutput = Object.freeze({ result: undefined });

/** What the handler does to the connection a request came on (StubConnection, stub-connection.ts). */
export interface HandlerConnection {
  readonly attached: ReadonlySet<PtySession>;
  attach(s: PtySession, fromSeq: number, catchUp?: boolean): void;
  detach(s: PtySession, deliberate?: boolean): void;
  exit(s: PtySession, info: PtyExitInfo, seq: number): void;
  setBackground(s: PtySession): void;
  setForeground(s: PtySession, fromSeq: number, catchUp?: boolean): void;
  isBackground(s: PtySession): boolean;
  sendData(s: PtySession, seq: number, data: Uint8Array): void;
  sendBackground(s: PtySession, event: Record<string, unknown>): void;
}

export interface DaemonControl {
  info(): {
    pid: number;
    buildId: string;
    protocol: number;
    sessions: number;
    connections: number;
    startedAt: number;
  };
  shutdown(): void;
}

/** The params of `method`, checked by its schema (INVALID_ARGUMENT naming the field otherwise). */
function check<S extends z.ZodMiniType>(schema: S, raw: unknown, method: string): z.output<S> {
  return parseMessage(schema, raw, method, 'INVALID_ARGUMENT');
}

function isStubMethod(m: string): m is StubMethod {
  return Object.hasOwn(stubParamsSchemas, m);
}

function spawnParams(raw: unknown): StubSpawnParams {
  const p = check(stubParamsSchemas.spawn, raw, 'spawn');
  return { ...p, cols: p.cols ?? 80, rows: p.rows ?? 24 };
}

/**
 * A page of `s`'s history from `fromSeq` (or the oldest seq held, if that is later). A segment
 * dropped while the page is read moves the start: the read is tried again from the new start.
 */
async function readHistoryPage(s: PtySession, fromSeq: number, maxBytes?: number): Promise<HandlerOutput> {
  const size = maxBytes ?? DEFAULT_HISTORY_PAGE_BYTES;
  for (let attempt = 0; attempt < SNAPSHOT_ATTEMPTS; attempt++) {
    const head = s.history.head;
    const from = Math.min(head, Math.max(fromSeq, s.history.start));
    const data = await s.history.read(from, Math.min(head, from + size));
    if (!data) continue;
    const result: StubHistoryPage = {
      fromSeq: from,
      bytes: data.length,
      startSeq: s.history.start,
      headSeq: head,
    };
    return { result, blob: data };
  }
  throw new PtyRelayError('TIMEOUT', `${s.id}'s history moved on faster than it could be read`);
}

/** Gate reason while a snapshot is retried: the program waits so its output cannot outrun the ring. */
const SNAPSHOT_HOLD = 'snapshot';

/**
 * Takes snapshots until `use` accepts one (false: the ring no longer holds its seq) and says
 * whether one was. A snapshot is taken while the program runs; when output outran the ring before
 * it came back (a flood whose model backlog takes long to parse), the next attempts hold the PTY,
 * so they cannot miss: a flood never makes an attach or a foreground switch fail.
 */
async function useSnapshot(s: PtySession, use: (snapshot: ScreenSnapshot) => boolean): Promise<boolean> {
  try {
    for (let attempt = 0; attempt < SNAPSHOT_ATTEMPTS; attempt++) {
      if (attempt > 0) s.gate.hold(SNAPSHOT_HOLD);
      if (use(await s.snapshot())) return true;
    }
    return false;
  } finally {
    s.gate.release(SNAPSHOT_HOLD);
  }
}

/** Executes stub-link requests against the registry. One instance per daemon. */
export class StubRequestHandler {
  constructor(
    private readonly registry: SessionRegistry,
    private readonly control: DaemonControl,
    private readonly agent?: AgentRequests,
    /** Reports terminals lost with an earlier daemon (cold restore); absent when persistence is off. */
    private readonly coldRestore?: ColdRestoreService,
    /** Code navigation (docs/lsp.md); absent, the `lsp*` requests are refused. */
    private readonly lsp?: LspService,
  ) {}

  write(id: string, data: Uint8Array): void {
    this.registry.get(id).write(data);
  }

  find(id: string): PtySession | undefined {
    return this.registry.find(id);
  }

  async handle(
    conn: HandlerConnection,
    method: string,
    raw: unknown,
    reply: ReplyNow,
  ): Promise<HandlerOutput> {
    if (!isStubMethod(method)) throw new PtyRelayError('INVALID_ARGUMENT', `unknown method ${method}`);
    switch (method) {
      case 'spawn': {
        const { session, reused } = this.registry.spawn(spawnParams(raw));
        return this.attach(conn, session, 0, reply, { reused });
      }
      case 'attach':
        return this.attachRequest(conn, check(stubParamsSchemas[method], raw, method), reply);
      case 'detach':
        conn.detach(this.registry.get(check(stubParamsSchemas[method], raw, method).id));
        return { result: {} };
      case 'resize': {
        const p = check(stubParamsSchemas[method], raw, method);
        this.registry.get(p.id).resize(p.cols, p.rows);
        return { result: {} };
      }
      case 'shutdown':
        return this.shutdownRequest(check(stubParamsSchemas[method], raw, method));
      case 'signal': {
        const p = check(stubParamsSchemas[method], raw, method);
        await this.registry.get(p.id).signal(p.signal);
        return { result: {} };
      }
      case 'getCwd':
      case 'getForegroundProcess':
      case 'hasChildProcesses':
        return {
          result: processFact(method, this.registry.get(check(stubParamsSchemas[method], raw, method).id)),
        };
      case 'probe': {
        const p = check(stubParamsSchemas[method], raw, method);
        return { result: { alive: this.registry.find(p.id)?.alive ?? false } };
      }
      case 'snapshot': {
        const p = check(stubParamsSchemas[method], raw, method);
        return { result: await this.registry.get(p.id).snapshot(p.scrollbackRows) };
      }
      case 'clear':
      case 'pause':
      case 'resume':
        return this.modelRequest(method, this.registry.get(check(stubParamsSchemas[method], raw, method).id));
      case 'setBackgrounded': {
        const p = check(stubParamsSchemas[method], raw, method);
        return this.setBackgrounded(conn, this.registry.get(p.id), p.background, reply);
      }
      case 'agentSend':
      case 'agentRead':
      case 'commands':
        return this.agentRequest(method, raw);
      case 'readHistory': {
        const q = check(stubParamsSchemas[method], raw, method);
        return readHistoryPage(this.registry.get(q.id), q.fromSeq ?? 0, q.maxBytes);
      }
      case 'list':
        check(stubParamsSchemas[method], raw, method);
        return { result: { sessions: this.sessions() } };
      case 'daemonInfo':
        return { result: this.control.info() };
      case 'daemonShutdown':
        setImmediate(() => this.control.shutdown());
        return { result: {} };
      case 'agentSeen':
        return { result: this.agentSeen(check(stubParamsSchemas[method], raw, method)) };
      case 'claim':
        return { result: this.claim(check(stubParamsSchemas[method], raw, method)) };
      case 'lspQuery':
      case 'lspCancel':
      case 'lspRoot':
        return { result: await this.lspRequest(method, raw) };
    }
  }

  /** Clears a session's screen model, or pauses or resumes its PTY explicitly. */
  private modelRequest(method: 'clear' | 'pause' | 'resume', s: PtySession): HandlerOutput {
    if (method === 'clear') s.clearModel();
    else if (method === 'pause') s.gate.hold('explicit');
    else s.gate.release('explicit');
    return { result: {} };
  }

  /** A code-navigation query, its cancel, or the root lookup (LspService). */
  private async lspRequest(method: 'lspQuery' | 'lspCancel' | 'lspRoot', raw: unknown): Promise<unknown> {
    if (!this.lsp) throw new PtyRelayError('LSP_UNSUPPORTED', `${method} is not served by this daemon`);
    if (method === 'lspQuery') return this.lsp.query(check(stubParamsSchemas.lspQuery, raw, method));
    if (method === 'lspCancel')
      return this.lsp.cancel(check(stubParamsSchemas.lspCancel, raw, method).queryId);
    return this.lsp.root(check(stubParamsSchemas.lspRoot, raw, method).filePath);
  }

  /** Every session, live and cold-restored (`list`). */
  private sessions() {
    return [...this.registry.list().map(describe), ...(this.coldRestore?.listEntries() ?? [])];
  }

  /** The owners of these agent terminals were connected at `seenAt` (kept when newer). */
  /** Records a terminal's owner (only if it has none, with `ifUnowned`); answers the owner now. */
  private claim(q: { id: string; owner: string; ifUnowned?: boolean }): { owner: string } {
    const s = this.registry.get(q.id);
    if (q.ifUnowned !== true || s.owner === undefined) s.owner = q.owner;
    return { owner: s.owner };
  }

  private agentSeen(q: { ids: string[]; seenAt: number }): { updated: number } {
    let updated = 0;
    for (const id of q.ids) {
      const s = this.registry.find(id);
      if (s?.agent && q.seenAt > s.agent.seenAt) {
        s.agent.seenAt = q.seenAt;
        updated++;
      }
    }
    return { updated };
  }

  private async attachRequest(
    conn: HandlerConnection,
    p: z.output<(typeof stubParamsSchemas)['attach']>,
    reply: ReplyNow,
  ): Promise<HandlerOutput> {
    const restored = await this.restoredAttach(p.id, p.expectedIncarnationId);
    if (restored) return { result: restored };
    const s = this.registry.get(p.id);
    const expected = p.expectedIncarnationId;
    if (typeof expected === 'string' && expected !== s.incarnationId) {
      throw new PtyRelayError(
        'INCARNATION_MISMATCH',
        `${s.id} runs incarnation ${s.incarnationId}, not ${expected}`,
        {
          id: s.id,
          incarnationId: s.incarnationId,
        },
      );
    }
    return this.attach(conn, s, p.fromSeq, reply);
  }

  /** Ends a session; a terminal only a cold-restore record still knows is dismissed instead. */
  private async shutdownRequest(p: z.output<(typeof stubParamsSchemas)['shutdown']>): Promise<HandlerOutput> {
    if (!this.registry.find(p.id) && (await this.coldRestore?.dismiss(p.id))) {
      return { result: {} };
    }
    const s = this.registry.get(p.id);
    await s.shutdown({ immediate: p.immediate === true, deadlineMs: p.deadlineMs });
    this.registry.remove(s.id);
    return { result: {} };
  }

  /** An agent send, read or command listing (AgentRequests), when this daemon serves them. */
  private async agentRequest(
    method: 'agentSend' | 'agentRead' | 'commands',
    raw: unknown,
  ): Promise<HandlerOutput> {
    if (!this.agent) throw new PtyRelayError('INVALID_ARGUMENT', `${method} is not enabled in this daemon`);
    if (method === 'agentSend') {
      const p = check(stubParamsSchemas.agentSend, raw, method);
      return { result: await this.agent.send(this.registry.get(p.id), p) };
    }
    if (method === 'commands') {
      const p = check(stubParamsSchemas.commands, raw, method);
      return { result: this.agent.commands(this.registry.get(p.id), p) };
    }
    const p = check(stubParamsSchemas.agentRead, raw, method);
    return { result: await this.agent.read(this.registry.get(p.id), p) };
  }

  /** A terminal that no live session but a cold-restore record answers for (sessionExpired). */
  private restoredAttach(id: string, expected: unknown) {
    return this.registry.find(id) ? undefined : this.coldRestore?.attachResult(id, expected);
  }

  /**
   * Background: keep-tail thinning for this connection. Foreground: a snapshot at S, then the
   * bytes [S, head) and live output, written in one synchronous step (see ReplyNow).
   */
  private async setBackgrounded(
    conn: HandlerConnection,
    s: PtySession,
    background: boolean,
    reply: ReplyNow,
  ): Promise<HandlerOutput> {
    if (!conn.attached.has(s))
      throw new PtyRelayError('INVALID_ARGUMENT', `${s.id} is not attached on this link`);
    if (background) {
      conn.setBackground(s);
      return { result: {} };
    }
    if (!conn.isBackground(s)) return { result: {} };
    // The bytes after the snapshot must stay in the ring until they are sent.
    s.widenRing();
    try {
      return await this.foreground(conn, s, reply);
    } finally {
      s.refreshRingLimit();
    }
  }

  private async foreground(conn: HandlerConnection, s: PtySession, reply: ReplyNow): Promise<HandlerOutput> {
    const done = await useSnapshot(s, (snapshot) => {
      const replay = s.ring.slice(snapshot.seq);
      // Bytes the RAM tail no longer holds come from the log after the marker.
      if (!replay && !s.history.has(snapshot.seq)) return false;
      conn.sendBackground(s, { type: 'backgroundMarker', background: false, seq: snapshot.seq, snapshot });
      if (replay && replay.length > 0) conn.sendData(s, snapshot.seq, replay);
      conn.setForeground(s, snapshot.seq, !replay);
      reply({ result: {} });
      return true;
    });
    if (done) return REPLIED;
    throw new PtyRelayError('TIMEOUT', `${s.id} produces output faster than it can be snapshotted`);
  }

  /**
   * Exact replay from `fromSeq` when the history holds it, else a snapshot at S plus the bytes
   * [S, head). Bytes in the RAM tail travel in the reply; older ones are read from the log and
   * follow it as ordinary output (the reply's `seq` is where that stream continues).
   */
  private async attach(
    conn: HandlerConnection,
    s: PtySession,
    fromSeq: number | undefined,
    reply: ReplyNow,
    extra: Partial<StubAttachResult> = {},
  ): Promise<HandlerOutput> {
    conn.detach(s);
    const commit = (
      from: number,
      generation: 'continued' | 'reset',
      snapshot?: StubAttachResult['snapshot'],
    ) => {
      const inRing = s.ring.slice(from);
      if (!inRing && !s.history.has(from)) return false;
      const catchUp = !inRing;
      const replay = inRing ?? Buffer.alloc(0);
      const result: StubAttachResult = {
        id: s.id,
        pid: s.pid,
        incarnationId: s.incarnationId,
        title: s.title,
        cwd: s.cwd,
        ...(s.alias !== undefined ? { alias: s.alias } : {}),
        ...(s.owner !== undefined ? { owner: s.owner } : {}),
        // After a catch-up the exit follows the replayed bytes as an exit event.
        ...(s.exited && !catchUp ? { exited: s.exited } : {}),
        cols: s.cols,
        rows: s.rows,
        seq: from + replay.length,
        historyStartSeq: s.history.start,
        generation,
        ...(snapshot ? { snapshot } : {}),
        replayBytes: replay.length,
        replayFromSeq: from,
        ...extra,
      };
      reply({ result, blob: replay });
      conn.attach(s, from, catchUp);
      if (catchUp && s.exited) conn.exit(s, s.exited, s.history.head);
      return true;
    };
    if (fromSeq !== undefined && s.history.has(fromSeq) && commit(fromSeq, 'continued')) return REPLIED;
    s.widenRing();
    try {
      if (await useSnapshot(s, (snapshot) => commit(snapshot.seq, 'reset', snapshot))) return REPLIED;
    } finally {
      s.refreshRingLimit();
    }
    throw new PtyRelayError('TIMEOUT', `${s.id} produces output faster than it can be snapshotted`);
  }
}

/** What `/proc` says about a session's processes: its cwd, foreground process or children. */
function processFact(method: 'getCwd' | 'getForegroundProcess' | 'hasChildProcesses', s: PtySession) {
  switch (method) {
    case 'getCwd': {
      const fg = s.alive ? foregroundProcess(s.pid) : undefined;
      return { cwd: (fg && readCwd(fg.pid)) ?? (s.alive ? readCwd(s.pid) : undefined) ?? s.cwd };
    }
    case 'getForegroundProcess':
      return { process: s.alive ? foregroundProcess(s.pid) : undefined };
    case 'hasChildProcesses':
      return { value: s.alive && childPids(s.pid).length > 0 };
  }
}

function describe(s: PtySession) {
  return {
    id: s.id,
    pid: s.pid,
    incarnationId: s.incarnationId,
    title: s.title,
    cwd: s.cwd,
    cols: s.cols,
    rows: s.rows,
    name: s.name,
    ...(s.alias !== undefined ? { alias: s.alias } : {}),
    ...(s.exited ? { exited: s.exited } : {}),
    ...(s.lastCommand ? { lastCommand: { ...s.lastCommand } } : {}),
    ...(s.agent ? { agent: { ...s.agent } } : {}),
    ...(s.owner !== undefined ? { owner: s.owner } : {}),
  };
}
