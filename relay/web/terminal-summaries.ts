import type { PtyBackgroundStreamEvent, PtyFact } from '../../provider/contract.js';
import { claimHolder, type TerminalRecord } from '../terminals/terminal-registry.js';

/** The last command a terminal ran, from its shell integration facts. */
export interface CommandSummary {
  commandLine: string;
  running: boolean;
  exitCode?: number;
  durationMs?: number;
}

/** One row of the web page's overview. */
export interface TerminalSummary {
  id: string;
  host: string;
  title: string;
  /** A name the user gave it (rename), shown instead of the title. */
  name?: string;
  cwd?: string;
  /** `client:<id>` or `session:<id>`. */
  owner: string;
  exitCode?: number;
  lastCommand?: CommandSummary;
  /** Output over the last measuring interval (background data gaps included). */
  bytesPerSec: number;
  /** Bells since the relay first saw the terminal (the page badges the ones it has not shown). */
  bells: number;
  createdAt: number;
}

interface Live {
  incarnationId?: string;
  bytes: number;
  rate: number;
  bells: number;
  cwd?: string;
  lastCommand?: CommandSummary;
}

/**
 * Per-terminal activity for the overview, fed with provider events (pure: no timers). `tick(ms)`
 * turns the bytes counted since the last tick into a rate; `list(records)` joins it with the
 * registry's catalog fields.
 */
export class TerminalSummaries {
  private readonly live = new Map<string, Live>();

  private entry(id: string, incarnationId: string): Live {
    let l = this.live.get(id);
    if (!l || (l.incarnationId !== undefined && l.incarnationId !== incarnationId)) {
      l = { incarnationId, bytes: 0, rate: 0, bells: 0 };
      this.live.set(id, l);
    }
    l.incarnationId = incarnationId;
    return l;
  }

  data(id: string, incarnationId: string, bytes: number): void {
    this.entry(id, incarnationId).bytes += bytes;
  }

  fact(id: string, incarnationId: string, fact: PtyFact | { type: 'exit' }): void {
    const l = this.entry(id, incarnationId);
    switch (fact.type) {
      case 'bell':
        l.bells++;
        break;
      case 'cwd':
        l.cwd = fact.cwd;
        break;
      case 'commandStarted':
        l.lastCommand = { commandLine: fact.commandLine, running: true };
        break;
      case 'commandFinished': {
        const commandLine = fact.commandLine ?? l.lastCommand?.commandLine ?? '';
        const done: CommandSummary = { commandLine, running: false };
        if (fact.exitCode !== undefined) done.exitCode = fact.exitCode;
        if (fact.durationMs !== undefined) done.durationMs = fact.durationMs;
        l.lastCommand = done;
        break;
      }
      default:
        break;
    }
  }

  /** A background stream event: dropped bytes still count as activity, facts in them as facts. */
  background(e: PtyBackgroundStreamEvent): void {
    if (e.type === 'dataGap') this.data(e.id, e.incarnationId, e.droppedBytes);
    else if (e.type === 'fact') this.fact(e.id, e.incarnationId, e.fact);
  }

  /** Closes a measuring interval of `elapsedMs`. */
  tick(elapsedMs: number): void {
    for (const l of this.live.values()) {
      l.rate = elapsedMs > 0 ? Math.round((l.bytes * 1000) / elapsedMs) : 0;
      l.bytes = 0;
    }
  }

  forget(id: string): void {
    this.live.delete(id);
  }

  /** Summaries of the published terminals, oldest first; forgets terminals no longer listed. */
  list(records: TerminalRecord[]): TerminalSummary[] {
    const ids = new Set(records.map((r) => r.id));
    for (const id of this.live.keys()) if (!ids.has(id)) this.live.delete(id);
    return [...records]
      .sort((a, b) => a.createdAt - b.createdAt)
      .map((r) => {
        const l = this.live.get(r.id);
        const fresh = l && (l.incarnationId === undefined || l.incarnationId === r.incarnationId);
        const s: TerminalSummary = {
          id: r.id,
          host: r.host,
          title: r.title,
          owner: claimHolder(r.claim),
          bytesPerSec: fresh ? l.rate : 0,
          bells: fresh ? l.bells : 0,
          createdAt: r.createdAt,
        };
        if (r.name) s.name = r.name;
        const cwd = (fresh ? l.cwd : undefined) ?? r.cwd;
        if (cwd) s.cwd = cwd;
        if (r.exitCode !== undefined) s.exitCode = r.exitCode;
        if (fresh && l.lastCommand) s.lastCommand = { ...l.lastCommand };
        // Published from its host: the last command the host reported, until facts say more.
        else if (r.lastCommand) s.lastCommand = { ...r.lastCommand };
        return s;
      });
  }
}
