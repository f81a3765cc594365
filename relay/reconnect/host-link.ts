import type { LinkState } from '../../provider/contract.js';
import { Emitter } from '../../provider/emitter.js';
import { PtyRelayError } from '../../provider/errors.js';
import type { Logger } from '../log.js';
import type { StubClient } from '../stub-link/stub-client.js';
import { LinkHealth, type LinkHealthOptions } from './link-health.js';
import { ReconnectLadder, type ReconnectLadderOptions } from './reconnect-ladder.js';

/** Health ticks: often enough to notice a dead link within a second of the deadline. */
const HEALTH_TICK_MS = 1000;

export interface HostLinkOptions {
  ladder?: ReconnectLadderOptions;
  health?: LinkHealthOptions;
  log?: Logger;
  /** Runs after every successful (re)connect, before waiters get the client (reattach, resend input). */
  onConnected: (client: StubClient, reconnect: boolean) => Promise<void>;
  onDisconnected?: () => void;
}

/**
 * Lifecycle of one host's stub link: connect on first use, watch health, and on a drop climb the
 * reconnect ladder until the link is back (or the give-up count is reached). Callers always get
 * a connected client or wait for one.
 */
export class HostLink {
  readonly states = new Emitter<LinkState>();
  private current: LinkState = { state: 'idle' };
  private client: StubClient | undefined;
  private waiters: { resolve: (c: StubClient) => void; reject: (e: Error) => void }[] = [];
  private readonly ladder: ReconnectLadder;
  private retryTimer: NodeJS.Timeout | undefined;
  private healthTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private everConnected = false;
  private opening = false;

  constructor(
    readonly host: string,
    private readonly open: () => Promise<StubClient>,
    private readonly opts: HostLinkOptions,
  ) {
    this.ladder = new ReconnectLadder(opts.ladder);
  }

  get state(): LinkState {
    return this.current;
  }

  get connectedClient(): StubClient | undefined {
    return this.client?.isOpen ? this.client : undefined;
  }

  /** The connected client; starts connecting when idle, waits while reconnecting. */
  get(): Promise<StubClient> {
    if (this.closed) return Promise.reject(new PtyRelayError('DISPOSED', `link to ${this.host} was closed`));
    const c = this.connectedClient;
    if (c && this.current.state === 'connected') return Promise.resolve(c);
    if (this.current.state === 'lost') {
      return Promise.reject(
        new PtyRelayError('LINK_CLOSED', `link to ${this.host} is lost: ${this.current.reason}`),
      );
    }
    const p = new Promise<StubClient>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (this.current.state === 'idle') void this.attempt();
    return p;
  }

  /** Drop the current connection as if the network had (tests, `closeHost`). Reconnects on its own. */
  drop(reason = 'dropped by request'): void {
    this.client?.close();
    if (this.client) this.onDrop(new PtyRelayError('LINK_CLOSED', reason));
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.healthTimer);
    this.client?.close();
    this.client = undefined;
    this.rejectWaiters(new PtyRelayError('DISPOSED', `link to ${this.host} was closed`));
  }

  private setState(s: LinkState): void {
    this.current = s;
    this.states.emit(s);
  }

  private rejectWaiters(err: Error): void {
    for (const w of this.waiters.splice(0)) w.reject(err);
  }

  private async attempt(): Promise<void> {
    if (this.closed || this.opening) return;
    this.opening = true;
    const reconnect = this.everConnected;
    if (!reconnect) this.setState({ state: 'connecting' });
    let client: StubClient;
    try {
      client = await this.open();
      if (this.closed) {
        client.close();
        return;
      }
      this.client = client;
      this.watch(client);
      await this.opts.onConnected(client, reconnect);
    } catch (err) {
      this.opening = false;
      this.client?.close();
      this.client = undefined;
      const e = err instanceof PtyRelayError ? err : new PtyRelayError('CONNECT_FAILED', String(err));
      // Configuration and trust problems do not heal by retrying: fail fast on first contact.
      if (!reconnect && !e.retryable) {
        this.setState({ state: 'idle' });
        this.rejectWaiters(e);
        return;
      }
      this.scheduleRetry(e);
      return;
    }
    this.opening = false;
    this.everConnected = true;
    this.ladder.connected(Date.now());
    this.setState({ state: 'connected' });
    for (const w of this.waiters.splice(0)) w.resolve(client);
  }

  private scheduleRetry(err: Error): void {
    if (this.closed) return;
    const next = this.ladder.next();
    if (!next) {
      this.setState({ state: 'lost', reason: err.message });
      this.rejectWaiters(new PtyRelayError('LINK_CLOSED', `gave up on ${this.host}: ${err.message}`));
      return;
    }
    this.opts.log?.info(
      { host: this.host, attempt: next.attempt, inMs: next.delayMs, err: err.message },
      'reconnecting',
    );
    this.setState({
      state: 'reconnecting',
      attempt: next.attempt,
      nextInMs: next.delayMs,
      lastError: err.message,
    });
    this.retryTimer = setTimeout(() => void this.attempt(), next.delayMs);
  }

  private watch(client: StubClient): void {
    const health = new LinkHealth(Date.now(), this.opts.health);
    client.onReceive = () => health.received(Date.now());
    client.onExpectAnswer = () => health.sent(Date.now());
    client.closed.on((err) => {
      if (this.client === client) this.onDrop(err);
    });
    clearInterval(this.healthTimer);
    this.healthTimer = setInterval(() => {
      const v = health.tick(Date.now(), HEALTH_TICK_MS);
      if (v === 'probe') client.ping().catch(() => {});
      else if (v === 'dead') {
        this.opts.log?.warn({ host: this.host }, 'link declared dead');
        client.close();
      }
    }, HEALTH_TICK_MS);
    this.healthTimer.unref();
  }

  private onDrop(err: Error): void {
    if (this.closed) return;
    clearInterval(this.healthTimer);
    this.client = undefined;
    this.ladder.disconnected(Date.now());
    this.opts.onDisconnected?.();
    if (!this.opening) this.scheduleRetry(err);
  }
}
