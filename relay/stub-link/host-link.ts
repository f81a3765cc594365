import type { LinkState } from '../../provider/contract.js';
import { Emitter } from '../../provider/emitter.js';
import { PtyRelayError } from '../../provider/errors.js';
import { ReconnectLadder, type ReconnectLadderOptions } from '../../provider/reconnect-ladder.js';
import type { Logger } from '../core/log.js';
import { AttemptRace, type RaceAttempt } from './attempt-race.js';
import { DeployBackoff } from './deploy-backoff.js';
import { linkCauseOf } from './link-cause.js';
import { LinkHealth, type LinkHealthOptions } from './link-health.js';
import { PROBE_INTERVAL_MS, type ReachabilityProbe } from './reachability-probe.js';
import type { StubClient } from './stub-client.js';

/** Health ticks: often enough to notice a dead link within a second of the deadline. */
const HEALTH_TICK_MS = 1000;

/** First-contact attempts repeated after the host dropped an authenticated connection during setup. */
export const FIRST_CONTACT_DROP_RETRIES = 2;

export interface HostLinkOptions {
  ladder?: ReconnectLadderOptions;
  health?: LinkHealthOptions;
  /**
   * Reconnect attempts that may run at once (first contact always makes one at a time): a ladder
   * step that finds every pending attempt stalled starts a fresh one beside them. Default 1.
   */
  maxConcurrentAttempts?: number;
  /**
   * A first contact (no link yet in this process) fails its waiters at the first failed attempt,
   * whatever the cause, instead of climbing the ladder: the ladder is for links that were up.
   * Except a host that let us in and then dropped the connection during setup (an error with
   * `details.afterLogin`): that is no configuration problem, so first contact tries again, up to
   * {@link FIRST_CONTACT_DROP_RETRIES} times.
   */
  failFirstContact?: boolean;
  /**
   * Asked every second while reconnecting and the next ladder step is further away than that:
   * when the host answers again after not answering, the next step runs at once.
   */
  probe?: ReachabilityProbe;
  log?: Logger;
  /** Runs after every successful (re)connect, before waiters get the client (reattach, resend input). */
  onConnected: (client: StubClient, reconnect: boolean) => Promise<void>;
  onDisconnected?: () => void;
  /**
   * The daemon ended on request (it said `stopping` before closing the link): the link went idle
   * instead of reconnecting, and the sessions it served are gone.
   */
  onDaemonStopped?: () => void;
}

/**
 * Lifecycle of one host's stub link: connect on first use, watch health, and on a drop climb the
 * reconnect ladder until the link is back (or the give-up count is reached). Each ladder step may
 * start an attempt; on a reconnect, attempts race (see AttemptRace). Callers always get a
 * connected client or wait for one.
 */
export class HostLink {
  readonly states = new Emitter<LinkState>();
  private current: LinkState = { state: 'idle' };
  private client: StubClient | undefined;
  /** First-contact attempts whose connection the host dropped after login. */
  private firstContactDrops = 0;
  private waiters: { resolve: (c: StubClient) => void; reject: (e: Error) => void }[] = [];
  private readonly ladder: ReconnectLadder;
  /** The attempts of the connect or reconnect under way. */
  private race: AttemptRace<StubClient> | undefined;
  private stepTimer: NodeJS.Timeout | undefined;
  /** The armed ladder step: its attempt number and when it is due. */
  private nextStep: { attempt: number; at: number } | undefined;
  /** A step found the only slot taken: it runs as soon as that attempt fails. */
  private stepDue = false;
  private lastError: Error | undefined;
  private healthTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private everConnected = false;
  private probeTimer: NodeJS.Timeout | undefined;
  private probeAbort: AbortController | undefined;
  /** The last probe's answer in this outage (undefined before the first). */
  private hostAnswered: boolean | undefined;
  /** After a failed stub deploy: when the next one may run (see DeployBackoff). */
  private readonly deployBackoff = new DeployBackoff();
  private deployRetryTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly host: string,
    private readonly open: (attempt: RaceAttempt) => Promise<StubClient>,
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
    if (this.current.state === 'deploy-failed') {
      const blocked = this.deployBackoff.blocked(Date.now());
      if (blocked) return Promise.reject(blocked);
    }
    if (this.current.state === 'lost') {
      return Promise.reject(
        new PtyRelayError('LINK_CLOSED', `link to ${this.host} is lost: ${this.current.reason}`),
      );
    }
    const p = new Promise<StubClient>((resolve, reject) => this.waiters.push({ resolve, reject }));
    const s = this.current.state;
    if ((s === 'idle' || s === 'deploy-failed') && !this.race) this.connect();
    return p;
  }

  /** Drop the current connection as if the network had (tests, `closeHost`). Reconnects on its own. */
  drop(reason = 'dropped by request'): void {
    this.client?.close();
    if (this.client) this.onDrop(new PtyRelayError('LINK_CLOSED', reason));
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.deployRetryTimer);
    this.stopConnecting();
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

  /** Starts connecting: first contact tries at once, a reconnect follows the ladder. */
  private connect(dropped?: Error): void {
    const reconnect = this.everConnected;
    const race: AttemptRace<StubClient> = new AttemptRace((a) => this.tryOpen(a, reconnect), {
      maxConcurrent: reconnect ? (this.opts.maxConcurrentAttempts ?? 1) : 1,
      onWin: (client) => this.won(client),
      onFail: (err) => {
        if (this.race === race) this.attemptFailed(err, reconnect);
      },
      discard: (client) => client.close(),
    });
    this.race = race;
    this.lastError = dropped;
    if (reconnect) {
      this.armStep();
      this.startProbing();
    } else {
      this.setState({ state: 'connecting' });
      race.step();
    }
  }

  /** One attempt: open a link, claim the race, then bring the link up (reattach, resend input). */
  private async tryOpen(attempt: RaceAttempt, reconnect: boolean): Promise<StubClient> {
    const client = await this.open(attempt);
    try {
      attempt.claim(); // no-op when the provider claimed before registering the link
    } catch (err) {
      client.close();
      throw err;
    }
    this.client = client;
    this.watch(client);
    try {
      await this.opts.onConnected(client, reconnect);
      if (!client.isOpen)
        throw new PtyRelayError('LINK_CLOSED', `link to ${this.host} closed while coming up`);
    } catch (err) {
      client.close(); // the drop handler resets this.client and the input channel
      throw err;
    }
    return client;
  }

  private won(client: StubClient): void {
    this.stopConnecting();
    if (this.closed) {
      client.close();
      return;
    }
    this.everConnected = true;
    this.deployBackoff.reset();
    this.ladder.connected(Date.now());
    this.setState({ state: 'connected' });
    for (const w of this.waiters.splice(0)) w.resolve(client);
  }

  private attemptFailed(err: Error, reconnect: boolean): void {
    const e = err instanceof PtyRelayError ? err : new PtyRelayError('CONNECT_FAILED', String(err));
    this.lastError = e;
    if (e.code === 'STUB_NOT_INSTALLED') {
      // Adoption at start found nothing to adopt: idle, and the next use deploys.
      this.stopConnecting();
      this.setState({ state: 'idle' });
      this.rejectWaiters(e);
      return;
    }
    if (e.phase === 'deploy') {
      this.deployFailed(e, reconnect);
      return;
    }
    // Configuration and trust problems do not heal by retrying: fail fast on first contact. A host
    // that never answered is most likely misconfigured (address, port, name): so is any failure
    // of a first contact where the provider says so.
    const droppedAfterLogin =
      e.details?.afterLogin === true && this.firstContactDrops++ < FIRST_CONTACT_DROP_RETRIES;
    if (!reconnect && (!e.retryable || this.opts.failFirstContact) && !droppedAfterLogin) {
      this.stopConnecting();
      this.setState({ state: 'idle' });
      this.rejectWaiters(e);
      return;
    }
    if (this.stepDue) this.step();
    else if (!this.stepTimer) this.armStep();
    else this.reportReconnecting();
  }

  /**
   * A stub deploy failed: report it (waiters get the error, the state says why and when the next
   * attempt is) instead of climbing the ladder. A host with sessions to restore tries again on its
   * own at that time; otherwise the next request after it does.
   */
  private deployFailed(e: PtyRelayError, reconnect: boolean): void {
    this.stopConnecting();
    const { state, delayMs } = this.deployBackoff.failed(e, Date.now());
    this.opts.log?.warn(
      { host: this.host, code: e.code, err: e.message, retryInMs: delayMs },
      'stub deploy failed',
    );
    this.setState(state);
    this.rejectWaiters(e);
    if (!reconnect) return;
    clearTimeout(this.deployRetryTimer);
    this.deployRetryTimer = setTimeout(() => {
      if (!this.closed && !this.race && this.current.state === 'deploy-failed') this.connect(e);
    }, delayMs);
    this.deployRetryTimer.unref();
  }

  /** Arms the next ladder step; gives up once the ladder is spent and no attempt is pending. */
  private armStep(): void {
    const next = this.ladder.next();
    if (!next) {
      this.nextStep = undefined;
      if (!this.race?.pending) this.giveUp();
      return;
    }
    this.nextStep = { attempt: next.attempt, at: Date.now() + next.delayMs };
    this.stepTimer = setTimeout(() => this.step(), next.delayMs);
    this.opts.log?.info(
      { host: this.host, attempt: next.attempt, inMs: next.delayMs, err: this.lastError?.message },
      'reconnecting',
    );
    this.reportReconnecting();
  }

  /** A ladder step is due: start an attempt now, later (one is still making progress), or when a slot frees. */
  private step(): void {
    this.stepTimer = undefined;
    this.stepDue = false;
    const race = this.race;
    if (!race || this.closed) return;
    const r = race.step();
    if (r.kind === 'started') {
      if (race.pending > 1)
        this.opts.log?.info({ host: this.host, pending: race.pending }, 'racing a stalled reconnect attempt');
      this.armStep();
    } else if (r.kind === 'wait') {
      if (this.nextStep) this.nextStep.at = r.untilMs;
      this.stepTimer = setTimeout(() => this.step(), Math.max(1, r.untilMs - Date.now()));
    } else this.stepDue = true;
  }

  /** Reports the next step once per step and error (a failure that repeats the last error adds nothing). */
  private reportReconnecting(): void {
    if (!this.nextStep) return;
    const { attempt, at } = this.nextStep;
    const lastError = this.lastError?.message;
    const c = this.current;
    if (c.state === 'reconnecting' && c.attempt === attempt && c.lastError === lastError) return;
    const cause = this.lastError ? linkCauseOf(this.lastError) : undefined;
    this.setState({
      state: 'reconnecting',
      attempt,
      nextInMs: Math.max(0, at - Date.now()),
      ...(lastError !== undefined ? { lastError } : {}),
      ...(cause ? { cause } : {}),
    });
  }

  /** While reconnecting: a probe a second; a host that answers again gets the next step at once. */
  private startProbing(): void {
    const probe = this.opts.probe;
    if (!probe || this.probeTimer) return;
    this.hostAnswered = undefined;
    this.probeTimer = setInterval(() => {
      const next = this.nextStep;
      if (this.probeAbort || !next || next.at - Date.now() <= PROBE_INTERVAL_MS) return;
      const abort = new AbortController();
      this.probeAbort = abort;
      void probe(abort.signal).then((answers) => {
        if (this.probeAbort !== abort) return;
        this.probeAbort = undefined;
        const returned = answers && this.hostAnswered === false;
        this.hostAnswered = answers;
        if (!returned || !this.stepTimer) return;
        this.opts.log?.info({ host: this.host }, 'host answers again: reconnecting now');
        clearTimeout(this.stepTimer);
        this.step();
      });
    }, PROBE_INTERVAL_MS);
    this.probeTimer.unref();
  }

  private stopProbing(): void {
    clearInterval(this.probeTimer);
    this.probeTimer = undefined;
    this.probeAbort?.abort();
    this.probeAbort = undefined;
  }

  private giveUp(): void {
    const reason = this.lastError?.message ?? 'no attempt succeeded';
    const cause = this.lastError ? linkCauseOf(this.lastError) : undefined;
    this.stopConnecting();
    this.setState({ state: 'lost', reason, ...(cause ? { cause } : {}) });
    this.rejectWaiters(new PtyRelayError('LINK_CLOSED', `gave up on ${this.host}: ${reason}`));
  }

  /** Ends the race under way (its pending attempts are aborted) and the ladder's timer. */
  private stopConnecting(): void {
    this.stopProbing();
    this.race?.abandon();
    this.race = undefined;
    clearTimeout(this.stepTimer);
    this.stepTimer = undefined;
    this.stepDue = false;
    this.nextStep = undefined;
  }

  private watch(client: StubClient): void {
    const health = new LinkHealth(Date.now(), this.opts.health);
    client.onReceive = () => health.received(Date.now());
    client.onExpectAnswer = () => health.sent(Date.now());
    client.closed.on((err) => {
      if (this.client === client) this.onDrop(err, client.daemonStopping);
    });
    clearInterval(this.healthTimer);
    this.healthTimer = setInterval(() => {
      const v = health.tick(Date.now(), HEALTH_TICK_MS);
      if (v === 'probe') client.ping().catch(() => {});
      else if (v === 'dead') {
        this.opts.log?.warn({ host: this.host }, 'link declared dead');
        client.close(
          new PtyRelayError('LINK_CLOSED', `no answer from ${this.host}: the link went silent`, {
            cause: 'timeout',
          }),
        );
      }
    }, HEALTH_TICK_MS);
    this.healthTimer.unref();
  }

  private onDrop(err: Error, stopped = false): void {
    if (this.closed) return;
    clearInterval(this.healthTimer);
    this.client = undefined;
    this.ladder.disconnected(Date.now());
    this.opts.onDisconnected?.();
    if (stopped) {
      // Reconnecting would start a new daemon in place of the one just stopped: the next use does.
      this.opts.log?.info({ host: this.host }, 'daemon stopped on request; the link waits for the next use');
      this.setState({ state: 'idle' });
      this.opts.onDaemonStopped?.();
      return;
    }
    // While a race is under way (a winner bringing its link up), that race carries on.
    if (!this.race) this.connect(err);
  }
}
