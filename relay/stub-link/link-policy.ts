import type { HostLinkOptions } from './host-link.js';

/** How a provider's links reconnect, detect dead peers and acknowledge output. */
export interface LinkPolicy {
  ladder?: HostLinkOptions['ladder'];
  health?: HostLinkOptions['health'];
  /**
   * Credit flow control driven by the consumer: the stub pauses a PTY once the consumer is a
   * window (256 KiB) behind, until it calls `acknowledgeDataEvent`. Default false: the provider
   * acknowledges as it delivers events.
   */
  manualAck?: boolean;
  /** Input queued during an outage older than this is discarded instead of sent (default 30 s). */
  maxInputAgeMs?: number;
}
