import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { trimHeapSoon } from '../native/heap-trim.js';

/** Wait after the last request before collecting: a batch of shrinks or rebuilds costs one collection. */
const GC_DELAY_MS = 1000;

let collect: (() => void) | undefined;
let timer: NodeJS.Timeout | undefined;

/**
 * Collects garbage once this thread has dropped a lot at once (a model's scrollback, a rebuild's
 * buffers). V8 collects when a thread allocates; a daemon whose sessions went idle allocates
 * nothing, so what they dropped would stay in its RSS for good. `gc` is reached without starting
 * node with --expose-gc (a per-process flag the relay's daemon command line would have to carry).
 * The collection is followed by a heap trim where the addon is there (native/heap-trim.ts).
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
    // What the collection freed sits in the middle of malloc's heaps; a trim gives it back.
    void trimHeapSoon();
  }, GC_DELAY_MS);
  timer.unref();
}
