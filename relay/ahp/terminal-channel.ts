import type { PtyFact, ScreenSnapshot } from '../../provider/contract.js';
import type { TerminalClaim } from '../terminals/terminal-registry.js';
import { PendingText } from './pending-text.js';
import {
  boundContent,
  DEFAULT_CONTENT_LIMIT,
  DEFAULT_MAX_PARTS,
  terminalReducer,
} from './terminal-reducer.js';
import type { TerminalAction, TerminalContentPart, TerminalState } from './types.js';
import { channelUri, pathToUri } from './uris.js';

/** A provider event for one terminal, queued until the next flush. */
export type FeedItem =
  | { kind: 'data'; seq: number; data: Uint8Array }
  | { kind: 'fact'; seq: number; fact: PtyFact }
  | { kind: 'exit'; exitCode: number }
  | { kind: 'reset'; snapshot?: ScreenSnapshot; expired?: boolean };

/** Content may reach this multiple of its limit before it is trimmed back. */
const SLACK_FACTOR = 2;

/** Raw output bytes behind a `terminal/data` action (for the binary fast path). */
export interface RawSegment {
  id: string;
  incarnationId: string;
  seq: number;
  data: Uint8Array;
}

/**
 * Receives the actions a channel derives from provider events. `raw` accompanies output; its
 * action is undefined when the bytes completed no character yet (a split UTF-8 sequence).
 */
export type ChannelSink = (ch: TerminalChannel, action: TerminalAction | undefined, raw?: RawSegment) => void;

/** What a channel starts from. */
export interface ChannelInit {
  id: string;
  incarnationId: string;
  title: string;
  claim: TerminalClaim;
  cwd?: string;
  cols: number;
  rows: number;
  exitCode?: number;
  /** Seq of the next output byte the provider will deliver. */
  nextSeq: number;
  /**
   * Opened from a registry record (a terminal another extension published, or one recorded before
   * this hub existed): the state holds only output seen since, not the terminal's history.
   */
  historyMissing?: boolean;
  /** The client-chosen channel URI, if any. */
  alias?: string;
}

/**
 * One terminal's AHP state and the translation of its provider events into terminal actions.
 * Data and facts travel as separate stub frames (a chunk first, then the facts found in it), so
 * events are queued for one turn of the event loop and merged by stream position: a chunk is
 * split where a fact occurred, and command output lands in the right content part.
 */
export class TerminalChannel {
  readonly uri: string;
  private current: TerminalState;
  /** Output applied since the last fold (pending-text.ts): folded in when the state is read. */
  private readonly pending: PendingText;
  incarnationId: string;
  /** Seq of the next output byte expected (older bytes are duplicates). */
  nextSeq: number;
  /** See {@link ChannelInit.historyMissing}. */
  readonly historyMissing: boolean;
  private decoder = new TextDecoder('utf-8');
  private queue: FeedItem[] = [];
  private scheduled: NodeJS.Immediate | undefined;
  private openCommandId: string | undefined;
  private commandCount = 0;
  /** Content size since the last trim (an upper bound). */
  private approxChars = 0;

  constructor(
    readonly id: string,
    init: ChannelInit,
    private readonly sink: ChannelSink,
    private readonly contentLimit = DEFAULT_CONTENT_LIMIT,
  ) {
    this.uri = channelUri(id, init.alias);
    this.incarnationId = init.incarnationId;
    this.nextSeq = init.nextSeq;
    this.historyMissing = init.historyMissing === true;
    this.pending = new PendingText(contentLimit);
    this.current = { title: init.title, cols: init.cols, rows: init.rows, content: [], claim: init.claim };
    if (init.cwd) this.current.cwd = pathToUri(init.cwd);
    if (init.exitCode !== undefined) this.current.exitCode = init.exitCode;
  }

  /** The terminal's AHP state (content bounded loosely: up to twice the limit). */
  get state(): TerminalState {
    this.foldText();
    return this.current;
  }

  /**
   * Applies an action to the state. Output waits as text pieces until the state is read or another
   * action comes (the reducer folds consecutive output the same way, piece by piece or at once).
   * Content may grow to twice the limit before it is cut back, so trimming costs O(1) per output
   * byte; `snapshotState()` applies the exact bound.
   */
  apply(action: TerminalAction): void {
    if (action.type === 'terminal/data') {
      if (this.pending.push(action.data)) this.forgetOlderContent();
      return;
    }
    this.foldText();
    this.current = terminalReducer(this.current, action);
    if (action.type === 'terminal/cleared') this.approxChars = 0;
    else if (action.type === 'terminal/commandExecuted') this.approxChars += action.commandLine.length;
    else return;
    this.bound(false);
  }

  /**
   * The pending text alone fills the bound: no content before it can stay. Only the part it will
   * continue remains, emptied (an open command keeps its line; output after a finished command
   * starts a part of its own), so a flood holds at most the pending text.
   */
  private forgetOlderContent(): void {
    const { content } = this.current;
    const tail = content.at(-1);
    if (content.length === 0) return;
    if (content.length === 1 && (tail?.type === 'unclassified' ? tail.value : tail?.output) === '') return;
    let kept: TerminalContentPart[] = [];
    if (tail?.type === 'unclassified') kept = [{ ...tail, value: '' }];
    else if (tail?.type === 'command' && !tail.isComplete) kept = [{ ...tail, output: '' }];
    this.current = { ...this.current, content: kept };
    this.approxChars = tail?.type === 'command' && kept.length > 0 ? tail.commandLine.length : 0;
  }

  private foldText(): void {
    const taken = this.pending.take();
    if (!taken) return;
    this.current = terminalReducer(this.current, { type: 'terminal/data', data: taken.text });
    this.approxChars += taken.text.length;
    this.bound(taken.cut);
  }

  /** Cuts the content back to its limit once it is over the slack (or `now`). */
  private bound(now: boolean): void {
    const parts = this.current.content.length;
    if (
      now ||
      this.approxChars > this.contentLimit * SLACK_FACTOR ||
      parts > DEFAULT_MAX_PARTS * SLACK_FACTOR
    ) {
      this.current = boundContent(this.current, this.contentLimit);
      this.approxChars = Math.min(this.approxChars, this.contentLimit);
    }
  }

  /** The state with content bounded to exactly the limit (what snapshots carry). */
  snapshotState(): TerminalState {
    return boundContent(this.state, this.contentLimit);
  }

  /** Decodes initial output (the spawn replay) straight into the state, before anyone subscribed. */
  seed(data: Uint8Array, seq: number): void {
    const text = this.decoder.decode(data, { stream: true });
    if (text) this.apply({ type: 'terminal/data', data: text });
    this.nextSeq = Math.max(this.nextSeq, seq + data.length);
  }

  /** Starts the state from a screen snapshot taken at `seq` (adopting a running terminal). */
  seedSnapshot(snapshot: ScreenSnapshot): void {
    if (snapshot.data) this.apply({ type: 'terminal/data', data: snapshot.data });
    this.nextSeq = Math.max(this.nextSeq, snapshot.seq);
  }

  push(item: FeedItem): void {
    this.queue.push(item);
    this.scheduled ??= setImmediate(() => this.flush());
  }

  /** Processes everything queued now (also used on dispose and in tests). */
  flush(): void {
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    const items = this.queue;
    this.queue = [];
    let segment: FeedItem[] = [];
    for (const item of items) {
      if (item.kind === 'data' || item.kind === 'fact') {
        segment.push(item);
        continue;
      }
      this.mergeSegment(segment);
      segment = [];
      if (item.kind === 'exit') this.emit({ type: 'terminal/exited', exitCode: item.exitCode });
      else this.reset(item);
    }
    this.mergeSegment(segment);
  }

  /** Hands over the events not processed yet (a channel replacing this one takes them). */
  takeQueued(): FeedItem[] {
    const items = this.queue;
    this.dispose();
    return items;
  }

  /** Drops queued events (the terminal is going away). */
  dispose(): void {
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    this.queue = [];
  }

  private mergeSegment(items: FeedItem[]): void {
    const facts = items.filter((i): i is Extract<FeedItem, { kind: 'fact' }> => i.kind === 'fact');
    let fi = 0;
    for (const d of items) {
      if (d.kind !== 'data') continue;
      const end = d.seq + d.data.length;
      let off = 0;
      while (fi < facts.length && facts[fi]!.seq < end) {
        const cut = Math.max(0, facts[fi]!.seq - d.seq);
        if (cut > off) this.output(d.seq + off, d.data.subarray(off, cut));
        off = Math.max(off, cut);
        this.fact(facts[fi]!.fact);
        fi++;
      }
      if (off < d.data.length) this.output(d.seq + off, d.data.subarray(off));
    }
    for (; fi < facts.length; fi++) this.fact(facts[fi]!.fact);
  }

  private output(seq: number, data: Uint8Array): void {
    let bytes = data;
    let at = seq;
    if (at < this.nextSeq) {
      // Already seen (the spawn replay overlapped the live stream).
      const skip = this.nextSeq - at;
      if (skip >= bytes.length) return;
      bytes = bytes.subarray(skip);
      at = this.nextSeq;
    }
    this.nextSeq = at + bytes.length;
    const text = this.decoder.decode(bytes, { stream: true });
    const raw: RawSegment = { id: this.id, incarnationId: this.incarnationId, seq: at, data: bytes };
    this.sink(this, text ? { type: 'terminal/data', data: text } : undefined, raw);
  }

  private fact(fact: PtyFact): void {
    switch (fact.type) {
      case 'title':
        if (fact.title !== this.current.title)
          this.emit({ type: 'terminal/titleChanged', title: fact.title });
        break;
      case 'cwd': {
        const cwd = pathToUri(fact.cwd);
        if (cwd !== this.current.cwd) this.emit({ type: 'terminal/cwdChanged', cwd });
        break;
      }
      case 'commandDetectionAvailable':
        if (!this.current.supportsCommandDetection) this.emit({ type: 'terminal/commandDetectionAvailable' });
        break;
      case 'commandStarted': {
        this.openCommandId = `cmd-${++this.commandCount}`;
        this.emit({
          type: 'terminal/commandExecuted',
          commandId: this.openCommandId,
          commandLine: fact.commandLine,
          timestamp: Date.now(),
        });
        break;
      }
      case 'commandFinished': {
        if (this.openCommandId === undefined) break;
        const action: TerminalAction = { type: 'terminal/commandFinished', commandId: this.openCommandId };
        if (fact.exitCode !== undefined) action.exitCode = fact.exitCode;
        if (fact.durationMs !== undefined) action.durationMs = fact.durationMs;
        this.openCommandId = undefined;
        this.emit(action);
        break;
      }
      default:
        // bell: nothing in AHP's terminal state.
        break;
    }
  }

  /** The provider re-attached after a reconnect with a fresh screen, or the PTY is gone. */
  private reset(item: Extract<FeedItem, { kind: 'reset' }>): void {
    if (item.expired) {
      if (this.current.exitCode === undefined) this.emit({ type: 'terminal/exited' });
      return;
    }
    if (!item.snapshot) return;
    this.decoder = new TextDecoder('utf-8');
    this.openCommandId = undefined;
    this.nextSeq = item.snapshot.seq;
    this.emit({ type: 'terminal/cleared' });
    if (item.snapshot.data) this.emit({ type: 'terminal/data', data: item.snapshot.data });
  }

  private emit(action: TerminalAction): void {
    this.sink(this, action);
  }
}
