/** What a page shortcut asks for. */
export type PageShortcut = { kind: 'list' } | { kind: 'new' } | { kind: 'tab'; index: number };

/** Alt+Shift+O: terminal list; Alt+Shift+N: new terminal; Alt+Shift+1…9: tab n (never sent to the shell). */
export function isPageShortcut(ev: KeyboardEvent): boolean {
  return ev.altKey && ev.shiftKey && !ev.ctrlKey && /^(KeyO|KeyN|Digit[1-9])$/.test(ev.code);
}

/** The shortcut `ev` is, or undefined when it is none. */
export function pageShortcut(ev: KeyboardEvent): PageShortcut | undefined {
  if (!isPageShortcut(ev)) return undefined;
  if (ev.code === 'KeyO') return { kind: 'list' };
  if (ev.code === 'KeyN') return { kind: 'new' };
  return { kind: 'tab', index: Number(ev.code.slice(5)) - 1 };
}
