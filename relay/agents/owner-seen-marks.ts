/**
 * When each agent owner was last connected, told to the daemons that hold its terminals (the
 * `agentSeen` stub call): a relay started later counts the owner-gone grace from there. Marked
 * every OWNER_SEEN_REFRESH_MS for connected owners, on an owner's tool calls (at most every
 * OWNER_SEEN_THROTTLE_MS) and when it leaves; a stop waits a while for the marks in flight.
 */
import type { IPtyProvider } from '../../provider/contract.js';
import type { Logger } from '../core/log.js';
import type { AgentOwner } from './agent-owner.js';

/** How often the daemons hear that a connected owner is still there (the grace counts from it). */
export const OWNER_SEEN_REFRESH_MS = 60_000;
/** An owner's tool calls tell its daemons it is connected at most this often. */
const OWNER_SEEN_THROTTLE_MS = 5000;
/** A stop waits this long at most for the marks (a host that is down must not hold it up). */
const STOP_WAIT_MS = 2000;

/** One terminal as the marks need it. */
export interface SeenTerminal {
  owner: AgentOwner;
  provider: IPtyProvider;
  providerId: string;
  exited: boolean;
}

export class OwnerSeenMarks {
  private readonly timer: NodeJS.Timeout;
  /** Marks in flight (a stop waits for them). */
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly terminals: () => Iterable<SeenTerminal>,
    private readonly log?: Logger,
  ) {
    this.timer = setInterval(() => void this.mark((o) => !o.away), OWNER_SEEN_REFRESH_MS);
    this.timer.unref();
  }

  /** `owner` acts now, so it is connected (throttled). */
  touch(owner: AgentOwner): void {
    const now = Date.now();
    if (now - owner.seenMarkedAt < OWNER_SEEN_THROTTLE_MS) return;
    owner.seenMarkedAt = now;
    this.track(this.mark((o) => o === owner));
  }

  /** `owner` leaves now: this is the last time it was connected. */
  left(owner: AgentOwner): void {
    this.track(this.mark((o) => o === owner));
  }

  /** The relay stops: the owners still connected were seen now; waits for every mark in flight. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    const marks = Promise.all([this.mark((o) => !o.away), ...this.inFlight]);
    await Promise.race([marks, new Promise<void>((r) => setTimeout(r, STOP_WAIT_MS).unref())]);
  }

  dispose(): void {
    clearInterval(this.timer);
  }

  private track(p: Promise<void>): void {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  /** Tells the daemons that the owners `which` picks are connected now (best effort). */
  private async mark(which: (o: AgentOwner) => boolean): Promise<void> {
    const now = Date.now();
    const byProvider = new Map<IPtyProvider, string[]>();
    for (const t of this.terminals()) {
      if (t.owner.gone || !which(t.owner) || t.exited) continue;
      byProvider.set(t.provider, [...(byProvider.get(t.provider) ?? []), t.providerId]);
    }
    await Promise.all(
      [...byProvider].map(([p, ids]) =>
        p
          .agentSeen?.(ids, now)
          .catch((err: Error) => this.log?.debug({ err: err.message }, 'agent owners not marked seen')),
      ),
    );
  }
}
