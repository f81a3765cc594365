import type { HostRouter } from '../core/rpc-types.js';

/** A relay asks its unlinked hosts at most this often for the terminals they hold. */
export const CATALOG_REFRESH_MS = 10_000;

/**
 * A relay publishes a host's terminals when its link to that host comes up (host-publisher.ts).
 * A host this relay has not linked since it started can still hold terminals: opened through
 * another relay of a fleet, or deployed to after this relay's adoption at start found no stub.
 * When a client looks at the catalog (the web page's overview), this links every host whose link
 * is idle and that runs this build's stub (never deploying), so the catalog fills in and its
 * watchers get the change; at most every CATALOG_REFRESH_MS, never waited for.
 */
export class CatalogRefresh {
  private last = Number.NEGATIVE_INFINITY;
  private running = false;

  constructor(
    private readonly router: HostRouter,
    private readonly minIntervalMs = CATALOG_REFRESH_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Starts a refresh unless one ran within the interval or is running. */
  request(): void {
    const adopt = this.router.adoptHost?.bind(this.router);
    if (!adopt || this.running || this.now() - this.last < this.minIntervalMs) return;
    const idle = this.router.hosts().filter((h) => this.router.linkState(h).state === 'idle');
    if (idle.length === 0) return;
    this.running = true;
    this.last = this.now();
    void Promise.all(idle.map((h) => adopt(h).catch(() => false))).finally(() => {
      this.running = false;
    });
  }
}
