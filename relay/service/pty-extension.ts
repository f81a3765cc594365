import { randomUUID } from 'node:crypto';
import { relayParamsSchemas } from '../../provider/client/relay-params.js';
import {
  type HelloResult,
  type HostUnavailable,
  RELAY_API_VERSION,
  RelayMethod,
  RelayNotification,
} from '../../provider/client/relay-protocol.js';
import type { IPtyProvider, LinkState, PtySpawnResult } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import { parseMessage } from '../../provider/wire/parse-message.js';
import { canRead, canSeeHost, canWrite, needCreate, needHost, needRead } from '../core/grant.js';
import { askHosts } from '../core/host-listing.js';
import type { Logger } from '../core/log.js';
import type { HostRouter, RpcConnection, RpcExtension, RpcMethodHandler } from '../core/rpc-types.js';
import { backgroundFor, type RouterBackground } from '../flow/background-by-viewers.js';
import { type Attachment, type FanoutSink, RelayFanout } from '../flow/relay-fanout.js';
import { creditFor } from '../flow/terminal-credit.js';
import { inputFrames } from '../input/input-frames.js';
import { claimOfOwner, HostOwnerSync } from '../terminals/host-owners.js';
import { HostPublisher } from '../terminals/host-publisher.js';
import { checkTerminalQuota, type TerminalQuota } from '../terminals/terminal-quota.js';
import { claimHolder, type TerminalClaim, type TerminalRegistry } from '../terminals/terminal-registry.js';
import { DEFAULT_LIMITS, type RelayLimits } from './config.js';
import { lspMethods } from './lsp-methods.js';
import { type ClientConnections, type ConnState, clientConnections } from './pty-connections.js';
import { hostOf, type PtyMethodContext, termId } from './pty-method-context.js';
import { type ProviderEvents, providerEvents } from './pty-provider-events.js';
import { terminalMethods } from './pty-terminal-methods.js';

/** What the extension needs from the service. */
export interface PtyExtensionContext {
  router: HostRouter;
  registry: TerminalRegistry;
  log?: Logger;
  /** A connection with this much queued is closed and resumes on reconnect (`flowControl.relayPendingCap`). */
  relayPendingCap?: number;
  /** Encoded output a connection may have queued before it lags (`flowControl.clientBufferBytes`). */
  clientBufferBytes?: number;
  /** Terminal counts and the input write bound (`limits`; defaults: DEFAULT_LIMITS). */
  limits?: Partial<TerminalQuota> & { maxInputBytes?: number };
}

/**
 * The `ptyrelay/*` API (docs/relay-client.md): IPtyProvider over JSON-RPC for RelayClient.
 * Output goes out as binary Data frames (the replay of an attach as one Data frame sent before
 * the JSON result), input comes in as binary Input frames de-duplicated per client instance,
 * mutating calls check the claim in the shared TerminalRegistry, and socket backpressure becomes
 * withheld credit toward the provider (see RelayFanout).
 *
 * PtyExtension assembles the pieces and keeps the calls that bind a connection to a terminal
 * (spawn, attach, resume of a lagging view) and to the relay (hello, hosts, list). The client
 * connections live in pty-connections.ts, their Input frames in relay/input/input-frames.ts,
 * provider events to clients in pty-provider-events.ts, the methods on one terminal in
 * pty-terminal-methods.ts.
 */
export function createPtyExtension(ctx: PtyExtensionContext): RpcExtension {
  return new PtyExtension(ctx).extension();
}

/** The extension's state and the methods that are not about one existing terminal. */
class PtyExtension {
  private readonly router: HostRouter;
  private readonly registry: TerminalRegistry;
  private readonly log?: Logger;
  private readonly limits: RelayLimits;
  private readonly serverInstanceId = randomUUID();
  private readonly fanout: RelayFanout;
  private readonly background: RouterBackground;
  private readonly clients: ClientConnections;
  private readonly events: ProviderEvents;
  private readonly core: PtyMethodContext;
  /** Hosts whose last listing failed while their link stayed idle (e.g. a key not trusted yet). */
  private readonly listFailures = new Map<string, HostUnavailable>();
  private readonly warn = (fields: Record<string, unknown>, msg: string): void => this.log?.warn(fields, msg);

  constructor(ctx: PtyExtensionContext) {
    const { router, registry, log } = ctx;
    this.router = router;
    this.registry = registry;
    this.log = log;
    this.limits = { ...DEFAULT_LIMITS, ...ctx.limits };
    this.fanout = new RelayFanout({
      credit: creditFor(router),
      clientBufferBytes: ctx.clientBufferBytes,
      slowConsumerBytes: ctx.relayPendingCap,
      resume: (a) => this.resume(a),
      onHole: (id, seq, got) =>
        log?.warn({ id, seq, got }, 'output past a view would have left a hole; it resumes from history'),
    });
    this.background = backgroundFor(router);
    const { fanout, background, warn } = this;
    this.clients = clientConnections({ router, fanout, background, warn });
    this.events = providerEvents({ router, registry, fanout, background, conns: this.clients.conns });
    // Every terminal a host holds is published when the relay's link to it comes up.
    new HostPublisher(router, registry, log);
    // Claims made here are kept by the hosts too, for every other relay.
    new HostOwnerSync(router, registry, log);
    this.core = {
      router,
      registry,
      log,
      fanout,
      background,
      warn,
      state: this.clients.state,
      providerOf: (host) => this.providerOf(host),
      providerForId: (id) => this.providerForId(id),
      owned: (cs, id) => this.owned(cs, id),
    };
  }

  /** The RpcExtension: the methods here, those on one terminal, acks and Input frames. */
  extension(): RpcExtension {
    const { fanout, log, core } = this;
    const methods: Record<string, RpcMethodHandler> = {
      [RelayMethod.hello]: (conn, params) => this.hello(conn, params),
      [RelayMethod.hosts]: async (conn) => this.hosts(conn),
      [RelayMethod.list]: (conn, params) => this.list(conn, params),
      [RelayMethod.spawn]: (conn, params) => this.spawn(conn, params),
      [RelayMethod.attach]: (conn, params) => this.attach(conn, params),
      ...terminalMethods(core),
      ...lspMethods(this.router),
    };
    return {
      name: 'ptyrelay',
      methods,
      notifications: {
        [RelayNotification.ack]: (conn, params) => {
          // A notification has no reply: a malformed ack is logged and dropped.
          const r = relayParamsSchemas.ack.safeParse(params);
          if (r.success) fanout.ack(conn as FanoutSink, termId(r.data.id), r.data.seq);
          else
            log?.warn(
              { conn: conn.connectionId, issue: r.error.issues[0]?.message },
              'malformed ptyrelay/ack dropped',
            );
        },
      },
      onBinary: inputFrames({
        registry: this.registry,
        log,
        maxInputBytes: this.limits.maxInputBytes,
        state: core.state,
        owned: core.owned,
      }),
      onConnection: (conn) => void core.state(conn),
    };
  }

  private providerOf(host: string): IPtyProvider {
    const p = this.router.providerFor(host);
    this.events.subscribe(p);
    return p;
  }

  private providerForId(id: string): IPtyProvider {
    return this.providerOf(this.registry.find(id)?.host ?? hostOf(id));
  }

  /** Throws NOT_FOUND or NOT_OWNER unless this connection's client holds the terminal's claim. */
  private owned(cs: ConnState, id: string): IPtyProvider {
    const h = this.clients.holder(cs);
    if (!this.registry.find(id)) {
      const msg = `${id} is not claimed through this relay; attach to adopt it`;
      throw new PtyRelayError('NOT_FOUND', msg, { id });
    }
    this.registry.checkClaim(id, h);
    return this.providerForId(id);
  }

  /** Publishes a terminal in the registry, claimed by `claim` (else this connection's client). */
  private record(cs: ConnState, r: PtySpawnResult, host: string, name?: string, claim?: TerminalClaim): void {
    this.registry.add({
      id: r.id,
      host,
      claim: claim ?? { kind: 'client', clientId: cs.clientId! },
      ...(r.owner !== undefined ? { hostOwner: r.owner } : {}),
      title: r.title ?? name ?? '',
      name,
      cwd: r.cwd,
      cols: r.cols,
      rows: r.rows,
      exitCode: r.exited?.exitCode,
      incarnationId: r.incarnationId,
      createdAt: Date.now(),
      ...(r.alias !== undefined ? { alias: r.alias } : {}),
    });
  }

  private async spawn(conn: RpcConnection, params: Record<string, unknown>): Promise<unknown> {
    const { registry, fanout, background } = this;
    const cs = this.clients.state(conn);
    this.clients.holder(cs);
    const { manualAck, ...given } = parseMessage(
      relayParamsSchemas.spawn,
      params,
      'spawn',
      'INVALID_ARGUMENT',
    );
    const opts = { ...given, cols: given.cols ?? 80, rows: given.rows ?? 24 };
    const host = opts.host ?? 'local';
    needCreate(conn.grant, host);
    checkTerminalQuota(registry, this.limits, host, `client:${cs.clientId}`);
    const p = this.providerOf(host);
    // Output can overtake the spawn reply; keep it until the id is known.
    const take = fanout.capture();
    let r: PtySpawnResult;
    try {
      // Its host keeps the owner, for every relay (host-owners.ts).
      r = await p.spawn({ ...opts, host, owner: `client:${cs.clientId}` });
    } catch (err) {
      take(undefined);
      throw err;
    }
    const early = take(r.id);
    // Registered only once the spawn succeeded.
    if (!registry.find(r.id)) this.record(cs, r, host, opts.name);
    if (cs.closed) return {};
    const result = fanout.complete(fanout.bind(conn, r.id, manualAck === true, early), r, p);
    await background.vote(r.id, conn, false);
    return result;
  }

  private async attach(conn: RpcConnection, params: Record<string, unknown>): Promise<unknown> {
    const { fanout, background, warn } = this;
    const cs = this.clients.state(conn);
    this.clients.holder(cs);
    const q = parseMessage(relayParamsSchemas.attach, params, 'attach', 'INVALID_ARGUMENT');
    const { fromSeq, expectedIncarnationId, manualAck, background: hidden } = q;
    const id = termId(q.id);
    needRead(conn.grant, id);
    const p = this.providerForId(id);
    // A viewer counts as foreground unless it attaches hidden. Voted before binding: bringing the
    // terminal out of other viewers' background resets their views (marker and snapshot), while
    // this one attaches to the foreground stream.
    await background.vote(id, conn, hidden === true).catch((err: Error) => {
      background.leave(conn, id, warn);
      this.log?.debug({ id, err: err.message }, 'attach: background vote not applied');
    });
    const a = fanout.bind(conn, id, manualAck === true);
    // Input for this terminal that arrives meanwhile waits for it (see `input`).
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => {
      settle = resolve;
    });
    cs.attaching.set(id, settled);
    let r: PtySpawnResult;
    try {
      try {
        r = await p.attach(id, { fromSeq, expectedIncarnationId });
      } catch (err) {
        if (fanout.isBound(a)) fanout.detach(a);
        throw err;
      }
      this.adoptOnAttach(cs, conn, r);
      if (!r.sessionExpired) background.attached(id, warn);
    } finally {
      settle();
      if (cs.attaching.get(id) === settled) cs.attaching.delete(id);
    }
    if (r.sessionExpired) {
      // Lost with its host: the result carries its cold-restore record; no stream follows.
      if (fanout.isBound(a)) fanout.detach(a);
      background.forget(id);
      return r;
    }
    if (cs.closed || !fanout.isBound(a)) return {};
    return fanout.complete(a, r, p);
  }

  /**
   * A terminal nobody claimed through this relay (spawned before it started, or through another
   * relay of a fleet) keeps the owner its host holds; one without an owner is adopted by a client
   * that may drive it (a watcher's attach claims nothing; host-owners.ts records it on the host,
   * where the first of several relays wins).
   */
  private adoptOnAttach(cs: ConnState, conn: RpcConnection, r: PtySpawnResult): void {
    const known = this.registry.find(r.id);
    if (known && known.claim.kind !== 'none') return;
    const hostClaim = claimOfOwner(r.owner);
    const claim: TerminalClaim | undefined =
      hostClaim ?? (canWrite(conn.grant, r.id) ? { kind: 'client', clientId: cs.clientId! } : undefined);
    if (!claim) return;
    if (known)
      this.registry.update(r.id, { claim, ...(r.owner !== undefined ? { hostOwner: r.owner } : {}) });
    else this.record(cs, r, hostOf(r.id), undefined, claim);
  }

  /**
   * A lagging attachment whose socket drained catches up from the host's history: the stub
   * replays exactly from the seq it reached, or answers with a snapshot reset.
   */
  private resume(a: Attachment): void {
    const { fanout, log } = this;
    let p: IPtyProvider;
    try {
      p = this.providerForId(a.id);
    } catch (err) {
      log?.warn({ id: a.id, err: (err as Error).message }, 'lagging consumer cannot resume');
      fanout.resumeFailed(a);
      return;
    }
    p.attach(a.id, { fromSeq: a.sentSeq }).then(
      (r) => {
        fanout.resumed(a, r, p, RelayNotification.reattach);
        this.background.attached(a.id, this.warn);
      },
      (err: Error) => {
        log?.warn({ id: a.id, err: err.message }, 'lagging consumer resume failed; closing its connection');
        fanout.resumeFailed(a);
      },
    );
  }

  private async hello(conn: RpcConnection, params: Record<string, unknown>): Promise<HelloResult> {
    const { clientId, instanceId } = parseMessage(
      relayParamsSchemas.hello,
      params,
      'hello',
      'INVALID_ARGUMENT',
    );
    const input = this.clients.hello(conn, clientId, instanceId);
    return {
      api: RELAY_API_VERSION,
      serverInstanceId: this.serverInstanceId,
      clientId,
      input,
      inputOrigin: true,
    };
  }

  /** Link state of a host as `hosts` reports it: a failure the link did not record shows as lost. */
  private linkStateOf(name: string): LinkState {
    const s = this.events.linkStates.get(name) ?? this.router.linkState(name);
    const f = this.listFailures.get(name);
    return s.state === 'idle' && f
      ? { state: 'lost', reason: f.reason, ...(f.cause ? { cause: f.cause } : {}) }
      : s;
  }

  // Answers within LISTING_DEADLINE_MS with the hosts that answered, naming the others.
  private async list(conn: RpcConnection, params: Record<string, unknown>): Promise<unknown> {
    const { router, registry, listFailures, log } = this;
    const { host } = parseMessage(relayParamsSchemas.list, params, 'list', 'INVALID_ARGUMENT');
    if (host) needHost(conn.grant, host);
    const hosts = host ? [host] : router.hosts().filter((h) => canSeeHost(conn.grant, h));
    for (const h of hosts) this.providerOf(h);
    const answer = await askHosts(hosts, {
      ask: (h) => router.listHost(h),
      stateOf: (h) => router.linkState(h),
      // A host a listing already waited for in vain, and still connecting: not waited for again.
      known: (h) => {
        const f = listFailures.get(h);
        return f?.status === 'connecting' && router.linkState(h).state === 'connecting' ? f : undefined;
      },
    });
    for (const h of hosts) listFailures.delete(h);
    for (const u of answer.unavailable) {
      const s = router.linkState(u.host).state;
      if (s === 'idle' || (s === 'connecting' && u.status === 'connecting')) listFailures.set(u.host, u);
      log?.warn({ host: u.host, status: u.status, reason: u.reason }, 'host left out of a listing');
    }
    const terminals = answer.rows
      .filter((t) => canRead(conn.grant, t.id))
      .map((t) => {
        const r = registry.find(t.id);
        return r && r.claim.kind !== 'none' ? { ...t, owner: claimHolder(r.claim) } : t;
      });
    return { terminals, unavailable: answer.unavailable };
  }

  private hosts(conn: RpcConnection): unknown {
    return {
      hosts: this.router
        .hosts()
        .filter((name) => canSeeHost(conn.grant, name))
        .map((name) => ({ name, state: this.linkStateOf(name) })),
    };
  }
}
