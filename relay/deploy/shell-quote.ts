/**
 * Words that POSIX sh, dash, bash and zsh take literally outside quotes. `=` is left out anywhere
 * (zsh expands a word starting with it, `=ls` → `/usr/bin/ls`, and `a=b` as the first word is an
 * assignment), and `%` may not start a word (fish expands `%self`).
 */
const SAFE_WORD = /^[A-Za-z0-9_/.,:@+-][A-Za-z0-9_/.,:@%+-]*$/;

/**
 * Quotes one argument for a POSIX shell (`/bin/sh`, which runs every remote script; login shells
 * never see these).
 * Single quotes keep everything literal; an embedded `'` becomes `'\''`.
 */
export function shellQuote(arg: string): string {
  if (arg.includes('\0')) throw new TypeError('shell arguments cannot contain NUL bytes');
  if (SAFE_WORD.test(arg)) return arg;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** Quotes every argument and joins them with spaces. */
export function shellJoin(args: readonly string[]): string {
  return args.map(shellQuote).join(' ');
}
