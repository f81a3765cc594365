import { randomUUID } from 'node:crypto';
import { relayParamsSchemas } from '../../provider/client/relay-params.js';
import {
  type HelloResult,
  RELAY_API_VERSION,
  RelayMethod,
  RelayNotification,
} from '../../provider/client/relay-protocol.js';
import type { IPtyProvider, LinkState, PtySpawnResult } from '../../provider/contract.js';
import { PtyRelayError } from '../../provider/errors.js';
import { parseWire } from '../../provider/wire/agent-messages.js';
import { FrameDecoder, FrameType } from '../../provider/wire/frame-codec.js';
import { historyParamsSchema } from '../../provider/wire/history-messages.js';
import { parseMessage } from '../../provider/wire/parse-message.js';
import { agentMethods } from '../agents/agent-rpc.js';
import type { Logger } from '../log.js';
import { canRead, canSeeHost, canWrite, needCreate, needHost, needRead, needWrite } from '../tokens/grant.js';
import { backgroundFor } from './background-votes.js';
import { DEFAULT_LIMITS } from './config.js';
import { daemonMethods } from './daemon-methods.js';
import { InputLedger } from './input-ledger.js';
import { type Attachment, type FanoutSink, RelayFanout } from './relay-fanout.js';
import type { HostRouter, RpcConnection, RpcExtension, RpcMethodHandler } from './rpc-types.js';
import { creditFor } from './terminal-credit.js';
import { checkInputSize, checkTerminalQuota, type TerminalQuota } from './terminal-quota.js';
import { claimHolder, type TerminalRegistry } from './terminal-registry.js';

/** Catalog exit code of a terminal lost with its host without an exit of its own (killed: 128 + 9). */
const LOST_EXIT_CODE = 137;
/** Input de-duplication state of a client instance outlives its last connection by this long. */
const LEDGER_TTL_MS = 10 * 60_000;

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

/** A client instance's input ledger and the connection currently speaking for it. */
interface LedgerSlot {
  key: string;
  ledger: InputLedger;
  owner?: ConnState;
  expiry?: NodeJS.Timeout;
}

interface ConnState {
  conn: RpcConnection;
  clientId?: string;
  slot?: LedgerSlot;
  closed: boolean;
  /** Attaches in flight per terminal id, settled once the attach recorded (or failed). */
  attaching: Map<string, Promise<void>>;
}

function str(v: unknown, name: string): string {
  if (typeof v !== 'string' || v.length === 0)
    throw new PtyRelayError('INVALID_ARGUMENT', `${name} required`);
  return v;
}

/** A terminal id param in its global form (`pty-3` is `local/pty-3`, as the local provider reads it). */
function termId(v: unknown): string {
  const id = str(v, 'id');
  return id.includes('/') ? id : `local/${id}`;
}

function hostOf(id: string): string {
  const slash = id.lastIndexOf('/');
  return slash < 0 ? 'local' : id.slice(0, slash);
}

/**
 * The `ptyrelay/*` API (docs/relay-client.md): IPtyProvider over JSON-RPC for RelayClient.
 * Output goes out as binary Data frames (the replay of an attach as one Data frame sent before
 * the JSON result), input comes in as binary Input frames de-duplicated per client instance,
 * mutating calls check the claim in the shared TerminalRegistry, and socket backpressure becomes
 * withheld credit toward the provider (see RelayFanout).
 */
export function createPtyExtension(ctx: PtyExtensionContext): RpcExtension {
  const { router, registry, log } = ctx;
  const limits = { ...DEFAULT_LIMITS, ...ctx.limits };
  const serverInstanceId = randomUUID();
  const conns = new Set<ConnState>();
  const fanout = new RelayFanout({
    credit: creditFor(router),
    clientBufferBytes: ctx.clientBufferBytes,
    slowConsumerBytes: ctx.relayPendingCap,
    resume: (a) => resume(a),
  });
  const ledgers = new Map<string, LedgerSlot>();
  const linkStates = new Map<string, LinkState>();
  const subscribed = new WeakSet<IPtyProvider>();
  const background = backgroundFor(router);
  const warn = (fields: Record<string, unknown>, msg: string) => log?.warn(fields, msg);

  const state = (conn: RpcConnection): ConnState => {
    let cs = conn.state.get('ptyrelay') as ConnState | undefined;
    if (!cs) {
      const created: ConnState = { conn, closed: false, attaching: new Map() };
      cs = created;
      conn.state.set('ptyrelay', cs);
      conns.add(cs);
      conn.onClose(() => closeConn(created));
    }
    return cs;
  };

  function closeConn(cs: ConnState): void {
    cs.closed = true;
    conns.delete(cs);
    fanout.dropSink(cs.conn);
    background.leave(cs.conn, undefined, warn);
    const slot = cs.slot;
    if (slot && slot.owner === cs) {
      // Input this client typed during a host outage is not sent once it has gone away.
      for (const p of router.providers()) p.dropQueuedInput?.(slot.key, undefined, 'gone');
      slot.owner = undefined;
      slot.ledger.sink = undefined;
      slot.expiry = setTimeout(() => ledgers.delete(slot.key), LEDGER_TTL_MS);
      slot.expiry.unref();
    }
  }

  const providerOf = (host: string): IPtyProvider => {
    const p = router.providerFor(host);
    subscribe(p);
    return p;
  };
  const providerForId = (id: string) => providerOf(registry.find(id)?.host ?? hostOf(id));

  const holder = (cs: ConnState): string => {
    if (!cs.clientId) throw new PtyRelayError('INVALID_ARGUMENT', 'call ptyrelay/hello first');
    return `client:${cs.clientId}`;
  };

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

  function subscribe(p: IPtyProvider): void {
    if (subscribed.has(p)) return;
    subscribed.add(p);
    p.onData((e) => fanout.data(e));
    p.onFact((e) => {
      if (e.fact.type === 'title') registry.update(e.id, { title: e.fact.title });
      if (e.fact.type === 'cwd') registry.update(e.id, { cwd: e.fact.cwd });
      fanout.note(e.id, RelayNotification.fact, e);
    });
    p.onExit((e) => {
      registry.update(e.id, { exitCode: e.exitCode });
      fanout.note(e.id, RelayNotification.exit, e);
    });
    p.onBackgroundStreamEvent((e) => {
      // A data gap skips the dropped bytes; foregrounding restarts the stream at its snapshot.
      const seq =
        e.type === 'dataGap'
          ? { skipTo: e.toSeq }
          : e.type === 'backgroundMarker' && !e.background
            ? { resetTo: e.seq }
            : {};
      fanout.note(e.id, RelayNotification.background, e, seq);
    });
    p.onLinkState?.((e) => {
      linkStates.set(e.host, e.state);
      for (const cs of conns)
        if (cs.clientId && canSeeHost(cs.conn.grant, e.host)) cs.conn.notify(RelayNotification.linkState, e);
    });
    p.onReattach?.((e) => {
      // The relay's own link to the host came back; a reset restarts every view at the snapshot.
      fanout.note(e.id, RelayNotification.reattach, e, e.snapshot ? { resetTo: e.snapshot.seq } : {});
      if (e.sessionExpired) {
        fanout.forget(e.id);
        background.forget(e.id);
        // A terminal the host kept a cold-restore record of stays listed, as exited.
        if (e.coldRestore)
          registry.update(e.id, { exitCode: e.coldRestore.exited?.exitCode ?? LOST_EXIT_CODE });
        else registry.remove(e.id);
      }
    });
  }
  for (const p of router.providers()) subscribe(p);
  router.onHostProgress?.((p) => {
    for (const cs of conns)
      if (cs.clientId && canSeeHost(cs.conn.grant, p.host)) cs.conn.notify(RelayNotification.hostProgress, p);
  });

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
      // Terminals the registry does not know (spawned before this relay started) are adopted, by
      // a client that may drive them: a watcher's attach claims nothing.
      if (!registry.find(r.id) && canWrite(conn.grant, r.id)) record(cs, r, hostOf(r.id));
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

  /** One input frame: dropped when resent, else written; the ledger acks in order. */
  const input = (cs: ConnState, id: string, inputSeq: number, data: Uint8Array): void => {
    const ledger = cs.slot?.ledger;
    if (!ledger) return void log?.warn({ conn: cs.conn.connectionId }, 'input before ptyrelay/hello dropped');
    if (!ledger.receive(inputSeq)) return;
    const owner = ledger === cs.slot?.ledger ? cs.slot.key : undefined;
    const write = async () => {
      needWrite(cs.conn.grant, id, 'type into');
      checkInputSize(data.length, limits.maxInputBytes);
      await owned(cs, id).write(id, data, { owner });
      cs.conn.noteInput(id, data.length);
    };
    // A restarted relay learns a terminal's claim from the client's re-attach; input the client
    // resends before that attach completed (e.g. first contact with a host deploying a new build)
    // waits for it instead of failing NOT_FOUND.
    const attaching = registry.find(id) ? undefined : cs.attaching.get(id);
    let done: Promise<void>;
    try {
      done = attaching ? attaching.then(write) : write();
    } catch (err) {
      done = Promise.reject(err);
    }
    done.then(
      () => ledger.finish(inputSeq),
      (err) => ledger.finish(inputSeq, err),
    );
  };

  type TerminalFn = (
    p: IPtyProvider,
    id: string,
    params: Record<string, unknown>,
    conn: RpcConnection,
  ) => Promise<unknown>;
  /**
   * A method on one terminal; `claim` requires the caller to own it, `access` is what the token
   * must allow (by default: a claimed method drives the terminal, the others read it).
   */
  const onTerminal =
    (fn: TerminalFn, claim = true, access: 'read' | 'write' = claim ? 'write' : 'read'): RpcMethodHandler =>
    async (conn, params) => {
      const id = termId(params.id);
      if (access === 'write') needWrite(conn.grant, id);
      else needRead(conn.grant, id);
      const p = claim ? owned(state(conn), id) : providerForId(id);
      return (await fn(p, id, params, conn)) ?? {};
    };

  const hello: RpcMethodHandler = async (conn, params): Promise<HelloResult> => {
    const { clientId, instanceId } = parseMessage(
      relayParamsSchemas.hello,
      params,
      'hello',
      'INVALID_ARGUMENT',
    );
    const cs = state(conn);
    if (cs.clientId && cs.clientId !== clientId)
      throw new PtyRelayError('INVALID_ARGUMENT', 'clientId cannot change on a connection');
    cs.clientId = clientId;
    conn.clientId ??= clientId;
    const key = `${clientId}\n${instanceId ?? clientId}`;
    let slot = ledgers.get(key);
    const input = slot ? 'known' : 'fresh';
    if (!slot) {
      slot = { key, ledger: new InputLedger() };
      ledgers.set(key, slot);
    }
    clearTimeout(slot.expiry);
    // The instance reconnected: its old connection (maybe half-open) no longer holds back credit.
    if (slot.owner && slot.owner !== cs) fanout.dropSink(slot.owner.conn);
    slot.owner = cs;
    slot.ledger.sink = (ack) => conn.notify(RelayNotification.inputAck, ack);
    cs.slot = slot;
    return { api: RELAY_API_VERSION, serverInstanceId, clientId, input };
  };

  const list: RpcMethodHandler = async (conn, params) => {
    const { host } = parseMessage(relayParamsSchemas.list, params, 'list', 'INVALID_ARGUMENT');
    if (host) needHost(conn.grant, host);
    const providers = host ? [providerOf(host)] : router.providers();
    const lists = await Promise.all(
      providers.map((p) =>
        p.listProcesses().catch((err) => {
          if (host) throw err;
          log?.warn({ err: (err as Error).message }, 'cannot list a provider');
          return [];
        }),
      ),
    );
    const terminals = lists
      .flat()
      .filter((t) => (!host || t.host === host) && canRead(conn.grant, t.id))
      .map((t) => {
        const r = registry.find(t.id);
        return r ? { ...t, owner: claimHolder(r.claim) } : t;
      });
    return { terminals };
  };

  const hosts: RpcMethodHandler = async (conn) => ({
    hosts: router
      .hosts()
      .filter((name) => canSeeHost(conn.grant, name))
      .map((name) => {
        const p = providerOf(name) as IPtyProvider & { linkState?: (h: string) => LinkState };
        return { name, state: linkStates.get(name) ?? p.linkState?.(name) ?? { state: 'idle' } };
      }),
  });

  const methods: Record<string, RpcMethodHandler> = {
    [RelayMethod.hello]: hello,
    [RelayMethod.hosts]: hosts,
    [RelayMethod.list]: list,
    [RelayMethod.spawn]: spawn,
    [RelayMethod.attach]: attach,
    [RelayMethod.detach]: async (conn, params) => {
      const id = termId(params.id);
      const a = fanout.attachment(conn, id);
      if (a) fanout.detach(a);
      background.leave(conn, id, warn);
      // What this client typed during an outage and is still queued goes with it (INPUT_EXPIRED).
      const owner = state(conn).slot?.key;
      if (owner) providerForId(id).dropQueuedInput?.(owner, id, 'detached');
      return {};
    },
    [RelayMethod.resize]: onTerminal((p, id, raw) => {
      const q = parseMessage(relayParamsSchemas.resize, raw, 'resize', 'INVALID_ARGUMENT');
      return p.resize(id, q.cols, q.rows);
    }),
    [RelayMethod.shutdown]: onTerminal(async (p, id, raw) => {
      const q = parseMessage(relayParamsSchemas.shutdown, raw, 'shutdown', 'INVALID_ARGUMENT');
      await p.shutdown(id, { immediate: q.immediate, deadlineMs: q.deadlineMs });
      fanout.forget(id);
      background.forget(id);
      registry.remove(id);
    }),
    [RelayMethod.signal]: onTerminal((p, id, raw) =>
      p.sendSignal(id, parseMessage(relayParamsSchemas.signal, raw, 'signal', 'INVALID_ARGUMENT').signal),
    ),
    [RelayMethod.getCwd]: onTerminal(async (p, id) => ({ cwd: await p.getCwd(id) }), false),
    [RelayMethod.getForegroundProcess]: onTerminal(
      async (p, id) => ({ process: await p.getForegroundProcess(id) }),
      false,
    ),
    [RelayMethod.hasChildProcesses]: onTerminal(
      async (p, id) => ({ value: await p.hasChildProcesses(id) }),
      false,
    ),
    [RelayMethod.probe]: onTerminal(
      async (p, id) => ({ alive: (await p.probePtyLiveness(id)) ?? null }),
      false,
    ),
    [RelayMethod.snapshot]: onTerminal(
      (p, id, raw) =>
        p.getBufferSnapshot(id, {
          scrollbackRows: parseMessage(relayParamsSchemas.snapshot, raw, 'snapshot', 'INVALID_ARGUMENT')
            .scrollbackRows,
        }),
      false,
    ),
    [RelayMethod.history]: onTerminal(async (p, id, q) => {
      const { fromSeq, maxBytes } = parseWire(historyParamsSchema, { ...q, id }, 'history');
      if (!p.readHistory)
        throw new PtyRelayError('INVALID_ARGUMENT', `the provider of ${id} keeps no output history`);
      const page = await p.readHistory(id, { fromSeq, maxBytes });
      return {
        fromSeq: page.fromSeq,
        startSeq: page.startSeq,
        headSeq: page.headSeq,
        data: Buffer.from(page.data).toString('base64'),
      };
    }, false),
    [RelayMethod.clear]: onTerminal((p, id) => p.clearBuffer(id)),
    [RelayMethod.pause]: onTerminal((p, id) => p.pauseProducer(id)),
    [RelayMethod.resume]: onTerminal((p, id) => p.resumeProducer(id)),
    // Per viewer: the terminal goes to the background only when every viewer asked (background-votes.ts).
    // A view preference, as `attach`'s own vote is: what the token may read, it may background.
    [RelayMethod.setBackgrounded]: async (conn, params) => {
      const id = termId(params.id);
      needRead(conn.grant, id);
      owned(state(conn), id);
      const q = parseMessage(
        relayParamsSchemas.setBackgrounded,
        params,
        'setBackgrounded',
        'INVALID_ARGUMENT',
      );
      await background.vote(id, conn, q.background === true);
      return {};
    },
    ...agentMethods(onTerminal),
    // A stopped daemon took its sessions along: what its host no longer lists leaves the registry.
    ...daemonMethods(router, async (d) => {
      const listed = await router.providerFor(d.host).listProcesses();
      const alive = new Set(listed.filter((t) => t.host === d.host).map((t) => t.id));
      for (const r of registry.list()) if (r.host === d.host && !alive.has(r.id)) registry.remove(r.id);
    }),
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
    onBinary: (conn, data) => {
      const cs = state(conn);
      let frames: ReturnType<FrameDecoder['push']>;
      try {
        frames = new FrameDecoder().push(data);
      } catch (err) {
        log?.warn({ err: (err as Error).message, conn: conn.connectionId }, 'bad binary message dropped');
        return;
      }
      for (const f of frames) {
        if (f.type === FrameType.Input)
          input(cs, f.id.includes('/') ? f.id : `local/${f.id}`, f.inputSeq, f.data);
        else log?.warn({ type: f.type }, 'unexpected binary frame from client');
      }
    },
    onConnection: (conn) => void state(conn),
  };
}
