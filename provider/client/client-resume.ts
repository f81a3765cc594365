/**
 * RelayClient's side of reconnecting: the handshake every new socket runs (`ptyrelay/hello`,
 * then re-attaching every session the client delivered from its last delivered seq, fenced by
 * its incarnation, then resending pending input), the retry of a re-attach that failed for a
 * passing reason, and the sessions the client asked to keep in the background (re-attached
 * hidden). A session the relay no longer knows, or whose incarnation changed, expires instead.
 */
import type { PtyRelayError } from '../errors.js';
import type { ClientInputQueue } from './client-input-queue.js';
import type { ClientStreams, StreamTrack } from './client-streams.js';
import type { RelayLink } from './relay-link.js';
import { type HelloResult, RelayMethod, type WireAttachResult } from './relay-protocol.js';

const REATTACH_WAIT_MS = 5000;
const REATTACH_RETRY_MS = 2000;

export interface ClientResumeOptions {
  link: RelayLink;
  streams: ClientStreams;
  input: ClientInputQueue;
  clientId: string;
  instanceId: string;
  manualAck: boolean;
  /** How long a reconnect waits for sessions to re-attach before resending input (default 5 s). */
  reattachWaitMs?: number;
}

export class ClientResume {
  /** Relay process id from the last hello (changes when the relay restarted). */
  serverInstanceId: string | undefined;
  private readonly retryTimers = new Map<string, NodeJS.Timeout>();
  /** Terminals this client asked to keep in the background (re-attached hidden after a reconnect). */
  private readonly hidden = new Set<string>();
  private readonly resyncing = new Set<string>();
  private disposed = false;

  constructor(private readonly o: ClientResumeOptions) {}

  /** Re-attaches after a reconnect keep the wish (the relay counts each viewer's). */
  setHidden(id: string, background: boolean): void {
    if (background) this.hidden.add(id);
    else this.hidden.delete(id);
  }

  /**
   * The relay sent `id`'s output with a hole: re-attach it from the last delivered seq (one
   * re-attach at a time per session; what arrives meanwhile is held by the attach).
   */
  resync(id: string): void {
    const t = this.o.streams.get(id);
    if (this.disposed || !t || this.resyncing.has(id) || !this.o.link.connected) return;
    this.resyncing.add(id);
    void this.reattach(t, false).finally(() => this.resyncing.delete(id));
  }

  /** A session this client stopped following (detached, shut down). */
  forget(id: string): void {
    this.hidden.delete(id);
  }

  /** Every new socket: hello, re-attach delivered sessions, then resend pending input. */
  async handshake(): Promise<void> {
    const hello = await this.o.link.callNow<HelloResult>(RelayMethod.hello, {
      clientId: this.o.clientId,
      instanceId: this.o.instanceId,
    });
    this.serverInstanceId = hello.serverInstanceId;
    const tracks = this.o.streams.all();
    if (tracks.length > 0) {
      // Input goes after the re-attach: a restarted relay learns the claims from it.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled(tracks.map((t) => this.reattach(t, true))),
        new Promise<void>((r) => {
          timer = setTimeout(r, this.o.reattachWaitMs ?? REATTACH_WAIT_MS);
        }),
      ]);
      clearTimeout(timer);
    }
    this.o.input.connected(hello.serverInstanceId, hello.input === 'fresh', hello.inputOrigin === true);
  }

  /** Re-attaches one session from its last delivered seq, fenced by its incarnation. */
  private async reattach(t: StreamTrack, inHandshake: boolean): Promise<void> {
    const { link, streams } = this.o;
    const buf = streams.beginAttach(t.id);
    try {
      const params = {
        id: t.id,
        fromSeq: t.seq,
        expectedIncarnationId: t.incarnationId,
        ...(this.o.manualAck ? { manualAck: true } : {}),
        ...(this.hidden.has(t.id) ? { background: true } : {}),
      };
      const w = inHandshake
        ? await link.callNow<WireAttachResult>(RelayMethod.attach, params)
        : await link.call<WireAttachResult>(RelayMethod.attach, params);
      streams.settleReattach(w, buf);
    } catch (err) {
      const code = (err as PtyRelayError).code;
      if (code === 'NOT_FOUND' || code === 'INCARNATION_MISMATCH') streams.expire(t.id);
      else if (code !== 'LINK_CLOSED' && code !== 'DISPOSED') this.retryReattach(t.id);
    } finally {
      streams.endAttach(t.id, buf);
    }
  }

  /** A re-attach failed for a passing reason (e.g. the relay's host link is down): try again later. */
  private retryReattach(id: string): void {
    if (this.disposed || this.retryTimers.has(id)) return;
    const timer = setTimeout(() => {
      this.retryTimers.delete(id);
      const t = this.o.streams.get(id);
      if (t && this.o.link.connected) void this.reattach(t, false);
    }, REATTACH_RETRY_MS);
    this.retryTimers.set(id, timer);
  }

  /** No more retries; pending ones are cancelled. */
  dispose(): void {
    this.disposed = true;
    for (const t of this.retryTimers.values()) clearTimeout(t);
  }
}
