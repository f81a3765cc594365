/**
 * Finds a start marker in the stdout of a remote command and splits off what follows it. Login
 * shells print banners, `fortune`, "Welcome" lines from rc files before the command runs; every
 * exec channel that carries data (uploads, the `stub.cjs connect` bridge) starts with a marker
 * line, and everything before it is noise. Pure: fed chunks, no I/O.
 */
export class StartMarkerScanner {
  private readonly needle: Buffer;
  private held: Buffer = Buffer.alloc(0);
  private seen = 0;
  /** Noise bytes dropped so far (before the marker). */
  noiseBytes = 0;

  /** `marker` must be printed followed by `\n`; the bytes after that newline are the payload. */
  constructor(
    marker: string,
    private readonly maxNoiseBytes: number,
  ) {
    this.needle = Buffer.from(`${marker}\n`);
  }

  /**
   * Feeds one chunk. Returns the bytes after the marker once it was found (possibly empty),
   * undefined while still looking.
   * @throws Error when more than `maxNoiseBytes` came without the marker.
   */
  feed(chunk: Buffer): Buffer | undefined {
    const buf = this.held.length ? Buffer.concat([this.held, chunk]) : chunk;
    const at = buf.indexOf(this.needle);
    if (at >= 0) {
      this.noiseBytes = this.seen + at;
      this.held = Buffer.alloc(0);
      return buf.subarray(at + this.needle.length);
    }
    // Keep just enough to find a marker split across chunks.
    const keep = Math.min(buf.length, this.needle.length - 1);
    this.seen += buf.length - keep;
    this.noiseBytes = this.seen;
    this.held = Buffer.from(buf.subarray(buf.length - keep));
    if (this.seen > this.maxNoiseBytes) throw new Error(`no start marker after ${this.seen} bytes of output`);
    return undefined;
  }

  /** The last bytes seen while looking (for error messages). */
  get tail(): string {
    return this.held.toString('utf8');
  }
}
