import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import { validateConfig } from '../../relay/service/config.js';
import { createHostRouter } from '../../relay/service/host-router.js';
import { waitFor } from '../support/local-daemon.js';

const KiB = 1024;

describe('history settings of the relay config reach the daemon', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('a small per-session cap moves the history start', async () => {
    const root = mkdtempSync(join(tmpdir(), 'ptr-hcfg-'));
    const config = validateConfig({
      history: { segmentBytes: 64 * KiB, sessionBytes: 256 * KiB, tailBytes: 16 * KiB },
    });
    const router = await createHostRouter(config, { localRuntimeDir: join(root, 'run') });
    const p = router.providerFor('local') as LocalPtyProvider;
    cleanups.push(async () => {
      await p.shutdownDaemon();
      await router.dispose();
      rmSync(root, { recursive: true, force: true });
    });
    const total = 2 * 1024 * KiB;
    const r = await p.spawn({
      cols: 80,
      rows: 24,
      command: 'sh',
      args: ['-c', `head -c ${total} /dev/zero | tr '\\0' x; exec sleep 600`],
    });
    const id = r.id;
    const head = async () =>
      (await p.readHistory(id, { fromSeq: Number.MAX_SAFE_INTEGER, maxBytes: 1 })).headSeq;
    await waitFor(async () => (await head()) >= total, 30_000, 'the program to write its output');
    // The log keeps at most 256 KiB (whole 64 KiB segments): the oldest bytes are gone.
    const page = await waitFor(
      async () => {
        const pg = await p.readHistory(id, { fromSeq: 0, maxBytes: 1024 });
        return pg.startSeq >= total - 256 * KiB - 64 * KiB ? pg : undefined;
      },
      10_000,
      'the log to drop its oldest segments',
    );
    expect(page.startSeq).toBeGreaterThan(1024 * KiB);
    expect(page.startSeq).toBeLessThanOrEqual(total - 128 * KiB);
    expect(page.fromSeq).toBe(page.startSeq);
    // Without the setting the daemon keeps 64 MiB: nothing of 2 MiB would be gone.
    await p.shutdown(id, { immediate: true });
  });
});
