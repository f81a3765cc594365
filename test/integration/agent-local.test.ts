import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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

describe('agent sends typed before the shell reads them', { timeout: 120_000 }, () => {
  let f: LocalFixture;
  let home: string;
  beforeAll(async () => {
    f = await startLocal();
    // Slow startup files, and a PS0 that keeps the shell busy after it read a line: the gap
    // between the shell accepting typed-ahead text and reporting the command's start.
    home = join(f.runtimeDir, '..', 'slow-home');
    mkdirSync(home);
    writeFileSync(join(home, '.bashrc'), `sleep 1\nPS0='$(sleep 0.5)'\n`);
  });
  afterAll(async () => {
    await f?.cleanup();
  });

  it('text typed before the first prompt ends after its command, not at the startup prompt', async () => {
    const service = serviceFor({ provider: f.provider, host: 'local' });
    const owner = service.owner('typeahead');
    const t = await service.open(owner, 'local', { command: 'bash', env: { HOME: home } });
    const opts = { timeoutMs: 30_000, idleMs: 20_000 };
    const first = await service.send(owner, t.id, 'echo early-$((6*7))', opts);
    expect(first).toMatchObject({ reason: 'stdin_read', exitCode: 0 });
    expect(first.output).toMatch(/^early-42$/m);
    // Typed while `sleep 2; false` runs: the prompt after `false` reads it, the send ends after it.
    const running = await service.send(owner, t.id, 'sleep 2; false', { ...opts, timeoutMs: 500 });
    expect(running.reason).toBe('timeout');
    const ahead = await service.send(owner, t.id, 'echo ahead-$((40+2))', opts);
    expect(ahead).toMatchObject({ reason: 'stdin_read', exitCode: 0 });
    expect(ahead.output).toMatch(/^ahead-42$/m);
    await service.dispose();
  });
});
