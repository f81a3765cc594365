/**
 * Which open terminals the page shows: the active one, and in a split view a second one beside
 * it. Pure state (the page applies it to the DOM and to each pane's background flag).
 */
export class PaneLayout {
  active: string | undefined;
  /** Split view: the two terminals shown side by side (left, right), one of them active. */
  pair: [string, string] | undefined;
  /** Open terminals, most recently active last. */
  private mru: string[] = [];

  /** `id` becomes active; in a split view it takes the slot of the terminal that was active. */
  activate(id: string): void {
    if (this.pair && !this.pair.includes(id)) {
      const slot = this.active === this.pair[0] ? 0 : 1;
      this.pair[slot] = id;
    }
    this.active = id;
    this.mru = [...this.mru.filter((x) => x !== id), id];
  }

  /** Terminals on screen now. */
  shown(): Set<string> {
    return new Set(this.pair ?? (this.active ? [this.active] : []));
  }

  /**
   * Splits (the active terminal beside the one used before it, among `open`) or unsplits.
   * False when there is no second terminal to show.
   */
  toggleSplit(open: (id: string) => boolean): boolean {
    if (this.pair) {
      this.pair = undefined;
      return true;
    }
    const other = this.mru.filter((x) => x !== this.active && open(x)).at(-1);
    if (!this.active || !other) return false;
    this.pair = [other, this.active];
    return true;
  }

  /** `id` was closed: returns the terminal to activate instead, if it was the active one. */
  forget(id: string): string | undefined {
    this.mru = this.mru.filter((x) => x !== id);
    if (this.pair?.includes(id)) this.pair = undefined;
    if (this.active !== id) return undefined;
    this.active = undefined;
    return this.mru.at(-1);
  }
}
