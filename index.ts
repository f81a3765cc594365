export * from './provider/contract.js';
export {
  type ErrorCode,
  ErrorCodes,
  type ErrorPhase,
  isPtyRelayError,
  PtyRelayError,
} from './provider/errors.js';
export { LocalPtyProvider, type LocalPtyProviderOptions } from './relay/local/local-pty-provider.js';
