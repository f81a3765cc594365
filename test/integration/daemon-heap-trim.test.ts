import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stubBundlePath } from '../../relay/core/stub-bundle.js';
import { capability } from '../support/capabilities.js';
import { type LocalFixture, startLocal, waitFor } from '../support/local-daemon.js';

const ADDON = join(dirname(stubBundlePath()), 'native', 'malloc-trim.node');
const built = capability(
  'malloc-trim',
  existsSync(ADDON) ? undefined : `${ADDON} was not built (no C compiler at build time)`,
);

/** Issue 19: what a burst of output freed in the daemon's malloc heaps goes back to the system. */
describe.skipIf(!built)('daemon heap trimming', () => {
  let fx: LocalFixture;
  beforeAll(async () => {
    fx = await startLocal();
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  it('loads the addon and gives back what a burst of output left in the heaps once the burst ends', async () => {
    const p = fx.provider;
    const before = await p.daemonInfo();
    expect(before.heapTrim?.addon).toBe(true);
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      const r = await p.spawn({
        cols: 80,
        rows: 24,
        command: 'sh',
        args: ['-c', 'seq 1 400000; exec sleep 60'],
      });
      ids.push(r.id);
    }
    // ~2.9 MB each; the daemon reads, logs and models all of it, then goes quiet and trims.
    // Asked 4 times a second, not 50: a client that polls hard keeps the daemon from going quiet.
    const info = await waitFor(
      async () => {
        await new Promise((r) => setTimeout(r, 250));
        const i = await p.daemonInfo();
        return (i.heapTrim?.releasedBytes ?? 0) > 0 ? i : undefined;
      },
      30_000,
      'a heap trim that gave memory back',
    );
    expect(info.heapTrim!.trims).toBeGreaterThan(before.heapTrim!.trims);
    expect(info.rss).toBeGreaterThan(0);
    await Promise.all(ids.map((id) => p.shutdown(id, { immediate: true })));
  });
});
