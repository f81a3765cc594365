import type { LastCommand } from '../../provider/contract.js';
import { Emitter } from '../../provider/emitter.js';
import { PtyRelayError } from '../../provider/errors.js';

/**
 * Who owns a terminal (AHP TerminalClaim). `none`: published from what a host holds (it ran
 * before this relay started, or its owner's relay is gone); the first client that attaches to
 * drive it claims it.
 */
export type TerminalClaim =
  | { kind: 'client'; clientId: string }
  | { kind: 'session'; session: string; turnId?: string; toolCallId?: string }
  | { kind: 'none' };

/** The holder string of an unclaimed terminal (never a client's or a session's). */
export const UNCLAIMED = 'unclaimed';

export interface TerminalRecord {
  /** Provider id, `<host>/<id>`. */
  id: string;
  host: string;
  claim: TerminalClaim;
  title: string;
  name?: string;
  cwd?: string;
  cols: number;
  rows: number;
  exitCode?: number;
  incarnationId: string;
  createdAt: number;
  /** Client-chosen AHP channel URI, stored with the session on its daemon. */
  alias?: string;
  /** The last command its host reported when the relay published it (facts update the live one). */
  lastCommand?: LastCommand;
  /**
   * The owner its host's daemon is known to hold (PtySpawnOptions.owner), as a spawn, a listing or
   * an attach reported it; host-owners.ts sends the claim to the host when they differ.
   */
  hostOwner?: string;
}

export function claimHolder(claim: TerminalClaim): string {
  if (claim.kind === 'none') return UNCLAIMED;
  return claim.kind === 'client' ? `client:${claim.clientId}` : `session:${claim.session}`;
}

/**
 * The service's record of every terminal it published: claims, catalog fields. A terminal is
 * added only after its spawn succeeded. Shared by the AHP channel and the ptyrelay extension.
 */
export class TerminalRegistry {
  private readonly records = new Map<string, TerminalRecord>();
  /** Fires after any add, remove or catalog-visible change. */
  readonly changed = new Emitter<void>();
  /** Fires after a terminal was added with a claim, or its claim changed (`previous`: before). */
  readonly claimChanged = new Emitter<{ id: string; previous?: TerminalClaim }>();

  add(r: TerminalRecord): void {
    this.records.set(r.id, r);
    this.changed.emit();
    if (r.claim.kind !== 'none') this.claimChanged.emit({ id: r.id });
  }

  get(id: string): TerminalRecord {
    const r = this.records.get(id);
    if (!r) throw new PtyRelayError('NOT_FOUND', `no terminal ${id}`, { id });
    return r;
  }

  find(id: string): TerminalRecord | undefined {
    return this.records.get(id);
  }

  list(): TerminalRecord[] {
    return [...this.records.values()];
  }

  update(id: string, patch: Partial<Omit<TerminalRecord, 'id'>>): void {
    const r = this.records.get(id);
    if (!r) return;
    const previous = r.claim;
    Object.assign(r, patch);
    this.changed.emit();
    if (patch.claim && claimHolder(patch.claim) !== claimHolder(previous))
      this.claimChanged.emit({ id, previous });
  }

  remove(id: string): void {
    if (this.records.delete(id)) this.changed.emit();
  }

  /** Throws NOT_FOUND or NOT_OWNER unless `holder` (see claimHolder) owns the terminal. */
  checkClaim(id: string, holder: string): TerminalRecord {
    const r = this.get(id);
    if (r.claim.kind === 'none')
      throw new PtyRelayError('NOT_OWNER', `${id} is not claimed by anyone yet: attach to claim it`, { id });
    if (claimHolder(r.claim) !== holder) {
      throw new PtyRelayError('NOT_OWNER', `${id} is claimed by ${claimHolder(r.claim)}`, { id });
    }
    return r;
  }
}
