export { RELAY_HOST, RelayClient, type RelayClientOptions } from './provider/client/relay-client.js';
export type { RelayReconnectOptions } from './provider/client/relay-link.js';
export type { HostInfo, RelayTerminalInfo } from './provider/client/relay-protocol.js';
export {
  createReplayGuard,
  isTerminalReport,
  type ReplayGuard,
  type ReplayGuardTerminal,
} from './provider/client/replay-guard.js';
export * from './provider/contract.js';
export {
  type ErrorCode,
  ErrorCodes,
  type ErrorPhase,
  isPtyRelayError,
  PtyRelayError,
} from './provider/errors.js';
export { LocalPtyProvider, type LocalPtyProviderOptions } from './relay/local/local-pty-provider.js';
export {
  type SshHostConfig,
  SshPtyProvider,
  type SshPtyProviderOptions,
} from './relay/ssh/ssh-pty-provider.js';
