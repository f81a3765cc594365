import { dirname, join } from 'node:path';
import { loadNativeAddon } from '../../provider/daemon-runtime/native-addon.js';

/**
 * glibc heap trimming through the optional `native/malloc-trim.node` addon that ships next to the
 * stub bundle (agent-stub/native/malloc-trim.c). glibc hands back only the free top of a heap by
 * itself; the pages freed in the middle of its heaps (a model's dropped scrollback rows, the read
 * buffers of a flood) stay resident until something calls malloc_trim, which Node never does.
 * One load per thread (the model worker trims too); a host without the addon (another CPU, musl,
 * no compiler at build time) simply does not trim. Measured against `MALLOC_TRIM_THRESHOLD_` alone
 * (bench, Node 24, alternated runs): 50 idle sessions that each wrote 9.7 MiB 161–168 → 106 MB;
 * the idle relay with only `local` 64.3–64.9 → 63.4 MB.
 */
export interface HeapTrimAddon {
  /** Gives the free pages of every malloc arena back to the system; true when any went back. */
  trim(): boolean;
  /** The same on a thread of libuv's pool: a large, fragmented heap takes tens of milliseconds. */
  trimAsync(): Promise<boolean>;
}

/** Where the addon sits relative to the stub bundle. */
export function heapTrimAddonPath(entryFile: string | undefined = process.argv[1]): string | undefined {
  return entryFile ? join(dirname(entryFile), 'native', 'malloc-trim.node') : undefined;
}

let loaded: { addon?: HeapTrimAddon; problem?: string } | undefined;

/** Loads the addon once per thread; `problem` says why there is none (absent, or failed to load). */
export function heapTrimAddon(path = heapTrimAddonPath()): { addon?: HeapTrimAddon; problem?: string } {
  loaded ??= loadNativeAddon<HeapTrimAddon>(
    path,
    ['trim', 'trimAsync'],
    'no malloc-trim addon next to the stub',
  );
  return loaded;
}

/**
 * The addon's pool-thread trim as a function that always returns a promise: the addon answers
 * undefined instead of a promise when it could not queue the work (out of memory).
 */
export function trimOnPool(addon: HeapTrimAddon): () => Promise<boolean> {
  return () => Promise.resolve(addon.trimAsync() as Promise<boolean> | undefined).then((r) => r === true);
}

/** Trims on libuv's pool when the addon is there; undefined when it is not. */
export function trimHeapSoon(): Promise<boolean> | undefined {
  const { addon } = heapTrimAddon();
  return addon ? trimOnPool(addon)() : undefined;
}
