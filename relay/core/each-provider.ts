import type { IPtyProvider, Unsubscribe } from '../../provider/contract.js';
import type { HostRouter } from './rpc-types.js';

/**
 * Calls `fn` for every provider of `router`, now and whenever one is added (a config reload that
 * brings the first SSH host). Returns what stops the calls for providers added later.
 */
export function eachProvider(
  router: Pick<HostRouter, 'providers' | 'onProviderAdded'>,
  fn: (p: IPtyProvider) => void,
): Unsubscribe {
  for (const p of router.providers()) fn(p);
  return router.onProviderAdded?.(fn) ?? (() => {});
}
