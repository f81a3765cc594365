/**
 * A relay knows every terminal its hosts hold. Whenever its link to a host comes up (adopted at
 * start, first used, back after an outage), the terminals that host's daemons hold and the
 * registry does not know are published, unclaimed, with their title, cwd and last command; the
 * unclaimed ones the host no longer holds leave. The web page, `ls`, the AHP catalog and the
 * agents' tools all read the registry, so they show terminals that existed before the relay did.
 */
import type { PtyProcessInfo } from '../../provider/contract.js';
import { eachProvider } from '../core/each-provider.js';
import type { Logger } from '../core/log.js';
import type { HostRouter } from '../core/rpc-types.js';
import { claimOfOwner } from './host-owners.js';
import type { TerminalRegistry } from './terminal-registry.js';

export class HostPublisher {
  private readonly refreshing = new Map<string, Promise<void>>();
  private readonly offs: Array<() => void> = [];

  constructor(
    private readonly router: HostRouter,
    private readonly registry: TerminalRegistry,
    private readonly log?: Logger,
  ) {
    this.offs.push(
      eachProvider(router, (p) => {
        const off = p.onLinkState?.((e) => {
          // An older build's daemon (`host#build`) is listed with its host.
          if (e.state.state === 'connected') void this.refresh(e.host.split('#')[0]!);
        });
        if (off) this.offs.push(off);
      }),
    );
  }

  /** Lists `host` and publishes what it holds (one listing per host at a time). */
  refresh(host: string): Promise<void> {
    let pending = this.refreshing.get(host);
    if (!pending) {
      pending = this.router
        .listHost(host)
        .then(
          (list) => this.publish(host, list),
          (err: Error) => this.log?.info({ host, err: err.message }, 'host terminals not published'),
        )
        .finally(() => this.refreshing.delete(host));
      this.refreshing.set(host, pending);
    }
    return pending;
  }

  /** Publishes `list` as what `host` holds now. */
  publish(host: string, list: PtyProcessInfo[]): void {
    if (!this.router.hosts().includes(host)) return;
    const held = new Set(list.map((t) => t.id));
    let added = 0;
    for (const t of list) {
      const known = this.registry.find(t.id);
      if (known) {
        if (t.lastCommand && known.claim.kind === 'none')
          this.registry.update(t.id, { lastCommand: t.lastCommand });
        const hostClaim = claimOfOwner(t.owner);
        // Claimed through another relay since this one published it: the host's owner holds.
        if (hostClaim && known.claim.kind === 'none')
          this.registry.update(t.id, { claim: hostClaim, hostOwner: t.owner });
        continue;
      }
      this.registry.add({
        id: t.id,
        host,
        // An agent terminal keeps its owner's claim (the agent service adopts it too); another
        // keeps the owner its host holds (claimed through this or another relay).
        claim: t.agent
          ? { kind: 'session', session: t.agent.owner }
          : (claimOfOwner(t.owner) ?? { kind: 'none' }),
        ...(t.owner !== undefined ? { hostOwner: t.owner } : {}),
        title: t.title,
        ...(t.name ? { name: t.name } : {}),
        ...(t.cwd ? { cwd: t.cwd } : {}),
        cols: t.cols,
        rows: t.rows,
        ...(t.exited ? { exitCode: t.exited.exitCode } : {}),
        incarnationId: t.incarnationId,
        createdAt: Date.now(),
        ...(t.alias !== undefined ? { alias: t.alias } : {}),
        ...(t.lastCommand ? { lastCommand: t.lastCommand } : {}),
      });
      added++;
    }
    for (const r of this.registry.list())
      if (r.host === host && r.claim.kind === 'none' && !held.has(r.id)) this.registry.remove(r.id);
    if (added > 0) this.log?.info({ host, added }, 'published terminals the host holds');
  }

  dispose(): void {
    for (const off of this.offs.splice(0)) off();
  }
}
