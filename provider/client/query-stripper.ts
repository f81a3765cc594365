/**
 * Takes terminal queries out of a byte stream before it reaches a real terminal (`ptyrelay
 * attach` writes the output into the user's own terminal, which would answer them: the host's
 * stub already has). Only queries go (terminal-queries.ts: DA, DSR/CPR, DECRQM, XTVERSION, window
 * reports, OSC colour queries, DECRQSS, XTGETTCAP); every other byte passes unchanged and in
 * order. A sequence cut by the end of a chunk is held until the next one completes it
 * (`holding`); `flush()` gives it up as it is.
 */
import { CSI_QUERY_FINAL_BYTES, isCsiQuery, isDcsQuery, isOscQuery } from '../terminal-queries.js';

const ESC = 0x1b;
const BEL = 0x07;
/** A sequence longer than this is not a query: it passes as it is. */
const MAX_SEQUENCE_BYTES = 512;

type Verdict = { end: number; query: boolean } | 'incomplete' | undefined;

export class QueryStripper {
  private held: Uint8Array = new Uint8Array(0);

  /** A cut sequence is waiting for the next chunk. */
  get holding(): boolean {
    return this.held.length > 0;
  }

  /** `chunk` without the queries in it (and with what was held before it). */
  push(chunk: Uint8Array): Uint8Array {
    const data = this.held.length > 0 ? concat(this.held, chunk) : chunk;
    this.held = new Uint8Array(0);
    const keep: Uint8Array[] = [];
    let from = 0;
    let i = data.indexOf(ESC);
    while (i >= 0) {
      const v = sequenceAt(data, i);
      if (v === 'incomplete') {
        this.held = data.slice(i);
        keep.push(data.subarray(from, i));
        return join(keep);
      }
      if (v?.query) {
        keep.push(data.subarray(from, i));
        from = v.end;
      }
      i = data.indexOf(ESC, v ? v.end : i + 1);
    }
    if (from === 0) return data;
    keep.push(data.subarray(from));
    return join(keep);
  }

  /** What is held, as it is (a sequence that never completed is not a query). */
  flush(): Uint8Array {
    const out = this.held;
    this.held = new Uint8Array(0);
    return out;
  }

  /** Forgets what is held (the screen is repainted from a snapshot). */
  reset(): void {
    this.held = new Uint8Array(0);
  }
}

/** The escape sequence starting at `i` (an ESC): where it ends and whether it is a query. */
function sequenceAt(d: Uint8Array, i: number): Verdict {
  const kind = d[i + 1];
  if (kind === undefined) return 'incomplete';
  if (kind === 0x5b) return csiAt(d, i);
  if (kind === 0x5d || kind === 0x50) return stringAt(d, i, kind === 0x5d);
  return undefined;
}

function csiAt(d: Uint8Array, i: number): Verdict {
  let j = i + 2;
  let prefix = '';
  if (j < d.length && d[j]! >= 0x3c && d[j]! <= 0x3f) prefix = String.fromCharCode(d[j++]!);
  const paramsStart = j;
  while (j < d.length && d[j]! >= 0x30 && d[j]! <= 0x3f) j++;
  const params = String.fromCharCode(...d.subarray(paramsStart, j));
  const interStart = j;
  while (j < d.length && d[j]! >= 0x20 && d[j]! <= 0x2f) j++;
  if (j >= d.length) return j - i > MAX_SEQUENCE_BYTES ? undefined : 'incomplete';
  const final = d[j]!;
  if (final < 0x40 || final > 0x7e) return undefined;
  // Most CSIs (SGR, cursor moves) end in a byte no query ends in: decided without strings.
  if (!CSI_QUERY_FINAL_BYTES.has(final)) return { end: j + 1, query: false };
  const intermediates = String.fromCharCode(...d.subarray(interStart, j));
  const first = Number.parseInt(params, 10);
  const query = isCsiQuery(
    prefix,
    intermediates,
    String.fromCharCode(final),
    Number.isNaN(first) ? 0 : first,
  );
  return { end: j + 1, query };
}

/** OSC (ended by BEL or ST) or DCS (ended by ST). */
function stringAt(d: Uint8Array, i: number, osc: boolean): Verdict {
  const limit = Math.min(d.length, i + MAX_SEQUENCE_BYTES);
  for (let j = i + 2; j < limit; j++) {
    const b = d[j];
    const st = b === ESC && d[j + 1] === 0x5c;
    if (b === ESC && j + 1 >= d.length) return 'incomplete';
    if (!(st || (osc && b === BEL))) continue;
    const end = st ? j + 2 : j + 1;
    const body = String.fromCharCode(...d.subarray(i + 2, j));
    return { end, query: osc ? isOscQuery(body) : dcsIsQuery(body) };
  }
  return limit === d.length && d.length - i <= MAX_SEQUENCE_BYTES ? 'incomplete' : undefined;
}

/** A DCS body's header (parameters, intermediates, final) says whether it asks. */
function dcsIsQuery(body: string): boolean {
  const m = /^[0-9;:<=>?]*([ -/]*)([@-~])/.exec(body);
  return m ? isDcsQuery(m[1]!, m[2]!) : false;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function join(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
