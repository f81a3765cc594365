/** Lines of a server's stderr kept for its error reports. */
const KEEP_LINES = 40;
/** A line longer than this is cut (a minified stack frame). */
const MAX_LINE_CHARS = 500;
/** A line that says what went wrong, preferred over the last line (`Node.js v24.1.0`). */
const TELLING = /error|cannot|can't|not found|no such|fatal|exception|denied|unknown|invalid/i;

/**
 * The newest lines a language server wrote to stderr, and the one line an error report quotes:
 * the last one that reads like an error, else the last one. Fed in chunks, split anywhere.
 */
export class StderrTail {
  private readonly lines: string[] = [];
  private partial = '';

  push(chunk: Buffer | string): void {
    const parts = (this.partial + chunk.toString()).split(/\r?\n/);
    this.partial = (parts.pop() ?? '').slice(-MAX_LINE_CHARS);
    for (const p of parts) this.add(p);
  }

  private add(raw: string): void {
    const line = raw.trim().slice(0, MAX_LINE_CHARS);
    if (line === '') return;
    this.lines.push(line);
    if (this.lines.length > KEEP_LINES) this.lines.shift();
  }

  /** The line to quote, or undefined when the server wrote nothing. */
  line(): string | undefined {
    const all = this.partial.trim() ? [...this.lines, this.partial.trim()] : this.lines;
    for (let i = all.length - 1; i >= 0; i--) if (TELLING.test(all[i]!)) return all[i];
    return all.at(-1);
  }

  /** The kept lines, oldest first. */
  text(): string {
    return [...this.lines, ...(this.partial.trim() ? [this.partial.trim()] : [])].join('\n');
  }
}
