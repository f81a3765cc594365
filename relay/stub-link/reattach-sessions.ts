import type { PtyRelayError } from '../../provider/errors.js';
import { forEachBounded } from './bounded-parallel.js';
import type { SessionTrack } from './session-tracker.js';
import type { StubClient } from './stub-client.js';

/** Sessions re-attached at once after a reconnect (Orca: 8). */
const REATTACH_CONCURRENCY = 8;

/**
 * Re-attaches `sessions` on a fresh link, each from the seq delivered so far and fenced by its
 * incarnation. While a session's attach is in flight its local id is in `reattaching` (the reply's
 * replay is then emitted as data). A session the daemon no longer has, or whose id now names
 * another process, goes to `expired`; any other failure rejects.
 */
export async function reattachSessions(
  client: StubClient,
  sessions: SessionTrack[],
  reattaching: Set<string>,
  expired: (t: SessionTrack) => void,
): Promise<void> {
  await forEachBounded(sessions, REATTACH_CONCURRENCY, async (t) => {
    reattaching.add(t.localId);
    try {
      await client.request('attach', {
        id: t.localId,
        fromSeq: t.seq,
        expectedIncarnationId: t.incarnationId,
      });
    } catch (err) {
      const code = (err as PtyRelayError).code;
      if (code !== 'NOT_FOUND' && code !== 'INCARNATION_MISMATCH') throw err;
      expired(t);
    } finally {
      reattaching.delete(t.localId);
    }
  });
}
