import type { Grant } from '../core/grant.js';
import type { Logger } from '../core/log.js';

/** Input is summed per token and terminal and written out this often (one line, not one per keystroke). */
export const AUDIT_FLUSH_MS = 5000;

interface Tally {
  grant: Grant;
  terminal: string;
  bytes: number;
  writes: number;
  from: number;
  to: number;
}

/**
 * Who typed into which terminal, when, and how much: one `input audit` log line per token and
 * terminal every few seconds, with byte and write counts. What was typed is never recorded.
 */
export class InputAudit {
  private readonly tallies = new Map<string, Tally>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly log?: Logger,
    private readonly flushMs = AUDIT_FLUSH_MS,
  ) {}

  record(grant: Grant, terminal: string, bytes: number, now = Date.now()): void {
    const key = `${grant.tokenId}\n${terminal}`;
    const t = this.tallies.get(key);
    if (t) {
      t.bytes += bytes;
      t.writes += 1;
      t.to = now;
    } else {
      this.tallies.set(key, { grant, terminal, bytes, writes: 1, from: now, to: now });
    }
    if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), this.flushMs);
      this.timer.unref();
    }
  }

  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const t of this.tallies.values()) {
      this.log?.info(
        {
          audit: 'input',
          tokenName: t.grant.name,
          tokenId: t.grant.tokenId,
          scope: t.grant.scope,
          terminal: t.terminal,
          bytes: t.bytes,
          writes: t.writes,
          from: new Date(t.from).toISOString(),
          to: new Date(t.to).toISOString(),
        },
        'input audit',
      );
    }
    this.tallies.clear();
  }

  dispose(): void {
    this.flush();
  }
}
