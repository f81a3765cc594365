import { trimHeapSoon } from '../native/heap-trim.js';

/** Wait after the last request before collecting: a batch of shrinks or rebuilds costs one collection. */
const GC_DELAY_MS = 1000;

/** Dropped external memory (buffers V8 frees only when it collects) that asks for a collection. */
export const COLLECT_AFTER_DROPPED_BYTES = 1024 * 1024;

let timer: NodeJS.Timeout | undefined;
/** Bytes dropped through {@link droppedExternal} since the last collection. */
let dropped = 0;
let quiet: NodeJS.Timeout | undefined;

/**
 * Notes `bytes` of buffers this thread just let go (a model feed's slab pool) and collects once
 * what all of them dropped since the last collection reaches COLLECT_AFTER_DROPPED_BYTES and no
 * more has been dropped for GC_DELAY_MS: fifty sessions that each drop half a megabyte as they go
 * quiet are 25 MB that would otherwise stay until something allocates. While they keep dropping
 * (a flood runs), each drop moves the collection later: V8 collects then as the flood allocates.
 */
export function droppedExternal(bytes: number): void {
  dropped += bytes;
  if (dropped < COLLECT_AFTER_DROPPED_BYTES) return;
  clearTimeout(quiet);
  quiet = setTimeout(() => {
    quiet = undefined;
    collectGarbageSoon();
  }, GC_DELAY_MS);
  quiet.unref();
}

/**
 * Collects garbage once this thread has dropped a lot at once (a model's scrollback, a rebuild's
 * buffers). V8 collects when a thread allocates; a daemon whose sessions went idle allocates
 * nothing, so what they dropped would stay in its RSS for good. `gc` is there because the daemon
 * is started with `--expose-gc` (provider/daemon-launcher.ts); without it this does nothing. The
 * collection is followed by a heap trim where the addon is there (native/heap-trim.ts): what it
 * freed sits in the middle of malloc's heaps, which glibc does not give back by itself.
 */
export function collectGarbageSoon(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (timer || !gc) return;
  timer = setTimeout(() => {
    timer = undefined;
    dropped = 0;
    gc();
    void trimHeapSoon();
  }, GC_DELAY_MS);
  timer.unref();
}
