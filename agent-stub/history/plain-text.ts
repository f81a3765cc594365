/**
 * Terminal output bytes → plain text, for the output of an agent send: printable characters at
 * their column, CR returns to column 0 (a progress bar keeps its last state), BS and the cursor
 * moves within a line are followed, erase-in-line is applied, every other escape sequence and
 * control byte is dropped. A full-screen program's output comes out as a jumble; `agentRead` (the
 * screen model's text) is the view for those. Pure; runs in the stub (Node 18).
 */

const ESC = '\x1b';
const BEL = '\x07';
const TAB_WIDTH = 8;

/** Parses the numeric parameter of a CSI (`ESC [ 1 2 C` → 12), with a default. */
function csiNumber(params: string, dflt: number): number {
  const n = Number.parseInt(params.split(';')[0] ?? '', 10);
  return Number.isFinite(n) && n > 0 ? n : dflt;
}

export function vtToPlainText(data: Uint8Array | string): string {
  const text = typeof data === 'string' ? data : Buffer.from(data).toString('utf8');
  const lines: string[] = [];
  let cur: string[] = [];
  let col = 0;
  const put = (ch: string) => {
    while (cur.length < col) cur.push(' ');
    cur[col++] = ch;
  };
  const endLine = () => {
    lines.push(cur.join('').trimEnd());
    cur = [];
    col = 0;
  };
  const chars = Array.from(text);
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i];
    const code = ch.codePointAt(0) ?? 0;
    if (ch === '\n') endLine();
    else if (ch === '\r') col = 0;
    else if (ch === '\b') col = Math.max(0, col - 1);
    else if (ch === '\t') col = (Math.floor(col / TAB_WIDTH) + 1) * TAB_WIDTH;
    else if (ch === ESC)
      i = skipEscape(chars, i, (final, params) => {
        if (final === 'C') col += csiNumber(params, 1);
        else if (final === 'D') col = Math.max(0, col - csiNumber(params, 1));
        else if (final === 'G') col = csiNumber(params, 1) - 1;
        else if (final === 'K') {
          const mode = params === '' ? 0 : Number(params);
          if (mode === 0) cur.length = Math.min(cur.length, col);
          else if (mode === 1) for (let c = 0; c <= col && c < cur.length; c++) cur[c] = ' ';
          else if (mode === 2) cur = [];
        }
      });
    else if (code < 0x20 || code === 0x7f || (code >= 0x80 && code < 0xa0)) continue;
    else put(ch);
  }
  if (cur.length > 0) lines.push(cur.join('').trimEnd());
  return lines.join('\n');
}

/**
 * Skips the escape sequence starting at `chars[i]` (ESC) and returns the index of its last
 * character. CSI sequences are reported to `csi` with their final byte and parameters.
 */
function skipEscape(chars: string[], i: number, csi: (final: string, params: string) => void): number {
  const next = chars[i + 1];
  if (next === undefined) return i;
  if (next === '[') {
    let j = i + 2;
    let params = '';
    for (; j < chars.length; j++) {
      const c = chars[j].charCodeAt(0);
      if (c >= 0x40 && c <= 0x7e) {
        csi(chars[j], params);
        return j;
      }
      params += chars[j];
    }
    return j;
  }
  if (next === ']' || next === 'P' || next === '_' || next === '^' || next === 'X') {
    // String sequences end with BEL (OSC) or ST (ESC \).
    for (let j = i + 2; j < chars.length; j++) {
      if (chars[j] === BEL) return j;
      if (chars[j] === ESC && chars[j + 1] === '\\') return j + 1;
    }
    return chars.length;
  }
  // Designations (ESC ( B) take one more character; everything else is ESC plus one.
  if ('()*+-./#%'.includes(next)) return i + 2;
  return i + 1;
}

/** The last `maxBytes` bytes of `text`, starting at a UTF-8 character boundary. */
export function utf8Tail(text: string, maxBytes: number): { text: string; truncated: boolean } {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return { text, truncated: false };
  let cut = buf.length - maxBytes;
  // Continuation bytes are 10xxxxxx: move forward to the start of a character.
  while (cut < buf.length && (buf[cut] & 0xc0) === 0x80) cut++;
  return { text: buf.subarray(cut).toString('utf8'), truncated: true };
}
