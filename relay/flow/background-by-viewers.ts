import type { HostRouter } from '../core/rpc-types.js';

/**
 * Who wants which terminal in the background. The stub thins a terminal per relay link (keep-tail),
 * and every consumer of this relay shares that link, so the relay puts a terminal in the
 * background only while it has viewers and every one of them asked for it: a hidden browser tab
 * no longer thins the output a CLI viewer of the same terminal is reading (issue 15). A viewer
 * that attaches counts as foreground unless it says otherwise; one that leaves no longer counts.
 * With no viewer left the terminal keeps the state it had.
 */
export class BackgroundVotes {
  /** Per terminal: each viewer's wish (true: background). */
  private readonly byId = new Map<string, Map<object, boolean>>();
  /** Per terminal: the state last asked of the provider (absent: foreground, the stub's default). */
  private readonly applied = new Map<string, boolean>();

  /** Records `viewer`'s wish; returns the state to ask of the provider, or undefined when it stays. */
  vote(id: string, viewer: object, background: boolean): boolean | undefined {
    let votes = this.byId.get(id);
    if (!votes) {
      votes = new Map();
      this.byId.set(id, votes);
    }
    votes.set(viewer, background);
    return this.settle(id);
  }

  /** `viewer` stopped viewing `id` (detach), or every terminal (closed); returns the changes. */
  leave(viewer: object, id?: string): Array<{ id: string; background: boolean }> {
    const changes: Array<{ id: string; background: boolean }> = [];
    const ids = id === undefined ? [...this.byId.keys()] : [id];
    for (const t of ids) {
      const votes = this.byId.get(t);
      if (!votes?.delete(viewer)) continue;
      if (votes.size === 0) {
        this.byId.delete(t);
        continue;
      }
      const background = this.settle(t);
      if (background !== undefined) changes.push({ id: t, background });
    }
    return changes;
  }

  /** The terminal is gone. */
  forget(id: string): void {
    this.byId.delete(id);
    this.applied.delete(id);
  }

  /** Whether the terminal is (to be) in the background. */
  background(id: string): boolean {
    return this.applied.get(id) === true;
  }

  private settle(id: string): boolean | undefined {
    const votes = this.byId.get(id);
    if (!votes || votes.size === 0) return undefined;
    let all = true;
    for (const v of votes.values()) all &&= v;
    if (all === this.background(id)) return undefined;
    this.applied.set(id, all);
    return all;
  }
}

/** Logs a provider's refusal (the terminal may have gone meanwhile). */
type WarnFn = (fields: Record<string, unknown>, msg: string) => void;

/** {@link BackgroundVotes} that also asks the right provider when a terminal's state changes. */
export class RouterBackground {
  private readonly votes = new BackgroundVotes();

  constructor(private readonly router: HostRouter) {}

  /** Records a wish and applies a resulting change; resolves once the provider answered. */
  async vote(id: string, viewer: object, background: boolean): Promise<void> {
    const change = this.votes.vote(id, viewer, background);
    if (change !== undefined) await this.apply(id, change);
  }

  /** A viewer left one terminal or all; changes are applied in the background (failures logged). */
  leave(viewer: object, id: string | undefined, warn?: WarnFn): void {
    for (const c of this.votes.leave(viewer, id)) {
      this.apply(c.id, c.background).catch((err: Error) =>
        warn?.({ id: c.id, background: c.background, err: err.message }, 'cannot change background state'),
      );
    }
  }

  forget(id: string): void {
    this.votes.forget(id);
  }

  /**
   * The relay attached `id` on the provider again (a viewer's attach, a lagging consumer's
   * resume, an AHP adoption): the stub takes a link's attach as foreground, so a terminal its
   * viewers keep in the background is put back there.
   */
  attached(id: string, warn?: WarnFn): void {
    if (!this.votes.background(id)) return;
    this.apply(id, true).catch((err: Error) =>
      warn?.({ id, err: err.message }, 'cannot put a re-attached terminal back in the background'),
    );
  }

  private async apply(id: string, background: boolean): Promise<void> {
    const slash = id.lastIndexOf('/');
    const host = slash < 0 ? 'local' : id.slice(0, slash);
    await this.router.providerFor(host).setPtyBackgrounded(id, background);
  }
}

const byRouter = new WeakMap<HostRouter, RouterBackground>();

/** The background votes of every consumer of `router` (ptyrelay/* connections and AHP peers). */
export function backgroundFor(router: HostRouter): RouterBackground {
  let b = byRouter.get(router);
  if (!b) {
    b = new RouterBackground(router);
    byRouter.set(router, b);
  }
  return b;
}
