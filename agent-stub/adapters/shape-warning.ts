import { utcIsoTime } from '../../provider/utc-time.js';

/**
 * The loud line an adapter writes once when the library it reads past has another shape than the
 * pinned version's: the daemon's stdout is its log (daemon-server.ts writes JSON lines there).
 */
const warned = new Set<string>();

export function warnShapeOnce(library: string, pinned: string, problem: string, fallback: string): void {
  if (warned.has(library)) return;
  warned.add(library);
  process.stdout.write(
    `${JSON.stringify({
      time: utcIsoTime(),
      pid: process.pid,
      level: 'warn',
      msg: `${library} is not shaped as ${pinned} was: ${problem}; ${fallback}`,
      library,
      pinned,
    })}\n`,
  );
}
