/**
 * What a send types for `text`: line breaks as Enter (`\r`, what a terminal's Enter key sends;
 * pasting does the same), and a final Enter unless the text already ends with one or `enter` is
 * false. Empty text types nothing (the send only waits).
 */
export function typedText(text: string, enter = true): string {
  if (text === '') return '';
  const typed = text.replace(/\r\n|\n/g, '\r');
  return enter && !typed.endsWith('\r') ? `${typed}\r` : typed;
}
