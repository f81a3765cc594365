import { describe, expect, it } from 'vitest';
import { AdoptionUses } from '../../relay/ssh/adoption-uses.js';

function later<T>(value: T): { promise: Promise<T>; settle: () => void } {
  let settle = () => {};
  const promise = new Promise<T>((resolve) => {
    settle = () => resolve(value);
  });
  return { promise, settle };
}

describe('AdoptionUses', () => {
  it('a use of the host or of an older build of it counts until the next adoption begins', () => {
    const u = new AdoptionUses();
    u.began('h');
    expect(u.usedSince('h')).toBe(false);
    u.use('h#old-build');
    expect(u.usedSince('h')).toBe(true);
    expect(u.usedSince('g')).toBe(false);
    u.began('h');
    expect(u.usedSince('h')).toBe(false);
  });

  it('decides only once every listing under way, and any that started meanwhile, has settled', async () => {
    const u = new AdoptionUses();
    const first = later(['a']);
    const second = later(['b']);
    const decided: string[] = [];
    expect(u.listing('h', first.promise)).toBe(first.promise);
    const decision = u.afterListings('h', () => {
      decided.push('decided');
      return 'closed';
    });
    await Promise.resolve();
    u.listing('h', second.promise);
    first.settle();
    await first.promise;
    await new Promise((r) => setImmediate(r));
    expect(decided).toEqual([]);
    second.settle();
    expect(await decision).toBe('closed');
    expect(decided).toEqual(['decided']);
  });

  it('a failed listing settles too; listings of other hosts are not waited for', async () => {
    const u = new AdoptionUses();
    u.listing('g', new Promise(() => {}));
    const failed = u.listing('h', Promise.reject(new Error('link lost')));
    await expect(failed).rejects.toThrow('link lost');
    expect(await u.afterListings('h', () => 'decided')).toBe('decided');
  });
});
