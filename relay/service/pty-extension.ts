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
import type { HostRouter, RpcExtension, RpcMethodHandler } from '../core/rpc-types.js';
import { backgroundFor } from '../terminals/background-votes.js';
import { HostPublisher } from '../terminals/host-publisher.js';
import { creditFor } from '../terminals/terminal-credit.js';
import { checkTerminalQuota, type TerminalQuota } from '../terminals/terminal-quota.js';
import { claimHolder, type TerminalRegistry } from '../terminals/terminal-registry.js';
import { DEFAULT_LIMITS } from './config.js';
import { type ConnState, clientConnections, inputFrames } from './pty-client-input.js';
import { hostOf, type PtyCore, termId } from './pty-core.js';
import { providerEvents } from './pty-provider-events.js';
import { terminalMethods } from './pty-terminal-methods.js';
import { type Attachment, type FanoutSink, RelayFanout } from './relay-fanout.js';

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
 * This file assembles the pieces and keeps the calls that bind a connection to a terminal
 * (spawn, attach, resume of a lagging view) and to the relay (hello, hosts, list). The client
 * connections and their input live in pty-client-input.ts, provider events to clients in
 * pty-provider-events.ts, the methods on one terminal in pty-terminal-methods.ts.
 */
export function createPtyExtension(ctx: PtyExtensionContext): RpcExtension {
  const { router, registry, log } = ctx;
  const limits = { ...DEFAULT_LIMITS, ...ctx.limits };
  const serverInstanceId = randomUUID();
  const fanout = new RelayFanout({
    credit: creditFor(router),
    clientBufferBytes: ctx.clientBufferBytes,
    slowConsumerBytes: ctx.relayPendingCap,
    resume: (a) => resume(a),
    onHole: (id, seq, got) =>
      log?.warn({ id, seq, got }, 'output past a view would have left a hole; it resumes from history'),
  });
  const background = backgroundFor(router);
  const warn = (fields: Record<string, unknown>, msg: string) => log?.warn(fields, msg);
  const clients = clientConnections({ router, fanout, background, warn });
  const { state, holder } = clients;

  const providerOf = (host: string): IPtyProvider => {
    const p = router.providerFor(host);
    events.subscribe(p);
    return p;
  };
  const providerForId = (id: string) => providerOf(registry.find(id)?.host ?? hostOf(id));

  /** Throws NOT_FOUND or NOT_OWNER unless this connection's client holds the terminal's claim. */
  const owned = (cs: ConnState, id: string): IPtyProvider => {
    const h = holder(cs);
    if (!registry.find(id)) {
      const msg = `${id} is not claimed through this relay; attach to adopt it`;
      throw new PtyRelayError('NOT_FOUND', msg, { id });
    }
    registry.checkClaim(id, h);
    return providerForId(id);
  };

  const events = providerEvents({ router, registry, fanout, background, conns: clients.conns });
  // Every terminal a host holds is published when the relay's link to it comes up.
  new HostPublisher(router, registry, log);
  const { linkStates } = events;
  const core: PtyCore = {
    router,
    registry,
    log,
    fanout,
    background,
    warn,
    state,
    providerOf,
    providerForId,
    owned,
  };

  /** Publishes a terminal in the registry, claimed by this connection's client. */
  const record = (cs: ConnState, r: PtySpawnResult, host: string, name?: string): void => {
    registry.add({
      id: r.id,
      host,
      claim: { kind: 'client', clientId: cs.clientId! },
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
  };

  const spawn: RpcMethodHandler = async (conn, params) => {
    const cs = state(conn);
    holder(cs);
    const { manualAck, ...given } = parseMessage(
      relayParamsSchemas.spawn,
      params,
      'spawn',
      'INVALID_ARGUMENT',
    );
    const opts = { ...given, cols: given.cols ?? 80, rows: given.rows ?? 24 };
    const host = opts.host ?? 'local';
    needCreate(conn.grant, host);
    checkTerminalQuota(registry, limits, host, `client:${cs.clientId}`);
    const p = providerOf(host);
    // Output can overtake the spawn reply; keep it until the id is known.
    const take = fanout.capture();
    let r: PtySpawnResult;
    try {
      r = await p.spawn({ ...opts, host });
    } catch (err) {
      take(undefined);
      throw err;
    }
    const early = take(r.id);
    // Registered only once the spawn succeeded.
    if (!registry.find(r.id)) record(cs, r, host, opts.name);
    if (cs.closed) return {};
    const result = fanout.complete(fanout.bind(conn, r.id, manualAck === true, early), r, p);
    await background.vote(r.id, conn, false);
    return result;
  };

  const attach: RpcMethodHandler = async (conn, params) => {
    const cs = state(conn);
    holder(cs);
    const q = parseMessage(relayParamsSchemas.attach, params, 'attach', 'INVALID_ARGUMENT');
    const { fromSeq, expectedIncarnationId, manualAck, background: hidden } = q;
    const id = termId(q.id);
    needRead(conn.grant, id);
    const p = providerForId(id);
    // A viewer counts as foreground unless it attaches hidden. Voted before binding: bringing the
    // terminal out of other viewers' background resets their views (marker and snapshot), while
    // this one attaches to the foreground stream.
    await background.vote(id, conn, hidden === true).catch((err: Error) => {
      background.leave(conn, id, warn);
      log?.debug({ id, err: err.message }, 'attach: background vote not applied');
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
      // Terminals nobody claimed through this relay (spawned before it started, published from
      // their host) are adopted by a client that may drive them: a watcher's attach claims nothing.
      const known = registry.find(r.id);
      if ((!known || known.claim.kind === 'none') && canWrite(conn.grant, r.id)) {
        if (known) registry.update(r.id, { claim: { kind: 'client', clientId: cs.clientId! } });
        else record(cs, r, hostOf(r.id));
      }
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
  };

  /**
   * A lagging attachment whose socket drained catches up from the host's history: the stub
   * replays exactly from the seq it reached, or answers with a snapshot reset.
   */
  function resume(a: Attachment): void {
    let p: IPtyProvider;
    try {
      p = providerForId(a.id);
    } catch (err) {
      log?.warn({ id: a.id, err: (err as Error).message }, 'lagging consumer cannot resume');
      fanout.resumeFailed(a);
      return;
    }
    p.attach(a.id, { fromSeq: a.sentSeq }).then(
      (r) => {
        fanout.resumed(a, r, p, RelayNotification.reattach);
        background.attached(a.id, warn);
      },
      (err: Error) => {
        log?.warn({ id: a.id, err: err.message }, 'lagging consumer resume failed; closing its connection');
        fanout.resumeFailed(a);
      },
    );
  }

  const hello: RpcMethodHandler = async (conn, params): Promise<HelloResult> => {
    const { clientId, instanceId } = parseMessage(
      relayParamsSchemas.hello,
      params,
      'hello',
      'INVALID_ARGUMENT',
    );
    const input = clients.hello(conn, clientId, instanceId);
    return { api: RELAY_API_VERSION, serverInstanceId, clientId, input };
  };

  /** Hosts whose last listing failed while their link stayed idle (e.g. a key not trusted yet). */
  const listFailures = new Map<string, HostUnavailable>();
  /** Link state of a host as `hosts` reports it: a failure the link did not record shows as lost. */
  const linkStateOf = (name: string): LinkState => {
    const s = linkStates.get(name) ?? router.linkState(name);
    const f = listFailures.get(name);
    return s.state === 'idle' && f
      ? { state: 'lost', reason: f.reason, ...(f.cause ? { cause: f.cause } : {}) }
      : s;
  };

  // Answers within LISTING_DEADLINE_MS with the hosts that answered, naming the others.
  const list: RpcMethodHandler = async (conn, params) => {
    const { host } = parseMessage(relayParamsSchemas.list, params, 'list', 'INVALID_ARGUMENT');
    if (host) needHost(conn.grant, host);
    const hosts = host ? [host] : router.hosts().filter((h) => canSeeHost(conn.grant, h));
    for (const h of hosts) providerOf(h);
    const answer = await askHosts(hosts, {
      ask: (h) => router.listHost(h),
      stateOf: (h) => router.linkState(h),
    });
    for (const h of hosts) listFailures.delete(h);
    for (const u of answer.unavailable) {
      if (router.linkState(u.host).state === 'idle') listFailures.set(u.host, u);
      log?.warn({ host: u.host, status: u.status, reason: u.reason }, 'host left out of a listing');
    }
    const terminals = answer.rows
      .filter((t) => canRead(conn.grant, t.id))
      .map((t) => {
        const r = registry.find(t.id);
        return r && r.claim.kind !== 'none' ? { ...t, owner: claimHolder(r.claim) } : t;
      });
    return { terminals, unavailable: answer.unavailable };
  };

  const hosts: RpcMethodHandler = async (conn) => ({
    hosts: router
      .hosts()
      .filter((name) => canSeeHost(conn.grant, name))
      .map((name) => ({ name, state: linkStateOf(name) })),
  });

  const methods: Record<string, RpcMethodHandler> = {
    [RelayMethod.hello]: hello,
    [RelayMethod.hosts]: hosts,
    [RelayMethod.list]: list,
    [RelayMethod.spawn]: spawn,
    [RelayMethod.attach]: attach,
    ...terminalMethods(core),
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
    onBinary: inputFrames({ registry, log, maxInputBytes: limits.maxInputBytes, state, owned }),
    onConnection: (conn) => void state(conn),
  };
}
