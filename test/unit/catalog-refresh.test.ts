import { describe, expect, it } from 'vitest';
import type { LinkState } from '../../provider/contract.js';
import type { HostRouter } from '../../relay/core/rpc-types.js';
import { CatalogRefresh } from '../../relay/terminals/catalog-refresh.js';

/** A router of three hosts whose link states the test sets; adoptHost is recorded and held open. */
function router(states: Record<string, LinkState['state']>) {
  const adopted: string[] = [];
  let finish: () => void = () => {};
  const r = {
    hosts: () => Object.keys(states),
    linkState: (h: string) => ({ state: states[h] }) as LinkState,
    adoptHost: (h: string) => {
      adopted.push(h);
      return new Promise<boolean>((resolve) => {
        const prev = finish;
        finish = () => {
          prev();
          resolve(true);
        };
      });
    },
  } as unknown as HostRouter;
  return { r, adopted, finish: () => finish() };
}

describe('CatalogRefresh (a relay links its idle hosts when a client looks at the catalog)', () => {
  it('adopts only idle hosts, one refresh at a time, at most once per interval', async () => {
    let now = 1000;
    const { r, adopted, finish } = router({ local: 'connected', a: 'idle', b: 'reconnecting', c: 'idle' });
    const refresh = new CatalogRefresh(r, 10_000, () => now);
    refresh.request();
    expect(adopted).toEqual(['a', 'c']);
    now += 20_000;
    refresh.request(); // still running: nothing more
    expect(adopted).toEqual(['a', 'c']);
    finish();
    await new Promise((res) => setTimeout(res, 0));
    now += 5_000;
    refresh.request(); // 25 s after the last start, and none running: again
    expect(adopted).toEqual(['a', 'c', 'a', 'c']);
    finish();
    await new Promise((res) => setTimeout(res, 0));
    now += 5_000;
    refresh.request(); // 5 s after the last start: not yet
    expect(adopted).toHaveLength(4);
  });

  it('does nothing for a router that cannot adopt, or when every host is linked', () => {
    const none = { hosts: () => ['x'], linkState: () => ({ state: 'idle' }) } as unknown as HostRouter;
    expect(() => new CatalogRefresh(none).request()).not.toThrow();
    const { r, adopted } = router({ a: 'connected', b: 'connecting' });
    new CatalogRefresh(r).request();
    expect(adopted).toEqual([]);
  });
});
