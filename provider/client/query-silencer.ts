/**
 * Keeps an xterm.js terminal (browser or `@xterm/headless`) from answering terminal queries: the
 * host's stub answers every query once, from its own screen model, whether 0, 1 or many viewers
 * watch (docs/architecture.md, "Terminal queries"); a viewer that answered too would type a
 * second answer into the program. Parser handlers take each query before the emulator's own and
 * drop it; everything displayed is parsed as before.
 */
import { isCsiQuery, isOscQuery } from '../terminal-queries.js';

interface Disposable {
  dispose(): void;
}

/** What the silencer needs of an xterm.js terminal's parser. */
export interface QueryParser {
  registerCsiHandler(
    id: { prefix?: string; intermediates?: string; final: string },
    callback: (params: (number | number[])[]) => boolean,
  ): Disposable;
  registerOscHandler(ident: number, callback: (data: string) => boolean): Disposable;
  registerDcsHandler(
    id: { intermediates?: string; final: string },
    callback: (data: string, params: (number | number[])[]) => boolean,
  ): Disposable;
}

/** Every CSI query by its id (see terminal-queries.ts); window ops (`t`) are checked by parameter. */
const CSI_IDS: Array<{ prefix?: string; intermediates?: string; final: string }> = [
  { final: 'c' },
  { prefix: '>', final: 'c' },
  { prefix: '=', final: 'c' },
  { final: 'n' },
  { prefix: '?', final: 'n' },
  { intermediates: '$', final: 'p' },
  { prefix: '?', intermediates: '$', final: 'p' },
  { prefix: '>', final: 'q' },
  { prefix: '?', final: 'u' },
  { final: 't' },
];
const OSC_COLOURS = [4, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19];

const first = (params: (number | number[])[]): number => {
  const p = params[0];
  return typeof p === 'number' ? p : (p?.[0] ?? 0);
};

/** Installs the handlers; the returned disposable removes them. */
export function silenceQueries(parser: QueryParser): Disposable {
  const subs: Disposable[] = [];
  for (const id of CSI_IDS) {
    subs.push(
      parser.registerCsiHandler(id, (params) =>
        isCsiQuery(id.prefix ?? '', id.intermediates ?? '', id.final, first(params)),
      ),
    );
  }
  for (const ps of OSC_COLOURS)
    subs.push(parser.registerOscHandler(ps, (data) => isOscQuery(`${ps};${data}`)));
  subs.push(parser.registerDcsHandler({ intermediates: '$', final: 'q' }, () => true));
  subs.push(parser.registerDcsHandler({ intermediates: '+', final: 'q' }, () => true));
  return {
    dispose: () => {
      for (const s of subs.splice(0)) s.dispose();
    },
  };
}
