import { HeapTrimmer } from '../../agent-stub/daemon/heap-trimmer.js';
import { heapTrimAddon, heapTrimAddonPath, trimOnPool } from '../../agent-stub/native/heap-trim.js';
import type { Logger } from './log.js';
import { stubBundlePath } from './stub-bundle.js';

/** A trim that gave back at least this much is logged at info; smaller ones at debug. */
const INFO_RELEASED_BYTES = 4 * 1024 * 1024;

/**
 * The relay's process gives the free pages inside glibc's heaps back when it goes quiet after a
 * busy spell, by the daemon's rules (agent-stub/daemon/heap-trimmer.ts) and with the daemon's
 * optional `malloc-trim` addon, which the build leaves beside the stub bundle. What the SSH
 * handshakes of a start (adoption) or a flood freed stays resident otherwise: idle with two SSH
 * hosts about 5 MB, with only `local` about 1.4 MB. Without the addon the relay runs the same,
 * untrimmed (said at debug level).
 */
export function startHeapTrimmer(log: Logger): HeapTrimmer {
  let path: string | undefined;
  try {
    path = heapTrimAddonPath(stubBundlePath());
  } catch {
    path = undefined; // no stub bundle: no addon beside it either
  }
  const { addon, problem } = heapTrimAddon(path);
  if (problem) log.debug({ problem }, 'the relay runs without heap trimming');
  return new HeapTrimmer({
    trim: addon && trimOnPool(addon),
    logReleasedBytes: 0,
    afterStart: true,
    log: (msg, extra = {}) => {
      const released = Number(extra.rssBefore ?? 0) - Number(extra.rssAfter ?? 0);
      if (extra.error !== undefined) log.warn(extra, msg);
      else if (released >= INFO_RELEASED_BYTES) log.info(extra, msg);
      else log.debug(extra, msg);
    },
  }).start();
}
