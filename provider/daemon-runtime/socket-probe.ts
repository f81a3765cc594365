import { connect, type Socket } from 'node:net';

/** A connected socket, or undefined when nothing answers at `path`. */
export function tryConnect(path: string): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.once('connect', () => {
      s.removeAllListeners('error');
      resolve(s);
    });
    s.once('error', () => resolve(undefined));
  });
}

/** True when a daemon answers at `path`. */
export async function socketAnswers(path: string): Promise<boolean> {
  const s = await tryConnect(path);
  s?.destroy();
  return s !== undefined;
}
