/**
 * A JSON-RPC error with an explicit code, for protocol-level failures that are not a
 * PtyRelayError (e.g. AHP's UnsupportedProtocolVersion −32005). Thrown from an RpcExtension
 * method, it becomes `{ code, message, data }` verbatim.
 */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
    /** Close the connection once the error reply has been sent. */
    readonly closeConnection = false,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

/** Standard JSON-RPC 2.0 error codes, plus the one ptyrelay uses for PtyRelayError. */
export const JsonRpcErrorCodes = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** A PtyRelayError; its stable code is in `data.code`. */
  ServerError: -32000,
} as const;
