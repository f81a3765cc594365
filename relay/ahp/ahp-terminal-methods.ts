import { isPtyRelayError, PtyRelayError } from '../../provider/errors.js';
import { parseMessage } from '../../provider/wire/parse-message.js';
import { needCreate, needWrite } from '../core/grant.js';
import type { HostRouter, RpcConnection } from '../core/rpc-types.js';
import { ownerOfClaim } from '../terminals/host-owners.js';
import { checkInputSize, checkTerminalQuota, type TerminalQuota } from '../terminals/terminal-quota.js';
import { claimHolder } from '../terminals/terminal-registry.js';
import { type AhpContext, initializedPeer, reasonOf } from './ahp-context.js';
import { ahpParamsSchemas, parseClientAction, parseNotification } from './ahp-schemas.js';
import {
  type ActionOrigin,
  type CreateTerminalParams,
  type CreateTerminalResult,
  isClientActionType,
  type TerminalClientAction,
  type URI,
} from './types.js';
import { channelUri, checkClientUri, parseTerminalUri, uriToPath } from './uris.js';

/** Size of a terminal created without cols/rows. */
export const DEFAULT_COLS = 80;
export const DEFAULT_ROWS = 24;

type Params = Record<string, unknown>;

/**
 * What AHP clients do to terminals: the methods `createTerminal` and `disposeTerminal` and the
 * `dispatchAction` notification (input, resize), each checked against the token's grant, the
 * terminal's claim and the quotas.
 */
export class AhpTerminalMethods {
  constructor(
    private readonly ctx: AhpContext,
    private readonly quota: TerminalQuota,
    private readonly maxInputBytes: number,
  ) {}

  async createTerminal(conn: RpcConnection, raw: Params): Promise<CreateTerminalResult> {
    const p = initializedPeer(this.ctx.hub, conn);
    const params: CreateTerminalParams = parseMessage(
      ahpParamsSchemas.createTerminal,
      raw,
      'createTerminal',
      'INVALID_ARGUMENT',
    );
    if (params.args !== undefined && params.command === undefined) {
      throw new PtyRelayError('INVALID_ARGUMENT', 'createTerminal.args needs command', {
        field: 'createTerminal.args',
      });
    }
    if (params.claim.kind === 'client' && params.claim.clientId !== p.clientId) {
      throw new PtyRelayError(
        'INVALID_ARGUMENT',
        'createTerminal.claim.clientId must name the calling client',
        {
          field: 'createTerminal.claim.clientId',
        },
      );
    }
    const { host, alias } = targetOf(params);
    needCreate(conn.grant, host);
    checkTerminalQuota(this.ctx.registry, this.quota, host, claimHolder(params.claim));
    const provider = this.ctx.router.providerFor(host);
    const release = alias === undefined ? undefined : await this.ctx.locator.reserve(alias);
    try {
      return await this.spawnTerminal(provider, host, params, alias);
    } finally {
      release?.();
    }
  }

  async disposeTerminal(conn: RpcConnection, raw: Params): Promise<Record<string, never>> {
    const { router, registry, locator } = this.ctx;
    const p = initializedPeer(this.ctx.hub, conn);
    const { channel } = parseMessage(
      ahpParamsSchemas.disposeTerminal,
      raw,
      'disposeTerminal',
      'INVALID_ARGUMENT',
    );
    const ch = await locator.resolve(channel, p.clientId);
    needWrite(conn.grant, ch.id, 'dispose');
    const rec = registry.checkClaim(ch.id, `client:${p.clientId}`);
    try {
      await router.providerFor(rec.host).shutdown(ch.id);
    } catch (err) {
      if (!isPtyRelayError(err, 'NOT_FOUND') && !isPtyRelayError(err, 'SESSION_EXITED')) throw err;
    }
    registry.remove(ch.id);
    return {};
  }

  dispatchAction(conn: RpcConnection, raw: Params): void {
    const { hub, log } = this.ctx;
    const p = hub.peers.get(conn);
    if (!p?.clientId) {
      log?.debug({ conn: conn.connectionId }, 'ahp: dispatchAction before initialize ignored');
      return;
    }
    const params = parseNotification(
      ahpParamsSchemas.dispatchAction,
      raw,
      'dispatchAction',
      log,
      conn.connectionId,
    );
    if (!params) return; // No channel or clientSeq to address a rejection to: logged and dropped.
    const { channel } = params;
    // Unknown or non-client action types are ignored, as AHP requires.
    const { type } = params.action;
    if (!isClientActionType(type)) return;
    const origin: ActionOrigin = { clientId: p.clientId, clientSeq: params.clientSeq };
    let action: TerminalClientAction;
    try {
      action = parseClientAction(params.action);
    } catch (err) {
      // Only the checked type is echoed back: the payload failed its schema.
      hub.notifyOrigin(channel, { type }, origin, reasonOf(err));
      return;
    }
    this.perform(conn, origin, channel, action).catch((err) => {
      hub.notifyOrigin(channel, action, origin, reasonOf(err));
    });
  }

  private async spawnTerminal(
    provider: ReturnType<HostRouter['providerFor']>,
    host: string,
    params: CreateTerminalParams,
    alias: string | undefined,
  ): Promise<CreateTerminalResult> {
    const cols = params.cols ?? DEFAULT_COLS;
    const rows = params.rows ?? DEFAULT_ROWS;
    const cwd = params.cwd !== undefined ? uriToPath(params.cwd) : undefined;
    const r = await provider.spawn({
      host,
      cols,
      rows,
      cwd,
      command: params.command,
      args: params.args,
      name: params.name,
      ...(alias !== undefined ? { alias } : {}),
      // Its host keeps the owner, for every relay (host-owners.ts).
      ...(ownerOfClaim(params.claim) !== undefined ? { owner: ownerOfClaim(params.claim) } : {}),
    });
    const title = r.title || params.name || params.command || 'shell';
    const exitCode = r.exited?.exitCode;
    this.ctx.hub.openChannel(
      {
        id: r.id,
        incarnationId: r.incarnationId,
        title,
        claim: params.claim,
        cwd: r.cwd ?? cwd,
        cols: r.cols,
        rows: r.rows,
        exitCode,
        nextSeq: r.providerSequence.value,
        alias,
      },
      r.replay ? { data: r.replay, seq: r.providerSequence.value - r.replay.length } : undefined,
    );
    this.ctx.registry.add({
      id: r.id,
      host,
      claim: params.claim,
      title,
      name: params.name,
      cwd: r.cwd ?? cwd,
      cols: r.cols,
      rows: r.rows,
      exitCode,
      incarnationId: r.incarnationId,
      createdAt: Date.now(),
      alias,
      ...(r.owner !== undefined ? { hostOwner: r.owner } : {}),
    });
    return { channel: channelUri(r.id, alias) };
  }

  /** Performs a client action; throws to have it rejected. */
  private async perform(
    conn: RpcConnection,
    origin: ActionOrigin,
    channel: URI,
    action: TerminalClientAction,
  ): Promise<void> {
    const { hub, router, registry, locator } = this.ctx;
    const ch = await locator.resolve(channel, origin.clientId);
    needWrite(conn.grant, ch.id, action.type === 'terminal/input' ? 'type into' : 'resize');
    const rec = registry.checkClaim(ch.id, `client:${origin.clientId}`);
    switch (action.type) {
      case 'terminal/input':
        checkInputSize(Buffer.byteLength(action.data), this.maxInputBytes);
        await router.providerFor(rec.host).write(ch.id, action.data);
        conn.noteInput(ch.id, Buffer.byteLength(action.data));
        // Keystrokes are echoed to their sender only (for write-ahead reconciliation).
        hub.notifyOrigin(ch.uri, action, origin);
        return;
      case 'terminal/resized':
        await router.providerFor(rec.host).resize(ch.id, action.cols, action.rows);
        break;
      default:
        break;
    }
    // The PTY may have gone while we waited.
    if (hub.channels.get(ch.id) === ch) hub.dispatch(ch, action, origin);
  }
}

/**
 * The host a createTerminal targets and the client's alias, if it chose one: a minted channel
 * names the host; any other URI is the client's alias for the terminal.
 */
function targetOf(params: CreateTerminalParams): { host: string; alias: string | undefined } {
  let host = params.host;
  const target = params.channel === undefined ? undefined : parseTerminalUri(params.channel);
  const alias = params.channel !== undefined && !target ? params.channel : undefined;
  if (target) {
    if (target.id) checkClientUri(params.channel!);
    if (host !== undefined && host !== target.host) {
      throw new PtyRelayError(
        'INVALID_ARGUMENT',
        `createTerminal.host ${host} does not match channel ${params.channel}`,
        { field: 'createTerminal.host' },
      );
    }
    host = target.host;
  } else if (alias !== undefined) checkClientUri(alias);
  return { host: host ?? 'local', alias };
}
