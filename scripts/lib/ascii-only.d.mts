/** The text with every non-ASCII UTF-16 unit written as `\uXXXX`. */
export function toAscii(text: string): string;
/** Rewrites a file in place as ASCII (when it is not already). */
export function rewriteAscii(path: string): void;
