import type { Unsubscribe } from '../../provider/contract.js';
import type { Logger } from '../core/log.js';
import type { HostRouter } from '../core/rpc-types.js';
import { claimHolder, type TerminalClaim, type TerminalRegistry } from './terminal-registry.js';

/**
 * The claim an owner string kept by a host's daemon stands for (`client:ID`, `session:KEY`; see
 * claimHolder), or undefined for none or one this relay does not understand.
 */
export function claimOfOwner(owner: string | undefined): TerminalClaim | undefined {
  if (owner?.startsWith('client:') && owner.length > 7) return { kind: 'client', clientId: owner.slice(7) };
  if (owner?.startsWith('session:') && owner.length > 8) return { kind: 'session', session: owner.slice(8) };
  return undefined;
}

/** The owner string a daemon keeps for `claim` (PtySpawnOptions.owner); undefined for none. */
export function ownerOfClaim(claim: TerminalClaim): string | undefined {
  return claim.kind === 'none' ? undefined : claimHolder(claim);
}

/**
 * Hosts hold their terminals' owners, so that every relay — a restarted one, another of a fleet —
 * knows whose a terminal is. Whenever a claim in the registry differs from what its host is known
 * to hold (`hostOwner`: a spawn's owner, the owner a listing or an attach reported), the claim is
 * sent to the daemon: a transfer of the owner the host held is recorded as it is; anything else
 * (an adoption) only when the host has no owner yet, and when another relay's client was first,
 * the registry takes the host's owner instead (the host decides).
 */
export class HostOwnerSync {
  private readonly off: Unsubscribe;

  constructor(
    private readonly router: HostRouter,
    private readonly registry: TerminalRegistry,
    private readonly log?: Logger,
  ) {
    this.off = registry.claimChanged.on((e) => void this.sync(e.id, e.previous));
  }

  private async sync(id: string, previous: TerminalClaim | undefined): Promise<void> {
    const rec = this.registry.find(id);
    const want = rec && ownerOfClaim(rec.claim);
    if (!rec || want === undefined || rec.hostOwner === want) return;
    const provider = this.router.providerFor(rec.host);
    if (!provider.claimOwner) return;
    const transfer =
      rec.hostOwner !== undefined && previous !== undefined && claimHolder(previous) === rec.hostOwner;
    try {
      const held = await provider.claimOwner(id, want, { ifUnowned: !transfer });
      const now = this.registry.find(id);
      if (!now) return;
      now.hostOwner = held;
      const hostClaim = claimOfOwner(held);
      if (held !== want && hostClaim && ownerOfClaim(now.claim) === want) {
        this.log?.info({ id, wanted: want, owner: held }, 'the host holds another owner for this terminal');
        this.registry.update(id, { claim: hostClaim });
      }
    } catch (err) {
      // An older daemon keeps no owners: the claim stays this relay's alone.
      this.log?.debug({ id, err: (err as Error).message }, 'owner not recorded on the host');
    }
  }

  dispose(): void {
    this.off();
  }
}
