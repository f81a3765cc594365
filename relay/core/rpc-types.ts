import type { HostKeyInfo, HostProgress } from '../../provider/client/relay-protocol.js';
import type { IPtyProvider, LinkState, PtyProcessInfo } from '../../provider/contract.js';
import type { LspQuery, LspQueryResult } from '../../provider/lsp-seam.js';
import type { Grant } from './grant.js';
import type { Logger } from './log.js';

/**
 * Seam between the WebSocket service (transport, auth, JSON-RPC framing) and what speaks over it:
 * the AHP terminal channel and the ptyrelay extension API that RelayClient uses. Both are
 * `RpcExtension`s registered with the server; neither knows about sockets.
 */

/** One authenticated WebSocket client. */
export interface RpcConnection {
  /** Unique per connection (server-assigned). */
  readonly connectionId: string;
  /** Set by the AHP `initialize` (or the extension's hello); undefined before. */
  clientId: string | undefined;
  /** Send a JSON-RPC notification. */
  notify(method: string, params: unknown): void;
  /** Send an already serialized JSON-RPC message (one text built once for many connections). */
  /** A text frame whose payload is ready (a string, or UTF-8 bytes). */
  sendRawText?(text: string | Buffer): void;
  /** Send one binary WebSocket message made of these parts (no copy of large parts). */
  sendBinary(parts: Uint8Array[]): void;
  /** Bytes queued in the socket and not yet sent (backpressure). */
  readonly bufferedAmount: number;
  /** Called once when the socket closes. */
  onClose(cb: () => void): void;
  /** Arbitrary per-connection state for extensions. */
  readonly state: Map<string, unknown>;
  /** What the connection's token allows (every method checks it). */
  readonly grant: Grant;
  /** Audits input this connection typed into terminal `id` (the count, never the bytes). */
  noteInput(id: string, bytes: number): void;
}

/** A JSON-RPC method: resolve with the result or throw a PtyRelayError (mapped to a JSON-RPC error). */
export type RpcMethodHandler = (conn: RpcConnection, params: Record<string, unknown>) => Promise<unknown>;
/** A JSON-RPC notification from the client (no reply). */
export type RpcNotificationHandler = (conn: RpcConnection, params: Record<string, unknown>) => void;

export interface RpcExtension {
  name: string;
  methods?: Record<string, RpcMethodHandler>;
  notifications?: Record<string, RpcNotificationHandler>;
  /** Binary messages from the client (the extension defines their layout). */
  onBinary?: (conn: RpcConnection, data: Buffer) => void;
  onConnection?: (conn: RpcConnection) => void;
}

/** What the service routes terminals to: one provider per host name (`local` always present). */
export interface HostRouter {
  /** Host names, `local` first. */
  hosts(): string[];
  /** The provider that serves `host` (a LocalPtyProvider or an SshPtyProvider). */
  providerFor(host: string): IPtyProvider;
  /** Every provider once (for event subscription). */
  providers(): IPtyProvider[];
  /** The terminals `host` holds (asks its daemons; connects first when needed). */
  listHost(host: string): Promise<PtyProcessInfo[]>;
  /** The state of the relay's link to `host` (`idle` before first use). */
  linkState(host: string): LinkState;
  /** A provider joined `providers()` (a config reload brought the first SSH host). */
  onProviderAdded?(listener: (p: IPtyProvider) => void): () => void;
  /** Steps of connecting to hosts and deploying their stubs, as they happen. */
  onHostProgress?(listener: (p: HostProgress) => void): () => void;
  /** Host key inspection and trust of an SSH host (UNKNOWN_HOST for others). */
  hostKeys?(host: string): HostKeyAdmin;
  /**
   * Links `host` when it already runs this build's stub (never deploys), which publishes the
   * terminals it holds, and lets go of the link again when none runs. Resolves whether it linked.
   */
  adoptHost?(host: string): Promise<boolean>;
  /** Code navigation on the hosts that enable it (docs/lsp.md); absent in routers without a config. */
  readonly lsp?: HostCodeNavigation;
}

/** Code navigation on a relay's hosts: the seam's queries, sent to the host where the code is. */
export interface HostCodeNavigation {
  /** Hosts with at least one provider enabled. */
  hosts(): string[];
  /** One query on `host` (LSP_NOT_ENABLED when the host enables no provider). */
  query(host: string, query: LspQuery, signal?: AbortSignal): Promise<LspQueryResult>;
  /** The nearest ancestor of `filePath` on `host` holding `.git`, or null (a consumer's default root). */
  workspaceRoot(host: string, filePath: string): Promise<string | null>;
}

/** What `ptyrelay hosts trust` needs from the relay for one SSH host. */
export interface HostKeyAdmin {
  inspect(): Promise<HostKeyInfo>;
  trust(fingerprint: string, replace: boolean): Promise<HostKeyInfo>;
}

export interface ServiceContext {
  router: HostRouter;
  log: Logger;
}
