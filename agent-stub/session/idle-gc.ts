import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Wait after the last request before collecting: a batch of shrinks or rebuilds costs one collection. */
const GC_DELAY_MS = 1000;

let collect: (() => void) | undefined;
let timer: NodeJS.Timeout | undefined;

/**
 * Collects garbage once this thread has dropped a lot at once (a model's scrollback, a rebuild's
 * buffers). V8 collects when a thread allocates; a daemon whose sessions went idle allocates
 * nothing, so what they dropped would stay in its RSS for good. `gc` is reached without starting
 * node with --expose-gc (a per-process flag the relay's daemon command line would have to carry).
 */
export function collectGarbageSoon(): void {
  if (timer) return;
  timer = setTimeout(() => {
    timer = undefined;
    if (!collect) {
      setFlagsFromString('--expose-gc');
      collect = runInNewContext('gc') as () => void;
    }
    collect();
  }, GC_DELAY_MS);
  timer.unref();
}
