/**
 * Which daemon (link key: `host` or `host#<build>`) serves each terminal, for ids that do not say:
 * since ids are unique on a host across daemons, `h/pty-7` may live in the current build's daemon or
 * in an older build's that still serves it after an upgrade. Filled from spawns, attaches and
 * listings; an id it does not know belongs to the host's current daemon unless a listing finds it
 * elsewhere.
 */
export class TerminalRoutes {
  private readonly links = new Map<string, string>();

  get(id: string): string | undefined {
    return this.links.get(id);
  }

  has(id: string): boolean {
    return this.links.has(id);
  }

  set(id: string, linkKey: string): void {
    this.links.set(id, linkKey);
  }

  delete(id: string): void {
    this.links.delete(id);
  }

  /** A fresh listing of one daemon: exactly `ids` are routed to `linkKey` from now on. */
  replaceLink(linkKey: string, ids: readonly string[]): void {
    this.forgetLink(linkKey);
    for (const id of ids) this.links.set(id, linkKey);
  }

  /** The daemon behind `linkKey` is gone: none of its terminals is routed to it any more. */
  forgetLink(linkKey: string): void {
    for (const [id, key] of this.links) if (key === linkKey) this.links.delete(id);
  }
}
