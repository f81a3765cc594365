import { SUPPORTED_PROTOCOL_VERSIONS } from './types.js';

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/;

/** `MAJOR.MINOR.PATCH` as numbers, or undefined when malformed (prerelease/build not allowed). */
export function parseSemver(v: unknown): [number, number, number] | undefined {
  if (typeof v !== 'string') return undefined;
  const m = SEMVER.exec(v);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

function compare(a: [number, number, number], b: [number, number, number]): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/** True when `offered` lies in the caret range of `supported` (`^0.1.0` = `>=0.1.0 <0.2.0`). */
function caretCompatible(offered: [number, number, number], supported: [number, number, number]): boolean {
  if (compare(offered, supported) < 0) return false;
  if (supported[0] > 0) return offered[0] === supported[0];
  return offered[0] === 0 && offered[1] === supported[1];
}

/**
 * Picks the highest offered version inside one of our caret-compatible ranges and returns that
 * exact offered string, as AHP negotiation requires; undefined when none is acceptable.
 */
export function negotiateProtocolVersion(
  offered: unknown,
  supported: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS,
): string | undefined {
  if (!Array.isArray(offered)) return undefined;
  const ours = supported.map(parseSemver).filter((v): v is [number, number, number] => v !== undefined);
  let best: { text: string; v: [number, number, number] } | undefined;
  for (const text of offered) {
    if (typeof text !== 'string') continue;
    const v = parseSemver(text);
    if (!v || !ours.some((s) => caretCompatible(v, s))) continue;
    if (!best || compare(v, best.v) > 0) best = { text, v };
  }
  return best?.text;
}
