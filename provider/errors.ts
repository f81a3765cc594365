/**
 * The one error class of ptyrelay. Every failure that crosses a boundary (stub link,
 * provider API, WebSocket service) carries a stable `code` listed in docs/errors.md.
 */
export type ErrorPhase =
  | 'connect'
  | 'auth'
  | 'hostkey'
  | 'deploy'
  | 'protocol'
  | 'session'
  | 'timeout'
  | 'config';

export const ErrorCodes = {
  NOT_FOUND: { phase: 'session', retryable: false },
  NOT_OWNER: { phase: 'session', retryable: false },
  ALREADY_EXISTS: { phase: 'session', retryable: false },
  SPAWN_FAILED: { phase: 'session', retryable: false },
  INCARNATION_MISMATCH: { phase: 'session', retryable: false },
  SESSION_EXITED: { phase: 'session', retryable: false },
  INVALID_ARGUMENT: { phase: 'session', retryable: false },
  SEND_IN_PROGRESS: { phase: 'session', retryable: true },
  INPUT_QUEUE_FULL: { phase: 'session', retryable: true },
  INPUT_EXPIRED: { phase: 'session', retryable: false },
  LIMIT_EXCEEDED: { phase: 'session', retryable: true },
  PROTOCOL_ERROR: { phase: 'protocol', retryable: false },
  VERSION_MISMATCH: { phase: 'protocol', retryable: false },
  LINK_CLOSED: { phase: 'connect', retryable: true },
  DAEMON_UNAVAILABLE: { phase: 'connect', retryable: true },
  CONNECT_FAILED: { phase: 'connect', retryable: true },
  AUTH_FAILED: { phase: 'auth', retryable: false },
  HOSTKEY_MISMATCH: { phase: 'hostkey', retryable: false },
  HOSTKEY_UNKNOWN: { phase: 'hostkey', retryable: false },
  HOSTKEY_REVOKED: { phase: 'hostkey', retryable: false },
  UNKNOWN_HOST: { phase: 'config', retryable: false },
  NODE_MISSING: { phase: 'deploy', retryable: false },
  NODE_TOO_OLD: { phase: 'deploy', retryable: false },
  UNSUPPORTED_PLATFORM: { phase: 'deploy', retryable: false },
  DEPLOY_FAILED: { phase: 'deploy', retryable: true },
  DAEMON_START_FAILED: { phase: 'deploy', retryable: false },
  STUB_NOT_INSTALLED: { phase: 'deploy', retryable: false },
  UPLOAD_FAILED: { phase: 'deploy', retryable: false },
  DIR_NOT_WRITABLE: { phase: 'deploy', retryable: false },
  DISK_FULL: { phase: 'deploy', retryable: false },
  DIR_NOEXEC: { phase: 'deploy', retryable: false },
  DIR_INSECURE: { phase: 'deploy', retryable: false },
  TIMEOUT: { phase: 'timeout', retryable: true },
  ABORTED: { phase: 'session', retryable: false },
  CONFIG_INVALID: { phase: 'config', retryable: false },
  INSECURE_FILE_MODE: { phase: 'config', retryable: false },
  INSECURE_LISTEN: { phase: 'config', retryable: false },
  NOT_PERMITTED: { phase: 'auth', retryable: false },
  DISPOSED: { phase: 'session', retryable: false },
  LSP_NOT_ENABLED: { phase: 'config', retryable: false },
  LSP_NO_PROVIDER: { phase: 'config', retryable: false },
  LSP_PROVIDER_CONFLICT: { phase: 'config', retryable: false },
  LSP_SERVER_MISSING: { phase: 'session', retryable: false },
  LSP_SERVER_CRASHED: { phase: 'session', retryable: true },
  LSP_REQUEST_FAILED: { phase: 'session', retryable: false },
  LSP_UNSUPPORTED: { phase: 'protocol', retryable: false },
} as const satisfies Record<string, { phase: ErrorPhase; retryable: boolean }>;

export type ErrorCode = keyof typeof ErrorCodes;

export interface PtyRelayErrorShape {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

export class PtyRelayError extends Error {
  readonly code: ErrorCode;
  readonly phase: ErrorPhase;
  readonly retryable: boolean;
  readonly details?: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'PtyRelayError';
    this.code = code;
    this.phase = ErrorCodes[code]?.phase ?? 'protocol';
    this.retryable = ErrorCodes[code]?.retryable ?? false;
    this.details = details;
  }

  toJSON(): PtyRelayErrorShape {
    return { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) };
  }

  static from(shape: PtyRelayErrorShape): PtyRelayError {
    const code = (shape.code in ErrorCodes ? shape.code : 'PROTOCOL_ERROR') as ErrorCode;
    return new PtyRelayError(code, shape.message, shape.details);
  }
}

export function isPtyRelayError(err: unknown, code?: ErrorCode): err is PtyRelayError {
  return err instanceof PtyRelayError && (code === undefined || err.code === code);
}
