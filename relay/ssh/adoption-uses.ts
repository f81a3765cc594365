import { hostOfLinkKey } from '../stub-link/terminal-ids.js';

/**
 * What an adopted host was used for since its adoption began, for SshPtyProvider.releaseIfEmpty:
 * a use (a spawn, an attach, an LSP query, an agent's read) keeps the host's link; a listing (the
 * catalog's when a link comes up, `ls`) does not, but the release lets it finish first.
 */
export class AdoptionUses {
  private readonly used = new Set<string>();
  private readonly listings = new Map<string, Set<Promise<unknown>>>();

  /** An adoption of `host` begins: nothing has used it yet. */
  began(host: string): void {
    this.used.delete(host);
  }

  /** Link key `key` (`host` or `host#<build>`) is being used. Call it before the use awaits anything. */
  use(key: string): void {
    this.used.add(hostOfLinkKey(key));
  }

  usedSince(host: string): boolean {
    return this.used.has(host);
  }

  /** Counts `listing` of `host` as under way until it settles; returns it. */
  listing<T>(host: string, listing: Promise<T>): Promise<T> {
    const under = this.listings.get(host) ?? new Set<Promise<unknown>>();
    this.listings.set(host, under);
    under.add(listing);
    const settled = () => {
      under.delete(listing);
      if (under.size === 0 && this.listings.get(host) === under) this.listings.delete(host);
    };
    listing.then(settled, settled);
    return listing;
  }

  /**
   * Waits until no listing of `host` is under way, then returns `decide()`, called in the same
   * turn as the last look: a listing or use that starts after it comes after the decision.
   */
  async afterListings<T>(host: string, decide: () => T): Promise<T> {
    for (let under = this.listings.get(host); under?.size; under = this.listings.get(host)) {
      await Promise.allSettled([...under]);
    }
    return decide();
  }
}
