import xtermHeadless from '@xterm/headless';

const { Terminal } = xtermHeadless;

/** Writes VT data into a fresh emulator of the given size and returns every line (scrollback first). */
export async function renderLines(data: string, cols: number, rows: number): Promise<string[]> {
  const term = new Terminal({ cols, rows, scrollback: 10_000, allowProposedApi: true });
  await new Promise<void>((resolve) => term.write(data, resolve));
  const buf = term.buffer.active;
  const lines: string[] = [];
  for (let i = 0; i < buf.length; i++) lines.push(buf.getLine(i)?.translateToString(true) ?? '');
  term.dispose();
  return lines;
}
