import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';

/** A real pino logger whose lines are kept in memory, so tests can assert what the relay logged. */
export function capturedLog(): { log: Logger; lines: () => Record<string, unknown>[]; text: () => string } {
  const raw: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      raw.push(String(chunk));
      cb();
    },
  });
  const log = pino({ level: 'info' }, sink);
  const lines = () =>
    raw
      .join('')
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { log, lines, text: () => raw.join('') };
}
