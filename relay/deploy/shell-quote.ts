/** Characters that POSIX sh, bash, zsh and fish all take literally outside quotes. */
const SAFE_WORD = /^[A-Za-z0-9_/.,:=@%+-]+$/;

/**
 * Quotes one argument for a POSIX shell (`/bin/sh`, which runs every remote script; login shells
 * never see these).
 * Single quotes keep everything literal; an embedded `'` becomes `'\''`.
 */
export function shellQuote(arg: string): string {
  if (arg.includes('\0')) throw new TypeError('shell arguments cannot contain NUL bytes');
  if (arg.length > 0 && SAFE_WORD.test(arg)) return arg;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** Quotes every argument and joins them with spaces. */
export function shellJoin(args: readonly string[]): string {
  return args.map(shellQuote).join(' ');
}
