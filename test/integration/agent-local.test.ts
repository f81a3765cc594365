import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endReasonSuite, serviceFor } from '../support/agent-suite.js';
import { type LocalFixture, startLocal } from '../support/local-daemon.js';

describe('agent terminals on `local`', { timeout: 180_000 }, () => {
  let f: LocalFixture;
  beforeAll(async () => {
    f = await startLocal();
  });
  afterAll(async () => {
    await f?.cleanup();
  });
  endReasonSuite(() => ({ provider: f.provider, host: 'local', env: { HOME: f.home } }));
});

describe('agent reads beyond the default retention', { timeout: 120_000 }, () => {
  let f: LocalFixture;
  beforeAll(async () => {
    // A daemon that keeps 25,000 rows: all of a 20,000-line output can be paged.
    f = await startLocal(['--scrollback-rows', '25000']);
  });
  afterAll(async () => {
    await f?.cleanup();
  });

  it('pages over all 20,000 lines of `seq 1 20000` in order', async () => {
    const service = serviceFor({ provider: f.provider, host: 'local' });
    const owner = service.owner('pager');
    const t = await service.open(owner, 'local', { command: 'bash', env: { HOME: f.home } });
    const r = await service.send(owner, t.id, 'seq 1 20000', { timeoutMs: 60_000, idleMs: 20_000 });
    expect(r.reason).toBe('stdin_read');
    const seen: string[] = [];
    let offset = 0;
    let pages = 0;
    for (;;) {
      const p = await service.read(owner, t.id, { offset, count: 1000 });
      pages++;
      seen.unshift(...p.lines);
      if (p.lineEnd >= p.totalLines) break;
      offset = p.lineEnd;
    }
    const nums = seen.filter((l) => /^\d+$/.test(l)).map(Number);
    expect(nums).toEqual(Array.from({ length: 20_000 }, (_, i) => i + 1));
    expect(pages).toBeGreaterThanOrEqual(20);
    await service.dispose();
  });
});
