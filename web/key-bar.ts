import { h } from './dom.js';

/** Keys a phone keyboard lacks, as the bytes a terminal sends for them. */
const KEYS: { label: string; aria: string; data: string }[] = [
  { label: 'Esc', aria: 'Escape', data: '\x1b' },
  { label: 'Tab', aria: 'Tab', data: '\t' },
  { label: '←', aria: 'Left arrow', data: '\x1b[D' },
  { label: '↑', aria: 'Up arrow', data: '\x1b[A' },
  { label: '↓', aria: 'Down arrow', data: '\x1b[B' },
  { label: '→', aria: 'Right arrow', data: '\x1b[C' },
];

/** Ctrl applied to one typed character: `c` → ETX, `[` → ESC; others pass unchanged. */
export function withCtrl(data: string): string {
  if (data.length !== 1) return data;
  const c = data.toUpperCase().charCodeAt(0);
  return c >= 0x40 && c <= 0x5f ? String.fromCharCode(c & 0x1f) : data;
}

/**
 * The on-screen row of Esc, Ctrl, Tab and arrows (shown at phone width). Ctrl is sticky: it
 * applies to the next key typed, then releases.
 */
export class KeyBar {
  readonly element: HTMLElement;
  private ctrl = false;
  private readonly ctrlButton: HTMLButtonElement;

  constructor(private readonly send: (data: string) => void) {
    this.ctrlButton = h(
      'button',
      {
        type: 'button',
        class: 'key',
        'aria-pressed': 'false',
        'aria-label': 'Control (applies to the next key)',
      },
      'Ctrl',
    );
    // Buttons must not take the focus from the terminal (the phone keyboard would close).
    const keep = (b: HTMLButtonElement) => {
      b.addEventListener('mousedown', (ev) => ev.preventDefault());
      return b;
    };
    this.ctrlButton.addEventListener('click', () => this.setCtrl(!this.ctrl));
    const keys = KEYS.map((k) =>
      keep(
        h(
          'button',
          { type: 'button', class: 'key', 'aria-label': k.aria, onclick: () => this.press(k.data) },
          k.label,
        ),
      ),
    );
    this.element = h(
      'div',
      { class: 'keybar', role: 'toolbar', 'aria-label': 'Terminal keys' },
      keys[0],
      keep(this.ctrlButton),
      ...keys.slice(1),
    );
  }

  private setCtrl(on: boolean): void {
    this.ctrl = on;
    this.ctrlButton.setAttribute('aria-pressed', String(on));
  }

  private press(data: string): void {
    this.setCtrl(false);
    this.send(data);
  }

  /** Typed input passes through here: an armed Ctrl modifies it. */
  transform(data: string): string {
    if (!this.ctrl) return data;
    this.setCtrl(false);
    return withCtrl(data);
  }
}
