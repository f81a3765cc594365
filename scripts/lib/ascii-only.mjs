// Leaves a bundle ASCII. esbuild escapes non-ASCII characters in strings, regular expressions
// and identifiers (its default `charset: 'ascii'`) but keeps the comments it preserves as they
// are, and a single `→` in one makes V8 hold the whole file's source as two bytes per character:
// the stub's 1.4 MB bundle took 2.7 MB of the daemon's heap (its RSS 1.5–2.7 MB more, Node 24).
// What is left after esbuild's escaping is in comments, where `\uXXXX` reads the same.
import { readFileSync, writeFileSync } from 'node:fs';

const NON_ASCII = /[^\x00-\x7f]/g;

/** The text with every non-ASCII UTF-16 unit written as `\uXXXX`. */
export function toAscii(text) {
  return text.replace(NON_ASCII, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Rewrites a file in place as ASCII (when it is not already). */
export function rewriteAscii(path) {
  const text = readFileSync(path, 'utf8');
  const ascii = toAscii(text);
  if (ascii !== text) writeFileSync(path, ascii);
}
