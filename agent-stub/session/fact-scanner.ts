/**
 * Pure, I/O-free scanner for raw PTY output. It forwards bytes unchanged except for OSC 633
 * (our injected shell integration), which it strips, and reports "facts" (title, cwd, bell,
 * prompt/command marks) with their offsets in the forwarded output. Chunks may split any
 * sequence at any byte; the only bytes ever withheld are a possible prefix of `ESC ] 6 3 3 ;`.
 * Runs inside the agent stub on Node 18: node globals only, no imports.
 */

/** A fact found in the output stream. */
export type ScannerFact =
  | { type: 'title'; title: string }
  | { type: 'cwd'; cwd: string }
  | { type: 'bell' }
  | { type: 'commandDetectionAvailable' }
  /** OSC 633;A (or 133;A while no 633 was ever seen). */
  | { type: 'promptStart' }
  /** OSC 633;B / 133;B. */
  | { type: 'promptEnd' }
  /** On C; `commandLine` comes from the last trusted 633;E, `''` if none. */
  | { type: 'commandStarted'; commandLine: string }
  /** On D; `durationMs` is measured from the matching C. */
  | { type: 'commandFinished'; exitCode?: number; durationMs?: number; commandLine?: string };

/** A fact plus where it happened: the offset in the returned `data` just after the sequence. */
export interface ScannedFact {
  offset: number;
  fact: ScannerFact;
}

/** Output of one {@link FactScanner.push} / {@link FactScanner.flush} call. */
export interface ScanResult {
  /** Bytes to forward; the very input array when nothing had to change. */
  data: Uint8Array;
  /** Facts in stream order; a shared frozen empty array when there are none. */
  facts: ScannedFact[];
}

/** Options for {@link FactScanner}. */
export interface FactScannerOptions {
  /** Secret our integration script appends to 633;E; without it no command line is trusted. */
  nonce?: string;
  /** Clock for command durations (ms); defaults to `Date.now`. */
  now?: () => number;
  /** Cap on buffered OSC payload; longer OSCs yield no fact. Default {@link DEFAULT_MAX_OSC_BYTES}. */
  maxOscBytes?: number;
}

/** Default cap on the buffered payload of one OSC sequence. */
export const DEFAULT_MAX_OSC_BYTES = 8192;
/** Longest exit code (in characters, sign included) that is still parsed. */
const MAX_EXIT_CODE_CHARS = 11;
const EXIT_CODE_RE = new RegExp(`^-?\\d{1,${MAX_EXIT_CODE_CHARS - 1}}$`);
/** Longest OSC Ps number that is still parsed. */
const MAX_PS_DIGITS = 6;

const ESC = 0x1b;
const BEL = 0x07;
const SEMI = 0x3b;
const BACKSLASH = 0x5c;
const PERCENT = 0x25;
const SLASH = 0x2f;
const LOWER_X = 0x78;
const OSC_INTRO_LEN = 2; // `ESC ]`
/** `ESC ] 6 3 3 ;`: the only sequence whose bytes are ever held back across pushes. */
const STRIP_PREFIX = Uint8Array.of(ESC, 0x5d, 0x36, 0x33, 0x33, SEMI);
const FILE_URL = asciiBytes('file://');
const CWD_KEY = asciiBytes('Cwd=');

const PS_TITLE_AND_ICON = 0;
const PS_TITLE = 2;
const PS_CWD = 7;
const PS_FINAL_TERM = 133;

// Parser states.
const GROUND = 0;
const PREFIX = 1; // matched `prefixLen` bytes of STRIP_PREFIX
const OSC = 2; // pass-through OSC
const OSC_ESC = 3; // ESC inside a pass-through OSC: ST or abort
const STR = 4; // DCS / APC / PM / SOS
const STR_ESC = 5;
const STRIP = 6; // inside an OSC 633 being removed
const STRIP_ESC = 7;

// Not wire data: one frozen empty result shared by every call that found no fact.
const EMPTY_FACTS = Object.freeze([]) as unknown as ScannedFact[];
const BELL: ScannerFact = Object.freeze({ type: 'bell' });
const PROMPT_START: ScannerFact = Object.freeze({ type: 'promptStart' });
const PROMPT_END: ScannerFact = Object.freeze({ type: 'promptEnd' });
const DETECTION: ScannerFact = Object.freeze({ type: 'commandDetectionAvailable' });
const utf8 = new TextDecoder();

function asciiBytes(s: string): Uint8Array {
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

function startsWith(buf: Uint8Array, start: number, end: number, lit: Uint8Array): boolean {
  if (end - start < lit.length) return false;
  for (let k = 0; k < lit.length; k++) if (buf[start + k] !== lit[k]) return false;
  return true;
}

function hexValue(b: number | undefined): number {
  if (b === undefined) return -1;
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  const lower = b | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

/**
 * Decodes escapes to bytes, then UTF-8: `%NN` (OSC 7 URLs) or, for 633, `\\` and `\xNN`.
 * Malformed escapes stay literal.
 */
function unescapeUtf8(src: Uint8Array, percent: boolean): string {
  const esc = percent ? PERCENT : BACKSLASH;
  if (src.indexOf(esc) < 0) return utf8.decode(src);
  const out = new Uint8Array(src.length);
  let n = 0;
  for (let k = 0; k < src.length; k++) {
    const hex = percent ? k + 1 : k + 2;
    const hexOk =
      (percent || src[k + 1] === LOWER_X) && hexValue(src[hex]) >= 0 && hexValue(src[hex + 1]) >= 0;
    if (src[k] !== esc) {
      out[n++] = src[k];
    } else if (!percent && src[k + 1] === BACKSLASH) {
      out[n++] = BACKSLASH;
      k++;
    } else if (hexOk) {
      out[n++] = (hexValue(src[hex]) << 4) | hexValue(src[hex + 1]);
      k = hex + 1;
    } else {
      out[n++] = esc;
    }
  }
  return utf8.decode(out.subarray(0, n));
}

/** `file://host/path` → percent-decoded path; undefined for other URLs. */
function parseFileUrl(buf: Uint8Array, start: number, end: number): string | undefined {
  if (!startsWith(buf, start, end, FILE_URL)) return undefined;
  const slash = buf.subarray(start + FILE_URL.length, end).indexOf(SLASH);
  return slash < 0 ? undefined : unescapeUtf8(buf.subarray(start + FILE_URL.length + slash, end), true);
}

/** Parses the field `[start, next ';' or end)` as a decimal integer. */
function parseExitCode(buf: Uint8Array, start: number, end: number): number | undefined {
  const field = buf.subarray(start, Math.min(end, start + MAX_EXIT_CODE_CHARS + 1));
  const semi = field.indexOf(SEMI);
  const text = String.fromCharCode(...(semi < 0 ? field : field.subarray(0, semi)));
  return EXIT_CODE_RE.test(text) ? Number(text) : undefined;
}

/** Streaming scanner over PTY output; one instance per terminal stream. */
export class FactScanner {
  private readonly nonce: Uint8Array | undefined;
  private readonly now: () => number;
  private readonly maxOscBytes: number;

  private state = GROUND;
  /** Bytes of STRIP_PREFIX matched so far (an ESC in *_ESC states counts as 1). */
  private prefixLen = 0;
  /** Bytes of STRIP_PREFIX withheld from an earlier push and not yet emitted. */
  private carry = 0;
  private osc: Uint8Array | undefined;
  private oscLen = 0;
  private oscOverflow = false;

  private seen633 = false;
  private inCommand = false;
  private commandStart = 0;
  private commandLine: string | undefined;

  // Per-call output assembly.
  private segs: Uint8Array[] = [];
  private segLen = 0;
  private facts: ScannedFact[] | undefined;

  /** Creates a scanner; see {@link FactScannerOptions}. */
  constructor(opts: FactScannerOptions = {}) {
    this.nonce = opts.nonce ? new TextEncoder().encode(opts.nonce) : undefined;
    this.now = opts.now ?? Date.now;
    this.maxOscBytes = opts.maxOscBytes ?? DEFAULT_MAX_OSC_BYTES;
  }

  /** True while bytes are withheld or an OSC 633 is half stripped; {@link flush} resolves both. */
  hasPending(): boolean {
    return this.carry > 0 || this.state === STRIP;
  }

  /**
   * Gives up waiting: emits withheld prefix bytes verbatim and drops a half-stripped 633.
   * A no-op (returning empty data) unless {@link hasPending}; pass-through OSC/DCS state is kept.
   */
  flush(): ScanResult {
    let data = new Uint8Array(0);
    if (this.state === STRIP || this.state === STRIP_ESC) {
      this.state = GROUND;
    } else if (this.carry > 0) {
      data = STRIP_PREFIX.slice(0, this.carry);
      this.state = GROUND;
    }
    this.carry = 0;
    return { data, facts: EMPTY_FACTS };
  }

  /** Scans one chunk; the result's facts carry offsets into the result's `data`. */
  // long-function: one byte loop whose states share its cursors (i, runStart, escPos) as hot-path locals
  push(chunk: Uint8Array): ScanResult {
    const len = chunk.length;
    this.segLen = 0;
    this.facts = undefined;
    let i = 0;
    let runStart = 0; // start of the not-yet-segmented run of chunk bytes being forwarded
    let escPos = 0; // where the current ESC sits in chunk (0 when it was carried over)
    let nextEsc = -1;
    let nextBel = -1;

    while (i < len) {
      const st = this.state;
      if (st === GROUND || st === OSC || st === STR || st === STRIP) {
        if (nextEsc < i) nextEsc = indexOrEnd(chunk, ESC, i);
        if (nextBel < i) nextBel = indexOrEnd(chunk, BEL, i);
        const stop = Math.min(nextEsc, nextBel);
        const inOsc = st === OSC || st === STRIP;
        if (inOsc) this.appendOsc(chunk, i, stop);
        if (stop === len) break;
        i = stop + 1;
        if (chunk[stop] === ESC) {
          escPos = stop;
          this.prefixLen = 1;
          this.state = st === GROUND ? PREFIX : st === OSC ? OSC_ESC : st === STR ? STR_ESC : STRIP_ESC;
        } else if (st === GROUND) {
          this.addFact(this.segLen + i - runStart, BELL);
        } else {
          this.state = GROUND;
          if (st === OSC) this.finishOsc(this.segLen + i - runStart);
          else if (st === STRIP) {
            runStart = i;
            this.finish633(this.segLen);
          }
        }
        continue;
      }

      const b = chunk[i];
      if (st === PREFIX) {
        if (b === STRIP_PREFIX[this.prefixLen]) {
          i++;
          if (++this.prefixLen === STRIP_PREFIX.length) {
            if (escPos > runStart) this.pushSeg(chunk.subarray(runStart, escPos));
            this.carry = 0;
            runStart = i;
            this.startOsc(STRIP);
          }
        } else if (this.prefixLen > 1) {
          this.releaseCarry();
          this.startOsc(OSC);
          this.appendOsc(STRIP_PREFIX, OSC_INTRO_LEN, this.prefixLen);
        } else {
          this.releaseCarry();
          // ESC P / _ / ^ / X open DCS, APC, PM, SOS; anything else is reprocessed in ground.
          if (b === 0x50 || b === 0x5f || b === 0x5e || b === 0x58) {
            this.state = STR;
            i++;
          } else {
            this.state = GROUND;
          }
        }
      } else if (b === BACKSLASH) {
        i++;
        this.state = GROUND;
        if (st === STRIP_ESC) {
          this.carry = 0;
          runStart = i;
          this.finish633(this.segLen);
        } else {
          this.releaseCarry();
          if (st === OSC_ESC) this.finishOsc(this.segLen + i - runStart);
        }
      } else {
        // An ESC that is not ST aborts the string/OSC and starts a new escape sequence.
        if (st === STRIP_ESC) runStart = escPos;
        this.state = PREFIX;
      }
    }

    return this.result(chunk, runStart, escPos);
  }

  /**
   * The end of a push: an escape still open at the chunk's end is withheld (its bytes are the
   * carry), a 633 being stripped is not output, and the forwarded run joins the segments.
   */
  private result(chunk: Uint8Array, runStart: number, escPos: number): ScanResult {
    const len = chunk.length;
    let runEnd = len;
    const st = this.state;
    if (st === PREFIX || st === OSC_ESC || st === STR_ESC || st === STRIP_ESC) {
      runEnd = escPos;
      this.carry = this.prefixLen;
    }
    if (st === STRIP || st === STRIP_ESC) runEnd = runStart;
    const facts = this.facts ?? EMPTY_FACTS;
    if (this.segs.length === 0) {
      return { data: runStart === 0 && runEnd === len ? chunk : chunk.subarray(runStart, runEnd), facts };
    }
    if (runEnd > runStart) this.pushSeg(chunk.subarray(runStart, runEnd));
    const data = this.segs.length === 1 ? this.segs[0] : concat(this.segs, this.segLen);
    this.segs.length = 0;
    return { data, facts };
  }

  private pushSeg(seg: Uint8Array): void {
    this.segs.push(seg);
    this.segLen += seg.length;
  }

  /** Emits bytes withheld by an earlier push, now known not to start a 633. */
  private releaseCarry(): void {
    if (this.carry === 0) return;
    this.pushSeg(STRIP_PREFIX.slice(0, this.carry));
    this.carry = 0;
  }

  private addFact(offset: number, fact: ScannerFact): void {
    if (this.facts === undefined) this.facts = [];
    this.facts.push({ offset, fact });
  }

  private startOsc(state: number): void {
    this.state = state;
    this.oscLen = 0;
    this.oscOverflow = false;
  }

  private appendOsc(src: Uint8Array, start: number, end: number): void {
    const n = end - start;
    if (n <= 0 || this.oscOverflow) return;
    if (this.oscLen + n > this.maxOscBytes) {
      this.oscOverflow = true;
      return;
    }
    this.osc ??= new Uint8Array(this.maxOscBytes);
    this.osc.set(src.subarray(start, end), this.oscLen);
    this.oscLen += n;
  }

  /** A pass-through OSC ended; only 0/2 (title), 7 (cwd) and 133 (FinalTerm) matter. */
  private finishOsc(offset: number): void {
    const buf = this.osc;
    const len = this.oscLen;
    if (this.oscOverflow || buf === undefined) return;
    let ps = 0;
    let j = 0;
    for (; j < len && j <= MAX_PS_DIGITS && buf[j] >= 0x30 && buf[j] <= 0x39; j++)
      ps = ps * 10 + buf[j] - 0x30;
    if (j === 0 || j >= len || buf[j] !== SEMI) return;
    const start = j + 1;
    if (ps === PS_TITLE_AND_ICON || ps === PS_TITLE) {
      this.addFact(offset, { type: 'title', title: utf8.decode(buf.subarray(start, len)) });
    } else if (ps === PS_CWD) {
      const cwd = parseFileUrl(buf, start, len);
      if (cwd) this.addFact(offset, { type: 'cwd', cwd });
    } else if (ps === PS_FINAL_TERM && !this.seen633) {
      this.shellMark(buf, start, len, offset, false);
    }
  }

  /** A stripped OSC 633 ended (payload after `633;` is in the OSC buffer). */
  private finish633(offset: number): void {
    if (this.oscOverflow) return;
    if (!this.seen633) {
      this.seen633 = true;
      this.addFact(offset, DETECTION);
    }
    if (this.oscLen > 0) this.shellMark(this.osc!, 0, this.oscLen, offset, true);
  }

  /** Handles `<letter>[;args]` shared by OSC 633 and 133 (E and P exist only in 633). */
  private shellMark(buf: Uint8Array, start: number, end: number, offset: number, is633: boolean): void {
    if (start + 1 < end && buf[start + 1] !== SEMI) return;
    const args = start + 2;
    switch (buf[start]) {
      case 0x41: // A
        this.inCommand = false;
        this.addFact(offset, PROMPT_START);
        break;
      case 0x42: // B
        this.addFact(offset, PROMPT_END);
        break;
      case 0x43: // C
        this.inCommand = true;
        this.commandStart = this.now();
        this.addFact(offset, { type: 'commandStarted', commandLine: this.commandLine ?? '' });
        break;
      case 0x44: {
        const commandLine = this.commandLine;
        this.commandLine = undefined;
        if (!this.inCommand) break;
        this.inCommand = false;
        const fact: Extract<ScannerFact, { type: 'commandFinished' }> = { type: 'commandFinished' };
        const exitCode = args <= end ? parseExitCode(buf, args, end) : undefined;
        if (exitCode !== undefined) fact.exitCode = exitCode;
        fact.durationMs = Math.max(0, this.now() - this.commandStart);
        if (commandLine !== undefined) fact.commandLine = commandLine;
        this.addFact(offset, fact);
        break;
      }
      case 0x45: // E;<commandline>;<nonce>
        if (is633 && args <= end && this.trusted(buf, args, end)) {
          this.commandLine = unescapeUtf8(
            buf.subarray(args, args + buf.subarray(args, end).lastIndexOf(SEMI)),
            false,
          );
        }
        break;
      case 0x50: // P;Cwd=<path>
        if (is633 && args <= end && startsWith(buf, args, end, CWD_KEY)) {
          const cwd = unescapeUtf8(buf.subarray(args + CWD_KEY.length, end), false);
          if (cwd) this.addFact(offset, { type: 'cwd', cwd });
        }
        break;
    }
  }

  /** True when the field after the last `;` in `[start, end)` equals the configured nonce. */
  private trusted(buf: Uint8Array, start: number, end: number): boolean {
    const nonce = this.nonce;
    const semi = buf.subarray(start, end).lastIndexOf(SEMI);
    if (nonce === undefined || semi < 0 || end - (start + semi + 1) !== nonce.length) return false;
    for (let k = 0; k < nonce.length; k++) if (buf[start + semi + 1 + k] !== nonce[k]) return false;
    return true;
  }
}

function indexOrEnd(chunk: Uint8Array, byte: number, from: number): number {
  const at = chunk.indexOf(byte, from);
  return at < 0 ? chunk.length : at;
}

function concat(segs: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const seg of segs) {
    out.set(seg, at);
    at += seg.length;
  }
  return out;
}
